// SPDX-License-Identifier: MIT
/*
 * Whole-process timing of two commands side by side:
 *
 *   bench_exec [-n RUNS] -- NAME_A CMD_A [ARG...] -- NAME_B CMD_B [ARG...]
 *
 * Runs A once and B once untimed (warm-up: page cache, dynamic loader), then
 * A, B, A, B, ... RUNS times each, with stdout on /dev/null.  Interleaving
 * makes the load of a shared, noisy machine fall on both alike.  Prints for
 * each the median and min/max wall-clock time, the median CPU time (user +
 * sys, from wait4) and the largest peak RSS, then the ratios A/B of the
 * medians and their differences A - B.  Exits 1 if a run fails (non-zero status or a signal).
 * A measuring tool only: it asserts nothing about the times.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "stats.h"

struct cmd {
	const char *name;
	char **argv;
	double *wall, *cpu;
	long max_rss_kb;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double tv(struct timeval t)
{
	return (double)t.tv_sec + (double)t.tv_usec * 1e-6;
}

/* Runs c once; returns 0 and the times, or -1 if it failed. */
static int run(struct cmd *c, double *wall, double *cpu)
{
	struct rusage ru;
	double t0;
	pid_t pid;
	int status;

	t0 = now();
	pid = fork();
	if (pid < 0) {
		perror("bench_exec: fork");
		return -1;
	}
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0)
			_exit(127);
		execvp(c->argv[0], c->argv);
		fprintf(stderr, "bench_exec: %s: %s\n", c->argv[0], strerror(errno));
		_exit(127);
	}
	while (wait4(pid, &status, 0, &ru) < 0)
		if (errno != EINTR) {
			perror("bench_exec: wait4");
			return -1;
		}
	*wall = now() - t0;
	*cpu = tv(ru.ru_utime) + tv(ru.ru_stime);
	if (ru.ru_maxrss > c->max_rss_kb)
		c->max_rss_kb = ru.ru_maxrss;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "bench_exec: %s failed (status 0x%x)\n", c->name, status);
		return -1;
	}
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: bench_exec [-n RUNS] -- NAME_A CMD_A [ARG...] "
		"-- NAME_B CMD_B [ARG...]\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct cmd c[2];
	double med_wall[2], med_cpu[2], w, u;
	int runs = 7, i, k, a;

	memset(c, 0, sizeof(c));
	a = 1;
	if (a + 1 < argc && !strcmp(argv[a], "-n")) {
		runs = atoi(argv[a + 1]);
		a += 2;
	}
	if (runs < 1)
		return usage();
	/*
	 * Split the two "-- NAME CMD..." groups: each separator becomes the NULL
	 * that ends the argv before it (argv[argc] ends the last).
	 */
	for (k = 0; k < 2; k++) {
		if (a >= argc || strcmp(argv[a], "--") || a + 2 >= argc)
			return usage();
		argv[a] = NULL;
		c[k].name = argv[a + 1];
		c[k].argv = &argv[a + 2];
		for (a += 2; a < argc && strcmp(argv[a], "--"); a++)
			;
		if (argv + a == c[k].argv)
			return usage();	/* NAME without a command */
		if (k == 1 && a != argc)
			return usage();
	}
	for (k = 0; k < 2; k++) {
		c[k].wall = calloc((size_t)runs, sizeof(double));
		c[k].cpu = calloc((size_t)runs, sizeof(double));
		if (!c[k].wall || !c[k].cpu)
			return 1;
	}
	for (k = 0; k < 2; k++)
		if (run(&c[k], &w, &u) < 0)
			return 1;
	for (i = 0; i < runs; i++)
		for (k = 0; k < 2; k++)
			if (run(&c[k], &c[k].wall[i], &c[k].cpu[i]) < 0)
				return 1;

	for (k = 0; k < 2; k++) {
		med_wall[k] = bench_median(c[k].wall, (size_t)runs);
		med_cpu[k] = bench_median(c[k].cpu, (size_t)runs);
		printf("  %-36s wall %8.1f ms [%8.1f .. %8.1f]  cpu %8.1f ms  maxrss %7.1f MiB\n",
		       c[k].name, med_wall[k] * 1e3, c[k].wall[0] * 1e3,
		       c[k].wall[runs - 1] * 1e3, med_cpu[k] * 1e3, c[k].max_rss_kb / 1024.0);
	}
	printf("  %-36s wall %.2fx, cpu %.2fx  (%s / %s, median of %d interleaved runs)\n",
	       "ratio", med_wall[0] / med_wall[1], med_cpu[0] / med_cpu[1], c[0].name,
	       c[1].name, runs);
	printf("  %-36s wall %+.2f ms, cpu %+.2f ms  (%s - %s, the medians)\n", "difference",
	       (med_wall[0] - med_wall[1]) * 1e3, (med_cpu[0] - med_cpu[1]) * 1e3, c[0].name,
	       c[1].name);
	return 0;
}
