// SPDX-License-Identifier: MIT
/*
 * A deopt handler may leave by longjmp instead of returning (a runtime
 * whose resumed code throws does): 100,000 deoptimizations of a record
 * with 70 deopt values (more than fit on the stack: lib/deopt/values.c
 * maps their array), each left by longjmp, keep the process's RSS flat;
 * so do 10,000 whose handler deoptimizes again and leaves the inner one by
 * longjmp, then the outer, and the outer's values are intact after the
 * inner one.  Every deoptimization's values are as the record says.
 *   deopt_left_by_longjmp_keeps_memory_flat [ROUNDS]
 */
#include <setjmp.h>
#include <stdlib.h>

#include "common.h"

#define NUM_VALUES 70
/* RSS may grow by this much: a page leaked per deoptimization is 400 MB. */
#define BOUND_KIB (32 * 1024)

int64_t many(int64_t x, bool go);

static jmp_buf out;
static jmp_buf inner_out;
static int64_t want_x;
static int depth;

static long rss_kib(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f || fscanf(f, "%ld %ld", &pages, &rss) != 2)
		t_fail("cannot read /proc/self/statm");
	fclose(f);
	return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

/* Fails unless st holds the 70 values of many(x, true). */
static void check_values(const struct fl_deopt_state *st, int64_t x)
{
	if (st->num_values != NUM_VALUES)
		t_fail("%u deopt values, not %d", st->num_values, NUM_VALUES);
	for (uint32_t i = 0; i < NUM_VALUES; i++)
		if ((int64_t)st->values[i].value != x + 7 * (int64_t)i + 1)
			t_fail("value %u is %lld, not %lld", i, (long long)st->values[i].value,
			       (long long)(x + 7 * (int64_t)i + 1));
}

static void handler(const struct fl_deopt_state *st, struct fl_deopt_return *ret, void *ctx)
{
	int64_t x = want_x;

	(void)ret;
	check_values(st, x);
	if (ctx && depth == 0) {
		/* Deoptimize again from here; that one leaves by longjmp back here. */
		depth = 1;
		if (setjmp(inner_out) == 0) {
			want_x = x + 1000;
			many(want_x, true);
			t_fail("the inner deoptimization returned");
		}
		depth = 0;
		check_values(st, x);
	} else if (ctx) {
		longjmp(inner_out, 1);
	}
	longjmp(out, 1);
}

/* Deoptimizes rounds times, each left by longjmp. */
static void run(long rounds, void *nested)
{
	fl_deopt_set_handler(handler, nested);
	for (volatile long i = 0; i < rounds; i++) {
		if (setjmp(out) == 0) {
			want_x = i;
			many(i, true);
			t_fail("deoptimization %ld returned", (long)i);
		}
	}
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 100000, before, after, nested;

	t_start("deopt_left_by_longjmp_keeps_memory_flat");
	t_check(many(5, false) == 5, "many(5, false) returns 5");
	run(1000, NULL);
	before = rss_kib();
	run(rounds, NULL);
	after = rss_kib();
	printf("  %ld deoptimizations left by longjmp: RSS %ld KiB before, %ld KiB after\n",
	       rounds, before, after);
	t_check(after - before < BOUND_KIB, "RSS grew by %ld KiB over %ld deoptimizations "
		"(at most %d allowed)", after - before, rounds, BOUND_KIB);
	run(rounds / 10, (void *)1);
	nested = rss_kib();
	printf("  %ld more, each deoptimizing again in its handler: RSS %ld KiB\n",
	       rounds / 10, nested);
	t_check(nested - before < BOUND_KIB, "RSS grew by %ld KiB with nested deoptimizations",
		nested - before);
	printf("PASS %s\n", t_name);
	return 0;
}
