// SPDX-License-Identifier: MIT
/*
 * The cost of dispatch, faultline vs the floor (jit.h), side by side:
 *
 *   bench_dispatch [-n REPEAT] [-k FAULTS]
 *
 *  1. ns per claimed fault (a NULL load at a registered faulting PC that
 *     resumes at its handler) with 1, 1,000, 10,000, 100,000 and 1,000,000
 *     registered sites.  The measured site is the lowest address of the lowest
 *     module, so that both binary searches of the lookup go to full depth;
 *     the other sites point into a PROT_NONE area never executed, 1,000 to
 *     a module.  Then the two handlers' own code, called directly on a
 *     made-up fault: what faultline adds, without the kernel's part.
 *  2. Two threads failing checks at once (1,000,000 sites, the same site):
 *     the process's faults per second, against one thread alone.
 *  3. An unclaimed fault (a NULL load in code nobody registered) delivered
 *     to an application handler that skips the load: installed with
 *     fl_sigaction (faultline looks the PC up, then chains), or directly
 *     with sigaction, no faultline in the way; at each number of sites of
 *     part 1 (measured right after its row, printed as a table after
 *     part 2).
 *
 * A figure is REPEAT batches (default 15) of FAULTS faults (default 5,000).
 * In 1 and 3 each fault is timed alone and a batch counts as its median
 * fault, so that a fault during which the thread was preempted (2 shared
 * cores) is one outlier; in 2 a batch is the wall time of all its faults.
 * The variants of a row are interleaved batch by batch, their order
 * alternating; the kernel's action is switched between batches with
 * libc's sigaction.  Reported: the median batch [min .. max], and the
 * median of the per-batch ratios (and differences).  Figures only: nothing
 * here asserts a time.  It does check that every fault went where it
 * should (exit 1 if not).
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <faultline/dispatch.h>

#include "dispatch/dispatch.h"		/* fl_dispatch_handler, for part 1b */
#include "jit.h"

#define MODULE_SITES 1000u
#define MAX_SITES 1000000u
#define MAX_MODULES (MAX_SITES / MODULE_SITES)
/* The area one module's never-executed sites take. */
#define MODULE_AREA ((MODULE_SITES / JIT_SITES_PER_FN) * JIT_FN_SIZE)

static int repeat = 15, faults = 5000;
static int64_t *lat;		/* the times of one batch's faults */
static struct jit j;
static struct sigaction fl_act, floor_act;
static int ids[MAX_MODULES];
static uint32_t num_sites, num_modules;

static uint64_t claimed(void)
{
	struct fl_stats st = { .sz = sizeof(st) };

	if (fl_stats_get(&st))
		die("fl_stats_get", -EINVAL);
	return st.claimed;
}

static uint32_t registered_sites(void)
{
	struct fl_stats st = { .sz = sizeof(st) };

	if (fl_stats_get(&st))
		die("fl_stats_get", -EINVAL);
	return st.sites;
}

/*
 * Registers sites until n are (n: 1, 1,000 or 1,000,000, growing): module
 * 0 holds the load, alone or with 999 others; modules 1.. hold 1,000.
 */
static void grow_sites(uint32_t n)
{
	struct synth_buf b;
	char name[32];

	if (n == 1) {
		jit_faultmap(&b, &j, true, 0, 0);
		ids[0] = jit_register("bench-0", &b, j.load_pc, JIT_PAGE);
		num_modules = 1;
		free(b.p);
	} else {
		if (num_sites == 1) {
			int err = fl_jit_unregister(ids[0]);

			if (err)
				die("fl_jit_unregister", err);
			jit_faultmap(&b, &j, true, j.area, MODULE_SITES - 1);
			ids[0] = jit_register("bench-0", &b, j.load_pc, JIT_PAGE + MODULE_AREA);
			free(b.p);
		}
		for (; num_modules < n / MODULE_SITES; num_modules++) {
			uint64_t at = j.area + (uint64_t)num_modules * MODULE_AREA;

			snprintf(name, sizeof(name), "bench-%u", num_modules);
			jit_faultmap(&b, &j, false, at, MODULE_SITES);
			ids[num_modules] = jit_register(name, &b, at, MODULE_AREA);
			free(b.p);
		}
	}
	num_sites = n;
	if (registered_sites() != n) {
		fprintf(stderr, "bench_dispatch: %u sites registered, not %u\n",
			registered_sites(), n);
		exit(1);
	}
}

