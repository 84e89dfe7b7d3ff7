// SPDX-License-Identifier: MIT
/*
 * The event loop's common part: clients, their messages and their limits.
 * The backends (loop_uring.c, loop_poll.c) tell it when a socket is readable
 * or writable, a connection arrived, a signal came or a tick passed; all
 * reading and writing of client sockets happens here, with non-blocking
 * recvmsg/sendmsg, so both backends behave the same.
 *
 * Why readiness and not an io_uring recvmsg per client: a recvmsg in flight
 * needs its own buffer of the largest message (64 KiB), which at 4096
 * clients pins 256 MiB.  Here every client's receive lands in one buffer
 * (loop->rbuf), and a client costs a struct and its outgoing queue.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/opts.h"
#include "dlog.h"
#include "loop_internal.h"
#include "loop_poll.h"
#include "loop_uring.h"
#include "proto/proto.h"

_Static_assert(FLD_LOOP_MAX_FDS <= FL_PROTO_MAX_FDS,
	       "fl_proto_send carries every descriptor a message may queue");

static uint64_t core_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void list_remove(struct fld_client **head, struct fld_client *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		*head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->prev = c->next = NULL;
}

static void list_push(struct fld_client **head, struct fld_client *c)
{
	c->prev = NULL;
	c->next = *head;
	if (*head)
		(*head)->prev = c;
	*head = c;
}

static void close_fds(int *fds, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (fds[i] >= 0) {
			close(fds[i]);
			fds[i] = -1;
		}
}

static void free_queue(struct fld_client *c)
{
	struct fld_out *o, *next;

	for (o = c->qhead; o; o = next) {
		next = o->next;
		close_fds(o->fds, o->nfds);
		free(o);
	}
	c->qhead = NULL;
	c->qtail = &c->qhead;
	c->qlen = 0;
	c->qbytes = 0;
}

/* Drops c; level says how loud (a hang-up is routine, a limit is not). */
static void drop(struct fld_client *c, enum fl_log_level level, const char *why)
{
	struct fld_loop *l = c->loop;

	if (c->dead)
		return;
	c->dead = 1;
	fld_log(level, "client %lu (pid %d uid %u): %s%s", c->id, (int)c->pid,
		(unsigned)c->uid, why, level <= FL_LOG_INFO ? ": dropped" : "");
	list_remove(&l->live, c);
	list_push(&l->dead, c);
	l->nclients--;
	if (l->ops->on_disconnect)
		l->ops->on_disconnect(c, l->ctx);
	free_queue(c);
	/* Wakes whatever the backend has armed on the socket, and the peer. */
	shutdown(c->fd, SHUT_RDWR);
	l->be->client_remove(l, c);
}

void fld_client_drop(struct fld_client *c, const char *why)
{
	drop(c, FL_LOG_INFO, why);
}

static void core_reap(struct fld_loop *l)
{
	struct fld_client *c, *next;

	for (c = l->dead; c; c = next) {
		next = c->next;
		if (c->refs)
			continue;
		list_remove(&l->dead, c);
		close(c->fd);
		free(c);
	}
}

