// SPDX-License-Identifier: MIT
/*
 * The eBPF program (bpf/faultline.bpf.c) under a page-fault-heavy load:
 *
 *   bench_bpf [-n REPEAT] [-m MIB] [-s SECONDS]
 *
 *  1. Overhead: ns per page fault of a workload that does little else than
 *     fault (mmap MIB MiB anonymous, default 64, write one byte per page,
 *     munmap; the writes are timed), in four variants:
 *       (a) no program attached,
 *       (f) the floor: an empty program at the same attach point
 *           (bench_floor.bpf.c), the kernel's own cost of running any
 *           program there,
 *       (b) the program attached, this process not registered (its tgid's
 *           bit in fl_tgid_bits is clear: the program returns at once),
 *       (c) the program attached and this process registered, with a few
 *           PCs in fl_sites (every fault is counted per (tgid, ip), a
 *           probe of fl_faults' open-addressed table, its class kept in
 *           the slot while fl_sites does
 *           not change, and one in sample_every goes to the ring buffer,
 *           which is drained between passes, untimed).
 *     One skeleton, loaded once, with the sample_every a loader gets by
 *     default; the variants are interleaved batch by batch, their order
 *     rotating, the links attached and detached between passes (attach and
 *     detach are not timed).  REPEAT batches (default 15) of one pass each.
 *     Reported: the median [min .. max] and the medians of the per-batch
 *     ratios f/a, b/a and c/a, and b/f and c/f (what the program adds to
 *     the floor); and, as a sanity check, what the program's own
 *     per-CPU counters (fl_stats) counted in each variant.
 *     Then (c) against (a) again with this process's sites in fl_sites
 *     grown to 1,000, 10,000, 100,000 and 1,000,000 (the map holds
 *     1,048,576): the scaling table.  A fault at an ip that faulted before
 *     does not look fl_sites up while it does not change, so the rows
 *     should be flat; each row's first pass follows a change of fl_sites.
 *  2. Ring buffer loss at the highest fault rate this machine gives: a
 *     second skeleton with sample_every = 1, as many threads as CPUs
 *     touching fresh pages, this process registered; with a consumer
 *     thread in ring_buffer__poll, and with no consumer at all (the worst
 *     case: the buffer fills once, then every reserve fails); and the same
 *     threads with no program attached, for the fault rate the program is
 *     compared with.  SECONDS (default 3) of each, in 3 rounds interleaved
 *     (a shared machine's load drifts); the totals are reported.
 *
 * Figures only: nothing here asserts a time.  It does check that the
 * program counted what it should (exit 1 if not).  Runs as root: exits 77
 * (skip, with the reason) when the program cannot be loaded.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <linux/types.h>
#include <bpf/libbpf.h>
#include <bpf/bpf.h>

#include "faultline_bpf.h"
#include "faultline.skel.h"
#include "registered.h"
#include "faults.h"
#include "bench_floor.skel.h"
#include "stats.h"

static void die(const char *what, int err)
{
	fprintf(stderr, "bench_bpf: %s failed: %s\n", what, strerror(err ? -err : errno));
	exit(1);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The median of a[i] / b[i] (or a[i] - b[i]): each pair was measured back
 * to back, so a burst of load from elsewhere falls on both of a pair. */
static double paired(const double *a, const double *b, int n, bool ratio)
{
	double r[n];

	for (int i = 0; i < n; i++)
		r[i] = ratio ? a[i] / b[i] : a[i] - b[i];
	return bench_median(r, (size_t)n);
}

static int repeat = 15;
static size_t map_bytes = 64u << 20;
static double seconds = 3;
static size_t page_size, map_pages;
static __u32 tgid;

/* The one store whose faults are measured; the label gives its address, so
 * that the program's per-(tgid, ip) count of it can be checked exactly.
 * noclone: a copy would define the label twice. */
extern const char fl_bench_touch_insn[];

