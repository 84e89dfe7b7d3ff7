/* SPDX-License-Identifier: MIT */
/* Requests to registered processes and their completions: see requests.h. */
#include <errno.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "access.h"
#include "budget.h"
#include "dlog.h"
#include "loop.h"
#include "procs.h"
#include "reply.h"
#include "requests.h"

/* A request waiting for its completion in a process's ring. */
struct pending {
	struct fld_client *from;	/* NULL once the requester is gone */
	uid_t uid;			/* charged to: the requester's, or the process's */
	uint32_t from_seq;
	pid_t pid;
	uint32_t seq;			/* in the process's ring */
	uint32_t kind;			/* FL_REQ_*: what we asked, not what the process says */
	bool timed;			/* the process sends no DONE: the timer looks (below) */
	uint64_t deadline_ms;
};

/*
 * Requests in flight: at most PENDING_PER_UID of one uid other than root
 * and the daemon's own (its connections together, and the daemon's own
 * requests to its processes: the heal policy), so that one user's
 * requests to processes that never answer do not keep the others' out;
 * and the last ROOT_RESERVE entries are root's and the daemon's uid's
 * (their requests, and the policy of their processes), so that no number
 * of users keeps them out.
 */
#define PENDING_PER_UID 64
#define ROOT_RESERVE 64
static struct pending pendings[1024];
static size_t num_pendings;
#define MAX_PENDINGS (sizeof(pendings) / sizeof(pendings[0]))

/*
 * A process whose HELLO set FL_HELLO_DONE tells the daemon of its
 * completions itself: DONE, on its connection, when it pushes one while
 * its completion bell is set; the daemon sets the bell while it waits for
 * that process (fl_shm_bell_set, proto.h).  The answer then goes when the
 * completion is written.  For a process that sends no DONE (an agent
 * older than it), while requests to it are in flight, the rings are looked
 * at every POLL_MS (a timerfd the loop watches): its answer waits for its
 * completion by a millisecond at most.  Either way the loop's tick looks
 * too, and times requests out.
 */
#define POLL_MS 1
static int timer_fd = -1;
static struct fld_loop *timer_loop;
static bool timer_armed;

static void timer_arm(bool on)
{
	struct itimerspec it = { 0 };

	if (timer_fd < 0 || on == timer_armed)
		return;
	if (on) {
		it.it_interval.tv_nsec = POLL_MS * 1000000L;
		it.it_value = it.it_interval;
	}
	if (timerfd_settime(timer_fd, 0, &it, NULL) == 0)
		timer_armed = on;
}

static void on_timer(void *ctx)
{
	uint64_t expirations;

	(void)ctx;
	while (read(timer_fd, &expirations, sizeof(expirations)) == (ssize_t)sizeof(expirations))
		;
	fld_requests_poll();
}

int fld_requests_start(struct fld_loop *loop)
{
	int err;

	timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (timer_fd < 0)
		return -errno;
	err = fld_loop_watch(loop, timer_fd, on_timer, NULL);
	if (err) {
		close(timer_fd);
		timer_fd = -1;
		return err;
	}
	timer_loop = loop;
	return 0;
}

