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
 * What is exposed follows Prometheus's naming and cardinality practice:
 * series whose number does not grow with the processes and sites the
 * daemon keeps (its state, the eBPF program's counters, aggregates by
 * executable (comm) and by module), and series per process and per site
 * only for the top sites: the limit sites that failed most (faults, and
 * failures a heal stub counted: the order of faultline stats --top), and
 * their processes.  A runtime of 10^5 sites under churn of pids would
 * otherwise make a series of every site of every pid, nearly all of them
 * 0.  So the document need list only each process's top sites (a STATS
 * query with a bound), and each process's module_faults gives the sums by
 * module of all its sites.
 *
 * A series must not repeat: when a pid was registered more than once (pid
 * reuse, an exited process kept next to a new one) only its newest
 * process is exposed, and sites of one process with the same labels (a
 * module unloaded and loaded again at the same address) are summed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jv.h"
#include "metrics.h"

#ifndef FL_VERSION
#define FL_VERSION "unknown"
#endif

struct sample {
	size_t proc;		/* index in the document's processes */
	const char *module;
	const char *function;
	const char *kind;
	uint64_t pc;
	uint64_t faults;
	uint64_t failures;	/* faults and failures its heal stub counted */
};

/* A label's value and the sum of a count over the series with that value. */
struct agg {
	const char *key;
	uint64_t sum;
	uint64_t n;
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

static void family(FILE *out, enum metrics_format fmt, const char *name,
		   const char *type, const char *help)
{
	const char *suffix = fmt == METRICS_PROMETHEUS && !strcmp(type, "counter") ? "_total" : "";

	fprintf(out, "# HELP %s%s %s\n# TYPE %s%s %s\n", name, suffix, help, name, suffix, type);
}

static void proc_labels(FILE *out, json_object *p)
{
	fprintf(out, "pid=\"%lld\",comm=\"", (long long)jv_i64(p, "pid"));
	put_value(out, jv_str(p, "comm"));
	fputc('"', out);
}

/* Sample name of every process shown, its value the process's field key. */
static void proc_samples(FILE *out, json_object *procs, size_t n, const bool *shown,
			 const char *name, const char *key)
{
	for (size_t i = 0; i < n; i++) {
		json_object *p = json_object_array_get_idx(procs, i);

		if (!shown[i])
			continue;
		fprintf(out, "%s{", name);
		proc_labels(out, p);
		fprintf(out, "} %llu\n", (unsigned long long)jv_u64(p, key));
	}
}

/* name{label="value"} v */
static void labelled(FILE *out, const char *name, const char *label, const char *value,
		     uint64_t v)
{
	fprintf(out, "%s{%s=\"", name, label);
	put_value(out, value);
	fprintf(out, "\"} %llu\n", (unsigned long long)v);
}

/* A process of the document: its pid, its registration, its index. */
struct proc_key {
	int64_t pid;
	uint64_t registered_ms;
	size_t i;
};

static int cmp_proc_key(const void *pa, const void *pb)
{
	const struct proc_key *a = pa, *b = pb;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->registered_ms != b->registered_ms)
		return a->registered_ms < b->registered_ms ? -1 : 1;
	return a->i < b->i ? -1 : a->i > b->i;
}

/*
 * Which processes are exposed: the newest with each pid (by registration
 * time; the later one in the document on a tie).  Returns a new array of n
 * flags, or NULL when out of memory.  Sorted, not compared pairwise: a
 * daemon keeps thousands of processes.
 */
static bool *newest(json_object *procs, size_t n)
{
	bool *keep = calloc(n ? n : 1, sizeof(*keep));
	struct proc_key *k = malloc((n ? n : 1) * sizeof(*k));

	if (!keep || !k) {
		free(keep);
		free(k);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		json_object *p = json_object_array_get_idx(procs, i);

		k[i] = (struct proc_key){ jv_i64(p, "pid"), jv_u64(p, "registered_ms"), i };
	}
	qsort(k, n, sizeof(*k), cmp_proc_key);
	/* The last of each pid's run. */
	for (size_t i = 0; i < n; i++)
		keep[k[i].i] = i + 1 == n || k[i + 1].pid != k[i].pid;
	free(k);
	return keep;
}