__attribute__((noinline, noclone)) static void touch(volatile char *p)
{
	__asm__ volatile(".globl fl_bench_touch_insn\n\t.hidden fl_bench_touch_insn\n"
			 "fl_bench_touch_insn:\n\tmovb $1, (%0)"
			 : : "r"(p) : "memory");
}

/* Maps map_bytes of fresh anonymous memory, small pages only (with
 * transparent huge pages one fault would map 512 of them). */
static char *map_fresh(void)
{
	char *p = mmap(NULL, map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);

	if (p == MAP_FAILED)
		die("mmap", 0);
	if (madvise(p, map_bytes, MADV_NOHUGEPAGE))
		die("madvise(MADV_NOHUGEPAGE)", 0);
	return p;
}

static int print_libbpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

/* Returns the sum over CPUs of counter idx; exits when it is unreadable. */
static __u64 stat_sum(struct faultline_bpf *skel, __u32 idx)
{
	int ncpu = libbpf_num_possible_cpus();
	__u64 vals[ncpu > 0 ? ncpu : 1], sum = 0;

	if (ncpu <= 0)
		die("libbpf_num_possible_cpus", ncpu);
	if (bpf_map__lookup_elem(skel->maps.fl_stats, &idx, sizeof(idx), vals, sizeof(vals), 0))
		die("fl_stats lookup", 0);
	for (int i = 0; i < ncpu; i++)
		sum += vals[i];
	return sum;
}

struct stats {
	__u64 v[FL_STAT_NR];
};

static void stats_read(struct faultline_bpf *skel, struct stats *s)
{
	for (__u32 i = 0; i < FL_STAT_NR; i++)
		s->v[i] = stat_sum(skel, i);
}

/* acc += after - before */
static void stats_add_delta(struct stats *acc, const struct stats *before,
			    const struct stats *after)
{
	for (int i = 0; i < FL_STAT_NR; i++)
		acc->v[i] += after->v[i] - before->v[i];
}

/*
 * Opens and loads a skeleton with the given sample_every (0: the object's
 * default), registers this process and a few PCs that never fault (the
 * lookup in fl_sites is what a registered fault pays; which PC it finds
 * does not change the cost).  Returns NULL with *why set when the program
 * cannot be loaded here.
 */
static struct faultline_bpf *load(__u32 sample_every, const char **why)
{
	struct faultline_bpf *skel = faultline_bpf__open();
	int err;

	if (!skel) {
		*why = strerror(errno);
		return NULL;
	}
	if (sample_every)
		skel->rodata->sample_every = sample_every;
	err = faultline_bpf__load(skel);
	if (err) {
		*why = strerror(-err);
		faultline_bpf__destroy(skel);
		return NULL;
	}
	for (int i = 0; i < 8; i++) {
		struct fl_site_key k = { .tgid = tgid, .pc = (__u64)(uintptr_t)map_fresh + 16 * i };
		struct fl_site_value site = { .id = (__u64)i + 1 };

		if (bpf_map__update_elem(skel->maps.fl_sites, &k, sizeof(k), &site, sizeof(site),
					 BPF_ANY))
			die("fl_sites update", 0);
	}
	fl_bpf_sites_changed(skel);
	return skel;
}

static void set_registered(struct faultline_bpf *skel, bool on)
{
	struct fl_registration reg = { 0 };
	int err;

	if (on)
		err = fl_bpf_register(skel, tgid, &reg);
	else
		err = fl_bpf_unregister(skel, tgid);
	if (err && !(err == -ENOENT && !on))
		die(on ? "fl_registered update" : "fl_registered delete", err);
}

static int count_sample(void *ctx, void *data, size_t size)
{
	(void)data;
	(void)size;
	(*(__u64 *)ctx)++;
	return 0;
}

/* ------------------------------------------------------------------------
 * 1. Overhead
 */

enum { V_NONE, V_FLOOR, V_UNREG, V_REG, NUM_V };