void fld_requests_stop(void)
{
	if (timer_fd < 0)
		return;
	fld_loop_unwatch(timer_loop, timer_fd);
	close(timer_fd);
	timer_fd = -1;
	timer_armed = false;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * Whether a request charged to uid (a client's, or the daemon's own to a
 * process of uid) may go in flight now.  Returns 0, or -EBUSY with why
 * (size bytes) saying which bound it is over.  A uid back at half its
 * bound may be told of its next refusal again (fld_budget_within).
 */
static int room(uid_t uid, char *why, size_t size)
{
	size_t mine = 0;

	/* Root and the daemon's own uid (a user's own daemon), as for the budgets. */
	if (!fld_budget_applies(uid)) {
		if (num_pendings < MAX_PENDINGS)
			return 0;
		snprintf(why, size, "too many requests in flight");
		return -EBUSY;
	}
	for (size_t i = 0; i < num_pendings; i++)
		mine += pendings[i].uid == uid;
	if (mine >= PENDING_PER_UID) {
		snprintf(why, size, "%d requests of uid %u in flight", PENDING_PER_UID,
			 (unsigned)uid);
		return -EBUSY;
	}
	if (num_pendings >= MAX_PENDINGS - ROOT_RESERVE) {
		snprintf(why, size, "too many requests in flight (the last %d are root's)",
			 ROOT_RESERVE);
		return -EBUSY;
	}
	if (mine <= PENDING_PER_UID / 2)
		fld_budget_within(uid, FLD_BUDGET_REQUESTS);
	return 0;
}

/*
 * Who may ask what of p (docs/protocol.md): anything of a process one
 * could ptrace (access.h), root anything, and raw code bytes only root,
 * only to a process that opted in.  Then the bounds on requests in flight.
 * Returns 0, or answers c with the ERROR and returns -1.
 */
static int admit(struct fld_client *c, uint32_t seq, struct fld_proc *p, uint32_t pid,
		 uint32_t kind)
{
	uid_t uid = fld_client_uid(c);
	char why[96];

	if (!p || !fld_access_traceable(p, uid, fld_client_gid(c))) {
		/* The same answer for "no such process" and "not yours" (or not traceable). */
		fld_send_error(c, seq, -ESRCH, "no registered process %u", pid);
		return -1;
	}
	if (kind == FL_REQ_PATCHPOINT_WRITE && uid != 0) {
		fld_send_error(c, seq, -EPERM, "raw code bytes (a patch point write) only from root");
		return -1;
	}
	if (kind == FL_REQ_PATCHPOINT_WRITE && !p->allow_patch) {
		fld_send_error(c, seq, -EPERM, "pid %u did not opt in to raw code bytes "
			       "(FAULTLINE_ALLOW_PATCH=1 or FL_INIT_ALLOW_PATCH)", pid);
		return -1;
	}
	if (room(uid, why, sizeof(why)) != 0) {
		fld_send_error(c, seq, -EBUSY, "%s", why);
		return -1;
	}
	return 0;
}

/*
 * Pushes e (and slot, when not NULL) into p's ring and rings the doorbell;
 * then it is pending, charged to uid.
 */
static void push(struct fld_client *c, uint32_t seq, struct fld_proc *p, struct fl_shm_entry *e,
		 const struct fl_shm_point_req *slot, unsigned timeout_ms, uid_t uid)
{
	struct fl_shm_header *h = p->region;

	e->seq = ++p->next_seq;
	/*
	 * The bell is set before the request is in the ring: the push's
	 * release of head orders it before the process's acquire, and the
	 * process completes the request only after that.
	 */
	if (p->rings)
		fl_shm_bell_set(&h->completion_bell);
	if (fl_ring_push_slot(&h->request_head, &h->request_tail,
			      (char *)p->region + p->layout.requests_offset,
			      p->layout.request_entries, e,
			      (char *)p->region + p->layout.request_slots_offset,
			      sizeof(*slot), slot) != 0) {
		if (c)
			fld_send_error(c, seq, -EAGAIN, "pid %d is not taking requests",
				       (int)p->pid);
		else
			fld_warn("pid %d is not taking requests", (int)p->pid);
		return;
	}
	/*
	 * Ring the doorbell: the increment is ordered after the push's release
	 * of head; the agent loads the doorbell with acquire before popping.
	 */
	atomic_fetch_add_explicit(&h->doorbell, 1, memory_order_release);
	syscall(SYS_futex, &h->doorbell, FUTEX_WAKE, 1, NULL, NULL, 0);
	if (!p->rings)
		timer_arm(true);
	pendings[num_pendings++] = (struct pending){
		.from = c, .uid = uid, .from_seq = seq, .pid = p->pid,
		.seq = e->seq, .kind = (uint32_t)e->status, .timed = !p->rings,
		.deadline_ms = mono_ms() + timeout_ms,
	};
}

void fld_request(struct fld_client *c, const struct fl_msg *m, unsigned timeout_ms)
{
	struct fld_proc *p = fld_proc_find_live((pid_t)m->request.pid);
	struct fl_shm_entry e;

	if (admit(c, m->seq, p, m->request.pid, m->request.kind))
		return;
	memset(&e, 0, sizeof(e));
	e.status = (int32_t)m->request.kind;
	e.value = m->request.arg;
	push(c, m->seq, p, &e, NULL, timeout_ms, fld_client_uid(c));
}

void fld_request_point(struct fld_client *c, const struct fl_msg *m, unsigned timeout_ms)
{
	const struct fl_msg_point *q = &m->point;
	struct fld_proc *p = fld_proc_find_live((pid_t)q->pid);
	struct fl_shm_point_req slot;
	struct fl_shm_entry e;

	if (admit(c, m->seq, p, q->pid, q->kind))
		return;
	/* fl_proto_decode checked the kind and the lengths (fl_point_args_why). */
	memset(&slot, 0, sizeof(slot));
	slot.id = q->id;
	slot.pc = q->pc;
	slot.target = q->target;
	slot.len = q->len;
	slot.expect_len = q->expect_len;
	memcpy(slot.bytes, m->bytes, q->len);
	memcpy(slot.expect, m->expect, q->expect_len);
	memset(&e, 0, sizeof(e));
	e.status = (int32_t)q->kind;
	push(c, m->seq, p, &e, &slot, timeout_ms, fld_client_uid(c));
}

static uint64_t policy_heal_arg;
static uint32_t policy_unheal_after;

void fld_requests_policy(uint64_t heal_arg, uint32_t unheal_after_s)
{
	policy_heal_arg = heal_arg;
	policy_unheal_after = unheal_after_s;
}

/*
 * The daemon's own requests (no client waits for them): the policy, to a
 * process that just registered.  They are charged to the process's user,
 * as its own requests would be: one user's processes that never answer
 * keep no one else's requests out.  Over the bounds only the policy is
 * lost; the log says so once while the user stays there (budget.h).
 */
static void push_own(struct fld_proc *p, uint32_t kind, uint64_t arg)
{
	struct fl_shm_entry e;
	char why[96], text[192];

	if (room(p->uid, why, sizeof(why)) != 0) {
		snprintf(text, sizeof(text), "%s: pid %d (uid %u) gets no heal policy", why,
			 (int)p->pid, (unsigned)p->uid);
		fld_budget_refused(p->uid, FLD_BUDGET_REQUESTS, text);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.status = (int32_t)kind;
	e.value = arg;
	push(NULL, 0, p, &e, NULL, 2000, p->uid);
}

void fld_request_policy(struct fld_proc *p)
{
	if (policy_heal_arg)
		push_own(p, FL_REQ_HEAL_THRESHOLD, policy_heal_arg);
	if (policy_unheal_after)
		push_own(p, FL_REQ_UNHEAL_AFTER, policy_unheal_after | FL_HEAL_DEFAULT);
}

static const char *kind_name(uint32_t kind)
{
	switch (kind) {
	case FL_REQ_PING:
		return "ping";
	case FL_REQ_HEAL_THRESHOLD:
		return "heal_threshold";
	case FL_REQ_PATCHPOINT_WRITE:
		return "patchpoint_write";
	case FL_REQ_PATCHPOINT_RESET:
		return "patchpoint_reset";
	case FL_REQ_STACKMAP_INVALIDATE:
		return "stackmap_invalidate";
	case FL_REQ_HEAL:
		return "heal";
	case FL_REQ_UNHEAL:
		return "unheal";
	case FL_REQ_HEAL_OVER:
		return "heal_over";
	default:
		return "unheal_after";
	}
}

static json_object *point_json(const struct fl_shm_point *pt)
{
	static const char hex[] = "0123456789abcdef";
	char text[2 * FL_PROTO_POINT_MAX + 1];
	json_object *o = json_object_new_object();

	for (uint32_t i = 0; i < pt->size; i++) {
		text[2 * i] = hex[pt->bytes[i] >> 4];
		text[2 * i + 1] = hex[pt->bytes[i] & 15];
	}
	text[2 * pt->size] = 0;
	json_object_object_add(o, "id", json_object_new_uint64(pt->id));
	json_object_object_add(o, "pc", json_object_new_uint64(pt->pc));
	json_object_object_add(o, "size", json_object_new_uint64(pt->size));
	json_object_object_add(o, "declared", json_object_new_boolean(pt->flags & 1));
	json_object_object_add(o, "changed", json_object_new_boolean(pt->flags & 2));
	json_object_object_add(o, "bytes", json_object_new_string(text));
	return o;
}

/*
 * A point request's answer: a REPLY whatever the process answered (its
 * refusal too: the record as it is, and why), docs/json.md.
 */
/* An answer's document: what every answer says, for the caller to add to. */
static json_object *answer_new(const struct pending *q, int status)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "pid", json_object_new_int(q->pid));
	json_object_object_add(o, "request", json_object_new_string(kind_name(q->kind)));
	json_object_object_add(o, "status", json_object_new_int(status));
	json_object_object_add(o, "error", json_object_new_string(status ? strerror(-status) : ""));
	return o;
}

