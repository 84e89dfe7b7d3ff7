// SPDX-License-Identifier: MIT
/*
 * faultlined end to end, group bell (e2e bell ...): the completion bell
 * and DONE (docs/protocol.md, "Rings"), from both sides.
 *   - faultlined with fake processes: it sets the bell of a process whose
 *     HELLO set FL_HELLO_DONE before each request is in its ring, answers
 *     a completion when it reads the DONE behind it, leaves the bell of
 *     any other process alone, and drops a DONE it may not take (before
 *     HELLO, after a HELLO without the flag, with a descriptor, a flood of
 *     unasked ones) with that peer only;
 *   - the real agent (the preload shim in e2e-prog) with a fake daemon:
 *     it says FL_HELLO_DONE, sends DONE behind a completion whose push
 *     took the bell (and clears it), none when the bell is clear, and
 *     again on a new connection after the daemon went away.
 * The harness and the driver: harness.c.
 */
#include <linux/futex.h>
#include <stdatomic.h>
#include <sys/syscall.h>

#include "harness.h"

/* HELLO with f's region and flags; returns the WELCOME'd socket or -errno. */
static int hello_with(struct fake *f, uint32_t flags)
{
	struct fl_msg_hello h;
	char buf[512];
	struct fl_msg m;
	int fd = conn();
	ssize_t n;

	if (fd < 0)
		return fd;
	memset(&h, 0, sizeof(h));
	fl_proto_header(&h, FL_MSG_HELLO, sizeof(h), 1);
	h.pid = (uint32_t)getpid();
	h.flags = flags;
	h.region_size = f->l.size;
	snprintf(h.comm, sizeof(h.comm), "e2e-bell");
	if (xsend(fd, &h, sizeof(h), &f->fd, 1, 0) ||
	    (n = xrecv(fd, buf, sizeof(buf), WAIT_MS)) <= 0 ||
	    fl_proto_decode(buf, (size_t)n, 0, &m, NULL) || m.type != FL_MSG_WELCOME) {
		close(fd);
		return -EPROTO;
	}
	return fd;
}

static int send_header(int fd, enum fl_msg_type type, uint32_t seq)
{
	struct fl_msg_header h;

	fl_proto_header(&h, type, sizeof(h), seq);
	return xsend(fd, &h, sizeof(h), NULL, 0, 0);
}

static _Atomic uint32_t *bell_of(struct fake *f)
{
	return &((struct fl_shm_header *)f->region)->completion_bell;
}

/* The next request in f's ring, within WAIT_S: 1 with *e, else 0 (and why on stdout). */
static int next_request(struct fake *f, struct fl_shm_entry *e)
{
	struct fl_shm_header *h = f->region;
	double end = now() + WAIT_S;
	int r;

	while ((r = fl_ring_pop(&h->request_head, &h->request_tail,
				(char *)f->region + f->l.requests_offset, f->l.request_entries,
				e)) == 0 && now() < end)
		sleep_ms(1);
	if (r != 1)
		printf("no request came to the ring (%d)", r);
	return r == 1;
}

/* Pushes the PING's completion (its value back). */
static int complete_ping(struct fake *f, const struct fl_shm_entry *req)
{
	struct fl_shm_header *h = f->region;
	struct fl_shm_entry done = { .seq = req->seq, .value = req->value };

	return fl_ring_push(&h->completion_head, &h->completion_tail,
			    (char *)f->region + f->l.completions_offset, f->l.completion_entries,
			    &done);
}

/* Waits on fd for the REPLY to seq, passing over nothing else: 0, or why on stdout. */
static int wait_reply(int fd, uint32_t seq)
{
	char buf[512];
	struct fl_msg m;
	ssize_t n = xrecv(fd, buf, sizeof(buf), WAIT_MS);

	if (n <= 0 || fl_proto_decode(buf, (size_t)n, 0, &m, NULL) || m.type != FL_MSG_REPLY ||
	    m.seq != seq) {
		printf("no REPLY to SYNC %u (%zd)", seq, n);
		return -1;
	}
	return 0;
}

