/* SPDX-License-Identifier: MIT */
/*
 * Signal context (see dispatch.h for the rules): the futex waits that
 * faultline makes in the application's threads (a thread stopped by the
 * handshake, one at an int3, one waiting for a heal or for the first
 * rescan), counted per thread in fl_naps.
 *
 * Why: the patcher tells a thread that computes from one that has just
 * woken from a blocking call by the kernel's count of its voluntary
 * context switches (status's voluntary_ctxt_switches, lib/patch/
 * threads.c).  A wait of faultline's is one of those switches, yet not a
 * blocking call of the program: without its count, a thread that the last
 * change stopped would look as if it had slept since.
 *
 * The count is raised before the wait and taken back when the futex did
 * not sleep (EAGAIN: the word had changed).  A reader that reads the
 * kernel's count first, then this one, sees every wait the kernel
 * counted (the switch comes after the raise, in this thread's order);
 * it may see one more, of a wait that has not slept yet, and then
 * believes the thread slept: the safe side.
 *
 * An entry is claimed by a thread's first wait and kept (a thread that
 * exits does not say so).  A thread that finds the table full is not
 * counted: it looks as if every wait of ours were a sleep of its own,
 * again the safe side (it is watched before it is stopped).
 */
#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dispatch/dispatch.h"

struct fl_nap fl_naps[FL_NAPS];

static size_t nap_hash(int32_t tid)
{
	return ((uint32_t)tid * 0x9e3779b9u) % FL_NAPS;
}

/* tid's entry, claimed when it has none; NULL when the table is full. */
static struct fl_nap *nap_entry(int32_t tid, bool claim)
{
	size_t h = nap_hash(tid);

	for (size_t k = 0; k < FL_NAPS; k++) {
		struct fl_nap *n = &fl_naps[(h + k) % FL_NAPS];
		int32_t have = atomic_load_explicit(&n->tid, memory_order_relaxed);

		if (have == tid)
			return n;
		if (have == 0) {
			if (!claim)
				return NULL;
			if (atomic_compare_exchange_strong_explicit(&n->tid, &have, tid,
								    memory_order_relaxed,
								    memory_order_relaxed) ||
			    have == tid)
				return n;
		}
	}
	return NULL;
}

struct fl_nap *fl_nap_self(void)
{
	return nap_entry((int32_t)gettid(), true);
}

long fl_nap_wait(_Atomic uint32_t *word, uint32_t val, const struct timespec *timeout)
{
	struct fl_nap *n = fl_nap_self();
	long r;
	int saved;

	if (n)
		atomic_fetch_add_explicit(&n->count, 1, memory_order_relaxed);
	r = syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val, timeout, NULL, 0);
	saved = errno;
	if (n && r != 0 && saved == EAGAIN)
		atomic_fetch_sub_explicit(&n->count, 1, memory_order_relaxed);
	errno = saved;
	return r;
}

bool fl_naps_of(int32_t tid, struct fl_nap_seen *seen)
{
	struct fl_nap *n = nap_entry(tid, false);

	if (!n)
		return false;
	seen->count = atomic_load_explicit(&n->count, memory_order_relaxed);
	seen->park = atomic_load_explicit(&n->park, memory_order_relaxed);
	seen->stops = atomic_load_explicit(&n->stops, memory_order_relaxed);
	return true;
}
