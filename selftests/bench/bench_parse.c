// SPDX-License-Identifier: MIT
/*
 * Parse throughput of the format layer on the synthetic sections of
 * synth.h (1,000,000 fault map entries, 1,000,000 stack map records):
 *
 *   bench_parse [-n REPEAT]     print a table of the figures
 *   bench_parse --write DIR     write DIR/faultmap.bin and DIR/stackmap.bin
 *                               (for the whole-process comparison) and exit
 *
 * Measured, REPEAT times each (default 15), the four interleaved so that
 * noise from other processes falls on all of them alike:
 *   validate   fl_*_validate: one cursor walk, no allocation
 *   parse      fl_*_parse: table build (two walks, allocation, two sorts)
 * and then lookups in the built tables (1,000,000 PCs present in the table,
 * in a scrambled order).  Reported: the median and min/max time, and
 * throughput in MB/s (10^6 bytes of section a second) and Mentries/s.
 * Figures only: nothing here asserts a time.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <faultline/format.h>

#include "stats.h"
#include "synth.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct series {
	const char *what;
	size_t bytes;
	size_t entries;
	double *t;
};

static void report(const struct series *s, int n)
{
	double med, lo, hi;

	med = bench_median(s->t, (size_t)n);
	lo = s->t[0];
	hi = s->t[n - 1];
	printf("  %-28s %8.2f ms  [%7.2f .. %7.2f]  %8.0f MB/s  %6.1f Mentries/s\n",
	       s->what, med * 1e3, lo * 1e3, hi * 1e3, (double)s->bytes / med / 1e6,
	       (double)s->entries / med / 1e6);
}

static int write_file(const char *dir, const char *name, const struct synth_buf *b)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
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

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "write", required_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 },
	};
	struct synth_buf fm, sm;
	struct series s[4];
	struct fl_diag diag;
	const char *write_dir = NULL;
	int repeat = 15, opt, i, k;
	size_t nloc = 0, nlo = 0, j;
	struct fl_faultmap *fmt;
	struct fl_stackmap *smt;
	uint32_t *order;
	volatile uintptr_t sink = 0;
	double t0, t;
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

	synth_faultmap(&fm);
	synth_stackmap(&sm);
	if (write_dir)
		return write_file(write_dir, "faultmap.bin", &fm) ||
		       write_file(write_dir, "stackmap.bin", &sm);

	/* Both must be valid, strict too, with the entry counts expected. */
	ret = fl_faultmap_validate(fm.p, fm.len, FL_PARSE_STRICT, &diag);
	if (ret != SYNTH_ENTRIES)
		die_diag("fault map validation", ret, &diag);
	ret = fl_stackmap_validate(sm.p, sm.len, FL_PARSE_STRICT, &diag);
	if (ret != SYNTH_ENTRIES)
		die_diag("stack map validation", ret, &diag);
	if ((ret = fl_stackmap_parse(sm.p, sm.len, 0, &smt, &diag)) < 0)
		die_diag("stack map parse", ret, &diag);
	for (j = 0; j < fl_stackmap_count(smt); j++) {
		nloc += fl_stackmap_record(smt, j)->num_locations;
		nlo += fl_stackmap_record(smt, j)->num_live_outs;
	}
	fl_stackmap_free(smt);

	printf("Format layer parse throughput (median of %d runs, [min .. max])\n", repeat);
	printf("  fault map: %u functions x %u faults = %u entries, %zu bytes\n",
	       SYNTH_FUNCTIONS, SYNTH_PER_FUNCTION, SYNTH_ENTRIES, fm.len);
	printf("  stack map: v3, %u functions x %u records = %u records, %u constants,\n"
	       "             %zu locations (%.2f/record), %zu live-outs (%.2f/record), %zu bytes\n",
	       SYNTH_FUNCTIONS, SYNTH_PER_FUNCTION, SYNTH_ENTRIES, SYNTH_CONSTANTS,
	       nloc, (double)nloc / SYNTH_ENTRIES, nlo, (double)nlo / SYNTH_ENTRIES, sm.len);
	printf("\n");

	s[0] = (struct series){ "faultmap validate (cursor)", fm.len, SYNTH_ENTRIES, NULL };
	s[1] = (struct series){ "faultmap parse (table)", fm.len, SYNTH_ENTRIES, NULL };
	s[2] = (struct series){ "stackmap validate (cursor)", sm.len, SYNTH_ENTRIES, NULL };
	s[3] = (struct series){ "stackmap parse (table)", sm.len, SYNTH_ENTRIES, NULL };
	for (k = 0; k < 4; k++)
		if (!(s[k].t = calloc((size_t)repeat, sizeof(double))))
			abort();

	for (i = 0; i < repeat; i++) {
		t0 = now();
		ret = fl_faultmap_validate(fm.p, fm.len, 0, &diag);
		s[0].t[i] = now() - t0;
		if (ret != SYNTH_ENTRIES)
			die_diag("fl_faultmap_validate", ret, &diag);

		t0 = now();
		ret = fl_faultmap_parse(fm.p, fm.len, 0, &fmt, &diag);
		s[1].t[i] = now() - t0;
		if (ret < 0)
			die_diag("fl_faultmap_parse", ret, &diag);
		fl_faultmap_free(fmt);

		t0 = now();
		ret = fl_stackmap_validate(sm.p, sm.len, 0, &diag);
		s[2].t[i] = now() - t0;
		if (ret != SYNTH_ENTRIES)
			die_diag("fl_stackmap_validate", ret, &diag);

		t0 = now();
		ret = fl_stackmap_parse(sm.p, sm.len, 0, &smt, &diag);
		s[3].t[i] = now() - t0;
		if (ret < 0)
			die_diag("fl_stackmap_parse", ret, &diag);
		fl_stackmap_free(smt);
	}
	printf("  %-28s %11s  %20s  %13s  %17s\n", "", "median", "[min .. max] ms",
	       "throughput", "");
	for (k = 0; k < 4; k++)
		report(&s[k], repeat);

	/* Lookups: every entry's PC once, in scrambled order. */
	if (fl_faultmap_parse(fm.p, fm.len, 0, &fmt, &diag) < 0 ||
	    fl_stackmap_parse(sm.p, sm.len, 0, &smt, &diag) < 0)
		die_diag("parse", -1, &diag);
	order = scramble(SYNTH_ENTRIES);
	printf("\n");
	t0 = now();
	for (j = 0; j < SYNTH_ENTRIES; j++)
		sink += (uintptr_t)fl_faultmap_lookup(fmt,
			fl_faultmap_entry(fmt, order[j])->faulting_pc);
	t = now() - t0;
	printf("  %-28s %8.1f ns/lookup (%u lookups, scrambled order)\n",
	       "fl_faultmap_lookup", t * 1e9 / SYNTH_ENTRIES, SYNTH_ENTRIES);
	t0 = now();
	for (j = 0; j < SYNTH_ENTRIES; j++)
		sink += (uintptr_t)fl_stackmap_find_pc(smt,
			fl_stackmap_record(smt, order[j])->pc);
	t = now() - t0;
	printf("  %-28s %8.1f ns/lookup (%u lookups, scrambled order)\n",
	       "fl_stackmap_find_pc", t * 1e9 / SYNTH_ENTRIES, SYNTH_ENTRIES);
	(void)sink;

	fl_faultmap_free(fmt);
	fl_stackmap_free(smt);
	free(order);
	for (k = 0; k < 4; k++)
		free(s[k].t);
	free(fm.p);
	free(sm.p);
	return 0;
}
