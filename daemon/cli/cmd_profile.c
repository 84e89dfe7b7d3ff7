// SPDX-License-Identifier: MIT
/*
 * faultline profile [-s|--seconds S] [-n|--top N] [--json] PID|--all
 *
 * The instructions that take the most page faults, in one process
 * (registered with faultlined or not) or in all of them, named with their
 * module and function, or with the name a JIT compiler published in
 * /tmp/perf-PID.map.  This loads its own copy of the eBPF program
 * (bpf/faultline.bpf.c), independent of the daemon's: PID goes into
 * fl_registered (without FL_REG_INHERIT: its children are not profiled), or
 * profile_all counts every process; the counts are read from fl_faults at
 * the end.  The program is loaded by bpf/loader.c, as faultlined loads it.
 *
 * Exit status: 0, 1 when the program cannot be loaded (not privileged, no
 * BTF, ...) or PID does not exist, 2 for a bad command line.
 */
#include <dirent.h>
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <json-c/json.h>

#include "faultline_bpf.h"
#include "faultline.skel.h"
#include "registered.h"
#include "faults.h"
#include "loader.h"

#include "cli.h"
#include "client.h"
#include "opts.h"
#include "symbolize.h"

/* Numbers, for --help's text too (STR). */
#define DEFAULT_SECONDS 5
#define DEFAULT_TOP 20
#define STR_(x) #x
#define STR(x) STR_(x)
/* How often the target's maps are read again (and, with --all, the new
 * processes in fl_faults looked for). */
#define SNAPSHOT_MS_PID 200
#define SNAPSHOT_MS_ALL 1000
/* How often /proc is looked at for new processes (--all). */
#define NEW_PROCS_MS_ALL 200

struct opts {
	uint32_t pid;		/* 0 with --all */
	bool all;
	double seconds;
	size_t top;
	bool json;
};

struct row {
	struct fl_fault_key key;
	struct fl_fault_counts c;
	uint64_t count;
};

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
	stop_signal = sig;
}

static const char profile_usage[] =
	"Usage: faultline profile [OPTIONS] PID\n"
	"       faultline profile [OPTIONS] --all\n"
	"\n"
	"Counts the page faults of process PID (registered with faultlined or\n"
	"not), or of every process, per faulting instruction, for a while, then\n"
	"prints the instructions with the most: their module and function, or\n"
	"for JIT code the name its compiler wrote to /tmp/perf-PID.map.  Ends\n"
	"early on Ctrl-C (and still prints) or when PID exits.  Needs root, or\n"
	"CAP_BPF and CAP_PERFMON.\n";

static const char profile_epilogue[] =
	"Exit status: 0 on success, 1 if the eBPF program cannot be loaded or\n"
	"PID does not exist, 2 for usage errors.\n";

