/* SPDX-License-Identifier: MIT */
/*
 * Work the daemon does on one user's data a slice at a time (work.c):
 * answering a query, writing a process's record to the state directory.
 * After each round of the event loop's events, every user with work
 * waiting gets one slice, users in turn, so that one user's 2,000,000
 * sites never hold another user's queries or registrations up for more
 * than a slice.
 *
 * A slice is at most FLD_SLICE units.  A unit is about the cost of reading
 * one site (its count, for a total); writing a site out as JSON costs
 * FLD_UNITS_JSON.  Measured here, a slice takes a few milliseconds.
 *
 * Loop thread only, like the rest of the daemon.
 */
#ifndef FLD_WORK_H
#define FLD_WORK_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define FLD_SLICE 65536u
#define FLD_UNITS_JSON 32u

enum fld_step {
	FLD_STEP_DONE,	/* finished: the job leaves the queue and is freed */
	FLD_STEP_MORE,	/* runs again in the next round */
	FLD_STEP_WAIT,	/* runs again once fld_job_wake is called */
};

struct fld_job {
	uid_t uid;	/* whose data: a slice each round per user */
	/* Does at most budget units of work. */
	enum fld_step (*step)(struct fld_job *j, unsigned budget);
	/* Frees the job: once it is done or cancelled, never inside step. */
	void (*free)(struct fld_job *j);
	/* work.c's own */
	struct fld_job *next;
	bool waiting, running, cancelled;
};

/* Queues j (uid, step and free set) behind the other jobs of its user. */
void fld_job_start(struct fld_job *j);

/* A waiting job runs again from the next round on. */
void fld_job_wake(struct fld_job *j);

/*
 * The job's owner no longer wants it: it is freed now, or once its step
 * returns when called from inside it.  j must not be used afterwards.
 */
void fld_job_cancel(struct fld_job *j);

/*
 * One round: one slice of the first runnable job of each user.  Returns
 * whether a job is left that can run (not only waiting ones).
 */
bool fld_work_round(void);

/* Jobs queued for uid (waiting ones too). */
size_t fld_work_queued(uid_t uid);

#endif /* FLD_WORK_H */