static void core_accepted(struct fld_loop *l, int fd)
{
	struct fld_client *c;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	bool privileged;

	if (l->nclients >= l->o.max_clients) {
		uint64_t now = core_now_ns();

		/* At most one line a second however fast they come. */
		if (now - l->rejected_logged_ns >= 1000000000u) {
			fld_warn("%u client%s: refusing new connections (--max-clients)",
				 l->nclients, l->nclients == 1 ? "" : "s");
			l->rejected_logged_ns = now;
		}
		close(fd);
		return;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		fld_warn("SO_PEERCRED: %s: connection closed", strerror(errno));
		close(fd);
		return;
	}
	/*
	 * The last root_reserve slots are root's: users filling the others
	 * (each may hold half) never lock root's programs and queries out.
	 */
	/*
	 * Root and the daemon's own uid (a user's own daemon, which root's
	 * processes never use) are not held to the two rules below.
	 */
	privileged = cred.uid == 0 || cred.uid == geteuid();
	if (!privileged && l->nclients + l->o.root_reserve >= l->o.max_clients) {
		uint64_t now = core_now_ns();

		if (now - l->rejected_logged_ns >= 1000000000u) {
			fld_warn("%u client%s, of which the last %u are kept for root: "
				 "refusing uid %u", l->nclients, l->nclients == 1 ? "" : "s",
				 l->o.root_reserve, (unsigned)cred.uid);
			l->rejected_logged_ns = now;
		}
		close(fd);
		return;
	}
	/* One user other than root holds at most half: the others get in. */
	if (!privileged) {
		unsigned same = 0, half = l->o.max_clients / 2 ? l->o.max_clients / 2 : 1;

		for (c = l->live; c; c = c->next)
			same += c->uid == cred.uid;
		if (same >= half) {
			uint64_t now = core_now_ns();

			if (now - l->rejected_logged_ns >= 1000000000u) {
				fld_warn("uid %u has %u client%s, half of --max-clients: "
					 "refusing its new connections", (unsigned)cred.uid, same,
					 same == 1 ? "" : "s");
				l->rejected_logged_ns = now;
			}
			close(fd);
			return;
		}
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		fld_warn("out of memory: connection closed");
		close(fd);
		return;
	}
	c->loop = l;
	c->fd = fd;
	c->pid = cred.pid;
	c->uid = cred.uid;
	c->gid = cred.gid;
	c->id = ++l->next_id;
	c->tokens = l->o.msg_burst;
	c->last_ns = core_now_ns();
	c->connected_ns = c->last_ns;
	c->active_ns = c->last_ns;
	c->qtail = &c->qhead;
	c->rd.kind = FLD_UOP_READ;
	c->rd.c = c;
	c->wr.kind = FLD_UOP_WRITE;
	c->wr.c = c;
	list_push(&l->live, c);
	l->nclients++;
	fld_debug("client %lu: connected: pid %d uid %u gid %u", c->id, (int)c->pid,
		  (unsigned)c->uid, (unsigned)c->gid);
	if (l->be->client_add(l, c) < 0) {
		drop(c, FL_LOG_WARN, "cannot watch its socket");
		return;
	}
	if (l->ops->on_connect)
		l->ops->on_connect(c, l->ctx);
}

static void core_accept_failed(struct fld_loop *l, int err)
{
	switch (err) {
	case EINTR:
	case EAGAIN:
	case ECONNABORTED:
	case EPROTO:
		return; /* that connection is gone; the next one may be fine */
	case EMFILE:
	case ENFILE:
	case ENOBUFS:
	case ENOMEM:
		/*
		 * The connection stays in the backlog and the listener stays
		 * readable: accepting again now would fail again at once, for
		 * ever.  Wait for the next tick.
		 */
		if (!l->accept_paused)
			fld_warn("accept: %s: not accepting until the next tick",
				 strerror(err));
		l->accept_paused = 1;
		return;
	default:
		fld_warn("accept: %s: not accepting until the next tick", strerror(err));
		l->accept_paused = 1;
	}
}

/* Refills c's bucket and takes one token; returns 0 when there was none. */
static int take_token(struct fld_loop *l, struct fld_client *c, uint64_t now)
{
	if (now > c->last_ns) {
		c->tokens += (double)(now - c->last_ns) * l->o.msg_rate / 1e9;
		if (c->tokens > l->o.msg_burst)
			c->tokens = l->o.msg_burst;
		c->last_ns = now;
	}
	if (c->tokens < 1)
		return 0;
	c->tokens -= 1;
	return 1;
}

void fld_client_refund(struct fld_client *c)
{
	if (c->dead)
		return;
	c->tokens += 1;
	if (c->tokens > c->loop->o.msg_burst)
		c->tokens = c->loop->o.msg_burst;
}

