// SPDX-License-Identifier: MIT
/*
 * faultline patch PID --patchpoint ID|--pc ADDR --bytes HEX [--expect HEX]
 * faultline patch PID --reset --patchpoint ID|--pc ADDR
 *
 * Rewrites (or restores) a patch point of a registered process through
 * faultlined: the process changes its own code (never ptrace) and answers
 * with the region before and now.
 */
#include <string.h>

#include "cli.h"
#include "client.h"
#include "opts.h"
#include "point.h"

static const char patch_usage[] =
	"Usage: faultline patch [--json] [--socket PATH] PID --patchpoint ID|--pc ADDR\n"
	"                       --bytes HEX [--expect HEX]\n"
	"       faultline patch [--json] [--socket PATH] PID --reset --patchpoint ID|--pc ADDR\n"
	"\n"
	"Writes HEX over the whole region of a patch point of process PID (padded\n"
	"with nops), or with --reset restores the bytes it was compiled with.  The\n"
	"process does it itself, through faultlined, and answers with the region\n"
	"before and now.  Writing bytes needs root, and a process that opted in\n"
	"(FAULTLINE_ALLOW_PATCH=1; never a set-id program); --reset needs root,\n"
	"or to be able to ptrace the process (faultlined(8), PERMISSIONS).\n";

static const char patch_epilogue[] =
	"HEX is bytes in hex: '90 90 cc', '9090cc' or '90:90:cc', at most 256.\n"
	"\n"
	"Exit status: 0 on success, 1 if faultlined cannot be reached or the\n"
	"request is refused (by faultlined or by the process), 2 for usage errors.\n";

int cmd_patch(int argc, char **argv)
{
	const char *socket = NULL;
	bool json = false, reset = false;
	unsigned given_id = 0, given_pc = 0, given_bytes = 0, given_expect = 0;
	struct fl_msg_point q;
	struct cli_hex bytes, expect;
	const struct cli_opt opts[] = {
		{ "patchpoint", CLI_OPT_U64, &q.id, &given_id, .arg = "ID",
		  .help = "the patch point with this ID (unique in the process)" },
		{ "pc", CLI_OPT_U64, &q.pc, &given_pc, .min = 1, .arg = "ADDR",
		  .expect = "an address (not 0)",
		  .help = "the patch point whose region starts at ADDR" },
		{ "bytes", CLI_OPT_CHECK, &bytes, &given_bytes, .check = cli_opt_hex,
		  .arg = "HEX", .help = "the new code (root only)" },
		{ "expect", CLI_OPT_CHECK, &expect, &given_expect, .check = cli_opt_hex,
		  .arg = "HEX", .help = "refuse unless the region holds exactly these bytes" },
		{ "reset", CLI_OPT_FLAG, &reset,
		  .help = "restore the compiled bytes" },
		{ "json", CLI_OPT_FLAG, &json,
		  .help = "the answer as JSON: {\"pid\", \"request\", \"status\",\n"
			  "\"error\", \"message\", \"before\", \"now\"}" },
		CLI_OPT_SOCKET(&socket),
		{ NULL },
	};
	const struct cli_opts cli = { "patch", patch_usage, patch_epilogue, opts };
	int first, ret;

	memset(&q, 0, sizeof(q));
	if ((ret = cli_opts_parse(&cli, argc, argv, &first)) != CLI_OPTS_GO)
		return ret;
	if (cli_point_pid("patch", argc, argv, first, &q.pid) != 0)
		return EXIT_USAGE;
	if (given_id + given_pc != 1) {
		usage_error("patch", given_id + given_pc ? "give --patchpoint or --pc, not both" :
			    "which patch point? give --patchpoint ID or --pc ADDR");
		return EXIT_USAGE;
	}
	if (given_id > 1 || given_pc > 1 || given_bytes > 1 || given_expect > 1) {
		usage_error("patch", "an option given twice");
		return EXIT_USAGE;
	}
	if (reset && (given_bytes || given_expect)) {
		usage_error("patch", "--reset takes no --bytes or --expect");
		return EXIT_USAGE;
	}
	if (!reset && !given_bytes) {
		usage_error("patch", "no --bytes given (or --reset)");
		return EXIT_USAGE;
	}
	/* By address when given: the id is then not sent. */
	if (given_pc)
		q.id = 0;
	q.kind = reset ? FL_REQ_PATCHPOINT_RESET : FL_REQ_PATCHPOINT_WRITE;
	return cli_point_run("patch", socket, json, &q, reset ? NULL : &bytes,
			     given_expect ? &expect : NULL);
}
