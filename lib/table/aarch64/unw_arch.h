/* SPDX-License-Identifier: MIT */
/*
 * libunwind's context of the calling thread, AArch64 (the same function in
 * every architecture's directory, lib/table/ARCH/unw_arch.h).  On AArch64
 * libunwind's unw_getcontext is a macro of its header (inline assembly
 * that stores the registers into an unw_context_t of its own layout), so
 * nothing of the dlopen'ed library is called.
 */
#ifndef FL_TABLE_UNW_ARCH_H
#define FL_TABLE_UNW_ARCH_H

#include <libunwind.h>

/* Fills *c with the caller's registers, as unw_getcontext does.  Returns 0. */
#define fl_unw_capture(c) unw_tdep_getcontext(c)

#endif /* FL_TABLE_UNW_ARCH_H */
