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
