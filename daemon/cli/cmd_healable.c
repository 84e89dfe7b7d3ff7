// SPDX-License-Identifier: MIT
/*
 * faultline healable [--json] [--load-address ADDR] FILE...
 *
 * For every implicit-check site of each file (.llvm_faultmaps), whether it
 * can be healed in place and how: the planner the running process uses
 * (lib/patch/heal_plan.c) run on the file's bytes, with an environment
 * that stands in for the process's (heal_env.c).  Exit status: 0 when
 * every file was read, whatever it says of the sites; 1 when one was
 * malformed or unreadable (the others are still printed); 2 for a bad
 * command line.
 */
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include <faultline/discovery.h>
#include <faultline/format.h>

#include "cli.h"
#include "heal_env.h"
#include "input.h"
#include "opts.h"
#include "print_json.h"
#include "proto/proto.h"

static const char healable_usage[] =
	"Usage: faultline healable [--json] [--load-address ADDR] [--tactics LIST] FILE...\n"
	"\n"
	"Says, for every implicit-check site (.llvm_faultmaps entry) of each ELF\n"
	"file (object, executable, shared library), whether the running process\n"
	"could heal it and by which tactic, or why not; with the instruction's\n"
	"length and bytes, and its function and offset.  In place (a jump to a\n"
	"stub that tests the pointer): B1, B2, T1, T2, T3; else REL, the whole\n"
	"function copied with its checks explicit and its entry a jump to the\n"
	"copy.  A summary per file and one for all of them: the sites by tactic\n"
	"and share, and those that cannot be healed by reason.\n"
	"\n"
	"A stub may go anywhere in user space outside the module: a position-\n"
	"independent file is assumed loaded with its first segment at ADDR (an\n"
	"object: each code section at ADDR); what is free really depends on the\n"
	"process.\n";

static const char healable_epilogue[] =
	"Exit status: 0 when every file was read, 1 if a file is malformed or\n"
	"unreadable, 2 for usage errors.\n";

/* Where the kernel puts a PIE when nothing asks otherwise (no ASLR). */
#define DEFAULT_LOAD_ADDRESS 0x555555554000ull

struct totals {
	uint64_t sites, healed, by[FL_HEAL_TACTICS];
	uint64_t why[FL_SHM_WHY_LAST + 1];	/* the unhealable ones, by reason */
};

static void totals_add(struct totals *t, const struct totals *u)
{
	t->sites += u->sites;
	t->healed += u->healed;
	for (int k = 0; k < FL_HEAL_TACTICS; k++)
		t->by[k] += u->by[k];
	for (int k = 0; k <= FL_SHM_WHY_LAST; k++)
		t->why[k] += u->why[k];
}

static double share(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* The tactics in the order they are tried. */
static const enum fl_heal_tactic order[] = {
	FL_HEAL_B1, FL_HEAL_B2, FL_HEAL_T1, FL_HEAL_T2, FL_HEAL_T3, FL_HEAL_RELOC,
};

/*
 * "LABEL: H of N sites can be healed (P%): B1 n (p%), ..." and, when some
 * cannot, a line with their count by reason.
 */
static void print_summary(const char *label, const struct totals *t)
{
	uint64_t bad = t->sites - t->healed;

	printf("%s: %" PRIu64 " of %" PRIu64 " site%s can be healed (%.2f%%):", label, t->healed,
	       t->sites, CLI_S(t->sites), t->sites ? share(t->healed, t->sites) : 100.0);
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
		printf("%s %s %" PRIu64 " (%.2f%%)", i ? "," : "", fl_heal_tactic_name(order[i]),
		       t->by[order[i]], share(t->by[order[i]], t->sites));
	printf("\n");
	if (!bad)
		return;
	printf("%s: %" PRIu64 " cannot (%.2f%%):", label, bad, share(bad, t->sites));
	for (int k = 0, first = 1; k <= FL_SHM_WHY_LAST; k++)
		if (t->why[k]) {
			printf("%s %s: %" PRIu64, first ? "" : ";",
			       k ? fl_shm_why_text((unsigned)k) : "not planned", t->why[k]);
			first = 0;
		}
	printf("\n");
}

static void hex(const uint8_t *b, size_t n, char *out, bool spaced)
{
	static const char digits[] = "0123456789abcdef";
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		if (spaced && i)
			out[k++] = ' ';
		out[k++] = digits[b[i] >> 4];
		out[k++] = digits[b[i] & 15];
	}
	out[k] = 0;
}

