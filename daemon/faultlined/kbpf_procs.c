/* SPDX-License-Identifier: MIT */
/* The eBPF side's own state of the processes: see kbpf_procs.h. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kbpf_procs.h"

struct fld_kproc **fld_kprocs;
size_t fld_num_kprocs;
static size_t cap_kprocs;
static struct fld_kproc *last;	/* the latest looked up: a query asks per site */

/* Module states, by module: open addressing, linear probing. */
struct kmod_slot {
	const struct fld_module *m;	/* NULL: empty */
	struct fld_kmod *km;
};
static struct kmod_slot *kmods;
static size_t cap_kmods, num_kmods;

static size_t kmod_hash(const struct fld_module *m)
{
	return (size_t)(((uintptr_t)m >> 4) * 0x9e3779b97f4a7c15ull);
}

static struct kmod_slot *kmod_slot(const struct fld_module *m)
{
	size_t i;

	if (!cap_kmods)
		return NULL;
	for (i = kmod_hash(m) & (cap_kmods - 1); kmods[i].m; i = (i + 1) & (cap_kmods - 1))
		if (kmods[i].m == m)
			return &kmods[i];
	return NULL;
}

struct fld_kmod *fld_kmod_of(const struct fld_module *m)
{
	struct kmod_slot *s = kmod_slot(m);

	return s ? s->km : NULL;
}

static void kmod_put(const struct fld_module *m, struct fld_kmod *km)
{
	size_t i = kmod_hash(m) & (cap_kmods - 1);

	while (kmods[i].m)
		i = (i + 1) & (cap_kmods - 1);
	kmods[i] = (struct kmod_slot){ .m = m, .km = km };
	num_kmods++;
}

struct fld_kmod *fld_kmod_get(const struct fld_proc *p, const struct fld_module *m)
{
	struct fld_kmod *km = fld_kmod_of(m);

	if (km)
		return km;
	if (2 * (num_kmods + 1) > cap_kmods) {
		size_t cap = cap_kmods ? 2 * cap_kmods : 64, old_cap = cap_kmods;
		struct kmod_slot *old = kmods, *grown = calloc(cap, sizeof(*grown));

		if (!grown)
			return NULL;
		kmods = grown;
		cap_kmods = cap;
		num_kmods = 0;
		for (size_t i = 0; i < old_cap; i++)
			if (old[i].m)
				kmod_put(old[i].m, old[i].km);
		free(old);
	}
	km = calloc(1, sizeof(*km));
	if (!km)
		return NULL;
	km->uid = p->uid;
	kmod_put(m, km);
	return km;
}

uint64_t fld_kmod_sites_of(uid_t uid)
{
	uint64_t n = 0;

	for (size_t i = 0; i < cap_kmods; i++)
		if (kmods[i].m && kmods[i].km->uid == uid)
			n += kmods[i].km->kernel_sites;
	return n;
}

/* m is gone (procs.c): its state goes; the slots after it move back into place. */
static void on_module_gone(struct fld_module *m)
{
	struct kmod_slot *s = kmod_slot(m);
	size_t i, j;

	if (!s)
		return;
	free(s->km->frozen);
	free(s->km);
	i = (size_t)(s - kmods);
	kmods[i].m = NULL;
	num_kmods--;
	/* Backward shift: an entry whose probe passed i moves into it. */
	for (j = (i + 1) & (cap_kmods - 1); kmods[j].m; j = (j + 1) & (cap_kmods - 1)) {
		size_t home = kmod_hash(kmods[j].m) & (cap_kmods - 1);

		if (((j - home) & (cap_kmods - 1)) >= ((j - i) & (cap_kmods - 1))) {
			kmods[i] = kmods[j];
			kmods[j].m = NULL;
			i = j;
		}
	}
}

struct fld_kproc *fld_kproc_of(const struct fld_proc *p)
{
	if (last && last->p == p)
		return last;
	for (size_t i = 0; i < fld_num_kprocs; i++)
		if (fld_kprocs[i]->p == p)
			return last = fld_kprocs[i];
	return NULL;
}

void fld_kproc_forget(const struct fld_proc *p)
{
	for (size_t i = 0; i < fld_num_kprocs; i++) {
		struct fld_kproc *k = fld_kprocs[i];

		if (k->p != p)
			continue;
		if (last == k)
			last = NULL;
		free(k->own_sigs);
		free(k);
		memmove(&fld_kprocs[i], &fld_kprocs[i + 1],
			(fld_num_kprocs - i - 1) * sizeof(*fld_kprocs));
		fld_num_kprocs--;
		return;
	}
}

struct fld_kproc *fld_kproc_new(struct fld_proc *p)
{
	struct fld_kproc *k;

	fld_kproc_forget(p);
	if (fld_num_kprocs == cap_kprocs) {
		size_t cap = cap_kprocs ? 2 * cap_kprocs : 64;
		struct fld_kproc **grown = realloc(fld_kprocs, cap * sizeof(*grown));

		if (!grown)
			return NULL;
		fld_kprocs = grown;
		cap_kprocs = cap;
	}
	k = calloc(1, sizeof(*k));
	if (!k)
		return NULL;
	k->p = p;
	k->pid = p->pid;
	fld_kprocs[fld_num_kprocs++] = k;
	return k;
}

static void on_gone(struct fld_proc *p)
{
	fld_kproc_forget(p);
}

void fld_kprocs_init(void)
{
	static const struct fld_proc_observer observer = {
		.gone = on_gone, .module_gone = on_module_gone,
	};
	static bool done;

	if (!done)
		fld_proc_observe(&observer);
	done = true;
}
