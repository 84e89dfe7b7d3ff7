/* SPDX-License-Identifier: MIT */
/*
 * The work queue (see work.h): one queue of jobs per user, in the order
 * they came; each round gives the first job of each user that can run one
 * slice.
 */
#include <stdlib.h>

#include "dlog.h"
#include "work.h"

struct user {
	uid_t uid;
	struct fld_job *head;
};

static struct user *users;
static size_t num_users, cap_users;

static struct user *user_of(uid_t uid)
{
	for (size_t i = 0; i < num_users; i++)
		if (users[i].uid == uid)
			return &users[i];
	return NULL;
}

void fld_job_start(struct fld_job *j)
{
	struct user *u = user_of(j->uid);
	struct fld_job **at;

	j->next = NULL;
	j->waiting = j->running = j->cancelled = false;
	if (!u) {
		if (num_users == cap_users) {
			size_t cap = cap_users ? 2 * cap_users : 16;
			struct user *grown = realloc(users, cap * sizeof(*users));

			if (!grown) {
				/* Nothing can be done for it: as if cancelled. */
				fld_warn("out of memory: uid %u's work dropped", (unsigned)j->uid);
				j->free(j);
				return;
			}
			users = grown;
			cap_users = cap;
		}
		u = &users[num_users++];
		*u = (struct user){ .uid = j->uid };
	}
	for (at = &u->head; *at; at = &(*at)->next)
		;
	*at = j;
}

void fld_job_wake(struct fld_job *j)
{
	j->waiting = false;
}

/* Takes j off its user's queue and frees it. */
static void finish(struct fld_job *j)
{
	struct user *u = user_of(j->uid);

	for (struct fld_job **at = u ? &u->head : NULL; at && *at; at = &(*at)->next) {
		if (*at == j) {
			*at = j->next;
			break;
		}
	}
	j->free(j);
}

void fld_job_cancel(struct fld_job *j)
{
	if (j->running)
		j->cancelled = true;
	else
		finish(j);
}

bool fld_work_round(void)
{
	bool runnable = false;
	size_t kept = 0;

	/* By index: a step may start jobs, and users may move. */
	for (size_t i = 0; i < num_users; i++) {
		struct fld_job *j = users[i].head;
		enum fld_step r;

		while (j && j->waiting)
			j = j->next;
		if (!j)
			continue;
		j->running = true;
		r = j->step(j, FLD_SLICE);
		j->running = false;
		if (j->cancelled || r == FLD_STEP_DONE)
			finish(j);
		else if (r == FLD_STEP_WAIT)
			j->waiting = true;
	}
	for (size_t i = 0; i < num_users; i++) {
		if (!users[i].head)
			continue;
		users[kept++] = users[i];
		for (struct fld_job *j = users[i].head; j && !runnable; j = j->next)
			runnable = !j->waiting;
	}
	num_users = kept;
	return runnable;
}

size_t fld_work_queued(uid_t uid)
{
	struct user *u = user_of(uid);
	size_t n = 0;

	for (struct fld_job *j = u ? u->head : NULL; j; j = j->next)
		n++;
	return n;
}
