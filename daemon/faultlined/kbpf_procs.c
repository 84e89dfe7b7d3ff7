/* SPDX-License-Identifier: MIT */
/* The eBPF side's own state of the processes: see kbpf_procs.h. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kbpf_procs.h"

struct fld_kproc **fld_kprocs;
size_t fld_num_kprocs;
uint64_t fld_kprocs_gen;
static size_t cap_kprocs;

/*
 * fld_kprocs indexed by their process: open addressing, linear probing,
 * at most half full.  A stats query about every process asks for each
 * one's view (and for each of its sites): a walk of fld_kprocs per ask
 * made 1,000 processes half a million steps per query.
 */
static struct fld_kproc **slots;
static size_t nslots;	/* a power of two, or 0 */

static size_t slot_of(const struct fld_proc *p)
{
	/* The low bits of an allocation are its alignment: mixed away. */
	uint64_t h = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 32) & (nslots - 1);
}

/* Adds k to the index, which has room.  */
static void index_put(struct fld_kproc *k)
{
	size_t i = slot_of(k->p);

	while (slots[i])
		i = (i + 1) & (nslots - 1);
	slots[i] = k;
}

/* Makes room for one more.  Returns false when out of memory (nothing changed). */
static bool index_reserve(size_t n)
{
	struct fld_kproc **old = slots;
	size_t oldn = nslots, want = nslots ? nslots : 128;

	while (2 * n > want)
		want *= 2;
	if (want == nslots)
		return true;
	slots = calloc(want, sizeof(*slots));
	if (!slots) {
		slots = old;
		return false;
	}
	nslots = want;
	for (size_t i = 0; i < oldn; i++)
		if (old[i])
			index_put(old[i]);
	free(old);
	return true;
}

/* Takes k out of the index: the entries after it in its run move back. */
static void index_drop(const struct fld_kproc *k)
{
	size_t i = slot_of(k->p), j;

	while (slots[i] != k)
		i = (i + 1) & (nslots - 1);
	slots[i] = NULL;
	for (j = (i + 1) & (nslots - 1); slots[j]; j = (j + 1) & (nslots - 1)) {
		struct fld_kproc *e = slots[j];
		size_t home = slot_of(e->p);

		/* e stays when its home is cyclically in (i, j]. */
		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			slots[i] = e;
			slots[j] = NULL;
			i = j;
		}
	}
}

struct fld_kmod *fld_kmod_of(const struct fld_module *m)
{
	return m->kbpf;
}

struct fld_kmod *fld_kmod_get(struct fld_module *m)
{
	if (!m->kbpf)
		m->kbpf = calloc(1, sizeof(struct fld_kmod));
	return m->kbpf;
}

uint64_t fld_kmod_sites_of(uid_t uid)
{
	uint64_t n = 0;

	for (size_t i = 0; i < fld_num_procs; i++)
		for (size_t k = 0; fld_procs[i]->uid == uid && k < fld_procs[i]->num_mods; k++) {
			const struct fld_kmod *km = fld_procs[i]->mods[k]->kbpf;

			n += km ? km->kernel_sites : 0;
		}
	return n;
}

/* m is gone (procs.c): its state goes. */
static void on_module_gone(struct fld_module *m)
{
	struct fld_kmod *km = m->kbpf;

	if (!km)
		return;
	free(km->frozen);
	free(km);
	m->kbpf = NULL;
}

struct fld_kproc *fld_kproc_of(const struct fld_proc *p)
{
	if (!nslots)
		return NULL;
	for (size_t i = slot_of(p); slots[i]; i = (i + 1) & (nslots - 1))
		if (slots[i]->p == p)
			return slots[i];
	return NULL;
}

void fld_kproc_forget(const struct fld_proc *p)
{
	for (size_t i = 0; i < fld_num_kprocs; i++) {
		struct fld_kproc *k = fld_kprocs[i];

		if (k->p != p)
			continue;
		index_drop(k);
		fld_kprocs_gen++;
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
	if (!index_reserve(fld_num_kprocs + 1))
		return NULL;
	k = calloc(1, sizeof(*k));
	if (!k)
		return NULL;
	k->p = p;
	k->pid = p->pid;
	fld_kprocs[fld_num_kprocs++] = k;
	index_put(k);
	fld_kprocs_gen++;
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