static void core_readable(struct fld_loop *l, struct fld_client *c)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int) * FLD_LOOP_MAX_FDS)];
	} cbuf;
	uint64_t now = core_now_ns();
	char why[128];

	/* Until it would block: a multishot poll reports only new data. */
	while (!c->dead) {
		struct iovec iov = { l->rbuf, l->o.max_msg };
		struct msghdr msg = {
			.msg_iov = &iov,
			.msg_iovlen = 1,
			.msg_control = cbuf.b,
			.msg_controllen = sizeof(cbuf.b),
		};
		int fds[FLD_LOOP_MAX_FDS];
		size_t nfds = 0;
		struct cmsghdr *cm;
		ssize_t n;

		/* MSG_TRUNC: n is the message's real length even when longer than max_msg. */
		n = recvmsg(c->fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC | MSG_TRUNC);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			/*
			 * ECONNRESET: the peer closed with our replies unread
			 * (its messages were read first): a hang-up like any.
			 */
			if (errno == ECONNRESET) {
				drop(c, FL_LOG_DEBUG, "hung up with replies unread");
				return;
			}
			snprintf(why, sizeof(why), "recvmsg: %s", strerror(errno));
			drop(c, FL_LOG_INFO, why);
			return;
		}
		for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
			size_t i, k;

			if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
				continue;
			k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (i = 0; i < k; i++) {
				int fd;

				memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
				if (nfds < FLD_LOOP_MAX_FDS)
					fds[nfds++] = fd;
				else
					close(fd); /* cannot happen: the buffer holds no more */
			}
		}
		if (msg.msg_flags & MSG_CTRUNC) {
			/* The kernel closed the descriptors that did not fit. */
			close_fds(fds, nfds);
			drop(c, FL_LOG_INFO,
			     "protocol violation: control data truncated (too many file descriptors)");
			return;
		}
		if (n == 0 && nfds == 0) {
			/* End of stream (an empty message is not in the protocol). */
			drop(c, FL_LOG_DEBUG, "hung up");
			return;
		}
		if ((size_t)n > l->o.max_msg || (msg.msg_flags & MSG_TRUNC)) {
			close_fds(fds, nfds);
			snprintf(why, sizeof(why), "message of %zd bytes exceeds the limit of %zu",
				 n, l->o.max_msg);
			drop(c, FL_LOG_INFO, why);
			return;
		}
		if (nfds > l->o.max_fds) {
			close_fds(fds, nfds);
			snprintf(why, sizeof(why), "message with %zu descriptors exceeds the limit of %u",
				 nfds, l->o.max_fds);
			drop(c, FL_LOG_INFO, why);
			return;
		}
		if (!take_token(l, c, now)) {
			close_fds(fds, nfds);
			snprintf(why, sizeof(why), "flooding: over %u messages a second",
				 l->o.msg_rate);
			drop(c, FL_LOG_INFO, why);
			return;
		}
		c->spoke = 1;
		c->active_ns = now;
		if (l->ops->on_message)
			l->ops->on_message(c, l->rbuf, (size_t)n, fds, nfds, l->ctx);
		close_fds(fds, nfds);
	}
}

static void send_failed(struct fld_client *c, int err)
{
	char why[128];

	/*
	 * The peer closed its end: what it sent before it did is still to be
	 * read (a process that exits right after its HELLO), so the client
	 * goes at its hangup, and nothing more is sent to it.
	 */
	if (err == -EPIPE || err == -ECONNRESET) {
		struct fld_out *o;

		fld_debug("client %lu (pid %d): sendmsg: %s: read to its end", c->id,
			  (int)c->pid, strerror(-err));
		c->deaf = 1;
		c->want_write = 0;
		while ((o = c->qhead)) {
			c->qhead = o->next;
			close_fds(o->fds, o->nfds);
			free(o);
		}
		c->qtail = &c->qhead;
		c->qlen = 0;
		c->qbytes = 0;
		return;
	}
	snprintf(why, sizeof(why), "sendmsg: %s", strerror(-err));
	drop(c, FL_LOG_INFO, why);
}

static void core_writable(struct fld_loop *l, struct fld_client *c)
{
	struct fld_out *o;
	int err;

	c->want_write = 0;
	while (!c->dead && !c->deaf && (o = c->qhead)) {
		err = fl_proto_send(c->fd, o->buf, o->len, o->fds, o->nfds, MSG_DONTWAIT);
		if (err == -EAGAIN) {
			c->want_write = 1;
			l->be->want_write(l, c);
			return;
		}
		if (err < 0) {
			send_failed(c, err);
			return;
		}
		c->qhead = o->next;
		if (!c->qhead)
			c->qtail = &c->qhead;
		c->qlen--;
		c->qbytes -= o->len;
		c->active_ns = core_now_ns();
		close_fds(o->fds, o->nfds);
		free(o);
		if (!c->qhead && l->ops->on_drained)
			l->ops->on_drained(c, l->ctx);
	}
}

size_t fld_client_queued(const struct fld_client *c)
{
	return c->qbytes;
}

void fld_client_bulk(struct fld_client *c, int on)
{
	c->bulk = on;
}

