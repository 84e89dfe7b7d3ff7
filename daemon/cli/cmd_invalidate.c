// SPDX-License-Identifier: MIT
/*
 * faultline invalidate PID --id ID|--pc ADDR --target ADDR
 *
 * Invalidates a stack map record of a registered process through
 * faultlined: the process writes a call to ADDR at the record's address (in
 * its shadow), itself, and answers with the shadow before and now.
 */
#include <string.h>

#include "cli.h"
#include "client.h"
#include "opts.h"
#include "point.h"

static const char invalidate_usage[] =
	"Usage: faultline invalidate [--json] [--socket PATH] PID --id ID|--pc ADDR\n"
	"                            --target ADDR\n"
	"\n"
	"Writes, at the address of a stack map record of process PID, a call to\n"
	"ADDR (the runtime's entry that rebuilds the frame), within the record's\n"
	"shadow.  The process does it itself, through faultlined, and answers\n"
	"with the shadow before and now.  Needs root, or to be able to ptrace\n"
	"the process (faultlined(8), PERMISSIONS).\n";

static const char invalidate_epilogue[] =
	"Exit status: 0 on success, 1 if faultlined cannot be reached or the\n"
	"request is refused (by faultlined or by the process), 2 for usage errors.\n";

int cmd_invalidate(int argc, char **argv)
{
	const char *socket = NULL;
	bool json = false;
	unsigned given_id = 0, given_pc = 0, given_target = 0;
	struct fl_msg_point q;
	const struct cli_opt opts[] = {
		{ "id", CLI_OPT_U64, &q.id, &given_id, .arg = "ID",
		  .help = "the record with this ID (unique in the process)" },
		{ "pc", CLI_OPT_U64, &q.pc, &given_pc, .min = 1, .arg = "ADDR",
		  .expect = "an address (not 0)", .help = "the record at ADDR" },
		{ "target", CLI_OPT_U64, &q.target, &given_target, .min = 1, .arg = "ADDR",
		  .expect = "an address (not 0)", .help = "what the call calls" },
		{ "json", CLI_OPT_FLAG, &json,
		  .help = "the answer as JSON (see faultline patch --help)" },
		CLI_OPT_SOCKET(&socket),
		{ NULL },
	};
	const struct cli_opts cli = { "invalidate", invalidate_usage, invalidate_epilogue, opts };
	int first, ret;

	memset(&q, 0, sizeof(q));
	if ((ret = cli_opts_parse(&cli, argc, argv, &first)) != CLI_OPTS_GO)
		return ret;
	if (cli_point_pid("invalidate", argc, argv, first, &q.pid) != 0)
		return EXIT_USAGE;
	if (given_id + given_pc != 1) {
		usage_error("invalidate", given_id + given_pc ? "give --id or --pc, not both" :
			    "which record? give --id ID or --pc ADDR");
		return EXIT_USAGE;
	}
	if (!given_target) {
		usage_error("invalidate", "no --target given");
		return EXIT_USAGE;
	}
	if (given_pc)
		q.id = 0;
	q.kind = FL_REQ_STACKMAP_INVALIDATE;
	return cli_point_run("invalidate", socket, json, &q, NULL, NULL);
}
