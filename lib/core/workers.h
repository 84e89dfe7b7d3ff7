/* SPDX-License-Identifier: MIT */
/*
 * faultline's own threads in a program (fl-agent, fl-requests, fl-healer):
 * the workers.  Each is started here, joinable, and can be stopped and
 * joined with all the others, and started again: a program must be able
 * to do what it could do without them, which sometimes needs them gone
 * for a moment (unshare(CLONE_NEWUSER) and setns want a single-threaded
 * caller) or for good (glibc ends the process when its last thread ends,
 * and faultline's threads count as threads).
 *
 * A worker's main returns once fl_workers_stopping() is true; its wake
 * makes it look soon wherever it waits.  The registry never runs a
 * worker's code itself but wake, from the thread that stops them.
 */
#ifndef FL_CORE_WORKERS_H
#define FL_CORE_WORKERS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

struct fl_worker {
	const char *name;		/* its thread's name (pthread_setname_np) */
	size_t stack;			/* its stack size */
	void *(*main)(void *);		/* returns once fl_workers_stopping() */
	void (*wake)(void);		/* wakes main wherever it waits */
	/* The registry's, under its lock. */
	pthread_t thread;
	bool running;			/* a thread was started and not joined */
	bool wanted;			/* started, and not since the last fork */
	bool listed;
	struct fl_worker *next;
};

/*
 * How the registry starts a thread (lib/dispatch's fl_park_exempt_thread,
 * set by fl_init): 0, or -ENOSPC for a thread that runs but is not exempt
 * from the patcher's handshake, or another -errno for one that does not
 * run.  Also registers the registry's fork handlers: call it before any
 * worker's own are registered.  Thread-safe.
 */
void fl_workers_set_create(int (*create)(pthread_t *, const pthread_attr_t *,
					 void *(*)(void *), void *));

/*
 * Starts w's thread now, or, while the workers are stopped, at
 * fl_workers_resume.  Returns 0 (also when it runs already or is left for
 * the resume), -ENOSPC when it runs but outside the patcher's handshake,
 * or another -errno when it could not be started.  Thread-safe; not from
 * a worker of its own.
 */
int fl_worker_start(struct fl_worker *w);

/* Whether the workers are asked to return.  Lock-free. */
bool fl_workers_stopping(void);

/*
 * Asks every worker to return, wakes each, and joins each: when this
 * returns, no worker's thread exists.  Stops nest: each needs its
 * fl_workers_resume.  Returns the number of threads joined.  Thread-safe;
 * not from a worker.
 */
int fl_workers_stop(void);

/*
 * Ends one fl_workers_stop; the last one starts again every worker that
 * was running or was started meanwhile.  Returns 0 or the first -errno of
 * a worker that could not be started.  Thread-safe; not from a worker.
 */
int fl_workers_resume(void);

/* How many workers' threads run now.  Thread-safe. */
int fl_workers_running(void);

#endif
