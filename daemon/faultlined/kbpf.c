/* SPDX-License-Identifier: MIT */
/*
 * faultlined's eBPF side: see kbpf.h.
 *
 * What goes into the program's maps, and when:
 *   - fl_registered[pid] = { FL_REG_INHERIT } at HELLO, before WELCOME is
 *     sent: a process registered synchronously (fl_init waits for WELCOME)
 *     is counted before it can fault again;
 *   - fl_sites[(pid, faulting PC)] at MODULE_ADD, removed at MODULE_REMOVE
 *     (the first ones of the module that fit: a user other than root holds
 *     at most a quarter of the map, so that its 2,000,000 sites leave room
 *     for the others');
 *   - at exit, the registration and the sites go at once; the process's
 *     fl_faults and fl_signals entries are read once more at the next tick
 *     (its frozen view) and then deleted, with one walk of each map for all
 *     the processes that exited in that tick.
 * A child forked by a registered process is registered by the program
 * itself (FL_REG_INHERITED); when it does not register with the daemon
 * within INHERIT_TICKS ticks (it exec'd something else, or has no agent),
 * or is gone, the tick forgets it.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "faultline_bpf.h"
#include "faultline.skel.h"
#include "loader.h"

#include "dlog.h"
#include "kbpf.h"

#define SAMPLE_EVERY 64		/* one page fault sample in 64 per CPU */
#define TOP_STRAYS 16		/* stray fault PCs listed per process */
#define MAX_SIGNALS 4096	/* (signal, si_code, PC) entries kept per exited process */
#define RECENT 8		/* signal samples kept per process */
#define MAX_MISMATCH_LOGS 3	/* sites whose mismatch is logged per exited process */
#define INHERIT_TICKS 3		/* ticks an inherited registration waits for HELLO */
#define BATCH 4096

struct fld_ksig {
	struct fl_signal_key k;
	struct fl_signal_counts c;
};

struct fld_kfault {
	struct fl_fault_key k;
	struct fl_fault_counts c;
};

struct fld_ksample {
	uint64_t time_ns;
	uint32_t tid;
	int32_t sig, code;
	uint64_t ip, addr;
};

/* One process's part of the kernel's maps. */
struct pview {
	struct fl_fault_counts total;
	struct fld_kfault top[TOP_STRAYS];	/* by stray count, descending */
	size_t ntop;
	const struct fld_ksig *sigs;
	size_t nsigs;
	uint64_t fault_signals;	/* over all of sigs, even those a frozen view drops */
};

struct fld_kproc {
	pid_t pid;
	bool complete;
	uint64_t lost_base;	/* FL_STAT_SIGNALS_LOST when it registered */
	bool exit_pending;	/* exited; frozen at the next tick */
	bool frozen;
	struct pview view;	/* frozen: sigs points at own_sigs */
	struct fld_ksig *own_sigs;
	uint64_t fault_samples, signal_samples;
	struct fld_ksample recent[RECENT];
	unsigned nrecent, next_recent;
};

struct fld_kview {
	bool with_faults;	/* fl_faults was read (else only fl_signals) */
	uint64_t lost;		/* FL_STAT_SIGNALS_LOST when it was read */
	struct fld_kfault *faults;
	size_t nfaults;
	struct fld_ksig *sigs;
	size_t nsigs;
};

static struct faultline_bpf *skel;

static uint64_t stat_sum(__u32 idx);
static void tick_work(void);

/*
 * Whether k counted every fault signal of its process: its first
 * registration, and no fault signal (of any process) was lost to a full
 * map since, as of v (a frozen view was checked when it froze).
 */
static bool complete_in(const struct fld_kview *v, const struct fld_kproc *k)
{
	if (!k || !k->complete)
		return false;
	return k->frozen || (v && v->lost == k->lost_base);
}
static struct ring_buffer *rb;
static uint64_t samples_received;

/* Exited (or forgotten) pids whose map entries go at the next tick. */
static pid_t *purge;
static size_t num_purge, cap_purge;

/* Inherited registrations not claimed yet: pid and the ticks seen. */
static struct inherited {
	pid_t pid;
	unsigned ticks;
} *inh;
static size_t num_inh;

static char libbpf_last[256];

/* libbpf's messages are kept for the one line that says why loading failed. */
static int on_libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[sizeof(libbpf_last)];
	size_t n;

	if (level == LIBBPF_DEBUG)
		return 0;
	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n && line[n - 1] == '\n')
		line[--n] = 0;
	if (n) {
		memcpy(libbpf_last, line, n + 1);
		fld_debug("libbpf: %s", line);
	}
	return 0;
}

/* NULL when this process may load and attach tracing programs, else why not. */
static const char *cannot_load(char *why, size_t size)
{
	unsigned missing;
	int err = fl_bpf_missing_caps(&missing);

	if (err) {
		snprintf(why, size, "cannot read its capabilities: %s", strerror(-err));
		return why;
	}
	if (!missing)
		return NULL;
	snprintf(why, size, "faultlined runs as uid %u without CAP_BPF and CAP_PERFMON "
		 "(or CAP_SYS_ADMIN)", (unsigned)geteuid());
	return why;
}

