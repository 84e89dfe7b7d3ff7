// SPDX-License-Identifier: MIT
/*
 * The seed's check widening, end to end: foo (four stores, widen.ll) and
 * bar (arr[i..i+3], range.ll), compiled after guard widening, with a C
 * "interpreter" as the deopt handler.  The interpreter resumes at the
 * store the deopt state names, checks each index as the unoptimized
 * program does, and raises the out-of-bounds error where that program
 * would.  For every length (and i), the array's contents and the error
 * equal the unoptimized program's (reference_* below), and the handler
 * got the first guard's state: widening made the compiled code deoptimize
 * earlier than the unoptimized program checks, never later.
 *
 * Arrays are allocated at their exact length: under ASan a store past the
 * end, by the compiled code or the interpreter, fails the test.
 */
#include <stdio.h>
#include <stdlib.h>

#include "common.h"

void foo(int32_t *arr, int32_t len);
void bar(int32_t *arr, int32_t i, int32_t len);

static const int32_t foo_values[4] = { 1, 0, 1, 0 };
static const int32_t bar_values[4] = { 10, 20, 30, 40 };

/* The out-of-bounds error: the index it was raised at, or -1. */
static int64_t error_at;
static unsigned deopts;

/* Both functions store values[k] at arr[i + k], k = 0..3, each after its check. */
static void reference(int32_t *arr, int32_t i, int32_t len, const int32_t *values)
{
	for (int32_t k = 0; k < 4; k++) {
		uint32_t at = (uint32_t)i + (uint32_t)k;

		if (!(at < (uint32_t)len)) {
			error_at = (int64_t)i + k;
			return;
		}
		arr[at] = values[k];
	}
}

/* The interpreter: the state is (k, arr, len) for foo, (k, arr, i, len) for bar. */
static void interpreter(const struct fl_deopt_state *st, struct fl_deopt_return *ret, void *ctx)
{
	bool is_bar = st->num_values == 4;
	uint64_t *v;
	int32_t k, i, len;

	(void)ret;
	(void)ctx;
	deopts++;
	t_check(st->num_values == 3 || st->num_values == 4, "%u deopt values", st->num_values);
	v = (uint64_t[4]){ 0 };
	for (uint32_t n = 0; n < st->num_values; n++)
		v[n] = st->values[n].value;
	k = (int32_t)v[0];
	/* Widening keeps the first guard's state: the one that covers all four stores. */
	t_check(k == 0, "the deopt state resumes at store %d, not at the first guard's", k);
	i = is_bar ? (int32_t)v[2] : 0;
	len = (int32_t)v[is_bar ? 3 : 2];
	for (; k < 4; k++) {
		uint32_t at = (uint32_t)i + (uint32_t)k;

		if (!(at < (uint32_t)len)) {
			error_at = (int64_t)i + k;
			return;
		}
		((int32_t *)(uintptr_t)v[1])[at] = (is_bar ? bar_values : foo_values)[k];
	}
}

/* Runs one case both ways and compares. */
static void one(bool is_bar, int32_t i, int32_t len)
{
	size_t n = len > 0 ? (size_t)len : 1;
	int32_t *got = calloc(n, sizeof(*got)), *want = calloc(n, sizeof(*want));
	int64_t got_error, want_error;

	t_check(got && want, "calloc");
	error_at = -1;
	reference(want, i, len, is_bar ? bar_values : foo_values);
	want_error = error_at;
	error_at = -1;
	if (is_bar)
		bar(got, i, len);
	else
		foo(got, len);
	got_error = error_at;
	t_check(got_error == want_error, "%s(i %d, len %d): error at %lld, unoptimized at %lld",
		is_bar ? "bar" : "foo", i, len, (long long)got_error, (long long)want_error);
	for (int32_t j = 0; j < len; j++)
		t_check(got[j] == want[j], "%s(i %d, len %d): arr[%d] %d, unoptimized %d",
			is_bar ? "bar" : "foo", i, len, j, got[j], want[j]);
	free(got);
	free(want);
}

int main(void)
{
	unsigned cases = 0;

	t_start("widening_matches_unoptimized");
	t_check(fl_deopt_set_handler(interpreter, NULL) == 0, "fl_deopt_set_handler");
	for (int32_t len = 0; len <= 5; len++, cases++)
		one(false, 0, len);
	t_check(deopts == 4, "foo deoptimized %u times for lengths 0..5, not 4 (0..3)", deopts);
	for (int32_t i = -3; i <= 9; i++)
		for (int32_t len = 0; len <= 10; len++, cases++)
			one(true, i, len);
	printf("PASS %s: %u cases, %u deoptimizations\n", t_name, cases, deopts);
	return 0;
}
