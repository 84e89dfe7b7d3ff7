// SPDX-License-Identifier: MIT
/*
 * faultline stackmaps [--id ID] [--json] [--socket PATH] PID
 * faultline request [--json] [--socket PATH] PID ping [VALUE] | heal-threshold N
 *
 * stackmaps prints the stack map registry faultlined keeps for a process,
 * every location decoded (x86-64 register names); request sends one
 * REQUEST through the daemon to the process's request ring and prints the
 * completion.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <faultline/format.h>
#include <proto/proto.h>

#include "cli.h"
#include "client.h"

static int parse_u64(const char *cmd, const char *what, const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	if (s[0] < '0' || s[0] > '9' || errno || *end) {
		usage_error(cmd, "%s: expected a non-negative integer, not '%s'", what, s);
		return -EINVAL;
	}
	return 0;
}

static int socket_path(const char *cmd, const char *opt, char *buf, size_t len)
{
	if (cli_socket_path(opt, buf, len) != 0) {
		fprintf(stderr, "faultline: %s: %s\n", cmd, buf);
		return -1;
	}
	return 0;
}

static int reply_error(const char *cmd, uint32_t pid, const struct cli_reply *r)
{
	if (r->from_daemon && r->err == -ESRCH)
		fprintf(stderr, "faultline: %s: no registered process %u\n", cmd, pid);
	else
		cli_reply_fail(cmd, r);
	return 1;
}

/* "rsp", else "reg N" for a number x86-64 does not name. */
static const char *reg_name(unsigned reg, char *buf, size_t len)
{
	const char *n = cli_dwarf_reg_name(reg);

	if (n)
		return n;
	snprintf(buf, len, "reg %u", reg);
	return buf;
}

/* One location: where the value is, in the words of LLVM's StackMaps docs. */
static void print_location(size_t i, json_object *l)
{
	const char *kind = cli_str(l, "kind");
	int64_t off = cli_i64(l, "offset");
	/* In unsigned arithmetic: the daemon may send INT64_MIN. */
	unsigned long long mag = off < 0 ? -(uint64_t)off : (uint64_t)off;
	char buf[32];
	const char *reg = reg_name((unsigned)cli_u64(l, "dwarf_reg"), buf, sizeof(buf));

	kind = kind ? kind : "?";
	printf("      #%zu %-13s ", i, cli_safe(kind));
	if (!strcmp(kind, "Register"))
		printf("%s", reg);
	else if (!strcmp(kind, "Direct"))
		printf("%s %c %llu", reg, off < 0 ? '-' : '+', mag);
	else if (!strcmp(kind, "Indirect"))
		printf("[%s %c %llu]", reg, off < 0 ? '-' : '+', mag);
	else if (!strcmp(kind, "Constant"))
		printf("%lld", (long long)off);
	else if (!strcmp(kind, "ConstantIndex"))
		printf("%" PRIu64 " (constant #%lld)", cli_u64(l, "constant"), (long long)off);
	else
		printf("dwarf_reg %s, offset %lld", reg, (long long)off);
	printf(", size %llu\n", (unsigned long long)cli_u64(l, "size"));
}

static void stackmaps_usage(FILE *out)
{
	fputs("Usage: faultline stackmaps [--id ID | --pc PC] [--json] [--socket PATH] PID\n"
	      "\n"
	      "Prints the stack map records faultlined keeps for process PID, at their\n"
	      "runtime PCs, with every location decoded (x86-64 register names).\n"
	      "\n"
	      "Options:\n"
	      "  --id ID         only the records with this stack map ID\n"
	      "  --pc PC         only the records at this runtime PC (e.g. 0x401a2b)\n"
	      "  --json          the daemon's JSON document (see faultline(1))\n"
	      "  --socket PATH   faultlined's socket (see faultline stats --help)\n"
	      "  -h, --help      show this help\n"
	      "\n"
	      "Exit status: 0 on success, 1 if faultlined cannot be reached, answers with\n"
	      "an error, or has no record with ID (at PC), 2 for usage errors.\n", out);
}

