/* SPDX-License-Identifier: MIT */
/*
 * The architecture faultline is built for, x86-64 (every architecture's
 * directory has this header, lib/core/ARCH/arch.h, with the same names).
 */
#ifndef FL_CORE_ARCH_H
#define FL_CORE_ARCH_H

#include <elf.h>

/* Its name, as in target triples and uname -m. */
#define FL_ARCH_NAME "x86_64"
/* Its ELF e_machine: the loaded modules' and the files faultline loads. */
#define FL_ARCH_MACHINE EM_X86_64

#endif /* FL_CORE_ARCH_H */