/* json-c's rendering of one value, compact, with its escaping. */
static void put_json(struct json_object *o)
{
	fputs(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
					     JSON_C_TO_STRING_NOSLASHESCAPE), stdout);
	json_object_put(o);
}

static struct json_object *u64(uint64_t v)
{
	return json_object_new_uint64(v);
}

static struct json_object *summary_json(const struct totals *t)
{
	struct json_object *o = json_object_new_object();

	struct json_object *shares = json_object_new_object(), *why = json_object_new_object();

	json_object_object_add(o, "sites", u64(t->sites));
	json_object_object_add(o, "healable", u64(t->healed));
	for (int k = FL_HEAL_B1; k < FL_HEAL_TACTICS; k++) {
		json_object_object_add(o, fl_heal_tactic_name(k), u64(t->by[k]));
		json_object_object_add(shares, fl_heal_tactic_name(k),
				       json_object_new_double(share(t->by[k], t->sites)));
	}
	json_object_object_add(o, "percent", json_object_new_double(
		t->sites ? share(t->healed, t->sites) : 100.0));
	json_object_object_add(o, "percent_by_tactic", shares);
	for (int k = 0; k <= FL_SHM_WHY_LAST; k++)
		if (t->why[k])
			json_object_object_add(why, k ? fl_shm_why_text((unsigned)k) : "not planned",
					       u64(t->why[k]));
	json_object_object_add(o, "unhealable_by_reason", why);
	return o;
}

/* A stable name for each reason (FL_SHM_WHY_*), for scripts: the "reason" key. */
static const char *reason_key(int why)
{
	static const char *const keys[FL_SHM_WHY_LAST + 1] = {
		[FL_SHM_WHY_NONE] = "none", [FL_SHM_WHY_UNDECODED] = "undecoded",
		[FL_SHM_WHY_NO_BASE] = "no_base_register", [FL_SHM_WHY_BRANCH] = "branch",
		[FL_SHM_WHY_PINNED] = "pinned", [FL_SHM_WHY_NO_ROOM] = "no_room",
		[FL_SHM_WHY_OTHER] = "other", [FL_SHM_WHY_NO_EXTENT] = "no_extent",
		[FL_SHM_WHY_COMPUTED_JUMP] = "computed_jump",
		[FL_SHM_WHY_SELF_READ] = "reads_own_code",
		[FL_SHM_WHY_EH_TABLES] = "exception_tables", [FL_SHM_WHY_ENTRY] = "entry",
		[FL_SHM_WHY_TOO_LARGE] = "too_large", [FL_SHM_WHY_UNMOVABLE] = "unmovable",
		[FL_SHM_WHY_RECORDS] = "stack_map_records",
		[FL_SHM_WHY_RELOCATE_OFF] = "relocation_off",
	};

	return why >= 0 && why <= FL_SHM_WHY_LAST ? keys[why] : "other";
}