static int cmp_str(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "");
}

/* A process's sites with the same labels are one series. */
static int cmp_sample(const void *pa, const void *pb)
{
	const struct sample *a = pa, *b = pb;
	int c;

	if (a->proc != b->proc)
		return a->proc < b->proc ? -1 : 1;
	if (a->pc != b->pc)
		return a->pc < b->pc ? -1 : 1;
	if ((c = cmp_str(a->module, b->module)))
		return c;
	if ((c = cmp_str(a->function, b->function)))
		return c;
	return cmp_str(a->kind, b->kind);
}

/* Most failures first, then most faults; then in series order. */
static int cmp_top(const void *pa, const void *pb)
{
	const struct sample *a = pa, *b = pb;

	if (a->failures != b->failures)
		return a->failures > b->failures ? -1 : 1;
	if (a->faults != b->faults)
		return a->faults > b->faults ? -1 : 1;
	return cmp_sample(pa, pb);
}

static int cmp_agg(const void *pa, const void *pb)
{
	return cmp_str(((const struct agg *)pa)->key, ((const struct agg *)pb)->key);
}

/* Sums equal keys of a[0..n) in place, sorted.  Returns how many are left. */
static size_t aggregate(struct agg *a, size_t n)
{
	size_t m = 0;

	qsort(a, n, sizeof(*a), cmp_agg);
	for (size_t i = 0; i < n; i++) {
		if (m && !cmp_str(a[m - 1].key, a[i].key)) {
			a[m - 1].sum += a[i].sum;
			a[m - 1].n += a[i].n;
		} else {
			a[m++] = a[i];
		}
	}
	return m;
}

/* The eBPF program's counters (docs/json.md, bpf_stats), in this order. */
static const struct {
	const char *key, *help;
} bpf_counters[] = {
	{ "page_faults_counted", "User-mode page faults of registered processes the eBPF program counted." },
	{ "signals", "Fault signals the eBPF program recorded." },
	{ "samples", "Samples the eBPF program wrote to its ring buffer." },
	{ "ring_buffer_drops", "Samples lost because the ring buffer was full." },
	{ "map_update_failures", "Counts lost because an eBPF map was full (should stay 0)." },
	{ "inherited", "Children registered at fork by the eBPF program." },
	{ "signals_lost", "Fault signals not counted because the signal map was full." },
	{ "samples_received", "Samples faultlined read from the ring buffer." },
};

static void put_bpf(FILE *out, enum metrics_format fmt, json_object *doc)
{
	json_object *st = jv_get(doc, "bpf_stats");
	char name[96];

	family(out, fmt, "faultline_bpf_up", "gauge",
	       "1 when faultlined counts faults in the kernel with its eBPF program.");
	fprintf(out, "faultline_bpf_up %d\n", jv_bool(doc, "bpf") ? 1 : 0);
	if (!json_object_is_type(st, json_type_object))
		return;
	for (size_t i = 0; i < sizeof(bpf_counters) / sizeof(bpf_counters[0]); i++) {
		if (!json_object_is_type(jv_get(st, bpf_counters[i].key), json_type_int))
			continue;
		snprintf(name, sizeof(name), "faultline_bpf_%s", bpf_counters[i].key);
		family(out, fmt, name, "counter", bpf_counters[i].help);
		fprintf(out, "%s_total %llu\n", name,
			(unsigned long long)jv_u64(st, bpf_counters[i].key));
	}
}

/*
 * The faults by module of the exposed processes, in *a (grown to fit):
 * from their module_faults, which count every site; from their listed
 * sites, s[0..ns), when a process has none (a daemon before it).  Returns
 * how many modules, or SIZE_MAX when out of memory (*a freed).
 */