__attribute__((format(printf, 1, 2))) static int fail(const char *fmt, ...)
{
	va_list ap;

	fputs("faultline: profile: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

/*
 * Returns CLI_OPTS_GO with *o filled in, or the exit status: 0 after
 * --help, EXIT_USAGE after a usage error.
 */
static int parse_opts(int argc, char **argv, struct opts *o)
{
	uint64_t top = DEFAULT_TOP;
	const struct cli_opt opts[] = {
		{ "all", CLI_OPT_FLAG, &o->all, .help = "every process (except this one)" },
		/*
		 * Above 0: DBL_TRUE_MIN is the least positive double.  A year
		 * is long enough; more is surely a typo.
		 */
		{ "seconds", CLI_OPT_DOUBLE, &o->seconds, .letter = 's', .lo = DBL_TRUE_MIN,
		  .hi = 366 * 86400.0, .expect = "a positive number of seconds", .arg = "S",
		  .help = "how long to count: fractions allowed, at most\n"
			  "366 days (default " STR(DEFAULT_SECONDS) ")" },
		{ "top", CLI_OPT_U64, &top, .letter = 'n', .base = 10, .min = 1, .max = 1000000,
		  .expect = "a number of addresses from 1 to 1000000", .arg = "N",
		  .help = "how many addresses to print, 1 to 1000000\n"
			  "(default " STR(DEFAULT_TOP) ")" },
		{ "json", CLI_OPT_FLAG, &o->json,
		  .help = "print a JSON document (see faultline(1))" },
		{ NULL },
	};
	const struct cli_opts cli = { "profile", profile_usage, profile_epilogue, opts,
				      .needs = "a value" };
	int first, ret;

	o->seconds = DEFAULT_SECONDS;
	if ((ret = cli_opts_parse(&cli, argc, argv, &first)) != CLI_OPTS_GO)
		return ret;
	o->top = (size_t)top;
	if (o->all && first < argc) {
		usage_error("profile", "give either PID or --all, not both");
		return EXIT_USAGE;
	}
	if (!o->all && first >= argc) {
		usage_error("profile", "no PID given (or --all)");
		return EXIT_USAGE;
	}
	if (first + 1 < argc) {
		usage_error("profile", "one PID only, not '%s' too", argv[first + 1]);
		return EXIT_USAGE;
	}
	if (!o->all && cli_parse_pid("profile", "PID", argv[first], &o->pid))
		return EXIT_USAGE;
	return CLI_OPTS_GO;
}

/*
 * Loading and attaching need CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN):
 * checked first (bpf/loader.h), so that the message names what is missing
 * instead of libbpf's EPERM.  Returns 0, or 1 after saying what is missing.
 */
static int check_privileges(void)
{
	unsigned missing;
	int err = fl_bpf_missing_caps(&missing);
	bool bpf, perfmon;

	if (err)
		return fail("cannot read this process's capabilities: %s", strerror(-err));
	bpf = !(missing & FL_BPF_NEED_BPF);
	perfmon = !(missing & FL_BPF_NEED_PERFMON);
	if (bpf && perfmon)
		return 0;
	return fail("needs root, or CAP_BPF and CAP_PERFMON: %s %s missing",
		    !bpf && !perfmon ? "CAP_BPF and CAP_PERFMON" : !bpf ? "CAP_BPF" : "CAP_PERFMON",
		    !bpf && !perfmon ? "are" : "is");
}

static int print_libbpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG || level == LIBBPF_INFO)
		return 0;
	fputs("faultline: profile: libbpf: ", stderr);
	return vfprintf(stderr, fmt, ap);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Returns the number after "Threads:" in /proc/PID/status, or 0. */
static long thread_count(uint32_t pid)
{
	char path[64], line[256];
	long n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Threads: %ld", &n) == 1)
			break;
	fclose(f);
	return n;
}

/* Returns true while pid exists and has not exited (a zombie). */
static bool alive(uint32_t pid)
{
	char path[64], buf[256], *paren;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	/* "pid (comm) S ...": comm may hold spaces and parentheses. */
	paren = strrchr(buf, ')');
	if (!paren || paren[1] != ' ')
		return false;
	if (paren[2] == 'X')
		return false;
	/* A leader that called pthread_exit is a zombie while its threads run. */
	return paren[2] != 'Z' || thread_count(pid) > 1;
}

/* Snapshots every process in /proc not seen yet (--all): a process that
 * faults and exits between two looks would otherwise never be named. */
static void snapshot_new_procs(struct cli_sym *sym, uint32_t self)
{
	DIR *d = opendir("/proc");
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		char *end;
		unsigned long pid = strtoul(de->d_name, &end, 10);

		if (*end || !pid || pid == self || pid > UINT32_MAX ||
		    cli_sym_known(sym, (uint32_t)pid))
			continue;
		cli_sym_snapshot(sym, (uint32_t)pid);
	}
	closedir(d);
}

/* Snapshots again every process in fl_faults (--all), for the code it
 * mapped since its last snapshot: dlopen, JIT code caches. */
