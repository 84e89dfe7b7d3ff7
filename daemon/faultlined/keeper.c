/* SPDX-License-Identifier: MIT */
/*
 * The keeper: see keeper.h.  Both halves are here: the daemon's (what it
 * sends, fld_keeper_*) and the keeper process's own (keeper_main), which
 * is forked from the daemon before its event loop, eBPF program or any
 * thread exist, and keeps nothing of it but three descriptors.
 *
 * Messages on a SOCK_SEQPACKET connection, one struct keep_msg each, with
 * at most one descriptor:
 *
 *   daemon -> keeper  HOLD (a region) | RELEASE | LISTEN (the listening
 *                     socket) | QUIT
 *   keeper -> daemon  when a daemon connects: LISTENER (the listening
 *                     socket), HELD (a region) for each, then END
 *
 * The first daemon is connected through a socket pair; a later one
 * connects to STATE_DIR/keeper.sock (0600, in a directory only the
 * daemon's uid may write, and its peer's uid checked), one at a time.
 * While no daemon is connected, the keeper accepts on the listening
 * socket itself: it keeps the region a HELLO carries, answers anything
 * else with an ERROR, and closes the connection.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dlog.h"
#include "keeper.h"
#include "procs.h"

#define KEEPER_SOCK "keeper.sock"

enum keep_type {
	KEEP_HOLD = 1,
	KEEP_RELEASE,
	KEEP_LISTEN,
	KEEP_QUIT,
	KEEP_HELD,
	KEEP_LISTENER,
	KEEP_END,
};

struct keep_msg {
	uint32_t type;		/* enum keep_type */
	int32_t pid;
	uint32_t uid;
	uint32_t reserved;
	uint64_t start_time;
	uint64_t ino;
	char comm[FL_PROTO_COMM];
};

/* Sends m with descriptor fd (-1: none).  Returns 0 or -errno. */
static int send_msg(int sock, const struct keep_msg *m, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { (void *)m, sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (fd >= 0) {
		struct cmsghdr *c;

		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n == sizeof(*m) ? 0 : -EMSGSIZE;
}

/*
 * Receives one message into m (and *fd: its descriptor, or -1).  Returns
 * 1, 0 at EOF, or -errno (-EAGAIN: none yet with flags MSG_DONTWAIT;
 * -EBADMSG: not a message of ours).
 */
static int recv_msg(int sock, struct keep_msg *m, int *fd, int flags)
{
	char cbuf[CMSG_SPACE(sizeof(int) * 4)];
	struct iovec iov = { m, sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	ssize_t n;

	*fd = -1;
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | flags);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int got;

			memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (*fd < 0)
				*fd = got;
			else
				close(got);
		}
	}
	if (n == 0)
		return 0;
	if ((size_t)n != sizeof(*m) || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		return -EBADMSG;
	}
	return 1;
}

static int sock_path(int dir_fd, struct sockaddr_un *sa)
{
	/* Through the directory's descriptor: any length of path, and the checked directory. */
	sa->sun_family = AF_UNIX;
	snprintf(sa->sun_path, sizeof(sa->sun_path), "/proc/self/fd/%d/" KEEPER_SOCK, dir_fd);
	return 0;
}

/* ------------------------------------------------------------------------
 * The keeper process
 */

struct held {
	struct keep_msg m;	/* pid, uid, start_time, ino, comm */
	int fd;
};

static struct held *held;
static size_t num_held, max_held;

/*
 * Keeps region fd for m's process (replacing an older copy of the same
 * region).  One that a client sent itself (from_client) is not kept when
 * its user, other than root, holds half of the room already.
 */
static void keep(const struct keep_msg *m, int fd, bool from_client)
{
	struct held *grown;
	size_t mine = 0;

	for (size_t i = 0; i < num_held; i++) {
		if (held[i].m.pid == m->pid && held[i].m.ino == m->ino) {
			close(held[i].fd);
			held[i] = (struct held){ *m, fd };
			return;
		}
		mine += held[i].m.uid == m->uid;
	}
	if (from_client && m->uid != 0 && mine >= max_held / 2) {
		close(fd);
		return;
	}
	grown = num_held < max_held ? realloc(held, (num_held + 1) * sizeof(*held)) : NULL;
	if (!grown) {
		close(fd);
		return;
	}
	held = grown;
	held[num_held++] = (struct held){ *m, fd };
}

static void let_go(const struct keep_msg *m)
{
	for (size_t i = 0; i < num_held; i++) {
		if (held[i].m.pid == m->pid && held[i].m.ino == m->ino) {
			close(held[i].fd);
			held[i] = held[--num_held];
			return;
		}
	}
}

