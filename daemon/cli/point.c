// SPDX-License-Identifier: MIT
/* Hex bytes, and one POINT request and its answer: see point.h. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "client.h"
#include "point.h"

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int cli_opt_hex(const struct cli_opt *opt, const char *cmd, const char *arg)
{
	struct cli_hex *h = opt->target;
	const char *c = arg;

	h->len = 0;
	while (*c) {
		int hi, lo;

		if ((*c == ' ' || *c == ':') && h->len) {
			c++;
			continue;
		}
		hi = hex_digit(c[0]);
		lo = hi < 0 ? -1 : hex_digit(c[1]);
		if (lo < 0) {
			usage_error(cmd, "--%s: expected hex bytes ('90 90 cc' or '9090cc'), "
				    "not '%s'", opt->name, arg);
			return -EINVAL;
		}
		if (h->len == FL_PROTO_POINT_MAX) {
			usage_error(cmd, "--%s: more than %u bytes", opt->name, FL_PROTO_POINT_MAX);
			return -EINVAL;
		}
		h->b[h->len++] = (uint8_t)(hi << 4 | lo);
		c += 2;
	}
	if (h->len == 0) {
		usage_error(cmd, "--%s: no bytes given", opt->name);
		return -EINVAL;
	}
	return 0;
}

int cli_point_pid(const char *cmd, int argc, char **argv, int first, uint32_t *pid)
{
	if (argc - first < 1) {
		usage_error(cmd, "no PID given");
		return -EINVAL;
	}
	if (argc - first > 1) {
		usage_error(cmd, "unexpected argument '%s'", argv[first + 1]);
		return -EINVAL;
	}
	return cli_parse_pid(cmd, "PID", argv[first], pid);
}

static const char *what_of(uint32_t kind)
{
	return kind == FL_REQ_STACKMAP_INVALIDATE ? "stack map record" : "patch point";
}

/* "  before: 0f 1f 00" for a point of the reply (absent: nothing). */
static void print_bytes(const char *label, json_object *pt)
{
	const char *hex = jv_str(pt, "bytes");

	if (!pt || !hex)
		return;
	printf("  %-7s", label);
	for (size_t i = 0; hex[i] && hex[i + 1]; i += 2)
		printf(" %c%c", hex[i], hex[i + 1]);
	printf("\n");
}

static void print_point(const char *cmd, uint32_t pid, uint32_t kind, json_object *doc)
{
	json_object *before = jv_get(doc, "before"), *now = jv_get(doc, "now");
	json_object *pt = now ? now : before;

	if (!pt)
		return;
	printf("pid %u: %s %" PRIu64 " at 0x%" PRIx64 " (%" PRIu64 " bytes%s%s)\n", pid,
	       what_of(kind), jv_u64(pt, "id"), jv_u64(pt, "pc"), jv_u64(pt, "size"),
	       jv_bool(pt, "declared") ? ", declared" : "",
	       jv_bool(pt, "changed") ? ", changed" : ", as compiled");
	print_bytes("before:", before);
	print_bytes("now:", now);
	(void)cmd;
}

int cli_point_run(const char *cmd, const char *socket, bool json, struct fl_msg_point *q,
		  const struct cli_hex *bytes, const struct cli_hex *expect)
{
	char path[512];
	struct cli_reply r;
	int64_t status;
	int ret = 0;

	q->len = bytes ? bytes->len : 0;
	q->expect_len = expect ? expect->len : 0;
	if (cli_socket(cmd, socket, path, sizeof(path)) != 0)
		return 1;
	if (cli_point_request(path, q, bytes ? bytes->b : NULL, expect ? expect->b : NULL,
			      &r) != 0) {
		if (r.from_daemon && r.err == -EPROTO && strstr(r.msg, "unknown message type"))
			snprintf(r.msg, sizeof(r.msg), "this faultlined does not know patch "
				 "requests (it is older than this faultline)");
		return cli_reply_fail_pid(cmd, q->pid, &r);
	}
	status = jv_i64(r.doc, "status");
	if (json)
		cli_print_json(r.doc);
	else
		print_point(cmd, q->pid, q->kind, r.doc);
	if (status != 0) {
		const char *msg = jv_str(r.doc, "message");

		fprintf(stderr, "faultline: %s: pid %u refused: %s (%s)\n", cmd, q->pid,
			cli_safe(msg && *msg ? msg : "no reason given"),
			cli_safe(jv_str(r.doc, "error")));
		ret = 1;
	}
	json_object_put(r.doc);
	return ret ? ret : cli_finish(cmd, 0);
}
