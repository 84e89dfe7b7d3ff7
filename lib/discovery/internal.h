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

#endif /* FL_DISCOVERY_INTERNAL_H */
