/* SPDX-License-Identifier: MIT */
/*
 * faultline's threads out of the program's way (the workers of
 * core/workers.h: fl-agent, fl-requests, fl-healer).
 *
 * A process ends when its last thread does: glibc calls exit(0) when the
 * last one of its threads returns or calls pthread_exit, and faultline's
 * threads count as threads.  So the shim counts the program's own: the
 * main thread, and each thread pthread_create starts for the program
 * (mask.c's pthread_create tells faultline's own by their caller), from
 * before the thread exists (its creator's count) to its end (a
 * thread-specific value's destructor, which glibc runs at pthread_exit,
 * at the return of the thread's function and at cancellation, before it
 * counts the thread gone).  When the last one ends, the workers are
 * stopped and joined first: glibc then finds the program's thread the
 * last, and exits 0, as without faultline.  A thread the program starts
 * later (its threads were not all counted: one of glibc's own) starts
 * them again.
 *
 * unshare and setns want a single-threaded caller for some namespaces
 * (a user namespace, a mount namespace by setns): EINVAL in a process
 * with other threads.  One that fails so while workers run is tried again
 * with the workers stopped, and they start again after it, in the new
 * namespaces.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/log.h"
#include "core/workers.h"
#include "preload/threads.h"

#define EXPORT __attribute__((visibility("default")))

/* The program's threads: the main one from the start. */
static _Atomic long threads = 1;
/* The workers were stopped because the count reached 0. */
static _Atomic bool stopped_for_good;
static pthread_key_t key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static bool key_made;

static void thread_ends(void *value)
{
	(void)value;
	/* Seq_cst: the last decrement, whichever thread makes it, stops them once. */
	if (atomic_fetch_sub(&threads, 1) != 1)
		return;
	atomic_store(&stopped_for_good, true);
	fl_workers_stop();
}

static void make_key(void)
{
	key_made = pthread_key_create(&key, thread_ends) == 0;
	if (!key_made)
		fl_log(FL_LOG_WARN, "no thread key: a process whose last thread calls "
		       "pthread_exit does not end while faultline's threads run");
}

void fl_preload_thread_begins(void)
{
	pthread_once(&key_once, make_key);
	/* Any value but NULL: glibc runs the destructor of a set value. */
	if (key_made)
		pthread_setspecific(key, &key);
}

void fl_preload_thread_created(void)
{
	if (atomic_fetch_add(&threads, 1) == 0 && atomic_exchange(&stopped_for_good, false))
		fl_workers_resume();
}

void fl_preload_thread_not_created(void)
{
	thread_ends(NULL);
}

static void fork_child(void)
{
	/* The forking thread, the child's only one, is the program's. */
	atomic_store(&threads, 1);
	atomic_store(&stopped_for_good, false);
}

void fl_preload_threads_start(void)
{
	fl_preload_thread_begins();
	pthread_atfork(NULL, NULL, fork_child);
}

/* Runs call, and again with the workers stopped if it failed with EINVAL while they ran. */
static long alone_if_needed(long (*call)(long, long), long a, long b)
{
	long r = call(a, b);
	int err;

	if (r == 0 || errno != EINVAL || !fl_workers_running())
		return r;
	fl_workers_stop();
	/*
	 * A joined thread can still be in the thread group for a moment (the
	 * kernel clears its tid, which pthread_join waits for, before it
	 * leaves the group): tried again for up to 100 ms.
	 */
	for (int i = 0; (r = call(a, b)) != 0 && errno == EINVAL && i < 1000; i++)
		usleep(100);
	err = errno;
	fl_workers_resume();
	errno = err;
	return r;
}

static long sys_unshare(long flags, long unused)
{
	(void)unused;
	return syscall(SYS_unshare, flags);
}

static long sys_setns(long fd, long nstype)
{
	return syscall(SYS_setns, fd, nstype);
}

EXPORT int unshare(int flags)
{
	return (int)alone_if_needed(sys_unshare, flags, 0);
}

EXPORT int setns(int fd, int nstype)
{
	return (int)alone_if_needed(sys_setns, fd, nstype);
}
