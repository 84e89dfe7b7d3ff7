// SPDX-License-Identifier: MIT
/*
 * The io_uring backend (liburing).  Requests, each with user_data pointing
 * at a struct fld_uop:
 *   - a one-shot POLLIN poll on the listener, re-armed after the loop's
 *     core has accepted what is waiting (accept4, below: why not
 *     io_uring's own accept);
 *   - a read of one struct signalfd_siginfo from the signalfd, re-armed;
 *   - an IORING_OP_TIMEOUT of tick_ms, re-armed (liburing 2.3 has no
 *     multishot timeout);
 *   - a multishot POLLIN poll on fld_loop_watch's fd, re-armed when the
 *     kernel ends it;
 *   - per client, a multishot POLLIN poll for as long as it is connected,
 *     and a one-shot POLLOUT poll while its outgoing queue is not empty.
 *
 * Memory ordering: the rings are shared with the kernel, and liburing keeps
 * the barriers.  io_uring_submit (via __io_uring_flush_sq) publishes new SQ
 * entries with io_uring_smp_store_release on the SQ tail, matching the
 * kernel's smp_load_acquire of it; io_uring_for_each_cqe reads the CQ tail
 * with io_uring_smp_load_acquire, matching the kernel's smp_store_release
 * after it fills a CQE, so the CQE's fields are read after they were
 * written; io_uring_cq_advance stores the CQ head with
 * io_uring_smp_store_release, matching the kernel's acquire before it
 * reuses those slots.  This file adds no barrier of its own: everything
 * else is touched by this thread only.
 *
 * A client's struct lives while a request names it: c->refs counts the
 * POLLIN and POLLOUT polls in flight, dropped by their last completion (the
 * one without IORING_CQE_F_MORE), and the core's reap frees the client only
 * at 0, so no completion ever reads freed memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dlog.h"
#include "loop_internal.h"
#include "loop_uring.h"

#define SQ_ENTRIES 256

/* Returns an SQE, submitting what is queued when the SQ is full, or NULL. */
static struct io_uring_sqe *get_sqe(struct fld_loop *l)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&l->ring);

	if (!sqe) {
		io_uring_submit(&l->ring);
		sqe = io_uring_get_sqe(&l->ring);
	}
	return sqe;
}

/*
 * The listener is watched, and its connections accepted with accept4
 * (on_accept), never by an io_uring accept: the kernel completes those in
 * the daemon's task work, which runs also as the daemon takes a signal
 * (get_signal), so that a daemon on its way to stop (SIGSTOP) or to die
 * (SIGKILL) takes the connections waiting then and never reads them.  The
 * listening socket is shared with the keeper (keeper.h): a connection
 * left in its backlog is the next daemon's, or the keeper's, should this
 * one die; one accepted is this daemon's alone, and a HELLO waiting on it
 * dies with the daemon, the region with it (a process that exits
 * meanwhile is never counted).  A one-shot poll, re-armed once the
 * waiting connections are taken, reports a backlog left over at once.
 */
static int arm_accept(struct fld_loop *l)
{
	struct io_uring_sqe *sqe = get_sqe(l);

	if (!sqe)
		return -EBUSY;
	io_uring_prep_poll_add(sqe, l->lfd, POLLIN);
	io_uring_sqe_set_data(sqe, &l->accept_op);
	l->accept_armed = 1;
	return 0;
}

static int arm_signal(struct fld_loop *l)
{
	struct io_uring_sqe *sqe = get_sqe(l);

	if (!sqe)
		return -EBUSY;
	/* Offset -1: the file's position, the only one a signalfd has. */
	io_uring_prep_read(sqe, l->sfd, &l->ssi, sizeof(l->ssi), (__u64)-1);
	io_uring_sqe_set_data(sqe, &l->sig_op);
	return 0;
}

static int arm_tick(struct fld_loop *l)
{
	struct io_uring_sqe *sqe = get_sqe(l);

	if (!sqe)
		return -EBUSY;
	io_uring_prep_timeout(sqe, &l->tick_ts, 0, 0);
	io_uring_sqe_set_data(sqe, &l->tick_op);
	return 0;
}