struct overhead {
	struct faultline_bpf *skel;
	struct bench_floor_bpf *floor;
	struct ring_buffer *rb;
	struct bpf_link *floor_link;	/* (f)'s or (g)'s, while attached */
	bool attached, registered;
	struct stats seen[NUM_V];	/* fl_stats deltas over each variant's passes */
	__u64 pages[NUM_V];		/* pages touched in each variant's passes */
	__u64 received;			/* ring buffer records consumed */
	__u64 unreg_runs;		/* (b)'s runs in prog_run_time, or UINT64_MAX */
};

static void set_variant(struct overhead *o, int v)
{
	bool attach = v >= V_UNREG, reg = v == V_REG;
	int err;

	bpf_link__destroy(o->floor_link);
	o->floor_link = NULL;
	if (v == V_FLOOR) {
		o->floor_link = bpf_program__attach(o->floor->progs.fl_bench_floor);
		if (!o->floor_link)
			die("bench_floor attach", -errno);
	}
	if (attach && !o->attached) {
		err = faultline_bpf__attach(o->skel);
		if (err)
			die("faultline_bpf__attach", err);
	} else if (!attach && o->attached) {
		faultline_bpf__detach(o->skel);
	}
	o->attached = attach;
	if (reg != o->registered)
		set_registered(o->skel, reg);
	o->registered = reg;
}

static int64_t *lat;	/* map_pages fault times of a pass */

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * One pass of variant v: each fault timed alone.  Sets *med to the median
 * fault's seconds (a fault that an interrupt or another process's burst
 * lands on does not move it) and *mean to the mean.
 */
static void overhead_pass(struct overhead *o, int v, double *med, double *mean)
{
	struct stats before, after;
	int64_t sum = 0;
	char *p;
	int err;

	set_variant(o, v);
	p = map_fresh();
	stats_read(o->skel, &before);
	for (size_t i = 0; i < map_pages; i++) {
		int64_t t0 = now_ns();

		touch(p + i * page_size);
		lat[i] = now_ns() - t0;
	}
	stats_read(o->skel, &after);
	munmap(p, map_bytes);
	stats_add_delta(&o->seen[v], &before, &after);
	o->pages[v] += map_pages;
	/* What a daemon would read, here between passes rather than during. */
	err = ring_buffer__consume(o->rb);
	if (err < 0)
		die("ring_buffer__consume", err);
	for (size_t i = 0; i < map_pages; i++)
		sum += lat[i];
	qsort(lat, map_pages, sizeof(*lat), cmp_i64);
	*med = (double)lat[map_pages / 2] * 1e-9;
	*mean = (double)sum * 1e-9 / (double)map_pages;
}

