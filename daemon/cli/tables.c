// SPDX-License-Identifier: MIT
/*
 * The process and site tables of faultline stats, ps and sites: one row a
 * process, one row a site, the columns every command prints alike.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "client.h"
#include "symbolize.h"
#include "tables.h"

static int cmp_site(const void *pa, const void *pb)
{
	json_object *a = *(json_object *const *)pa, *b = *(json_object *const *)pb;
	uint64_t fa = jv_u64(a, "faults"), fb = jv_u64(b, "faults");
	uint64_t ca = jv_u64(a, "faulting_pc"), cb = jv_u64(b, "faulting_pc");

	if (fa != fb)
		return fa > fb ? -1 : 1;
	return ca < cb ? -1 : ca > cb;
}

json_object **cli_sorted(json_object *arr, size_t n, int (*cmp)(const void *, const void *))
{
	json_object **v = calloc(n ? n : 1, sizeof(*v));

	if (!v)
		return NULL;
	for (size_t i = 0; i < n; i++)
		v[i] = json_object_array_get_idx(arr, i);
	qsort(v, n, sizeof(*v), cmp);
	return v;
}

void cli_name_from_perf_maps(json_object *doc)
{
	struct cli_sym *sym = NULL;
	json_object *procs;
	size_t np = jv_array(doc, "processes", &procs);

	for (size_t i = 0; i < np; i++) {
		json_object *p = json_object_array_get_idx(procs, i), *sites;
		size_t ns = jv_array(p, "sites", &sites);
		int64_t pid = jv_i64(p, "pid");
		bool tried = false;

		if (jv_bool(p, "exited") || pid <= 0 || pid > UINT32_MAX)
			continue;
		for (size_t k = 0; k < ns; k++) {
			json_object *s = json_object_array_get_idx(sites, k);
			struct cli_sym_info info;

			if (jv_str(s, "function"))
				continue;
			if (!tried) {
				tried = true;
				if (!sym && !(sym = cli_sym_new()))
					return;
				if (cli_sym_snapshot(sym, (uint32_t)pid) != 0)
					break;
			}
			cli_sym_lookup(sym, (uint32_t)pid, jv_u64(s, "faulting_pc"), &info);
			if (info.kind != CLI_SYM_JIT || !info.function)
				continue;
			json_object_object_add(s, "function", json_object_new_string(info.function));
			json_object_object_add(s, "function_offset",
					       json_object_new_uint64(info.function_offset));
			json_object_object_add(s, "function_from", json_object_new_string("perf-map"));
		}
	}
	cli_sym_free(sym);
}

void cli_site_where(json_object *site, char *mod, size_t mod_len, char *fn, size_t fn_len)
{
	const char *m = cli_safe(cli_basename(jv_str(site, "module")));
	const char *f = jv_str(site, "function");

	if (json_object_is_type(jv_get(site, "module_offset"), json_type_int))
		snprintf(mod, mod_len, "%s+0x%llx", m,
			 (unsigned long long)jv_u64(site, "module_offset"));
	else
		snprintf(mod, mod_len, "%s", m);
	if (!fn)
		return;
	if (f && json_object_is_type(jv_get(site, "function_offset"), json_type_int))
		snprintf(fn, fn_len, "%s+0x%llx", cli_safe(f),
			 (unsigned long long)jv_u64(site, "function_offset"));
	else
		snprintf(fn, fn_len, "%s", cli_safe(f));
}

const char *cli_proc_state(json_object *p)
{
	return jv_bool(p, "exited") ? "exited" : "live";
}

void cli_print_proc_header(void)
{
	printf("%-8s %-16s %-7s %7s %7s %6s %12s\n", "PID", "COMM", "STATE", "UID",
	       "MODULES", "SITES", "FAULTS");
}

void cli_print_proc_row(json_object *p)
{
	printf("%-8lld %-16s %-7s %7lld %7llu %6llu %12llu\n", (long long)jv_i64(p, "pid"),
	       cli_safe(jv_str(p, "comm")), cli_proc_state(p),
	       (long long)jv_i64(p, "uid"), (unsigned long long)jv_u64(p, "modules"),
	       (unsigned long long)jv_u64(p, "num_sites"),
	       (unsigned long long)jv_u64(p, "faults"));
}

/* A site's healed failures and state: "implicit", "healed (B2) since ...", "unhealable: why". */
static void print_healing(json_object *site)
{
	const char *state = cli_safe(jv_str(site, "state"));
	time_t at = (time_t)jv_u64(site, "healed_at");
	char when[32] = "";
	struct tm tm;

	printf(" %12llu  ", (unsigned long long)jv_u64(site, "healed"));
	if (!strcmp(state, "healed")) {
		if (at && localtime_r(&at, &tm))
			strftime(when, sizeof(when), " since %Y-%m-%d %H:%M:%S", &tm);
		printf("healed (%s)%s", cli_safe(jv_str(site, "tactic")), when);
	} else if (!strcmp(state, "unhealable")) {
		printf("unhealable: %s", cli_safe(jv_str(site, "why")));
	} else {
		printf("%s", state);
	}
}