static struct json_object *site_json(const struct heal_site *s,
				     const struct fl_heal_plan *p, const uint8_t *bytes,
				     size_t len)
{
	struct json_object *o = json_object_new_object();
	char hx[2 * 15 + 1];

	hex(bytes, len, hx, false);
	json_object_object_add(o, "function", s->function ?
			       json_object_new_string(s->function) : NULL);
	json_object_object_add(o, "function_offset", u64(s->addr - s->fn));
	json_object_object_add(o, "address", u64(s->addr));
	json_object_object_add(o, "runtime_address", u64(heal_runtime(s, s->addr)));
	json_object_object_add(o, "handler_pc", u64(s->handler));
	json_object_object_add(o, "kind", json_object_new_string(
		fl_fault_kind_label(s->kind) ? fl_fault_kind_label(s->kind) : "unknown"));
	json_object_object_add(o, "length", u64(len));
	json_object_object_add(o, "bytes", json_object_new_string(hx));
	json_object_object_add(o, "healable", json_object_new_boolean(p->tactic != FL_HEAL_NONE));
	json_object_object_add(o, "tactic", p->tactic != FL_HEAL_NONE ?
			       json_object_new_string(fl_heal_tactic_name(p->tactic)) : NULL);
	json_object_object_add(o, "why", p->tactic == FL_HEAL_NONE ?
			       json_object_new_string(p->why) : NULL);
	json_object_object_add(o, "reason", p->tactic == FL_HEAL_NONE ?
			       json_object_new_string(reason_key(p->why_code)) : NULL);
	if (p->tactic != FL_HEAL_NONE)
		json_object_object_add(o, "stub", u64(p->stub));
	if (p->evicts) {
		struct json_object *nb = json_object_new_object();

		hex(p->nb.old, p->nb.len, hx, false);
		json_object_object_add(nb, "address", u64(s->addr + (p->nb.addr - p->site.addr)));
		json_object_object_add(nb, "length", u64(p->nb.len));
		json_object_object_add(nb, "bytes", json_object_new_string(hx));
		json_object_object_add(o, p->tactic == FL_HEAL_T2 ? "evicts_successor" : "evicts", nb);
	}
	if (p->reloc) {
		struct json_object *r = json_object_new_object();

		json_object_object_add(r, "function_size", u64(p->reloc->end - p->reloc->fn));
		json_object_object_add(r, "copy_size", u64(p->reloc->size));
		json_object_object_add(r, "checks_made_explicit", u64(p->reloc->nmembers));
		json_object_object_add(o, "relocation", r);
	}
	return o;
}

static void site_text(const struct heal_site *s, const struct fl_heal_plan *p,
		      const uint8_t *bytes, size_t len)
{
	char where[160], hx[3 * 15 + 1];

	if (s->function)
		snprintf(where, sizeof(where), "%s+0x%" PRIx64, s->function, s->addr - s->fn);
	else
		snprintf(where, sizeof(where), "0x%" PRIx64 "+0x%" PRIx64, s->fn, s->addr - s->fn);
	hex(bytes, len, hx, true);
	printf("  %-32s 0x%-10" PRIx64 " %2zu  %-30s %s%s\n", where, s->addr, len, hx,
	       p->tactic != FL_HEAL_NONE ? fl_heal_tactic_name(p->tactic) : "none: ",
	       p->tactic != FL_HEAL_NONE ? "" : p->why);
}

/* The file's sites, planned and printed.  Returns 0, or -errno with err set. */
static int one_file(const char *path, uint64_t load, unsigned tactics, bool json,
		    struct totals *all, char *err, size_t errlen)
{
	struct heal_file hf;
	struct totals t = { 0 };
	int ret;

