// SPDX-License-Identifier: MIT
/*
 * A thread whose stack (pthread_attr_setstack) lies in the middle of a
 * 4 GiB read-write mapping (MAP_NORESERVE; a runtime's arena, say).  The
 * handshake scans a thread's stack for return addresses into a change;
 * that scan must be bounded by the stack, not run to the end of the
 * mapping (today it reads the 2 GiB above the stack, for each change).
 * Twice: with the thread sleeping in nanosleep(20 ms) in a loop, and with
 * it spinning in a loop that calls the changed code.  Each time 3 changes
 * that move boundaries must return 0, and the thread must not be harmed:
 * it goes on, its calls return 1 or 2, a canary on its stack is intact
 * (its sleeps' EINTRs are printed; blocking_calls_are_never_cut_short
 * asserts them).  How long each change took is printed, not asserted.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "common.h"

#define MAPPING (4ull << 30)
#define STACK (1u << 20)
#define CHANGES 3

static struct t_site move;
static _Atomic int stop, running;
static _Atomic uint64_t calls, wrong, eintr;

static void *thread(void *arg)
{
	bool sleeps = arg != NULL;
	volatile uint64_t canary[64];
	struct timespec ms20 = { 0, 20000000 };

	for (int i = 0; i < 64; i++)
		canary[i] = 0x5afe0000u + (uint64_t)i;
	atomic_store(&running, 1);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		if (sleeps) {
			if (nanosleep(&ms20, NULL) != 0 && errno == EINTR)
				atomic_fetch_add(&eintr, 1);
		} else {
			int v = move.fn();

			if (v != 1 && v != 2)
				atomic_fetch_add(&wrong, 1);
		}
		atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
	}
	for (int i = 0; i < 64; i++)
		if (canary[i] != 0x5afe0000u + (uint64_t)i)
			return (void *)1;
	return NULL;
}

int main(int argc, char **argv)
{
	uint8_t *map;
	pthread_attr_t attr;

	(void)argc;
	t_start(argv);
	t_init();
	t_enable();
	move = t_move_site();
	map = mmap(NULL, MAPPING, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (map == MAP_FAILED) {
		char why[128];

		snprintf(why, sizeof(why), "mmap of 4 GiB (MAP_NORESERVE): %s", strerror(errno));
		t_skip(why);
	}
	for (int sleeps = 1; sleeps >= 0; sleeps--) {
		uint64_t before;
		pthread_t th;
		void *harmed;

		atomic_store(&stop, 0);
		atomic_store(&running, 0);
		atomic_store(&calls, 0);
		pthread_attr_init(&attr);
		t_check(pthread_attr_setstack(&attr, map + MAPPING / 2, STACK) == 0,
			"pthread_attr_setstack");
		t_check(pthread_create(&th, &attr, thread, sleeps ? (void *)1 : NULL) == 0,
			"pthread_create");
		pthread_attr_destroy(&attr);
		while (!atomic_load(&running))
			sched_yield();
		before = atomic_load(&calls);
		printf("  the thread %s; its stack at +2 GiB of a 4 GiB mapping; changes took",
		       sleeps ? "sleeping in nanosleep(20 ms)" : "spinning, calling the code");
		for (int c = 0; c < CHANGES; c++) {
			struct fl_diag d;
			double t0 = t_now();
			int err = t_flip(&move, &d);

			printf(" %.3f ms", (t_now() - t0) * 1e3);
			fflush(stdout);
			if (err)
				t_fail("change %d: %d %s", c, err, d.msg);
		}
		printf("\n");
		/* It goes on after the changes. */
		while (atomic_load(&calls) < before + 2)
			sched_yield();
		atomic_store(&stop, 1);
		t_check(pthread_join(th, &harmed) == 0, "pthread_join");
		t_check(harmed == NULL, "the canary on the thread's stack changed");
		t_check(t_site_is_whole(&move), "the code is not the last version");
	}
	printf("  nanosleep(20 ms): %llu EINTR; the calls: %llu wrong\n", (unsigned long long)eintr,
	       (unsigned long long)wrong);
	t_check(wrong == 0, "%llu calls returned a mix of versions", (unsigned long long)wrong);
	munmap(map, MAPPING);
	printf("PASS %s\n", t_name);
	return 0;
}