/*
 * Samples of a pid the daemon does not know yet: a child the program
 * registered at its fork, which sends its HELLO without waiting and may
 * fault before the daemon reads it.  Kept for it (in a kproc of their own)
 * until it registers, for ORPHAN_TICKS ticks at most, MAX_ORPHANS pids.
 */
#define MAX_ORPHANS 1024
#define ORPHAN_TICKS 4
static struct orphan {
	struct fld_kproc k;	/* only its samples are used */
	unsigned ticks;
} *orphans;
static size_t num_orphans;

static struct fld_kproc *orphan_of(pid_t pid)
{
	struct orphan *grown;

	for (size_t i = 0; i < num_orphans; i++)
		if (orphans[i].k.pid == pid)
			return &orphans[i].k;
	if (num_orphans == MAX_ORPHANS)
		return NULL;
	grown = realloc(orphans, (num_orphans + 1) * sizeof(*orphans));
	if (!grown)
		return NULL;
	orphans = grown;
	memset(&orphans[num_orphans], 0, sizeof(*orphans));
	orphans[num_orphans].k.pid = pid;
	return &orphans[num_orphans++].k;
}

/* Hands pid's samples kept so far to k, its registration. */
static void adopt_orphan(struct fld_kproc *k)
{
	for (size_t i = 0; i < num_orphans; i++) {
		if (orphans[i].k.pid == k->pid) {
			const struct fld_kproc *o = &orphans[i].k;

			k->fault_samples = o->fault_samples;
			k->signal_samples = o->signal_samples;
			memcpy(k->recent, o->recent, sizeof(k->recent));
			k->nrecent = o->nrecent;
			k->next_recent = o->next_recent;
			orphans[i] = orphans[--num_orphans];
			return;
		}
	}
}

/* A tick: orphans whose process never registered are forgotten. */
static void age_orphans(void)
{
	size_t kept = 0;

	for (size_t i = 0; i < num_orphans; i++)
		if (++orphans[i].ticks < ORPHAN_TICKS)
			orphans[kept++] = orphans[i];
	num_orphans = kept;
}

static struct fld_kproc *kproc_of(pid_t pid)
{
	struct fld_proc *p = fld_proc_find_live(pid);

	return p ? p->k : orphan_of(pid);
}

static int on_sample(void *ctx, void *data, size_t size)
{
	const struct fl_sample *s = data;
	struct fld_kproc *k;

	(void)ctx;
	samples_received++;
	if (size < sizeof(*s))
		return 0;
	k = kproc_of((pid_t)s->tgid);
	if (!k)
		return 0;
	if (s->kind == FL_SAMPLE_FAULT) {
		k->fault_samples++;
	} else if (s->kind == FL_SAMPLE_SIGNAL) {
		k->signal_samples++;
		k->recent[k->next_recent] = (struct fld_ksample){
			.time_ns = s->time_ns, .tid = s->tid, .sig = s->sig, .code = s->code,
			.ip = s->ip, .addr = s->addr,
		};
		k->next_recent = (k->next_recent + 1) % RECENT;
		if (k->nrecent < RECENT)
			k->nrecent++;
	}
	return 0;
}

static void on_ring_readable(void *ctx)
{
	int n;

	(void)ctx;
	n = ring_buffer__consume(rb);
	if (n < 0)
		fld_warn("eBPF ring buffer: %s", strerror(-n));
}

bool fld_bpf_start(struct fld_loop *loop, bool wanted)
{
	enum fl_bpf_step step;
	char why[160];
	const char *no;
	int err;

	if (!wanted) {
		fld_info("eBPF: off (--no-bpf)");
		return false;
	}
	no = cannot_load(why, sizeof(why));
	if (no) {
		fld_info("eBPF: not loaded: %s; counting in the processes only", no);
		return false;
	}
	err = fl_bpf_load(&(struct fl_bpf_load_opts){ .sample_every = SAMPLE_EVERY,
						     .print = on_libbpf_print },
			  &skel, &step);
	if (err && step == FL_BPF_OPEN) {
		fld_info("eBPF: not loaded: open: %s; counting in the processes only",
			 strerror(-err));
		return false;
	}
	if (!err) {
		rb = ring_buffer__new(bpf_map__fd(skel->maps.fl_samples), on_sample, NULL, NULL);
		err = rb ? fld_loop_watch(loop, ring_buffer__epoll_fd(rb), on_ring_readable, NULL)
			 : -errno;
	}
	if (err) {
		fld_info("eBPF: not loaded: %s%s%s; counting in the processes only",
			 strerror(err < 0 ? -err : err), libbpf_last[0] ? ": libbpf: " : "",
			 libbpf_last);
		fld_bpf_stop();
		return false;
	}
	fld_info("eBPF: faultline.bpf.o attached (page_fault_user, signal_deliver, "
		 "sched_process_fork)");
	return true;
}

bool fld_bpf_on(void)
{
	return skel != NULL;
}

void fld_bpf_stop(void)
{
	ring_buffer__free(rb);
	rb = NULL;
	faultline_bpf__destroy(skel);
	skel = NULL;
	free(purge);
	purge = NULL;
	num_purge = cap_purge = 0;
	free(inh);
	inh = NULL;
	num_inh = 0;
}

