/* SPDX-License-Identifier: MIT */
/*
 * The fl-requests thread: waits on the shared region's doorbell (a futex
 * the daemon increments and wakes), pops requests, runs them and pushes
 * completions, and rings the daemon's completion bell when it is set: a
 * DONE on the connection (docs/protocol.md, "Rings").  The request wakes
 * this thread and the completion wakes the daemon: neither waits for a
 * timer.  Each request is copied out of the ring once and validated
 * before use: the daemon is a peer, not trusted.
 */
#include <errno.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/internal.h"
#include "core/log.h"
#include "proto/proto.h"
#include "table/table.h"

/*
 * Runs one request into its completion; returns true when the completion
 * has a slot (a point request's).
 */
static bool run(const struct fl_shm_entry *req, const struct fl_shm_point_req *slot,
		struct fl_shm_header *h, struct fl_shm_entry *done, struct fl_shm_point_done *out)
{
	memset(done, 0, sizeof(*done));
	done->seq = req->seq;
	switch (req->status) {
	case FL_REQ_PING:
		done->value = req->value;
		return false;
	case FL_REQ_HEAL_THRESHOLD:
	case FL_REQ_HEAL:
	case FL_REQ_UNHEAL:
	case FL_REQ_HEAL_OVER:
	case FL_REQ_UNHEAL_AFTER:
		fl_agent_heal_run(req, h, done);
		return false;
	case FL_REQ_PATCHPOINT_WRITE:
	case FL_REQ_PATCHPOINT_RESET:
	case FL_REQ_STACKMAP_INVALIDATE:
		fl_agent_point_run(req, slot, fl_agent_patch_allowed(), done, out);
		return true;
	default:
		done->status = -EOPNOTSUPP;
		return false;
	}
}

/* The slots' copies: too large for the thread's stack together with the points API's. */
static struct fl_shm_point_req slot;
static struct fl_shm_point_done out;

static void *requests_thread(void *arg)
{
	(void)arg;
	while (!fl_workers_stopping()) {
		struct fl_shm_layout l;
		struct fl_shm_header *h = fl_counters_region(&l);
		char *base = (char *)h;
		/* Pairs with the daemon's increment before FUTEX_WAKE. */
		uint32_t bell = atomic_load_explicit(&h->doorbell, memory_order_acquire);
		struct fl_shm_entry req, done;
		int r;

		/* The entry and its slot copied once; run() reads only the copies. */
		while ((r = fl_ring_pop_slot(&h->request_head, &h->request_tail,
					     base + l.requests_offset, l.request_entries, &req,
					     base + l.request_slots_offset, sizeof(slot), &slot)) > 0) {
			bool with_slot;

			/* The daemon looks for itself too, when it takes a request. */
			fl_agent_dumpable_check();
			with_slot = run(&req, &slot, h, &done, &out);

			/*
			 * A full completion ring: the daemon is not reading; drop
			 * it.  The bell is taken after each push, not once a
			 * batch: the daemon answers this completion's requester
			 * while the next request runs.  A DONE that cannot go now
			 * goes later (fl_agent_ring_done), and the daemon's tick
			 * finds the completion anyway.
			 */
			if (fl_ring_push_slot(&h->completion_head, &h->completion_tail,
					      base + l.completions_offset, l.completion_entries,
					      &done, base + l.completion_slots_offset, sizeof(out),
					      with_slot ? &out : NULL) != 0)
				fl_log(FL_LOG_WARN, "faultlined: completion ring full; "
				       "request %u dropped", req.seq);
			else if (fl_shm_bell_take(&h->completion_bell))
				fl_agent_ring_done(done.seq);
		}
		if (r < 0) {
			/* An implausible head: resynchronize by discarding. */
			fl_log(FL_LOG_WARN, "faultlined: request ring corrupt; discarding it");
			atomic_store_explicit(&h->request_tail,
					      atomic_load_explicit(&h->request_head,
								   memory_order_acquire),
					      memory_order_release);
		}
		/* Sleeps until the doorbell moves from bell (or a spurious wake). */
		syscall(SYS_futex, &h->doorbell, FUTEX_WAIT, bell, NULL, NULL, 0);
	}
	return NULL;
}

/*
 * The daemon's move of the doorbell, made here: a wait that began before
 * it returns at once, and a look after it sees the stop.
 */
static void requests_wake(void)
{
	struct fl_shm_layout l;
	struct fl_shm_header *h = fl_counters_region(&l);

	if (!h)
		return;
	/* Pairs with the thread's acquire load of the doorbell. */
	atomic_fetch_add_explicit(&h->doorbell, 1, memory_order_release);
	syscall(SYS_futex, &h->doorbell, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

static struct fl_worker requests_worker = {
	.name = "fl-requests", .stack = 64 * 1024, .main = requests_thread,
	.wake = requests_wake,
};

int fl_agent_requests_start(void)
{
	return fl_agent_thread_start(&requests_worker);
}
