/* SPDX-License-Identifier: MIT */
/*
 * Answers to a client (reply.c): an ERROR, or a REPLY cut into messages of
 * the protocol's size.  Used by whatever answers a client: the session, the
 * queries and the requests.  Loop thread only.
 */
#ifndef FLD_REPLY_H
#define FLD_REPLY_H

#include <stddef.h>
#include <stdint.h>

#include "loop.h"

/* Sends an ERROR (err a negative errno) with the formatted text, cut to 512 bytes. */
void fld_send_error(struct fld_client *c, uint32_t seq, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/*
 * Sends text as REPLY messages (FL_REPLY_MORE on all but the last).
 * Returns 0, or the -errno of fld_client_send (the rest is not sent).
 */
int fld_send_reply(struct fld_client *c, uint32_t seq, const char *text, size_t len);

#endif /* FLD_REPLY_H */
