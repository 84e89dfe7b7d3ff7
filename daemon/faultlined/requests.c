/* SPDX-License-Identifier: MIT */
/* Requests to registered processes and their completions: see requests.h. */
#include <errno.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "procs.h"
#include "reply.h"
#include "requests.h"

/* A request waiting for its completion in a process's ring. */
struct pending {
	struct fld_client *from;	/* NULL once the requester is gone */
	uid_t uid;			/* the requester's */
	uint32_t from_seq;
	pid_t pid;
	uint32_t seq;			/* in the process's ring */
	uint32_t kind;
	uint64_t deadline_ms;
};

/*
 * Requests in flight: at most this many from one uid other than root (its
 * connections together), so that one user's requests to a process that
 * never answers do not keep the others' out.
 */
#define PENDING_PER_UID 64
static struct pending pendings[1024];
static size_t num_pendings;

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void fld_request(struct fld_client *c, const struct fl_msg *m, unsigned timeout_ms)
{
	struct fld_proc *p = fld_proc_find_live((pid_t)m->request.pid);
	struct fl_shm_header *h;
	struct fl_shm_entry e;
	uid_t uid = fld_client_uid(c);

	if (!p || !fld_proc_visible(p, uid)) {
		/* The same answer for "no such process" and "not yours". */
		fld_send_error(c, m->seq, -ESRCH, "no registered process %u", m->request.pid);
		return;
	}
	if (uid != 0) {
		size_t mine = 0;

		for (size_t i = 0; i < num_pendings; i++)
			mine += pendings[i].uid == uid;
		if (mine >= PENDING_PER_UID) {
			fld_send_error(c, m->seq, -EBUSY, "%d requests of uid %u in flight",
				       PENDING_PER_UID, (unsigned)uid);
			return;
		}
	}
	if (num_pendings == sizeof(pendings) / sizeof(pendings[0])) {
		fld_send_error(c, m->seq, -EBUSY, "too many requests in flight");
		return;
	}
	h = p->region;
	memset(&e, 0, sizeof(e));
	e.seq = ++p->next_seq;
	e.status = (int32_t)m->request.kind;
	e.value = m->request.arg;
	if (fl_ring_push(&h->request_head, &h->request_tail,
			 (char *)p->region + p->layout.requests_offset,
			 p->layout.request_entries, &e) != 0) {
		fld_send_error(c, m->seq, -EAGAIN, "pid %d is not taking requests", (int)p->pid);
		return;
	}
	/*
	 * Ring the doorbell: the increment is ordered after the push's release
	 * of head; the agent loads the doorbell with acquire before popping.
	 */
	atomic_fetch_add_explicit(&h->doorbell, 1, memory_order_release);
	syscall(SYS_futex, &h->doorbell, FUTEX_WAKE, 1, NULL, NULL, 0);
	pendings[num_pendings++] = (struct pending){
		.from = c, .uid = uid, .from_seq = m->seq, .pid = p->pid, .seq = e.seq,
		.kind = m->request.kind, .deadline_ms = mono_ms() + timeout_ms,
	};
}

static void finish(size_t i, int status, uint64_t value)
{
	struct pending *q = &pendings[i];

	if (q->from) {
		if (status < 0) {
			fld_send_error(q->from, q->from_seq, status, "request to pid %d: %s",
				       (int)q->pid, strerror(-status));
		} else {
			char text[160];
			int n = snprintf(text, sizeof(text),
					 "{\"pid\":%d,\"request\":\"%s\",\"status\":0,\"value\":%llu}",
					 (int)q->pid, q->kind == FL_REQ_PING ? "ping" : "heal_threshold",
					 (unsigned long long)value);

			fld_send_reply(q->from, q->from_seq, text, (size_t)n);
		}
	}
	pendings[i] = pendings[--num_pendings];
}

/*
 * A completion's status as the requester sees it: 0 or a negative errno
 * (the kernel's range, 1 to 4095), as the protocol says; anything else the
 * process wrote is a broken answer (and would index strerror with
 * -INT32_MIN).
 */
static int completion_status(int32_t status)
{
	return status <= 0 && status >= -4095 ? status : -EPROTO;
}

void fld_requests_poll(void)
{
	uint64_t now = mono_ms();

	for (size_t i = 0; i < num_pendings;) {
		struct pending *q = &pendings[i];
		struct fld_proc *p = fld_proc_find_live(q->pid);
		struct fl_shm_entry e;
		int r = 0;

		if (!p) {
			finish(i, -ESRCH, 0);
			continue;
		}
		/*
		 * Completions of this process: match them to their requests.  At
		 * most a ring's worth per visit: the process writes head (and
		 * can write our tail too), and one that keeps moving it while we
		 * pop must not hold the daemon here.
		 */
		for (uint32_t n = 0; n < p->layout.completion_entries; n++) {
			r = fl_ring_pop(&((struct fl_shm_header *)p->region)->completion_head,
					&((struct fl_shm_header *)p->region)->completion_tail,
					(char *)p->region + p->layout.completions_offset,
					p->layout.completion_entries, &e);
			if (r <= 0)
				break;
			for (size_t k = 0; k < num_pendings; k++) {
				if (pendings[k].pid == p->pid && pendings[k].seq == e.seq) {
					finish(k, completion_status(e.status), e.value);
					break;
				}
			}
		}
		if (r < 0 && p->client) {
			fld_client_drop(p->client, "completion ring: implausible head");
			continue;
		}
		if (i < num_pendings && pendings[i].pid == q->pid && now >= pendings[i].deadline_ms)
			finish(i, -ETIMEDOUT, 0);
		else
			i++;
	}
}

void fld_requests_forget(struct fld_client *c)
{
	for (size_t i = 0; i < num_pendings; i++)
		if (pendings[i].from == c)
			pendings[i].from = NULL;
}
