/* SPDX-License-Identifier: MIT */
#ifndef FL_PRELOAD_MASK_H
#define FL_PRELOAD_MASK_H

#include <signal.h>

/*
 * Finds this library's code, so that its own calls to the functions mask.c
 * interposes are told from the program's: the constructor's first step.
 * Hidden.
 */
__attribute__((visibility("hidden"))) void fl_preload_mask_prepare(void);

/*
 * The shim takes over the signal mask (mask.c): called by its constructor
 * once fl_init has installed faultline's handlers; SIGSEGV, SIGBUS (and
 * SIGTRAP, if faultline's already) blocked by the parent move from the
 * main thread's kernel mask into its virtual set.  Hidden, as the rest
 * of this header: the shim exports only what it interposes.
 */
__attribute__((visibility("hidden"))) void fl_preload_mask_start(void);

/*
 * sigprocmask as the application's (the shim's own sigset calls it):
 * returns 0, or -1 with errno set.  Async-signal-safe.
 */
__attribute__((visibility("hidden"))) int fl_preload_sigmask(int how, const sigset_t *set, sigset_t *old);

#endif /* FL_PRELOAD_MASK_H */