/*
 * A process whose HELLO set FL_HELLO_DONE: the bell is set when each
 * request is in the ring, and the answer has gone to the requester once
 * the daemon has read the DONE behind the completion: by the time it
 * answers the SYNC sent after the DONE (messages are handled in order),
 * the requester's socket holds the REPLY.  Twenty requests, so that the
 * daemon's tick (which looks at the rings too, every 50 ms) cannot pass
 * for the DONE every time.  With nothing left in flight the bell stays
 * clear.
 */
static int rings_answered_on_done(void)
{
	struct fake f;
	int fd;

	if (fake_region(&f, 16, ALL_SEALS, getpid()) || (fd = hello_with(&f, FL_HELLO_DONE)) < 0) {
		printf("the HELLO with FL_HELLO_DONE was refused");
		return 1;
	}
	for (int i = 0; i < 20; i++) {
		char msg[64], buf[512], *text;
		struct fl_shm_entry req;
		struct fl_msg m;
		int rq = conn();
		ssize_t n;

		if (rq < 0 || xsend(rq, msg, mk_request(msg, (uint32_t)getpid(), FL_REQ_PING,
							100 + (uint64_t)i), NULL, 0, 0)) {
			printf("cannot send the request");
			return 1;
		}
		if (!next_request(&f, &req))
			return 1;
		if (!atomic_load(bell_of(&f))) {
			printf("request %d: in the ring with the bell clear", i);
			return 1;
		}
		if (complete_ping(&f, &req) || !fl_shm_bell_take(bell_of(&f))) {
			printf("request %d: cannot complete it, or the bell was cleared", i);
			return 1;
		}
		if (send_header(fd, FL_MSG_DONE, req.seq) || send_header(fd, FL_MSG_SYNC, 1000 + i) ||
		    wait_reply(fd, 1000 + (uint32_t)i))
			return 1;
		/* Already there: no wait. */
		n = xrecv(rq, buf, sizeof(buf), 0);
		if (n <= 0 || fl_proto_decode(buf, (size_t)n, 0, &m, NULL) || m.type != FL_MSG_REPLY) {
			printf("request %d: no answer when the DONE behind its completion was read "
			       "(%zd)", i, n);
			return 1;
		}
		text = strndup(m.text, m.reply.len);
		snprintf(msg, sizeof(msg), "\"value\":%d", 100 + i);
		if (!text || !strstr(text, msg)) {
			printf("request %d: answered %s", i, text ? text : "?");
			free(text);
			return 1;
		}
		free(text);
		close(rq);
	}
	if (atomic_load(bell_of(&f))) {
		printf("the bell set with no request in flight");
		return 1;
	}
	printf("20 requests: the bell set for each, each answered when its DONE was read");
	return 0;
}

/*
 * A process whose HELLO did not set FL_HELLO_DONE (an older agent): its
 * bell is never set, its completion is answered all the same (the daemon
 * looks at its ring), and a DONE from it is a violation.
 */
static int silent_process_polled(void)
{
	char msg[64], *text = NULL;
	struct fl_shm_entry req;
	struct fake f;
	int fd, rq, err, gone;

	if (fake_region(&f, 16, ALL_SEALS, getpid()) || (fd = hello_with(&f, 0)) < 0) {
		printf("the HELLO was refused");
		return 1;
	}
	rq = conn();
	if (rq < 0 || xsend(rq, msg, mk_request(msg, (uint32_t)getpid(), FL_REQ_PING, 5), NULL,
			    0, 0)) {
		printf("cannot send the request");
		return 1;
	}
	if (!next_request(&f, &req))
		return 1;
	if (atomic_load(bell_of(&f))) {
		printf("the bell set for a process that sends no DONE");
		return 1;
	}
	if (complete_ping(&f, &req) || (err = read_reply(rq, &text, WAIT_MS)) != 0 ||
	    !strstr(text, "\"value\":5")) {
		printf("its completion was not answered: %s", text ? text : "?");
		free(text);
		return 1;
	}
	free(text);
	send_header(fd, FL_MSG_DONE, req.seq);
	gone = dropped(fd, &err);
	if (!gone) {
		printf("answered; then a DONE from it was taken");
		return 1;
	}
	printf("never rung, answered all the same; its DONE dropped it");
	return 0;
}

