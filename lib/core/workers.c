/* SPDX-License-Identifier: MIT */
/* faultline's own threads: started, stopped and joined, started again (workers.h). */
#include <errno.h>
#include <stdatomic.h>

#include "core/workers.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct fl_worker *workers;	/* every worker ever started, under lock */
static int stops;			/* fl_workers_stop calls not yet resumed, under lock */
static _Atomic bool stopping;
static int (*create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

/* Under lock. */
static int start_locked(struct fl_worker *w)
{
	pthread_attr_t attr;
	int err;

	if (w->running)
		return 0;
	if (!create)
		return -EINVAL;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, w->stack);
	err = create(&w->thread, &attr, w->main, NULL);
	pthread_attr_destroy(&attr);
	if (err && err != -ENOSPC)
		return err;
	pthread_setname_np(w->thread, w->name);
	w->running = true;
	return err;
}

int fl_worker_start(struct fl_worker *w)
{
	int err = 0;

	pthread_mutex_lock(&lock);
	if (!w->listed) {
		w->listed = true;
		w->next = workers;
		workers = w;
	}
	w->wanted = true;
	if (!stops)
		err = start_locked(w);
	pthread_mutex_unlock(&lock);
	return err;
}

bool fl_workers_stopping(void)
{
	/* Pairs with the seq_cst store in fl_workers_stop, before the wakes. */
	return atomic_load(&stopping);
}

int fl_workers_stop(void)
{
	int joined = 0;

	pthread_mutex_lock(&lock);
	if (stops++ == 0) {
		/*
		 * Before any wake: a worker that looks after its wake sees it;
		 * one that looked before is woken from the wait it went into.
		 */
		atomic_store(&stopping, true);
		for (struct fl_worker *w = workers; w; w = w->next)
			if (w->running && w->wake)
				w->wake();
		for (struct fl_worker *w = workers; w; w = w->next)
			if (w->running) {
				pthread_join(w->thread, NULL);
				/* Started again at the resume (wanted). */
				w->running = false;
				joined++;
			}
	}
	pthread_mutex_unlock(&lock);
	return joined;
}

int fl_workers_resume(void)
{
	int first = 0;

	pthread_mutex_lock(&lock);
	if (stops > 0 && --stops == 0) {
		atomic_store(&stopping, false);
		for (struct fl_worker *w = workers; w; w = w->next) {
			int err = w->wanted ? start_locked(w) : 0;

			if (err && err != -ENOSPC && !first)
				first = err;
		}
	}
	pthread_mutex_unlock(&lock);
	return first;
}

int fl_workers_running(void)
{
	int n = 0;

	pthread_mutex_lock(&lock);
	for (struct fl_worker *w = workers; w; w = w->next)
		n += w->running;
	pthread_mutex_unlock(&lock);
	return n;
}

/*
 * fork: the lock is held across it; the child has none of the parent's
 * threads, and no stop of the parent's.  Its workers are started again
 * by their owners' own fork handlers, which run after these.
 */
static void fork_prepare(void)
{
	pthread_mutex_lock(&lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&lock);
}

static void fork_child(void)
{
	for (struct fl_worker *w = workers; w; w = w->next)
		w->running = w->wanted = false;
	stops = 0;
	atomic_store(&stopping, false);
	pthread_mutex_unlock(&lock);
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void atfork_register(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

void fl_workers_set_create(int (*fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
				     void *))
{
	pthread_once(&atfork_once, atfork_register);
	pthread_mutex_lock(&lock);
	create = fn;
	pthread_mutex_unlock(&lock);
}
