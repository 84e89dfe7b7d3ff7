/* SPDX-License-Identifier: MIT */
/*
 * The healing tests (selftests/heal/): one program per property, each
 * exiting 0 (pass), 77 (skip, with the reason) or 1 (fail, with the
 * reason); run.sh runs them.
 *
 * Besides the patcher's helpers (t_start, t_enable, t_prot): the registered
 * sites and their counts, healing every site, and the kernel's own count
 * of the page faults at given PCs (kfaults_*), which is how a test sees
 * that a healed failure costs no signal without trusting the library's
 * word for it.
 */
#ifndef FL_TEST_HEAL_COMMON_H
#define FL_TEST_HEAL_COMMON_H

#include <dlfcn.h>
#include <linux/perf_event.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/syscall.h>

#include <faultline/dispatch.h>
#include <faultline/patch.h>

/* t_init_discovering: fl_init that registers the test program's own sites. */
#include "../points/common.h"
#include "corpus.h"

#define T_MAX_SITES 256

/* The registered sites, in address order. */
struct t_sites {
	size_t n;
	uint64_t pc[T_MAX_SITES];
	uint64_t handler[T_MAX_SITES];
	uint64_t faults[T_MAX_SITES];	/* trapped: dispatched after a fault */
};

static inline int t_sites_add(const struct fl_site *s, void *ctx)
{
	struct t_sites *t = ctx;

	if (t->n == T_MAX_SITES)
		return 1;
	t->pc[t->n] = s->faulting_pc;
	t->handler[t->n] = s->handler_pc;
	t->faults[t->n] = s->faults;
	t->n++;
	return 0;
}

static inline void t_sites_get(struct t_sites *t)
{
	t->n = 0;
	t_check(fl_site_for_each(t_sites_add, t) == 0, "more than %d sites", T_MAX_SITES);
}

/* The index of pc in t, or -1. */
static inline int t_site_index(const struct t_sites *t, uint64_t pc)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->pc[i] == pc)
			return (int)i;
	return -1;
}

/* The site at pc's trapped failures (fl_site_for_each's count). */
static inline uint64_t t_trapped(uint64_t pc)
{
	struct t_sites t;
	int i;

	t_sites_get(&t);
	i = t_site_index(&t, pc);
	t_check(i >= 0, "no registered site at 0x%llx", (unsigned long long)pc);
	return t.faults[i];
}

static inline struct fl_heal_info t_heal_info(uint64_t pc)
{
	struct fl_heal_info info = { .sz = sizeof(info) };
	int err = fl_site_heal_info((const void *)(uintptr_t)pc, &info);

	t_check(err == 0, "fl_site_heal_info(0x%llx): %d", (unsigned long long)pc, err);
	return info;
}

/* The faults faultline dispatched to a handler PC (fl_stats_get). */
static inline uint64_t t_claimed(void)
{
	struct fl_stats st = { .sz = sizeof(st) };

	t_check(fl_stats_get(&st) == 0, "fl_stats_get");
	return st.claimed;
}

/* Prints /proc/self/maps to stderr (a failure's context). */
static inline void t_print_maps(void)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");

	while (f && fgets(line, sizeof(line), f))
		fprintf(stderr, "  %s", line);
	if (f)
		fclose(f);
}

/* Heals the site at pc; fails the test on an error. */
static inline void t_heal(uint64_t pc)
{
	struct fl_diag d = { 0 };
	int err = fl_site_heal((const void *)(uintptr_t)pc, &d);

	if (err)
		t_print_maps();
	t_check(err == 0, "fl_site_heal(0x%llx): %d %s", (unsigned long long)pc, err, d.msg);
}

static inline void t_unheal(uint64_t pc)
{
	struct fl_diag d = { 0 };
	int err = fl_site_unheal((const void *)(uintptr_t)pc, &d);

	t_check(err == 0, "fl_site_unheal(0x%llx): %d %s", (unsigned long long)pc, err, d.msg);
}

/* ------------------------------------------------------------------------
 * The corpus harness (corpus.h; the tests that link corpus.c).
 */

/* What the harness prints, run here (malloc'd). */
static inline char *t_corpus_output(int reps)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	t_check(f != NULL, "open_memstream");
	corpus_run(f, reps);
	t_check(fclose(f) == 0, "fclose");
	return buf;
}

/* What the explicit build (corpus_explicit at path) prints (malloc'd). */
static inline char *t_explicit_output(const char *path, int reps)
{
	char cmd[4096], chunk[65536], *buf = NULL;
	size_t len = 0, n;
	FILE *p, *f = open_memstream(&buf, &len);
	int st;

	snprintf(cmd, sizeof(cmd), "'%s' %d", path, reps);
	p = popen(cmd, "r");
	t_check(p != NULL && f != NULL, "popen %s", cmd);
	while ((n = fread(chunk, 1, sizeof(chunk), p)) > 0)
		fwrite(chunk, 1, n, f);
	st = pclose(p);
	fclose(f);
	t_check(st == 0, "%s: exit status 0x%x", cmd, st);
	return buf;
}