/* ------------------------------------------------------------------------
 * Reading the maps
 */

/*
 * Every entry of a hash map, with lookup batches.  Returns the number read
 * (keys and values in *keys, *vals, malloc'ed), or -errno.
 */
static ssize_t dump(int fd, size_t ksz, size_t vsz, void **keys, void **vals)
{
	size_t cap = BATCH, got = 0;
	unsigned char *k = malloc(cap * ksz), *v = malloc(cap * vsz);
	__u64 in = 0, out = 0;
	bool first = true;

	for (;;) {
		LIBBPF_OPTS(bpf_map_batch_opts, o);
		__u32 count;
		int err;

		if (!k || !v)
			goto nomem;
		if (cap - got < BATCH) {
			unsigned char *nk = realloc(k, 2 * cap * ksz), *nv;

			if (!nk)
				goto nomem;
			k = nk;
			nv = realloc(v, 2 * cap * vsz);
			if (!nv)
				goto nomem;
			v = nv;
			cap *= 2;
		}
		count = (__u32)(cap - got);
		err = bpf_map_lookup_batch(fd, first ? NULL : &in, &out, k + got * ksz,
					   v + got * vsz, &count, &o);
		err = err < 0 ? errno : 0;
		got += count;
		if (err == ENOENT)
			break;
		if (err) {
			free(k);
			free(v);
			return -err;
		}
		first = false;
		in = out;
	}
	*keys = k;
	*vals = v;
	return (ssize_t)got;
nomem:
	free(k);
	free(v);
	return -ENOMEM;
}

static int cmp_fault(const void *a, const void *b)
{
	const struct fl_fault_key *x = &((const struct fld_kfault *)a)->k;
	const struct fl_fault_key *y = &((const struct fld_kfault *)b)->k;

	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	return x->ip < y->ip ? -1 : x->ip > y->ip;
}

static int cmp_sig(const void *a, const void *b)
{
	const struct fl_signal_key *x = &((const struct fld_ksig *)a)->k;
	const struct fl_signal_key *y = &((const struct fld_ksig *)b)->k;

	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	if (x->ip != y->ip)
		return x->ip < y->ip ? -1 : 1;
	if (x->sig != y->sig)
		return x->sig < y->sig ? -1 : 1;
	return x->code < y->code ? -1 : x->code > y->code;
}

/*
 * Loads one map's entries into an array of {key, value} records: all of
 * them, or those of one pid (every key starts with the tgid).
 */
static ssize_t load_pairs(struct bpf_map *map, size_t ksz, size_t vsz, pid_t only, void **out)
{
	void *keys, *vals;
	unsigned char *pairs;
	ssize_t n = dump(bpf_map__fd(map), ksz, vsz, &keys, &vals);

	if (n < 0)
		return n;
	pairs = malloc((n ? (size_t)n : 1) * (ksz + vsz));
	if (!pairs) {
		free(keys);
		free(vals);
		return -ENOMEM;
	}
	ssize_t kept = 0;

	for (ssize_t i = 0; i < n; i++) {
		const unsigned char *key = (unsigned char *)keys + i * ksz;
		__u32 tgid;

		memcpy(&tgid, key, sizeof(tgid));
		if (only && tgid != (__u32)only)
			continue;
		memcpy(pairs + kept * (ksz + vsz), key, ksz);
		memcpy(pairs + kept * (ksz + vsz) + ksz, (unsigned char *)vals + i * vsz, vsz);
		kept++;
	}
	free(keys);
	free(vals);
	*out = pairs;
	return kept;
}

/* Whether some process's kernel view is read from the maps (not frozen). */
static bool any_live_view(pid_t only)
{
	for (size_t i = 0; i < fld_num_procs; i++) {
		const struct fld_proc *p = fld_procs[i];

		if (p->k && !p->k->frozen && (!only || p->pid == only))
			return true;
	}
	return false;
}

struct fld_kview *fld_kview_take(pid_t only, bool with_faults)
{
	struct fld_kview *v;
	void *f = NULL, *s = NULL;
	ssize_t nf = 0, ns;

	if (!skel || !any_live_view(only))
		return NULL;
	v = calloc(1, sizeof(*v));
	if (!v)
		return NULL;
	_Static_assert(sizeof(struct fld_kfault) ==
		       sizeof(struct fl_fault_key) + sizeof(struct fl_fault_counts), "packed");
	_Static_assert(sizeof(struct fld_ksig) ==
		       sizeof(struct fl_signal_key) + sizeof(struct fl_signal_counts), "packed");
	if (with_faults)
		nf = load_pairs(skel->maps.fl_faults, sizeof(struct fl_fault_key),
				sizeof(struct fl_fault_counts), only, &f);
	ns = nf < 0 ? nf : load_pairs(skel->maps.fl_signals, sizeof(struct fl_signal_key),
				      sizeof(struct fl_signal_counts), only, &s);
	if (nf < 0 || ns < 0) {
		fld_warn("eBPF: reading the maps: %s", strerror((int)-(nf < 0 ? nf : ns)));
		free(f);
		free(v);
		return NULL;
	}
	v->with_faults = with_faults;
	v->lost = stat_sum(FL_STAT_SIGNALS_LOST);
	v->faults = f;
	v->nfaults = (size_t)nf;
	v->sigs = s;
	v->nsigs = (size_t)ns;
	/* Either may be NULL when empty, which qsort must not be given. */
	if (v->nfaults)
		qsort(v->faults, v->nfaults, sizeof(*v->faults), cmp_fault);
	if (v->nsigs)
		qsort(v->sigs, v->nsigs, sizeof(*v->sigs), cmp_sig);
	return v;
}

