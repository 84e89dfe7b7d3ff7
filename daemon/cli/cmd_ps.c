// SPDX-License-Identifier: MIT
/*
 * faultline ps [--json] [--socket PATH]
 *
 * Asks faultlined one PS query (docs/protocol.md) and prints its JSON
 * document (docs/json.md) as is, or as a table of the processes by pid.
 * Exit status: 0, 1 when the daemon cannot be reached or answers with an
 * error, 2 for a bad command line.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <proto/proto.h>

#include "cli.h"
#include "client.h"
#include "opts.h"
#include "tables.h"

/* ps lists by pid, as ps(1) does; the latest registration of a pid first. */
static int cmp_pid(const void *pa, const void *pb)
{
	json_object *a = *(json_object *const *)pa, *b = *(json_object *const *)pb;
	int64_t ka = jv_i64(a, "pid"), kb = jv_i64(b, "pid");

	if (ka != kb)
		return ka < kb ? -1 : 1;
	return jv_u64(a, "registered_ms") > jv_u64(b, "registered_ms") ? -1 :
	       jv_u64(a, "registered_ms") < jv_u64(b, "registered_ms");
}

static const char ps_usage[] =
	"Usage: faultline ps [--json] [--socket PATH]\n"
	"\n"
	"Lists the processes registered with faultlined (and the exited ones it\n"
	"keeps): pid, command name, uid, state, modules, sites and faults.\n";

int cmd_ps(int argc, char **argv)
{
	bool json = false;
	const char *socket = NULL;
	const struct cli_opt opts[] = {
		CLI_OPT_JSON(&json),
		CLI_OPT_SOCKET(&socket),
		{ NULL },
	};
	const struct cli_opts cli = { "ps", ps_usage, CLI_EXIT_DAEMON, opts };
	struct cli_reply r;
	json_object *arr, **procs;
	size_t n;
	int first, ret;

	if ((ret = cli_opts_parse(&cli, argc, argv, &first)) != CLI_OPTS_GO)
		return ret;
	if (first < argc) {
		usage_error("ps", "unexpected argument '%s'", argv[first]);
		return EXIT_USAGE;
	}
	if (cli_command_query("ps", socket, FL_QUERY_PS, 0, UINT64_MAX, &r) != 0)
		return 1;
	if (json) {
		cli_print_json(r.doc);
		json_object_put(r.doc);
		return cli_finish("ps", 0);
	}
	n = jv_array(r.doc, "processes", &arr);
	procs = cli_sorted(arr, n, cmp_pid);
	if (!procs) {
		json_object_put(r.doc);
		return cli_finish("ps", -ENOMEM);
	}
	cli_print_proc_header();
	for (size_t i = 0; i < n; i++)
		cli_print_proc_row(procs[i]);
	free(procs);
	json_object_put(r.doc);
	return cli_finish("ps", 0);
}
