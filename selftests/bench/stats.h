/* SPDX-License-Identifier: MIT */
/*
 * The benchmarks' summaries of repeated measurements: medians (and
 * percentiles) of doubles.  Each sorts its array in place.  And the clocks
 * they are measured with.
 */
#ifndef FL_BENCH_STATS_H
#define FL_BENCH_STATS_H

#include <stddef.h>
#include <stdlib.h>
#include <time.h>

/* CLOCK_MONOTONIC, in seconds. */
static inline double bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * The calling thread's CPU time (user and system), in seconds: what a piece
 * of work costs, without the time the thread waited for a CPU that other
 * processes of a shared machine had.
 */
static inline double bench_thread_cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median of v[0..n) (n > 0). */
static inline double bench_median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), bench_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The p-quantile (0..1) of v[0..n) (n > 0), nearest rank. */
static inline double bench_percentile(double *v, size_t n, double p)
{
	qsort(v, n, sizeof(*v), bench_cmp_double);
	return v[(size_t)((double)(n - 1) * p + 0.5)];
}

#endif /* FL_BENCH_STATS_H */
