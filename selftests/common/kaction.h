/* SPDX-License-Identifier: MIT */
/*
 * Putting an action back in the kernel whole.  glibc's sigaction always
 * installs its own restorer; faultline's action names one of its own
 * (lib/dispatch/chain.c: the restorer tells its handler which mask the
 * kernel applied), so a test or a benchmark that saved faultline's action
 * with sigaction(sig, NULL, &a) puts it back with this.
 */
#ifndef FL_SELFTESTS_COMMON_KACTION_H
#define FL_SELFTESTS_COMMON_KACTION_H

#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/*
 * rt_sigaction(sig, a) with a's handler, flags, restorer and the kernel's
 * 64 bits of its mask.  Returns 0, or -1 with errno set.
 */
static inline int t_rt_sigaction(int sig, const struct sigaction *a)
{
	/* struct k_sigaction of x86-64 rt_sigaction. */
	struct {
		void *handler;
		unsigned long flags;
		void *restorer;
		uint64_t mask;
	} k;

	k.handler = (void *)a->sa_sigaction;
	k.flags = (unsigned long)a->sa_flags;
	k.restorer = (void *)a->sa_restorer;
	memcpy(&k.mask, &a->sa_mask, sizeof(k.mask));
	return (int)syscall(SYS_rt_sigaction, sig, &k, NULL, sizeof(k.mask));
}

#endif /* FL_SELFTESTS_COMMON_KACTION_H */