/* Returns 0 if the program counted as it should, 1 if not. */
static int overhead_check(struct overhead *o)
{
	struct fl_fault_key k = { .tgid = tgid, .ip = (__u64)(uintptr_t)fl_bench_touch_insn };
	struct fl_fault_counts c = { 0 };
	static const char *names[NUM_V] = { "(a)", "(f)", "(b)", "(c)" };
	int bad = 0, err = ring_buffer__consume(o->rb);
	/* Over the skeleton's life, not the timed windows: a fault between
	 * two windows (the ring buffer's own pages, first read) is sampled
	 * too. */
	__u64 submitted = stat_sum(o->skel, FL_STAT_SAMPLES);

	if (err < 0)
		die("ring_buffer__consume", err);

	printf("  fl_stats during each variant's passes:\n");
	for (int v = 0; v < NUM_V; v++)
		printf("    %s  pages touched %7llu   counted %7llu   samples %5llu"
		       "   drops %llu\n", names[v], (unsigned long long)o->pages[v],
		       (unsigned long long)o->seen[v].v[FL_STAT_COUNTED],
		       (unsigned long long)o->seen[v].v[FL_STAT_SAMPLES],
		       (unsigned long long)o->seen[v].v[FL_STAT_RB_DROPS]);
	{
		struct fl_fault_slot *t = fl_bpf_faults_map(o->skel->maps.fl_faults, false);

		if (!t || !fl_bpf_faults_get(t, k.tgid, k.ip, &c))
			fprintf(stderr, "bench_bpf: no fl_faults entry for the touching store: %s\n",
				t ? "none" : strerror(errno));
		fl_bpf_faults_unmap(t);
	}
	printf("  fl_faults[this process, the touching store]: %llu stray write faults\n"
	       "  ring buffer: %llu records submitted, %llu consumed (between passes)\n",
	       (unsigned long long)c.stray, (unsigned long long)submitted,
	       (unsigned long long)o->received);

	/* Not registered: never counted, though the program ran (its run
	 * count in prog_run_time's pass); registered: every page touched
	 * counted at the store, exactly (so none in the other variants). */
	if (o->seen[V_UNREG].v[FL_STAT_COUNTED] != 0 ||
	    (o->unreg_runs != UINT64_MAX && o->unreg_runs < map_pages)) {
		fprintf(stderr, "bench_bpf: (b) expected none counted, and >= %zu runs of the"
			" program in its pass with BPF_STATS_RUN_TIME (%llu)\n", map_pages,
			(unsigned long long)o->unreg_runs);
		bad = 1;
	}
	if (o->seen[V_REG].v[FL_STAT_COUNTED] < o->pages[V_REG] || c.stray != o->pages[V_REG] ||
	    c.write != o->pages[V_REG] || c.implicit != 0) {
		fprintf(stderr, "bench_bpf: (c) expected %llu stray write faults counted at the store\n",
			(unsigned long long)o->pages[V_REG]);
		bad = 1;
	}
	if (o->received != submitted) {
		fprintf(stderr, "bench_bpf: consumed %llu ring buffer records, the program"
			" submitted %llu\n", (unsigned long long)o->received,
			(unsigned long long)submitted);
		bad = 1;
	}
	return bad;
}

/* A program's run_time_ns and run_cnt (while stats are enabled). */
static void prog_stats(const struct bpf_program *prog, __u64 *ns, __u64 *cnt)
{
	struct bpf_prog_info info = { 0 };
	__u32 len = sizeof(info);
	int err = bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len);

	if (err)
		die("bpf_obj_get_info_by_fd", err);
	*ns = info.run_time_ns;
	*cnt = info.run_cnt;
}

/*
 * The program's own time per run, as the kernel measures it with
 * BPF_STATS_RUN_TIME (two clock reads around each run, which is why it is
 * on only for one untimed pass of (f), (b) and (c)).  The empty program's
 * time is the clock reads' and a program's entry and exit alone: the
 * program's own work is what it adds to it.  What is left of the
 * wall-clock difference is the tracepoint's dispatch to the program.
 */
static void prog_run_time(struct overhead *o)
{
	static const char *names[NUM_V] = {
		NULL, "(f) empty program:", "(b) not registered:", "(c) registered:",
	};
	int fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	double x, y, floor_ns = 0;

	if (fd < 0) {
		printf("  program run time: not measured: bpf_enable_stats: %s\n", strerror(-fd));
		return;
	}
	for (int v = V_FLOOR; v < NUM_V; v++) {
		const struct bpf_program *prog = v == V_FLOOR ? o->floor->progs.fl_bench_floor :
						 o->skel->progs.fl_page_fault_user;
		__u64 ns0, cnt0, ns1, cnt1;
		double ns;

		set_variant(o, v);
		prog_stats(prog, &ns0, &cnt0);
		overhead_pass(o, v, &x, &y);
		prog_stats(prog, &ns1, &cnt1);
		ns = cnt1 > cnt0 ? (double)(ns1 - ns0) / (double)(cnt1 - cnt0) : 0.0;
		if (v == V_FLOOR)
			floor_ns = ns;
		if (v == V_UNREG)
			o->unreg_runs = cnt1 - cnt0;
		printf("  program run time, %-20s %6.1f ns a run, %+6.1f ns over the empty one"
		       " (%llu runs, BPF_STATS_RUN_TIME)\n", names[v], ns, ns - floor_ns,
		       (unsigned long long)(cnt1 - cnt0));
	}
	set_variant(o, V_NONE);
	close(fd);
}