/*
 * What the daemon left out of p's sites: those that never failed (stats
 * lists only the others unless asked for all) and those past its bound.
 */
static void print_unlisted(json_object *p, const char *indent, bool all)
{
	uint64_t unlisted = jv_u64(p, "sites_unlisted");
	uint64_t never = jv_u64(p, "sites_never_failed");
	uint64_t fewer = unlisted > never ? unlisted - never : 0;

	if (all || !json_object_is_type(jv_get(p, "sites_never_failed"), json_type_int))
		never = 0, fewer = unlisted;
	if (fewer)
		printf("%s(%llu more %s that failed as often or less: --top N, or faultline "
		       "sites %lld, lists more)\n", indent, (unsigned long long)fewer,
		       fewer == 1 ? "site" : "sites", (long long)jv_i64(p, "pid"));
	if (never)
		printf("%s(%llu %s never failed: --all lists %s)\n", indent,
		       (unsigned long long)never, never == 1 ? "site" : "sites",
		       never == 1 ? "it" : "them");
}

int cli_print_sites(json_object *p, const char *indent, bool handler, bool all)
{
	bool healing = false;
	size_t kernel = 0;
	json_object *arr, **v;
	size_t n = jv_array(p, "sites", &arr);

	if (!n) {
		if (!jv_u64(p, "num_sites"))
			printf("%s(no sites)\n", indent);
		else if (jv_u64(p, "sites_never_failed") == jv_u64(p, "num_sites"))
			printf("%s(none of its %llu %s failed: --all lists %s)\n", indent,
			       (unsigned long long)jv_u64(p, "num_sites"),
			       jv_u64(p, "num_sites") == 1 ? "site" : "sites",
			       jv_u64(p, "num_sites") == 1 ? "it" : "them");
		else
			printf("%s(%llu %s not listed)\n", indent,
			       (unsigned long long)jv_u64(p, "num_sites"),
			       jv_u64(p, "num_sites") == 1 ? "site" : "sites");
		return 0;
	}
	v = cli_sorted(arr, n, cmp_site);
	if (!v)
		return -ENOMEM;
	/* The eBPF program's count, when the daemon has one for every site. */
	for (size_t i = 0; i < n; i++)
		kernel += json_object_is_type(jv_get(v[i], "kernel_faults"), json_type_int);
	kernel = kernel == n;
	/* Healing's columns, once a site of the process was healed or tried. */
	for (size_t i = 0; i < n; i++)
		healing |= jv_u64(v[i], "healed") || strcmp(cli_safe(jv_str(v[i], "state")), "implicit");
	printf("%s%-24s %-28s %-18s ", indent, "MODULE+OFFSET", "FUNCTION+OFFSET", "FAULTING PC");
	if (handler)
		printf("%-18s ", "HANDLER PC");
	printf("%-10s %12s%s", "KIND", "FAULTS", kernel ? "       KERNEL" : "");
	printf("%s\n", healing ? "       HEALED  STATE" : "");
	for (size_t i = 0; i < n; i++) {
		char mod[256], fn[256];

		cli_site_where(v[i], mod, sizeof(mod), fn, sizeof(fn));
		printf("%s%-24s %-28s 0x%-16llx ", indent, mod, fn,
		       (unsigned long long)jv_u64(v[i], "faulting_pc"));
		if (handler)
			printf("0x%-16llx ", (unsigned long long)jv_u64(v[i], "handler_pc"));
		printf("%-10s %12llu", cli_safe(jv_str(v[i], "kind")),
		       (unsigned long long)jv_u64(v[i], "faults"));
		if (kernel)
			printf(" %12llu%s", (unsigned long long)jv_u64(v[i], "kernel_faults"),
			       jv_u64(v[i], "kernel_faults") !=
			       jv_u64(v[i], "faults") + jv_u64(v[i], "populations") ?
			       "  (differs: a fault dispatch missed or counted twice)" : "");
		if (healing)
			print_healing(v[i]);
		printf("%s\n", jv_bool(v[i], "unloaded") ? "  (unloaded)" : "");
	}
	free(v);
	print_unlisted(p, indent, all);
	return 0;
}