static void snapshot_faulting(struct faultline_bpf *skel, struct cli_sym *sym, uint32_t self)
{
	struct fl_fault_slot *t = fl_bpf_faults_map(skel->maps.fl_faults, false);
	struct fl_fault_rec *r = NULL;
	ssize_t n = t ? fl_bpf_faults_read(t, 0, &r) : 0;

	/* Sorted by tgid: each once. */
	for (ssize_t i = 0; i < n; i++)
		if (r[i].k.tgid != self && (i == 0 || r[i].k.tgid != r[i - 1].k.tgid))
			cli_sym_snapshot(sym, r[i].k.tgid);
	free(r);
	fl_bpf_faults_unmap(t);
}

/* Sum over CPUs of fl_stats[idx]; 0 when unreadable. */
static uint64_t stat_sum(struct faultline_bpf *skel, uint32_t idx)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t sum = 0;
	__u64 *vals;

	if (ncpu <= 0)
		return 0;
	vals = calloc((size_t)ncpu, sizeof(*vals));
	if (vals && !bpf_map__lookup_elem(skel->maps.fl_stats, &idx, sizeof(idx), vals,
					  (size_t)ncpu * sizeof(*vals), 0))
		for (int i = 0; i < ncpu; i++)
			sum += vals[i];
	free(vals);
	return sum;
}

static int cmp_row(const void *pa, const void *pb)
{
	const struct row *a = pa, *b = pb;

	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	if (a->key.tgid != b->key.tgid)
		return a->key.tgid < b->key.tgid ? -1 : 1;
	return a->key.ip < b->key.ip ? -1 : a->key.ip > b->key.ip;
}

/* Reads every fl_faults entry (of pid, unless 0) into *rows.  Returns the
 * number of rows, or -errno. */
static long read_faults(struct faultline_bpf *skel, uint32_t pid, uint32_t self,
			struct row **rows)
{
	struct fl_fault_slot *t = fl_bpf_faults_map(skel->maps.fl_faults, false);
	struct fl_fault_rec *recs = NULL;
	struct row *r;
	ssize_t got;
	size_t n = 0;

	if (!t)
		return -errno;
	got = fl_bpf_faults_read(t, pid, &recs);
	fl_bpf_faults_unmap(t);
	if (got < 0)
		return got;
	r = malloc((got ? (size_t)got : 1) * sizeof(*r));
	if (!r) {
		free(recs);
		return -ENOMEM;
	}
	for (ssize_t i = 0; i < got; i++) {
		if (recs[i].k.tgid == self)
			continue;
		r[n].key = recs[i].k;
		r[n].c = recs[i].c;
		r[n].count = recs[i].c.read + recs[i].c.write + recs[i].c.ifetch;
		n++;
	}
	free(recs);
	qsort(r, n, sizeof(*r), cmp_row);
	*rows = r;
	return (long)n;
}

/* The number of distinct tgids in rows (sorted by count, not by tgid). */
static size_t count_processes(const struct row *rows, size_t n)
{
	uint32_t *t = calloc(n + 1, sizeof(*t));
	size_t k = 0, i, j;

	for (i = 0; t && i < n; i++) {
		for (j = 0; j < k && t[j] != rows[i].key.tgid; j++)
			;
		if (j == k)
			t[k++] = rows[i].key.tgid;
	}
	free(t);
	return k;
}

struct summary {
	double elapsed;
	bool exited;		/* PID exited before the time was up */
	int stopped_by;		/* the signal that ended it early, or 0 */
	uint64_t faults;	/* sum over the rows */
	size_t addresses;
	size_t processes;
	uint64_t map_full;	/* fl_stats: updates that failed */
	bool map_filled;	/* map_full: a fault (or signal) not counted */
};

