// SPDX-License-Identifier: MIT
/*
 * faultline request [--json] [--socket PATH] PID ping [VALUE] | heal-threshold N[/S] |
 *                   unheal-after S
 *
 * Sends one REQUEST through the daemon to the process's request ring and
 * prints the completion.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <proto/proto.h>

#include "cli.h"
#include "client.h"
#include "opts.h"

static const char request_usage[] =
	"Usage: faultline request [--json] [--socket PATH] PID ping [VALUE]\n"
	"       faultline request [--json] [--socket PATH] PID heal-threshold N[/S]\n"
	"       faultline request [--json] [--socket PATH] PID unheal-after S\n"
	"\n"
	"Sends a request to process PID through faultlined and its request ring,\n"
	"and prints the process's answer.\n"
	"\n"
	"Requests:\n"
	"  ping [VALUE]      the process answers with VALUE (default 0): shows\n"
	"                    that it serves requests, and how fast\n"
	"  heal-threshold N[/S]\n"
	"                    the process heals a site in place once it fails N\n"
	"                    times (within S seconds); 0: never; the answer is\n"
	"                    the previous setting\n"
	"  unheal-after S    the process unheals a healed site that has not\n"
	"                    failed for S seconds; 0: never\n";

static const char request_epilogue[] =
	"Exit status: 0 on success, 1 if faultlined cannot be reached or the\n"
	"request fails (no such process, not yours, no answer), 2 for usage errors.\n";

int cmd_request(int argc, char **argv)
{
	const char *socket = NULL, *what;
	bool json = false;
	const struct cli_opt opts[] = {
		{ "json", CLI_OPT_FLAG, &json,
		  .help = "the daemon's reply as JSON: {\"pid\", \"request\", \"status\",\n"
			  "\"value\"}" },
		CLI_OPT_SOCKET(&socket),
		{ NULL },
	};
	const struct cli_opts cli = { "request", request_usage, request_epilogue, opts };
	uint32_t pid, kind;
	uint64_t arg = 0;
	char path[512];
	struct cli_reply r;
	struct timespec t0, t1;
	double ms;
	int first, nargs, ret;

	if ((ret = cli_opts_parse(&cli, argc, argv, &first)) != CLI_OPTS_GO)
		return ret;
	nargs = argc - first;
	if (nargs < 1) {
		usage_error("request", "no PID given");
		return EXIT_USAGE;
	}
	if (cli_parse_pid("request", "PID", argv[first], &pid) != 0)
		return EXIT_USAGE;
	if (nargs < 2) {
		usage_error("request", "no request given (ping, heal-threshold or unheal-after)");
		return EXIT_USAGE;
	}
	what = argv[first + 1];
	if (!strcmp(what, "ping")) {
		kind = FL_REQ_PING;
		if (nargs > 3) {
			usage_error("request", "unexpected argument '%s'", argv[first + 3]);
			return EXIT_USAGE;
		}
		if (nargs == 3 && cli_parse_u64("request", "ping", argv[first + 2], &arg) != 0)
			return EXIT_USAGE;
	} else if (!strcmp(what, "heal-threshold") || !strcmp(what, "unheal-after")) {
		bool heal = !strcmp(what, "heal-threshold");
		uint64_t window = 0;
		char *slash;

		kind = heal ? FL_REQ_HEAL_THRESHOLD : FL_REQ_UNHEAL_AFTER;
		if (nargs != 3) {
			if (nargs < 3)
				usage_error("request", "%s: no value given", what);
			else
				usage_error("request", "unexpected argument '%s'", argv[first + 3]);
			return EXIT_USAGE;
		}
		slash = heal ? strchr(argv[first + 2], '/') : NULL;
		if (slash) {
			*slash = 0;
			if (cli_parse_u64("request", "heal-threshold's seconds", slash + 1, &window) != 0)
				return EXIT_USAGE;
		}
		if (cli_parse_u64("request", what, argv[first + 2], &arg) != 0)
			return EXIT_USAGE;
		if (arg > UINT32_MAX || window > 0x7fffffffu) {
			usage_error("request", "%s: more than %u", what,
				    arg > UINT32_MAX ? UINT32_MAX : 0x7fffffffu);
			return EXIT_USAGE;
		}
		if (window && !arg) {
			usage_error("request", "heal-threshold: a window without a count");
			return EXIT_USAGE;
		}
		arg |= window << 32;
	} else {
		usage_error("request", "unknown request '%s' (ping, heal-threshold or "
			    "unheal-after)", what);
		return EXIT_USAGE;
	}
	if (cli_socket("request", socket, path, sizeof(path)) != 0)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (cli_request(path, pid, kind, arg, &r) != 0)
		return cli_reply_fail_pid("request", pid, &r);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	if (json)
		cli_print_json(r.doc);
	else if (kind == FL_REQ_PING)
		printf("pid %u: ping %" PRIu64 ": answered %" PRIu64 " in %.3f ms\n", pid, arg,
		       jv_u64(r.doc, "value"), ms);
	else if (kind == FL_REQ_UNHEAL_AFTER)
		printf("pid %u: unheal after %" PRIu64 " s (was %" PRIu64 ")\n", pid, arg,
		       jv_u64(r.doc, "value"));
	else
		printf("pid %u: heal threshold %" PRIu64 "/%" PRIu64 " s (was %" PRIu64 "/%" PRIu64
		       " s)\n", pid, arg & 0xffffffffu, arg >> 32,
		       jv_u64(r.doc, "value") & 0xffffffffu,
		       (jv_u64(r.doc, "value") >> 32) & 0x7fffffffu);
	json_object_put(r.doc);
	return cli_finish("request", 0);
}
