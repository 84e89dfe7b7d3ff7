/* SPDX-License-Identifier: MIT */
/* The metrics over HTTP (http.c): faultlined --metrics-listen ADDRESS:PORT. */
#ifndef FLD_HTTP_H
#define FLD_HTTP_H

#include "loop.h"

/*
 * Whether spec is an ADDRESS:PORT the listener takes (a numeric IPv4
 * address, or a bracketed IPv6 one; a port from 0, any free one, to
 * 65535).  Returns 0, or -EINVAL with *why saying what is wrong.
 */
int fld_http_check(const char *spec, const char **why);
/*
 * Serves GET /metrics on spec from loop's thread.  Returns 0, or -errno
 * (logged: a bad spec, an address it cannot bind).
 */
int fld_http_start(struct fld_loop *loop, const char *spec);
/* Stops serving (scrapes under way are closed unanswered).  Idempotent. */
void fld_http_stop(void);

#endif /* FLD_HTTP_H */