int fld_client_send(struct fld_client *c, const void *buf, size_t len, const int *fds,
		    size_t nfds)
{
	struct fld_loop *l = c->loop;
	struct fld_out *o;
	char why[128];
	size_t i;
	int err;

	if (c->dead || c->deaf)
		return -EPIPE;
	if (nfds > FLD_LOOP_MAX_FDS)
		return -EINVAL;
	if (!c->qhead) {
		err = fl_proto_send(c->fd, buf, len, fds, nfds, MSG_DONTWAIT);
		if (err == 0) {
			c->active_ns = core_now_ns();
			return 0;
		}
		if (err == -EMSGSIZE)
			return err;
		if (err != -EAGAIN) {
			send_failed(c, err);
			return err == -EPIPE || err == -ECONNRESET ? -EPIPE : err;
		}
	}
	if (!c->bulk && (c->qlen + 1 > l->o.max_queue || c->qbytes + len > l->o.max_queue_bytes)) {
		snprintf(why, sizeof(why), "not reading: %u messages (%zu bytes) queued",
			 c->qlen, c->qbytes);
		drop(c, FL_LOG_INFO, why);
		return -EPIPE;
	}
	o = malloc(sizeof(*o) + len);
	if (!o)
		return -ENOMEM;
	o->next = NULL;
	o->len = len;
	o->nfds = 0;
	memcpy(o->buf, buf, len);
	for (i = 0; i < nfds; i++) {
		int fd = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);

		if (fd < 0) {
			err = -errno;
			close_fds(o->fds, o->nfds);
			free(o);
			return err;
		}
		o->fds[o->nfds++] = fd;
	}
	*c->qtail = o;
	c->qtail = &o->next;
	c->qlen++;
	c->qbytes += len;
	if (!c->want_write) {
		c->want_write = 1;
		l->be->want_write(l, c);
	}
	return 0;
}

static void core_signal(struct fld_loop *l, int signo)
{
	switch (signo) {
	case SIGTERM:
	case SIGINT:
		fld_info("%s: exiting", strsignal(signo));
		l->stop = 1;
		break;
	case SIGHUP:
		fld_info("SIGHUP: nothing to reload");
		break;
	case SIGCHLD:
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		break;
	}
}

/*
 * Drops the clients that have neither sent a message nor been sent one for
 * silent_ms, unless fld_client_keep said they may: a connection that only
 * holds a slot, whether it never spoke or spoke once (a query answered
 * long ago).  Once a second.
 */
static void drop_silent(struct fld_loop *l)
{
	uint64_t now = core_now_ns(), limit = (uint64_t)l->o.silent_ms * 1000000u;
	struct fld_client *c, *next;
	char why[96];

	if (now - l->silent_checked_ns < 1000000000u)
		return;
	l->silent_checked_ns = now;
	for (c = l->live; c; c = next) {
		next = c->next;
		if (c->keep || now - c->active_ns < limit)
			continue;
		if (!c->spoke) {
			drop(c, FL_LOG_INFO, "sent nothing since it connected");
		} else {
			snprintf(why, sizeof(why), "silent for %u s, and not a registered process",
				 l->o.silent_ms / 1000);
			drop(c, FL_LOG_INFO, why);
		}
	}
}

static void core_tick(struct fld_loop *l)
{
	drop_silent(l);
	if (l->accept_paused) {
		l->accept_paused = 0;
		l->be->accept_resume(l);
	}
	if (l->ops->on_tick)
		l->ops->on_tick(l->ctx);
}

static int core_work(struct fld_loop *l)
{
	return !l->stop && l->ops->on_work ? l->ops->on_work(l->ctx) : 0;
}

/* How the backends call the core (loop_internal.h). */
static const struct fld_loop_events core_events = {
	.now_ns = core_now_ns,
	.accepted = core_accepted,
	.accept_failed = core_accept_failed,
	.readable = core_readable,
	.writable = core_writable,
	.signal = core_signal,
	.tick = core_tick,
	.work = core_work,
	.reap = core_reap,
	.drop = fld_client_drop,
};

static void watch_dispatch(void *ctx);