static void print_text(const struct opts *o, struct cli_sym *sym, const struct row *rows,
		       size_t n, const struct summary *sm)
{
	char name[768];
	size_t i, anon = 0;

	if (o->all)
		printf("all processes: %" PRIu64 " page faults in %zu process%s at %zu address%s in %.2f s\n",
		       sm->faults, sm->processes, sm->processes == 1 ? "" : "es", sm->addresses,
		       sm->addresses == 1 ? "" : "es", sm->elapsed);
	else
		printf("pid %u (%s): %" PRIu64 " page faults at %zu address%s in %.2f s%s\n",
		       o->pid, cli_safe(cli_sym_comm(sym, o->pid)), sm->faults, sm->addresses,
		       sm->addresses == 1 ? "" : "es", sm->elapsed,
		       sm->exited ? " (the process exited)" : "");
	if (!n)
		return;
	printf("%10s %10s %10s %10s  %s%-18s  %s\n", "FAULTS", "READ", "WRITE", "IFETCH",
	       o->all ? "PID      COMM             " : "", "ADDRESS", "SYMBOL");
	for (i = 0; i < n && i < o->top; i++) {
		const struct row *r = &rows[i];
		struct cli_sym_info info;

		cli_sym_lookup(sym, r->key.tgid, r->key.ip, &info);
		printf("%10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %10" PRIu64 "  ", r->count,
		       (uint64_t)r->c.read, (uint64_t)r->c.write, (uint64_t)r->c.ifetch);
		if (o->all)
			printf("%-8u %-16s ", r->key.tgid, cli_safe(cli_sym_comm(sym, r->key.tgid)));
		printf("0x%-16" PRIx64 "  %s\n", (uint64_t)r->key.ip,
		       cli_safe(cli_sym_format(&info, name, sizeof(name))));
		anon += info.kind == CLI_SYM_ANON && !info.module[0];
	}
	if (anon)
		fprintf(stderr, "faultline: profile: %zu of these addresses %s in anonymous memory "
			"that no perf map names: JIT code?  A JIT can name its code in "
			"/tmp/perf-PID.map (HotSpot: jcmd PID Compiler.perfmap while the "
			"profile runs; Node: --perf-basic-prof)\n", anon, anon == 1 ? "is" : "are");
}

static json_object *json_str_or_null(const char *s)
{
	return s ? json_object_new_string(s) : NULL;
}

static void print_json(const struct opts *o, struct cli_sym *sym, const struct row *rows,
		       size_t n, const struct summary *sm)
{
	static const char *const kinds[] = {
		[CLI_SYM_UNKNOWN] = "unknown", [CLI_SYM_FILE] = "file",
		[CLI_SYM_JIT] = "jit", [CLI_SYM_ANON] = "anon",
	};
	json_object *doc = json_object_new_object(), *top = json_object_new_array();
	char name[768];
	size_t i;

	json_object_object_add(doc, "command", json_object_new_string("profile"));
	json_object_object_add(doc, "schema", json_object_new_int(1));
	json_object_object_add(doc, "pid", o->all ? NULL : json_object_new_int64(o->pid));
	json_object_object_add(doc, "all", json_object_new_boolean(o->all));
	json_object_object_add(doc, "seconds", json_object_new_double(o->seconds));
	json_object_object_add(doc, "elapsed", json_object_new_double(sm->elapsed));
	json_object_object_add(doc, "exited", json_object_new_boolean(sm->exited));
	json_object_object_add(doc, "interrupted", json_object_new_boolean(sm->stopped_by != 0));
	json_object_object_add(doc, "faults", json_object_new_uint64(sm->faults));
	json_object_object_add(doc, "addresses", json_object_new_uint64(sm->addresses));
	json_object_object_add(doc, "processes", json_object_new_uint64(sm->processes));
	json_object_object_add(doc, "map_update_failures", json_object_new_uint64(sm->map_full));
	json_object_object_add(doc, "map_filled", json_object_new_boolean(sm->map_filled));
	json_object_object_add(doc, "top", top);
	for (i = 0; i < n && i < o->top; i++) {
		const struct row *r = &rows[i];
		json_object *e = json_object_new_object();
		struct cli_sym_info info;

		cli_sym_lookup(sym, r->key.tgid, r->key.ip, &info);
		json_object_object_add(e, "pid", json_object_new_int64(r->key.tgid));
		json_object_object_add(e, "comm", json_str_or_null(cli_sym_comm(sym, r->key.tgid)));
		json_object_object_add(e, "ip", json_object_new_uint64(r->key.ip));
		json_object_object_add(e, "faults", json_object_new_uint64(r->count));
		json_object_object_add(e, "read", json_object_new_uint64(r->c.read));
		json_object_object_add(e, "write", json_object_new_uint64(r->c.write));
		json_object_object_add(e, "ifetch", json_object_new_uint64(r->c.ifetch));
		json_object_object_add(e, "kind", json_object_new_string(kinds[info.kind]));
		json_object_object_add(e, "module", json_str_or_null(info.module));
		json_object_object_add(e, "module_offset", info.kind == CLI_SYM_UNKNOWN ? NULL :
				       json_object_new_uint64(info.module_offset));
		json_object_object_add(e, "function", json_str_or_null(info.function));
		json_object_object_add(e, "function_offset", info.function ?
				       json_object_new_uint64(info.function_offset) : NULL);
		json_object_object_add(e, "symbol",
				       json_object_new_string(cli_sym_format(&info, name, sizeof(name))));
		json_object_array_add(top, e);
	}
	cli_print_json(doc);
	json_object_put(doc);
}

