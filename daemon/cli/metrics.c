// SPDX-License-Identifier: MIT
/*
 * faultline stats --openmetrics / --prometheus: the STATS document as a
 * metrics exposition, for a scraper or node_exporter's textfile collector.
 *
 * OpenMetrics 1.0 (the default of --openmetrics): a counter family is
 * named without its suffix ("# TYPE faultline_site_faults counter") and
 * its samples carry "_total"; the exposition ends with "# EOF".  The
 * Prometheus text format 0.0.4 (--prometheus), which node_exporter's
 * textfile collector parses, names the sample itself in TYPE
 * ("# TYPE faultline_site_faults_total counter") and has no EOF marker:
 * read as 0.0.4, an OpenMetrics counter would lose its type (the TYPE line
 * names a family without samples, which that parser drops).
 *
 * A series must not repeat: when a pid was registered more than once (pid
 * reuse, an exited process kept next to a new one) only its newest
 * process is exposed, and sites of one process with the same labels (a
 * module unloaded and loaded again at the same address) are summed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "metrics.h"

struct sample {
	const char *module;
	const char *function;
	const char *kind;
	uint64_t pc;
	uint64_t faults;
};

/*
 * Writes s as a label value: backslash, double quote and newline escaped
 * as both formats want; other control characters and bytes that are not
 * UTF-8 (a comm is whatever the process set) become '?'.
 */
static void put_value(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");

	while (*p) {
		unsigned char c = *p;
		size_t n = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 :
			   (c & 0xf8) == 0xf0 ? 4 : 0;
		size_t i;

		for (i = 1; i < n && (p[i] & 0xc0) == 0x80; i++)
			;
		if (n == 0 || i < n || (n == 2 && c < 0xc2)) {
			fputc('?', out);
			p++;
			continue;
		}
		if (c == '\\')
			fputs("\\\\", out);
		else if (c == '"')
			fputs("\\\"", out);
		else if (c == '\n')
			fputs("\\n", out);
		else if (c < 0x20 || c == 0x7f)
			fputc('?', out);
		else
			fwrite(p, 1, n, out);
		p += n;
	}
}

static void family(FILE *out, enum cli_metrics_format fmt, const char *name,
		   const char *type, const char *help)
{
	const char *suffix = fmt == CLI_PROMETHEUS && !strcmp(type, "counter") ? "_total" : "";

	fprintf(out, "# HELP %s%s %s\n# TYPE %s%s %s\n", name, suffix, help, name, suffix, type);
}

static void proc_labels(FILE *out, json_object *p)
{
	fprintf(out, "pid=\"%lld\",comm=\"", (long long)cli_i64(p, "pid"));
	put_value(out, cli_str(p, "comm"));
	fputc('"', out);
}

/*
 * Which processes are exposed: the newest with each pid (by registration
 * time; the later one in the document on a tie).  Returns a new array of n
 * flags, or NULL when out of memory.
 */
static bool *newest(json_object *procs, size_t n)
{
	bool *keep = calloc(n ? n : 1, sizeof(*keep));

	if (!keep)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		json_object *p = json_object_array_get_idx(procs, i);
		int64_t pid = cli_i64(p, "pid");
		uint64_t reg = cli_u64(p, "registered_ms");

		keep[i] = true;
		for (size_t k = 0; k < n && keep[i]; k++) {
			json_object *q = json_object_array_get_idx(procs, k);

			if (k != i && cli_i64(q, "pid") == pid &&
			    (cli_u64(q, "registered_ms") > reg ||
			     (cli_u64(q, "registered_ms") == reg && k > i)))
				keep[i] = false;
		}
	}
	return keep;
}

/* Sample name of every exposed process, its value the process's field key. */
static void proc_samples(FILE *out, json_object *procs, size_t n, const bool *keep,
			 const char *name, const char *key)
{
	for (size_t i = 0; i < n; i++) {
		json_object *p = json_object_array_get_idx(procs, i);

		if (!keep[i])
			continue;
		fprintf(out, "%s{", name);
		proc_labels(out, p);
		fprintf(out, "} %llu\n", (unsigned long long)cli_u64(p, key));
	}
}

static int cmp_str(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "");
}

static int cmp_sample(const void *pa, const void *pb)
{
	const struct sample *a = pa, *b = pb;
	int c;

	if (a->pc != b->pc)
		return a->pc < b->pc ? -1 : 1;
	if ((c = cmp_str(a->module, b->module)))
		return c;
	if ((c = cmp_str(a->function, b->function)))
		return c;
	return cmp_str(a->kind, b->kind);
}

int cli_print_metrics(FILE *out, json_object *doc, enum cli_metrics_format fmt)
{
	json_object *procs;
	size_t n = cli_array(doc, "processes", &procs);
	uint64_t live = 0, exited = 0;
	bool *keep = newest(procs, n);

	if (!keep)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (cli_bool(json_object_array_get_idx(procs, i), "exited"))
			exited++;
		else
			live++;
	}
	family(out, fmt, "faultline_processes", "gauge",
	       "Processes faultlined knows about, by state (exited ones are kept, bounded).");
	fprintf(out, "faultline_processes{state=\"live\"} %llu\n", (unsigned long long)live);
	fprintf(out, "faultline_processes{state=\"exited\"} %llu\n", (unsigned long long)exited);

	family(out, fmt, "faultline_process_faults", "counter",
	       "Failed implicit checks claimed in a process, all its sites.");
	proc_samples(out, procs, n, keep, "faultline_process_faults_total", "faults");

	family(out, fmt, "faultline_process_sites", "gauge",
	       "Implicit check sites registered by a process.");
	proc_samples(out, procs, n, keep, "faultline_process_sites", "num_sites");

	family(out, fmt, "faultline_site_faults", "counter",
	       "Failed implicit checks claimed at one site (its faulting PC).");
	for (size_t i = 0; i < n; i++) {
		json_object *p = json_object_array_get_idx(procs, i), *sites;
		size_t ns = cli_array(p, "sites", &sites), k, m = 0;
		struct sample *s;

		if (!ns || !keep[i])
			continue;
		s = calloc(ns, sizeof(*s));
		if (!s) {
			free(keep);
			return -1;
		}
		for (k = 0; k < ns; k++) {
			json_object *o = json_object_array_get_idx(sites, k);

			s[k] = (struct sample){
				.module = cli_str(o, "module"), .function = cli_str(o, "function"),
				.kind = cli_str(o, "kind"), .pc = cli_u64(o, "faulting_pc"),
				.faults = cli_u64(o, "faults"),
			};
		}
		qsort(s, ns, sizeof(*s), cmp_sample);
		for (k = 0; k < ns; k++) {
			if (m && !cmp_sample(&s[m - 1], &s[k]))
				s[m - 1].faults += s[k].faults;
			else
				s[m++] = s[k];
		}
		for (k = 0; k < m; k++) {
			fputs("faultline_site_faults_total{", out);
			proc_labels(out, p);
			fputs(",module=\"", out);
			put_value(out, s[k].module);
			fputs("\",function=\"", out);
			put_value(out, s[k].function);
			fprintf(out, "\",faulting_pc=\"0x%llx\",kind=\"", (unsigned long long)s[k].pc);
			put_value(out, s[k].kind);
			fprintf(out, "\"} %llu\n", (unsigned long long)s[k].faults);
		}
		free(s);
	}
	free(keep);
	if (fmt == CLI_OPENMETRICS)
		fputs("# EOF\n", out);
	return 0;
}
