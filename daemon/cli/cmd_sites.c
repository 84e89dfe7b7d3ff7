// SPDX-License-Identifier: MIT
/*
 * faultline sites [--json] [--socket PATH] PID
 *
 * Asks faultlined one SITES query (docs/protocol.md) and prints its JSON
 * document (docs/json.md) as is, or as a table of the process's sites,
 * most faults first.  Exit status: 0, 1 when the daemon cannot be reached
 * or answers with an error, 2 for a bad command line.
 */
#include <stdio.h>

#include <proto/proto.h>

#include "cli.h"
#include "client.h"
#include "opts.h"
#include "tables.h"

static const char sites_usage[] =
	"Usage: faultline sites [--json] [--socket PATH] PID\n"
	"\n"
	"Lists the implicit check sites of process PID (its live registration,\n"
	"else the latest exited one faultlined keeps): module, function, faulting\n"
	"and handler PCs, kind and how often the check failed.\n";

int cmd_sites(int argc, char **argv)
{
	bool json = false;
	const char *socket = NULL;
	const struct cli_opt opts[] = {
		CLI_OPT_JSON(&json),
		CLI_OPT_SOCKET(&socket),
		{ NULL },
	};
	const struct cli_opts cli = { "sites", sites_usage, CLI_EXIT_DAEMON, opts };
	struct cli_reply r;
	json_object *arr, *p;
	uint32_t pid;
	int first, ret;

	if ((ret = cli_opts_parse(&cli, argc, argv, &first)) != CLI_OPTS_GO)
		return ret;
	if (first >= argc) {
		usage_error("sites", "no PID given");
		return EXIT_USAGE;
	}
	if (first + 1 < argc) {
		usage_error("sites", "unexpected argument '%s'", argv[first + 1]);
		return EXIT_USAGE;
	}
	if (cli_parse_pid("sites", "PID", argv[first], &pid) != 0)
		return EXIT_USAGE;
	if (cli_command_query("sites", socket, FL_QUERY_SITES, pid, UINT64_MAX, &r) != 0)
		return 1;
	cli_name_from_perf_maps(r.doc);
	if (json) {
		cli_print_json(r.doc);
		json_object_put(r.doc);
		return cli_finish("sites", 0);
	}
	if (!jv_array(r.doc, "processes", &arr)) {
		fprintf(stderr, "faultline: sites: no registered process %u\n", pid);
		json_object_put(r.doc);
		return 1;
	}
	p = json_object_array_get_idx(arr, 0);
	printf("pid %lld (%s), %s, %llu site%s, %llu fault%s\n", (long long)jv_i64(p, "pid"),
	       cli_safe(jv_str(p, "comm")), cli_proc_state(p),
	       (unsigned long long)jv_u64(p, "num_sites"), CLI_S(jv_u64(p, "num_sites")),
	       (unsigned long long)jv_u64(p, "faults"), CLI_S(jv_u64(p, "faults")));
	ret = cli_print_sites(p, "", true, true);
	json_object_put(r.doc);
	return cli_finish("sites", ret);
}