int fld_loop_new(int listen_fd, const struct fld_loop_ops *ops, void *ctx,
		 const struct fld_loop_opts *opts, struct fld_loop **loopp)
{
	struct fld_loop *l;
	sigset_t set;
	const char *env;
	int err;

	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->ev = &core_events;
	if (fl_opts_copy(&l->o, sizeof(l->o), opts)) {
		free(l);
		return -EINVAL;
	}
	l->o.sz = sizeof(l->o);
#define DEFAULT(f, v) \
	if (!l->o.f) \
		l->o.f = (v)
	DEFAULT(max_clients, 4096);
	DEFAULT(silent_ms, 60000);
	DEFAULT(tick_ms, 1000);
	DEFAULT(max_msg, 65536);
	DEFAULT(max_fds, FLD_LOOP_MAX_FDS);
	DEFAULT(msg_rate, 1000);
	DEFAULT(msg_burst, 2000);
	DEFAULT(max_queue, 256);
	DEFAULT(max_queue_bytes, 1 << 20);
#undef DEFAULT
	if (l->o.max_fds > FLD_LOOP_MAX_FDS) {
		free(l);
		return -EINVAL;
	}
	l->ops = ops;
	l->ctx = ctx;
	l->lfd = listen_fd;
	l->sfd = -1;
	/* The watched fds are in an epoll set: the backends watch it alone. */
	l->watch_fd = epoll_create1(EPOLL_CLOEXEC);
	if (l->watch_fd < 0) {
		err = -errno;
		free(l);
		return err;
	}
	l->watch_fn = watch_dispatch;
	l->watch_ctx = l;
	l->rbuf = malloc(l->o.max_msg);
	if (!l->rbuf) {
		free(l);
		return -ENOMEM;
	}

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, &l->oldmask);
	/* Blocking: the io_uring backend reads it with a request that waits. */
	l->sfd = signalfd(-1, &set, SFD_CLOEXEC);
	if (l->sfd < 0) {
		err = -errno;
		goto fail;
	}

	env = getenv("FAULTLINED_NO_IO_URING");
	err = -1;
	if (!l->o.no_io_uring && !(env && !strcmp(env, "1"))) {
		l->be = &fld_backend_uring;
		err = l->be->init(l);
		if (err < 0)
			fld_warn("io_uring: %s: using the poll loop", strerror(-err));
	}
	if (err < 0) {
		l->be = &fld_backend_poll;
		err = l->be->init(l);
		if (err < 0)
			goto fail;
	}
	*loopp = l;
	return 0;
fail:
	close(l->watch_fd);
	if (l->sfd >= 0)
		close(l->sfd);
	sigprocmask(SIG_SETMASK, &l->oldmask, NULL);
	free(l->rbuf);
	free(l);
	return err;
}

int fld_loop_watch(struct fld_loop *l, int fd, void (*fn)(void *ctx), void *ctx)
{
	struct epoll_event ev = { .events = EPOLLIN };

	if (fd < 0 || !fn)
		return -EINVAL;
	for (size_t i = 0; i < FLD_LOOP_MAX_WATCHES; i++) {
		struct fld_watch *w = &l->watches[i];

		if (w->fn)
			continue;
		ev.data.ptr = w;
		if (epoll_ctl(l->watch_fd, EPOLL_CTL_ADD, fd, &ev) != 0)
			return -errno;
		*w = (struct fld_watch){ .fd = fd, .fn = fn, .ctx = ctx };
		return 0;
	}
	return -EBUSY;
}

void fld_loop_unwatch(struct fld_loop *l, int fd)
{
	for (size_t i = 0; i < FLD_LOOP_MAX_WATCHES; i++) {
		struct fld_watch *w = &l->watches[i];

		if (w->fn && w->fd == fd) {
			epoll_ctl(l->watch_fd, EPOLL_CTL_DEL, fd, NULL);
			*w = (struct fld_watch){ .fd = -1 };
		}
	}
}

/* The epoll set of the watched fds is readable: calls those that are. */
static void watch_dispatch(void *ctx)
{
	struct fld_loop *l = ctx;
	struct epoll_event ev[FLD_LOOP_MAX_WATCHES];
	int n = epoll_wait(l->watch_fd, ev, FLD_LOOP_MAX_WATCHES, 0);

	for (int i = 0; i < n; i++) {
		struct fld_watch *w = ev[i].data.ptr;

		if (w->fn)
			w->fn(w->ctx);
	}
}

int fld_loop_run(struct fld_loop *l)
{
	return l->be->run(l);
}

void fld_loop_free(struct fld_loop *l)
{
	struct fld_client *c;

	if (!l)
		return;
	while ((c = l->live))
		drop(c, FL_LOG_DEBUG, "daemon exiting");
	l->be->fini(l); /* no request names a client any more */
	for (c = l->dead; c; c = c->next)
		c->refs = 0;
	core_reap(l);
	close(l->sfd);
	close(l->watch_fd);
	sigprocmask(SIG_SETMASK, &l->oldmask, NULL);
	free(l->rbuf);
	free(l);
}

const char *fld_loop_backend(const struct fld_loop *l)
{
	return l->be->name;
}

void fld_client_keep(struct fld_client *c)
{
	c->keep = 1;
}

pid_t fld_client_pid(const struct fld_client *c)
{
	return c->pid;
}

uid_t fld_client_uid(const struct fld_client *c)
{
	return c->uid;
}

gid_t fld_client_gid(const struct fld_client *c)
{
	return c->gid;
}

unsigned long fld_client_id(const struct fld_client *c)
{
	return c->id;
}

void fld_client_set_data(struct fld_client *c, void *data)
{
	c->data = data;
}

void *fld_client_get_data(const struct fld_client *c)
{
	return c->data;
}
