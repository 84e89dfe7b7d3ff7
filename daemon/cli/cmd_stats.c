// SPDX-License-Identifier: MIT
/*
 * faultline stats [--json|--openmetrics|--prometheus] [--pid PID] [--sort faults|recent]
 *                 [--top N] [--all]
 *
 * Asks faultlined one STATS query (docs/protocol.md) and prints its JSON
 * document (docs/json.md) as is, as metrics, or as a table of every
 * process and its sites.  The daemon lists only the sites that failed
 * (--all: every one), and at most N a process (--top), so that an answer
 * about processes of 10^5 sites each stays as small as what failed.  Exit status: 0, 1 when the daemon cannot be
 * reached or answers with an error, 2 for a bad command line.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include <proto/proto.h>

#include "cli.h"
#include "client.h"
#include "metrics/metrics.h"
#include "opts.h"
#include "tables.h"

enum output { TEXT, JSON, OPENMETRICS, PROMETHEUS };
/* In the order of sort_names. */
enum sort_by { BY_FAULTS, BY_RECENT };

static const char *const sort_names[] = { "faults", "recent", NULL };

static uint64_t last_seen_ms(json_object *p)
{
	return jv_bool(p, "exited") ? jv_u64(p, "exited_ms") : jv_u64(p, "registered_ms");
}

static enum sort_by sort_key;

static int cmp_proc(const void *pa, const void *pb)
{
	json_object *a = *(json_object *const *)pa, *b = *(json_object *const *)pb;
	uint64_t ka, kb;

	if (sort_key == BY_RECENT) {
		ka = last_seen_ms(a);
		kb = last_seen_ms(b);
	} else {
		ka = jv_u64(a, "faults");
		kb = jv_u64(b, "faults");
	}
	if (ka != kb)
		return ka > kb ? -1 : 1;
	return jv_i64(a, "pid") < jv_i64(b, "pid") ? -1 :
	       jv_i64(a, "pid") > jv_i64(b, "pid");
}

static const char *signame(int64_t sig)
{
	switch (sig) {
	case SIGSEGV:
		return "SIGSEGV";
	case SIGBUS:
		return "SIGBUS";
	case SIGILL:
		return "SIGILL";
	case SIGFPE:
		return "SIGFPE";
	default:
		return "signal";
	}
}

/*
 * The eBPF program's view of a process: its fault signals (stray ones
 * too); with --pid, also its page faults, each stray fault signal and the
 * PCs with the most stray page faults.
 */
static void print_kernel(json_object *k, const char *indent)
{
	json_object *arr;
	size_t n;

	if (!json_object_is_type(k, json_type_object))
		return;
	printf("%skernel: %llu fault signal%s, %llu stray", indent,
	       (unsigned long long)jv_u64(k, "fault_signals"), CLI_S(jv_u64(k, "fault_signals")),
	       (unsigned long long)jv_u64(k, "stray_fault_signals"));
	if (json_object_is_type(jv_get(k, "page_faults"), json_type_int))
		printf("; %llu page fault%s, %llu at sites, %llu stray",
		       (unsigned long long)jv_u64(k, "page_faults"), CLI_S(jv_u64(k, "page_faults")),
		       (unsigned long long)jv_u64(k, "implicit"),
		       (unsigned long long)jv_u64(k, "stray"));
	printf("%s\n", jv_bool(k, "complete") ? "" : " (counted since it registered again)");
	n = jv_array(k, "signals", &arr);
	for (size_t i = 0; i < n; i++) {
		json_object *s = json_object_array_get_idx(arr, i);

		if (jv_bool(s, "site"))
			continue;
		printf("%s  stray %s (si_code %lld) at 0x%llx: %llu, last address 0x%llx\n", indent,
		       signame(jv_i64(s, "signal")), (long long)jv_i64(s, "code"),
		       (unsigned long long)jv_u64(s, "ip"), (unsigned long long)jv_u64(s, "count"),
		       (unsigned long long)jv_u64(s, "last_addr"));
	}
	n = jv_array(k, "stray_faults", &arr);
	for (size_t i = 0; i < n && i < 5; i++) {
		json_object *f = json_object_array_get_idx(arr, i);

		printf("%s  stray page faults at 0x%llx: %llu (%llu read, %llu write, %llu fetch)\n",
		       indent, (unsigned long long)jv_u64(f, "ip"),
		       (unsigned long long)jv_u64(f, "faults"), (unsigned long long)jv_u64(f, "read"),
		       (unsigned long long)jv_u64(f, "write"), (unsigned long long)jv_u64(f, "ifetch"));
	}
}

