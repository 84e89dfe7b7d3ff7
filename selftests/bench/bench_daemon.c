// SPDX-License-Identifier: MIT
/*
 * faultlined under load (make bench, part 6):
 *
 *   bench_daemon FAULTLINED [-n PROCESSES] [-q QUERIES] [-i IDLE_SECONDS]
 *
 *  - registration latency: fl_init in a fresh process with a daemon
 *    listening minus fl_init without the agent (FL_INIT_NO_AGENT), medians
 *    of interleaved runs; fl_init registers synchronously when a daemon
 *    answers (lib/agent/agent.c);
 *  - with PROCESSES registered processes (each a forked child that called
 *    fl_init and waits): the latency of a whole stats query (QUERY STATS,
 *    every REPLY read), p50 and p99 of QUERIES;
 *  - the daemon's memory per registered process (RSS with them minus RSS
 *    before, divided by PROCESSES);
 *  - the daemon's CPU while they sit idle for IDLE_SECONDS (utime + stime
 *    from /proc/PID/stat).
 * Figures only: nothing here asserts a time.  Exits 1 when something does
 * not work (a query fails, a process does not register).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <faultline/dispatch.h>

#include "stats.h"
#include "proto/proto.h"

static char sock_path[108];
static pid_t daemon_pid;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int connect_daemon(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	memcpy(sa.sun_path, sock_path, sizeof(sa.sun_path));
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/*
 * Sends QUERY what and reads every REPLY.  Returns the JSON's size, or -1.
 * The text is kept in *json when json is not NULL (caller frees).
 */
static long query(int fd, uint32_t what, char **json)
{
	static char buf[FL_PROTO_MAX_MESSAGE];
	struct fl_msg_query q;
	size_t total = 0;
	char *text = NULL;

	memset(&q, 0, sizeof(q));
	fl_proto_header(&q, FL_MSG_QUERY, sizeof(q), 1);
	q.what = what;
	q.arg = UINT64_MAX;
	if (send(fd, &q, sizeof(q), MSG_NOSIGNAL) != sizeof(q))
		return -1;
	for (;;) {
		struct fl_msg m;
		ssize_t n = recv(fd, buf, sizeof(buf), 0);

		if (n <= 0 || fl_proto_decode(buf, (size_t)n, 0, &m, NULL) != 0 ||
		    m.type != FL_MSG_REPLY) {
			free(text);
			return -1;
		}
		if (json) {
			char *grown = realloc(text, total + m.reply.len + 1);

			if (!grown) {
				free(text);
				return -1;
			}
			text = grown;
			memcpy(text + total, m.text, m.reply.len);
			text[total + m.reply.len] = 0;
		}
		total += m.reply.len;
		if (!(m.reply.flags & FL_REPLY_MORE))
			break;
	}
	if (json)
		*json = text;
	return (long)total;
}

static long count(const char *s, const char *needle)
{
	long n = 0;

	while ((s = strstr(s, needle))) {
		n++;
		s += strlen(needle);
	}
	return n;
}

/* The daemon's RSS in KiB and CPU ticks. */
static void daemon_usage(long *rss_kib, long *ticks)
{
	char path[64], buf[4096];
	FILE *f;

	*rss_kib = *ticks = -1;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)daemon_pid);
	f = fopen(path, "r");
	while (f && fgets(buf, sizeof(buf), f))
		if (sscanf(buf, "VmRSS: %ld", rss_kib) == 1)
			break;
	if (f)
		fclose(f);
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)daemon_pid);
	f = fopen(path, "r");
	if (f && fgets(buf, sizeof(buf), f)) {
		char *p = strrchr(buf, ')');
		unsigned long ut, st;

		/* Fields after the comm: state is 3, utime 14, stime 15. */
		if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
				&ut, &st) == 2)
			*ticks = (long)(ut + st);
	}
	if (f)
		fclose(f);
}

/* A child: fl_init (with or without the agent), report the time, wait. */
static int hold_write = -1;	/* the parent's end: children close it */

static pid_t spawn(int agent, int report_fd, int hold_fd)
{
	pid_t pid = fork();

	if (pid == 0) {
		if (hold_write >= 0)
			close(hold_write);
		struct fl_init_opts o = {
			.sz = sizeof(o),
			.flags = agent ? 0 : FL_INIT_NO_AGENT,
			.socket_path = sock_path,
		};
		double t0 = now(), dt;
		char c;

		if (fl_init(&o) != 0)
			_exit(3);
		dt = now() - t0;
		(void)!write(report_fd, &dt, sizeof(dt));
		if (hold_fd >= 0)
			(void)!read(hold_fd, &c, 1);
		_exit(0);
	}
	return pid;
}

static double one_init(int agent)
{
	int p[2];
	double dt = -1;
	pid_t pid;

	if (pipe(p) != 0)
		return -1;
	pid = spawn(agent, p[1], -1);
	close(p[1]);
	if (pid > 0) {
		if (read(p[0], &dt, sizeof(dt)) != sizeof(dt))
			dt = -1;
		waitpid(pid, NULL, 0);
	}
	close(p[0]);
	return dt;
}

