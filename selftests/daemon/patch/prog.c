// SPDX-License-Identifier: MIT
/*
 * The process that faultline patch and faultline invalidate change
 * (run.sh): patch point 7 and stack map record 9 (points.ll).
 *
 *   patch-prog MODE [THREADS]
 *
 * MODE: "flag": fl_init with FL_INIT_ALLOW_PATCH; "env": fl_init without
 * it (FAULTLINE_ALLOW_PATCH decides).  Built without faultline
 * (-DNO_FAULTLINE: patch-prog-shim), MODE is ignored: the preload shim
 * registers the process.  THREADS busy threads call pp_value in a loop.
 * Prints "ready PID TARGET" (TARGET: an address for faultline invalidate
 * --target), then for each line "call" on stdin "value N" (what pp_value
 * returns now), and for "local N" (with faultline) the latency of N
 * fl_patchpoint_write calls of patch point 7, alternating the two
 * contents selftests/bench/remote_patch.sh asks of faultlined: "local
 * median US p90 US" (the same change, made in the process: the bench's
 * floor), and for "local-thread N" the same made by another thread while
 * the main one waits in the kernel (as it does while faultlined's
 * requests run); exits 0 at EOF.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef NO_FAULTLINE
#include <faultline/dispatch.h>
#include <faultline/patch.h>
#include <faultline/points.h>
#endif

long pp_value(void);
long sm_fn(long a);
void deopt_entry(void);

static volatile long sink;

/* Where an invalidated record's call goes: it never runs in the tests. */
__attribute__((noinline)) void deopt_entry(void)
{
	abort();
}

#ifndef NO_FAULTLINE
static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* "local N": n writes of patch point 7 from this thread, timed one by one. */
static void local_writes(int n)
{
	static const unsigned char code[2][7] = {
		{ 0x48, 0xc7, 0xc0, 0x2a, 0, 0, 0 },	/* mov $42, %rax */
		{ 0x48, 0xc7, 0xc0, 0x07, 0, 0, 0 },	/* mov $7, %rax */
	};
	double *lat = n > 0 ? calloc((size_t)n, sizeof(*lat)) : NULL;
	struct fl_diag d = { 0 };
	int ok = 0;

	if (fl_patch_enable(&d) != 0) {
		printf("local failed: %s\n", d.msg);
		free(lat);
		return;
	}
	for (int i = 0; lat && i < n; i++) {
		double t0 = now_us();

		if (fl_patchpoint_write(7, NULL, code[i & 1], sizeof(code[0]), NULL, &d) != 0) {
			printf("local failed: %s\n", d.msg);
			free(lat);
			return;
		}
		lat[ok++] = now_us() - t0;
	}
	if (!ok) {
		printf("local failed: no runs\n");
		free(lat);
		return;
	}
	qsort(lat, (size_t)ok, sizeof(*lat), cmp_double);
	printf("local median %.1f p90 %.1f\n", lat[ok / 2], lat[ok * 9 / 10]);
	free(lat);
}

static void *local_thread(void *arg)
{
	local_writes((int)(intptr_t)arg);
	return NULL;
}

/*
 * "local-thread N": the same from another thread while this one waits in
 * the kernel, as it does while faultlined's requests run on fl-requests:
 * the same change, with the same threads where they are then.
 */
static void local_writes_from_a_thread(int n)
{
	pthread_t t;

	if (pthread_create(&t, NULL, local_thread, (void *)(intptr_t)n) != 0) {
		printf("local failed: pthread_create\n");
		return;
	}
	pthread_join(t, NULL);
}
#endif

static void *busy(void *arg)
{
	(void)arg;
	for (;;)
		sink += pp_value();
	return NULL;
}

int main(int argc, char **argv)
{
	char line[64];
	int threads = argc > 2 ? atoi(argv[2]) : 0;

#ifndef NO_FAULTLINE
	struct fl_init_opts o = { .sz = sizeof(o) };
	int err;

	if (argc < 2) {
		fprintf(stderr, "usage: patch-prog flag|env [THREADS]\n");
		return 2;
	}
	if (!strcmp(argv[1], "flag"))
		o.flags = FL_INIT_ALLOW_PATCH;
	err = fl_init(&o);
	if (err) {
		fprintf(stderr, "patch-prog: fl_init: %s\n", strerror(-err));
		return 1;
	}
	/* The shadow holds sm_fn's own last instructions: not derivable from nops. */
	err = fl_stackmap_declare(9, NULL, 16, NULL);
	if (err) {
		fprintf(stderr, "patch-prog: fl_stackmap_declare: %s\n", strerror(-err));
		return 1;
	}
#endif
	sink = sm_fn(1);
	for (int i = 0; i < threads; i++) {
		pthread_t t;

		if (pthread_create(&t, NULL, busy, NULL) != 0) {
			perror("patch-prog: pthread_create");
			return 1;
		}
	}
	printf("ready %d %p\n", (int)getpid(), (void *)deopt_entry);
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		if (!strcmp(line, "call\n"))
			printf("value %ld\n", pp_value());
#ifndef NO_FAULTLINE
		else if (!strncmp(line, "local ", 6))
			local_writes(atoi(line + 6));
		else if (!strncmp(line, "local-thread ", 13))
			local_writes_from_a_thread(atoi(line + 13));
#endif
		fflush(stdout);
	}
	return 0;
}