/* A DONE with a descriptor, from a process that may send DONE: dropped. */
static int done_with_fd(void)
{
	struct fl_msg_header h;
	struct fake f;
	int fd, err, spare = memfd_create("e2e-bell", MFD_CLOEXEC);

	if (fake_region(&f, 16, ALL_SEALS, getpid()) || (fd = hello_with(&f, FL_HELLO_DONE)) < 0 ||
	    spare < 0) {
		printf("the HELLO was refused");
		return 1;
	}
	fl_proto_header(&h, FL_MSG_DONE, sizeof(h), 1);
	xsend(fd, &h, sizeof(h), &spare, 1, 0);
	if (!dropped(fd, &err)) {
		printf("a DONE with a descriptor was taken");
		return 1;
	}
	printf("dropped%s", err ? " after an ERROR" : "");
	return 0;
}

/*
 * DONEs nobody asked for (the bell clear, nothing in flight) count toward
 * the message rate like any message: 3,000 at once, past the bucket's
 * 2,000, drop the process.
 */
static int unasked_done_flood(void)
{
	struct fake f;
	int fd, err;

	if (fake_region(&f, 16, ALL_SEALS, getpid()) || (fd = hello_with(&f, FL_HELLO_DONE)) < 0) {
		printf("the HELLO was refused");
		return 1;
	}
	for (int i = 0; i < 3000; i++)
		if (send_header(fd, FL_MSG_DONE, 0))
			break;
	if (!dropped(fd, &err)) {
		printf("3,000 unasked DONEs taken");
		return 1;
	}
	printf("dropped");
	return 0;
}

/* Runs fn in a child (a pid of its own, for its registration); ok or FAIL. */
static void in_child(const char *name, int (*fn)(void))
{
	char detail[512] = { 0 };
	int pfd[2], status;
	pid_t pid, parent = getpid();
	ssize_t n;

	if (pipe(pfd)) {
		fail(name, "pipe: %s", strerror(errno));
		return;
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		die_with(parent);
		close(pfd[0]);
		dup2(pfd[1], 1);
		setvbuf(stdout, NULL, _IONBF, 0);
		_exit(fn());
	}
	close(pfd[1]);
	for (size_t got = 0; got < sizeof(detail) - 1; got += (size_t)n) {
		n = read(pfd[0], detail + got, sizeof(detail) - 1 - got);
		if (n <= 0)
			break;
	}
	close(pfd[0]);
	waitpid(pid, &status, 0);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		ok("%s: %s", name, detail);
	else
		fail(name, "%s", detail);
}

/* ------------------------------------------------------------------------
 * The agent, with a fake daemon
 */

struct fake_daemon {
	int lfd;		/* listening */
	int fd;			/* the agent's connection */
	void *region;
	struct fl_shm_layout l;
	size_t size;
};

/*
 * Accepts the agent's connection and its HELLO (with the region), answers
 * WELCOME (no flags: no SYNC follows).  Returns 0, or why on *why.
 */
static int fake_daemon_accept(struct fake_daemon *d, uint32_t *hello_flags, const char **why)
{
	static char buf[FL_PROTO_MAX_MESSAGE];
	union {
		char b[CMSG_SPACE(sizeof(int) * FL_PROTO_MAX_FDS)];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf.b,
			     .msg_controllen = sizeof(cbuf.b) };
	struct pollfd p = { .fd = d->lfd, .events = POLLIN };
	struct fl_msg_welcome w;
	struct fl_shm_header copy;
	struct cmsghdr *c;
	struct fl_msg m;
	struct stat st;
	int rfd = -1;
	ssize_t n;

	*why = "no connection";
	if (poll(&p, 1, WAIT_MS) != 1 || (d->fd = accept4(d->lfd, NULL, NULL, SOCK_CLOEXEC)) < 0)
		return -1;
	p = (struct pollfd){ .fd = d->fd, .events = POLLIN };
	*why = "no HELLO";
	if (poll(&p, 1, WAIT_MS) != 1 || (n = recvmsg(d->fd, &mh, MSG_CMSG_CLOEXEC)) <= 0)
		return -1;
	c = CMSG_FIRSTHDR(&mh);
	if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
		memcpy(&rfd, CMSG_DATA(c), sizeof(rfd));
	if (fl_proto_decode(buf, (size_t)n, rfd >= 0, &m, NULL) || m.type != FL_MSG_HELLO ||
	    fstat(rfd, &st))
		return -1;
	*hello_flags = m.hello.flags;
	if (!d->region) {
		d->size = (size_t)st.st_size;
		d->region = mmap(NULL, d->size, PROT_READ | PROT_WRITE, MAP_SHARED, rfd, 0);
		*why = "region";
		memcpy(&copy, d->region, sizeof(copy));
		if (d->region == MAP_FAILED ||
		    fl_shm_check(&copy, st.st_size, m.hello.pid, &d->l, NULL)) {
			d->region = NULL;
			close(rfd);
			return -1;
		}
	}
	close(rfd);
	memset(&w, 0, sizeof(w));
	fl_proto_header(&w, FL_MSG_WELCOME, sizeof(w), m.seq);
	w.daemon_pid = (uint32_t)getpid();
	*why = "cannot send WELCOME";
	return xsend(d->fd, &w, sizeof(w), NULL, 0, 0) ? -1 : 0;
}