int main(int argc, char **argv)
{
	int nproc = 1000, nq = 200, idle = 10, opt, qfd = -1, rep[2], hold[2];
	double *with, *without, *lat;
	long rss0, rss1, t0, t1, sites_json;
	char dir[] = "/tmp/fl-bench-daemon-XXXXXX";
	char state[160];
	pid_t *kids;
	int runs = 31;
	char *json = NULL;

	if (argc < 2) {
		fprintf(stderr, "usage: bench_daemon FAULTLINED [-n PROCESSES] [-q QUERIES] "
			"[-i IDLE_SECONDS]\n");
		return 2;
	}
	optind = 2;
	while ((opt = getopt(argc, argv, "n:q:i:")) != -1) {
		if (opt == 'n')
			nproc = atoi(optarg);
		else if (opt == 'q')
			nq = atoi(optarg);
		else if (opt == 'i')
			idle = atoi(optarg);
		else
			return 2;
	}
	if (nproc < 1 || nq < 1 || idle < 1 || !mkdtemp(dir))
		return 2;
	snprintf(sock_path, sizeof(sock_path), "%s/s", dir);
	snprintf(state, sizeof(state), "%s/state", dir);
	{
		struct rlimit rl = { 65536, 65536 };

		setrlimit(RLIMIT_NOFILE, &rl);
	}
	daemon_pid = fork();
	if (daemon_pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 2);
		execl(argv[1], argv[1], "--socket", sock_path, "--state-dir", state,
		      "--log-level", "error", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 100 && (qfd = connect_daemon()) < 0; i++)
		usleep(20000);
	if (qfd < 0) {
		fprintf(stderr, "bench_daemon: no daemon at %s\n", sock_path);
		return 1;
	}

	/* 1. Registration latency, interleaved. */
	with = calloc((size_t)runs, sizeof(double));
	without = calloc((size_t)runs, sizeof(double));
	for (int i = 0; i < runs; i++) {
		with[i] = one_init(1);
		without[i] = one_init(0);
		if (with[i] < 0 || without[i] < 0)
			return 1;
	}
	{
		double w = bench_percentile(with, (size_t)runs, 0.5), wo = bench_percentile(without, (size_t)runs, 0.5);

		printf("Registration (fl_init in a fresh process, median of %d interleaved runs)\n",
		       runs);
		printf("  with faultlined listening        %9.1f us\n", w * 1e6);
		printf("  without the agent                %9.1f us\n", wo * 1e6);
		printf("  registration latency             %9.1f us\n", (w - wo) * 1e6);
	}

	/* 2. nproc registered processes. */
	daemon_usage(&rss0, &t0);
	if (pipe(rep) != 0 || pipe(hold) != 0)
		return 1;
	hold_write = hold[1];
	kids = calloc((size_t)nproc, sizeof(*kids));
	for (int i = 0; i < nproc; i++) {
		double dt;

		kids[i] = spawn(1, rep[1], hold[0]);
		if (kids[i] < 0 || read(rep[0], &dt, sizeof(dt)) != sizeof(dt)) {
			fprintf(stderr, "bench_daemon: process %d did not start\n", i);
			return 1;
		}
	}
	/* Every one registered (synchronously, inside fl_init). */
	sites_json = query(qfd, FL_QUERY_PS, &json);
	if (sites_json < 0 || count(json, "\"exited\":false") < nproc) {
		fprintf(stderr, "bench_daemon: %ld of %d processes registered\n",
			json ? count(json, "\"exited\":false") : 0, nproc);
		return 1;
	}
	free(json);
	daemon_usage(&rss1, &t1);

	lat = calloc((size_t)nq, sizeof(double));
	for (int i = 0; i < nq; i++) {
		double q0 = now();
		long n = query(qfd, FL_QUERY_STATS, NULL);

		lat[i] = now() - q0;
		if (n < 0)
			return 1;
		sites_json = n;
	}
	printf("\nWith %d registered processes\n", nproc);
	printf("  stats query (%ld bytes of JSON)  p50 %8.2f ms   p99 %8.2f ms  (%d queries)\n",
	       sites_json, bench_percentile(lat, (size_t)nq, 0.5) * 1e3, bench_percentile(lat, (size_t)nq, 0.99) * 1e3, nq);
	printf("  daemon RSS                       %ld KiB before, %ld KiB with them: "
	       "%.1f KiB per process\n", rss0, rss1, (double)(rss1 - rss0) / nproc);

	daemon_usage(&rss1, &t0);
	sleep((unsigned)idle);
	daemon_usage(&rss1, &t1);
	printf("  daemon CPU while they idle       %.2f%% of one core (%ld ticks in %d s)\n",
	       100.0 * (double)(t1 - t0) / (double)sysconf(_SC_CLK_TCK) / idle, t1 - t0, idle);

	close(hold[1]);
	for (int i = 0; i < nproc; i++)
		waitpid(kids[i], NULL, 0);
	kill(daemon_pid, SIGTERM);
	waitpid(daemon_pid, NULL, 0);
	{
		char cmd[256];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "bench_daemon: could not remove %s\n", dir);
	}
	return 0;
}