/* Adds this process's sites (PCs that never fault) until fl_sites holds n,
 * in batches, and tells the program. */
static void grow_sites(struct faultline_bpf *skel, __u32 *have, __u32 n)
{
	enum { BATCH = 4096 };
	static struct fl_site_key keys[BATCH];
	static struct fl_site_value vals[BATCH];
	LIBBPF_OPTS(bpf_map_batch_opts, opts, .elem_flags = BPF_ANY);

	while (*have < n) {
		__u32 count = n - *have < BATCH ? n - *have : BATCH;

		for (__u32 i = 0; i < count; i++) {
			keys[i] = (struct fl_site_key){ .tgid = tgid,
							.pc = 0x100000000ull + 16ull * (*have + i) };
			vals[i] = (struct fl_site_value){ .id = *have + i };
		}
		if (bpf_map_update_batch(bpf_map__fd(skel->maps.fl_sites), keys, vals, &count,
					 &opts))
			die("fl_sites batch update", 0);
		*have += count;
	}
	fl_bpf_sites_changed(skel);
}

/* (c) against (a) with fl_sites grown (the scaling table). */
static void overhead_sites(struct overhead *o)
{
	static const __u32 sizes[] = { 1000, 10000, 100000, 1000000 };
	double med[2][repeat], x, y;
	__u32 have = 8;		/* load()'s */

	printf("  registered, with this process's sites in fl_sites (median fault, ns):\n");
	printf("  %9s   %10s   %10s   %-8s   %s\n", "sites", "(c)", "(a)", "c/a", "+ns");
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		double rr, dd;

		grow_sites(o->skel, &have, sizes[k]);
		for (int v = 0; v < 2; v++)
			overhead_pass(o, v ? V_REG : V_NONE, &x, &y);	/* warm-up */
		for (int i = 0; i < repeat; i++)
			for (int j = 0; j < 2; j++) {
				int v = (i + j) % 2;

				overhead_pass(o, v ? V_REG : V_NONE, &med[v][i], &y);
			}
		set_variant(o, V_NONE);
		rr = paired(med[1], med[0], repeat, true);
		dd = paired(med[1], med[0], repeat, false);
		printf("  %9u   %10.1f   %10.1f   %7.3fx   %+6.1f\n", sizes[k],
		       bench_median(med[1], (size_t)repeat) * 1e9,
		       bench_median(med[0], (size_t)repeat) * 1e9, rr, dd * 1e9);
	}
}