static int print_stats_text(json_object *doc, enum sort_by sort, bool all)
{
	json_object *arr, **v;
	size_t n = jv_array(doc, "processes", &arr);
	int err = 0;

	if (!n) {
		puts("No registered processes.");
		return 0;
	}
	sort_key = sort;
	v = cli_sorted(arr, n, cmp_proc);
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n && !err; i++) {
		if (i)
			putchar('\n');
		cli_print_proc_header();
		cli_print_proc_row(v[i]);
		err = cli_print_sites(v[i], "    ", false, all);
		print_kernel(jv_get(v[i], "kernel"), "    ");
	}
	free(v);
	return err;
}

static const char stats_usage[] =
	"Usage: faultline stats [--json|--openmetrics|--prometheus] [--pid PID]\n"
	"                       [--sort faults|recent] [--top N] [--all] [--socket PATH]\n"
	"\n"
	"Prints faultlined's fault statistics: for every registered process (and\n"
	"the exited ones it keeps), its implicit check sites that failed and how\n"
	"often each failed and was claimed.\n";

static const char stats_epilogue[] =
	"Exit status: 0 on success, 1 if faultlined cannot be reached or answers\n"
	"with an error, 2 for usage errors.\n";

int cmd_stats(int argc, char **argv)
{
	int output = TEXT, sort = BY_FAULTS;
	const char *socket = NULL;
	uint32_t pid = 0;
	uint64_t top = 0, arg;
	bool all = false;
	unsigned outputs = 0;
	const struct cli_opt opts[] = {
		{ "json", CLI_OPT_SET, &output, &outputs, .value = JSON,
		  .help = "the daemon's JSON document (see faultline(1))" },
		{ "openmetrics", CLI_OPT_SET, &output, &outputs, .value = OPENMETRICS,
		  .help = "OpenMetrics text exposition" },
		{ "prometheus", CLI_OPT_SET, &output, &outputs, .value = PROMETHEUS,
		  .help = "Prometheus text format 0.0.4 (node_exporter's textfile\n"
			  "collector)" },
		{ "pid", CLI_OPT_PID, &pid, .arg = "PID", .help = "only that process" },
		{ "top", CLI_OPT_U64, &top, .arg = "N", .base = 10, .min = 1, .max = 4096,
		  .help = "list at most N sites a process, those that failed most\n"
			  "(1 to 4096; default: all of one process (--pid), 4096\n"
			  "a process otherwise); with --openmetrics or --prometheus,\n"
			  "the N sites of all processes with series of their own\n"
			  "(default 10)" },
		{ "all", CLI_OPT_FLAG, &all,
		  .help = "list the sites that never failed too (by default they\n"
			  "are counted, not listed)" },
		{ "sort", CLI_OPT_ENUM, &sort, .choices = sort_names, .arg = "KEY",
		  .help = "order of the processes in the table: faults (default,\n"
			  "most first) or recent (latest registered or exited first)" },
		{ "socket", CLI_OPT_STRING, &socket, .arg = "PATH",
		  .help = "faultlined's socket (default: $FAULTLINE_SOCKET, else\n"
			  "/run/faultline/faultlined.sock as root and\n"
			  "$XDG_RUNTIME_DIR/faultline/faultlined.sock otherwise)" },
		{ NULL },
	};
	const struct cli_opts cli = { "stats", stats_usage, stats_epilogue, opts, .in_order = true };
	struct cli_reply r;
	int first, err = 0, ret;

	if ((ret = cli_opts_parse(&cli, argc, argv, &first)) != CLI_OPTS_GO)
		return ret;
	if (outputs > 1) {
		usage_error("stats", "--json, --openmetrics and --prometheus exclude each other");
		return EXIT_USAGE;
	}
	if (first < argc) {
		usage_error("stats", "unexpected argument '%s'", argv[first]);
		return EXIT_USAGE;
	}
	/*
	 * The metrics need each process's top sites (the top of all processes
	 * are among them) and its sums by module (module_faults).
	 */
	if (output == OPENMETRICS || output == PROMETHEUS)
		arg = (top ? top : METRICS_TOP) | FL_QUERY_FAILED_ONLY;
	else
		arg = top | (all ? 0 : FL_QUERY_FAILED_ONLY);
	if (cli_command_query("stats", socket, FL_QUERY_STATS, pid, arg, &r) != 0)
		return 1;
	/* Not the metrics: their series are the daemon's own /metrics's. */
	if (output == JSON || output == TEXT)
		cli_name_from_perf_maps(r.doc);
	switch (output) {
	case JSON:
		cli_print_json(r.doc);
		break;
	case OPENMETRICS:
	case PROMETHEUS:
		if (metrics_print(stdout, r.doc, output == OPENMETRICS ? METRICS_OPENMETRICS :
				      METRICS_PROMETHEUS, top ? top : METRICS_TOP) != 0)
			err = -ENOMEM;
		break;
	case TEXT:
		err = print_stats_text(r.doc, sort, all);
		break;
	}
	json_object_put(r.doc);
	return cli_finish("stats", err);
}
