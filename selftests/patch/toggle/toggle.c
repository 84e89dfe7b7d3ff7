// SPDX-License-Identifier: MIT
/*
 * libtoggle.so, for sigtrap_blocked_around_each_call_under_the_shims_mask:
 * the application's code that blocks SIGTRAP, in a library of its own, so
 * that the shim's interposers (linked into that test program) take its
 * calls for the application's and not for faultline's (they pass the
 * calls made from their own module to the kernel unchanged).
 */
#include <pthread.h>
#include <signal.h>

#include "toggle.h"

int toggle_sigtrap(int on)
{
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, SIGTRAP);
	return pthread_sigmask(on ? SIG_BLOCK : SIG_UNBLOCK, &s, NULL);
}
