// SPDX-License-Identifier: MIT
/*
 * faultline heal PID SITE...|--over N
 * faultline unheal PID SITE...
 *
 * Heals (or unheals) implicit-check sites of a registered process in
 * place, through faultlined: the process rewrites its own code.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <proto/proto.h>

#include "cli.h"
#include "client.h"
#include "opts.h"

static const char heal_usage[] =
	"Usage: faultline heal [--json] [--socket PATH] PID SITE...\n"
	"       faultline heal [--json] [--socket PATH] PID --over N\n"
	"\n"
	"Heals implicit-check sites of process PID in place: each faulting\n"
	"instruction becomes a jump to an explicit null check, so that a failing\n"
	"check costs no signal.  SITE is a faulting PC, as faultline sites PID\n"
	"lists them.  With --over N: every site that has failed more than N times.\n"
	"The process does it itself, through faultlined.  Needs root, or to be\n"
	"able to ptrace the process (faultlined(8), PERMISSIONS).\n";

static const char unheal_usage[] =
	"Usage: faultline unheal [--json] [--socket PATH] PID SITE...\n"
	"\n"
	"Restores the implicit checks at the healed sites SITE... of process PID\n"
	"(the compiled bytes).  Needs root, or to be able to ptrace the process.\n";

static const char heal_epilogue[] =
	"Exit status: 0 when every site is done, 1 if faultlined cannot be reached\n"
	"or a site is refused (no such site, cannot be healed in place), 2 for\n"
	"usage errors.\n";

/* One site's request; prints its line.  Returns 0 or 1. */
static int one(const char *cmd, const char *path, uint32_t pid, uint32_t kind, uint64_t pc,
	       bool json)
{
	struct cli_reply r;
	int64_t status;

	if (cli_request(path, pid, kind, pc, &r) != 0)
		return cli_reply_fail_pid(cmd, pid, &r);
	if (json) {
		cli_print_json(r.doc);
		status = jv_i64(r.doc, "status");
		json_object_put(r.doc);
		return status != 0;
	}
	status = jv_i64(r.doc, "status");
	if (status == 0 && kind == FL_REQ_HEAL)
		printf("0x%" PRIx64 ": healed (%s)\n", pc, jv_str(r.doc, "tactic"));
	else if (status == 0)
		printf("0x%" PRIx64 ": unhealed (the implicit check is back)\n", pc);
	else if (status == -EOPNOTSUPP)
		fprintf(stderr, "faultline: %s: 0x%" PRIx64 ": cannot be healed in place: %s\n",
			cmd, pc, jv_str(r.doc, "why"));
	else if (kind == FL_REQ_HEAL)
		fprintf(stderr, "faultline: %s: 0x%" PRIx64 ": not an implicit-check site of "
			"pid %u\n", cmd, pc, pid);
	else
		fprintf(stderr, "faultline: %s: 0x%" PRIx64 ": not healed\n", cmd, pc);
	json_object_put(r.doc);
	return status != 0;
}

static int run(int argc, char **argv, bool heal)
{
	const char *cmd = heal ? "heal" : "unheal", *socket = NULL;
	bool json = false;
	uint64_t over = 0;
	unsigned given_over = 0;
	struct cli_opt opts[] = {
		{ "over", CLI_OPT_U64, &over, &given_over, .arg = "N",
		  .help = "every site with more than N failed checks" },
		{ "json", CLI_OPT_FLAG, &json,
		  .help = "each answer as JSON: {\"pid\", \"request\", \"status\",\n"
			  "\"error\", \"tactic\", \"why\"} (docs/json.md)" },
		CLI_OPT_SOCKET(&socket),
		{ NULL },
	};
	const struct cli_opts cli = { cmd, heal ? heal_usage : unheal_usage, heal_epilogue,
				      heal ? opts : opts + 1 };
	char path[512];
	uint32_t pid;
	int first, ret, failed = 0;

	if ((ret = cli_opts_parse(&cli, argc, argv, &first)) != CLI_OPTS_GO)
		return ret;
	if (first >= argc) {
		usage_error(cmd, "no PID given");
		return EXIT_USAGE;
	}
	if (cli_parse_pid(cmd, "PID", argv[first], &pid) != 0)
		return EXIT_USAGE;
	if (given_over && first + 1 < argc) {
		usage_error(cmd, "give SITE... or --over N, not both");
		return EXIT_USAGE;
	}
	if (!given_over && first + 1 >= argc) {
		usage_error(cmd, heal ? "no SITE given (or --over N)" : "no SITE given");
		return EXIT_USAGE;
	}
	for (int i = first + 1; i < argc; i++) {
		uint64_t pc;

		if (cli_parse_u64(cmd, "SITE", argv[i], &pc) != 0)
			return EXIT_USAGE;
		if (pc == 0) {
			usage_error(cmd, "SITE: 0 is no address");
			return EXIT_USAGE;
		}
	}
	if (cli_socket(cmd, socket, path, sizeof(path)) != 0)
		return 1;
	if (given_over) {
		struct cli_reply r;
		uint64_t v;

		if (cli_request(path, pid, FL_REQ_HEAL_OVER, over, &r) != 0)
			return cli_reply_fail_pid(cmd, pid, &r);
		v = jv_u64(r.doc, "value");
		if (json)
			cli_print_json(r.doc);
		else
			printf("pid %u: %" PRIu64 " site%s healed, %" PRIu64 " cannot be healed in "
			       "place (sites with more than %" PRIu64 " failure%s)\n", pid,
			       v & 0xffffffffu, CLI_S(v & 0xffffffffu), v >> 32, over, CLI_S(over));
		json_object_put(r.doc);
		return cli_finish(cmd, 0);
	}
	for (int i = first + 1; i < argc; i++) {
		uint64_t pc;

		cli_parse_u64(cmd, "SITE", argv[i], &pc);
		failed |= one(cmd, path, pid, heal ? FL_REQ_HEAL : FL_REQ_UNHEAL, pc, json);
	}
	ret = cli_finish(cmd, 0);
	return failed ? 1 : ret;
}

int cmd_heal(int argc, char **argv)
{
	return run(argc, argv, true);
}

int cmd_unheal(int argc, char **argv)
{
	return run(argc, argv, false);
}
