/* SPDX-License-Identifier: MIT */
/*
 * faultlined's event loop: one thread, one io_uring (liburing), every client
 * on it.  The loop owns the listening socket's accepts, the clients' sockets,
 * a signalfd and a periodic tick; the protocol layer sees only the callbacks
 * of struct fld_loop_ops and the fld_client_* functions below.
 *
 * When io_uring_queue_init fails (io_uring disabled by the sysctl
 * kernel.io_uring_disabled, or an old kernel) the same loop runs on poll(2).
 * FAULTLINED_NO_IO_URING=1 forces that fallback (a debugging aid, and how
 * its tests run it).
 *
 * Nothing here is thread-safe: every function is called from the loop's
 * thread, from inside a callback or before fld_loop_run.
 */
#ifndef FLD_LOOP_H
#define FLD_LOOP_H

#include <stddef.h>
#include <sys/types.h>

struct fld_loop;
struct fld_client; /* opaque to the protocol layer */

struct fld_loop_ops {
	/* A client was accepted; its credentials are known (fld_client_pid...). */
	void (*on_connect)(struct fld_client *c, void *ctx);
	/*
	 * One SEQPACKET message.  fds[0..nfds) are the descriptors it carried
	 * (close-on-exec): the callee takes ownership of those it keeps and sets
	 * them to -1 in fds; the loop closes the others when this returns.
	 */
	void (*on_message)(struct fld_client *c, const void *buf, size_t len, int *fds,
			   size_t nfds, void *ctx);
	/* The client is gone (hung up or dropped); c is freed after this returns. */
	void (*on_disconnect)(struct fld_client *c, void *ctx);
	/* Every tick_ms. */
	void (*on_tick)(void *ctx);
	/*
	 * After each round of events (optional): does a bounded piece of the
	 * work left over from callbacks.  Returns nonzero while work is left:
	 * the loop then waits for no event before its next round.
	 */
	int (*on_work)(void *ctx);
	/* c's queue of outgoing messages was emptied (optional). */
	void (*on_drained)(struct fld_client *c, void *ctx);
};

/* Every field 0 means its default.  First field: the struct's size. */
struct fld_loop_opts {
	size_t sz;
	unsigned max_clients;     /* 4096; a client over the limit is closed at accept */
	unsigned tick_ms;         /* 1000 */
	size_t max_msg;           /* 65536 bytes; a longer message drops its client */
	unsigned max_fds;         /* 4 per message; more drops the client */
	unsigned msg_rate;        /* 1000 messages per second per client (token bucket)... */
	unsigned msg_burst;       /* ...holding up to 2000 tokens; empty drops the client */
	unsigned max_queue;       /* 256 messages queued to a client that does not read... */
	size_t max_queue_bytes;   /* ...or 1 MiB; more drops it */
	int no_io_uring;          /* 1: use the poll(2) loop */
	unsigned root_reserve;    /* 0: the last slots only root may take */
	unsigned silent_ms;       /* 60000: a client silent this long is dropped (fld_client_keep) */
};

#define FLD_LOOP_MAX_FDS 4 /* the largest max_fds accepted */

/*
 * Creates a loop serving listen_fd (a listening AF_UNIX SOCK_SEQPACKET
 * socket, still owned by the caller).  Blocks SIGTERM, SIGINT, SIGHUP and
 * SIGCHLD in the calling thread and reads them from a signalfd.  ops and ctx
 * must outlive the loop.  Returns 0 with *loopp set, or -errno.
 */
int fld_loop_new(int listen_fd, const struct fld_loop_ops *ops, void *ctx,
		 const struct fld_loop_opts *opts, struct fld_loop **loopp);

/*
 * Runs until SIGTERM or SIGINT.  Returns 0 then, or -errno when the loop
 * itself fails (clients' errors only drop those clients).
 */
int fld_loop_run(struct fld_loop *loop);

/* Disconnects every client (on_disconnect for each) and frees the loop. */
void fld_loop_free(struct fld_loop *loop);

/*
 * Watches fd (not a client: e.g. the eBPF ring buffer's epoll fd, a
 * timerfd) until fld_loop_unwatch: fn(ctx) is called from the loop's thread
 * while it is readable, and should read until it would block.  At most
 * FLD_LOOP_MAX_WATCHES at a time, before or while the loop runs.  fd stays
 * the caller's.  Returns 0, -EBUSY when all watches are taken, or -errno.
 */
#define FLD_LOOP_MAX_WATCHES 4
int fld_loop_watch(struct fld_loop *loop, int fd, void (*fn)(void *ctx), void *ctx);

/* Stops watching fd (before the caller closes it). */
void fld_loop_unwatch(struct fld_loop *loop, int fd);

/* "io_uring" or "poll". */
const char *fld_loop_backend(const struct fld_loop *loop);

/*
 * Sends one message to c, with up to FLD_LOOP_MAX_FDS descriptors (the
 * caller keeps its own: they are duplicated).  Sent at once when the socket
 * has room, else queued; a client whose queue exceeds the limits is dropped.
 * Returns 0 when sent or queued, -EMSGSIZE, -EINVAL (too many fds),
 * -EPIPE (client dropped or dropping), -ENOMEM or another -errno.
 */
int fld_client_send(struct fld_client *c, const void *buf, size_t len, const int *fds,
		    size_t nfds);

/*
 * The message on_message is handling was one the daemon asked c for (a
 * DONE that answered requests): the token it took from c's bucket
 * (msg_rate) is given back, so that what the daemon asks of a client is
 * never its flooding.  Once per message, from on_message; nothing once c
 * is dropped.
 */
void fld_client_refund(struct fld_client *c);

/* Bytes queued to c and not sent yet (the socket was full). */
size_t fld_client_queued(const struct fld_client *c);

/*
 * While on, fld_client_send queues whatever the queue limits: for the rest
 * of one answer split over many messages, which may be larger than the
 * limits (the limits still apply to its first message, so a client that
 * does not read is dropped at its next answer).
 */
void fld_client_bulk(struct fld_client *c, int on);

/*
 * Disconnects c, logging why at info level: on_disconnect runs now (once),
 * the memory is freed later.  Safe inside any callback about c, including
 * on_message; later fld_client_send calls return -EPIPE.
 */
void fld_client_drop(struct fld_client *c, const char *why);

/*
 * c may stay silent for good: a registered process, whose connection stays
 * open for its lifetime.  Any other client is dropped once it has neither
 * sent a message nor been sent one for silent_ms.
 */
void fld_client_keep(struct fld_client *c);

/* The peer's credentials, read with SO_PEERCRED at accept. */
pid_t fld_client_pid(const struct fld_client *c);
uid_t fld_client_uid(const struct fld_client *c);
gid_t fld_client_gid(const struct fld_client *c);

/* A number unique among this loop's clients, for log lines. */
unsigned long fld_client_id(const struct fld_client *c);

/* The protocol layer's per-client pointer (NULL at connect). */
void fld_client_set_data(struct fld_client *c, void *data);
void *fld_client_get_data(const struct fld_client *c);

#endif /* FLD_LOOP_H */