int cmd_stackmaps(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "id", required_argument, NULL, 'i' },
		{ "pc", required_argument, NULL, 'p' },
		{ "json", no_argument, NULL, 'j' },
		{ "socket", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *socket = NULL;
	uint64_t id = UINT64_MAX;
	bool json = false, by_pc = false, by_id = false;
	char path[512];
	struct cli_reply r;
	json_object *procs, *p, *recs;
	uint32_t pid;
	size_t n;
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			if (parse_u64("stackmaps", "--id", optarg, &id) != 0)
				return EXIT_USAGE;
			if (id == UINT64_MAX) {
				usage_error("stackmaps", "--id: %s is reserved (it means all)", optarg);
				return EXIT_USAGE;
			}
			by_id = true;
			break;
		case 'p':
			if (parse_u64("stackmaps", "--pc", optarg, &id) != 0)
				return EXIT_USAGE;
			by_pc = true;
			break;
		case 'j':
			json = true;
			break;
		case 'S':
			socket = optarg;
			break;
		case 'h':
			stackmaps_usage(stdout);
			return 0;
		case ':':
			usage_error("stackmaps", "option '%s' needs an argument", argv[optind - 1]);
			return EXIT_USAGE;
		default:
			usage_error("stackmaps", "unknown option '%s'", argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	if (by_pc && by_id) {
		usage_error("stackmaps", "--id and --pc do not go together");
		return EXIT_USAGE;
	}
	if (optind >= argc) {
		usage_error("stackmaps", "no PID given");
		return EXIT_USAGE;
	}
	if (optind + 1 < argc) {
		usage_error("stackmaps", "unexpected argument '%s'", argv[optind + 1]);
		return EXIT_USAGE;
	}
	if (cli_parse_pid("stackmaps", "PID", argv[optind], &pid) != 0)
		return EXIT_USAGE;
	if (socket_path("stackmaps", socket, path, sizeof(path)) != 0)
		return 1;
	if (cli_query(path, by_pc ? FL_QUERY_STACKMAP_PC : FL_QUERY_STACKMAPS, pid, id, &r) != 0)
		return reply_error("stackmaps", pid, &r);
	if (!cli_array(r.doc, "processes", &procs)) {
		json_object_put(r.doc);
		fprintf(stderr, "faultline: stackmaps: no registered process %u\n", pid);
		return 1;
	}
	p = json_object_array_get_idx(procs, 0);
	n = cli_array(p, "records", &recs);
	if (json) {
		cli_print_json(r.doc);
	} else {
		printf("pid %lld (%s): %zu stack map record%s\n", (long long)cli_i64(p, "pid"),
		       cli_safe(cli_str(p, "comm")), n, n == 1 ? "" : "s");
		for (size_t i = 0; i < n; i++) {
			json_object *rec = json_object_array_get_idx(recs, i), *locs;
			size_t nl = cli_array(rec, "locations", &locs);

			printf("  record %" PRIu64 " at 0x%" PRIx64 " in %s: stack size %" PRIu64
			       ", %zu location%s, %llu live-out%s\n",
			       cli_u64(rec, "id"), cli_u64(rec, "pc"),
			       cli_safe(cli_basename(cli_str(rec, "module"))), cli_u64(rec, "stack_size"),
			       nl, nl == 1 ? "" : "s", (unsigned long long)cli_u64(rec, "live_outs"),
			       cli_u64(rec, "live_outs") == 1 ? "" : "s");
			for (size_t k = 0; k < nl; k++)
				print_location(k, json_object_array_get_idx(locs, k));
		}
	}
	json_object_put(r.doc);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "faultline: stackmaps: write error: %s\n", strerror(errno));
		return 1;
	}
	if (by_pc && n == 0) {
		fprintf(stderr, "faultline: stackmaps: pid %u has no stack map record at 0x%" PRIx64
			"\n", pid, id);
		return 1;
	}
	if (!by_pc && id != UINT64_MAX && n == 0) {
		fprintf(stderr, "faultline: stackmaps: pid %u has no stack map record %" PRIu64 "\n",
			pid, id);
		return 1;
	}
	return 0;
}