void fld_kview_free(struct fld_kview *v)
{
	if (!v)
		return;
	free(v->faults);
	free(v->sigs);
	free(v);
}

/* The first index in a array sorted by tgid whose tgid is >= pid. */
#define LOWER_BOUND(arr, n, pid) ({					\
	size_t lo_ = 0, hi_ = (n);					\
	while (lo_ < hi_) {						\
		size_t mid_ = lo_ + (hi_ - lo_) / 2;			\
		if ((arr)[mid_].k.tgid < (__u32)(pid))			\
			lo_ = mid_ + 1;					\
		else							\
			hi_ = mid_;					\
	}								\
	lo_;								\
})

static bool is_fault_signal(const struct fl_signal_key *k)
{
	/* A kernel si_code (> 0): not one sent with kill, tgkill or sigqueue. */
	return (k->sig == SIGSEGV || k->sig == SIGBUS) && k->code > 0;
}

/* pid's part of v. */
static void view_of(const struct fld_kview *v, pid_t pid, struct pview *pv)
{
	size_t i = LOWER_BOUND(v->faults, v->nfaults, pid);
	size_t j = LOWER_BOUND(v->sigs, v->nsigs, pid);

	memset(pv, 0, sizeof(*pv));
	for (; i < v->nfaults && v->faults[i].k.tgid == (__u32)pid; i++) {
		const struct fld_kfault *f = &v->faults[i];
		size_t at;

		pv->total.implicit += f->c.implicit;
		pv->total.stray += f->c.stray;
		pv->total.read += f->c.read;
		pv->total.write += f->c.write;
		pv->total.ifetch += f->c.ifetch;
		if (!f->c.stray)
			continue;
		/* Insertion into the top list, kept sorted. */
		at = pv->ntop;
		while (at > 0 && pv->top[at - 1].c.stray < f->c.stray)
			at--;
		if (at >= TOP_STRAYS)
			continue;
		if (pv->ntop < TOP_STRAYS)
			pv->ntop++;
		memmove(&pv->top[at + 1], &pv->top[at], (pv->ntop - 1 - at) * sizeof(pv->top[0]));
		pv->top[at] = *f;
	}
	pv->sigs = &v->sigs[j];
	while (j < v->nsigs && v->sigs[j].k.tgid == (__u32)pid) {
		if (is_fault_signal(&v->sigs[j].k))
			pv->fault_signals += v->sigs[j].c.count;
		pv->nsigs++;
		j++;
	}
}

/* The view to report for p: frozen, or p's part of v.  NULL when none. */
static const struct pview *pview_for(const struct fld_kview *v, const struct fld_proc *p,
				     struct pview *scratch)
{
	if (!p->k)
		return NULL;
	if (p->k->frozen)
		return &p->k->view;
	if (!v)
		return NULL;
	view_of(v, p->pid, scratch);
	return scratch;
}

/*
 * The first of pv's entries at pc or above: they are sorted by PC (then
 * signal, si_code), a binary search.
 */
