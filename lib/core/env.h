/* SPDX-License-Identifier: MIT */
/*
 * The environment, as the library reads it: never in a set-id program,
 * whose environment is its caller's (faultline(7)'s FAULTLINE_* variables
 * would let the caller choose its daemon, its patches, its signals).
 */
#ifndef FL_CORE_ENV_H
#define FL_CORE_ENV_H

#include <stdbool.h>

/*
 * Whether the kernel ran this program with privileges its caller does not
 * have (getauxval(AT_SECURE): a set-user-ID or set-group-ID program, file
 * capabilities, an LSM's transition).  Thread-safe, async-signal-safe.
 */
bool fl_env_secure(void);

/*
 * The value of the environment variable name, or NULL when it is unset or
 * the process is set-id (fl_env_secure): secure_getenv.  Thread-safe as
 * getenv is (while nothing changes the environment).
 */
const char *fl_env(const char *name);

#endif /* FL_CORE_ENV_H */