/* Sends o as q's REPLY, and frees it. */
static void answer_send(const struct pending *q, json_object *o)
{
	size_t len;
	const char *text = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN, &len);

	if (text)
		fld_send_reply(q->from, q->from_seq, text, len);
	else
		fld_send_error(q->from, q->from_seq, -ENOMEM, "out of memory");
	json_object_put(o);
}

static void send_point(struct pending *q, int status, const struct fl_shm_point_done *d)
{
	json_object *o = answer_new(q, status);

	json_object_object_add(o, "message", json_object_new_string(d->diag));
	json_object_object_add(o, "before", d->have & FL_SHM_POINT_BEFORE ?
			       point_json(&d->before) : NULL);
	json_object_object_add(o, "now", d->have & FL_SHM_POINT_NOW ? point_json(&d->now) : NULL);
	answer_send(q, o);
}

/*
 * A heal or unheal's answer: a REPLY also when the site cannot be healed
 * (-EOPNOTSUPP, with the reason) or is no site or not healed (-ENOENT),
 * so that faultline heal can say so per site (docs/json.md).
 */
static void send_heal(struct pending *q, int status, uint64_t value)
{
	json_object *o = answer_new(q, status);
	const char *tactic = status == 0 && q->kind == FL_REQ_HEAL ?
		fl_shm_tactic_name((unsigned)value) : NULL;

	json_object_object_add(o, "tactic", tactic ? json_object_new_string(tactic) : NULL);
	json_object_object_add(o, "why", status == -EOPNOTSUPP ?
			       json_object_new_string(fl_shm_why_text((unsigned)value)) : NULL);
	answer_send(q, o);
}