static size_t first_at(const struct pview *pv, uint64_t pc)
{
	size_t lo = 0, hi = pv->nsigs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pv->sigs[mid].k.ip < pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static uint64_t site_count(const struct pview *pv, uint64_t pc)
{
	size_t lo = first_at(pv, pc);
	uint64_t n = 0;

	for (; lo < pv->nsigs && pv->sigs[lo].k.ip == pc; lo++)
		if (is_fault_signal(&pv->sigs[lo].k))
			n += pv->sigs[lo].c.count;
	return n;
}

/*
 * Which of pv's entries are at one of p's sites: one walk of the sites,
 * each looked up in pv (sorted by PC), not a walk of the sites per entry
 * (2,000,000 sites times 4,096 entries).  NULL when there are none to
 * mark, or out of memory (then none reads as at a site).
 */
static bool *at_sites(const struct fld_proc *p, const struct pview *pv)
{
	bool *at = pv->nsigs ? calloc(pv->nsigs, sizeof(*at)) : NULL;

	for (size_t i = 0; at && i < p->num_mods; i++) {
		for (uint32_t k = 0; k < p->mods[i]->num_sites; k++) {
			uint64_t pc = p->mods[i]->sites[k].faulting_pc;
			size_t lo = first_at(pv, pc);

			for (; lo < pv->nsigs && pv->sigs[lo].k.ip == pc; lo++)
				at[lo] = true;
		}
	}
	return at;
}

bool fld_kview_site_faults(const struct fld_kview *v, const struct fld_proc *p,
			   const struct fld_module *m, const struct fld_site *s, uint64_t *n)
{
	struct pview scratch;
	const struct pview *pv;

	if (!complete_in(v, p->k))
		return false;
	if (p->k->frozen) {
		*n = s->kernel_frozen;
		return m->kernel_counted;
	}
	/*
	 * Counted by PC: another module may be loaded there since it was
	 * unloaded.  A module still loaded when its process exited (which
	 * marks every module removed) counts until the view is frozen.
	 */
	if (m->removed && !m->kernel_counted)
		return false;
	pv = pview_for(v, p, &scratch);
	if (!pv)
		return false;
	*n = site_count(pv, s->faulting_pc);
	return true;
}

static void add(json_object *o, const char *key, json_object *v)
{
	json_object_object_add(o, key, v);
}

static json_object *u64(uint64_t v)
{
	return json_object_new_uint64(v);
}

json_object *fld_kview_proc_json(const struct fld_kview *v, const struct fld_proc *p,
				 bool detail)
{
	struct pview scratch;
	const struct pview *pv = pview_for(v, p, &scratch);
	const struct fld_kproc *k = p->k;
	json_object *o, *arr;
	uint64_t at_site = 0;
	bool *at;

	if (!pv)
		return NULL;
	at = at_sites(p, pv);
	o = json_object_new_object();
	add(o, "complete", json_object_new_boolean(complete_in(v, k)));
	add(o, "fault_signals", u64(pv->fault_signals));
	for (size_t i = 0; at && i < pv->nsigs; i++)
		if (is_fault_signal(&pv->sigs[i].k) && at[i])
			at_site += pv->sigs[i].c.count;
	add(o, "stray_fault_signals", u64(pv->fault_signals - at_site));
	add(o, "signal_samples", u64(k->signal_samples));
	if (!detail) {
		free(at);
		return o;
	}
	if (!k->frozen && !v->with_faults)
		goto signals;
	add(o, "page_faults", u64(pv->total.implicit + pv->total.stray));
	add(o, "implicit", u64(pv->total.implicit));
	add(o, "stray", u64(pv->total.stray));
	arr = json_object_new_array();
	for (size_t i = 0; i < pv->ntop; i++) {
		const struct fld_kfault *f = &pv->top[i];
		json_object *e = json_object_new_object();

		add(e, "ip", u64(f->k.ip));
		add(e, "faults", u64(f->c.stray));
		add(e, "read", u64(f->c.read));
		add(e, "write", u64(f->c.write));
		add(e, "ifetch", u64(f->c.ifetch));
		json_object_array_add(arr, e);
	}
	add(o, "stray_faults", arr);
signals:
	arr = json_object_new_array();
	for (size_t i = 0; i < pv->nsigs; i++) {
		const struct fld_ksig *s = &pv->sigs[i];
		json_object *e = json_object_new_object();

		add(e, "ip", u64(s->k.ip));
		add(e, "signal", json_object_new_int(s->k.sig));
		add(e, "code", json_object_new_int(s->k.code));
		add(e, "count", u64(s->c.count));
		add(e, "last_addr", u64(s->c.last_addr));
		add(e, "site", json_object_new_boolean(at && at[i]));
		json_object_array_add(arr, e);
	}
	add(o, "signals", arr);
	add(o, "fault_samples", u64(k->fault_samples));
	arr = json_object_new_array();
	for (unsigned i = 0; i < k->nrecent; i++) {
		/* Oldest first. */
		const struct fld_ksample *r =
			&k->recent[(k->next_recent + RECENT - k->nrecent + i) % RECENT];
		json_object *e = json_object_new_object();

		add(e, "time_ns", u64(r->time_ns));
		add(e, "tid", json_object_new_int((int32_t)r->tid));
		add(e, "signal", json_object_new_int(r->sig));
		add(e, "code", json_object_new_int(r->code));
		add(e, "ip", u64(r->ip));
		add(e, "addr", u64(r->addr));
		json_object_array_add(arr, e);
	}
	add(o, "recent_signals", arr);
	free(at);
	return o;
}

/* The sum over CPUs of the program's counter idx (0 when unreadable). */
static uint64_t stat_sum(__u32 idx)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t sum = 0;

	if (!skel || ncpu <= 0)
		return 0;
	{
		__u64 vals[ncpu];

		if (bpf_map__lookup_elem(skel->maps.fl_stats, &idx, sizeof(idx), vals, sizeof(vals),
					 0) == 0)
			for (int c = 0; c < ncpu; c++)
				sum += vals[c];
	}
	return sum;
}

json_object *fld_bpf_stats_json(void)
{
	static const char *const names[FL_STAT_NR] = {
		[FL_STAT_FAULTS] = "page_faults_seen",
		[FL_STAT_COUNTED] = "page_faults_counted",
		[FL_STAT_SIGNALS] = "signals",
		[FL_STAT_SAMPLES] = "samples",
		[FL_STAT_RB_DROPS] = "ring_buffer_drops",
		[FL_STAT_MAP_FULL] = "map_update_failures",
		[FL_STAT_INHERITED] = "inherited",
		[FL_STAT_SIGNALS_LOST] = "signals_lost",
	};
	int ncpu = libbpf_num_possible_cpus();
	json_object *o;

	if (!skel || ncpu <= 0)
		return NULL;
	o = json_object_new_object();
	for (__u32 i = 0; i < FL_STAT_NR; i++)
		add(o, names[i], u64(stat_sum(i)));
	add(o, "samples_received", u64(samples_received));
	return o;
}

