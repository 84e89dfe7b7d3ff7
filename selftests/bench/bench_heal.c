// SPDX-License-Identifier: MIT
/*
 * bench_heal [-n ROUNDS]: the cost of healing (fl_site_heal(3)), figures
 * only.  The site: bench_heal.ll's bh_load (movq 8(%rdi), %rax, an
 * implicit null check; its null block returns -1), and bx_load, the same
 * IR compiled without -enable-implicit-null-checks (testq; je: the
 * explicit check).  Calls go through a volatile function pointer, one
 * call per loop iteration, the same loop for each form.
 *
 * 1. A storm of failing checks: ns per call with a null pointer, ROUNDS
 *    rounds (default 10) of 100,000 calls each (10^6 in all) for each
 *    form, interleaved round by round: unhealed (a SIGSEGV each, claimed
 *    by faultline), healed (the stub), explicit.  Medians of the rounds
 *    [min .. max], and the ratios of the medians: healed / explicit
 *    (goal <= 2), unhealed / healed (goal >= 100).
 * 2. The path that does not fail: ns per call with a valid pointer,
 *    ROUNDS rounds of 10^7 calls, healed, unhealed (implicit) and
 *    explicit interleaved; ratios healed / explicit (goal <= 1.10) and
 *    healed / implicit.
 * 1 and 2 again for T2 (bh_load_store: the same load, then a 7-byte
 *    store of its value, the successor T2 evicts) and for REL (bh_load's
 *    function relocated), each alone (FAULTLINE_HEAL_TACTICS), each
 *    against its own explicit build.
 * 3. Heal latency: fl_site_heal's duration (then fl_site_unheal's), the
 *    median of 51 heal/unheal cycles [min .. max], with 0, 1, 2 and 8
 *    other threads calling the site (valid pointers) in a loop.
 * 4. Heal latency under the policy (heal_after 3, in a process of its
 *    own: bench_heal --policy): from the call whose fault is the third to
 *    the site seen healed (the signal, the healer thread's wake-up, the
 *    heal), 51 cycles, with 0 and 2 other threads calling the site.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <faultline/dispatch.h>
#include <faultline/patch.h>

#include "stats.h"

int64_t bh_load(int64_t *p);
int64_t bx_load(int64_t *p);
int64_t bh_load_store(int64_t *p);
int64_t bx_load_store(int64_t *p);

static int64_t (*volatile fn_implicit)(int64_t *) = bh_load;
static int64_t (*volatile fn_explicit)(int64_t *) = bx_load;
/* The function whose site find_site looks for. */
static uint64_t site_fn = (uint64_t)(uintptr_t)bh_load;
static int64_t cell[2] = { 0, 42 };

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what, int err, const char *msg)
{
	fprintf(stderr, "bench_heal: %s: %s %s\n", what, strerror(-err), msg ? msg : "");
	exit(1);
}

static uint64_t site;

static void heal(void)
{
	struct fl_diag d = { 0 };
	int err = fl_site_heal((const void *)(uintptr_t)site, &d);

	if (err)
		die("fl_site_heal", err, d.msg);
}

static void unheal(void)
{
	struct fl_diag d = { 0 };
	int err = fl_site_unheal((const void *)(uintptr_t)site, &d);

	if (err)
		die("fl_site_unheal", err, d.msg);
}

/* ns per call of fn(p), n calls; fails if a result is wrong. */
static double per_call(int64_t (*volatile *fn)(int64_t *), int64_t *p, long n)
{
	int64_t want = p ? 42 : -1, bad = 0;
	double t0 = now();

	for (long i = 0; i < n; i++)
		bad += (*fn)(p) != want;
	if (bad)
		die("a call gave a wrong result", -EIO, NULL);
	return (now() - t0) * 1e9 / (double)n;
}

static int find_site(const struct fl_site *s, void *ctx)
{
	(void)ctx;
	if (s->faulting_pc >= site_fn && s->faulting_pc < site_fn + 16)
		site = s->faulting_pc;
	return 0;
}

static void summary(const char *what, double *v, int n, double *med)
{
	double lo, hi;

	qsort(v, (size_t)n, sizeof(*v), bench_cmp_double);
	lo = v[0];
	hi = v[n - 1];
	*med = bench_median(v, (size_t)n);
	printf("  %-34s %10.2f ns/call  [%.2f .. %.2f]\n", what, *med, lo, hi);
}

static _Atomic int stop_callers;