/* A PING of seq and arg into the agent's ring, the bell set or not, and the doorbell rung. */
static void fake_daemon_ping(struct fake_daemon *d, uint32_t seq, uint64_t arg, bool bell)
{
	struct fl_shm_header *h = d->region;
	struct fl_shm_entry e = { .seq = seq, .status = FL_REQ_PING, .value = arg };

	if (bell)
		fl_shm_bell_set(&h->completion_bell);
	fl_ring_push(&h->request_head, &h->request_tail, (char *)d->region + d->l.requests_offset,
		     d->l.request_entries, &e);
	atomic_fetch_add_explicit(&h->doorbell, 1, memory_order_release);
	syscall(SYS_futex, &h->doorbell, FUTEX_WAKE, 1, NULL, NULL, 0);
}

/* The agent's next DONE (other messages passed over), within WAIT_S: its seq, or -1. */
static int64_t fake_daemon_done(struct fake_daemon *d)
{
	static char buf[FL_PROTO_MAX_MESSAGE];
	double end = now() + WAIT_S;

	while (now() < end) {
		struct fl_msg m;
		ssize_t n = xrecv(d->fd, buf, sizeof(buf), 100);

		if (n == -ETIMEDOUT)
			continue;
		/*
		 * Anything else is passed over by its header's type alone: a
		 * MODULE_ADD's memfd did not come with recv, and it would not
		 * decode without it.
		 */
		if (n < (ssize_t)sizeof(struct fl_msg_header))
			return -1;
		if (((struct fl_msg_header *)buf)->type != FL_MSG_DONE)
			continue;
		if (fl_proto_decode(buf, (size_t)n, 0, &m, NULL))
			return -1;
		return m.seq;
	}
	return -1;
}

/* The completion of seq, popped from the agent's ring within WAIT_S: its value, or -1. */
static int64_t fake_daemon_completion(struct fake_daemon *d, uint32_t seq)
{
	struct fl_shm_header *h = d->region;
	double end = now() + WAIT_S;

	while (now() < end) {
		struct fl_shm_entry e;
		int r = fl_ring_pop(&h->completion_head, &h->completion_tail,
				    (char *)d->region + d->l.completions_offset,
				    d->l.completion_entries, &e);

		if (r < 0)
			return -1;
		if (r == 0) {
			sleep_ms(1);
			continue;
		}
		if (e.seq == seq && e.status == 0)
			return (int64_t)e.value;
	}
	return -1;
}

