/* SPDX-License-Identifier: MIT */
/*
 * Signal context (see dispatch.h for the rules): a fault that comes
 * before the first rescan of the loaded modules has published their
 * sites, when fl_init left that rescan to the fl-agent thread
 * (FL_INIT_DEFER_DISCOVERY: a process with 10^5 sites starts without
 * waiting for them).  Such a fault waits for the rescan, then is claimed
 * as any other: the claim path is ready before main either way, and the
 * wait is paid only by a fault that comes that early.
 *
 * The protocol, on fl_dispatch.scan_pending (a futex word):
 *  1. fl_init sets it to 1 before the fl-agent thread starts;
 *  2. that thread (fl_dispatch.scanner) rescans, and when the rescan has
 *     published the modules it found, fl_dispatch_scan_done stores 0
 *     (release) and wakes every waiter;
 *  3. a fault that found no site while it was 1 waits (FUTEX_WAIT while it
 *     is still 1, at most SCAN_WAIT_S in all), then looks again.
 * Not waited for: a signal someone sent (si_code <= 0: no access to
 * claim), a fault of the scanning thread itself (it would wait for
 * itself), and a rescan longer than SCAN_WAIT_S (the fault then goes
 * down the chain, as a fault no rescan covered does): a wait cannot hang
 * the program, whatever lock the faulting thread holds.
 */
#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dispatch/dispatch.h"

/* The longest a fault waits for the first rescan. */
#define SCAN_WAIT_S 5

bool fl_dispatch_scan_wait_ms(long ms)
{
	struct timespec end, now, left;

	if (clock_gettime(CLOCK_MONOTONIC, &end) != 0)
		return false;
	end.tv_sec += ms / 1000;
	end.tv_nsec += (ms % 1000) * 1000000L;
	if (end.tv_nsec >= 1000000000L) {
		end.tv_sec++;
		end.tv_nsec -= 1000000000L;
	}
	/* Acquire: pairs with fl_dispatch_scan_done's release (the snapshot it follows). */
	while (atomic_load_explicit(&fl_dispatch.scan_pending, memory_order_acquire)) {
		if (clock_gettime(CLOCK_MONOTONIC, &now) != 0)
			return false;
		left.tv_sec = end.tv_sec - now.tv_sec;
		left.tv_nsec = end.tv_nsec - now.tv_nsec;
		if (left.tv_nsec < 0) {
			left.tv_sec--;
			left.tv_nsec += 1000000000L;
		}
		if (left.tv_sec < 0)
			return false;
		/* EAGAIN (no longer 1), EINTR, ETIMEDOUT: look again. */
		fl_nap_wait(&fl_dispatch.scan_pending, 1, &left);
	}
	return true;
}

bool fl_dispatch_scan_wait(const siginfo_t *si)
{
	if (!atomic_load_explicit(&fl_dispatch.scan_pending, memory_order_acquire))
		return false;
	if (si->si_code <= 0 ||
	    (int32_t)syscall(SYS_gettid) == atomic_load_explicit(&fl_dispatch.scanner,
								  memory_order_relaxed))
		return false;
	return fl_dispatch_scan_wait_ms(SCAN_WAIT_S * 1000L);
}

void fl_dispatch_scan_done(void)
{
	if (!atomic_exchange_explicit(&fl_dispatch.scan_pending, 0, memory_order_release))
		return;
	syscall(SYS_futex, &fl_dispatch.scan_pending, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}