static void *caller(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&stop_callers, memory_order_relaxed))
		if ((*fn_implicit)(cell) != 42)
			abort();
	return NULL;
}

static bool healed_now(void)
{
	struct fl_heal_info info = { .sz = sizeof(info) };

	return fl_site_heal_info((const void *)(uintptr_t)site, &info) == 0 &&
	       info.state == FL_HEAL_HEALED;
}

/* Part 4, in a process whose policy heals a site at its third failure. */
static int policy_latency(void)
{
	FL_OPTS(fl_init_opts, o, .flags = FL_INIT_NO_AGENT, .heal_after = 3);
	int err;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if ((err = fl_init(&o)) != 0)
		die("fl_init", err, NULL);
	fl_site_for_each(find_site, NULL);
	if (!site)
		die("bh_load has no registered site", -ENOENT, NULL);
	printf("\n  4. heal latency under the policy (heal_after 3): from the call that faults "
	       "the third time to the site healed, 51 cycles:\n");
	for (int nt = 0; nt <= 2; nt += 2) {
		pthread_t th[2];
		double v[51], lo, hi;

		atomic_store(&stop_callers, 0);
		for (int i = 0; i < nt; i++)
			pthread_create(&th[i], NULL, caller, NULL);
		for (int c = 0; c < 51; c++) {
			double t0;

			/* Unhealing starts the site's count again. */
			if (healed_now())
				unheal();
			for (int k = 0; k < 2; k++)
				if ((*fn_implicit)(NULL) != -1)
					die("a null call", -EIO, "gave a wrong result");
			if (healed_now())
				die("the policy", -EIO, "healed before the third failure");
			t0 = now();
			if ((*fn_implicit)(NULL) != -1)
				die("a null call", -EIO, "gave a wrong result");
			while (!healed_now()) {
				if (now() - t0 > 10)
					die("the policy", -ETIMEDOUT, "no heal within 10 s");
			}
			v[c] = (now() - t0) * 1e6;
		}
		atomic_store(&stop_callers, 1);
		for (int i = 0; i < nt; i++)
			pthread_join(th[i], NULL);
		qsort(v, 51, sizeof(v[0]), bench_cmp_double);
		lo = v[0];
		hi = v[50];
		printf("  %d thread(s): third fault to healed %8.1f us [%.1f .. %.1f]\n", nt,
		       bench_median(v, 51), lo, hi);
	}
	return 0;
}

/* Parts 1 and 2 for the site and functions set now. */
static void paths(int rounds)
{
	struct fl_heal_info info = { .sz = sizeof(info) };
	struct fl_stats st = { .sz = sizeof(st) };
	uint64_t claimed0, failures0;

	{
		double *u = calloc((size_t)rounds, sizeof(double)), *h = calloc((size_t)rounds, sizeof(double));
		double *x = calloc((size_t)rounds, sizeof(double)), mu, mh, mx;
		long n = 100000;

		fl_stats_get(&st);
		claimed0 = st.claimed;
		fl_site_heal_info((const void *)(uintptr_t)site, &info);
		failures0 = info.healed_failures;
		for (int r = 0; r < rounds; r++) {
			u[r] = per_call(&fn_implicit, NULL, n);
			heal();
			h[r] = per_call(&fn_implicit, NULL, n);
			unheal();
			x[r] = per_call(&fn_explicit, NULL, n);
		}
		fl_stats_get(&st);
		fl_site_heal_info((const void *)(uintptr_t)site, &info);
		printf("\n  1. a storm of failing checks (null), %ld calls a round, %ld in all a form:\n",
		       n, n * rounds);
		summary("unhealed (a signal each)", u, rounds, &mu);
		summary("healed (the stub)", h, rounds, &mh);
		summary("explicit (test; je)", x, rounds, &mx);
		printf("  healed / explicit %.2fx (goal <= 2); unhealed / healed %.0fx (goal >= 100)\n",
		       mh / mx, mu / mh);
		printf("  counted: %llu claimed faults (unhealed), %llu healed failures\n",
		       (unsigned long long)(st.claimed - claimed0),
		       (unsigned long long)(info.healed_failures - failures0));
		free(u);
		free(h);
		free(x);
	}

	{
		double *h = calloc((size_t)rounds, sizeof(double)), *u = calloc((size_t)rounds, sizeof(double));
		double *x = calloc((size_t)rounds, sizeof(double)), mh, mu, mx;
		long n = 10000000;

		for (int r = 0; r < rounds; r++) {
			heal();
			h[r] = per_call(&fn_implicit, cell, n);
			unheal();
			u[r] = per_call(&fn_implicit, cell, n);
			x[r] = per_call(&fn_explicit, cell, n);
		}
		printf("\n  2. the path that does not fail (valid pointer), %ld calls a round:\n", n);
		summary("healed (jump, the stub)", h, rounds, &mh);
		summary("unhealed (implicit)", u, rounds, &mu);
		summary("explicit (test; je)", x, rounds, &mx);
		printf("  healed / explicit %.3fx (goal <= 1.10); healed / implicit %.3fx\n", mh / mx,
		       mh / mu);
		free(h);
		free(u);
		free(x);
	}
}

