// SPDX-License-Identifier: MIT
/*
 * The patcher's promise under load: while 4 threads call two functions in a
 * loop, the main thread rewrites one 5-byte instruction in each, 100,000
 * times (argv[1] to change it), alone and in batches of both.  The versions:
 *   mov $0x100,%eax; [ mov $1,%eax | add $2,%eax | mov $3,%eax ]; ret
 * return 1, 0x102 or 3; a call that ran a mix of two versions' bytes would
 * return something else (mov $2: 2, add $1: 0x101, ...) or crash.  Every call
 * must return one of the three, and the threads must have seen each.
 * Then the page is read-execute again, as before.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "common.h"

#define THREADS 4

static const uint8_t versions[3][5] = {
	{ 0xb8, 0x01, 0x00, 0x00, 0x00 },	/* mov $1,%eax */
	{ 0x05, 0x02, 0x00, 0x00, 0x00 },	/* add $2,%eax */
	{ 0xb8, 0x03, 0x00, 0x00, 0x00 },	/* mov $3,%eax */
};

static int (*fns[2])(void);
static _Atomic int stop;
static _Atomic uint64_t calls, wrong, seen[3];

static void *caller(void *arg)
{
	int (*fn)(void) = fns[(uintptr_t)arg & 1];
	uint64_t n = 0;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		int v = fn();

		n++;
		if (v == 1)
			atomic_fetch_add_explicit(&seen[0], 1, memory_order_relaxed);
		else if (v == 0x102)
			atomic_fetch_add_explicit(&seen[1], 1, memory_order_relaxed);
		else if (v == 3)
			atomic_fetch_add_explicit(&seen[2], 1, memory_order_relaxed);
		else if (atomic_fetch_add(&wrong, 1) < 5)
			fprintf(stderr, "%s: a call returned 0x%x\n", t_name, v);
	}
	atomic_fetch_add(&calls, n);
	return NULL;
}

int main(int argc, char **argv)
{
	uint8_t code[16] = { 0xb8, 0x00, 0x01, 0x00, 0x00 };	/* mov $0x100,%eax */
	long rewrites = argc > 1 ? atol(argv[1]) : 100000;
	pthread_t th[THREADS];
	uint8_t *page[2];
	int cur[2] = { 0, 0 };
	char prot[5];

	t_start(argv);
	memcpy(code + 5, versions[0], 5);
	code[10] = 0xc3;					/* ret */
	for (int f = 0; f < 2; f++) {
		page[f] = t_code(code, 11);
		fns[f] = (int (*)(void))(void *)page[f];
	}
	t_init();
	t_enable();
	for (uintptr_t i = 0; i < THREADS; i++)
		t_check(pthread_create(&th[i], NULL, caller, (void *)i) == 0, "pthread_create");

	for (long r = 0; r < rewrites; r++) {
		struct fl_patch p[2];
		struct fl_diag d = { 0 };
		int n = 0, err;

		/* Every third rewrite changes both functions in one batch. */
		for (int f = 0; f < 2; f++) {
			int next = (cur[f] + 1) % 3;

			if (r % 3 != 2 && (r & 1) != f)
				continue;
			p[n++] = (struct fl_patch){ .addr = page[f] + 5, .old_bytes = versions[cur[f]],
						    .new_bytes = versions[next], .len = 5 };
			cur[f] = next;
		}
		err = fl_patch_text(p, (size_t)n, &d);
		if (err) {
			atomic_store(&stop, 1);
			t_fail("rewrite %ld: %d %s", r, err, d.msg);
		}
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);

	printf("%s: %ld rewrites, %llu calls (1: %llu, 0x102: %llu, 3: %llu), wrong %llu\n",
	       t_name, rewrites, (unsigned long long)calls, (unsigned long long)seen[0],
	       (unsigned long long)seen[1], (unsigned long long)seen[2], (unsigned long long)wrong);
	t_check(wrong == 0, "%llu calls returned a mix of versions", (unsigned long long)wrong);
	t_check(seen[0] && seen[1] && seen[2], "the threads did not see every version");
	for (int f = 0; f < 2; f++) {
		t_check(memcmp(page[f] + 5, versions[cur[f]], 5) == 0, "function %d: not the last version", f);
		t_prot(page[f], prot);
		t_check(strcmp(prot, "r-xp") == 0, "function %d's page is %s after patching", f, prot);
	}
	printf("PASS %s\n", t_name);
	return 0;
}
