// SPDX-License-Identifier: MIT
/*
 * faultlined under load (make bench, part 6):
 *
 *   bench_daemon FAULTLINED [-n PROCESSES] [-q QUERIES] [-i IDLE_SECONDS]
 *                [-m MAX_SITES] [-P BIG_PROCESSES] [-S BIG_SITES]
 *                [-L LOADS] [-Q STATS_QUERIES] [-R CLI_RUNS] [-O]
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
 *    from /proc/PID/stat);
 *  - the scaling table: a fresh daemon per row, three processes of 1,000,
 *    10,000, 100,000 and 1,000,000 sites (up to MAX_SITES) registered one
 *    after the other by fakeproc.h (HELLO to the REPLY of the SYNC behind
 *    MODULE_ADD and SYMBOLS: the daemon's side only), the daemon's CPU for
 *    it, its RSS growth per site once they are registered (all of it, and
 *    its private part: RSS counts the pages of the processes' regions it
 *    reads, memory the processes share with it), and again once their
 *    records are final, stats latency (every process; --pid),
 *    its CPU while they idle, and after one count changed in each (what
 *    persisting that costs, over 6 s: the 5 s of docs/state.md and one
 *    more: the daemon's CPU, and the bytes it wrote, /proc/PID/io's
 *    wchar), then their exit: until their three records are final on disk
 *    (the records' bytes, the daemon's CPU);
 *  - BIG_PROCESSES processes of BIG_SITES sites (100 of 100,000), half of
 *    them exited: the daemon's RSS and its CPU while they idle;
 *  - faultline stats and the metrics at each load of LOADS (PxS, comma
 *    separated: P processes of S sites, e.g. 100x100000,10x100000; none
 *    unless asked for), a fresh daemon each, started with --metrics-listen
 *    127.0.0.1:0: one site in FAIL_EVERY (100) of each process failed, then
 *    half of the processes exited.  The STATS query faultline stats sends
 *    (FL_QUERY_FAILED_ONLY: every process, its failed sites), with --top 10
 *    and with --pid of a live process: p50 and p99 of STATS_QUERIES (20),
 *    the answer's bytes, the daemon's CPU per query; faultline stats
 *    --prometheus (the faultline next to FAULTLINED, FAULTLINE_SOCKET set
 *    to the daemon's socket) run CLI_RUNS (5) times: median and largest
 *    wall time, bytes and series; GET /metrics over a new TCP connection
 *    each (HTTP/1.1), read up to its Content-Length: p50 and p99 of
 *    STATS_QUERIES scrapes, the body's bytes and series, the daemon's CPU
 *    per scrape.  -O runs this part only.
 * Figures only: nothing here asserts a time.  Exits 1 when something does
 * not work (a query fails, a process does not register, a scrape gets no
 * answer within SCRAPE_TIMEOUT_S: the other figures are printed all the
 * same).
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
#include <dirent.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <faultline/dispatch.h>

#include "fakeproc.h"
#include "metrics_client.h"
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
 * Sends QUERY what about pid (0: every process) with arg, and reads every
 * REPLY.  Returns the JSON's size, or -1.  The text is kept in *json when
 * json is not NULL (caller frees).
 */