/* ------------------------------------------------------------------------
 * Registrations
 */

static void purge_later(pid_t pid)
{
	for (size_t i = 0; i < num_purge; i++)
		if (purge[i] == pid)
			return;
	if (num_purge == cap_purge) {
		size_t cap = cap_purge ? 2 * cap_purge : 64;
		pid_t *grown = realloc(purge, cap * sizeof(*purge));

		if (!grown) {
			fld_warn("eBPF: out of memory: pid %d's map entries stay", (int)pid);
			return;
		}
		purge = grown;
		cap_purge = cap;
	}
	purge[num_purge++] = pid;
}

static bool purging(pid_t pid)
{
	for (size_t i = 0; i < num_purge; i++)
		if (purge[i] == pid)
			return true;
	return false;
}

static void forget_inherited(pid_t pid)
{
	for (size_t i = 0; i < num_inh; i++) {
		if (inh[i].pid == pid) {
			inh[i] = inh[--num_inh];
			return;
		}
	}
}

/* The entries uid's live processes have in fl_sites. */
static uint64_t sites_of(uid_t uid)
{
	uint64_t n = 0;

	for (size_t i = 0; i < fld_num_procs; i++)
		for (size_t k = 0; fld_procs[i]->uid == uid && k < fld_procs[i]->num_mods; k++)
			n += fld_procs[i]->mods[k]->kernel_sites;
	return n;
}

/*
 * Mirrors m's sites into fl_sites, the first ones that fit: the map's
 * room, and for a user other than root a quarter of the map.  The rest
 * are classified as stray page faults; their fault signals still count.
 */
static void sites_add(const struct fld_proc *p, struct fld_module *m)
{
	uint64_t room = bpf_map__max_entries(skel->maps.fl_sites), mine;

	if (p->uid != 0) {
		mine = sites_of(p->uid);
		room = room / 4 > mine ? room / 4 - mine : 0;
	}
	for (uint32_t i = 0; i < m->num_sites && i < room; i++) {
		struct fl_site_key key = { .tgid = (__u32)p->pid, .pc = m->sites[i].faulting_pc };
		struct fl_site_value val = { .id = ((uint64_t)m->id << 32) | i };

		if (bpf_map__update_elem(skel->maps.fl_sites, &key, sizeof(key), &val, sizeof(val),
					 BPF_ANY)) {
			fld_warn("eBPF: pid %d: site %#llx: %s: its %u sites from here on are not "
				 "told from stray faults", (int)p->pid, (unsigned long long)key.pc,
				 strerror(errno), m->num_sites - i);
			return;
		}
		m->kernel_sites = i + 1;
	}
	if (m->kernel_sites < m->num_sites)
		fld_info("eBPF: pid %d (uid %u): %u of module %u's %u sites in the kernel's map "
			 "(a user other than root has a quarter of it): the others' page faults "
			 "count as stray", (int)p->pid, (unsigned)p->uid, m->kernel_sites, m->id,
			 m->num_sites);
}

/* Only the ones sites_add put there: deleting 2,000,000 absent keys took seconds. */
static void sites_remove(const struct fld_proc *p, struct fld_module *m)
{
	for (uint32_t i = 0; i < m->kernel_sites; i++) {
		struct fl_site_key key = { .tgid = (__u32)p->pid, .pc = m->sites[i].faulting_pc };

		if (bpf_map__delete_elem(skel->maps.fl_sites, &key, sizeof(key), 0) &&
		    errno != ENOENT)
			fld_warn("eBPF: pid %d: site %#llx: %s", (int)p->pid,
				 (unsigned long long)key.pc, strerror(errno));
	}
	m->kernel_sites = 0;
}

void fld_bpf_sites_add(const struct fld_proc *p, struct fld_module *m)
{
	if (skel && p->k)
		sites_add(p, m);
}

void fld_bpf_sites_remove(const struct fld_proc *p, struct fld_module *m)
{
	if (skel && p->k)
		sites_remove(p, m);
}

void fld_bpf_proc_add(struct fld_proc *p, bool first)
{
	struct fl_registration reg = { .flags = FL_REG_INHERIT }, had;
	__u32 pid = (__u32)p->pid;
	bool since_fork;

	if (!skel)
		return;
	/*
	 * Registered by the program at its fork, by a registered parent (and
	 * not forgotten by the tick since): counted from the fork on, where a
	 * child's counters start from zero.
	 */
	since_fork = bpf_map__lookup_elem(skel->maps.fl_registered, &pid, sizeof(pid), &had,
					  sizeof(had), 0) == 0 &&
		     (had.flags & FL_REG_INHERITED);
	/* A pid used again before the last one's entries were purged. */
	if (purging(p->pid))
		tick_work();
	forget_inherited(p->pid);
	p->k = calloc(1, sizeof(*p->k));
	if (!p->k)
		return;
	p->k->pid = p->pid;
	p->k->complete = first && since_fork;
	/* Its samples read before its HELLO was (an orphan's), if any. */
	if (since_fork)
		adopt_orphan(p->k);
	p->k->lost_base = stat_sum(FL_STAT_SIGNALS_LOST);
	if (bpf_map__update_elem(skel->maps.fl_registered, &pid, sizeof(pid), &reg, sizeof(reg),
				 BPF_ANY)) {
		fld_warn("eBPF: pid %d: not counted: %s", (int)p->pid, strerror(errno));
		free(p->k);
		p->k = NULL;
	}
}