static size_t module_sums(json_object *procs, size_t n, const bool *keep,
			  const struct sample *s, size_t ns, struct agg **a)
{
	size_t m = 0, want = 0;
	bool all = true;
	struct agg *grown;

	for (size_t i = 0; i < n; i++) {
		json_object *mf;

		if (!keep[i])
			continue;
		if (json_object_is_type(jv_get(json_object_array_get_idx(procs, i), "module_faults"),
					json_type_array))
			want += jv_array(json_object_array_get_idx(procs, i), "module_faults", &mf);
		else
			all = false;
	}
	if (!all) {
		for (size_t i = 0; i < ns; i++)
			(*a)[m++] = (struct agg){ s[i].module, s[i].faults, 1 };
		return aggregate(*a, m);
	}
	grown = realloc(*a, (want ? want : 1) * sizeof(**a));
	if (!grown) {
		free(*a);
		*a = NULL;
		return SIZE_MAX;
	}
	*a = grown;
	for (size_t i = 0; i < n; i++) {
		json_object *mf;
		size_t k = keep[i] ? jv_array(json_object_array_get_idx(procs, i), "module_faults",
					      &mf) : 0;

		while (k--) {
			json_object *o = json_object_array_get_idx(mf, k);

			(*a)[m++] = (struct agg){ jv_str(o, "module"), jv_u64(o, "faults"), 1 };
		}
	}
	return aggregate(*a, m);
}

/*
 * The series that do not grow with what the daemon keeps: up, build
 * information, processes by state, sites, and the faults by executable
 * and by module.  Returns 0, or -1 when out of memory.
 */
static int put_aggregates(FILE *out, enum metrics_format fmt, json_object *doc,
			  json_object *procs, size_t n, const bool *keep,
			  const struct sample *s, size_t ns)
{
	uint64_t live = 0, exited = 0, sites = 0, failed = 0;
	struct agg *a = calloc(n > ns ? n + 1 : ns + 1, sizeof(*a));
	size_t m = 0;

	if (!a)
		return -1;
	family(out, fmt, "faultline_up", "gauge", "1: faultlined answered.");
	fputs("faultline_up 1\n", out);
	family(out, fmt, "faultline_build_info", "gauge",
	       "The versions of faultline and of the faultlined that answered, as labels.");
	fputs("faultline_build_info{version=\"", out);
	put_value(out, FL_VERSION);
	fputs("\",daemon_version=\"", out);
	put_value(out, jv_str(doc, "version") ? jv_str(doc, "version") : "unknown");
	fputs("\"} 1\n", out);
	for (size_t i = 0; i < n; i++) {
		json_object *p = json_object_array_get_idx(procs, i);
		uint64_t never = jv_u64(p, "sites_never_failed");

		if (!keep[i])
			continue;
		if (jv_bool(p, "exited"))
			exited++;
		else
			live++;
		sites += jv_u64(p, "num_sites");
		failed += jv_u64(p, "num_sites") > never ? jv_u64(p, "num_sites") - never : 0;
	}
	family(out, fmt, "faultline_processes", "gauge",
	       "Processes faultlined knows about, by state (exited ones are kept, bounded).");
	fprintf(out, "faultline_processes{state=\"live\"} %llu\n", (unsigned long long)live);
	fprintf(out, "faultline_processes{state=\"exited\"} %llu\n", (unsigned long long)exited);
	family(out, fmt, "faultline_sites", "gauge",
	       "Implicit check sites of the processes faultlined knows about.");
	fprintf(out, "faultline_sites %llu\n", (unsigned long long)sites);
	family(out, fmt, "faultline_sites_failed", "gauge",
	       "Implicit check sites that failed at least once (or were healed).");
	fprintf(out, "faultline_sites_failed %llu\n", (unsigned long long)failed);

	for (size_t i = 0; i < n; i++) {
		json_object *p = json_object_array_get_idx(procs, i);

		if (keep[i])
			a[m++] = (struct agg){ jv_str(p, "comm"), jv_u64(p, "faults"), 1 };
	}
	m = aggregate(a, m);
	family(out, fmt, "faultline_executable_faults", "counter",
	       "Failed implicit checks claimed in the processes of one executable (comm).");
	for (size_t i = 0; i < m; i++)
		labelled(out, "faultline_executable_faults_total", "executable", a[i].key, a[i].sum);
	family(out, fmt, "faultline_executable_processes", "gauge",
	       "Processes of one executable (comm) faultlined knows about.");
	for (size_t i = 0; i < m; i++)
		labelled(out, "faultline_executable_processes", "executable", a[i].key, a[i].n);

	m = module_sums(procs, n, keep, s, ns, &a);
	if (m == SIZE_MAX)
		return -1;
	family(out, fmt, "faultline_module_faults", "counter",
	       "Failed implicit checks claimed at the sites of one module, all processes.");
	for (size_t i = 0; i < m; i++)
		labelled(out, "faultline_module_faults_total", "module", a[i].key, a[i].sum);
	free(a);
	return 0;
}