	ret = heal_file_open(&hf, path, load, err, errlen);
	if (ret < 0)
		return ret;
	hf.tactics = tactics;
	if (json) {
		fputs("{\"file\":", stdout);
		put_json(json_object_new_string(path));
		printf(",\"ok\":true,\"type\":\"%s\",\"found\":%s,\"load_address\":",
		       heal_file_type(&hf), hf.found ? "true" : "false");
		put_json(hf.assumed ? u64(load) : NULL);
		fputs(",\"sites\":[", stdout);
	} else {
		printf("%s: %s", path, heal_file_type(&hf));
		if (!hf.found)
			printf(", no %s\n", FL_FAULTMAP_SECTION);
		else if (hf.assumed)
			printf(", assumed loaded at 0x%" PRIx64 "\n", load);
		else
			printf(", loaded at its link-time addresses\n");
	}
	for (size_t i = 0; i < hf.nsites; i++) {
		const struct heal_site *s = &hf.sites[i];
		struct fl_heal_plan p;
		uint8_t bytes[15];
		size_t len = heal_plan_site(&hf, s, &p, bytes);

		t.sites++;
		if (p.tactic != FL_HEAL_NONE) {
			t.healed++;
			t.by[p.tactic]++;
		} else {
			t.why[p.why_code >= 0 && p.why_code <= FL_SHM_WHY_LAST ? p.why_code : 0]++;
		}
		if (json) {
			fputs(i ? ",\n" : "\n", stdout);
			put_json(site_json(s, &p, bytes, len));
		} else {
			site_text(s, &p, bytes, len);
		}
		fl_heal_plan_release(&p);
	}
	if (json) {
		fputs("],\"summary\":", stdout);
		put_json(summary_json(&t));
		fputs("}", stdout);
	} else {
		print_summary(path, &t);
	}
	totals_add(all, &t);
	heal_file_close(&hf);
	return 0;
}

int cmd_healable(int argc, char **argv)
{
	bool json = false;
	uint64_t load = DEFAULT_LOAD_ADDRESS;
	const char *only = NULL;
	unsigned tactics = 0;
	const struct cli_opt opts[] = {
		{ "json", CLI_OPT_FLAG, &json,
		  .help = "print one JSON document for all files (see faultline(1))" },
		{ "load-address", CLI_OPT_U64, &load, .base = 0, .min = 0x10000,
		  .max = 0x7fffffff0000ull, .arg = "ADDR",
		  .expect = "a user-space address, 0x10000 to 0x7fffffff0000",
		  .help = "where a position-independent file is assumed loaded\n"
			  "(default 0x555555554000)" },
		{ "tactics", CLI_OPT_STRING, &only, .arg = "LIST",
		  .help = "only these tactics, e.g. T2,REL (as FAULTLINE_HEAL_TACTICS\n"
			  "in a process; default all)" },
		{ NULL },
	};
	const struct cli_opts cli = { "healable", healable_usage, healable_epilogue, opts,
				      .in_order = true };
	struct totals all = { 0 };
	int status = 0, first, parsed, read = 0;

	if ((parsed = cli_opts_parse(&cli, argc, argv, &first)) != CLI_OPTS_GO)
		return parsed;
	if (first >= argc) {
		usage_error("healable", "no FILE given");
		return EXIT_USAGE;
	}
	if (only && !(tactics = fl_heal_tactics_parse(only))) {
		usage_error("healable", "--tactics: '%s' is not a list of B1, B2, T1, T2, T3, REL",
			    only);
		return EXIT_USAGE;
	}
	if (load & 4095) {
		usage_error("healable", "--load-address: 0x%" PRIx64 " is not page-aligned", load);
		return EXIT_USAGE;
	}
	if (json)
		printf("{\"command\":\"healable\",\"schema\":1,\"load_address\":%" PRIu64
		       ",\"files\":[", load);
	for (int i = first; i < argc; i++) {
		char err[512];

		if (json && i > first)
			fputs(",", stdout);
		if (json)
			fputs("\n", stdout);
		if (one_file(argv[i], load, tactics, json, &all, err, sizeof(err)) == 0) {
			read++;
		} else {
			fprintf(stderr, "faultline: %s\n", err);
			cli_file_hint_pid(argv[i], "sites");
			status = EXIT_MALFORMED;
			if (json)
				put_json(file_error_json(argv[i], err));
		}
	}
	if (json) {
		fputs("\n],\"summary\":", stdout);
		put_json(summary_json(&all));
		fputs("}\n", stdout);
	} else if (read) {
		/* Nothing on stdout when no file could be read. */
		print_summary("total", &all);
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "faultline: healable: write error: %s\n", strerror(errno));
		return EXIT_MALFORMED;
	}
	return status;
}
