// SPDX-License-Identifier: MIT
/*
 * The demo's runtime side: drives the workload (workload.ll) as a small
 * shop would, and counts the null paths the way a language runtime counts
 * NullPointerExceptions.  The same output whether the checks are explicit
 * (compiled without -enable-implicit-null-checks) or implicit and handled
 * by faultline.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

struct customer { int64_t id; int32_t level; int32_t pad; };
struct order { int64_t id; int64_t total; struct customer *customer; };
struct entry { int64_t key; int64_t touched; };

int64_t order_total(struct order *o);
int32_t customer_level(struct customer *c);
void cache_touch(struct entry *e, int64_t now);
void counter_bump(int64_t *c);
int64_t checkout(struct order *o, int64_t n);

static _Atomic unsigned long npes[5];

void npe(int32_t site);
void npe(int32_t site)
{
	npes[site]++;
}

#define ORDERS 20000

static void *shop(void *arg)
{
	struct customer vip = { 1, 3, 0 };
	struct entry hot = { 42, 0 };
	int64_t served = 0, revenue = 0;
	unsigned seed = (unsigned)(uintptr_t)arg;

	for (int i = 0; i < ORDERS; i++) {
		struct order o = { i, 10 + i % 7, (i % 3) ? NULL : &vip };
		struct order *op = (i % 1000 == 999) ? NULL : &o;

		seed = seed * 1103515245u + 12345u;
		revenue += checkout(op, 0);
		if (op)
			revenue += customer_level(op->customer);
		cache_touch((seed >> 16) % 10 < 8 ? NULL : &hot, i);
		counter_bump(&served);
	}
	return (void *)(intptr_t)(revenue + served);
}

int main(void)
{
	pthread_t t[2];
	intptr_t total = 0;

	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, shop, (void *)(uintptr_t)(i + 1));
	for (int i = 0; i < 2; i++) {
		void *r;

		pthread_join(t[i], &r);
		total += (intptr_t)r;
	}
	printf("served 2 x %d orders, checksum %ld\n", ORDERS, (long)total);
	printf("null orders: %lu, guests without a customer record: %lu, "
	       "cache misses: %lu\n", npes[1], npes[2], npes[3]);
	return 0;
}
