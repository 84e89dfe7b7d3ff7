/* SPDX-License-Identifier: MIT */
/* Internal interfaces of the discovery layer (lib/discovery). */
#ifndef FL_DISCOVERY_INTERNAL_H
#define FL_DISCOVERY_INTERNAL_H

#include <elf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <faultline/discovery.h>

#include "format/diag.h"

/* elf_version(EV_CURRENT), once per process.  Returns 0 or -ENOSYS. */
int fl_disc_libelf_init(void);

/* What a file says about how it is loaded (ET_EXEC, ET_DYN). */
struct fl_elf_load_info {
	size_t phnum;
	const Elf64_Phdr *phdr;		/* in native byte order */
	size_t build_id_size;		/* 0: none */
	const unsigned char *build_id;
};

/* Fills *li for elf; the pointers stay valid until fl_elf_close. */
void fl_elf_load_info(const struct fl_elf *elf, struct fl_elf_load_info *li);

/*
 * The size of the function symbol (STT_FUNC, with a size) whose value is
 * exactly value, in section (ET_REL; 0 in linked files): true with *size
 * set.  For faultline healable's relocation (heal_env.c).
 */
bool fl_elf_function_size(const struct fl_elf *elf, uint32_t section, uint64_t value,
			  uint64_t *size);

/*
 * A machine's dynamic relocation types that leave a field holding a
 * runtime address (R_X86_64_RELATIVE, _64, _GLOB_DAT, _IRELATIVE;
 * R_AARCH64_RELATIVE, _ABS64, _GLOB_DAT, _IRELATIVE): what discovery reads
 * a module's function address fields by, and the CLI names them by.
 */
struct fl_disc_relocs {
	uint32_t relative;	/* the addend is the link-time value */
	uint32_t abs64;		/* the symbol's value plus the addend */
	uint32_t glob_dat;
	uint32_t irelative;
};

/* machine's (e_machine), or NULL: no relocation of another machine is understood. */
const struct fl_disc_relocs *fl_disc_relocs_of(uint16_t machine);
/* Whether type is one of the four of r (r may be NULL: none is). */
bool fl_disc_sets_address(const struct fl_disc_relocs *r, uint32_t type);

#endif /* FL_DISCOVERY_INTERNAL_H */
