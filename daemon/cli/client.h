/* SPDX-License-Identifier: MIT */
/*
 * The command-line side of the protocol (docs/protocol.md): connect to
 * faultlined, send one QUERY or REQUEST, read its REPLY messages (or an
 * ERROR), and the bits every daemon subcommand shares.
 */
#ifndef FL_CLI_CLIENT_H
#define FL_CLI_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <json-c/json.h>

#include "metrics/jv.h"

/* What a call to the daemon gave back. */
struct cli_reply {
	int err;		/* 0, or a negative errno (ours, or the daemon's ERROR) */
	bool from_daemon;	/* err came in an ERROR message */
	char msg[600];		/* when err: what went wrong, without "faultline: " */
	json_object *doc;	/* when !err: the reply's document (json_object_put it) */
};

/*
 * The daemon's socket: opt (--socket), else $FAULTLINE_SOCKET, else
 * /run/faultline/faultlined.sock as root; otherwise the user's own daemon,
 * $XDG_RUNTIME_DIR/faultline/faultlined.sock, when one answers there, else
 * the system daemon at /run/faultline/faultlined.sock when it answers, else
 * the user's path (the system one without XDG_RUNTIME_DIR), as the library
 * looks for a daemon to register with.  Returns 0 with the path in buf, or
 * -ENAMETOOLONG with a message in buf.
 */
int cli_socket_path(const char *opt, char *buf, size_t len);

/*
 * Sends QUERY (what, pid, arg) to the daemon at path and reads the whole
 * reply.  Returns 0 with r->doc set, or a negative errno with r->msg set.
 */
int cli_query(const char *path, uint32_t what, uint32_t pid, uint64_t arg,
	      struct cli_reply *r);

/* The same for a REQUEST (pid, kind, arg). */
int cli_request(const char *path, uint32_t pid, uint32_t kind, uint64_t arg,
		struct cli_reply *r);

struct fl_msg_point;

/*
 * The same for a POINT: q's fields (its header is filled in here), then
 * q->len bytes and q->expect_len expect bytes (each at most
 * FL_PROTO_POINT_MAX).
 */
int cli_point_request(const char *path, const struct fl_msg_point *q, const void *bytes,
		      const void *expect, struct cli_reply *r);

/*
 * Prints r's error as "faultline: CMD: ..." on stderr.  Returns 1, the exit
 * status for it.
 */
int cli_reply_fail(const char *cmd, const struct cli_reply *r);

/*
 * The same, but "no registered process PID" when the daemon answered
 * ESRCH.  Returns 1.
 */
int cli_reply_fail_pid(const char *cmd, uint32_t pid, const struct cli_reply *r);

/*
 * The daemon's socket for command cmd, as cli_socket_path resolves opt.
 * Returns 0 with the path in buf, or prints "faultline: CMD: why" and
 * returns 1, the exit status for it.
 */
int cli_socket(const char *cmd, const char *opt, char *buf, size_t len);

/*
 * A daemon command's whole QUERY: resolves the socket (opt as
 * cli_socket), sends (what, pid, arg) and reads the reply.  Returns 0 with
 * r->doc set, or prints the error as cli_reply_fail_pid and returns 1.
 */
int cli_command_query(const char *cmd, const char *socket, uint32_t what, uint32_t pid,
		      uint64_t arg, struct cli_reply *r);

/*
 * The end of a command that printed to stdout: err -ENOMEM, or stdout that
 * cannot be flushed, is "faultline: CMD: ..." on stderr.  Returns 0, or 1
 * (the exit status) after such a message.
 */
int cli_finish(const char *cmd, int err);

/*
 * Parses a PID argument (a positive decimal integer that fits a pid_t).
 * Returns 0 with *pid set, or prints a usage error and returns -EINVAL.
 */
int cli_parse_pid(const char *cmd, const char *what, const char *s, uint32_t *pid);

/* Prints doc as faultline prints JSON (pretty, one document, newline). */
void cli_print_json(json_object *doc);


/*
 * s for a table: control characters (a name is whatever a process sent)
 * become '?', and NULL is "?".  The result lives until the eighth call
 * after this one.
 */
const char *cli_safe(const char *s);

/* The last component of a module path ("(main program)" stays as is). */
const char *cli_basename(const char *path);

#endif /* FL_CLI_CLIENT_H */
