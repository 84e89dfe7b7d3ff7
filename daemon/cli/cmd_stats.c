// SPDX-License-Identifier: MIT
/*
 * faultline stats [--json|--openmetrics|--prometheus] [--pid PID] [--sort faults|recent]
 * faultline ps [--json]
 * faultline sites [--json] PID
 *
 * Each asks faultlined one QUERY (docs/protocol.md) and prints its JSON
 * document (docs/json.md) as is, or as a table.  Exit status: 0, 1 when
 * the daemon cannot be reached or answers with an error, 2 for a bad
 * command line.
 */
#include <errno.h>
#include <signal.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <proto/proto.h>

#include "cli.h"
#include "client.h"

enum output { TEXT, JSON, OPENMETRICS, PROMETHEUS };
enum sort_by { BY_FAULTS, BY_RECENT };

struct view {
	const char *cmd;
	enum output output;
	enum sort_by sort;
	uint32_t pid;
	const char *socket;
};

/* ------------------------------------------------------------------------
 * Tables
 */

static uint64_t last_seen_ms(json_object *p)
{
	return cli_bool(p, "exited") ? cli_u64(p, "exited_ms") : cli_u64(p, "registered_ms");
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
		ka = cli_u64(a, "faults");
		kb = cli_u64(b, "faults");
	}
	if (ka != kb)
		return ka > kb ? -1 : 1;
	return cli_i64(a, "pid") < cli_i64(b, "pid") ? -1 :
	       cli_i64(a, "pid") > cli_i64(b, "pid");
}

/* ps lists by pid, as ps(1) does; the latest registration of a pid first. */
static int cmp_pid(const void *pa, const void *pb)
{
	json_object *a = *(json_object *const *)pa, *b = *(json_object *const *)pb;
	int64_t ka = cli_i64(a, "pid"), kb = cli_i64(b, "pid");

	if (ka != kb)
		return ka < kb ? -1 : 1;
	return cli_u64(a, "registered_ms") > cli_u64(b, "registered_ms") ? -1 :
	       cli_u64(a, "registered_ms") < cli_u64(b, "registered_ms");
}

static int cmp_site(const void *pa, const void *pb)
{
	json_object *a = *(json_object *const *)pa, *b = *(json_object *const *)pb;
	uint64_t fa = cli_u64(a, "faults"), fb = cli_u64(b, "faults");
	uint64_t ca = cli_u64(a, "faulting_pc"), cb = cli_u64(b, "faulting_pc");

	if (fa != fb)
		return fa > fb ? -1 : 1;
	return ca < cb ? -1 : ca > cb;
}

/* The elements of arr (n of them) in a new array of pointers, sorted. */
static json_object **sorted(json_object *arr, size_t n,
			    int (*cmp)(const void *, const void *))
{
	json_object **v = calloc(n ? n : 1, sizeof(*v));

	if (!v)
		return NULL;
	for (size_t i = 0; i < n; i++)
		v[i] = json_object_array_get_idx(arr, i);
	qsort(v, n, sizeof(*v), cmp);
	return v;
}

static const char *state(json_object *p)
{
	return cli_bool(p, "exited") ? "exited" : "live";
}

static void print_proc_header(void)
{
	printf("%-8s %-16s %-7s %7s %7s %6s %12s\n", "PID", "COMM", "STATE", "UID",
	       "MODULES", "SITES", "FAULTS");
}

static void print_proc_row(json_object *p)
{
	printf("%-8lld %-16s %-7s %7lld %7llu %6llu %12llu\n", (long long)cli_i64(p, "pid"),
	       cli_safe(cli_str(p, "comm")), state(p),
	       (long long)cli_i64(p, "uid"), (unsigned long long)cli_u64(p, "modules"),
	       (unsigned long long)cli_u64(p, "num_sites"),
	       (unsigned long long)cli_u64(p, "faults"));
}

