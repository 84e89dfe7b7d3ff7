// SPDX-License-Identifier: MIT
/*
 * Test clients for faultlined's event loop (run.sh says which test uses
 * which).  Each mode prints one line and exits 0 when the daemon behaved,
 * 1 when it did not:
 *   ping SOCK [N]        N pings (default 1), each answered in order; waits
 *                        for the daemon to come up
 *   many SOCK N          N clients connected at once, then one ping each; every
 *                        one answered
 *   flood SOCK           messages as fast as possible: dropped
 *   big SOCK BYTES       one message of BYTES: dropped
 *   fds SOCK N [TIMES]   TIMES messages with N descriptors each, then a ping:
 *                        answered when N <= 4, dropped when N > 4
 *   noread SOCK N        up to N pings without reading a reply: dropped
 *   hold SOCK N [SECS]   N connections; prints "holding N" once they are
 *                        connected, then holds them SECS seconds, or without
 *                        SECS until it is killed
 * What must happen is waited for, up to WAIT_S: a slow machine only makes
 * a mode slower.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* How long to wait for what must happen: minutes, for QEMU's TCG. */
#define WAIT_S 300

static const char *sock_path;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int fail(const char *fmt, const char *arg)
{
	printf("FAIL: ");
	printf(fmt, arg);
	printf("\n");
	return 1;
}

/* Returns a connected socket, retrying for up to wait_s seconds, or -1. */
static int conn(double wait_s)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	double end = now() + wait_s;
	int fd;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
	for (;;) {
		fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -1;
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			return fd;
		close(fd);
		if (now() >= end)
			return -1;
		usleep(20000);
	}
}

/* Waits up to secs for fd to become readable; returns poll's revents or 0. */
static short wait_in(int fd, double secs)
{
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLRDHUP };

	if (poll(&p, 1, (int)(secs * 1000)) <= 0)
		return 0;
	return p.revents;
}

/* 1 when the daemon closed the connection within secs (after any replies). */
static int dropped(int fd, double secs)
{
	char buf[256];
	double end = now() + secs;

	while (now() < end) {
		if (!wait_in(fd, end - now()))
			return 0;
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return 1;
	}
	return 0;
}

static int ping_once(int fd, unsigned seq)
{
	char msg[32], reply[64];
	int len = snprintf(msg, sizeof(msg), "PING%u", seq);
	ssize_t n;

	if (send(fd, msg, (size_t)len, MSG_NOSIGNAL) != len)
		return -1;
	if (!(wait_in(fd, WAIT_S) & POLLIN))
		return -1;
	n = recv(fd, reply, sizeof(reply), 0);
	if (n != len || memcmp(reply, "PONG", 4) || memcmp(reply + 4, msg + 4, (size_t)len - 4))
		return -1;
	return 0;
}

static int mode_ping(int argc, char **argv)
{
	unsigned i, n = argc > 3 ? (unsigned)atoi(argv[3]) : 1;
	int fd = conn(WAIT_S);

	if (fd < 0)
		return fail("cannot connect to %s", sock_path);
	for (i = 0; i < n; i++)
		if (ping_once(fd, i) < 0)
			return fail("ping %s: no PONG", "");
	close(fd);
	printf("ok: %u pings answered\n", n);
	return 0;
}

