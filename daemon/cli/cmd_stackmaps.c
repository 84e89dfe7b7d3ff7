// SPDX-License-Identifier: MIT
/*
 * faultline stackmaps [--id ID | --pc PC] [--json] [--socket PATH] PID
 *
 * Prints the stack map registry faultlined keeps for a process, every
 * location decoded (x86-64 register names).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <proto/proto.h>

#include "cli.h"
#include "client.h"
#include "dwarf_regs.h"
#include "opts.h"
#include "tables.h"

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
	const char *kind = jv_str(l, "kind");
	int64_t off = jv_i64(l, "offset");
	/* In unsigned arithmetic: the daemon may send INT64_MIN. */
	unsigned long long mag = off < 0 ? -(uint64_t)off : (uint64_t)off;
	char buf[32];
	const char *reg = reg_name((unsigned)jv_u64(l, "dwarf_reg"), buf, sizeof(buf));

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
		printf("%" PRIu64 " (constant #%lld)", jv_u64(l, "constant"), (long long)off);
	else
		printf("dwarf_reg %s, offset %lld", reg, (long long)off);
	printf(", size %llu\n", (unsigned long long)jv_u64(l, "size"));
}

static const char stackmaps_usage[] =
	"Usage: faultline stackmaps [--id ID | --pc PC] [--json] [--socket PATH] PID\n"
	"\n"
	"Prints the stack map records faultlined keeps for process PID, at their\n"
	"runtime PCs, with every location decoded (x86-64 register names).\n";

static const char stackmaps_epilogue[] =
	"Exit status: 0 on success, 1 if faultlined cannot be reached, answers with\n"
	"an error, or has no record with ID (at PC), 2 for usage errors.\n";

/* --id: any stack map ID but UINT64_MAX, which asks for them all. */
static int take_id(const struct cli_opt *opt, const char *cmd, const char *arg)
{
	uint64_t id;

	if (cli_parse_u64(cmd, "--id", arg, &id) != 0)
		return -EINVAL;
	if (id == UINT64_MAX) {
		usage_error(cmd, "--id: %s is reserved (it means all)", arg);
		return -EINVAL;
	}
	*(uint64_t *)opt->target = id;
	return 0;
}

int cmd_stackmaps(int argc, char **argv)
{
	const char *socket = NULL;
	uint64_t id = UINT64_MAX;
	bool json = false;
	unsigned by_id = 0, by_pc = 0;
	const struct cli_opt opts[] = {
		{ "id", CLI_OPT_CHECK, &id, &by_id, .check = take_id, .arg = "ID",
		  .help = "only the records with this stack map ID" },
		{ "pc", CLI_OPT_U64, &id, &by_pc, .arg = "PC",
		  .help = "only the records at this runtime PC (e.g. 0x401a2b)" },
		CLI_OPT_JSON(&json),
		CLI_OPT_SOCKET(&socket),
		{ NULL },
	};
	const struct cli_opts cli = { "stackmaps", stackmaps_usage, stackmaps_epilogue, opts };
	struct cli_reply r;
	json_object *procs, *p, *recs;
	uint32_t pid;
	size_t n;
	int first, ret;

	if ((ret = cli_opts_parse(&cli, argc, argv, &first)) != CLI_OPTS_GO)
		return ret;
	if (by_pc && by_id) {
		usage_error("stackmaps", "--id and --pc do not go together");
		return EXIT_USAGE;
	}
	if (first >= argc) {
		usage_error("stackmaps", "no PID given");
		return EXIT_USAGE;
	}
	if (first + 1 < argc) {
		usage_error("stackmaps", "unexpected argument '%s'", argv[first + 1]);
		return EXIT_USAGE;
	}
	if (cli_parse_pid("stackmaps", "PID", argv[first], &pid) != 0)
		return EXIT_USAGE;
	if (cli_command_query("stackmaps", socket, by_pc ? FL_QUERY_STACKMAP_PC : FL_QUERY_STACKMAPS,
			      pid, id, &r) != 0)
		return 1;
	if (!jv_array(r.doc, "processes", &procs)) {
		json_object_put(r.doc);
		fprintf(stderr, "faultline: stackmaps: no registered process %u\n", pid);
		return 1;
	}
	p = json_object_array_get_idx(procs, 0);
	n = jv_array(p, "records", &recs);
	if (json) {
		cli_print_json(r.doc);
	} else {
		printf("pid %lld (%s): %zu stack map record%s\n", (long long)jv_i64(p, "pid"),
		       cli_safe(jv_str(p, "comm")), n, CLI_S(n));
		for (size_t i = 0; i < n; i++) {
			json_object *rec = json_object_array_get_idx(recs, i), *locs;
			size_t nl = jv_array(rec, "locations", &locs);
			char mod[256];

			/* "at PC (module+0xOFFSET)": records are not named. */
			cli_site_where(rec, mod, sizeof(mod), NULL, 0);
			printf("  record %" PRIu64 " at 0x%" PRIx64 " (%s): stack size %" PRIu64
			       ", %zu location%s, %llu live-out%s\n",
			       jv_u64(rec, "id"), jv_u64(rec, "pc"), mod, jv_u64(rec, "stack_size"),
			       nl, CLI_S(nl), (unsigned long long)jv_u64(rec, "live_outs"),
			       CLI_S(jv_u64(rec, "live_outs")));
			for (size_t k = 0; k < nl; k++)
				print_location(k, json_object_array_get_idx(locs, k));
		}
	}
	json_object_put(r.doc);
	if (cli_finish("stackmaps", 0) != 0)
		return 1;
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