static long query_arg(int fd, uint32_t what, uint32_t pid, uint64_t arg, char **json)
{
	static char buf[FL_PROTO_MAX_MESSAGE];
	struct fl_msg_query q;
	size_t total = 0;
	char *text = NULL;

	memset(&q, 0, sizeof(q));
	fl_proto_header(&q, FL_MSG_QUERY, sizeof(q), 1);
	q.what = what;
	q.pid = pid;
	q.arg = arg;
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

/*
 * STATS: every site (at most 4,096 a process), the largest answer;
 * faultline stats asks only for those that failed.  The others: any.
 */
static long query_pid(int fd, uint32_t what, uint32_t pid, char **json)
{
	return query_arg(fd, what, pid, what == FL_QUERY_STATS ? 0 : UINT64_MAX, json);
}

static long query(int fd, uint32_t what, char **json)
{
	return query_pid(fd, what, 0, json);
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

/* The daemon's private (anonymous) resident memory in KiB, or -1. */
static long daemon_anon(void)
{
	char path[64], buf[4096];
	long kib = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)daemon_pid);
	f = fopen(path, "r");
	while (f && fgets(buf, sizeof(buf), f))
		if (sscanf(buf, "RssAnon: %ld", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return kib;
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

/* The bytes the daemon has written (/proc/PID/io's wchar: write, pwrite and the like), or -1. */
static long daemon_written(void)
{
	char path[64], buf[256];
	long w = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/io", (int)daemon_pid);
	f = fopen(path, "r");
	while (f && fgets(buf, sizeof(buf), f))
		if (sscanf(buf, "wchar: %ld", &w) == 1)
			break;
	if (f)
		fclose(f);
	return w;
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

/*
 * A faultlined on sock_path with its state in state_dir; with log, also
 * serving GET /metrics on a free port of 127.0.0.1 and logging (info) to
 * the file log, where it says the port.  Returns a connection to it, or -1.
 */
static int start_daemon_log(const char *faultlined, const char *state_dir, const char *log)
{
	int fd = -1;

	daemon_pid = fork();
	if (daemon_pid == 0) {
		int err = log ? open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600) :
				open("/dev/null", O_WRONLY);

		if (err < 0 || dup2(err, 2) < 0)
			_exit(127);
		if (log)
			execl(faultlined, faultlined, "--socket", sock_path, "--state-dir",
			      state_dir, "--log-level", "info", "--metrics-listen", "127.0.0.1:0",
			      (char *)NULL);
		else
			execl(faultlined, faultlined, "--socket", sock_path, "--state-dir",
			      state_dir, "--log-level", "error", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 500 && (fd = connect_daemon()) < 0; i++)
		usleep(20000);
	if (fd < 0)
		fprintf(stderr, "bench_daemon: no daemon at %s\n", sock_path);
	return fd;
}

static int start_daemon(const char *faultlined, const char *state_dir)
{
	return start_daemon_log(faultlined, state_dir, NULL);
}

/*
 * The port of GET /metrics that the daemon logged to log ("... (port N)"),
 * waiting for that line up to 10 s.  Returns the port, or -1.
 */
static int metrics_port(const char *log)
{
	for (int i = 0; i < 500; i++) {
		char line[512];
		FILE *f = fopen(log, "r");
		unsigned port = 0;

		while (f && fgets(line, sizeof(line), f)) {
			const char *p = strstr(line, "GET /metrics served on ");

			if (p && (p = strstr(p, "(port ")) && sscanf(p, "(port %u)", &port) == 1)
				break;
		}
		if (f)
			fclose(f);
		if (port > 0 && port < 65536)
			return (int)port;
		usleep(20000);
	}
	fprintf(stderr, "bench_daemon: the daemon did not say its metrics port (%s)\n", log);
	return -1;
}

static void stop_daemon(int fd)
{
	close(fd);
	if (daemon_pid > 0) {
		/* SIGTERM is seen when its loop turns: a daemon stuck in work gets SIGKILL. */
		double end = now() + 60;

		kill(daemon_pid, SIGTERM);
		while (waitpid(daemon_pid, NULL, WNOHANG) == 0) {
			if (now() > end) {
				fprintf(stderr, "bench_daemon: faultlined %d did not stop in 60 s: "
					"killed\n", (int)daemon_pid);
				kill(daemon_pid, SIGKILL);
				waitpid(daemon_pid, NULL, 0);
				break;
			}
			usleep(10000);
		}
	}
	daemon_pid = 0;
	unlink(sock_path);
}

/* On any exit, an error's too: no daemon (nor its keeper) is left running. */
static void stop_daemon_at_exit(void)
{
	stop_daemon(-1);
}

static double ticks_ms(long ticks)
{
	return 1e3 * (double)ticks / (double)sysconf(_SC_CLK_TCK);
}

/*
 * Stats latency, p50 and p99 in *p50 and *p99 (seconds), of n queries
 * about every process (pid 0) or about pids[i % npids] in turn.  Returns
 * the last answer's size, or -1.
 */
static long stats_latency(int fd, int n, const pid_t *pids, int npids, double *p50, double *p99)
{
	double *lat = calloc((size_t)n, sizeof(double));
	long size = -1;

	for (int i = 0; lat && i < n; i++) {
		double q0 = now();

		size = query_pid(fd, FL_QUERY_STATS, npids ? (uint32_t)pids[i % npids] : 0, NULL);
		lat[i] = now() - q0;
		if (size < 0)
			break;
	}
	if (lat && size >= 0) {
		*p50 = bench_percentile(lat, (size_t)n, 0.5);
		*p99 = bench_percentile(lat, (size_t)n, 0.99);
	}
	free(lat);
	return size;
}

/* A fake process (fakeproc.h) and the pipe that tells it what to do. */
/* One site in this many fails at the loads of the stats and metrics part. */
#define FAIL_EVERY 100u

struct fake {
	pid_t pid;
	/*
	 * 'c': count one fault at site 0; 'f': fail one site in FAIL_EVERY
	 * (fake_fail), then write a byte to ack; EOF: exit.
	 */
	int cmd;
	int ack;
	double took;		/* its registration, from HELLO to SYNC's REPLY */
};

/* The write ends of every fake's pipe: a later fake must not hold them. */
static int *fake_cmds;
static size_t num_fake_cmds;

static int fake_start(struct fake *f, uint32_t sites)
{
	int rep[2], cmd[2];
	int *grown = realloc(fake_cmds, (num_fake_cmds + 1) * sizeof(*fake_cmds));

	if (!grown || pipe2(rep, O_CLOEXEC) != 0 || pipe2(cmd, O_CLOEXEC) != 0)
		return -1;
	fake_cmds = grown;
	f->pid = fork();
	if (f->pid == 0) {
		struct fake_proc fp;
		double took = -1;
		char c;

		for (size_t i = 0; i < num_fake_cmds; i++)
			if (fake_cmds[i] >= 0)
				close(fake_cmds[i]);
		close(cmd[1]);
		close(rep[0]);
		if (fake_register(&fp, sock_path, sites, &took) != 0)
			took = -1;
		(void)!write(rep[1], &took, sizeof(took));
		while (took >= 0 && read(cmd[0], &c, 1) == 1) {
			if (c == 'f') {
				fake_fail(&fp, FAIL_EVERY);
				(void)!write(rep[1], &c, 1);
			} else {
				fake_count(&fp, 1, 1);
			}
		}
		_exit(took < 0);
	}
	close(cmd[0]);
	close(rep[1]);
	f->cmd = cmd[1];
	fake_cmds[num_fake_cmds++] = cmd[1];
	if (f->pid < 0 || read(rep[0], &f->took, sizeof(f->took)) != sizeof(f->took) ||
	    f->took < 0) {
		fprintf(stderr, "bench_daemon: a process of %u sites did not register\n", sites);
		close(rep[0]);
		return -1;
	}
	f->ack = rep[0];
	return 0;
}

/* Fails one site in FAIL_EVERY of the fake, and waits until it did.  Returns 0, or -1. */
static int fake_fail_sites(struct fake *f)
{
	char c;

	if (write(f->cmd, "f", 1) != 1 || read(f->ack, &c, 1) != 1) {
		fprintf(stderr, "bench_daemon: process %d did not fail its sites\n", (int)f->pid);
		return -1;
	}
	return 0;
}

static void fake_end(struct fake *f)
{
	for (size_t i = 0; i < num_fake_cmds; i++)
		if (fake_cmds[i] == f->cmd)
			fake_cmds[i] = -1;
	close(f->cmd);
	close(f->ack);
	waitpid(f->pid, NULL, 0);
}

/* The records in state_dir whose process is exited (their first line says so). */
static int records_final(const char *state_dir, long *bytes)
{
	DIR *d = opendir(state_dir);
	struct dirent *e;
	int n = 0;

	*bytes = 0;
	while (d && (e = readdir(d))) {
		char path[512], line[256];
		size_t len = strlen(e->d_name);
		FILE *f;

		if (strncmp(e->d_name, "proc.", 5) || len < 5 ||
		    strcmp(e->d_name + len - 5, ".json"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", state_dir, e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(line, sizeof(line), f) && strstr(line, "\"exited\":true")) {
			n++;
			fseek(f, 0, SEEK_END);
			*bytes += ftell(f);
		}
		fclose(f);
	}
	if (d)
		closedir(d);
	return n;
}

#define ROW_PROCS 3

/* One row of the scaling table: a fresh daemon, ROW_PROCS processes of sites each. */
static int scaling_row(const char *faultlined, const char *dir, uint32_t sites, int idle)
{
	struct fake f[ROW_PROCS];
	pid_t pids[ROW_PROCS];
	char state_dir[160];
	double took[ROW_PROCS], w50 = 0, w99 = 0, p50 = 0, p99 = 0, t_final;
	long rss0, rss1, rss_reg, anon0, anon_reg, c0, c1, c_idle0, c_idle1, c_one, c_exit;
	long bytes = 0, js, w0, w1;
	int fd, nq = sites >= 1000000 ? 10 : 50, nq_pid = sites >= 1000000 ? 3 :
		 sites >= 100000 ? 10 : 50, done;

	snprintf(state_dir, sizeof(state_dir), "%s/state-%u", dir, sites);
	fd = start_daemon(faultlined, state_dir);
	if (fd < 0 || query(fd, FL_QUERY_STATS, NULL) < 0)
		return -1;
	/* Done starting (the eBPF program loaded): what follows is the processes'. */
	usleep(500000);
	daemon_usage(&rss0, &c0);
	anon0 = daemon_anon();
	for (int i = 0; i < ROW_PROCS; i++) {
		if (fake_start(&f[i], sites) != 0)
			return -1;
		took[i] = f[i].took;
		pids[i] = f[i].pid;
	}
	daemon_usage(&rss_reg, &c1);
	anon_reg = daemon_anon();
	js = stats_latency(fd, nq, NULL, 0, &w50, &w99);
	if (js < 0 || stats_latency(fd, nq_pid, pids, ROW_PROCS, &p50, &p99) < 0)
		return -1;
	daemon_usage(&rss1, &c_idle0);
	sleep((unsigned)idle);
	daemon_usage(&rss1, &c_idle1);
	w0 = daemon_written();
	for (int i = 0; i < ROW_PROCS; i++)
		(void)!write(f[i].cmd, "c", 1);
	sleep(6);
	daemon_usage(&rss1, &c_one);
	w1 = daemon_written();
	t_final = now();
	for (int i = 0; i < ROW_PROCS; i++)
		fake_end(&f[i]);
	while ((done = records_final(state_dir, &bytes)) < ROW_PROCS && now() - t_final < 120)
		usleep(2000);
	t_final = now() - t_final;
	daemon_usage(&rss1, &c_exit);
	printf("  %9u %8.1f %8.1f %7.1f %7.1f %7.1f %8.2f %8.2f %8.2f %8.2f %7.2f%% %7.2f%% %8.1f "
	       "%9.1f %8.1f %9.1f %9.1f\n",
	       sites, bench_median(took, ROW_PROCS) * 1e3, ticks_ms(c1 - c0) / ROW_PROCS,
	       1024.0 * (double)(rss_reg - rss0) / ((double)sites * ROW_PROCS),
	       1024.0 * (double)(anon_reg - anon0) / ((double)sites * ROW_PROCS),
	       1024.0 * (double)(rss1 - rss0) / ((double)sites * ROW_PROCS),
	       w50 * 1e3, w99 * 1e3, p50 * 1e3, p99 * 1e3,
	       100.0 * ticks_ms(c_idle1 - c_idle0) / 1e3 / idle,
	       100.0 * ticks_ms(c_one - c_idle1) / 1e3 / 6,
	       done == ROW_PROCS ? t_final * 1e3 : -1.0, (double)bytes / ROW_PROCS / 1024,
	       ticks_ms(c_exit - c_one) / ROW_PROCS,
	       w0 >= 0 && w1 >= 0 ? (double)(w1 - w0) / ROW_PROCS / 1024 : -1.0,
	       ticks_ms(c_one - c_idle1) / ROW_PROCS);
	fflush(stdout);
	stop_daemon(fd);
	return done == ROW_PROCS ? 0 : -1;
}

/* nproc processes of sites each, half of them exited: the daemon idle. */
static int big_idle(const char *faultlined, const char *dir, int nproc, uint32_t sites, int idle)
{
	struct fake *f = calloc((size_t)nproc, sizeof(*f));
	char state_dir[160];
	long rss0, rss1, c0, c1, bytes;
	double t0 = now();
	int fd;

	snprintf(state_dir, sizeof(state_dir), "%s/state-big", dir);
	fd = start_daemon(faultlined, state_dir);
	if (fd < 0 || !f || query(fd, FL_QUERY_STATS, NULL) < 0)
		return -1;
	usleep(500000);
	daemon_usage(&rss0, &c0);
	for (int i = 0; i < nproc; i++)
		if (fake_start(&f[i], sites) != 0)
			return -1;
	for (int i = 0; i < nproc / 2; i++)
		fake_end(&f[i]);
	while (records_final(state_dir, &bytes) < nproc / 2 && now() - t0 < 600)
		usleep(10000);
	/* The exits' records are written: what is left is idling. */
	sleep(1);
	daemon_usage(&rss1, &c0);
	sleep((unsigned)idle);
	daemon_usage(&rss1, &c1);
	printf("  %d processes of %u sites, %d exited: daemon RSS %ld KiB (%.1f bytes a site), "
	       "CPU while they idle %.2f%% of one core (%ld ticks in %d s)\n",
	       nproc, sites, nproc / 2, rss1, 1024.0 * (double)(rss1 - rss0) / ((double)nproc * sites),
	       100.0 * ticks_ms(c1 - c0) / 1e3 / idle, c1 - c0, idle);
	for (int i = nproc / 2; i < nproc; i++)
		fake_end(&f[i]);
	stop_daemon(fd);
	free(f);
	return 0;
}

/* One figure of the stats and metrics part: a row of its table. */
static void stats_row(const char *load, const char *what, double p50, double p99, long bytes,
		      const char *count_name, long count, double cpu_ms)
{
	char c[48];

	snprintf(c, sizeof(c), "%ld %s", count, count_name);
	printf("  %-12s %-34s %9.2f %9.2f %11ld %15s %9.2f\n", load, what, p50 * 1e3, p99 * 1e3,
	       bytes, c, cpu_ms);
}

/*
 * faultline stats and the metrics at one load: a fresh daemon serving GET
 * /metrics, nproc processes of sites each, one site in FAIL_EVERY of each
 * failed, then half of them exited (their records final).  Prints the
 * rows of its table; returns 0, 1 when a scrape got no answer (the rest
 * is measured and printed), or -1 when something else does not work.
 */
static int stats_at_scale(const char *faultlined, const char *cli, const char *dir, int nproc,
			  uint32_t sites, int nq, int runs)
{
	struct fake *f = calloc((size_t)nproc, sizeof(*f));
	double *lat = calloc((size_t)(nq > runs ? nq : runs), sizeof(double));
	char state_dir[160], log[160], load[32];
	long bytes = 0, c0, c1, rss, listed;
	char *text = NULL;
	double t0 = now();
	int fd, port, started = 0, ended = 0, ret = -1;
	struct {
		const char *what;
		uint32_t pid;
		uint64_t arg;
	} queries[] = {
		/* As cmd_stats sends them: failed sites only, at most --top N a process. */
		{ "stats (STATS query, failed only)", 0, FL_QUERY_FAILED_ONLY },
		{ "stats --top 10", 0, FL_QUERY_FAILED_ONLY | 10 },
		{ "stats --pid (a live process)", 0, FL_QUERY_FAILED_ONLY },
	};

	snprintf(load, sizeof(load), "%dx%u", nproc, sites);
	snprintf(state_dir, sizeof(state_dir), "%s/state-stats-%s", dir, load);
	snprintf(log, sizeof(log), "%s/faultlined-%s.log", dir, load);
	fd = start_daemon_log(faultlined, state_dir, log);
	if (fd < 0 || !f || !lat || (port = metrics_port(log)) < 0 ||
	    query(fd, FL_QUERY_STATS, NULL) < 0)
		goto out;
	for (; started < nproc; started++)
		if (fake_start(&f[started], sites) != 0 || fake_fail_sites(&f[started]) != 0)
			goto out;
	for (; ended < nproc / 2; ended++)
		fake_end(&f[ended]);
	while (records_final(state_dir, &bytes) < nproc / 2 && now() - t0 < 600)
		usleep(10000);
	if (records_final(state_dir, &bytes) < nproc / 2) {
		fprintf(stderr, "bench_daemon: %s: the exited processes' records are not final\n",
			load);
		goto out;
	}
	/*
	 * The exits' records are written: what is left is answering.  A new
	 * connection: the daemon drops a client that is not a registered
	 * process after 60 s of silence, and registering took a while.
	 */
	sleep(1);
	close(fd);
	fd = connect_daemon();
	if (fd < 0) {
		fprintf(stderr, "bench_daemon: %s: no daemon at %s\n", load, sock_path);
		goto out;
	}
	queries[2].pid = (uint32_t)f[nproc - 1].pid;

	for (size_t k = 0; k < sizeof(queries) / sizeof(queries[0]); k++) {
		/* What the answer lists (the "kind" of every site), untimed. */
		if (query_arg(fd, FL_QUERY_STATS, queries[k].pid, queries[k].arg, &text) < 0)
			goto query_failed;
		listed = count(text, "\"kind\":");
		free(text);
		text = NULL;
		daemon_usage(&rss, &c0);
		for (int i = 0; i < nq; i++) {
			double q0 = now();

			bytes = query_arg(fd, FL_QUERY_STATS, queries[k].pid, queries[k].arg, NULL);
			lat[i] = now() - q0;
			if (bytes < 0)
				goto query_failed;
		}
		daemon_usage(&rss, &c1);
		stats_row(load, queries[k].what, bench_percentile(lat, (size_t)nq, 0.5),
			  bench_percentile(lat, (size_t)nq, 0.99), bytes, "sites", listed,
			  ticks_ms(c1 - c0) / nq);
	}

	{
		long series = 0, lines = 0;
		double med;

		daemon_usage(&rss, &c0);
		for (int i = 0; i < runs; i++)
			if ((lat[i] = cli_prometheus(cli, sock_path, &bytes, &lines, &series)) < 0)
				goto out;
		daemon_usage(&rss, &c1);
		/* Of a few runs: the median, and the largest (sorted last) in the p99 column. */
		med = bench_median(lat, (size_t)runs);
		stats_row(load, "faultline stats --prometheus", med, lat[runs - 1], bytes, "series",
			  series, ticks_ms(c1 - c0) / runs);

		/* Last: a scrape that gets no answer may leave the daemon busy. */
		daemon_usage(&rss, &c0);
		for (int i = 0; i < nq; i++) {
			double q0 = now();

			bytes = scrape(port, &text);
			lat[i] = now() - q0;
			if (bytes < 0) {
				daemon_usage(&rss, &c1);
				printf("  %-12s %-34s no answer within %d s (scrape %d); the daemon's "
				       "CPU meanwhile %.0f ms\n", load, "GET /metrics", SCRAPE_TIMEOUT_S,
				       i + 1, ticks_ms(c1 - c0));
				ret = 1;
				goto out;
			}
			exposition_count(text, (size_t)bytes, &lines, &series);
			free(text);
			text = NULL;
		}
		daemon_usage(&rss, &c1);
		stats_row(load, "GET /metrics", bench_percentile(lat, (size_t)nq, 0.5),
			  bench_percentile(lat, (size_t)nq, 0.99), bytes, "series", series,
			  ticks_ms(c1 - c0) / nq);
	}
	ret = 0;
	goto out;
query_failed:
	fprintf(stderr, "bench_daemon: %s: a STATS query failed\n", load);
out:
	free(text);
	for (int i = ended; i < started; i++)
		fake_end(&f[i]);
	stop_daemon(fd);
	free(f);
	free(lat);
	return ret;
}

/*
 * The next load of -L's list at *l ("PxS", then a comma or the end) into
 * *nproc and *sites, *l moved past it.  Returns 0, or -1 when it is not one.
 */
static int parse_load(const char **l, int *nproc, uint32_t *sites)
{
	char *end;
	long p = strtol(*l, &end, 10);
	unsigned long sz = *end == 'x' ? strtoul(end + 1, &end, 10) : 0;

	if (p < 1 || p > 100000 || sz < FAIL_EVERY || sz > UINT32_MAX || (*end && *end != ','))
		return -1;
	*nproc = (int)p;
	*sites = (uint32_t)sz;
	*l = *end ? end + 1 : end;
	return 0;
}

int main(int argc, char **argv)
{
	int nproc = 1000, nq = 200, idle = 10, opt, qfd = -1, rep[2], hold[2];
	int big_procs = 100;
	uint32_t max_sites = 1000000, big_sites = 100000;
	double *with, *without, w50 = 0, w99 = 0, p50 = 0, p99 = 0;
	long rss0, rss1, t0, t1, sites_json;
	char dir[] = "/tmp/fl-bench-daemon-XXXXXX";
	char state[160];
	pid_t *kids;
	int runs = 31;
	char *json = NULL;
	const char *loads = NULL;
	int stats_queries = 20, cli_runs = 5, only_loads = 0, unanswered = 0;
	char cli[4096];

	if (argc < 2) {
		fprintf(stderr, "usage: bench_daemon FAULTLINED [-n PROCESSES] [-q QUERIES] "
			"[-i IDLE_SECONDS] [-m MAX_SITES] [-P BIG_PROCESSES] [-S BIG_SITES]\n"
			"                    [-L PxS[,PxS...]] [-Q STATS_QUERIES] [-R CLI_RUNS] [-O]\n"
			"  -L: faultline stats and the metrics at each load, P processes of S sites\n"
			"      (e.g. 100x100000,10x100000), one site in %u failed, half exited;\n"
			"      -Q queries and scrapes (default 20) and -R runs of faultline stats\n"
			"      --prometheus (default 5) each; -O: that part only\n", FAIL_EVERY);
		return 2;
	}
	optind = 2;
	while ((opt = getopt(argc, argv, "n:q:i:m:P:S:L:Q:R:O")) != -1) {
		if (opt == 'n')
			nproc = atoi(optarg);
		else if (opt == 'q')
			nq = atoi(optarg);
		else if (opt == 'i')
			idle = atoi(optarg);
		else if (opt == 'm')
			max_sites = (uint32_t)strtoul(optarg, NULL, 10);
		else if (opt == 'P')
			big_procs = atoi(optarg);
		else if (opt == 'S')
			big_sites = (uint32_t)strtoul(optarg, NULL, 10);
		else if (opt == 'L')
			loads = optarg;
		else if (opt == 'Q')
			stats_queries = atoi(optarg);
		else if (opt == 'R')
			cli_runs = atoi(optarg);
		else if (opt == 'O')
			only_loads = 1;
		else
			return 2;
	}
	for (const char *l = loads; l && *l;) {
		uint32_t sz;
		int p;

		if (parse_load(&l, &p, &sz) != 0) {
			fprintf(stderr, "bench_daemon: -L: '%s': not PxS[,PxS...] (S at least %u)\n",
				loads, FAIL_EVERY);
			return 2;
		}
	}
	/* The faultline next to FAULTLINED (build/bin). */
	{
		const char *slash = strrchr(argv[1], '/');
		int len = slash ? (int)(slash - argv[1]) : 1;

		snprintf(cli, sizeof(cli), "%.*s/faultline", len, slash ? argv[1] : ".");
		if (loads && access(cli, X_OK) != 0) {
			fprintf(stderr, "bench_daemon: %s: %s\n", cli, strerror(errno));
			return 2;
		}
	}
	atexit(stop_daemon_at_exit);
	if (only_loads && !loads) {
		fprintf(stderr, "bench_daemon: -O runs the part of -L only: give -L\n");
		return 2;
	}
	if (nproc < 1 || nq < 1 || idle < 1 || big_procs < 0 || stats_queries < 1 ||
	    cli_runs < 1 || !mkdtemp(dir))
		return 2;
	snprintf(sock_path, sizeof(sock_path), "%s/s", dir);
	snprintf(state, sizeof(state), "%s/state", dir);
	{
		struct rlimit rl = { 65536, 65536 };

		setrlimit(RLIMIT_NOFILE, &rl);
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (only_loads)
		goto stats_part;
	qfd = start_daemon(argv[1], state);
	if (qfd < 0)
		return 1;

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

	sites_json = stats_latency(qfd, nq, NULL, 0, &w50, &w99);
	if (sites_json < 0 || stats_latency(qfd, nq, kids, nproc, &p50, &p99) < 0)
		return 1;
	printf("\nWith %d registered processes\n", nproc);
	printf("  stats query (%ld bytes of JSON)  p50 %8.2f ms   p99 %8.2f ms  (%d queries)\n",
	       sites_json, w50 * 1e3, w99 * 1e3, nq);
	printf("  stats --pid                      p50 %8.2f ms   p99 %8.2f ms  (%d queries)\n",
	       p50 * 1e3, p99 * 1e3, nq);
	printf("  daemon RSS                       %ld KiB before, %ld KiB with them: "
	       "%.1f KiB per process\n", rss0, rss1, (double)(rss1 - rss0) / nproc);

	daemon_usage(&rss1, &t0);
	sleep((unsigned)idle);
	daemon_usage(&rss1, &t1);
	printf("  daemon CPU while they idle       %.2f%% of one core (%ld ticks in %d s)\n",
	       100.0 * ticks_ms(t1 - t0) / 1e3 / idle, t1 - t0, idle);

	close(hold[1]);
	for (int i = 0; i < nproc; i++)
		waitpid(kids[i], NULL, 0);
	stop_daemon(qfd);

	/* 3. The scaling table. */
	printf("\nScaling: a fresh daemon per row, %d processes of SITES sites each "
	       "(named, %u a function)\n", ROW_PROCS, FAKE_SITES_PER_FN);
	printf("  registration: ms from HELLO to the REPLY of SYNC (median), daemon CPU ms per process;\n"
	       "  RSS growth in bytes per site once registered (B/site; anon: its private part,\n"
	       "  without the regions' pages), and once exited (records final);\n"
	       "  stats p50/p99 ms about every process and --pid;\n"
	       "  daemon CPU %% idle (%d s) and over 6 s after one count changed in each;\n"
	       "  exit: ms until the %d records are final, KiB a record, daemon CPU ms per record;\n"
	       "  1 count: KiB the daemon wrote (wchar) and its CPU ms, per process, over those 6 s\n",
	       idle, ROW_PROCS);
	printf("  %9s %8s %8s %7s %7s %7s %8s %8s %8s %8s %8s %8s %8s %9s %8s %9s %9s\n", "sites",
	       "reg ms", "reg cpu", "B/site", "anon", "B/s end", "all p50", "all p99", "pid p50",
	       "pid p99", "idle", "1 count", "exit ms", "KiB/rec", "exit cpu", "1c KiB", "1c cpu ms");
	for (uint32_t sites = 1000; sites <= max_sites; sites *= 10)
		if (scaling_row(argv[1], dir, sites, idle) != 0)
			return 1;

	/* 4. Many big processes, half of them exited. */
	if (big_procs) {
		printf("\nIdle at scale\n");
		if (big_idle(argv[1], dir, big_procs, big_sites, idle) != 0)
			return 1;
	}

	/* 5. faultline stats and the metrics at each load. */
stats_part:
	if (loads) {
		printf("\nfaultline stats and the metrics at scale: a fresh daemon per load (P processes\n"
		       "of S sites), one site in %u of each failed, then half of them exited;\n"
		       "p50/p99 of %d STATS queries (as faultline stats sends them) or GET /metrics\n"
		       "scrapes (a new connection each); faultline stats --prometheus: median and\n"
		       "largest wall time of %d runs.  Bytes of the answer (the JSON; the body;\n"
		       "the output); the sites it lists, or its series; the daemon's CPU ms each\n",
		       FAIL_EVERY, stats_queries, cli_runs);
		printf("  %-12s %-34s %9s %9s %11s %15s %9s\n", "load (PxS)", "what", "p50 ms",
		       "p99 ms", "bytes", "lists", "cpu ms");
	}
	for (const char *l = loads; l && *l;) {
		uint32_t sz;
		int p, r;

		parse_load(&l, &p, &sz);
		r = stats_at_scale(argv[1], cli, dir, p, sz, stats_queries, cli_runs);
		if (r < 0)
			return 1;
		if (r > 0)
			unanswered = 1;	/* and on with the next load */
	}
	{
		char cmd[256];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "bench_daemon: could not remove %s\n", dir);
	}
	return unanswered;
}
