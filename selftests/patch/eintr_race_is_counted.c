// SPDX-License-Identifier: MIT
/*
 * The race of a thread that is running when the patcher looks at it and
 * enters a blocking call just as it is stopped: how often does a change
 * make such a call fail with EINTR?  Two threads loop poll(NULL, 0, 1)
 * and two nanosleep(100 us), counting EINTR, and one calls the changed
 * code, during 10,000 changes that move instruction boundaries
 * (t_move_site; argv[1] to change the count).  Prints
 * "EINTR: N in M calls".
 *
 * Fails when a change fails, when a call of the code returns a mix of
 * versions, when a loop makes no progress (no call in the changes and a
 * minute after), or when N is above argv[2] (default: no limit; the goal
 * is 0).
 */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>

#include "common.h"

#define CHANGES 10000
#define LOOPS 4

static struct t_site move;
static _Atomic int stop;
static _Atomic uint64_t calls[LOOPS], eintr[LOOPS], other[LOOPS], code_calls, wrong;

static void *looper(void *arg)
{
	int i = (int)(intptr_t)arg;
	struct timespec us100 = { 0, 100000 };

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		int r = i < 2 ? poll(NULL, 0, 1) : nanosleep(&us100, NULL);

		atomic_fetch_add_explicit(&calls[i], 1, memory_order_relaxed);
		if (r == -1)
			atomic_fetch_add_explicit(errno == EINTR ? &eintr[i] : &other[i], 1,
						  memory_order_relaxed);
	}
	return NULL;
}

static void *caller(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		int v = move.fn();

		atomic_fetch_add_explicit(&code_calls, 1, memory_order_relaxed);
		if (v != 1 && v != 2)
			atomic_fetch_add(&wrong, 1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long changes = argc > 1 ? atol(argv[1]) : CHANGES;
	long long max_eintr = argc > 2 ? atoll(argv[2]) : -1;
	uint64_t before[LOOPS], during = 0, n = 0, e = 0, o = 0;
	pthread_t th[LOOPS + 1];
	double start, took;

	t_start(argv);
	t_init();
	t_enable();
	move = t_move_site();
	for (intptr_t i = 0; i < LOOPS; i++)
		t_check(pthread_create(&th[i], NULL, looper, (void *)i) == 0, "pthread_create");
	t_check(pthread_create(&th[LOOPS], NULL, caller, NULL) == 0, "pthread_create");
	/* Every loop under way before the first change. */
	for (int i = 0; i < LOOPS; i++)
		while (atomic_load(&calls[i]) == 0)
			sched_yield();
	for (int i = 0; i < LOOPS; i++)
		before[i] = atomic_load(&calls[i]);

	start = t_now();
	for (long c = 0; c < changes; c++) {
		struct fl_diag d;
		int err = t_flip(&move, &d);

		if (err)
			t_fail("change %ld: %d %s", c, err, d.msg);
	}
	took = t_now() - start;
	for (int i = 0; i < LOOPS; i++)
		during += atomic_load(&calls[i]) - before[i];
	/*
	 * Each loop goes on (it is not stuck in its call): on a loaded machine
	 * a short run of changes may have left one without a CPU throughout.
	 */
	for (int i = 0; i < LOOPS; i++) {
		double end = t_now() + 60;

		while (atomic_load(&calls[i]) <= before[i]) {
			t_check(t_now() < end, "%s loop %d made no call in the changes and 60 s after",
				i < 2 ? "the poll" : "the nanosleep", i);
			sched_yield();
		}
	}
	atomic_store(&stop, 1);
	for (int i = 0; i <= LOOPS; i++)
		pthread_join(th[i], NULL);

	for (int i = 0; i < LOOPS; i++) {
		n += calls[i];
		e += eintr[i];
		o += other[i];
	}
	printf("  %ld changes moving boundaries in %.2f s (the loops made %llu calls meanwhile); "
	       "%llu calls of the code, %llu wrong\n", changes, took, (unsigned long long)during,
	       (unsigned long long)code_calls, (unsigned long long)wrong);
	printf("  poll(NULL, 0, 1): %llu EINTR in %llu calls; nanosleep(100 us): %llu in %llu\n",
	       (unsigned long long)(eintr[0] + eintr[1]), (unsigned long long)(calls[0] + calls[1]),
	       (unsigned long long)(eintr[2] + eintr[3]), (unsigned long long)(calls[2] + calls[3]));
	printf("EINTR: %llu in %llu calls\n", (unsigned long long)e, (unsigned long long)n);
	t_check(o == 0, "%llu calls failed with another error than EINTR", (unsigned long long)o);
	t_check(wrong == 0, "%llu calls of the changed code returned a mix of versions",
		(unsigned long long)wrong);
	t_check(max_eintr < 0 || e <= (uint64_t)max_eintr, "%llu EINTR, more than %lld",
		(unsigned long long)e, max_eintr);
	printf("PASS %s%s\n", t_name, max_eintr < 0 ? " (no limit on EINTR set)" : "");
	return 0;
}
