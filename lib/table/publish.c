/* SPDX-License-Identifier: MIT */
/*
 * Publishing snapshots, and the grace period that says when an old one may
 * be freed.  The reader side is fl_snapshot_enter/leave in
 * lib/dispatch/dispatch.h; the protocol is described there.
 */
#include <sched.h>
#include <time.h>

#include "table/table.h"

const struct fl_snapshot *fl_snapshot_publish(const struct fl_snapshot *s)
{
	/*
	 * seq_cst: ordered before the epoch flips and counter reads of the
	 * grace period that follows, as the reader's increment is ordered
	 * before its load of current.
	 */
	return atomic_exchange(&fl_dispatch.current, s);
}

static void wait_drained(unsigned parity)
{
	unsigned spins = 0;

	/* Pairs with the reader's seq_cst decrement in fl_snapshot_leave. */
	while (atomic_load(&fl_dispatch.readers[parity]) != 0) {
		if (++spins < 64) {
			sched_yield();
		} else {
			struct timespec ts = { 0, 50 * 1000 };

			nanosleep(&ts, NULL);
		}
	}
}

/*
 * A reader that holds an old snapshot incremented readers[p] before it
 * loaded current, and so before the publication.  p is the parity it read,
 * which may be either one (it may have read the epoch long before).  Each
 * flip sends new readers to the other counter, so the counter being waited
 * for only drains; after both have drained once since the publication,
 * every reader from before it has left.  Writers hold the registry lock,
 * so grace periods do not overlap.
 */
void fl_snapshot_synchronize(void)
{
	for (int round = 0; round < 2; round++) {
		uint64_t old = atomic_fetch_add(&fl_dispatch.epoch, 1);

		wait_drained((unsigned)(old & 1));
	}
}
