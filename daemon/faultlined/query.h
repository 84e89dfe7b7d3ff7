/* SPDX-License-Identifier: MIT */
/* QUERY (query.c): stats, sites, stack maps, as JSON built a slice at a time. */
#ifndef FLD_QUERY_H
#define FLD_QUERY_H

#include "loop.h"
#include "work.h"
#include "proto/proto.h"

/*
 * Answers a decoded QUERY, a slice at a time (work.h), or at once
 * with an ERROR.  While the answer is built, *slot points at its job (set
 * back to NULL when it is done).
 */
void fld_query(struct fld_client *c, const struct fl_msg *m, struct fld_job **slot);
/*
 * The end of a query of the daemon's own: text, NUL-terminated, len bytes
 * before the NUL, is the whole document and the callee's to free; NULL
 * (len 0) when the daemon ran out of memory.
 */
typedef void fld_query_done_fn(void *ctx, char *text, size_t len);
/*
 * A query of the daemon's own (the metrics listener, http.c): what with
 * arg (proto.h) about every process, as root sees them, built a slice at a
 * time like a client's; done(ctx, ...) gets the document, unless the job
 * is cancelled first.  *slot points at the job meanwhile, and is NULL
 * again before done is called.  Returns 0, or -ENOMEM (then done is never
 * called).
 */
int fld_query_internal(uint32_t what, uint64_t arg, fld_query_done_fn *done, void *ctx,
		       struct fld_job **slot);
/* The client is gone: its answer is no longer built (the job is freed). */
void fld_query_cancel(struct fld_job *query);

#endif /* FLD_QUERY_H */