/* Fails checks k times; returns how many did not land on the handler. */
static long fail_checks(int k)
{
	long wrong = 0;

	for (int i = 0; i < k; i++)
		wrong += j.load(NULL) != -1;
	return wrong;
}

/*
 * Seconds per claimed fault with act in the kernel: the median of the
 * faults of a batch, each timed alone, so that a fault during which the
 * thread was preempted (2 shared cores) counts as one outlier.
 */
static double time_claimed(const struct sigaction *act)
{
	long wrong = 0;

	set_action(SIGSEGV, act);
	for (int i = 0; i < faults; i++) {
		int64_t t0 = now_ns();

		wrong += j.load(NULL) != -1;
		lat[i] = now_ns() - t0;
	}
	if (wrong) {
		fprintf(stderr, "bench_dispatch: %ld faults did not resume at the handler\n", wrong);
		exit(1);
	}
	return median_ns(lat, faults);
}

static void row_claimed(uint32_t n)
{
	struct series fl, fl_floor;
	uint64_t before;
	double ratio, diff;
	char a[64], b[64];

	series_init(&fl, repeat);
	series_init(&fl_floor, repeat);
	before = claimed();
	for (int i = 0; i < repeat; i++) {
		if (i % 2 == 0) {
			fl.v[fl.n++] = time_claimed(&fl_act);
			fl_floor.v[fl_floor.n++] = time_claimed(&floor_act);
		} else {
			fl_floor.v[fl_floor.n++] = time_claimed(&floor_act);
			fl.v[fl.n++] = time_claimed(&fl_act);
		}
	}
	set_action(SIGSEGV, &fl_act);
	if (claimed() - before != (uint64_t)repeat * faults) {
		fprintf(stderr, "bench_dispatch: faultline claimed %llu faults, not %llu\n",
			(unsigned long long)(claimed() - before),
			(unsigned long long)repeat * faults);
		exit(1);
	}
	ratio = paired_ratio(&fl, &fl_floor);
	diff = paired_diff(&fl, &fl_floor);
	printf("  %9u   %s   %s   %6.3fx   %+6.0f\n", n, series_fmt(a, sizeof(a), &fl, 1e9),
	       series_fmt(b, sizeof(b), &fl_floor, 1e9), ratio, diff * 1e9);
	free(fl.v);
	free(fl_floor.v);
}

/*
 * Seconds per call of handler on a made-up fault at the load (SIGSEGV,
 * SEGV_MAPERR, address 0, a user read): the handler's own code, without
 * the kernel's delivery and sigreturn.
 */
static double time_handler_alone(void (*volatile handler)(int, siginfo_t *, void *))
{
	enum { CALLS = 100000 };
	siginfo_t si;
	ucontext_t uc;
	int64_t t0, t;

	memset(&si, 0, sizeof(si));
	memset(&uc, 0, sizeof(uc));
	si.si_signo = SIGSEGV;
	si.si_code = SEGV_MAPERR;
	uc.uc_mcontext.gregs[REG_ERR] = 4;	/* user mode, read, not present */
	t0 = now_ns();
	for (int i = 0; i < CALLS; i++) {
		uc.uc_mcontext.gregs[REG_RIP] = (greg_t)j.load_pc;
		handler(SIGSEGV, &si, &uc);
		if ((uint64_t)uc.uc_mcontext.gregs[REG_RIP] != j.handler_pc) {
			fprintf(stderr, "bench_dispatch: the handler did not claim the fault\n");
			exit(1);
		}
	}
	t = now_ns() - t0;
	return (double)t * 1e-9 / CALLS;
}