/* Counts until the time is up, a signal arrives or PID exits, taking maps
 * snapshots meanwhile. */
static void wait_and_watch(const struct opts *o, struct faultline_bpf *skel,
			   struct cli_sym *sym, struct summary *sm)
{
	double start = now_s(), deadline = start + o->seconds, next_snap = start;
	double next_procs = start + NEW_PROCS_MS_ALL / 1000.0;
	double period = (o->all ? SNAPSHOT_MS_ALL : SNAPSHOT_MS_PID) / 1000.0;
	uint32_t self = (uint32_t)getpid();

	for (;;) {
		double t = now_s(), left;
		struct timespec ts;

		if (stop_signal) {
			sm->stopped_by = stop_signal;
			break;
		}
		if (!o->all && !alive(o->pid)) {
			sm->exited = true;
			break;
		}
		if (o->all && t >= next_procs) {
			snapshot_new_procs(sym, self);
			next_procs = t + NEW_PROCS_MS_ALL / 1000.0;
		}
		if (t >= next_snap) {
			if (o->all)
				snapshot_faulting(skel, sym, self);
			else
				cli_sym_snapshot(sym, o->pid);
			next_snap = t + period;
		}
		left = deadline - t;
		if (left <= 0)
			break;
		/* Short sleeps: PID's exit is noticed within 50 ms. */
		if (left > 0.05)
			left = 0.05;
		ts.tv_sec = (time_t)left;
		ts.tv_nsec = (long)((left - ts.tv_sec) * 1e9);
		nanosleep(&ts, NULL);	/* EINTR: the loop looks at stop_signal */
	}
	sm->elapsed = now_s() - start;
	/* Last snapshots: what the processes mapped since the previous one. */
	if (o->all)
		snapshot_faulting(skel, sym, self);
	else if (!sm->exited)
		cli_sym_snapshot(sym, o->pid);
}

