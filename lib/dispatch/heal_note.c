/* SPDX-License-Identifier: MIT */
/*
 * Signal context (see dispatch.h for the rules): a failed implicit check
 * counted for the heal policy (struct fl_heal_trigger).  The healer thread
 * (lib/patch/heal_policy.c) does the healing, never this.
 */
#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dispatch/dispatch.h"

struct fl_heal_trigger fl_heal_trigger;

void fl_heal_note(uint32_t slot)
{
	/* Acquire: pairs with the healer's release of after, watch and wanted set before. */
	uint32_t after = atomic_load_explicit(&fl_heal_trigger.after, memory_order_acquire);
	uint32_t window = atomic_load_explicit(&fl_heal_trigger.window_s, memory_order_relaxed);
	struct fl_heal_watch *w;
	uint32_t n, target;

	if (!after || slot >= fl_heal_trigger.slots)
		return;
	w = &fl_heal_trigger.watch[slot];
	if (window) {
		struct timespec ts;
		uint32_t now, start;

		/* The vDSO's: no system call, async-signal-safe. */
		clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
		now = (uint32_t)ts.tv_sec;
		start = atomic_load_explicit(&w->start, memory_order_relaxed);
		/*
		 * A new window: one thread wins the exchange and starts the
		 * count again; a failure racing with it may land in either
		 * window (the policy is a threshold, not an exact count).
		 */
		if (now - start >= window &&
		    atomic_compare_exchange_strong_explicit(&w->start, &start, now,
							    memory_order_relaxed,
							    memory_order_relaxed))
			atomic_store_explicit(&w->count, 0, memory_order_relaxed);
	}
	n = atomic_fetch_add_explicit(&w->count, 1, memory_order_relaxed) + 1;
	if (n < after || n >= FL_HEAL_GAVE_UP)
		return;
	atomic_fetch_or_explicit(&fl_heal_trigger.wanted[slot / 64], 1ull << (slot % 64),
				 memory_order_seq_cst);
	/*
	 * A round that starts after the bit is set heals the site: the one
	 * after the round running now, if any.  Seq_cst: the bit before this
	 * load, as the healer's increment of started before its reads of the
	 * bits.
	 */
	target = atomic_load_explicit(&fl_heal_trigger.started, memory_order_seq_cst) + 1;
	/* Release: the wanted bit before the bell. */
	atomic_fetch_add_explicit(&fl_heal_trigger.bell, 1, memory_order_release);
	syscall(SYS_futex, &fl_heal_trigger.bell, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	/*
	 * Wait for that round, a moment at most: this thread may hold a lock
	 * the healer needs (an allocator's); then it only fails more than
	 * `after` times.
	 */
	for (;;) {
		struct timespec wait = { 0, FL_HEAL_WAIT_MS * 1000000L };
		uint32_t done = atomic_load_explicit(&fl_heal_trigger.done, memory_order_acquire);

		if ((int32_t)(done - target) >= 0)
			return;
		if (fl_nap_wait(&fl_heal_trigger.done, done, &wait) != 0 && errno == ETIMEDOUT)
			return;
	}
}
