// SPDX-License-Identifier: MIT
/*
 * The poll(2) backend: used only when io_uring cannot be set up (the sysctl
 * kernel.io_uring_disabled, seccomp, an old kernel) or when
 * FAULTLINED_NO_IO_URING=1 asks for it.  Each round builds the pollfd array
 * from scratch (signalfd, listener unless accepting is paused, every
 * client): O(clients) a round, fine for a fallback.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dlog.h"
#include "loop_internal.h"
#include "loop_poll.h"

static int poll_init(struct fld_loop *l)
{
	size_t n = (size_t)l->o.max_clients + 3;
	int fl;

	l->pfds = calloc(n, sizeof(*l->pfds));
	l->pcl = calloc(n, sizeof(*l->pcl));
	if (!l->pfds || !l->pcl) {
		free(l->pfds);
		free(l->pcl);
		return -ENOMEM;
	}
	/* accept4 below must not block when a connection vanished meanwhile. */
	fl = fcntl(l->lfd, F_GETFL);
	if (fl < 0 || fcntl(l->lfd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

static void poll_fini(struct fld_loop *l)
{
	free(l->pfds);
	free(l->pcl);
}

static int poll_client_add(struct fld_loop *l, struct fld_client *c)
{
	(void)l;
	(void)c;
	return 0;
}

static void poll_nothing(struct fld_loop *l, struct fld_client *c)
{
	(void)l;
	(void)c; /* the next round's pollfd array reads c->want_write and c->dead */
}

static void poll_accept_resume(struct fld_loop *l)
{
	(void)l;
}

static void accept_some(struct fld_loop *l)
{
	int i, fd;

	for (i = 0; i < FLD_ACCEPTS_PER_ROUND && !l->accept_paused; i++) {
		fd = accept4(l->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0) {
			if (errno == EAGAIN)
				return;
			l->ev->accept_failed(l, errno);
			continue;
		}
		l->ev->accepted(l, fd);
	}
}

static int poll_run(struct fld_loop *l)
{
	uint64_t tick_ns = (uint64_t)l->o.tick_ms * 1000000u;
	uint64_t next_tick = l->ev->now_ns() + tick_ns;
	int busy = 0;

	while (!l->stop) {
		struct fld_client *c;
		uint64_t now;
		size_t n = 0, i, first, watching;
		int listening, timeout, r;

		l->pfds[n++] = (struct pollfd){ .fd = l->sfd, .events = POLLIN };
		listening = !l->accept_paused;
		if (listening)
			l->pfds[n++] = (struct pollfd){ .fd = l->lfd, .events = POLLIN };
		watching = l->watch_fd >= 0 ? n : 0;
		if (watching)
			l->pfds[n++] = (struct pollfd){ .fd = l->watch_fd, .events = POLLIN };
		first = n;
		for (c = l->live; c; c = c->next) {
			l->pcl[n] = c;
			l->pfds[n++] = (struct pollfd){
				.fd = c->fd,
				.events = POLLIN | POLLRDHUP | (c->want_write ? POLLOUT : 0),
			};
		}
		now = l->ev->now_ns();
		timeout = now >= next_tick || busy ? 0 : (int)((next_tick - now + 999999) / 1000000);
		r = poll(l->pfds, n, timeout);
		if (r < 0 && errno != EINTR) {
			fld_err("poll: %s", strerror(errno));
			return -errno;
		}
		now = l->ev->now_ns();
		if (now >= next_tick) {
			next_tick += tick_ns;
			if (next_tick <= now)
				next_tick = now + tick_ns;
			l->ev->tick(l);
		}
		if (r <= 0) {
			busy = l->ev->work(l);
			continue;
		}
		if (l->pfds[0].revents & POLLIN) {
			struct signalfd_siginfo si;

			if (read(l->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
				l->ev->signal(l, (int)si.ssi_signo);
		}
		if (listening && l->pfds[1].revents)
			accept_some(l);
		if (watching && l->pfds[watching].revents)
			l->watch_fn(l->watch_ctx);
		for (i = first; i < n; i++) {
			short ev = l->pfds[i].revents;

			c = l->pcl[i];
			if (!ev || c->dead)
				continue;
			if (ev & POLLOUT)
				l->ev->writable(l, c);
			if (!c->dead && (ev & ~POLLOUT))
				l->ev->readable(l, c);
		}
		l->ev->reap(l);
		busy = l->ev->work(l);
		l->ev->reap(l);
	}
	return 0;
}

const struct fld_backend fld_backend_poll = {
	.name = "poll",
	.init = poll_init,
	.fini = poll_fini,
	.run = poll_run,
	.client_add = poll_client_add,
	.want_write = poll_nothing,
	.client_remove = poll_nothing,
	.accept_resume = poll_accept_resume,
};
