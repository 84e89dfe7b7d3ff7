/* SPDX-License-Identifier: MIT */
/* The protocol's daemon side (session.c), queries (query.c), state (state.c). */
#ifndef FLD_SESSION_H
#define FLD_SESSION_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "loop.h"
#include "procs.h"
#include "work.h"
#include "proto/proto.h"

struct fld_session_opts {
	size_t max_exited;		/* exited processes kept, per uid */
	size_t max_modules;		/* per process */
	size_t max_section_bytes;	/* per process: its live modules' sections */
	size_t max_sites;		/* per process: its modules' sites */
	uint64_t max_user_sites;	/* per user (budget.h) */
	uint64_t max_user_bytes;	/* per user: sections and names */
	unsigned request_timeout_ms;
	const char *state_dir;		/* NULL: nothing persisted */
};

extern const struct fld_loop_ops fld_session_ops;

void fld_session_init(const struct fld_session_opts *o);
void fld_session_poll_completions(void);

struct fld_kept;
/*
 * The regions the keeper held (keeper.h), at start after the state is
 * loaded: each goes to its process's entry (a new one when the state file
 * has none), whose counts it gives, final when the process is gone.  The
 * descriptors are closed.
 */
void fld_session_adopt(struct fld_kept *k, size_t n);

void fld_send_error(struct fld_client *c, uint32_t seq, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
int fld_send_reply(struct fld_client *c, uint32_t seq, const char *text, size_t len);

/*
 * query.c: answers a decoded QUERY, a slice at a time (work.h), or at once
 * with an ERROR.  While the answer is built, *slot points at its job (set
 * back to NULL when it is done).
 */
void fld_query(struct fld_client *c, const struct fl_msg *m, struct fld_job **slot);
/* The client is gone: its answer is no longer built (the job is freed). */
void fld_query_cancel(struct fld_job *query);

/* state.c: persistence in the state directory, a record file per process. */
/*
 * Restores what the records in dir_fd (dir names it in messages) hold, and
 * a state.json of version 1, and keeps dir_fd for saving.  A file that
 * cannot be read is kept aside as NAME.corrupt-TIME.  Returns 0, or
 * -ENAMETOOLONG (then nothing is persisted).
 */
int fld_state_load(int dir_fd, const char *dir);
/* Something of p other than its counts changed (p NULL: nothing in particular). */
void fld_state_changed(struct fld_proc *p);
/* p disconnected (fld_proc_exit): its record is written by a job (work.h). */
void fld_state_exited(struct fld_proc *p);
/* Every tick: writes the records that changed. */
void fld_state_tick(void);
/*
 * Writes every record that is not up to date, at once (the daemon is
 * exiting).  Returns 0 (also with nothing to save to); the processes whose
 * records were committed have their slots acknowledged (fld_proc_saved).
 */
int fld_state_save(void);

#endif /* FLD_SESSION_H */
