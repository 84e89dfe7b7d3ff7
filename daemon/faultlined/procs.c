/* SPDX-License-Identifier: MIT */
/* faultlined's registry of processes: see procs.h. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "kbpf.h"
#include "procs.h"

struct fld_proc **fld_procs;
size_t fld_num_procs;
static uint64_t next_serial = 1;
void (*fld_proc_on_free)(struct fld_proc *p);

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

uint64_t fld_site_faults(const struct fld_proc *p, const struct fld_module *m,
			 const struct fld_site *s)
{
	const _Atomic uint64_t *counters;

	if (m->removed || !p->region)
		return s->frozen;
	counters = (const _Atomic uint64_t *)((const char *)p->region + p->layout.counters_offset);
	/*
	 * Relaxed: the handler's increments are relaxed too; a count is a
	 * statistic, read once per query.
	 */
	return atomic_load_explicit(&counters[s->slot], memory_order_relaxed);
}

struct fld_proc *fld_proc_add(pid_t pid, uid_t uid, const char *comm)
{
	struct fld_proc *p = calloc(1, sizeof(*p));
	struct fld_proc **grown;

	if (!p)
		return NULL;
	grown = realloc(fld_procs, (fld_num_procs + 1) * sizeof(*fld_procs));
	if (!grown) {
		free(p);
		return NULL;
	}
	fld_procs = grown;
	p->serial = next_serial++;
	p->pid = pid;
	p->uid = uid;
	memcpy(p->comm, comm, sizeof(p->comm));
	p->comm[sizeof(p->comm) - 1] = 0;
	p->registered_ms = now_ms();
	fld_procs[fld_num_procs++] = p;
	return p;
}

void fld_proc_serial_above(uint64_t serial)
{
	if (next_serial <= serial)
		next_serial = serial + 1;
}

struct fld_proc *fld_proc_by_serial(uint64_t serial)
{
	for (size_t i = 0; i < fld_num_procs; i++)
		if (fld_procs[i]->serial == serial)
			return fld_procs[i];
	return NULL;
}

struct fld_proc *fld_proc_find_live(pid_t pid)
{
	for (size_t i = 0; i < fld_num_procs; i++)
		if (fld_procs[i]->pid == pid && !fld_procs[i]->exited)
			return fld_procs[i];
	return NULL;
}

struct fld_module *fld_proc_module(struct fld_proc *p, uint32_t id)
{
	for (size_t i = 0; i < p->num_mods; i++)
		if (p->mods[i]->id == id && !p->mods[i]->removed)
			return p->mods[i];
	return NULL;
}

void fld_module_freeze(struct fld_proc *p, struct fld_module *m)
{
	if (m->removed)
		return;
	for (uint32_t i = 0; i < m->num_sites; i++)
		m->sites[i].frozen = fld_site_faults(p, m, &m->sites[i]);
	m->removed = true;
}

void fld_module_free(struct fld_module *m)
{
	if (!m)
		return;
	for (uint32_t i = 0; i < m->num_sites; i++)
		free(m->sites[i].function);
	free(m->sites);
	free(m->name);
	fl_stackmap_free(m->sm);
	free(m->record_pc);
	if (m->sections)
		munmap(m->sections, m->sections_size);
	free(m);
}

static void proc_free(struct fld_proc *p)
{
	if (fld_proc_on_free)
		fld_proc_on_free(p);
	for (size_t i = 0; i < p->num_mods; i++)
		fld_module_free(p->mods[i]);
	free(p->mods);
	free(p->gone);
	fld_kproc_free(p->k);
	if (p->region)
		munmap(p->region, p->layout.size);
	free(p);
}

/* Whether a exited before b (restored ones, exit_seq 0, before any other). */
static bool exited_before(const struct fld_proc *a, const struct fld_proc *b)
{
	if (a->exit_seq != b->exit_seq)
		return a->exit_seq < b->exit_seq;
	return a->exited_ms < b->exited_ms;
}

void fld_proc_exit(struct fld_proc *p, size_t max_exited)
{
	static uint64_t exits;
	size_t exited = 0;

	/* Frozen (and marked removed), modules keep their counts: the region is no longer needed. */
	for (size_t i = 0; i < p->num_mods; i++)
		fld_module_freeze(p, p->mods[i]);
	if (p->region)
		munmap(p->region, p->layout.size);
	p->region = NULL;
	p->client = NULL;
	p->exited = true;
	p->exited_ms = now_ms();
	p->exit_seq = ++exits;

	/* The bound is per user: one user's exits never push out another's. */
	for (size_t i = 0; i < fld_num_procs; i++)
		exited += fld_procs[i]->exited && fld_procs[i]->uid == p->uid;
	/*
	 * Drop the one that exited first, while too many are kept.  The list
	 * is in registration order: a process that registered early and
	 * exited late is not the oldest exited.
	 */
	while (exited > max_exited && fld_proc_drop_oldest_exited(p->uid))
		exited--;
}

bool fld_proc_drop_oldest_exited(uid_t uid)
{
	size_t oldest = fld_num_procs;

	for (size_t i = 0; i < fld_num_procs; i++)
		if (fld_procs[i]->exited && fld_procs[i]->uid == uid &&
		    (oldest == fld_num_procs || exited_before(fld_procs[i], fld_procs[oldest])))
			oldest = i;
	if (oldest == fld_num_procs)
		return false;
	proc_free(fld_procs[oldest]);
	memmove(&fld_procs[oldest], &fld_procs[oldest + 1],
		(fld_num_procs - oldest - 1) * sizeof(*fld_procs));
	fld_num_procs--;
	return true;
}

void fld_proc_remove(struct fld_proc *p)
{
	for (size_t i = 0; i < fld_num_procs; i++) {
		if (fld_procs[i] == p) {
			memmove(&fld_procs[i], &fld_procs[i + 1],
				(fld_num_procs - i - 1) * sizeof(*fld_procs));
			fld_num_procs--;
			proc_free(p);
			return;
		}
	}
}

bool fld_proc_visible(const struct fld_proc *p, uid_t uid)
{
	return uid == 0 || uid == p->uid;
}
