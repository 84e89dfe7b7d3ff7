/* SPDX-License-Identifier: MIT */
/* The environment, as the library reads it: see env.h. */
#include <stdlib.h>
#include <sys/auxv.h>

#include "core/env.h"

bool fl_env_secure(void)
{
	return getauxval(AT_SECURE) != 0;
}

const char *fl_env(const char *name)
{
	return secure_getenv(name);
}
