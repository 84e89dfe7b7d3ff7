// SPDX-License-Identifier: MIT
/*
 * A process of 1,000 threads, 990 of them blocked, 10 calling the code
 * being changed: changes that move instruction boundaries complete, and the
 * blocked threads do not notice.
 *   - 495 threads wait on a futex without a timeout, until the main thread
 *     releases them after the changes: none may return before that;
 *   - 495 sleep in nanosleep(1 hour), which nothing releases: none may
 *     return at all (the process exits with them asleep);
 *   - 10 call t_move_site's function (1 or 2) with a pause between calls;
 *   - the main thread makes 100 changes moving boundaries (argv[1]), each
 *     must return 0; their median and longest times are printed.
 * The threads have small stacks (64 KiB, more under ASan).
 */
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>

#include "common.h"

#define THREADS 1000
#define CALLERS 10
#define CHANGES 100
#ifdef __SANITIZE_ADDRESS__
#define STACK (256 * 1024)
#else
#define STACK (64 * 1024)
#endif

static struct t_site move;
static _Atomic uint32_t released;
static _Atomic int stop;
static _Atomic uint64_t futex_early, futex_eintr, sleep_returned, sleep_eintr, calls, wrong;
static _Atomic pid_t tids[THREADS];

static void *futex_waiter(void *arg)
{
	atomic_store(&tids[(intptr_t)arg], gettid());
	while (!atomic_load(&released)) {
		long r = syscall(SYS_futex, &released, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
		int err = errno;

		if (atomic_load(&released))
			break;
		/* Back before the release: a signal's EINTR, or a wake nobody sent. */
		atomic_fetch_add(&futex_early, 1);
		if (r == -1 && err == EINTR)
			atomic_fetch_add(&futex_eintr, 1);
	}
	return NULL;
}

static void *sleeper(void *arg)
{
	atomic_store(&tids[(intptr_t)arg], gettid());
	for (;;) {
		struct timespec hour = { 3600, 0 };
		int r = nanosleep(&hour, NULL);
		int err = errno;

		atomic_fetch_add(&sleep_returned, 1);
		if (r == -1 && err == EINTR)
			atomic_fetch_add(&sleep_eintr, 1);
	}
	return NULL;
}

static void *caller(void *arg)
{
	uint64_t n = 0;

	atomic_store(&tids[(intptr_t)arg], gettid());
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		int v = move.fn();

		n++;
		if (v != 1 && v != 2)
			atomic_fetch_add(&wrong, 1);
		/* Mostly outside the code: ten of them must all be out at once. */
		for (int i = 0; i < 64; i++)
			__builtin_ia32_pause();
	}
	atomic_fetch_add(&calls, n);
	return NULL;
}

static char thread_state(pid_t tid)
{
	char path[64], buf[512], *p;
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return '?';
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return '?';
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	long changes = argc > 1 ? atol(argv[1]) : CHANGES;
	static pthread_t th[THREADS];
	double *took, deadline;
	uint64_t slept, slept_eintr;
	pthread_attr_t attr;
	int blocked = THREADS - CALLERS;

	t_start(argv);
	t_init();
	t_enable();
	move = t_move_site();
	took = calloc((size_t)changes, sizeof(*took));
	t_check(took != NULL, "calloc");
	pthread_attr_init(&attr);
	t_check(pthread_attr_setstacksize(&attr, STACK) == 0, "pthread_attr_setstacksize");
	for (intptr_t i = 0; i < THREADS; i++) {
		void *(*fn)(void *) = i < blocked / 2 ? futex_waiter : i < blocked ? sleeper : caller;
		int err = pthread_create(&th[i], &attr, fn, (void *)i);

		t_check(err == 0, "pthread_create of thread %d: %s", (int)i, strerror(err));
	}

	/* Every blocked thread asleep in the kernel before the first change. */
	deadline = t_now() + 300;
	for (int i = 0; i < blocked; i++) {
		struct timespec ms = { 0, 1000000 };

		while (!atomic_load(&tids[i]) || thread_state(tids[i]) != 'S') {
			t_check(t_now() < deadline, "thread %d is not asleep after 300 s", i);
			nanosleep(&ms, NULL);
		}
	}
	for (int i = blocked; i < THREADS; i++)
		while (!atomic_load(&tids[i]))
			sched_yield();

	for (long c = 0; c < changes; c++) {
		struct fl_diag d;
		double t0 = t_now();
		int err = t_flip(&move, &d);

		took[c] = t_now() - t0;
		if (err)
			t_fail("change %ld: %d %s", c, err, d.msg);
	}
	t_check(t_site_is_whole(&move), "the code is not the last version");
	qsort(took, (size_t)changes, sizeof(*took), cmp_double);
	printf("  %ld changes moving boundaries with %d threads (%d blocked): median %.3f ms, "
	       "longest %.3f ms\n", changes, THREADS, blocked, took[changes / 2] * 1e3,
	       took[changes - 1] * 1e3);

	/* The sleepers are still asleep; the waiters go on only now. */
	slept = atomic_load(&sleep_returned);
	slept_eintr = atomic_load(&sleep_eintr);
	atomic_store(&released, 1);
	syscall(SYS_futex, &released, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
	for (int i = 0; i < blocked / 2; i++)
		pthread_join(th[i], NULL);
	printf("  nanosleep(1 hour): %llu returned (%llu EINTR); futex waits: %llu returned before "
	       "the release (%llu EINTR)\n", (unsigned long long)slept, (unsigned long long)slept_eintr,
	       (unsigned long long)futex_early, (unsigned long long)futex_eintr);
	t_check(slept == 0, "%llu nanosleep(1 hour) calls returned (%llu with EINTR)",
		(unsigned long long)slept, (unsigned long long)slept_eintr);
	t_check(futex_early == 0, "%llu futex waits returned before the release (%llu with EINTR)",
		(unsigned long long)futex_early, (unsigned long long)futex_eintr);
	atomic_store(&stop, 1);
	for (int i = blocked; i < THREADS; i++)
		pthread_join(th[i], NULL);
	printf("  the callers: %llu calls, %llu wrong\n", (unsigned long long)calls,
	       (unsigned long long)wrong);
	t_check(wrong == 0, "%llu calls returned a mix of versions", (unsigned long long)wrong);
	free(took);
	printf("PASS %s\n", t_name);
	return 0;	/* with the sleepers asleep */
}