/* The sites of p, most faults first; indent before every line. */
static int print_sites(json_object *p, const char *indent, bool handler)
{
	size_t kernel = 0;
	json_object *arr, **v;
	size_t n = cli_array(p, "sites", &arr);

	if (!n) {
		printf("%s(no sites)\n", indent);
		return 0;
	}
	v = sorted(arr, n, cmp_site);
	if (!v)
		return -ENOMEM;
	/* The eBPF program's count, when the daemon has one for every site. */
	for (size_t i = 0; i < n; i++)
		kernel += json_object_is_type(cli_get(v[i], "kernel_faults"), json_type_int);
	kernel = kernel == n;
	printf("%s%-24s %-28s %-18s ", indent, "MODULE", "FUNCTION", "FAULTING PC");
	if (handler)
		printf("%-18s ", "HANDLER PC");
	printf("%-10s %12s%s\n", "KIND", "FAULTS", kernel ? "       KERNEL" : "");
	for (size_t i = 0; i < n; i++) {
		const char *fn = cli_str(v[i], "function");

		printf("%s%-24s %-28s 0x%-16llx ", indent, cli_safe(cli_basename(cli_str(v[i], "module"))),
		       cli_safe(fn), (unsigned long long)cli_u64(v[i], "faulting_pc"));
		if (handler)
			printf("0x%-16llx ", (unsigned long long)cli_u64(v[i], "handler_pc"));
		printf("%-10s %12llu", cli_safe(cli_str(v[i], "kind")),
		       (unsigned long long)cli_u64(v[i], "faults"));
		if (kernel)
			printf(" %12llu%s", (unsigned long long)cli_u64(v[i], "kernel_faults"),
			       cli_u64(v[i], "kernel_faults") !=
			       cli_u64(v[i], "faults") + cli_u64(v[i], "populations") ?
			       "  (differs: a fault dispatch missed or counted twice)" : "");
		printf("%s\n", cli_bool(v[i], "unloaded") ? "  (unloaded)" : "");
	}
	free(v);
	/* The daemon lists a bounded number of each process's sites in stats. */
	if (cli_u64(p, "sites_unlisted"))
		printf("%s(%llu more sites with as few faults or fewer: faultline sites %lld lists "
		       "them all)\n", indent, (unsigned long long)cli_u64(p, "sites_unlisted"),
		       (long long)cli_i64(p, "pid"));
	return 0;
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
	printf("%skernel: %llu fault signals, %llu stray", indent,
	       (unsigned long long)cli_u64(k, "fault_signals"),
	       (unsigned long long)cli_u64(k, "stray_fault_signals"));
	if (json_object_is_type(cli_get(k, "page_faults"), json_type_int))
		printf("; %llu page faults, %llu at sites, %llu stray",
		       (unsigned long long)cli_u64(k, "page_faults"),
		       (unsigned long long)cli_u64(k, "implicit"),
		       (unsigned long long)cli_u64(k, "stray"));
	printf("%s\n", cli_bool(k, "complete") ? "" : " (counted since it registered again)");
	n = cli_array(k, "signals", &arr);
	for (size_t i = 0; i < n; i++) {
		json_object *s = json_object_array_get_idx(arr, i);

		if (cli_bool(s, "site"))
			continue;
		printf("%s  stray %s (si_code %lld) at 0x%llx: %llu, last address 0x%llx\n", indent,
		       signame(cli_i64(s, "signal")), (long long)cli_i64(s, "code"),
		       (unsigned long long)cli_u64(s, "ip"), (unsigned long long)cli_u64(s, "count"),
		       (unsigned long long)cli_u64(s, "last_addr"));
	}
	n = cli_array(k, "stray_faults", &arr);
	for (size_t i = 0; i < n && i < 5; i++) {
		json_object *f = json_object_array_get_idx(arr, i);

		printf("%s  stray page faults at 0x%llx: %llu (%llu read, %llu write, %llu fetch)\n",
		       indent, (unsigned long long)cli_u64(f, "ip"),
		       (unsigned long long)cli_u64(f, "faults"), (unsigned long long)cli_u64(f, "read"),
		       (unsigned long long)cli_u64(f, "write"), (unsigned long long)cli_u64(f, "ifetch"));
	}
}

static int print_stats_text(json_object *doc, enum sort_by sort)
{
	json_object *arr, **v;
	size_t n = cli_array(doc, "processes", &arr);
	int err = 0;

	if (!n) {
		puts("No registered processes.");
		return 0;
	}
	sort_key = sort;
	v = sorted(arr, n, cmp_proc);
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n && !err; i++) {
		if (i)
			putchar('\n');
		print_proc_header();
		print_proc_row(v[i]);
		err = print_sites(v[i], "    ", false);
		print_kernel(cli_get(v[i], "kernel"), "    ");
	}
	free(v);
	return err;
}

/* ------------------------------------------------------------------------
 * Commands
 */

