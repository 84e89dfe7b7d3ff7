/* SPDX-License-Identifier: MIT */
/* The protocol's daemon side (session.c), queries (query.c), state (state.c). */
#ifndef FLD_SESSION_H
#define FLD_SESSION_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "loop.h"
#include "proto/proto.h"

struct fld_session_opts {
	size_t max_exited;		/* exited processes kept, per uid */
	size_t max_modules;		/* per process */
	size_t max_section_bytes;	/* per process: its live modules' sections */
	size_t max_sites;		/* per process: its modules' sites */
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

/* query.c: answers a decoded QUERY. */
void fld_query(struct fld_client *c, const struct fl_msg *m);

/* state.c: persistence in the state directory. */
/*
 * Restores what dir_fd's state file (dir names it in messages) holds, and
 * keeps dir_fd for saving.  A file that cannot be read is kept aside as
 * state.json.corrupt-TIME.  Returns 0, or -ENAMETOOLONG (then nothing is
 * persisted).
 */
int fld_state_load(int dir_fd, const char *dir);
void fld_state_changed(void);
void fld_state_tick(void);
/* Returns 0 (also with nothing to save to) or -errno; saved, fld_procs_saved is called. */
int fld_state_save(void);

#endif /* FLD_SESSION_H */
