// SPDX-License-Identifier: MIT
/*
 * Eight threads at once, released together, each round: each writes its
 * own pages (disjoint), all of them write their own byte of the same
 * shared pages (the same page's first touch in several threads at once:
 * one populates, the others find it there), and each takes failed
 * implicit checks past the limit.  Every page must be the template plus
 * exactly the bytes written; every check must resume at its handler.
 * Between rounds fl_region_reset drops everything.
 */
#include <pthread.h>

#include "common.h"

#define THREADS 8
#define OWN_PAGES 32
#define SHARED_PAGES 32
#define COMMITTED ((THREADS * OWN_PAGES + SHARED_PAGES) * t_page)
#define ROUNDS 20
#define CHECKS 50

static volatile uint8_t *base;
static uint8_t tmpl[1 << 16];
static pthread_barrier_t start;

static void *worker(void *arg)
{
	uintptr_t t = (uintptr_t)arg;
	volatile uint8_t *own = base + t * OWN_PAGES * t_page;
	volatile uint8_t *shared = base + THREADS * OWN_PAGES * t_page;
	volatile uint64_t *past = (volatile uint64_t *)(base + COMMITTED + t * t_page);

	pthread_barrier_wait(&start);
	for (size_t i = 0; i < SHARED_PAGES; i++) {
		/* Odd threads read first, so reads and writes race. */
		if (t % 2)
			t_check(shared[i * t_page + 1000] == tmpl[1000], "thread %zu shared %zu",
				(size_t)t, i);
		shared[i * t_page + 64 + t] = (uint8_t)(0x10 + t);
		own[i * t_page + t] = (uint8_t)(0x80 + t);
	}
	for (int i = 0; i < CHECKS; i++)
		t_check(t_load(past) == T_LOAD_FAILED, "thread %zu: check not dispatched",
			(size_t)t);
	return NULL;
}

static void check_page(size_t page, const uint8_t *want)
{
	t_check(memcmp((const uint8_t *)base + page * t_page, want, t_page) == 0,
		"page %zu differs from what was written", page);
}

int main(int argc, char **argv)
{
	uint32_t flags = t_start(argc, argv);
	pthread_t th[THREADS];
	uint64_t claimed;
	struct fl_region *r;
	static uint8_t want[1 << 16];

	t_init();
	t_register_code();
	for (size_t i = 0; i < sizeof(tmpl); i++)
		tmpl[i] = (uint8_t)(i ^ (i >> 8));
	r = t_region(2 * COMMITTED, COMMITTED, tmpl, flags);
	base = fl_region_base(r);
	claimed = t_stat_claimed();

	for (int round = 0; round < ROUNDS; round++) {
		pthread_barrier_init(&start, NULL, THREADS);
		for (uintptr_t t = 0; t < THREADS; t++)
			t_check(pthread_create(&th[t], NULL, worker, (void *)t) == 0, "pthread_create");
		for (int t = 0; t < THREADS; t++)
			pthread_join(th[t], NULL);
		pthread_barrier_destroy(&start);

		for (size_t t = 0; t < THREADS; t++) {
			memcpy(want, tmpl, t_page);
			want[t] = (uint8_t)(0x80 + t);
			for (size_t i = 0; i < OWN_PAGES; i++)
				check_page(t * OWN_PAGES + i, want);
		}
		memcpy(want, tmpl, t_page);
		for (size_t t = 0; t < THREADS; t++)
			want[64 + t] = (uint8_t)(0x10 + t);
		for (size_t i = 0; i < SHARED_PAGES; i++)
			check_page(THREADS * OWN_PAGES + i, want);
		t_check(fl_region_reset(r, COMMITTED) == 0, "reset");
	}
	t_check(t_stat_claimed() - claimed == (uint64_t)ROUNDS * THREADS * CHECKS,
		"claimed %llu, want %d", (unsigned long long)(t_stat_claimed() - claimed),
		ROUNDS * THREADS * CHECKS);
	fl_region_destroy(r);
	printf("PASS %s (%s): %d rounds of %d threads\n", t_name, flags ? "helper" : "sigbus",
	       ROUNDS, THREADS);
	return 0;
}