static int run_overhead(struct faultline_bpf *skel)
{
	static const char *names[NUM_V] = {
		"(a) no program attached",
		"(f) empty program (the floor)",
		"(b) attached, not registered",
		"(c) attached, registered",
	};
	static const char *ratios[NUM_V] = {
		NULL,
		"ratio f/a (the floor)",
		"ratio b/a (not registered)",
		"ratio c/a (registered)",
	};
	struct overhead o = { .skel = skel, .unreg_runs = UINT64_MAX };
	double med[NUM_V][repeat], mean[NUM_V][repeat], r[2][NUM_V], d[2][NUM_V], x, y;
	double rf[2][NUM_V], df[2][NUM_V];
	int bad;

	o.floor = bench_floor_bpf__open_and_load();
	if (!o.floor)
		die("bench_floor_bpf__open_and_load", 0);

	lat = calloc(map_pages, sizeof(*lat));
	if (!lat)
		die("calloc", -ENOMEM);
	o.rb = ring_buffer__new(bpf_map__fd(skel->maps.fl_samples), count_sample, &o.received,
				NULL);
	if (!o.rb)
		die("ring_buffer__new", 0);
	printf("1. Overhead: the first write to each page of %zu MiB of fresh anonymous\n"
	       "memory (%zu small pages), each fault timed alone (clock_gettime included).\n"
	       "sample_every = %u.  %d batches of one pass per variant, interleaved, their\n"
	       "order rotating: the median over the batches of each pass's median fault and\n"
	       "of its mean [min .. max]; ratios: median of the per-batch ratios.\n",
	       map_bytes >> 20, map_pages, skel->rodata->sample_every, repeat);
	for (int v = 0; v < NUM_V; v++)
		overhead_pass(&o, v, &x, &y);		/* warm-up */
	for (int i = 0; i < repeat; i++)
		for (int k = 0; k < NUM_V; k++) {
			int v = (i + k) % NUM_V;

			overhead_pass(&o, v, &med[v][i], &mean[v][i]);
		}
	set_variant(&o, V_NONE);
	/* The ratios first: the medians sort. */
	for (int v = V_FLOOR; v < NUM_V; v++) {
		r[0][v] = paired(med[v], med[V_NONE], repeat, true);
		d[0][v] = paired(med[v], med[V_NONE], repeat, false);
		r[1][v] = paired(mean[v], mean[V_NONE], repeat, true);
		d[1][v] = paired(mean[v], mean[V_NONE], repeat, false);
		rf[0][v] = paired(med[v], med[V_FLOOR], repeat, true);
		df[0][v] = paired(med[v], med[V_FLOOR], repeat, false);
		rf[1][v] = paired(mean[v], mean[V_FLOOR], repeat, true);
		df[1][v] = paired(mean[v], mean[V_FLOOR], repeat, false);
	}
	printf("  %-32s %-33s %s\n", "", "median fault, ns", "mean fault, ns");
	for (int v = 0; v < NUM_V; v++) {
		double m = bench_median(med[v], (size_t)repeat), n = bench_median(mean[v], (size_t)repeat);

		printf("  %-32s %8.1f [%8.1f .. %8.1f]   %8.1f [%8.1f .. %8.1f]\n", names[v],
		       m * 1e9, med[v][0] * 1e9, med[v][repeat - 1] * 1e9, n * 1e9,
		       mean[v][0] * 1e9, mean[v][repeat - 1] * 1e9);
	}
	for (int v = V_FLOOR; v < NUM_V; v++)
		printf("  %-32s %8.3fx (%+7.1f ns)              %8.3fx (%+7.1f ns)\n",
		       ratios[v], r[0][v], d[0][v] * 1e9, r[1][v], d[1][v] * 1e9);
	for (int v = V_UNREG; v < NUM_V; v++)
		printf("  %-32s %8.3fx (%+7.1f ns)              %8.3fx (%+7.1f ns)\n",
		       v == V_UNREG ? "over the floor, b/f" : "over the floor, c/f",
		       rf[0][v], df[0][v] * 1e9, rf[1][v], df[1][v] * 1e9);
	prog_run_time(&o);
	bad = overhead_check(&o);
	overhead_sites(&o);
	bench_floor_bpf__destroy(o.floor);
	ring_buffer__free(o.rb);
	free(lat);
	return bad;
}

/* ------------------------------------------------------------------------
 * 2. Ring buffer loss
 */

struct toucher {
	pthread_t thread;
	__u64 pages;
};

/* Release by the main thread after the run's time; the threads' relaxed
 * loads see it within a pass (no data is published with it: the page
 * counts are read after pthread_join). */
static atomic_bool stop_touching, stop_consuming;

static void *toucher_main(void *arg)
{
	struct toucher *t = arg;

	bool stop = false;

	while (!stop) {
		char *p = map_fresh();
		size_t i;

		/* The flag every 256 pages: a whole mapping can take a second
		 * on a loaded machine, which would stretch a round. */
		for (i = 0; i < map_pages && !stop; i++) {
			touch(p + i * page_size);
			if (i % 256 == 255)
				stop = atomic_load_explicit(&stop_touching, memory_order_relaxed);
		}
		munmap(p, map_bytes);
		t->pages += i;
	}
	return NULL;
}

struct consumer {
	pthread_t thread;
	struct ring_buffer *rb;
	__u64 received;		/* records read; by the consumer thread while it runs */
	int err;
};

static void *consumer_main(void *arg)
{
	struct consumer *c = arg;

	while (!atomic_load_explicit(&stop_consuming, memory_order_relaxed)) {
		int n = ring_buffer__poll(c->rb, 100);

		if (n < 0 && n != -EINTR) {
			c->err = n;
			break;
		}
	}
	return NULL;
}