/* A region a client sent: a file sealed against shrinking and growing, of its size. */
static bool region_like(int fd, uint64_t size, uint64_t *ino)
{
	struct stat st;
	int seals = fcntl(fd, F_GET_SEALS);

	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != size ||
	    seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW))
		return false;
	*ino = st.st_ino;
	return true;
}

/*
 * A client of the listening socket while no daemon runs: the region of
 * its HELLO is kept; anything else is told the daemon is away.  Returns
 * false when it has sent nothing yet (wait = still waiting for it).
 */
static bool take_hello(int c, bool wait)
{
	static char buf[FL_PROTO_MAX_MESSAGE];
	char cbuf[CMSG_SPACE(sizeof(int) * FL_PROTO_MAX_FDS)];
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	int fds[FL_PROTO_MAX_FDS];
	size_t nfds = 0;
	struct ucred cr;
	socklen_t len = sizeof(cr);
	struct fl_msg m;
	struct fl_diag d;
	uint64_t ino;
	ssize_t n = recvmsg(c, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

	if (n < 0 && (errno == EAGAIN || errno == EINTR) && wait)
		return false;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); n >= 0 && cm; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
			for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int) &&
			     nfds < FL_PROTO_MAX_FDS; i++)
				memcpy(&fds[nfds++], CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
	if (n > 0 && !(mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) &&
	    getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 &&
	    fl_proto_decode(buf, (size_t)n, nfds, &m, &d) == 0) {
		if (m.type == FL_MSG_HELLO && (pid_t)m.hello.pid == cr.pid && nfds == 1 &&
		    region_like(fds[0], m.hello.region_size, &ino)) {
			struct keep_msg k = { .type = KEEP_HELD, .pid = cr.pid, .uid = cr.uid,
					      .start_time = fld_proc_start_time(cr.pid),
					      .ino = ino };

			memcpy(k.comm, m.hello.comm, sizeof(k.comm));
			k.comm[sizeof(k.comm) - 1] = 0;
			keep(&k, fds[0], true);
			fds[0] = -1;
		} else if (m.type != FL_MSG_HELLO) {
			static const char text[] = "faultlined is not running (its keeper holds "
						   "the socket until it is back)";
			char out[sizeof(struct fl_msg_error) + sizeof(text)];
			struct fl_msg_error e = { .err = -EAGAIN, .len = sizeof(text) - 1 };

			fl_proto_header(&e, FL_MSG_ERROR, sizeof(e) + e.len, m.seq);
			memcpy(out, &e, sizeof(e));
			memcpy(out + sizeof(e), text, e.len);
			fl_proto_send(c, out, sizeof(e) + e.len, NULL, 0, MSG_DONTWAIT);
		}
	}
	for (size_t i = 0; i < nfds; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	close(c);
	return true;
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Closes every descriptor from 3 up but keep[0..n) (ascending). */
static void close_others(const int *keep_fds, size_t n)
{
	unsigned lo = 3;

	for (size_t i = 0; i < n; i++) {
		if ((unsigned)keep_fds[i] < lo)
			continue;
		if ((unsigned)keep_fds[i] > lo)
			close_range(lo, (unsigned)keep_fds[i] - 1, 0);
		lo = (unsigned)keep_fds[i] + 1;
	}
	close_range(lo, ~0u, 0);
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

#define MAX_PENDING 64

/*
 * The keeper process: dir_fd is the state directory, ks the listening
 * keeper.sock, dc the first daemon's end of a socket pair.  Never returns.
 */
static void __attribute__((noreturn)) keeper_main(int dir_fd, int ks, int dc)
{
	struct { int fd; double deadline; } pend[MAX_PENDING];
	size_t npend = 0;
	int lfd = -1, null = open("/dev/null", O_RDWR | O_CLOEXEC);
	int fds[3] = { dir_fd, ks, dc };
	struct rlimit rl;
	struct stat st;
	ino_t mine;
	double checked = mono_s();
	sigset_t none;

	prctl(PR_SET_NAME, "fld-keeper");
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGPIPE, SIG_IGN);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
	}
	qsort(fds, 3, sizeof(int), cmp_int);
	close_others(fds, 3);
	max_held = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur > 128 ?
		   (size_t)rl.rlim_cur - 96 : 32;
	if (fstatat(dir_fd, KEEPER_SOCK, &st, AT_SYMLINK_NOFOLLOW) != 0)
		_exit(1);
	mine = st.st_ino;

	for (;;) {
		struct pollfd p[3 + MAX_PENDING];
		size_t np = 0;
		double now;

		p[np++] = (struct pollfd){ .fd = ks, .events = POLLIN };
		p[np++] = (struct pollfd){ .fd = dc, .events = POLLIN };
		p[np++] = (struct pollfd){ .fd = dc < 0 && npend < MAX_PENDING ? lfd : -1,
					   .events = POLLIN };
		for (size_t i = 0; i < npend; i++)
			p[np++] = (struct pollfd){ .fd = pend[i].fd, .events = POLLIN };
		if (poll(p, np, 1000) < 0 && errno != EINTR)
			_exit(1);
		now = mono_s();

		/* The daemon first: its hangup is seen before a new daemon is taken. */
		if (dc >= 0 && p[1].revents) {
			struct keep_msg m;
			int fd, r;

			while ((r = recv_msg(dc, &m, &fd, MSG_DONTWAIT)) > 0) {
				if (m.type == KEEP_HOLD && fd >= 0) {
					m.type = KEEP_HELD;
					keep(&m, fd, false);
					fd = -1;
				} else if (m.type == KEEP_RELEASE) {
					let_go(&m);
				} else if (m.type == KEEP_LISTEN && fd >= 0) {
					if (lfd >= 0)
						close(lfd);
					lfd = fd;
					fd = -1;
				} else if (m.type == KEEP_QUIT) {
					_exit(0);
				}
				if (fd >= 0)
					close(fd);
			}
			if (r != -EAGAIN) {
				/* The daemon is gone: hold on for the next one. */
				close(dc);
				dc = -1;
				if (!num_held && lfd < 0)
					_exit(0);
			}
		}
		if (p[0].revents & POLLIN) {
			int c = accept4(ks, NULL, NULL, SOCK_CLOEXEC);
			struct ucred cr;
			socklen_t len = sizeof(cr);
			struct timeval tv = { 10, 0 };
			bool good = c >= 0 && dc < 0 &&
				    getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 &&
				    cr.uid == geteuid() &&
				    setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) == 0;
			struct keep_msg m = { .type = KEEP_LISTENER };

			/* The clients that came meanwhile: a last look, then the daemon's. */
			for (size_t i = 0; good && i < npend; i++)
				take_hello(pend[i].fd, false);
			if (good)
				npend = 0;
			if (good && lfd >= 0)
				good = send_msg(c, &m, lfd) == 0;
			for (size_t i = 0; good && i < num_held; i++)
				good = send_msg(c, &held[i].m, held[i].fd) == 0;
			m.type = KEEP_END;
			if (good && send_msg(c, &m, -1) == 0)
				dc = c;
			else if (c >= 0)
				close(c);
		}
		if (dc < 0 && lfd >= 0 && p[2].revents & POLLIN) {
			int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

			if (c >= 0)
				pend[npend++] = (typeof(pend[0])){ c, now + 5 };
		}
		/* Their HELLOs, or their time is up. */
		for (size_t i = 0; i < npend;) {
			bool ready = false;

			for (size_t k = 3; k < np && !ready; k++)
				ready = p[k].fd == pend[i].fd && p[k].revents;
			if ((ready || now > pend[i].deadline) &&
			    take_hello(pend[i].fd, now <= pend[i].deadline))
				pend[i] = pend[--npend];
			else
				i++;
		}
		/* A keeper of a directory that is gone, or replaced, is nobody's. */
		if (now - checked >= 1) {
			checked = now;
			if (fstat(dir_fd, &st) != 0 || st.st_nlink == 0 ||
			    fstatat(dir_fd, KEEPER_SOCK, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
			    st.st_ino != mine)
				_exit(0);
		}
	}
}

/* ------------------------------------------------------------------------
 * The daemon's side
 */

static int kfd = -1;	/* the connection to the keeper */

static void lost(const char *what, int err)
{
	fld_warn("keeper: %s: %s; going on without it (a daemon killed now loses the counts "
		 "of the processes that exit before it is back)", what, strerror(-err));
	close(kfd);
	kfd = -1;
}

/* Sends are given a few seconds: the keeper does nothing else. */
static int set_timeouts(int fd)
{
	struct timeval tv = { 5, 0 };

	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0)
		return -errno;
	return 0;
}