static int arm_read(struct fld_loop *l, struct fld_client *c)
{
	struct io_uring_sqe *sqe = get_sqe(l);

	if (!sqe)
		return -EBUSY;
	io_uring_prep_poll_multishot(sqe, c->fd, POLLIN | POLLRDHUP);
	io_uring_sqe_set_data(sqe, &c->rd);
	c->refs++;
	return 0;
}

static int arm_watch(struct fld_loop *l)
{
	struct io_uring_sqe *sqe;

	if (l->watch_fd < 0)
		return 0;
	sqe = get_sqe(l);
	if (!sqe)
		return -EBUSY;
	io_uring_prep_poll_multishot(sqe, l->watch_fd, POLLIN);
	io_uring_sqe_set_data(sqe, &l->watch_op);
	return 0;
}

static int uring_init(struct fld_loop *l)
{
	struct io_uring_params p;
	unsigned cq = l->o.max_clients * 2 + 64;
	int err, fl;

	/* accept4 in on_accept must not block when a connection vanished meanwhile. */
	fl = fcntl(l->lfd, F_GETFL);
	if (fl < 0 || fcntl(l->lfd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	memset(&p, 0, sizeof(p));
	/*
	 * Room for a completion from every client at once; with
	 * IORING_FEAT_NODROP (5.5) the kernel keeps any overflow anyway.
	 */
	p.flags = IORING_SETUP_CQSIZE;
	p.cq_entries = cq < 65536 ? cq : 65536;
	err = io_uring_queue_init_params(SQ_ENTRIES, &l->ring, &p);
	if (err < 0)
		return err;
	if (!(p.features & IORING_FEAT_NODROP))
		fld_warn("io_uring: no IORING_FEAT_NODROP: completions may be lost under load");
	l->ignore_op.kind = FLD_UOP_IGNORE;
	l->accept_op.kind = FLD_UOP_ACCEPT;
	l->sig_op.kind = FLD_UOP_SIGNAL;
	l->tick_op.kind = FLD_UOP_TICK;
	l->watch_op.kind = FLD_UOP_WATCH;
	l->tick_ts.tv_sec = l->o.tick_ms / 1000;
	l->tick_ts.tv_nsec = (long long)(l->o.tick_ms % 1000) * 1000000;
	return 0;
}

static void uring_fini(struct fld_loop *l)
{
	io_uring_queue_exit(&l->ring);
}

static int uring_client_add(struct fld_loop *l, struct fld_client *c)
{
	return arm_read(l, c);
}

static void uring_want_write(struct fld_loop *l, struct fld_client *c)
{
	struct io_uring_sqe *sqe = get_sqe(l);

	if (!sqe) {
		l->ev->drop(c, "io_uring submission queue full");
		return;
	}
	io_uring_prep_poll_add(sqe, c->fd, POLLOUT);
	io_uring_sqe_set_data(sqe, &c->wr);
	c->refs++;
}

static void cancel(struct fld_loop *l, struct fld_uop *op)
{
	struct io_uring_sqe *sqe = get_sqe(l);

	/*
	 * Without an SQE the shutdown() the caller did still ends the polls
	 * (POLLHUP), only later.
	 */
	if (!sqe)
		return;
	io_uring_prep_cancel(sqe, op, 0);
	io_uring_sqe_set_data(sqe, &l->ignore_op);
}

static void uring_client_remove(struct fld_loop *l, struct fld_client *c)
{
	if (c->refs) {
		cancel(l, &c->rd);
		if (c->want_write)
			cancel(l, &c->wr);
	}
}

static void uring_accept_resume(struct fld_loop *l)
{
	if (!l->accept_armed && arm_accept(l) < 0)
		l->accept_paused = 1;
}

/* The listener is readable: up to FLD_ACCEPTS_PER_ROUND connections. */
static void on_accept(struct fld_loop *l, struct io_uring_cqe *cqe)
{
	l->accept_armed = 0;
	if (cqe->res < 0) {
		l->ev->accept_failed(l, -cqe->res);
	} else {
		for (int i = 0; i < FLD_ACCEPTS_PER_ROUND && !l->accept_paused; i++) {
			int fd = accept4(l->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

			if (fd >= 0) {
				l->ev->accepted(l, fd);
			} else if (errno == EAGAIN) {
				break;
			} else {
				l->ev->accept_failed(l, errno);
			}
		}
	}
	if (!l->accept_paused && arm_accept(l) < 0)
		l->accept_paused = 1;
}

static void on_client(struct fld_loop *l, struct fld_uop *op, struct io_uring_cqe *cqe)
{
	struct fld_client *c = op->c;
	int last = !(cqe->flags & IORING_CQE_F_MORE);

	if (!c->dead) {
		if (cqe->res < 0) {
			char why[96];

			snprintf(why, sizeof(why), "poll: %s", strerror(-cqe->res));
			l->ev->drop(c, why);
		} else if (op->kind == FLD_UOP_READ) {
			l->ev->readable(l, c);
		} else {
			l->ev->writable(l, c);
		}
	}
	if (last) {
		/* Re-arm a multishot poll the kernel ended (e.g. CQ overflow). */
		if (op->kind == FLD_UOP_READ && !c->dead && arm_read(l, c) < 0)
			l->ev->drop(c, "io_uring submission queue full");
		c->refs--;
	}
}

static int handle(struct fld_loop *l, struct io_uring_cqe *cqe)
{
	struct fld_uop *op = io_uring_cqe_get_data(cqe);

	switch (op->kind) {
	case FLD_UOP_IGNORE:
		return 0;
	case FLD_UOP_ACCEPT:
		on_accept(l, cqe);
		return 0;
	case FLD_UOP_SIGNAL:
		if (cqe->res == (int)sizeof(l->ssi))
			l->ev->signal(l, (int)l->ssi.ssi_signo);
		else if (cqe->res < 0 && cqe->res != -EINTR && cqe->res != -EAGAIN)
			return cqe->res;
		return arm_signal(l);
	case FLD_UOP_TICK:
		l->ev->tick(l);
		return arm_tick(l);
	case FLD_UOP_READ:
	case FLD_UOP_WRITE:
		on_client(l, op, cqe);
		return 0;
	case FLD_UOP_WATCH:
		if (cqe->res < 0) {
			fld_err("io_uring: poll of the watched fd: %s", strerror(-cqe->res));
			return cqe->res;
		}
		l->watch_fn(l->watch_ctx);
		return cqe->flags & IORING_CQE_F_MORE ? 0 : arm_watch(l);
	}
	return 0;
}

static int uring_run(struct fld_loop *l)
{
	int err, busy = 0;

	if ((err = arm_accept(l)) < 0 || (err = arm_signal(l)) < 0 || (err = arm_tick(l)) < 0 ||
	    (err = arm_watch(l)) < 0)
		return err;
	while (!l->stop) {
		struct io_uring_cqe *cqe;
		unsigned head, n = 0;

		/* With work left, only what has already happened is taken. */
		err = busy ? io_uring_submit(&l->ring) : io_uring_submit_and_wait(&l->ring, 1);
		/* -EBUSY: completions overflowed; reaping them below makes room. */
		if (err < 0 && err != -EINTR && err != -EBUSY) {
			fld_err("io_uring_submit_and_wait: %s", strerror(-err));
			return err;
		}
		io_uring_for_each_cqe(&l->ring, head, cqe) {
			err = handle(l, cqe);
			n++;
			if (err < 0) {
				io_uring_cq_advance(&l->ring, n);
				fld_err("io_uring: %s", strerror(-err));
				return err;
			}
		}
		io_uring_cq_advance(&l->ring, n);
		l->ev->reap(l);
		busy = l->ev->work(l);
		l->ev->reap(l);
	}
	return 0;
}

const struct fld_backend fld_backend_uring = {
	.name = "io_uring",
	.init = uring_init,
	.fini = uring_fini,
	.run = uring_run,
	.client_add = uring_client_add,
	.want_write = uring_want_write,
	.client_remove = uring_client_remove,
	.accept_resume = uring_accept_resume,
};
