/* SPDX-License-Identifier: MIT */
/*
 * Placeholder protocol so the loop can be tested end to end: a message that
 * starts with "PING" is answered with the same bytes, "PONG" in front;
 * anything else is logged at debug level and ignored (descriptors it
 * carries are closed by the loop).  faultlined speaks the real protocol
 * (daemon/faultlined/session.c); this is linked only into the transport
 * tests' build of it (FLD_ECHO in the Makefile).
 */
#ifndef FLD_ECHO_H
#define FLD_ECHO_H

#include "loop.h"

extern const struct fld_loop_ops fld_echo_ops;

#endif /* FLD_ECHO_H */