static int spawn(int dir_fd, const struct sockaddr_un *sa)
{
	int sv[2], ks, err, status;
	mode_t old;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
		return -errno;
	ks = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	old = umask(077);
	err = ks < 0 || bind(ks, (const struct sockaddr *)sa, sizeof(*sa)) != 0 ||
	      listen(ks, 4) != 0 ? -errno : 0;
	umask(old);
	if (err) {
		if (ks >= 0)
			close(ks);
		close(sv[0]);
		close(sv[1]);
		return err;
	}
	fflush(NULL);
	/* Twice: the keeper is no child of the daemon's (nothing for it to reap). */
	pid = fork();
	if (pid == 0) {
		pid_t k = fork();

		if (k == 0) {
			close(sv[0]);
			keeper_main(dir_fd, ks, sv[1]);
		}
		_exit(k < 0);
	}
	close(ks);
	close(sv[1]);
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0) {
		err = pid < 0 ? -errno : -EAGAIN;
		close(sv[0]);
		unlinkat(dir_fd, KEEPER_SOCK, 0);
		return err;
	}
	kfd = sv[0];
	err = set_timeouts(kfd);
	if (err) {
		lost("started", err);
		return err;
	}
	fld_info("keeper: started; it holds the listening socket and the regions of the "
		 "registered processes for the next daemon, should this one die");
	return 0;
}