void fld_bpf_proc_complete(struct fld_proc *p)
{
	if (p->k && !p->exited)
		p->k->complete = true;
}

void fld_bpf_proc_exit(struct fld_proc *p)
{
	__u32 pid = (__u32)p->pid;

	if (!skel || !p->k)
		return;
	bpf_map__delete_elem(skel->maps.fl_registered, &pid, sizeof(pid), 0);
	for (size_t i = 0; i < p->num_mods; i++) {
		if (!p->mods[i]->removed) {
			sites_remove(p, p->mods[i]);
			p->mods[i]->kernel_counted = true;
		}
	}
	p->k->exit_pending = true;
	purge_later(p->pid);
}

void fld_kproc_free(struct fld_kproc *k)
{
	if (!k)
		return;
	free(k->own_sigs);
	free(k);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * A copy of pv's signal entries, at most MAX_SIGNALS of them (pv->nsigs is
 * cut to what is kept): those at p's sites first, since they are what the
 * kernel's count is compared with, then the others by PC.  NULL when out of
 * memory.
 */
static struct fld_ksig *keep_sigs(const struct fld_proc *p, struct pview *pv)
{
	struct fld_ksig *own = malloc((pv->nsigs ? pv->nsigs : 1) * sizeof(*own));
	uint64_t *pcs = NULL;
	size_t npcs = 0, n = 0;

	if (!own)
		return NULL;
	if (pv->nsigs <= MAX_SIGNALS) {
		memcpy(own, pv->sigs, pv->nsigs * sizeof(*own));
		return own;
	}
	for (size_t i = 0; i < p->num_mods; i++)
		npcs += p->mods[i]->num_sites;
	pcs = malloc((npcs ? npcs : 1) * sizeof(*pcs));
	if (!pcs) {
		free(own);
		return NULL;
	}
	npcs = 0;
	for (size_t i = 0; i < p->num_mods; i++)
		for (uint32_t j = 0; j < p->mods[i]->num_sites; j++)
			pcs[npcs++] = p->mods[i]->sites[j].faulting_pc;
	qsort(pcs, npcs, sizeof(*pcs), cmp_u64);
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < pv->nsigs && n < MAX_SIGNALS; i++) {
			bool at_site = bsearch(&pv->sigs[i].k.ip, pcs, npcs, sizeof(*pcs),
					       cmp_u64) != NULL;

			if (at_site == (pass == 0))
				own[n++] = pv->sigs[i];
		}
	}
	free(pcs);
	fld_warn("eBPF: pid %d: %zu signal entries, %zu kept (those at sites first)",
		 (int)p->pid, pv->nsigs, n);
	pv->nsigs = n;
	qsort(own, n, sizeof(*own), cmp_sig);
	return own;
}

/*
 * Freezes an exited process's view from v: its sites' counts and its fault
 * signal total from every entry, and at most MAX_SIGNALS entries for the
 * listing (keep_sigs).
 */
static void freeze(struct fld_proc *p, const struct fld_kview *v)
{
	struct fld_kproc *k = p->k;
	struct pview pv;
	size_t mismatches = 0;

	view_of(v, p->pid, &pv);
	if (k->complete && v->lost != k->lost_base) {
		fld_warn("pid %d (%s): the kernel's signal map was full while it ran: its kernel "
			 "counts are not complete", (int)p->pid, p->comm);
		k->complete = false;
	}
	for (size_t i = 0; i < p->num_mods; i++) {
		struct fld_module *m = p->mods[i];

		for (uint32_t j = 0; m->kernel_counted && j < m->num_sites; j++) {
			struct fld_site *s = &m->sites[j];

			s->kernel_frozen = site_count(&pv, s->faulting_pc);
			/* The process writes its own counters: a few lines, not one per site. */
			if (k->complete &&
			    s->kernel_frozen != s->frozen + s->frozen_populations &&
			    ++mismatches <= MAX_MISMATCH_LOGS)
				fld_warn("pid %d (%s): site %#llx%s%s: dispatch counted %llu "
					 "faults, the kernel %llu", (int)p->pid, p->comm,
					 (unsigned long long)s->faulting_pc,
					 s->function ? " in " : "", s->function ? s->function : "",
					 (unsigned long long)s->frozen,
					 (unsigned long long)s->kernel_frozen);
		}
	}
	if (mismatches > MAX_MISMATCH_LOGS)
		fld_warn("pid %d (%s): %zu sites in all where dispatch and the kernel differ",
			 (int)p->pid, p->comm, mismatches);
	k->own_sigs = keep_sigs(p, &pv);
	if (!k->own_sigs)
		pv.nsigs = 0;
	pv.sigs = k->own_sigs;
	k->view = pv;
	k->frozen = true;
	k->exit_pending = false;
}

