/* SPDX-License-Identifier: MIT */
/* The event loop's io_uring, the normal one backend (loop_uring.c). */
#ifndef FLD_LOOP_URING_H
#define FLD_LOOP_URING_H

#include "loop_internal.h"

extern const struct fld_backend fld_backend_uring;

#endif /* FLD_LOOP_URING_H */