int cmd_profile(int argc, char **argv)
{
	struct faultline_bpf *skel = NULL;
	enum fl_bpf_step step;
	struct cli_sym *sym = NULL;
	struct opts o = { 0 };
	struct summary sm = { 0 };
	struct sigaction sa = { 0 }, old_int, old_term;
	struct row *rows = NULL;
	long n;
	int err, status = 1;

	if ((err = parse_opts(argc, argv, &o)) != CLI_OPTS_GO)
		return err;
	if (!o.all && kill((pid_t)o.pid, 0) && errno == ESRCH)
		return fail("no process with PID %u", o.pid);
	if (check_privileges())
		return 1;

	sym = cli_sym_new();
	if (!sym)
		return fail("out of memory");
	if (o.all) {
		snapshot_new_procs(sym, (uint32_t)getpid());
	} else {
		err = cli_sym_snapshot(sym, o.pid);
		if (err == -ESRCH) {
			cli_sym_free(sym);
			return fail("no process with PID %u (or it has exited)", o.pid);
		}
		if (err)
			fprintf(stderr, "faultline: profile: cannot read /proc/%u/maps (%s): "
				"addresses will not be named\n", o.pid, strerror(-err));
	}

	/* No fault samples: only fl_faults is read. */
	err = fl_bpf_load(&(struct fl_bpf_load_opts){ .sample_every = 0, .profile_all = o.all,
						     .print = print_libbpf },
			  &skel, &step);
	if (err) {
		if (step == FL_BPF_OPEN)
			fail("cannot open the eBPF program: %s", strerror(-err));
		else if (step == FL_BPF_LOAD)
			fail("cannot load the eBPF program: %s%s", strerror(-err),
			     err == -EPERM ? " (locked down kernel, or unprivileged BPF disabled?)" :
			     err == -ENOENT || err == -ESRCH ?
			     " (does the kernel have BTF, /sys/kernel/btf/vmlinux?)" : "");
		else
			fail("cannot attach the eBPF program: %s", strerror(-err));
		goto out;
	}
	if (!o.all) {
		struct fl_registration reg = { .flags = 0 };

		if (fl_bpf_register(skel, o.pid, &reg)) {
			fail("cannot register PID %u with the eBPF program: %s", o.pid,
			     strerror(errno));
			goto out;
		}
	}

	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	if (o.all)
		fprintf(stderr, "faultline: profile: counting the page faults of every process "
			"for %g s (Ctrl-C stops early)\n", o.seconds);
	else
		fprintf(stderr, "faultline: profile: counting the page faults of PID %u (%s) "
			"for %g s (Ctrl-C stops early)\n", o.pid,
			cli_safe(cli_sym_comm(sym, o.pid)), o.seconds);

	wait_and_watch(&o, skel, sym, &sm);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	if (sm.exited)
		fprintf(stderr, "faultline: profile: PID %u exited after %.2f s\n", o.pid,
			sm.elapsed);
	else if (sm.stopped_by)
		fprintf(stderr, "faultline: profile: stopped by %s after %.2f s\n",
			strsignal(sm.stopped_by), sm.elapsed);

	n = read_faults(skel, o.pid, (uint32_t)getpid(), &rows);
	if (n < 0) {
		fail("cannot read the fault counts: %s", strerror((int)-n));
		goto out;
	}
	sm.addresses = (size_t)n;
	sm.processes = count_processes(rows, (size_t)n);
	for (long i = 0; i < n; i++)
		sm.faults += rows[i].count;
	sm.map_full = stat_sum(skel, FL_STAT_MAP_FULL);
	/* fl_faults does not evict: a fault it had no slot for is a failure
	 * (as is a signal fl_signals had no room for). */
	sm.map_filled = sm.map_full != 0;
	if (sm.map_filled)
		fprintf(stderr, "faultline: profile: the kernel's maps filled up (fl_faults has "
			"%u slots): faults at addresses new then were not counted\n",
			bpf_map__max_entries(skel->maps.fl_faults));

	if (o.json)
		print_json(&o, sym, rows, (size_t)n, &sm);
	else
		print_text(&o, sym, rows, (size_t)n, &sm);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fail("write error: %s", strerror(errno));
		goto out;
	}
	status = 0;
out:
	free(rows);
	faultline_bpf__destroy(skel);
	cli_sym_free(sym);
	return status;
}