enum { RUN_NO_PROGRAM, RUN_CONSUMER, RUN_NO_CONSUMER, NUM_RUNS };

/* A kind of run's totals over its rounds. */
struct loss {
	__u64 pages;		/* touched by the threads */
	int64_t ns;		/* first thread started .. last joined */
	struct stats d;		/* fl_stats deltas over the same windows */
	__u64 during, drained;	/* records received while running, after */
};

/* One timed round of nthreads touchers, added to *l; skel is attached for
 * it unless RUN_NO_PROGRAM. */
static void loss_round(struct faultline_bpf *skel, struct consumer *c, int kind,
		       int nthreads, double secs, struct loss *l)
{
	struct toucher t[nthreads];
	struct stats before, after;
	__u64 received0;
	int64_t t0, t1;
	int err;

	if (kind != RUN_NO_PROGRAM && (err = faultline_bpf__attach(skel)))
		die("faultline_bpf__attach", err);
	atomic_store(&stop_touching, false);
	atomic_store(&stop_consuming, false);
	/* Not read by another thread until pthread_create below. */
	received0 = c->received;
	if (kind == RUN_CONSUMER && (err = pthread_create(&c->thread, NULL, consumer_main, c)))
		die("pthread_create", -err);
	stats_read(skel, &before);
	t0 = now_ns();
	for (int i = 0; i < nthreads; i++) {
		t[i].pages = 0;
		if ((err = pthread_create(&t[i].thread, NULL, toucher_main, &t[i])))
			die("pthread_create", -err);
	}
	usleep((useconds_t)(secs * 1e6));
	atomic_store(&stop_touching, true);
	for (int i = 0; i < nthreads; i++) {
		pthread_join(t[i].thread, NULL);
		l->pages += t[i].pages;
	}
	t1 = now_ns();
	stats_read(skel, &after);
	if (kind == RUN_CONSUMER) {
		atomic_store(&stop_consuming, true);
		pthread_join(c->thread, NULL);
		if (c->err)
			die("ring_buffer__poll", c->err);
	}
	l->during += c->received - received0;
	received0 = c->received;
	/* What is left in the buffer: all of it without a consumer. */
	if ((err = ring_buffer__consume(c->rb)) < 0)
		die("ring_buffer__consume", err);
	l->drained += c->received - received0;
	if (kind != RUN_NO_PROGRAM)
		faultline_bpf__detach(skel);
	l->ns += t1 - t0;
	stats_add_delta(&l->d, &before, &after);
}

