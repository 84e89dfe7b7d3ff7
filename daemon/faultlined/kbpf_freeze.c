/* SPDX-License-Identifier: MIT */
/* Exited processes in the eBPF program's maps: see kbpf_freeze.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "faultline.skel.h"
#include "faults.h"

#include "dlog.h"
#include "kbpf_freeze.h"
#include "kbpf_load.h"
#include "kbpf_procs.h"
#include "kbpf_view.h"

#define MAX_SIGNALS 4096	/* (signal, si_code, PC) entries kept per exited process */
#define MAX_MISMATCH_LOGS 3	/* sites whose mismatch is logged per exited process */

/* Exited (or forgotten) pids whose map entries go at the next tick. */
static pid_t *purge;
static size_t num_purge, cap_purge;

void fld_kpurge_later(pid_t pid)
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

bool fld_kpurging(pid_t pid)
{
	for (size_t i = 0; i < num_purge; i++)
		if (purge[i] == pid)
			return true;
	return false;
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
static struct fld_ksig *keep_sigs(const struct fld_proc *p, struct fld_pview *pv)
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
	qsort(own, n, sizeof(*own), fld_ksig_cmp);
	return own;
}

/*
 * Freezes an exited process's view from v: its sites' counts and its fault
 * signal total from every entry, and at most MAX_SIGNALS entries for the
 * listing (keep_sigs).
 */
static void freeze(struct fld_kproc *k, const struct fld_kview *v)
{
	const struct fld_proc *p = k->p;
	struct fld_pview pv;
	size_t mismatches = 0;

	fld_kview_of(v, p, &pv);
	if (k->complete && v->lost != k->lost_base) {
		fld_warn("pid %d (%s): the kernel's signal map was full while it ran: its kernel "
			 "counts are not complete", (int)p->pid, p->comm);
		k->complete = false;
	}
	for (size_t i = 0; i < p->num_mods; i++) {
		const struct fld_module *m = p->mods[i];
		struct fld_kmod *km = fld_kmod_of(m);
		struct fld_kcount *counts = NULL;
		uint32_t n = 0;
		size_t cap = 0;
		bool lost = false;

		if (!km || !km->counted)
			continue;
		for (uint32_t j = 0; j < m->num_sites; j++) {
			const struct fld_site *s = &m->sites[j];
			uint64_t count = fld_kview_site_count(&pv, s->faulting_pc);
			struct fld_frozen f;

			fld_site_frozen(m, j, &f);
			/* The process writes its own counters: a few lines, not one per site. */
			if (k->complete &&
			    count != f.faults + f.populations &&
			    ++mismatches <= MAX_MISMATCH_LOGS)
				fld_warn("pid %d (%s): site %#llx%s%s: dispatch counted %llu "
					 "faults, the kernel %llu", (int)p->pid, p->comm,
					 (unsigned long long)s->faulting_pc,
					 s->function ? " in " : "",
					 s->function ? fld_site_function(m, s) : "",
					 (unsigned long long)f.faults,
					 (unsigned long long)count);
			if (!count || lost)
				continue;
			if (n == cap) {
				/* n < num_sites: a size_t cap never wraps. */
				size_t more = cap ? 2 * cap : 16;
				struct fld_kcount *grown = realloc(counts, more * sizeof(*counts));

				lost = !grown;
				if (lost)
					continue;
				counts = grown;
				cap = more;
			}
			counts[n++] = (struct fld_kcount){ .site = j, .count = count };
		}
		free(km->frozen);
		km->frozen = NULL;
		km->nfrozen = 0;
		if (lost) {
			/* None rather than some: a count shown is the kernel's. */
			fld_warn("eBPF: pid %d: out of memory: module %u's kernel counts are not "
				 "kept", (int)p->pid, m->id);
			free(counts);
			km->counted = false;
			continue;
		}
		/* Only as much as it holds: a smaller block, or the one it has. */
		if (n && n < cap) {
			struct fld_kcount *fit = realloc(counts, (size_t)n * sizeof(*counts));

			if (fit)
				counts = fit;
		}
		km->frozen = counts;
		km->nfrozen = n;
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

static bool purging(__u32 tgid, void *arg)
{
	(void)arg;
	return fld_kpurging((pid_t)tgid);
}

/* Deletes every entry of the purge list's pids from map. */
static void purge_map(struct bpf_map *map, size_t ksz, size_t vsz)
{
	void *keys, *vals;
	ssize_t n = fld_kmap_dump(map, ksz, vsz, &keys, &vals);

	if (n < 0) {
		fld_warn("eBPF: purging %s: %s", bpf_map__name(map), strerror((int)-n));
		return;
	}
	for (ssize_t i = 0; i < n; i++) {
		const void *key = (unsigned char *)keys + i * ksz;
		__u32 tgid;

		memcpy(&tgid, key, sizeof(tgid));	/* every key starts with it */
		if (fld_kpurging((pid_t)tgid))
			bpf_map__delete_elem(map, key, ksz, 0);
	}
	free(keys);
	free(vals);
}

/* Freezes the processes that exited, then purges their entries. */
void fld_kfreeze_tick(void)
{
	struct faultline_bpf *skel = fld_kskel();
	struct fld_kview *v;

	if (!num_purge || !skel)
		return;
	v = fld_kview_take(0, true);
	for (size_t i = 0; i < fld_num_kprocs; i++) {
		struct fld_kproc *k = fld_kprocs[i];

		if (k->exit_pending) {
			if (v) {
				freeze(k, v);
			} else {
				/* Nothing to freeze from: no kernel counts for it. */
				k->complete = false;
				k->exit_pending = false;
				k->frozen = true;
			}
		}
	}
	fld_kview_free(v);
	fl_bpf_faults_forget(fld_kfaults(), purging, NULL);
	purge_map(skel->maps.fl_signals, sizeof(struct fl_signal_key),
		  sizeof(struct fl_signal_counts));
	num_purge = 0;
}

void fld_kfreeze_stop(void)
{
	free(purge);
	purge = NULL;
	num_purge = cap_purge = 0;
}
