/* SPDX-License-Identifier: MIT */
/*
 * The event loop's insides, shared by loop.c (clients, messages, limits:
 * everything that does not depend on how readiness is learnt) and its two
 * backends, loop_uring.c (io_uring, the normal one) and loop_poll.c (poll(2),
 * the fallback).  Not for the protocol layer.
 */
#ifndef FLD_LOOP_INTERNAL_H
#define FLD_LOOP_INTERNAL_H

#include <liburing.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/signalfd.h>

#include "loop.h"

/* One queued outgoing message. */
struct fld_out {
	struct fld_out *next;
	size_t len;
	unsigned nfds;
	int fds[FLD_LOOP_MAX_FDS];
	unsigned char buf[];
};

/* Connections accepted in a row before the loop looks at its other events. */
#define FLD_ACCEPTS_PER_ROUND 64

/* An io_uring request's user_data points at one of these. */
enum fld_uop_kind {
	FLD_UOP_IGNORE, /* cancel requests: their completions carry nothing */
	FLD_UOP_ACCEPT, /* the listener's one-shot POLLIN */
	FLD_UOP_SIGNAL,
	FLD_UOP_TICK,
	FLD_UOP_READ,   /* a client's multishot POLLIN */
	FLD_UOP_WRITE,  /* a client's one-shot POLLOUT */
	FLD_UOP_WATCH,  /* fld_loop_watch's multishot POLLIN */
};

struct fld_uop {
	enum fld_uop_kind kind;
	struct fld_client *c;
};

struct fld_client {
	struct fld_loop *loop;
	struct fld_client *prev, *next; /* in loop->live, or loop->dead once dropped */
	int fd;
	pid_t pid;
	uid_t uid;
	gid_t gid;
	unsigned long id;
	void *data;
	int dead;
	int deaf;         /* its peer closed: nothing more is sent; read until its hangup */
	int bulk;         /* fld_client_bulk: the queue limits wait */
	int want_write;   /* the backend watches for POLLOUT */
	unsigned refs;    /* backend requests in flight that name this client */
	double tokens;    /* token bucket for msg_rate */
	uint64_t last_ns;
	uint64_t connected_ns;
	int spoke;        /* it has sent a message */
	uint64_t active_ns; /* its last message, or the last one sent to it */
	int keep;         /* fld_client_keep: never dropped for being silent */
	struct fld_out *qhead, **qtail;
	unsigned qlen;
	size_t qbytes;
	struct fld_uop rd, wr; /* io_uring backend only */
};

struct fld_backend {
	const char *name;
	int (*init)(struct fld_loop *l);
	void (*fini)(struct fld_loop *l);
	int (*run)(struct fld_loop *l);
	int (*client_add)(struct fld_loop *l, struct fld_client *c);
	void (*want_write)(struct fld_loop *l, struct fld_client *c);
	/* Stop watching c; c->refs reaching 0 lets the core's reap (core_reap in loop.c) free it. */
	void (*client_remove)(struct fld_loop *l, struct fld_client *c);
	void (*accept_resume)(struct fld_loop *l);
};

/*
 * What a backend tells the loop's core (loop.c), which fills this in: the
 * backends call the core through it, never by name, so that the core may
 * name the backends (loop_uring.h, loop_poll.h) without a circle.
 */
struct fld_loop_events {
	uint64_t (*now_ns)(void);
	/* A new connection; takes ownership of fd. */
	void (*accepted)(struct fld_loop *l, int fd);
	/* accept failed with -err: pauses accepting until the next tick when it may recur. */
	void (*accept_failed)(struct fld_loop *l, int err);
	/* c's socket is readable (or hung up): receives until it would block. */
	void (*readable)(struct fld_loop *l, struct fld_client *c);
	/* c's socket is writable: sends what is queued. */
	void (*writable)(struct fld_loop *l, struct fld_client *c);
	void (*signal)(struct fld_loop *l, int signo);
	void (*tick)(struct fld_loop *l);
	/* After a round of events: ops->on_work.  Returns nonzero while work is left. */
	int (*work)(struct fld_loop *l);
	/* Frees dropped clients no backend request names any more. */
	void (*reap)(struct fld_loop *l);
	/* fld_client_drop. */
	void (*drop)(struct fld_client *c, const char *why);
};


/* An fd fld_loop_watch watches (fn NULL: a free slot). */
struct fld_watch {
	int fd;
	void (*fn)(void *ctx);
	void *ctx;
};

struct fld_loop {
	const struct fld_loop_ops *ops;
	void *ctx;
	struct fld_loop_opts o;
	const struct fld_backend *be;
	const struct fld_loop_events *ev;
	int lfd;
	int sfd;
	sigset_t oldmask;
	int stop;
	int accept_paused;
	struct fld_client *live, *dead;
	unsigned nclients;
	unsigned long next_id;
	unsigned char *rbuf; /* o.max_msg bytes: every client's receives land here */
	uint64_t rejected_logged_ns;
	uint64_t silent_checked_ns;
	/* The epoll set of the fld_loop_watch fds, which the backends watch. */
	int watch_fd;
	void (*watch_fn)(void *ctx);
	void *watch_ctx;
	struct fld_watch watches[FLD_LOOP_MAX_WATCHES];

	/* io_uring backend */
	struct io_uring ring;
	struct fld_uop accept_op, sig_op, tick_op, ignore_op, watch_op;
	struct signalfd_siginfo ssi;
	struct __kernel_timespec tick_ts;
	int accept_armed;

	/* poll backend */
	struct pollfd *pfds;
	struct fld_client **pcl;
};

#endif /* FLD_LOOP_INTERNAL_H */