static int finish(const char *cmd, int err)
{
	if (err == -ENOMEM) {
		fprintf(stderr, "faultline: %s: out of memory\n", cmd);
		return 1;
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "faultline: %s: write error: %s\n", cmd, strerror(errno));
		return 1;
	}
	return 0;
}

static int query(const struct view *v, uint32_t what, struct cli_reply *r)
{
	char path[512];

	if (cli_socket_path(v->socket, path, sizeof(path)) != 0) {
		fprintf(stderr, "faultline: %s: %s\n", v->cmd, path);
		return 1;
	}
	if (cli_query(path, what, v->pid, UINT64_MAX, r) != 0) {
		if (r->from_daemon && r->err == -ESRCH)
			fprintf(stderr, "faultline: %s: no registered process %u\n", v->cmd, v->pid);
		else
			cli_reply_fail(v->cmd, r);
		return 1;
	}
	return 0;
}

static void stats_usage(FILE *out)
{
	fputs("Usage: faultline stats [--json|--openmetrics|--prometheus] [--pid PID]\n"
	      "                       [--sort faults|recent] [--socket PATH]\n"
	      "\n"
	      "Prints faultlined's fault statistics: for every registered process (and\n"
	      "the exited ones it keeps), its implicit check sites and how often each\n"
	      "failed and was claimed.\n"
	      "\n"
	      "Options:\n"
	      "  --json          the daemon's JSON document (see faultline(1))\n"
	      "  --openmetrics   OpenMetrics text exposition\n"
	      "  --prometheus    Prometheus text format 0.0.4 (node_exporter's textfile\n"
	      "                  collector)\n"
	      "  --pid PID       only that process\n"
	      "  --sort KEY      order of the processes in the table: faults (default,\n"
	      "                  most first) or recent (latest registered or exited first)\n"
	      "  --socket PATH   faultlined's socket (default: $FAULTLINE_SOCKET, else\n"
	      "                  /run/faultline/faultlined.sock as root and\n"
	      "                  $XDG_RUNTIME_DIR/faultline/faultlined.sock otherwise)\n"
	      "  -h, --help      show this help\n"
	      "\n"
	      "Exit status: 0 on success, 1 if faultlined cannot be reached or answers\n"
	      "with an error, 2 for usage errors.\n", out);
}