/* "function+offset" of pc (the programs link -rdynamic), else the address. */
static inline void t_fn_name(uint64_t pc, char *out, size_t len)
{
	Dl_info di;

	if (dladdr((void *)(uintptr_t)pc, &di) && di.dli_sname)
		snprintf(out, len, "%s+%#llx", di.dli_sname,
			 (unsigned long long)(pc - (uint64_t)(uintptr_t)di.dli_saddr));
	else
		snprintf(out, len, "0x%llx", (unsigned long long)pc);
}

/* ------------------------------------------------------------------------
 * The kernel's view: every user-mode page fault of the calling thread,
 * with its PC and address, from a software perf event sampled at every
 * fault (PERF_COUNT_SW_PAGE_FAULTS, period 1).  The kernel counts it in
 * the page fault handler itself, before it decides that the access is bad
 * and sends the signal, so a failed implicit check is exactly one sample
 * at the site's PC with an address in the null page; a healed one, none.
 * Hermetic: no daemon, no eBPF program, no tracefs; the calling thread
 * only (what the tests run in it).
 */
struct kfaults {
	int fd;
	struct perf_event_mmap_page *meta;
	uint8_t *data;
	uint64_t data_size;
	uint64_t lost;
};

#define KFAULTS_PAGES 64

/* Returns 0, or -errno with *why saying what is missing. */
static inline int kfaults_open(struct kfaults *k, const char **why)
{
	struct perf_event_attr a = {
		.size = sizeof(a),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_PAGE_FAULTS,
		.sample_period = 1,
		.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_ADDR,
		.exclude_kernel = 1,
		.exclude_hv = 1,
	};
	long page = sysconf(_SC_PAGESIZE);
	void *m;

	memset(k, 0, sizeof(*k));
	k->fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (k->fd < 0) {
		*why = "perf_event_open(PERF_COUNT_SW_PAGE_FAULTS) is refused";
		return -errno;
	}
	m = mmap(NULL, (size_t)page * (1 + KFAULTS_PAGES), PROT_READ | PROT_WRITE, MAP_SHARED,
		 k->fd, 0);
	if (m == MAP_FAILED) {
		int err = -errno;

		close(k->fd);
		*why = "the perf event's ring buffer cannot be mapped";
		return err;
	}
	k->meta = m;
	k->data = (uint8_t *)m + page;
	k->data_size = (uint64_t)page * KFAULTS_PAGES;
	return 0;
}

/*
 * Calls fn(ip, addr, ctx) for each fault since the last drain.  A lost
 * record makes the count unsound: the test fails.  Drain often enough
 * that the 256 KiB buffer (10,000 faults) does not fill.
 */
static inline void kfaults_drain(struct kfaults *k, void (*fn)(uint64_t ip, uint64_t addr, void *ctx),
				 void *ctx)
{
	/* Acquire: pairs with the kernel's write barrier before it publishes data_head. */
	uint64_t head = __atomic_load_n(&k->meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = k->meta->data_tail;

	while (tail < head) {
		struct perf_event_header h;
		uint64_t rec[4];
		size_t len;

		for (size_t i = 0; i < sizeof(h); i++)
			((uint8_t *)&h)[i] = k->data[(tail + i) % k->data_size];
		len = h.size - sizeof(h) < sizeof(rec) ? h.size - sizeof(h) : sizeof(rec);
		for (size_t i = 0; i < len; i++)
			((uint8_t *)rec)[i] = k->data[(tail + sizeof(h) + i) % k->data_size];
		if (h.type == PERF_RECORD_SAMPLE)
			fn(rec[0], rec[1], ctx);
		else if (h.type == PERF_RECORD_LOST)
			k->lost += rec[1];
		tail += h.size;
	}
	/* Release: our reads of the records before the kernel may overwrite them. */
	__atomic_store_n(&k->meta->data_tail, tail, __ATOMIC_RELEASE);
	t_check(k->lost == 0, "the kernel lost %llu page fault records: its count is unsound",
		(unsigned long long)k->lost);
}

/* Counts, per site of t, the null-page faults at its PC (and all of them). */
struct kfaults_count {
	const struct t_sites *t;
	uint64_t at[T_MAX_SITES];
	uint64_t at_sites;	/* at any site of t */
	uint64_t null_page;	/* anywhere, address in the null page */
};

static inline void kfaults_count_one(uint64_t ip, uint64_t addr, void *ctx)
{
	struct kfaults_count *c = ctx;
	int i = t_site_index(c->t, ip);

	if (addr < 4096)
		c->null_page++;
	if (i >= 0) {
		c->at[i]++;
		c->at_sites++;
	}
}

static inline void kfaults_count(struct kfaults *k, const struct t_sites *t,
				 struct kfaults_count *c)
{
	memset(c, 0, sizeof(*c));
	c->t = t;
	kfaults_drain(k, kfaults_count_one, c);
}

#endif /* FL_TEST_HEAL_COMMON_H */