/* Parts 1 and 2 for the site of implicit (explicit its other build), healed by tactic alone. */
static void paths_of(const char *tactic, const char *what, int64_t (*implicit)(int64_t *),
		     int64_t (*explicit)(int64_t *), int rounds)
{
	struct fl_heal_info info = { .sz = sizeof(info) };

	setenv("FAULTLINE_HEAL_TACTICS", tactic, 1);
	fn_implicit = implicit;
	fn_explicit = explicit;
	site_fn = (uint64_t)(uintptr_t)implicit;
	site = 0;
	fl_site_for_each(find_site, NULL);
	if (!site)
		die(what, -ENOENT, "has no registered site");
	heal();
	fl_site_heal_info((const void *)(uintptr_t)site, &info);
	unheal();
	printf("\n  -- %s, %s: healed with %s\n", tactic, what, info.tactic);
	paths(rounds);
	unsetenv("FAULTLINE_HEAL_TACTICS");
	fn_implicit = bh_load;
	fn_explicit = bx_load;
}

int main(int argc, char **argv)
{
	int rounds = 10;
	struct fl_diag d = { 0 };
	struct fl_heal_info info = { .sz = sizeof(info) };
	FL_OPTS(fl_init_opts, o, .flags = FL_INIT_NO_AGENT);
	int err;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--policy") == 0)
			return policy_latency();
		if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
			rounds = atoi(argv[++i]);
	}
	if (rounds < 1)
		rounds = 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if ((err = fl_init(&o)) != 0)
		die("fl_init", err, NULL);
	if ((err = fl_patch_enable(&d)) != 0)
		die("fl_patch_enable", err, d.msg);
	fl_site_for_each(find_site, NULL);
	if (!site)
		die("bh_load has no registered site", -ENOENT, NULL);
	heal();
	fl_site_heal_info((const void *)(uintptr_t)site, &info);
	unheal();
	printf("  site: bh_load+%llu (movq 8(%%rdi), %%rax), healed with %s; %d rounds\n",
	       (unsigned long long)(site - (uint64_t)(uintptr_t)bh_load), info.tactic, rounds);

	paths(rounds);
	/* T2 and REL, each alone, each on the site it can heal. */
	paths_of("T2", "bh_load_store+4 (its 7-byte store evicted)", bh_load_store, bx_load_store,
		 rounds);
	paths_of("REL", "bh_load relocated", bh_load, bx_load, rounds);

	printf("\n  3. heal latency, 51 heal/unheal cycles, with threads calling the site:\n");
	for (int nt = 0; nt <= 8; nt = nt ? nt * 2 : 1) {
		pthread_t th[8];
		double hv[51], uv[51], mh, mu;

		if (nt == 4)
			continue;
		atomic_store(&stop_callers, 0);
		for (int i = 0; i < nt; i++)
			pthread_create(&th[i], NULL, caller, NULL);
		for (int c = 0; c < 51; c++) {
			double t0 = now(), t1;

			heal();
			t1 = now();
			unheal();
			hv[c] = (t1 - t0) * 1e6;
			uv[c] = (now() - t1) * 1e6;
		}
		atomic_store(&stop_callers, 1);
		for (int i = 0; i < nt; i++)
			pthread_join(th[i], NULL);
		mh = bench_median(hv, 51);
		mu = bench_median(uv, 51);
		printf("  %d thread(s): fl_site_heal %8.1f us [%.1f .. %.1f]; fl_site_unheal %8.1f us "
		       "[%.1f .. %.1f]\n", nt, mh, hv[0], hv[50], mu, uv[0], uv[50]);
	}
	fflush(stdout);
	execl("/proc/self/exe", argv[0], "--policy", (char *)NULL);
	die("exec of itself for part 4", -errno, NULL);
	return 1;
}