int cmd_stats(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "openmetrics", no_argument, NULL, 'o' },
		{ "prometheus", no_argument, NULL, 'P' },
		{ "pid", required_argument, NULL, 'p' },
		{ "sort", required_argument, NULL, 's' },
		{ "socket", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct view v = { .cmd = "stats" };
	struct cli_reply r;
	int c, outputs = 0, err = 0;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			v.output = JSON;
			outputs++;
			break;
		case 'o':
			v.output = OPENMETRICS;
			outputs++;
			break;
		case 'P':
			v.output = PROMETHEUS;
			outputs++;
			break;
		case 'p':
			if (cli_parse_pid("stats", "--pid", optarg, &v.pid) != 0)
				return EXIT_USAGE;
			break;
		case 's':
			if (!strcmp(optarg, "faults")) {
				v.sort = BY_FAULTS;
			} else if (!strcmp(optarg, "recent")) {
				v.sort = BY_RECENT;
			} else {
				usage_error("stats", "--sort: expected faults or recent, not '%s'",
					    optarg);
				return EXIT_USAGE;
			}
			break;
		case 'S':
			v.socket = optarg;
			break;
		case 'h':
			stats_usage(stdout);
			return 0;
		case ':':
			usage_error("stats", "option '%s' needs an argument", argv[optind - 1]);
			return EXIT_USAGE;
		default:
			usage_error("stats", "unknown option '%s'", argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	if (outputs > 1) {
		usage_error("stats", "--json, --openmetrics and --prometheus exclude each other");
		return EXIT_USAGE;
	}
	if (optind < argc) {
		usage_error("stats", "unexpected argument '%s'", argv[optind]);
		return EXIT_USAGE;
	}
	if (query(&v, FL_QUERY_STATS, &r) != 0)
		return 1;
	switch (v.output) {
	case JSON:
		cli_print_json(r.doc);
		break;
	case OPENMETRICS:
	case PROMETHEUS:
		if (cli_print_metrics(stdout, r.doc, v.output == OPENMETRICS ? CLI_OPENMETRICS :
				      CLI_PROMETHEUS) != 0)
			err = -ENOMEM;
		break;
	case TEXT:
		err = print_stats_text(r.doc, v.sort);
		break;
	}
	json_object_put(r.doc);
	return finish("stats", err);
}

/* The options ps and sites share: --json, --socket, --help. */
static int parse_simple(struct view *v, int argc, char **argv, void (*usage)(FILE *))
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "socket", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			v->output = JSON;
			break;
		case 'S':
			v->socket = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case ':':
			usage_error(v->cmd, "option '%s' needs an argument", argv[optind - 1]);
			return EXIT_USAGE;
		default:
			usage_error(v->cmd, "unknown option '%s'", argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	return -1;
}

static void ps_usage(FILE *out)
{
	fputs("Usage: faultline ps [--json] [--socket PATH]\n"
	      "\n"
	      "Lists the processes registered with faultlined (and the exited ones it\n"
	      "keeps): pid, command name, uid, state, modules, sites and faults.\n"
	      "\n"
	      "Options:\n"
	      "  --json          the daemon's JSON document (see faultline(1))\n"
	      "  --socket PATH   faultlined's socket (see faultline stats --help)\n"
	      "  -h, --help      show this help\n", out);
}

int cmd_ps(int argc, char **argv)
{
	struct view v = { .cmd = "ps" };
	struct cli_reply r;
	json_object *arr, **procs;
	size_t n;
	int ret = parse_simple(&v, argc, argv, ps_usage);

	if (ret >= 0)
		return ret;
	if (optind < argc) {
		usage_error("ps", "unexpected argument '%s'", argv[optind]);
		return EXIT_USAGE;
	}
	if (query(&v, FL_QUERY_PS, &r) != 0)
		return 1;
	if (v.output == JSON) {
		cli_print_json(r.doc);
		json_object_put(r.doc);
		return finish("ps", 0);
	}
	n = cli_array(r.doc, "processes", &arr);
	procs = sorted(arr, n, cmp_pid);
	if (!procs) {
		json_object_put(r.doc);
		return finish("ps", -ENOMEM);
	}
	print_proc_header();
	for (size_t i = 0; i < n; i++)
		print_proc_row(procs[i]);
	free(procs);
	json_object_put(r.doc);
	return finish("ps", 0);
}

static void sites_usage(FILE *out)
{
	fputs("Usage: faultline sites [--json] [--socket PATH] PID\n"
	      "\n"
	      "Lists the implicit check sites of process PID (its live registration,\n"
	      "else the latest exited one faultlined keeps): module, function, faulting\n"
	      "and handler PCs, kind and how often the check failed.\n"
	      "\n"
	      "Options:\n"
	      "  --json          the daemon's JSON document (see faultline(1))\n"
	      "  --socket PATH   faultlined's socket (see faultline stats --help)\n"
	      "  -h, --help      show this help\n", out);
}

int cmd_sites(int argc, char **argv)
{
	struct view v = { .cmd = "sites" };
	struct cli_reply r;
	json_object *arr, *p;
	int ret = parse_simple(&v, argc, argv, sites_usage);

	if (ret >= 0)
		return ret;
	if (optind >= argc) {
		usage_error("sites", "no PID given");
		return EXIT_USAGE;
	}
	if (optind + 1 < argc) {
		usage_error("sites", "unexpected argument '%s'", argv[optind + 1]);
		return EXIT_USAGE;
	}
	if (cli_parse_pid("sites", "PID", argv[optind], &v.pid) != 0)
		return EXIT_USAGE;
	if (query(&v, FL_QUERY_SITES, &r) != 0)
		return 1;
	if (v.output == JSON) {
		cli_print_json(r.doc);
		json_object_put(r.doc);
		return finish("sites", 0);
	}
	if (!cli_array(r.doc, "processes", &arr)) {
		fprintf(stderr, "faultline: sites: no registered process %u\n", v.pid);
		json_object_put(r.doc);
		return 1;
	}
	p = json_object_array_get_idx(arr, 0);
	printf("pid %lld (%s), %s, %llu sites, %llu faults\n", (long long)cli_i64(p, "pid"),
	       cli_safe(cli_str(p, "comm")), state(p),
	       (unsigned long long)cli_u64(p, "num_sites"),
	       (unsigned long long)cli_u64(p, "faults"));
	ret = print_sites(p, "", true);
	json_object_put(r.doc);
	return finish("sites", ret);
}