struct alone {
	double fl, floor, diff;
};

static struct alone row_handler_alone(void)
{
	struct series fl, fl_floor;
	struct alone r;

	series_init(&fl, repeat);
	series_init(&fl_floor, repeat);
	for (int i = 0; i < repeat; i++) {
		fl.v[fl.n++] = time_handler_alone(fl_dispatch_handler);
		fl_floor.v[fl_floor.n++] = time_handler_alone(floor_handler);
	}
	r.diff = paired_diff(&fl, &fl_floor);
	r.fl = series_median(&fl);
	r.floor = series_median(&fl_floor);
	free(fl.v);
	free(fl_floor.v);
	return r;
}

/* ------------------------------------------------------------------------
 * Two threads
 */

static struct {
	pthread_barrier_t go, done;
	int active;		/* workers that fail checks this round */
	bool spin;		/* the control: a loop, no faults */
	bool quit;
	_Atomic long wrong;
} pool;

/* About as long as k faults, with no fault: the control of part 2. */
static long spin(int k)
{
	volatile uint64_t x = 1;

	for (long i = 0; i < (long)k * 4000; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return 0;
}

static void *worker(void *arg)
{
	int id = (int)(intptr_t)arg;

	for (;;) {
		pthread_barrier_wait(&pool.go);
		if (pool.quit)
			return NULL;
		if (id < pool.active)
			atomic_fetch_add(&pool.wrong, pool.spin ? spin(faults) : fail_checks(faults));
		pthread_barrier_wait(&pool.done);
	}
}

/*
 * n workers fail checks at once (act NULL: run the control); returns the
 * faults per second of the process.  The barriers order pool's plain
 * fields between the threads.
 */
static double time_threads(const struct sigaction *act, int n)
{
	double t0, t;

	if (act)
		set_action(SIGSEGV, act);
	pool.spin = !act;
	pool.active = n;
	t0 = now();
	pthread_barrier_wait(&pool.go);
	pthread_barrier_wait(&pool.done);
	t = now() - t0;
	if (atomic_load(&pool.wrong)) {
		fprintf(stderr, "bench_dispatch: faults did not resume at the handler\n");
		exit(1);
	}
	return (double)n * faults / t;
}

static void rows_threads(void)
{
	/* [variant][threads - 1]: faultline, floor, the control */
	struct series s[3][2];
	const struct sigaction *acts[3] = { &fl_act, &floor_act, NULL };
	const char *names[2] = { "faultline", "floor" };
	double scaling[3];
	pthread_t t[2];
	char a[64], b[64];

	pthread_barrier_init(&pool.go, NULL, 3);
	pthread_barrier_init(&pool.done, NULL, 3);
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i))
			die("pthread_create", 0);
	for (int v = 0; v < 3; v++)
		for (int n = 0; n < 2; n++)
			series_init(&s[v][n], repeat);

	for (int i = 0; i < repeat; i++) {
		for (int step = 0; step < 6; step++) {
			/* Rotate the order of the six each round. */
			int x = (step + i) % 6, v = x % 3, n = x / 3;

			s[v][n].v[s[v][n].n++] = time_threads(acts[v], n + 1);
		}
	}
	set_action(SIGSEGV, &fl_act);
	pool.quit = true;
	pthread_barrier_wait(&pool.go);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);

	for (int v = 0; v < 3; v++)
		scaling[v] = paired_ratio(&s[v][1], &s[v][0]);
	printf("  %-9s   %-*s   %-*s   %s\n", "", SERIES_W, "1 thread (kfaults/s)",
	       SERIES_W, "2 threads (kfaults/s)", "scaling");
	for (int v = 0; v < 2; v++)
		printf("  %-9s   %s   %s   %6.2fx\n", names[v],
		       series_fmt(a, sizeof(a), &s[v][0], 1e-3),
		       series_fmt(b, sizeof(b), &s[v][1], 1e-3), scaling[v]);
	printf("  %-9s   %-*s   %-*s   %6.2fx\n", "control", SERIES_W,
	       "(a loop, no faults)", SERIES_W, "", scaling[2]);
	for (int v = 0; v < 3; v++)
		for (int n = 0; n < 2; n++)
			free(s[v][n].v);
}

