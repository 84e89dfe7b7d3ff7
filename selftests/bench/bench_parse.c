// SPDX-License-Identifier: MIT
/*
 * The format layer at scale, on the synthetic sections of synth.h at
 * 1,000, 10,000, 100,000 and 1,000,000 entries (fault map entries, stack
 * map records):
 *
 *   bench_parse [-n REPEAT]     print the figures and the scaling table
 *   bench_parse --write DIR     write DIR/faultmap.N.bin and
 *                               DIR/stackmap.N.bin for each size N (for the
 *                               whole-process comparison) and exit
 *
 * Measured at each size, REPEAT times each (default 15), the four
 * interleaved so that noise from other processes falls on all of them
 * alike, in CPU time of the thread (user and system: page faults count),
 * since on a shared machine wall time measures the other processes too:
 *   validate   fl_*_validate: one cursor walk, no allocation
 *   parse      fl_*_parse: the table build
 * and then lookups in the built tables: the PC (or ID) of every entry once,
 * in a scrambled order, from an array of them made beforehand (so that the
 * figure is the lookup's and not the fetch of the entry it looks for), in
 * rounds of at least 200,000 lookups, REPEAT rounds.  Reported: at 1M the
 * median and min/max time, throughput in MB/s (10^6 bytes of section a
 * second) and Mentries/s; then the scaling table: build rates (MB/s) and
 * lookup times (ns) at each size, which stay flat (or grow as log n for
 * lookups) when nothing is worse than linear.
 * Figures only: nothing here asserts a time.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <faultline/format.h>

#include "stats.h"
#include "synth.h"

#define SIZES 4
static const uint32_t sizes[SIZES] = { 1000, 10000, 100000, 1000000 };

#define MIN_LOOKUPS 200000u

enum {
	FM_VALIDATE, FM_PARSE, SM_VALIDATE, SM_PARSE,
	FM_LOOKUP, SM_FIND_PC, SM_FIND_ID,
	SERIES,
};

static const char *const names[SERIES] = {
	"faultmap validate (cursor)", "faultmap parse (table)",
	"stackmap validate (cursor)", "stackmap parse (table)",
	"fl_faultmap_lookup", "fl_stackmap_find_pc", "fl_stackmap_find_id",
};

/* One size's sections and its medians. */
struct size_run {
	uint32_t entries;
	struct synth_buf fm, sm;
	double med[SERIES];	/* seconds (build), ns per lookup (lookups) */
	double min[SERIES], max[SERIES];
};

static int write_file(const char *dir, const char *name, uint32_t n,
		      const struct synth_buf *b)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.%u.bin", dir, name, n);
	f = fopen(path, "wb");
	if (!f || fwrite(b->p, 1, b->len, f) != b->len || fclose(f) != 0) {
		fprintf(stderr, "bench_parse: %s: %s\n", path, strerror(errno));
		return 1;
	}
	return 0;
}

static void die_diag(const char *what, long ret, const struct fl_diag *d)
{
	fprintf(stderr, "bench_parse: %s failed (%ld): %s\n", what, ret, d->msg);
	exit(1);
}

/* A permutation of 0..n-1 (xorshift-driven Fisher-Yates), for lookups. */
static uint32_t *scramble(uint32_t n)
{
	uint32_t *p = malloc(n * sizeof(*p)), i;
	uint64_t x = 0x9e3779b97f4a7c15ull;

	if (!p)
		abort();
	for (i = 0; i < n; i++)
		p[i] = i;
	for (i = n - 1; i > 0; i--) {
		uint32_t j, t;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		j = (uint32_t)(x % (i + 1));
		t = p[i];
		p[i] = p[j];
		p[j] = t;
	}
	return p;
}

static void summarize(struct size_run *s, int k, double *t, int n)
{
	s->med[k] = bench_median(t, (size_t)n);
	s->min[k] = t[0];
	s->max[k] = t[n - 1];
}

