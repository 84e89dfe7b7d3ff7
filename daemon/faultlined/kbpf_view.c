/* SPDX-License-Identifier: MIT */
/* Snapshots of the eBPF program's maps: see kbpf_view.h. */
#include <errno.h>
#include <stddef.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "faultline.skel.h"
#include "faults.h"

#include "dlog.h"
#include "kbpf_load.h"
#include "kbpf_procs.h"
#include "kbpf_view.h"

#define BATCH 4096

bool fld_kview_complete(const struct fld_kview *v, const struct fld_kproc *k)
{
	if (!k || !k->complete)
		return false;
	return k->frozen || (v && v->lost == k->lost_base);
}

ssize_t fld_kmap_dump(struct bpf_map *map, size_t ksz, size_t vsz, void **keys, void **vals)
{
	size_t cap = BATCH, got = 0;
	unsigned char *k = malloc(cap * ksz), *v = malloc(cap * vsz);
	__u64 in = 0, out = 0;
	bool first = true;
	int fd = bpf_map__fd(map);

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

int fld_ksig_cmp(const void *a, const void *b)
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
	ssize_t n = fld_kmap_dump(map, ksz, vsz, &keys, &vals);

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
	for (size_t i = 0; i < fld_num_kprocs; i++) {
		const struct fld_kproc *k = fld_kprocs[i];

		if (!k->frozen && (!only || k->pid == only))
			return true;
	}
	return false;
}

struct fld_kview *fld_kview_take(pid_t only, bool with_faults)
{
	struct fld_kview *v;
	void *f = NULL, *s = NULL;
	ssize_t nf = 0, ns;

	if (!fld_kskel() || !any_live_view(only))
		return NULL;
	v = calloc(1, sizeof(*v));
	if (!v)
		return NULL;
	_Static_assert(sizeof(struct fld_kfault) == sizeof(struct fl_fault_rec) &&
		       offsetof(struct fld_kfault, c) == offsetof(struct fl_fault_rec, c),
		       "the same record");
	_Static_assert(sizeof(struct fld_ksig) ==
		       sizeof(struct fl_signal_key) + sizeof(struct fl_signal_counts), "packed");
	if (with_faults)
		nf = fl_bpf_faults_read(fld_kfaults(), (__u32)only, (struct fl_fault_rec **)&f);
	ns = nf < 0 ? nf : load_pairs(fld_kskel()->maps.fl_signals, sizeof(struct fl_signal_key),
				      sizeof(struct fl_signal_counts), only, &s);
	if (nf < 0 || ns < 0) {
		fld_warn("eBPF: reading the maps: %s", strerror((int)-(nf < 0 ? nf : ns)));
		free(f);
		free(v);
		return NULL;
	}
	v->with_faults = with_faults;
	_Static_assert(FL_STAT_NR <= sizeof(v->stats) / sizeof(v->stats[0]), "fits");
	for (uint32_t i = 0; i < FL_STAT_NR; i++)
		v->stats[i] = fld_kstat_sum(i);
	v->lost = v->stats[FL_STAT_SIGNALS_LOST];
	v->refs = 1;
	v->kprocs_gen = fld_kprocs_gen;
	v->faults = f;
	v->nfaults = (size_t)nf;
	v->sigs = s;
	v->nsigs = (size_t)ns;
	/* fl_bpf_faults_read sorted the faults.  NULL when empty, which
	 * qsort must not be given. */
	if (v->nsigs)
		qsort(v->sigs, v->nsigs, sizeof(*v->sigs), fld_ksig_cmp);
	return v;
}

