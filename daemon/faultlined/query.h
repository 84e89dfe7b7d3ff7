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
/* The client is gone: its answer is no longer built (the job is freed). */
void fld_query_cancel(struct fld_job *query);

#endif /* FLD_QUERY_H */
