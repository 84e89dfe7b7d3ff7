/* SPDX-License-Identifier: MIT */
/* The event loop's poll(2), the fallback backend (loop_poll.c). */
#ifndef FLD_LOOP_POLL_H
#define FLD_LOOP_POLL_H

#include "loop_internal.h"

extern const struct fld_backend fld_backend_poll;

#endif /* FLD_LOOP_POLL_H */
