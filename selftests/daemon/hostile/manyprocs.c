// SPDX-License-Identifier: MIT
/*
 * N processes that register at once and never answer a request: each
 * child connects, waits for the others, sends its HELLO (a region of one
 * slot, no agent: its request ring is never read), and stays registered;
 * the daemon's own requests to them (the heal policy) stay in flight
 * until they time out.  One user's load on the daemon's table of
 * requests in flight.
 *
 *   manyprocs SOCK N
 *
 * Prints "registered K of N" once every child has its WELCOME (or was
 * refused), then waits for stdin to close, kills the children and exits 0.
 * The children die with it (PR_SET_PDEATHSIG).  Exits 1 when a child
 * cannot be started.
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proto/proto.h"

/* How long a child waits for its WELCOME: minutes, for a loaded machine. */
#define WAIT_MS (300 * 1000)

/*
 * One child: connected, then HELLO once go is readable (closed), then its
 * answer on report ('y' WELCOME, 'n' anything else).  Never returns.
 */
static void child(const char *path, int go, int report)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	static char buf[FL_PROTO_MAX_MESSAGE];
	struct pollfd p;
	struct fl_shm_layout l;
	struct fl_msg_hello h;
	struct fl_msg m;
	char answer = 'n', c;
	void *region;
	ssize_t n;
	int fd, rfd;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() == 1)
		_exit(1);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	rfd = memfd_create("manyprocs-region", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fl_shm_layout(1, 8, 8, &l) != 0 || rfd < 0 || ftruncate(rfd, (off_t)l.size) != 0 ||
	    (region = mmap(NULL, l.size, PROT_READ | PROT_WRITE, MAP_SHARED, rfd, 0)) == MAP_FAILED)
		goto out;
	fl_shm_init(region, &l, (uint32_t)getpid());
	if (fcntl(rfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0 || fd < 0 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
		goto out;
	/* Everyone's HELLO at once: go closes when every child is connected. */
	c = 'c';
	if (write(report, &c, 1) != 1)
		_exit(1);
	while (read(go, &c, 1) > 0)
		;
	memset(&h, 0, sizeof(h));
	fl_proto_header(&h, FL_MSG_HELLO, sizeof(h), 1);
	h.pid = (uint32_t)getpid();
	h.region_size = l.size;
	snprintf(h.comm, sizeof(h.comm), "manyprocs");
	if (fl_proto_send(fd, &h, sizeof(h), &rfd, 1, 0) != 0)
		goto out;
	p = (struct pollfd){ .fd = fd, .events = POLLIN };
	if (poll(&p, 1, WAIT_MS) == 1 && (n = recv(fd, buf, sizeof(buf), 0)) > 0 &&
	    fl_proto_decode(buf, (size_t)n, 0, &m, NULL) == 0 && m.type == FL_MSG_WELCOME)
		answer = 'y';
out:
	if (write(report, &answer, 1) != 1)
		_exit(1);
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	int go[2], report[2], n, yes = 0, connected = 0;
	pid_t *kids;
	char c;

	if (argc != 3 || (n = atoi(argv[2])) < 1) {
		fprintf(stderr, "usage: manyprocs SOCK N\n");
		return 2;
	}
	kids = calloc((size_t)n, sizeof(*kids));
	if (!kids || pipe(go) != 0 || pipe(report) != 0)
		return 1;
	for (int i = 0; i < n; i++) {
		kids[i] = fork();
		if (kids[i] < 0) {
			printf("FAIL: fork: child %d of %d\n", i + 1, n);
			n = i;
			break;
		}
		if (kids[i] == 0) {
			close(go[1]);
			close(report[0]);
			child(argv[1], go[0], report[1]);
		}
	}
	close(go[0]);
	close(report[1]);
	/* Each child says 'c' once connected ('n' if it failed before): then all go at once. */
	for (int i = 0; i < n && read(report[0], &c, 1) == 1; i++)
		connected += c == 'c';
	close(go[1]);
	for (int i = 0; i < connected && read(report[0], &c, 1) == 1; i++)
		yes += c == 'y';
	printf("registered %d of %d\n", yes, n);
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	for (int i = 0; i < n; i++)
		kill(kids[i], SIGKILL);
	for (int i = 0; i < n; i++)
		waitpid(kids[i], NULL, 0);
	return 0;
}
