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

const struct fl_disc_relocs *fl_disc_relocs_of(uint16_t machine)
{
	static const struct fl_disc_relocs x86_64 = {
		R_X86_64_RELATIVE, R_X86_64_64, R_X86_64_GLOB_DAT, R_X86_64_IRELATIVE,
	};
	static const struct fl_disc_relocs aarch64 = {
		R_AARCH64_RELATIVE, R_AARCH64_ABS64, R_AARCH64_GLOB_DAT, R_AARCH64_IRELATIVE,
	};

	switch (machine) {
	case EM_X86_64:
		return &x86_64;
	case EM_AARCH64:
		return &aarch64;
	}
	return NULL;
}

bool fl_disc_sets_address(const struct fl_disc_relocs *r, uint32_t type)
{
	return r && (type == r->relative || type == r->abs64 || type == r->glob_dat ||
		     type == r->irelative);
}