int fld_keeper_start(int dir_fd, int *listen_fd, struct fld_kept **kept, size_t *nkept)
{
	struct sockaddr_un sa;
	struct ucred cr;
	socklen_t len = sizeof(cr);
	int c, err, r;

	*listen_fd = -1;
	*kept = NULL;
	*nkept = 0;
	sock_path(dir_fd, &sa);
	c = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (c < 0)
		return -errno;
	if (connect(c, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		err = errno;
		close(c);
		if (err != ECONNREFUSED && err != ENOENT)
			return -err;
		/* None, or one that died: a new one. */
		if (err == ECONNREFUSED)
			unlinkat(dir_fd, KEEPER_SOCK, 0);
		return spawn(dir_fd, &sa);
	}
	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0 || cr.uid != geteuid() ||
	    (err = set_timeouts(c)) != 0) {
		close(c);
		return -EPERM;
	}
	for (;;) {
		struct keep_msg m;
		struct fld_kept *grown;
		int fd;

		r = recv_msg(c, &m, &fd, 0);
		if (r <= 0)
			break;
		if (m.type == KEEP_END) {
			kfd = c;
			fld_info("keeper: pid %d gave back %zu regions%s", (int)cr.pid, *nkept,
				 *listen_fd >= 0 ? " and the listening socket" : "");
			return 0;
		}
		if (m.type == KEEP_LISTENER && fd >= 0 && *listen_fd < 0) {
			*listen_fd = fd;
			continue;
		}
		grown = m.type == KEEP_HELD && fd >= 0 ?
			realloc(*kept, (*nkept + 1) * sizeof(**kept)) : NULL;
		if (grown) {
			*kept = grown;
			grown[*nkept] = (struct fld_kept){ .pid = m.pid, .uid = m.uid,
				.start_time = m.start_time, .ino = m.ino, .fd = fd };
			memcpy(grown[*nkept].comm, m.comm, sizeof(m.comm));
			grown[*nkept].comm[sizeof(m.comm) - 1] = 0;
			(*nkept)++;
		} else if (fd >= 0) {
			close(fd);
		}
	}
	/* Closed on us: it serves another daemon of this state directory. */
	close(c);
	for (size_t i = 0; i < *nkept; i++)
		close((*kept)[i].fd);
	free(*kept);
	*kept = NULL;
	*nkept = 0;
	if (*listen_fd >= 0)
		close(*listen_fd);
	*listen_fd = -1;
	return r == 0 ? -EBUSY : r;
}

static void tell(const struct keep_msg *m, int fd, const char *what)
{
	int err;

	if (kfd < 0)
		return;
	err = send_msg(kfd, m, fd);
	if (err)
		lost(what, err);
}

void fld_keeper_listen(int fd)
{
	struct keep_msg m = { .type = KEEP_LISTEN };

	tell(&m, fd, "handing over the listening socket");
}

int fld_keeper_hold(const struct fld_proc *p, int fd)
{
	struct keep_msg m = { .type = KEEP_HOLD, .pid = p->pid, .uid = p->uid,
			      .start_time = p->start_time, .ino = p->region_ino };

	memcpy(m.comm, p->comm, sizeof(m.comm));
	tell(&m, fd, "handing over a region");
	return kfd >= 0 ? 0 : -EPIPE;
}

void fld_keeper_release(const struct fld_proc *p)
{
	struct keep_msg m = { .type = KEEP_RELEASE, .pid = p->pid, .ino = p->region_ino };

	tell(&m, -1, "letting a region go");
}

void fld_keeper_stop(void)
{
	struct keep_msg m = { .type = KEEP_QUIT };

	tell(&m, -1, "stopping it");
	if (kfd >= 0)
		close(kfd);
	kfd = -1;
}