static void raise_nofile(unsigned n)
{
	struct rlimit rl;

	getrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_cur < n + 64) {
		rl.rlim_cur = rl.rlim_max < n + 64 ? rl.rlim_max : n + 64;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int mode_many(int argc, char **argv)
{
	unsigned i, n = argc > 3 ? (unsigned)atoi(argv[3]) : 1000, answered = 0;
	int *fds = calloc(n, sizeof(int));
	struct pollfd *p = calloc(n, sizeof(*p));
	double end;

	raise_nofile(n);
	for (i = 0; i < n; i++) {
		fds[i] = conn(WAIT_S);
		if (fds[i] < 0) {
			printf("FAIL: connection %u: %s\n", i, strerror(errno));
			return 1;
		}
	}
	for (i = 0; i < n; i++) {
		char msg[32];
		int len = snprintf(msg, sizeof(msg), "PING%u", i);

		if (send(fds[i], msg, (size_t)len, MSG_NOSIGNAL) != len) {
			printf("FAIL: send on connection %u: %s\n", i, strerror(errno));
			return 1;
		}
		p[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
	}
	end = now() + WAIT_S;
	while (answered < n && now() < end) {
		if (poll(p, n, 1000) <= 0)
			continue;
		for (i = 0; i < n; i++) {
			char reply[64], want[32];
			int len;

			if (p[i].fd < 0 || !p[i].revents)
				continue;
			len = snprintf(want, sizeof(want), "PONG%u", i);
			if (recv(fds[i], reply, sizeof(reply), 0) != len ||
			    memcmp(reply, want, (size_t)len)) {
				printf("FAIL: connection %u: wrong or no reply\n", i);
				return 1;
			}
			p[i].fd = -1;
			answered++;
		}
	}
	if (answered < n) {
		printf("FAIL: %u of %u connections answered\n", answered, n);
		return 1;
	}
	for (i = 0; i < n; i++)
		close(fds[i]);
	free(fds);
	free(p);
	printf("ok: %u concurrent connections answered\n", n);
	return 0;
}

static int mode_flood(void)
{
	int fd = conn(WAIT_S);
	double end = now() + WAIT_S;
	unsigned long sent = 0;

	if (fd < 0)
		return fail("cannot connect to %s", sock_path);
	while (now() < end) {
		if (send(fd, "FLOOD", 5, MSG_NOSIGNAL | MSG_DONTWAIT) == 5) {
			sent++;
			continue;
		}
		if (errno == EAGAIN) {
			if (wait_in(fd, 0.001) & (POLLHUP | POLLRDHUP))
				break;
			continue;
		}
		break; /* EPIPE, ECONNRESET: dropped */
	}
	if (!dropped(fd, WAIT_S))
		return fail("flooding client not dropped%s", "");
	printf("ok: flooding client dropped after %lu messages\n", sent);
	return 0;
}

static int mode_big(int argc, char **argv)
{
	size_t size = argc > 3 ? (size_t)atol(argv[3]) : 70000;
	char *buf = calloc(1, size);
	int fd = conn(WAIT_S);

	if (fd < 0)
		return fail("cannot connect to %s", sock_path);
	memcpy(buf, "PING", 4);
	if (send(fd, buf, size, MSG_NOSIGNAL) != (ssize_t)size)
		return fail("send: %s", strerror(errno));
	free(buf);
	if (!dropped(fd, WAIT_S))
		return fail("oversized message: client not dropped%s", "");
	printf("ok: client with a %zu-byte message dropped\n", size);
	return 0;
}

static int send_fds(int fd, int nfds)
{
	char cbuf[CMSG_SPACE(sizeof(int) * 16)];
	struct iovec iov = { "FDS!", 4 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			      .msg_controllen = CMSG_SPACE(sizeof(int) * nfds) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
	int i, ret, fds[16];

	memset(cbuf, 0, sizeof(cbuf));
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
	for (i = 0; i < nfds; i++)
		fds[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	ret = sendmsg(fd, &msg, MSG_NOSIGNAL) == 4 ? 0 : -1;
	for (i = 0; i < nfds; i++)
		close(fds[i]);
	return ret;
}

static int mode_fds(int argc, char **argv)
{
	int n = argc > 3 ? atoi(argv[3]) : 3, times = argc > 4 ? atoi(argv[4]) : 1, i;
	int fd = conn(WAIT_S);

	if (fd < 0 || n > 16)
		return fail("cannot connect to %s", sock_path);
	for (i = 0; i < times; i++)
		if (send_fds(fd, n) < 0)
			return fail("sendmsg: %s", strerror(errno));
	if (n <= 4) {
		if (ping_once(fd, 7) < 0)
			return fail("no PONG after the descriptors%s", "");
		printf("ok: %d messages with %d descriptors each accepted\n", times, n);
	} else {
		if (!dropped(fd, WAIT_S))
			return fail("client sending too many descriptors not dropped%s", "");
		printf("ok: client sending %d descriptors dropped\n", n);
	}
	return 0;
}

static int mode_noread(int argc, char **argv)
{
	unsigned i, n = argc > 3 ? (unsigned)atoi(argv[3]) : 5000;
	int fd = conn(WAIT_S);

	if (fd < 0)
		return fail("cannot connect to %s", sock_path);
	for (i = 0; i < n; i++) {
		char msg[32];
		int len = snprintf(msg, sizeof(msg), "PING%u", i);

		if (send(fd, msg, (size_t)len, MSG_NOSIGNAL) != len)
			break;
	}
	/* Replies are waiting unread: only POLLRDHUP/POLLHUP tell the drop. */
	for (double end = now() + WAIT_S; now() < end; usleep(10000)) {
		struct pollfd p = { .fd = fd, .events = POLLRDHUP };

		if (poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLRDHUP))) {
			printf("ok: client not reading dropped after %u pings\n", i);
			return 0;
		}
	}
	printf("FAIL: client not reading its replies not dropped after %u pings\n", i);
	return 1;
}

static int mode_hold(int argc, char **argv)
{
	unsigned i, n = argc > 3 ? (unsigned)atoi(argv[3]) : 10;

	raise_nofile(n);
	for (i = 0; i < n; i++)
		if (conn(WAIT_S) < 0)
			return fail("connect: %s", strerror(errno));
	printf("holding %u\n", n);
	if (argc <= 4)
		for (;;)
			pause();
	sleep((unsigned)atoi(argv[4]));
	printf("ok: held %u connections\n", n);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: loopclient MODE SOCKET [ARGS]\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	sock_path = argv[2];
	if (!strcmp(argv[1], "ping"))
		return mode_ping(argc, argv);
	if (!strcmp(argv[1], "many"))
		return mode_many(argc, argv);
	if (!strcmp(argv[1], "flood"))
		return mode_flood();
	if (!strcmp(argv[1], "big"))
		return mode_big(argc, argv);
	if (!strcmp(argv[1], "fds"))
		return mode_fds(argc, argv);
	if (!strcmp(argv[1], "noread"))
		return mode_noread(argc, argv);
	if (!strcmp(argv[1], "hold"))
		return mode_hold(argc, argv);
	fprintf(stderr, "loopclient: unknown mode %s\n", argv[1]);
	return 2;
}