static void request_usage(FILE *out)
{
	fputs("Usage: faultline request [--json] [--socket PATH] PID ping [VALUE]\n"
	      "       faultline request [--json] [--socket PATH] PID heal-threshold N\n"
	      "\n"
	      "Sends a request to process PID through faultlined and its request ring,\n"
	      "and prints the process's answer.\n"
	      "\n"
	      "Requests:\n"
	      "  ping [VALUE]      the process answers with VALUE (default 0): shows\n"
	      "                    that it serves requests, and how fast\n"
	      "  heal-threshold N  sets the process's heal threshold to N; the answer\n"
	      "                    is the previous one\n"
	      "\n"
	      "Options:\n"
	      "  --json          the daemon's reply as JSON: {\"pid\", \"request\", \"status\",\n"
	      "                  \"value\"}\n"
	      "  --socket PATH   faultlined's socket (see faultline stats --help)\n"
	      "  -h, --help      show this help\n"
	      "\n"
	      "Exit status: 0 on success, 1 if faultlined cannot be reached or the\n"
	      "request fails (no such process, not yours, no answer), 2 for usage errors.\n",
	      out);
}

int cmd_request(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "socket", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *socket = NULL, *what;
	bool json = false;
	uint32_t pid, kind;
	uint64_t arg = 0;
	char path[512];
	struct cli_reply r;
	struct timespec t0, t1;
	double ms;
	int c, nargs;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'S':
			socket = optarg;
			break;
		case 'h':
			request_usage(stdout);
			return 0;
		case ':':
			usage_error("request", "option '%s' needs an argument", argv[optind - 1]);
			return EXIT_USAGE;
		default:
			usage_error("request", "unknown option '%s'", argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	nargs = argc - optind;
	if (nargs < 1) {
		usage_error("request", "no PID given");
		return EXIT_USAGE;
	}
	if (cli_parse_pid("request", "PID", argv[optind], &pid) != 0)
		return EXIT_USAGE;
	if (nargs < 2) {
		usage_error("request", "no request given (ping or heal-threshold)");
		return EXIT_USAGE;
	}
	what = argv[optind + 1];
	if (!strcmp(what, "ping")) {
		kind = FL_REQ_PING;
		if (nargs > 3) {
			usage_error("request", "unexpected argument '%s'", argv[optind + 3]);
			return EXIT_USAGE;
		}
		if (nargs == 3 && parse_u64("request", "ping", argv[optind + 2], &arg) != 0)
			return EXIT_USAGE;
	} else if (!strcmp(what, "heal-threshold")) {
		kind = FL_REQ_HEAL_THRESHOLD;
		if (nargs != 3) {
			if (nargs < 3)
				usage_error("request", "heal-threshold: no value given");
			else
				usage_error("request", "unexpected argument '%s'", argv[optind + 3]);
			return EXIT_USAGE;
		}
		if (parse_u64("request", "heal-threshold", argv[optind + 2], &arg) != 0)
			return EXIT_USAGE;
		if (arg > UINT32_MAX) {
			usage_error("request", "heal-threshold: %s is more than %u", argv[optind + 2],
				    UINT32_MAX);
			return EXIT_USAGE;
		}
	} else {
		usage_error("request", "unknown request '%s' (ping or heal-threshold)", what);
		return EXIT_USAGE;
	}
	if (socket_path("request", socket, path, sizeof(path)) != 0)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (cli_request(path, pid, kind, arg, &r) != 0)
		return reply_error("request", pid, &r);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	if (json)
		cli_print_json(r.doc);
	else if (kind == FL_REQ_PING)
		printf("pid %u: ping %" PRIu64 ": answered %" PRIu64 " in %.3f ms\n", pid, arg,
		       cli_u64(r.doc, "value"), ms);
	else
		printf("pid %u: heal threshold %" PRIu64 " (was %" PRIu64 ")\n", pid, arg,
		       cli_u64(r.doc, "value"));
	json_object_put(r.doc);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "faultline: request: write error: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}
