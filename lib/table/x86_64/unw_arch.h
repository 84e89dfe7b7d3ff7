/* SPDX-License-Identifier: MIT */
/*
 * libunwind's context of the calling thread, x86-64 (the same function in
 * every architecture's directory, lib/table/ARCH/unw_arch.h).  libunwind
 * is loaded with dlopen (libunwind.h), and on x86-64 its unw_getcontext is
 * a function of it (_Ux86_64_getcontext); its unw_context_t is libc's
 * ucontext_t, which getcontext fills as well.
 */
#ifndef FL_TABLE_UNW_ARCH_H
#define FL_TABLE_UNW_ARCH_H

#include <libunwind.h>
#include <ucontext.h>

/* Fills *c with the caller's registers, as unw_getcontext does.  Returns 0 or -1. */
#define fl_unw_capture(c) getcontext((ucontext_t *)(c))

#endif /* FL_TABLE_UNW_ARCH_H */
