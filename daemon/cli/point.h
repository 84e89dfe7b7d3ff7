/* SPDX-License-Identifier: MIT */
/*
 * What faultline patch and faultline invalidate share (point.c): hex bytes
 * as an option's argument, and one POINT request sent and its answer
 * printed: the record before and now, or why it was refused.
 */
#ifndef FL_CLI_POINT_H
#define FL_CLI_POINT_H

#include <stdbool.h>
#include <stdint.h>

#include <proto/proto.h>

#include "opts.h"

/* An option's hex bytes: "90 90 cc", "9090cc" or "90:90:cc". */
struct cli_hex {
	uint8_t b[FL_PROTO_POINT_MAX];
	uint32_t len;
};

/* A CLI_OPT_CHECK for a struct cli_hex target: 1 to FL_PROTO_POINT_MAX bytes. */
int cli_opt_hex(const struct cli_opt *opt, const char *cmd, const char *arg);

/*
 * The operands of cmd from argv[first] on: exactly one, the PID.  Returns 0
 * with *pid set, or prints a usage error and returns -EINVAL.
 */
int cli_point_pid(const char *cmd, int argc, char **argv, int first, uint32_t *pid);

/*
 * Sends q (its pid, kind, id or pc, target, and the lengths of bytes and
 * expect) through faultlined at socket and prints the answer: the record
 * before and now (hex, with its id, pc and size), as JSON with json.  A
 * refusal (by the daemon, or by the process: then the record as it is, and
 * the process's reason) goes to stderr.  Returns the exit status: 0, or 1
 * when it was refused or faultlined cannot be reached.
 */
int cli_point_run(const char *cmd, const char *socket, bool json, struct fl_msg_point *q,
		  const struct cli_hex *bytes, const struct cli_hex *expect);

#endif /* FL_CLI_POINT_H */