/*
 * Every listed site of the exposed processes, one per series (a process's
 * sites with the same labels summed).  Returns the array (*count of them),
 * or NULL when out of memory.
 */
static struct sample *gather(json_object *procs, size_t n, const bool *keep, size_t *count)
{
	size_t total = 0, m = 0;
	struct sample *s;

	for (size_t i = 0; i < n; i++) {
		json_object *sites;

		if (keep[i])
			total += jv_array(json_object_array_get_idx(procs, i), "sites", &sites);
	}
	s = calloc(total ? total : 1, sizeof(*s));
	if (!s)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		json_object *sites;
		size_t k, ns = keep[i] ? jv_array(json_object_array_get_idx(procs, i), "sites",
						   &sites) : 0;

		for (k = 0; k < ns; k++) {
			json_object *o = json_object_array_get_idx(sites, k);

			s[m++] = (struct sample){
				.proc = i, .module = jv_str(o, "module"),
				.function = jv_str(o, "function"), .kind = jv_str(o, "kind"),
				.pc = jv_u64(o, "faulting_pc"), .faults = jv_u64(o, "faults"),
				.failures = jv_u64(o, "faults") + jv_u64(o, "healed"),
			};
		}
	}
	qsort(s, m, sizeof(*s), cmp_sample);
	total = 0;
	for (size_t k = 0; k < m; k++) {
		if (total && !cmp_sample(&s[total - 1], &s[k])) {
			s[total - 1].faults += s[k].faults;
			s[total - 1].failures += s[k].failures;
		} else
			s[total++] = s[k];
	}
	*count = total;
	return s;
}

int metrics_print(FILE *out, json_object *doc, enum metrics_format fmt, size_t top)
{
	json_object *procs;
	size_t n = jv_array(doc, "processes", &procs), ns = 0;
	bool *keep = newest(procs, n), *shown = calloc(n ? n : 1, sizeof(bool));
	struct sample *s = keep && shown ? gather(procs, n, keep, &ns) : NULL;

	if (!s || put_aggregates(out, fmt, doc, procs, n, keep, s, ns) != 0) {
		free(keep);
		free(shown);
		free(s);
		return -1;
	}
	put_bpf(out, fmt, doc);

	/* The top sites (those that failed), and their processes. */
	qsort(s, ns, sizeof(*s), cmp_top);
	while (ns && !s[ns - 1].failures)
		ns--;
	if (ns > top)
		ns = top;
	qsort(s, ns, sizeof(*s), cmp_sample);
	for (size_t k = 0; k < ns; k++)
		shown[s[k].proc] = true;
	family(out, fmt, "faultline_process_faults", "counter",
	       "Failed implicit checks claimed in a process, all its sites (processes of the top sites).");
	proc_samples(out, procs, n, shown, "faultline_process_faults_total", "faults");
	family(out, fmt, "faultline_process_sites", "gauge",
	       "Implicit check sites registered by a process (processes of the top sites).");
	proc_samples(out, procs, n, shown, "faultline_process_sites", "num_sites");
	family(out, fmt, "faultline_site_faults", "counter",
	       "Failed implicit checks claimed at one site (its faulting PC): the top sites.");
	for (size_t k = 0; k < ns; k++) {
		fputs("faultline_site_faults_total{", out);
		proc_labels(out, json_object_array_get_idx(procs, s[k].proc));
		fputs(",module=\"", out);
		put_value(out, s[k].module);
		fputs("\",function=\"", out);
		put_value(out, s[k].function);
		fprintf(out, "\",faulting_pc=\"0x%llx\",kind=\"", (unsigned long long)s[k].pc);
		put_value(out, s[k].kind);
		fprintf(out, "\"} %llu\n", (unsigned long long)s[k].faults);
	}
	free(keep);
	free(shown);
	free(s);
	if (fmt == METRICS_OPENMETRICS)
		fputs("# EOF\n", out);
	return 0;
}