/* ------------------------------------------------------------------------
 * Unclaimed faults
 */

static struct jit unregistered;
static volatile long app_calls;

/* A runtime's own handler: skips the faulting load. */
static void app_handler(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	(void)sig;
	(void)si;
	uc->uc_mcontext.gregs[REG_RIP] += JIT_LOAD_LEN;
	app_calls++;
}

struct unclaimed {
	double via, direct, ratio, diff;
};

/* Seconds per fault delivered to app_handler, with act in the kernel (median). */
static double time_unclaimed(const struct sigaction *act)
{
	long calls = app_calls;

	set_action(SIGSEGV, act);
	for (int i = 0; i < faults; i++) {
		int64_t t0 = now_ns();

		unregistered.load(NULL);
		lat[i] = now_ns() - t0;
	}
	if (app_calls - calls != faults) {
		fprintf(stderr, "bench_dispatch: the application's handler ran %ld times, not %d\n",
			app_calls - calls, faults);
		exit(1);
	}
	return median_ns(lat, faults);
}

static struct unclaimed row_unclaimed(void)
{
	struct sigaction app, dfl;
	struct series via, direct;
	struct unclaimed u;

	memset(&app, 0, sizeof(app));
	app.sa_sigaction = app_handler;
	app.sa_flags = SA_SIGINFO;
	sigemptyset(&app.sa_mask);
	/*
	 * Recorded as the chain; the kernel keeps faultline's handler, now
	 * with app's mask and flags: fl_act is that.
	 */
	if (fl_sigaction(SIGSEGV, &app, NULL))
		die("fl_sigaction", 0);
	if (sigaction(SIGSEGV, NULL, &fl_act))
		die("sigaction", 0);
	if (!unregistered.base)
		jit_make(&unregistered, 0);
	time_unclaimed(&fl_act);		/* warm-up */
	time_unclaimed(&app);
	series_init(&via, repeat);
	series_init(&direct, repeat);
	for (int i = 0; i < repeat; i++) {
		if (i % 2 == 0) {
			via.v[via.n++] = time_unclaimed(&fl_act);
			direct.v[direct.n++] = time_unclaimed(&app);
		} else {
			direct.v[direct.n++] = time_unclaimed(&app);
			via.v[via.n++] = time_unclaimed(&fl_act);
		}
	}
	set_action(SIGSEGV, &fl_act);
	u.ratio = paired_ratio(&via, &direct);
	u.diff = paired_diff(&via, &direct);
	u.via = series_median(&via);
	u.direct = series_median(&direct);
	free(via.v);
	free(direct.v);
	/* The chain as before (SIG_DFL: the claimed rows' mirror, SA_NODEFER). */
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	if (fl_sigaction(SIGSEGV, &dfl, NULL) || sigaction(SIGSEGV, NULL, &fl_act))
		die("fl_sigaction", 0);
	return u;
}

