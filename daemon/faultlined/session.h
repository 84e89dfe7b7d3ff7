/* SPDX-License-Identifier: MIT */
/* The protocol's daemon side (session.c): what each client message does. */
#ifndef FLD_SESSION_H
#define FLD_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "loop.h"

struct fld_session_opts {
	size_t max_exited;		/* exited processes kept, per uid */
	size_t max_modules;		/* per process */
	size_t max_section_bytes;	/* per process: its live modules' sections */
	size_t max_sites;		/* per process: its modules' sites */
	uint64_t max_user_sites;	/* per user (budget.h) */
	uint64_t max_user_bytes;	/* per user: sections and names */
	uint64_t max_user_state_bytes;	/* per user: its records in the state directory */
	unsigned request_timeout_ms;
	const char *state_dir;		/* NULL: nothing persisted */
};

extern const struct fld_loop_ops fld_session_ops;

void fld_session_init(const struct fld_session_opts *o);

struct fld_kept;
/*
 * The regions the keeper held (keeper.h), at start after the state is
 * loaded: each goes to its process's entry (a new one when the state file
 * has none), whose counts it gives, final when the process is gone.  The
 * descriptors are closed.
 */
void fld_session_adopt(struct fld_kept *k, size_t n);
/*
 * At a stop, once every client is gone: the processes that disconnected
 * and lived on are looked at once more, so that those gone since the last
 * tick are saved with their final counts (the keeper stops with the daemon).
 */
void fld_session_stop(void);

#endif /* FLD_SESSION_H */