static int run_loss(struct faultline_bpf *skel)
{
	static const char *names[NUM_RUNS] = {
		"no program attached",
		"attached, registered, a consumer thread in ring_buffer__poll",
		"attached, registered, no consumer",
	};
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int nthreads = ncpu > 0 ? (int)ncpu : 1, rounds = 3, bad = 0;
	struct consumer c = { 0 };
	struct loss l[NUM_RUNS] = { 0 };
	struct stats all;

	printf("\n2. Ring buffer loss: sample_every = %u (every counted fault), %d threads (one\n"
	       "per CPU) touching fresh %zu MiB mappings, this process registered.  %d rounds\n"
	       "of %.1f s of each kind, interleaved; totals.  Ring buffer %u KiB: %zu records\n"
	       "of %zu bytes with the header.\n",
	       skel->rodata->sample_every, nthreads, map_bytes >> 20, rounds, seconds / rounds,
	       bpf_map__max_entries(skel->maps.fl_samples) >> 10,
	       bpf_map__max_entries(skel->maps.fl_samples) / (sizeof(struct fl_sample) + 8),
	       sizeof(struct fl_sample) + 8);
	c.rb = ring_buffer__new(bpf_map__fd(skel->maps.fl_samples), count_sample, &c.received,
				NULL);
	if (!c.rb)
		die("ring_buffer__new", 0);
	set_registered(skel, true);
	for (int r = 0; r < rounds; r++)
		for (int kind = 0; kind < NUM_RUNS; kind++)
			loss_round(skel, &c, kind, nthreads, seconds / rounds, &l[kind]);
	set_registered(skel, false);
	ring_buffer__free(c.rb);

	for (int kind = 0; kind < NUM_RUNS; kind++) {
		double secs = (double)l[kind].ns * 1e-9;
		__u64 counted = l[kind].d.v[FL_STAT_COUNTED];
		__u64 samples = l[kind].d.v[FL_STAT_SAMPLES], drops = l[kind].d.v[FL_STAT_RB_DROPS];

		printf("  %s:\n", names[kind]);
		printf("    %llu pages touched in %.2f s: %.0f faults/s\n",
		       (unsigned long long)l[kind].pages, secs, (double)l[kind].pages / secs);
		if (kind == RUN_NO_PROGRAM)
			continue;
		printf("    counted %llu, samples submitted %llu, ring buffer drops %llu:"
		       " loss %.2f%%\n", (unsigned long long)counted,
		       (unsigned long long)samples, (unsigned long long)drops,
		       samples + drops ? 100.0 * (double)drops / (double)(samples + drops) : 0.0);
		printf("    received: %llu by the consumer during the rounds, %llu drained after"
		       " them\n", (unsigned long long)l[kind].during,
		       (unsigned long long)l[kind].drained);
		if (counted < l[kind].pages) {
			fprintf(stderr, "bench_bpf: the program counted %llu faults of %llu pages"
				" touched\n", (unsigned long long)counted,
				(unsigned long long)l[kind].pages);
			bad = 1;
		}
	}

	/* Over the skeleton's life (the windows above leave out the faults
	 * between them): each counted fault was sampled or its reserve
	 * failure counted, and each sample was read. */
	stats_read(skel, &all);
	if (all.v[FL_STAT_SAMPLES] + all.v[FL_STAT_RB_DROPS] != all.v[FL_STAT_COUNTED] ||
	    c.received != all.v[FL_STAT_SAMPLES]) {
		fprintf(stderr, "bench_bpf: the counts do not add up: counted %llu, samples %llu +"
			" drops %llu, received %llu\n",
			(unsigned long long)all.v[FL_STAT_COUNTED],
			(unsigned long long)all.v[FL_STAT_SAMPLES],
			(unsigned long long)all.v[FL_STAT_RB_DROPS],
			(unsigned long long)c.received);
		bad = 1;
	}
	return bad;
}

int main(int argc, char **argv)
{
	struct faultline_bpf *skel;
	const char *why = NULL;
	int opt, bad;

	while ((opt = getopt(argc, argv, "n:m:s:")) != -1) {
		switch (opt) {
		case 'n':
			repeat = atoi(optarg);
			break;
		case 'm':
			map_bytes = (size_t)atoi(optarg) << 20;
			break;
		case 's':
			seconds = atof(optarg);
			break;
		default:
			fprintf(stderr, "usage: bench_bpf [-n REPEAT] [-m MIB] [-s SECONDS]\n");
			return 2;
		}
	}
	if (repeat < 1)
		repeat = 1;
	if (map_bytes == 0)
		map_bytes = 1u << 20;
	if (seconds <= 0)
		seconds = 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	page_size = (size_t)sysconf(_SC_PAGESIZE);
	map_pages = map_bytes / page_size;
	tgid = (__u32)getpid();
	libbpf_set_print(print_libbpf);

	skel = load(0, &why);
	if (!skel) {
		printf("  skipped: cannot load the eBPF program (%s; root or CAP_BPF and"
		       " CAP_PERFMON needed)\n", why);
		return 77;
	}
	bad = run_overhead(skel);
	faultline_bpf__destroy(skel);

	skel = load(1, &why);
	if (!skel) {
		fprintf(stderr, "bench_bpf: second skeleton: load failed: %s\n", why);
		return 1;
	}
	bad |= run_loss(skel);
	faultline_bpf__destroy(skel);
	return bad;
}