static void agent_rings(void)
{
	static const char name[] = "agent";
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char saved[sizeof(sock_path)];
	const char *argv[] = { prog, "wait", "0", "0", "0", NULL };
	struct fake_daemon d = { .lfd = -1, .fd = -1 };
	struct proc p;
	const char *why = "";
	uint32_t flags = 0;
	int64_t seq, v;
	pid_t pid;

	/* The agent's socket is this fake daemon's, for the program started now. */
	memcpy(saved, sock_path, sizeof(saved));
	snprintf(sock_path, sizeof(sock_path), "%s/bell.sock", dir);
	memcpy(sa.sun_path, sock_path, sizeof(sa.sun_path));
	unlink(sock_path);
	d.lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (d.lfd < 0 || bind(d.lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(d.lfd, 4) ||
	    proc_spawn(&p, 0, true, argv)) {
		fail(name, "cannot listen at %s or start %s: %s", sock_path, prog, strerror(errno));
		memcpy(sock_path, saved, sizeof(sock_path));
		return;
	}
	memcpy(sock_path, saved, sizeof(sock_path));
	if (fake_daemon_accept(&d, &flags, &why)) {
		fail(name, "registration: %s", why);
		return;
	}
	pid = proc_expect_pid(&p, "ready", name);
	if (pid < 0)
		return;
	check(flags & FL_HELLO_DONE, "agent: its HELLO sets FL_HELLO_DONE", "flags %#x", flags);

	fake_daemon_ping(&d, 1, 101, true);
	seq = fake_daemon_done(&d);
	v = fake_daemon_completion(&d, 1);
	check(seq == 1 && v == 101 && !atomic_load(&((struct fl_shm_header *)d.region)->completion_bell),
	      "agent: the bell set, a DONE of the completion's seq behind it, the bell cleared",
	      "DONE seq %" PRId64 ", completion value %" PRId64 ", bell %u", seq, v,
	      atomic_load(&((struct fl_shm_header *)d.region)->completion_bell));

	/*
	 * The bell clear: the completion, and no DONE; a DONE behind the next
	 * one (the bell set) comes after any the agent would have sent for
	 * this one, on one connection from one thread.
	 */
	fake_daemon_ping(&d, 2, 102, false);
	v = fake_daemon_completion(&d, 2);
	fake_daemon_ping(&d, 3, 103, true);
	seq = fake_daemon_done(&d);
	check(v == 102 && seq == 3 && fake_daemon_completion(&d, 3) == 103,
	      "agent: no DONE while the bell is clear",
	      "completion value %" PRId64 ", the next DONE's seq %" PRId64 " (want 3)", v, seq);

	/* The daemon goes away: on the agent's next connection, the same. */
	close(d.fd);
	d.fd = -1;
	if (fake_daemon_accept(&d, &flags, &why)) {
		fail("agent: a new connection after the daemon went away", "%s", why);
		return;
	}
	/*
	 * Its fl-requests thread may complete the request before the fl-agent
	 * thread has the connection (it is still sending its modules): the
	 * DONE it could not send goes from the fl-agent thread then, of seq 0.
	 */
	fake_daemon_ping(&d, 4, 104, true);
	seq = fake_daemon_done(&d);
	v = fake_daemon_completion(&d, 4);
	check((seq == 4 || seq == 0) && v == 104,
	      "agent: DONE on its new connection after the daemon went away",
	      "DONE seq %" PRId64 ", completion value %" PRId64, seq, v);
	proc_end(&p);
	close(d.fd);
	close(d.lfd);
	unlink(sock_path);
}

void group_bell(void)
{
	struct fl_msg_header h;

	if (daemon_start())
		return;
	in_child("bell: a process that sends DONE", rings_answered_on_done);
	in_child("bell: a process that sends no DONE", silent_process_polled);
	in_child("bell: DONE with a descriptor", done_with_fd);
	in_child("bell: 3,000 unasked DONEs", unasked_done_flood);
	{
		int fd = conn(), err = 0;

		fl_proto_header(&h, FL_MSG_DONE, sizeof(h), 1);
		if (fd < 0 || xsend(fd, &h, sizeof(h), NULL, 0, 0))
			fail("bell: DONE before HELLO", "cannot send it");
		else
			check(dropped(fd, &err), "bell: DONE before HELLO: dropped",
			      "the daemon took it");
		if (fd >= 0)
			close(fd);
	}
	{
		json_object *doc;
		int err = query(0, FL_QUERY_PS, 0, 0, &doc);

		check(daemon_alive() && !err, "bell: the daemon serves on after the bad DONEs",
		      "alive %d, query %d", daemon_alive(), err);
		json_object_put(doc);
	}
	agent_rings();
}