/* Validation and table builds, interleaved. */
static void measure_builds(struct size_run *s, int repeat)
{
	double *t[4];
	struct fl_faultmap *fmt;
	struct fl_stackmap *smt;
	struct fl_diag diag;
	double t0;
	long ret;
	int i, k;

	for (k = 0; k < 4; k++)
		if (!(t[k] = calloc((size_t)repeat, sizeof(double))))
			abort();
	for (i = 0; i < repeat; i++) {
		t0 = bench_thread_cpu_now();
		ret = fl_faultmap_validate(s->fm.p, s->fm.len, 0, &diag);
		t[FM_VALIDATE][i] = bench_thread_cpu_now() - t0;
		if (ret != s->entries)
			die_diag("fl_faultmap_validate", ret, &diag);

		t0 = bench_thread_cpu_now();
		ret = fl_faultmap_parse(s->fm.p, s->fm.len, 0, &fmt, &diag);
		t[FM_PARSE][i] = bench_thread_cpu_now() - t0;
		if (ret < 0)
			die_diag("fl_faultmap_parse", ret, &diag);
		fl_faultmap_free(fmt);

		t0 = bench_thread_cpu_now();
		ret = fl_stackmap_validate(s->sm.p, s->sm.len, 0, &diag);
		t[SM_VALIDATE][i] = bench_thread_cpu_now() - t0;
		if (ret != s->entries)
			die_diag("fl_stackmap_validate", ret, &diag);

		t0 = bench_thread_cpu_now();
		ret = fl_stackmap_parse(s->sm.p, s->sm.len, 0, &smt, &diag);
		t[SM_PARSE][i] = bench_thread_cpu_now() - t0;
		if (ret < 0)
			die_diag("fl_stackmap_parse", ret, &diag);
		fl_stackmap_free(smt);
	}
	for (k = 0; k < 4; k++) {
		summarize(s, k, t[k], repeat);
		free(t[k]);
	}
}

/* Lookups of every entry's key once a round, scrambled; rounds of MIN_LOOKUPS or more. */
static void measure_lookups(struct size_run *s, int repeat)
{
	uint32_t n = s->entries, *order = scramble(n);
	uint64_t *fm_pc = malloc(n * sizeof(*fm_pc)), *sm_pc = malloc(n * sizeof(*sm_pc));
	uint64_t *sm_id = malloc(n * sizeof(*sm_id));
	uint32_t passes = (MIN_LOOKUPS + n - 1) / n, j, p;
	const struct fl_stackmap_record *const *ids;
	volatile uintptr_t sink = 0;
	double *t[3], t0;
	struct fl_faultmap *fmt;
	struct fl_stackmap *smt;
	struct fl_diag diag;
	int i, k;

	if (!fm_pc || !sm_pc || !sm_id)
		abort();
	if (fl_faultmap_parse(s->fm.p, s->fm.len, 0, &fmt, &diag) < 0 ||
	    fl_stackmap_parse(s->sm.p, s->sm.len, 0, &smt, &diag) < 0)
		die_diag("parse", -1, &diag);
	for (j = 0; j < n; j++) {
		fm_pc[j] = fl_faultmap_entry(fmt, order[j])->faulting_pc;
		sm_pc[j] = fl_stackmap_record(smt, order[j])->pc;
		sm_id[j] = fl_stackmap_record(smt, order[j])->id;
	}
	for (k = 0; k < 3; k++)
		if (!(t[k] = calloc((size_t)repeat, sizeof(double))))
			abort();
	for (i = 0; i < repeat; i++) {
		t0 = bench_thread_cpu_now();
		for (p = 0; p < passes; p++)
			for (j = 0; j < n; j++)
				sink += (uintptr_t)fl_faultmap_lookup(fmt, fm_pc[j]);
		t[0][i] = (bench_thread_cpu_now() - t0) * 1e9 / ((double)passes * n);

		t0 = bench_thread_cpu_now();
		for (p = 0; p < passes; p++)
			for (j = 0; j < n; j++)
				sink += (uintptr_t)fl_stackmap_find_pc(smt, sm_pc[j]);
		t[1][i] = (bench_thread_cpu_now() - t0) * 1e9 / ((double)passes * n);

		t0 = bench_thread_cpu_now();
		for (p = 0; p < passes; p++)
			for (j = 0; j < n; j++)
				sink += fl_stackmap_find_id(smt, sm_id[j], &ids);
		t[2][i] = (bench_thread_cpu_now() - t0) * 1e9 / ((double)passes * n);
	}
	(void)sink;
	for (k = 0; k < 3; k++) {
		summarize(s, FM_LOOKUP + k, t[k], repeat);
		free(t[k]);
	}
	fl_faultmap_free(fmt);
	fl_stackmap_free(smt);
	free(fm_pc);
	free(sm_pc);
	free(sm_id);
	free(order);
}