int main(int argc, char **argv)
{
	static const uint32_t sizes[] = { 1, 1000, 10000, 100000, MAX_SITES };
	struct fl_init_opts o = {
		.sz = sizeof(o),
		.flags = FL_INIT_NO_DISCOVERY,
		.max_sites = 2 * MAX_SITES,
	};
	struct alone alone[sizeof(sizes) / sizeof(sizes[0])];
	struct unclaimed unclaimed[sizeof(sizes) / sizeof(sizes[0])];
	double t0, reg_ms = 0;
	int opt, err;

	while ((opt = getopt(argc, argv, "n:k:")) != -1) {
		switch (opt) {
		case 'n':
			repeat = atoi(optarg);
			break;
		case 'k':
			faults = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: bench_dispatch [-n REPEAT] [-k FAULTS]\n");
			return 2;
		}
	}
	if (repeat < 1)
		repeat = 1;
	if (faults < 1)
		faults = 1;
	lat = calloc((size_t)faults, sizeof(*lat));
	if (!lat)
		abort();
	setvbuf(stdout, NULL, _IOLBF, 0);

	if ((err = fl_init(&o)))
		die("fl_init", err);
	if (sigaction(SIGSEGV, NULL, &fl_act))
		die("sigaction", 0);
	jit_make(&j, (size_t)MAX_MODULES * MODULE_AREA);
	floor_act = floor_action(&j);

	printf("Claimed fault: ns per fault, faultline vs the floor (a handler that only\n"
	       "sets RIP to the handler PC when RIP is the faulting PC).  Median of %d\n"
	       "batches of %d faults [min .. max], interleaved; ratio: median of the\n"
	       "per-batch ratios.  Goal at 1,000,000 sites: <= 1.05x.\n",
	       repeat, faults);
	printf("  %9s   %-*s   %-*s   %-7s   %s\n", "sites", SERIES_W, "faultline (ns)",
	       SERIES_W, "floor (ns)", "ratio", "+ns");
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		t0 = now();
		grow_sites(sizes[i]);
		if (sizes[i] == MAX_SITES)
			reg_ms = (now() - t0) * 1e3;
		/* Warm up: page tables, caches, the lazy binding of sigaction. */
		time_claimed(&floor_act);
		time_claimed(&fl_act);
		row_claimed(sizes[i]);
		alone[i] = row_handler_alone();
		unclaimed[i] = row_unclaimed();
	}
	printf("  (registering the last %u modules of %u sites each took %.0f ms)\n",
	       MAX_MODULES - 1, MODULE_SITES, reg_ms);

	printf("\nThe handlers' own code, called directly on a made-up fault at the load\n"
	       "(no kernel delivery, no sigreturn; warm caches): ns per call.\n");
	printf("  %9s   %10s   %10s   %s\n", "sites", "faultline", "floor", "+ns");
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		printf("  %9u   %10.1f   %10.1f   %+5.1f\n", sizes[i], alone[i].fl * 1e9,
		       alone[i].floor * 1e9, alone[i].diff * 1e9);

	printf("\nTwo threads failing checks at once, %u sites, the same site.\n"
	       "Faults per second of the process (wall time); scaling: 2 threads /\n"
	       "1 thread, the median of the per-round ratios (2.00x is perfect).  The\n"
	       "control, a loop without faults in the same rounds, shows how much the\n"
	       "cores (shared with other processes) let two threads run at once.\n",
	       MAX_SITES);
	rows_threads();

	printf("\nUnclaimed fault (a NULL load in unregistered code) delivered to an\n"
	       "application handler that skips the load (SA_SIGINFO, no SA_NODEFER):\n"
	       "through faultline (recorded with fl_sigaction) vs installed directly\n"
	       "with sigaction.  Median of %d batches of %d faults, interleaved; ratio:\n"
	       "median of the per-batch ratios.  Goal: <= 1.02x.\n", repeat, faults);
	printf("  %9s   %14s   %14s   %-7s   %s\n", "sites", "faultline (ns)", "direct (ns)",
	       "ratio", "+ns");
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		printf("  %9u   %14.1f   %14.1f   %6.3fx   %+6.0f\n", sizes[i],
		       unclaimed[i].via * 1e9, unclaimed[i].direct * 1e9, unclaimed[i].ratio,
		       unclaimed[i].diff * 1e9);
	return 0;
}
