// SPDX-License-Identifier: MIT
/*
 * userfaultfd regions (region.h), side by side:
 *
 *   bench_region [-n REPEAT] [-k FAULTS] [-p PAGES]
 *
 *  1. Guard fault: an implicit-check load past the committed limit, which
 *     faultline claims and resumes at the handler, in the default mode
 *     (UFFD_FEATURE_SIGBUS: the faulting thread takes a SIGBUS) and with
 *     FL_REGION_HELPER_THREAD (the thread waits in the userfaultfd, the
 *     helper thread forwards the fault as a SIGBUS); against the classic
 *     guard, a PROT_NONE page (mprotect) whose SIGSEGV the floor handler of
 *     jit.h resumes.  Faultline does not claim that one (its address is
 *     neither in the null area nor in a region), hence the floor.
 *     Twice: the faults as they repeat (after the first, the region's
 *     guard tail is PROT_NONE: lib/dispatch/region_fault.c), and the first
 *     fault of a guard tail, through the userfaultfd (fl_region_reset, not
 *     timed, before each), also with the floor handler for SIGBUS: the
 *     kernel's and the helper thread's part alone.
 *  2. Populate: the first touch of a page below the limit, in both modes
 *     (SIGBUS mode: faultline's handler issues UFFDIO_ZEROPAGE and the
 *     access retries; helper mode: the helper thread does), against the
 *     first touch of fresh MAP_ANONYMOUS memory.  Reads (which map the
 *     zero page in all three) and writes (which then copy it in the
 *     regions: a second fault).
 *
 * Each figure is REPEAT batches (default 15) of FAULTS faults (default
 * 1,000) or PAGES pages (default 1,000), each fault timed alone and the
 * batch's median taken; the variants are interleaved batch by batch, their
 * order rotating.  Reported: the median of the batches [min .. max], and
 * the median of the per-batch ratios.  Figures only: nothing here asserts
 * a time.  It does check where every fault went (exit 1 if not).  Exits 77
 * (skip) when userfaultfd is unavailable.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <faultline/dispatch.h>
#include <faultline/region.h>

#include "jit.h"

static int repeat = 15, faults = 1000, pages = 1000;
static int64_t *lat;
static struct jit j;
static struct sigaction fl_segv, floor_segv, fl_bus, floor_bus;
static size_t page_size;

enum { SIGBUS_MODE, HELPER_MODE, NUM_REGIONS };
static struct fl_region *regions[NUM_REGIONS];

static struct fl_stats stats(void)
{
	struct fl_stats st = { .sz = sizeof(st) };

	if (fl_stats_get(&st))
		die("fl_stats_get", -EINVAL);
	return st;
}

/* ------------------------------------------------------------------------
 * Guard faults
 */

/*
 * Whether a guard fault in a region of this mode is claimed, tried in a
 * child (where it may kill): 1 yes, 0 no (why says how the child ended).
 * Before any region exists: no helper thread is running at the fork.
 */
static int guard_works(uint32_t flags, char *why, size_t size)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		die("fork", 0);
	if (pid == 0) {
		struct fl_region_opts ro = { .sz = sizeof(ro), .flags = flags, .commit = 0 };
		struct fl_region *r;
		struct rlimit no_core = { 0, 0 };

		setrlimit(RLIMIT_CORE, &no_core);
		alarm(10);
		if (fl_region_create(1u << 20, &ro, &r))
			_exit(3);
		_exit(j.load(fl_region_base(r)) == -1 ? 0 : 4);
	}
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid", 0);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 1;
	if (WIFSIGNALED(status))
		snprintf(why, size, "killed by %s", strsignal(WTERMSIG(status)));
	else
		snprintf(why, size, "exit status %d", WEXITSTATUS(status));
	return 0;
}

/*
 * The region variants twice: with faultline's handler, and with the floor
 * handler for SIGBUS (the same fault, the kernel's and the helper
 * thread's part alone).
 */
enum {
	GUARD_SIGBUS, GUARD_HELPER, GUARD_SIGBUS_FLOOR, GUARD_HELPER_FLOOR, GUARD_MPROTECT,
	NUM_GUARDS
};
static const int *guard_addr[NUM_GUARDS];
/* Whether faultline claims a region's guard faults (probed before measuring). */
static bool works[NUM_GUARDS] = { false, false, false, false, true };

static bool floor_variant(int v)
{
	return v >= GUARD_SIGBUS_FLOOR;
}
static char why[NUM_GUARDS][64];

/* The region of guard variant v, or NULL. */
static struct fl_region *guard_region(int v)
{
	if (v == GUARD_SIGBUS || v == GUARD_SIGBUS_FLOOR)
		return regions[SIGBUS_MODE];
	if (v == GUARD_HELPER || v == GUARD_HELPER_FLOOR)
		return regions[HELPER_MODE];
	return NULL;
}

/*
 * Seconds per guard fault of variant v (the median of the batch); first:
 * each the first of its guard tail (the region reset before it).
 */