static void print_details(const struct size_run *s)
{
	struct fl_stackmap *smt;
	struct fl_diag diag;
	size_t nloc = 0, nlo = 0, j;
	long ret;
	int k;

	if ((ret = fl_stackmap_parse(s->sm.p, s->sm.len, 0, &smt, &diag)) < 0)
		die_diag("stack map parse", ret, &diag);
	for (j = 0; j < fl_stackmap_count(smt); j++) {
		nloc += fl_stackmap_record(smt, j)->num_locations;
		nlo += fl_stackmap_record(smt, j)->num_live_outs;
	}
	fl_stackmap_free(smt);

	printf("  fault map: %u functions x %u faults = %u entries, %zu bytes\n",
	       s->entries / SYNTH_PER_FUNCTION, SYNTH_PER_FUNCTION, s->entries, s->fm.len);
	printf("  stack map: v3, %u functions x %u records = %u records, %u constants,\n"
	       "             %zu locations (%.2f/record), %zu live-outs (%.2f/record), %zu bytes\n",
	       s->entries / SYNTH_PER_FUNCTION, SYNTH_PER_FUNCTION, s->entries,
	       SYNTH_CONSTANTS, nloc, (double)nloc / s->entries, nlo,
	       (double)nlo / s->entries, s->sm.len);
	printf("\n  %-28s %11s  %20s  %13s  %17s\n", "", "median", "[min .. max] ms",
	       "throughput", "");
	for (k = FM_VALIDATE; k <= SM_PARSE; k++) {
		size_t bytes = k < SM_VALIDATE ? s->fm.len : s->sm.len;

		printf("  %-28s %8.2f ms  [%7.2f .. %7.2f]  %8.0f MB/s  %6.1f Mentries/s\n",
		       names[k], s->med[k] * 1e3, s->min[k] * 1e3, s->max[k] * 1e3,
		       (double)bytes / s->med[k] / 1e6, (double)s->entries / s->med[k] / 1e6);
	}
	printf("\n");
	for (k = FM_LOOKUP; k < SERIES; k++)
		printf("  %-28s %8.1f ns/lookup  [%6.1f .. %6.1f]  (every entry's key once a "
		       "round, scrambled)\n", names[k], s->med[k], s->min[k], s->max[k]);
}

static void print_scaling(const struct size_run *runs)
{
	int k, z;

	printf("\n  Scaling: build rate in MB/s of section, lookups in ns (medians)\n");
	printf("  %-28s", "entries");
	for (z = 0; z < SIZES; z++)
		printf(" %10u", runs[z].entries);
	printf("\n");
	for (k = 0; k < SERIES; k++) {
		printf("  %-28s", names[k]);
		for (z = 0; z < SIZES; z++) {
			const struct size_run *s = &runs[z];
			size_t bytes = k < SM_VALIDATE ? s->fm.len : s->sm.len;

			if (k <= SM_PARSE)
				printf(" %10.0f", (double)bytes / s->med[k] / 1e6);
			else
				printf(" %10.1f", s->med[k]);
		}
		printf(k <= SM_PARSE ? "  MB/s\n" : "  ns\n");
	}
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "write", required_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 },
	};
	struct size_run runs[SIZES];
	struct fl_diag diag;
	const char *write_dir = NULL;
	int repeat = 15, opt, z;
	long ret;

	while ((opt = getopt_long(argc, argv, "n:", options, NULL)) != -1) {
		switch (opt) {
		case 'n':
			repeat = atoi(optarg);
			break;
		case 'w':
			write_dir = optarg;
			break;
		default:
			fprintf(stderr, "usage: bench_parse [-n REPEAT] | --write DIR\n");
			return 2;
		}
	}
	if (repeat < 1)
		repeat = 1;

	memset(runs, 0, sizeof(runs));
	for (z = 0; z < SIZES; z++) {
		struct size_run *s = &runs[z];

		s->entries = sizes[z];
		synth_faultmap(&s->fm, sizes[z] / SYNTH_PER_FUNCTION);
		synth_stackmap(&s->sm, sizes[z] / SYNTH_PER_FUNCTION);
		if (write_dir) {
			if (write_file(write_dir, "faultmap", sizes[z], &s->fm) ||
			    write_file(write_dir, "stackmap", sizes[z], &s->sm))
				return 1;
			continue;
		}
		/* Both must be valid, strict too, with the entry counts expected. */
		ret = fl_faultmap_validate(s->fm.p, s->fm.len, FL_PARSE_STRICT, &diag);
		if (ret != s->entries)
			die_diag("fault map validation", ret, &diag);
		ret = fl_stackmap_validate(s->sm.p, s->sm.len, FL_PARSE_STRICT, &diag);
		if (ret != s->entries)
			die_diag("stack map validation", ret, &diag);
	}
	if (write_dir)
		return 0;

	for (z = 0; z < SIZES; z++) {
		measure_builds(&runs[z], repeat);
		measure_lookups(&runs[z], repeat);
	}
	printf("Format layer at %u entries (median of %d runs, [min .. max])\n",
	       runs[SIZES - 1].entries, repeat);
	print_details(&runs[SIZES - 1]);
	print_scaling(runs);
	for (z = 0; z < SIZES; z++) {
		free(runs[z].fm.p);
		free(runs[z].sm.p);
	}
	return 0;
}