/* Deletes every entry of the purge list's pids from map. */
static void purge_map(struct bpf_map *map, size_t ksz, size_t vsz)
{
	void *keys, *vals;
	ssize_t n = dump(bpf_map__fd(map), ksz, vsz, &keys, &vals);

	if (n < 0) {
		fld_warn("eBPF: purging %s: %s", bpf_map__name(map), strerror((int)-n));
		return;
	}
	for (ssize_t i = 0; i < n; i++) {
		const void *key = (unsigned char *)keys + i * ksz;
		__u32 tgid;

		memcpy(&tgid, key, sizeof(tgid));	/* every key starts with it */
		if (purging((pid_t)tgid))
			bpf_map__delete_elem(map, key, ksz, 0);
	}
	free(keys);
	free(vals);
}

/* Freezes the processes that exited, then purges their entries. */
static void tick_work(void)
{
	struct fld_kview *v;

	if (!num_purge)
		return;
	v = fld_kview_take(0, true);
	for (size_t i = 0; i < fld_num_procs; i++) {
		struct fld_proc *p = fld_procs[i];

		if (p->k && p->k->exit_pending) {
			if (v) {
				freeze(p, v);
			} else {
				/* Nothing to freeze from: no kernel counts for it. */
				p->k->complete = false;
				p->k->exit_pending = false;
				p->k->frozen = true;
			}
		}
	}
	fld_kview_free(v);
	purge_map(skel->maps.fl_faults, sizeof(struct fl_fault_key),
		  sizeof(struct fl_fault_counts));
	purge_map(skel->maps.fl_signals, sizeof(struct fl_signal_key),
		  sizeof(struct fl_signal_counts));
	num_purge = 0;
}

/* Inherited registrations: the program made them; the loop keeps them honest. */
static void check_inherited(void)
{
	static uint64_t made_seen;
	__u32 key, cur, *prev = NULL, *pids = NULL;
	size_t n = 0, cap = 0, kept = 0;
	struct fl_registration reg;
	uint64_t made = stat_sum(FL_STAT_INHERITED);

	/*
	 * Nothing to look at unless the program made a registration since the
	 * last walk (it counts one after its map update: a count read here
	 * means the entry is in the map for the walk below), or one is still
	 * waiting.  The walk costs two system calls per registered process.
	 */
	if (!num_inh && made == made_seen)
		return;
	made_seen = made;

	/* Collected first: deleting while walking would restart the walk. */
	while (bpf_map__get_next_key(skel->maps.fl_registered, prev, &key, sizeof(key)) == 0) {
		if (bpf_map__lookup_elem(skel->maps.fl_registered, &key, sizeof(key), &reg,
					 sizeof(reg), 0) == 0 &&
		    (reg.flags & FL_REG_INHERITED) && !fld_proc_find_live((pid_t)key)) {
			if (n == cap) {
				__u32 *grown = realloc(pids, (cap ? 2 * cap : 16) * sizeof(*pids));

				if (!grown)
					break;
				pids = grown;
				cap = cap ? 2 * cap : 16;
			}
			pids[n++] = key;
		}
		cur = key;
		prev = &cur;
	}
	/* The ones no longer inherited (registered, or gone) leave inh. */
	for (size_t i = 0; i < num_inh; i++) {
		bool still = false;

		for (size_t j = 0; j < n && !still; j++)
			still = (pid_t)pids[j] == inh[i].pid;
		if (still)
			inh[kept++] = inh[i];
	}
	num_inh = kept;
	for (size_t j = 0; j < n; j++) {
		pid_t pid = (pid_t)pids[j];
		size_t i;

		for (i = 0; i < num_inh && inh[i].pid != pid; i++)
			;
		if (i == num_inh) {
			struct inherited *grown = realloc(inh, (num_inh + 1) * sizeof(*inh));

			if (!grown)
				continue;
			inh = grown;
			inh[num_inh++] = (struct inherited){ .pid = pid };
		}
		if (++inh[i].ticks < INHERIT_TICKS && !(kill(pid, 0) != 0 && errno == ESRCH))
			continue;
		fld_debug("eBPF: pid %d, forked by a registered process, never registered: "
			  "forgotten", (int)pid);
		bpf_map__delete_elem(skel->maps.fl_registered, &pids[j], sizeof(pids[j]), 0);
		inh[i] = inh[--num_inh];
		purge_later(pid);
	}
	free(pids);
}

void fld_bpf_tick(void)
{
	if (!skel)
		return;
	/*
	 * The ring buffer is read when its epoll fd wakes the loop, and every
	 * tick as well: twice on a loaded machine, check-daemon-e2e's kernel
	 * group saw samples stay unread while the daemon idled, its watch armed
	 * (cause not found; not seen again in 20 runs).  A missed wakeup costs
	 * at most a tick.
	 */
	on_ring_readable(NULL);
	check_inherited();
	age_orphans();
	tick_work();
}