static double time_guard(int v, bool first)
{
	const int *p = guard_addr[v];
	struct fl_region *r = guard_region(v);
	uint64_t before = stats().claimed;
	long wrong = 0;

	set_action(SIGSEGV, v == GUARD_MPROTECT ? &floor_segv : &fl_segv);
	set_action(SIGBUS, floor_variant(v) ? &floor_bus : &fl_bus);
	for (int i = 0; i < faults; i++) {
		int64_t t0;

		if (first && r) {
			int err = fl_region_reset(r, fl_region_committed(r));

			if (err)
				die("fl_region_reset", err);
		}
		t0 = now_ns();

		wrong += j.load(p) != -1;
		lat[i] = now_ns() - t0;
	}
	set_action(SIGSEGV, &fl_segv);
	set_action(SIGBUS, &fl_bus);
	if (wrong || (!floor_variant(v) && stats().claimed - before != (uint64_t)faults)) {
		fprintf(stderr, "bench_region: guard faults did not resume at the handler\n");
		exit(1);
	}
	return median_ns(lat, faults);
}

static void rows_guard(bool first)
{
	static const char *names[NUM_GUARDS] = {
		"uffd, SIGBUS mode (faultline)",
		"uffd, helper thread (faultline)",
		"uffd, SIGBUS mode (floor handler)",
		"uffd, helper thread (floor handler)",
		"mprotect PROT_NONE page (floor)",
	};
	struct series s[NUM_GUARDS];
	double r[GUARD_MPROTECT], d[GUARD_MPROTECT];
	char a[64];
	void *prot_none;

	for (int v = 0; v < NUM_REGIONS; v++) {
		guard_addr[v] = (const int *)((char *)fl_region_base(regions[v]) +
					      fl_region_committed(regions[v]));
		guard_addr[v + GUARD_SIGBUS_FLOOR] = guard_addr[v];
		/* Repeated, the floor handler's would be first faults again. */
		works[v + GUARD_SIGBUS_FLOOR] = works[v] && first;
	}
	prot_none = mmap(NULL, page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
	if (prot_none == MAP_FAILED || mprotect(prot_none, page_size, PROT_NONE))
		die("mmap", 0);
	guard_addr[GUARD_MPROTECT] = prot_none;

	for (int v = 0; v < NUM_GUARDS; v++) {
		series_init(&s[v], repeat);
		if (works[v])
			time_guard(v, first);		/* warm-up */
	}
	for (int i = 0; i < repeat; i++)
		for (int k = 0; k < NUM_GUARDS; k++) {
			int v = (i + k) % NUM_GUARDS;

			if (works[v])
				s[v].v[s[v].n++] = time_guard(v, first);
		}
	/* The ratios first: printing sorts the series. */
	for (int v = 0; v < GUARD_MPROTECT; v++)
		if (works[v]) {
			r[v] = paired_ratio(&s[v], &s[GUARD_MPROTECT]);
			d[v] = paired_diff(&s[v], &s[GUARD_MPROTECT]);
		}
	printf("  %-36s %s\n", first ? "first fault of a guard tail" : "repeated faults",
	       "ns per fault");
	for (int v = 0; v < NUM_GUARDS; v++) {
		if (!first && floor_variant(v) && v != GUARD_MPROTECT)
			continue;
		if (works[v])
			printf("  %-36s %s\n", names[v], series_fmt(a, sizeof(a), &s[v], 1e9));
		else
			printf("  %-36s not measured: not claimed (a probe was %s)\n", names[v],
			       why[v]);
	}
	for (int v = 0; v < GUARD_MPROTECT; v++) {
		static const char *rn[GUARD_MPROTECT] = {
			"SIGBUS mode / mprotect", "helper thread / mprotect",
			"  its kernel part (floor handler)", "  its kernel and helper part",
		};

		if (works[v])
			printf("  ratio %-30s %9.2fx  %+7.0f ns\n", rn[v], r[v], d[v] * 1e9);
	}
	for (int v = 0; v < NUM_GUARDS; v++)
		free(s[v].v);
	munmap(prot_none, page_size);
}

/* ------------------------------------------------------------------------
 * Populating
 */

enum { POP_SIGBUS, POP_HELPER, POP_ANON, NUM_POPS };

/* Seconds per first touch of a page (median of the batch). */
static double time_populate(int v, bool write)
{
	volatile char *p;
	uint64_t before = stats().populated;
	long bad = 0;

	if (v == POP_ANON) {
		p = mmap(NULL, (size_t)pages * page_size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			die("mmap", 0);
	} else {
		int err = fl_region_reset(regions[v], fl_region_committed(regions[v]));

		if (err)
			die("fl_region_reset", err);
		p = fl_region_base(regions[v]);
	}
	for (int i = 0; i < pages; i++) {
		volatile char *at = p + (size_t)i * page_size;
		int64_t t0 = now_ns();

		if (write)
			*at = 1;
		else
			bad += *at != 0;
		lat[i] = now_ns() - t0;
	}
	if (v == POP_ANON)
		munmap((void *)p, (size_t)pages * page_size);
	if (bad || (v == POP_SIGBUS && stats().populated - before != (uint64_t)pages)) {
		fprintf(stderr, "bench_region: pages were not populated as they should\n");
		exit(1);
	}
	return median_ns(lat, pages);
}

static void rows_populate(void)
{
	static const char *names[NUM_POPS] = {
		"uffd, SIGBUS mode",
		"uffd, helper thread",
		"plain anonymous page",
	};
	struct series s[2][NUM_POPS];	/* [write][variant] */
	double r[2][2];
	char a[64], b[64];

	for (int w = 0; w < 2; w++)
		for (int v = 0; v < NUM_POPS; v++) {
			series_init(&s[w][v], repeat);
			time_populate(v, w);	/* warm-up */
		}
	for (int i = 0; i < repeat; i++)
		for (int w = 0; w < 2; w++)
			for (int k = 0; k < NUM_POPS; k++) {
				int v = (i + k) % NUM_POPS;

				s[w][v].v[s[w][v].n++] = time_populate(v, w);
			}
	for (int w = 0; w < 2; w++) {
		r[w][0] = paired_ratio(&s[w][POP_SIGBUS], &s[w][POP_ANON]);
		r[w][1] = paired_ratio(&s[w][POP_HELPER], &s[w][POP_ANON]);
	}
	printf("  %-36s %-*s   %s\n", "", SERIES_W, "read: ns per page", "write: ns per page");
	for (int v = 0; v < NUM_POPS; v++)
		printf("  %-36s %s   %s\n", names[v], series_fmt(a, sizeof(a), &s[0][v], 1e9),
		       series_fmt(b, sizeof(b), &s[1][v], 1e9));
	printf("  %-36s %9.2fx %*s %9.2fx\n", "ratio SIGBUS mode / anonymous", r[0][0],
	       SERIES_W - 8, "", r[1][0]);
	printf("  %-36s %9.2fx %*s %9.2fx\n", "ratio helper thread / anonymous", r[0][1],
	       SERIES_W - 8, "", r[1][1]);
	for (int w = 0; w < 2; w++)
		for (int v = 0; v < NUM_POPS; v++)
			free(s[w][v].v);
}

int main(int argc, char **argv)
{
	struct fl_init_opts o = { .sz = sizeof(o), .flags = FL_INIT_NO_DISCOVERY };
	struct synth_buf b;
	int opt, err, n;

	while ((opt = getopt(argc, argv, "n:k:p:")) != -1) {
		switch (opt) {
		case 'n':
			repeat = atoi(optarg);
			break;
		case 'k':
			faults = atoi(optarg);
			break;
		case 'p':
			pages = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: bench_region [-n REPEAT] [-k FAULTS] [-p PAGES]\n");
			return 2;
		}
	}
	if (repeat < 1)
		repeat = 1;
	if (faults < 1)
		faults = 1;
	if (pages < 1)
		pages = 1;
	n = faults > pages ? faults : pages;
	lat = calloc((size_t)n, sizeof(*lat));
	if (!lat)
		abort();
	setvbuf(stdout, NULL, _IOLBF, 0);
	page_size = (size_t)sysconf(_SC_PAGESIZE);

	if ((err = fl_init(&o)))
		die("fl_init", err);
	if (sigaction(SIGSEGV, NULL, &fl_segv))
		die("sigaction", 0);
	jit_make(&j, 0);
	floor_segv = floor_action(&j);
	floor_bus = floor_segv;
	if (sigaction(SIGBUS, NULL, &fl_bus))
		die("sigaction", 0);
	jit_faultmap(&b, &j, true, 0, 0);
	jit_register("bench-region", &b, j.load_pc, JIT_PAGE);
	free(b.p);

	for (int v = 0; v < NUM_REGIONS; v++)
		works[v] = guard_works(v == HELPER_MODE ? FL_REGION_HELPER_THREAD : 0, why[v],
				       sizeof(why[v]));
	for (int v = 0; v < NUM_REGIONS; v++) {
		struct fl_region_opts ro = {
			.sz = sizeof(ro),
			.flags = v == HELPER_MODE ? FL_REGION_HELPER_THREAD : 0,
			.commit = (size_t)pages * page_size,
		};

		err = fl_region_create((size_t)pages * page_size + (1u << 20), &ro, &regions[v]);
		if (err == -ENOSYS || err == -EPERM || err == -EOPNOTSUPP) {
			printf("  skipped: fl_region_create: %s\n", strerror(-err));
			return 77;
		}
		if (err)
			die("fl_region_create", err);
	}

	printf("Guard fault: an implicit-check load past the committed limit, resumed\n"
	       "at its handler.  Median of %d batches of %d faults (the median fault of\n"
	       "each) [min .. max], interleaved; ratios: median of the per-batch ratios.\n",
	       repeat, faults);
	rows_guard(false);
	rows_guard(true);

	printf("\nFirst touch of a page below the committed limit (regions) or of fresh\n"
	       "MAP_ANONYMOUS memory.  Median of %d batches of %d pages (the median page\n"
	       "of each) [min .. max], interleaved.\n", repeat, pages);
	rows_populate();

	for (int v = 0; v < NUM_REGIONS; v++)
		fl_region_destroy(regions[v]);
	return 0;
}