void fld_kview_free(struct fld_kview *v)
{
	if (!v || --v->refs)
		return;
	free(v->faults);
	free(v->sigs);
	free(v);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The shared snapshots: [1] with the page fault counts, [0] without. */
static struct fld_kview *shared[2];

struct fld_kview *fld_kview_share(pid_t only, bool with_faults)
{
	struct fld_kview **sv = &shared[with_faults];
	uint64_t now = now_ms();

	if (!fld_kskel() || !any_live_view(only))
		return NULL;
	if (*sv && ((*sv)->kprocs_gen != fld_kprocs_gen ||
		    now - (*sv)->taken_ms > FLD_KVIEW_MAX_AGE_MS)) {
		fld_kview_free(*sv);
		*sv = NULL;
	}
	if (!*sv) {
		*sv = fld_kview_take(0, with_faults);
		if (!*sv)
			return NULL;
		/* From before the read: it is no older than its taken_ms says. */
		(*sv)->taken_ms = now;
	}
	(*sv)->refs++;
	return *sv;
}

void fld_kview_unshare(void)
{
	for (size_t i = 0; i < 2; i++) {
		fld_kview_free(shared[i]);
		shared[i] = NULL;
	}
}

bool fld_ksig_is_fault(const struct fl_signal_key *k)
{
	/* A kernel si_code (> 0): not one sent with kill, tgkill or sigqueue. */
	return (k->sig == SIGSEGV || k->sig == SIGBUS) && k->code > 0;
}

/*
 * Whether pc is a faulting PC of one of p's modules (their sites are in PC
 * order), loaded or unloaded since: the kernel counts by PC.
 */
static bool at_site(const struct fld_proc *p, uint64_t pc)
{
	for (size_t i = 0; i < p->num_mods; i++) {
		const struct fld_module *m = p->mods[i];
		size_t lo;

		if (pc < m->code_start || pc - m->code_start >= m->code_size)
			continue;
		lo = FLD_LOWER_BOUND(m->sites, m->num_sites, faulting_pc, pc);
		if (lo < m->num_sites && m->sites[lo].faulting_pc == pc)
			return true;
	}
	return false;
}

void fld_kview_of(const struct fld_kview *v, const struct fld_proc *p, struct fld_pview *pv)
{
	pid_t pid = p->pid;
	size_t i = FLD_LOWER_BOUND(v->faults, v->nfaults, k.tgid, (__u32)pid);
	size_t j = FLD_LOWER_BOUND(v->sigs, v->nsigs, k.tgid, (__u32)pid);

	memset(pv, 0, sizeof(*pv));
	for (; i < v->nfaults && v->faults[i].k.tgid == (__u32)pid; i++) {
		struct fld_kfault f = v->faults[i];
		size_t at;

		/*
		 * A page fault the kernel counted before this daemon mirrored
		 * the site's PC into its map was stray to it: a process
		 * registers its modules after it starts (the shim's
		 * FL_INIT_DEFER_DISCOVERY), and may fail a check first.  At a
		 * faulting PC of one of its modules it is an implicit check's.
		 */
		if (f.c.stray && at_site(p, f.k.ip)) {
			f.c.implicit += f.c.stray;
			f.c.stray = 0;
		}
		pv->total.implicit += f.c.implicit;
		pv->total.stray += f.c.stray;
		pv->total.read += f.c.read;
		pv->total.write += f.c.write;
		pv->total.ifetch += f.c.ifetch;
		if (!f.c.stray)
			continue;
		/* Insertion into the top list, kept sorted. */
		at = pv->ntop;
		while (at > 0 && pv->top[at - 1].c.stray < f.c.stray)
			at--;
		if (at >= FLD_KTOP_STRAYS)
			continue;
		if (pv->ntop < FLD_KTOP_STRAYS)
			pv->ntop++;
		memmove(&pv->top[at + 1], &pv->top[at], (pv->ntop - 1 - at) * sizeof(pv->top[0]));
		pv->top[at] = f;
	}
	pv->sigs = &v->sigs[j];
	while (j < v->nsigs && v->sigs[j].k.tgid == (__u32)pid) {
		if (fld_ksig_is_fault(&v->sigs[j].k))
			pv->fault_signals += v->sigs[j].c.count;
		pv->nsigs++;
		j++;
	}
}

const struct fld_pview *fld_kview_for(const struct fld_kview *v, const struct fld_proc *p,
				      struct fld_pview *scratch)
{
	const struct fld_kproc *k = fld_kproc_of(p);

	if (!k)
		return NULL;
	if (k->frozen)
		return &k->view;
	if (!v)
		return NULL;
	fld_kview_of(v, p, scratch);
	return scratch;
}

/* They are sorted by PC (then signal, si_code): a binary search. */
size_t fld_kview_first_at(const struct fld_pview *pv, uint64_t pc)
{
	return FLD_LOWER_BOUND(pv->sigs, pv->nsigs, k.ip, pc);
}

uint64_t fld_kview_site_count(const struct fld_pview *pv, uint64_t pc)
{
	size_t lo = fld_kview_first_at(pv, pc);
	uint64_t n = 0;

	for (; lo < pv->nsigs && pv->sigs[lo].k.ip == pc; lo++)
		if (fld_ksig_is_fault(&pv->sigs[lo].k))
			n += pv->sigs[lo].c.count;
	return n;
}

bool fld_kview_site_faults(const struct fld_kview *v, const struct fld_proc *p,
			   const struct fld_module *m, const struct fld_site *s, uint64_t *n)
{
	const struct fld_kproc *k = fld_kproc_of(p);
	const struct fld_kmod *km = fld_kmod_of(m);
	struct fld_pview scratch;
	const struct fld_pview *pv;

	if (!fld_kview_complete(v, k))
		return false;
	if (k->frozen) {
		uint32_t i = (uint32_t)(s - m->sites);
		/* The sites with a count, in site order. */
		size_t lo = km ? FLD_LOWER_BOUND(km->frozen, km->nfrozen, site, i) : 0;

		*n = km && lo < km->nfrozen && km->frozen[lo].site == i ? km->frozen[lo].count : 0;
		return km && km->counted;
	}
	/*
	 * Counted by PC: another module may be loaded there since it was
	 * unloaded.  A module still loaded when its process exited (which
	 * marks every module removed) counts until the view is frozen.
	 */
	if (m->removed && !(km && km->counted))
		return false;
	pv = fld_kview_for(v, p, &scratch);
	if (!pv)
		return false;
	*n = fld_kview_site_count(pv, s->faulting_pc);
	return true;
}

uint64_t fld_kstat_sum(uint32_t idx)
{
	int ncpu = libbpf_num_possible_cpus();
	struct faultline_bpf *skel = fld_kskel();
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
