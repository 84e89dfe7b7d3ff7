// SPDX-License-Identifier: MIT
/* Helpers shared by the discovery layer: libelf setup, section names. */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include <libelf.h>

#include "core/fmt.h"
#include "discovery/internal.h"

static pthread_once_t libelf_once = PTHREAD_ONCE_INIT;
static int libelf_ok;

static void libelf_setup(void)
{
	libelf_ok = elf_version(EV_CURRENT) != EV_NONE;
}

int fl_disc_libelf_init(void)
{
	pthread_once(&libelf_once, libelf_setup);
	return libelf_ok ? 0 : -ENOSYS;
}

const char *fl_section_kind_name(enum fl_section_kind kind)
{
	switch (kind) {
	case FL_SECTION_FAULTMAP:
		return FL_FAULTMAP_SECTION;
	case FL_SECTION_STACKMAP:
		return FL_STACKMAP_SECTION;
	}
	return NULL;
}