/*
 * Answers pending request i and forgets it.  d: the completion's slot, as
 * checked (NULL: the process did not complete it, or its slot is broken).
 */
static void finish(size_t i, int status, uint64_t value, const struct fl_shm_point_done *d)
{
	struct pending *q = &pendings[i];

	if (q->from && d) {
		send_point(q, status, d);
	} else if (q->from && (q->kind == FL_REQ_HEAL || q->kind == FL_REQ_UNHEAL) &&
		   (status == 0 || status == -EOPNOTSUPP || status == -ENOENT)) {
		send_heal(q, status, value);
	} else if (q->from) {
		if (status < 0) {
			fld_send_error(q->from, q->from_seq, status, "request to pid %d: %s",
				       (int)q->pid, strerror(-status));
		} else {
			char text[160];
			int n = snprintf(text, sizeof(text),
					 "{\"pid\":%d,\"request\":\"%s\",\"status\":0,\"value\":%llu}",
					 (int)q->pid, kind_name(q->kind),
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

static bool point_kind(uint32_t kind)
{
	return kind >= FL_REQ_PATCHPOINT_WRITE && kind <= FL_REQ_STACKMAP_INVALIDATE;
}

/* A completion for pending request k, with its slot's copy d. */
static void complete(size_t k, const struct fl_shm_entry *e, const struct fl_shm_point_done *d)
{
	int status = completion_status(e->status);
	struct fl_diag diag;

	if (!point_kind(pendings[k].kind)) {
		finish(k, status, e->value, NULL);
		return;
	}
	/* Read once (the copy), checked: the process is a peer. */
	if (status == -EPROTO || fl_shm_point_done_check(d, &diag) != 0) {
		finish(k, -EPROTO, 0, NULL);
		return;
	}
	finish(k, status, 0, d);
}

/* Whether a request to pid is in flight. */
static bool in_flight(pid_t pid)
{
	for (size_t i = 0; i < num_pendings; i++)
		if (pendings[i].pid == pid)
			return true;
	return false;
}

/*
 * Pops p's completions and answers their requests: at most a ring's worth
 * a call (the process writes head, and can write our tail too: one that
 * keeps moving it while we pop must not hold the daemon here).  Returns
 * how many answered a request in flight, or -EBADMSG when the ring's head
 * is implausible: p's client is dropped then.
 */
static int collect(struct fld_proc *p)
{
	struct fl_shm_header *h = p->region;
	int answered = 0, r = 0;

	for (uint32_t n = 0; n < p->layout.completion_entries; n++) {
		struct fl_shm_entry e;
		struct fl_shm_point_done d;

		r = fl_ring_pop_slot(&h->completion_head, &h->completion_tail,
				     (char *)p->region + p->layout.completions_offset,
				     p->layout.completion_entries, &e,
				     (char *)p->region + p->layout.completion_slots_offset,
				     sizeof(d), &d);
		if (r <= 0)
			break;
		for (size_t k = 0; k < num_pendings; k++) {
			if (pendings[k].pid == p->pid && pendings[k].seq == e.seq) {
				complete(k, &e, &d);
				answered++;
				break;
			}
		}
	}
	if (r < 0 && p->client) {
		fld_client_drop(p->client, "completion ring: implausible head");
		return -EBADMSG;
	}
	return answered;
}

/*
 * Collects p's completions; then, when p sends DONE and requests to it
 * are still in flight, sets its bell and collects once more: a completion
 * pushed between the first look and the bell is seen now, any later one
 * is rung (fl_shm_bell_set).  Returns what collect returns, summed.
 */
static int visit(struct fld_proc *p)
{
	int n = collect(p), more;

	if (n < 0 || !p->rings || !in_flight(p->pid))
		return n;
	fl_shm_bell_set(&((struct fl_shm_header *)p->region)->completion_bell);
	more = collect(p);
	return more < 0 ? more : n + more;
}

int fld_requests_done(struct fld_proc *p)
{
	return visit(p);
}

void fld_requests_poll(void)
{
	uint64_t now = mono_ms();
	bool timed = false;

	for (size_t i = 0; i < num_pendings;) {
		pid_t pid = pendings[i].pid;
		uint32_t seq = pendings[i].seq;
		struct fld_proc *p = fld_proc_find_live(pid);

		if (!p) {
			finish(i, -ESRCH, 0, NULL);
			continue;
		}
		/* Dropped: its requests are answered -ESRCH as the loop comes to them. */
		if (visit(p) < 0)
			continue;
		/*
		 * The visit answered the request at i, and another took its
		 * place (finish moves the last one there): that one is next.
		 */
		if (i >= num_pendings || pendings[i].pid != pid || pendings[i].seq != seq)
			continue;
		if (now >= pendings[i].deadline_ms) {
			finish(i, -ETIMEDOUT, 0, NULL);
			continue;
		}
		timed |= pendings[i].timed;
		i++;
	}
	timer_arm(timed);
}

void fld_requests_forget(struct fld_client *c)
{
	for (size_t i = 0; i < num_pendings; i++)
		if (pendings[i].from == c)
			pendings[i].from = NULL;
}
