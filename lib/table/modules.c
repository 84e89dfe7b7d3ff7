/* SPDX-License-Identifier: MIT */
/*
 * The registry's lists (every registered module: loaded ELF modules found
 * through the discovery layer, JIT code registered by the runtime; every
 * region), the immutable snapshots the handler reads, built from them,
 * and their publication; the observers; the table's fork handlers and
 * initialization.  The other files of lib/table/ change the lists through
 * modules.h.
 *
 * A change is: take the registry lock, change the lists, build a whole new
 * snapshot, publish it with one atomic store, wait for a grace period, then
 * free what only the old snapshot referred to (the snapshot, the sites of
 * removed modules, their counter blocks).  Lookups in signal context never
 * wait for any of it.
 *
 * Locks, in order: refresh_lock (one rescan of the loaded modules at a
 * time; held across dl_iterate_phdr, which takes the loader's lock), then
 * lock (the lists), then the observers' own locks.  lock is never held
 * while calling into the loader, so a library constructor that registers
 * JIT code cannot deadlock with a rescan.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <faultline/dispatch.h>

#include "core/log.h"
#include "table/libunwind.h"
#include "table/modules.h"
#include "table/sites.h"
#include "table/stackmaps.h"
#include "table/table.h"
#include "table/unwind.h"

pthread_mutex_t fl_table_refresh_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t fl_table_lock = PTHREAD_MUTEX_INITIALIZER;
uint32_t fl_table_init_flags;
struct fl_table_mod **fl_table_mods;
size_t fl_table_num_mods;
struct fl_region **fl_table_regions;
size_t fl_table_num_regions;
static int next_id = 1;
bool fl_table_replaced_reported;
/* Appended to under lock; read without it (module_prepare) up to the count. */
static const struct fl_table_observer *observers[FL_TABLE_MAX_OBSERVERS];
static _Atomic size_t num_observers;

bool fl_table_ready(void)
{
	/* Pairs with the release store in fl_table_init. */
	return atomic_load_explicit(&fl_dispatch.ready, memory_order_acquire) != 0;
}

int fl_table_observe(const struct fl_table_observer *o)
{
	size_t n;
	int err = 0;

	pthread_mutex_lock(&fl_table_lock);
	n = atomic_load_explicit(&num_observers, memory_order_relaxed);
	if (n == FL_TABLE_MAX_OBSERVERS) {
		err = -ENOSPC;
	} else {
		observers[n] = o;
		atomic_store_explicit(&num_observers, n + 1, memory_order_release);
	}
	pthread_mutex_unlock(&fl_table_lock);
	return err;
}

size_t fl_table_observers_count(void)
{
	return atomic_load_explicit(&num_observers, memory_order_acquire);
}

/* The observers' data for m, a module to publish.  Without lock. */
void fl_table_mod_prepare(struct fl_table_mod *m, const struct fl_module *elf,
			  const struct fl_jit_reg *jit)
{
	struct fl_table_source src = {
		.name = m->name, .sites = m->sites, .num_sites = m->num_sites,
		.elf = elf, .jit = jit,
	};
	size_t n = fl_table_observers_count();

	if (!fl_table_mod_published(m))
		return;
	for (size_t i = 0; i < n; i++)
		if (observers[i]->module_prepare)
			m->observed[i] = observers[i]->module_prepare(&src);
}

bool fl_table_mod_published(const struct fl_table_mod *m)
{
	return m->num_sites > 0 || m->stackmaps;
}

void fl_table_mod_free(struct fl_table_mod *m)
{
	if (!m)
		return;
	fl_smindex_free(m->stackmaps);
	fl_unwind_free(m->unwind);
	for (size_t i = 0; i < FL_TABLE_MAX_OBSERVERS; i++)
		if (m->observed[i] && observers[i]->module_discard)
			observers[i]->module_discard(m->observed[i]);
	free(m->name);
	free(m->sites);
	free(m);
}

static int cmp_snap_module(const void *a, const void *b)
{
	const struct fl_snap_module *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static int cmp_snap_region(const void *a, const void *b)
{
	const struct fl_snap_region *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static int cmp_snap_stackmap(const void *a, const void *b)
{
	const struct fl_snap_stackmap *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Builds a snapshot of the lists, in one allocation.  Under lock. */
static struct fl_snapshot *snapshot_build(void)
{
	size_t n = 0, nmaps = 0, size;
	struct fl_snapshot *s;
	struct fl_snap_module *sm;
	struct fl_snap_region *sr;
	struct fl_snap_stackmap *ss;

	for (size_t i = 0; i < fl_table_num_mods; i++) {
		n += fl_table_mods[i]->num_sites > 0;
		nmaps += fl_table_mods[i]->stackmaps != NULL;
	}
	size = sizeof(*s) + n * sizeof(*sm) + fl_table_num_regions * sizeof(*sr) +
	       nmaps * sizeof(*ss);
	s = calloc(1, size);
	if (!s)
		return NULL;
	sm = (struct fl_snap_module *)(s + 1);
	sr = (struct fl_snap_region *)(sm + n);
	ss = (struct fl_snap_stackmap *)(sr + fl_table_num_regions);

	n = 0;
	for (size_t i = 0; i < fl_table_num_mods; i++) {
		const struct fl_table_mod *m = fl_table_mods[i];

		if (m->num_sites == 0)
			continue;
		sm[n++] = (struct fl_snap_module){
			.start = m->start, .end = m->end, .sites = m->sites,
			.num_sites = m->num_sites, .id = m->id,
		};
	}
	qsort(sm, n, sizeof(*sm), cmp_snap_module);
	for (size_t i = 0; i < fl_table_num_regions; i++)
		sr[i] = (struct fl_snap_region){
			.start = fl_table_regions[i]->start,
			.end = fl_table_regions[i]->start + fl_table_regions[i]->size,
			.region = fl_table_regions[i],
		};
	qsort(sr, fl_table_num_regions, sizeof(*sr), cmp_snap_region);
	nmaps = 0;
	for (size_t i = 0; i < fl_table_num_mods; i++) {
		const struct fl_table_mod *m = fl_table_mods[i];

		if (!m->stackmaps)
			continue;
		ss[nmaps] = (struct fl_snap_stackmap){
			.index = m->stackmaps, .name = m->name, .id = m->id,
		};
		fl_smindex_span(m->stackmaps, &ss[nmaps].start, &ss[nmaps].end);
		nmaps++;
	}
	qsort(ss, nmaps, sizeof(*ss), cmp_snap_stackmap);
	s->num_modules = (uint32_t)n;
	s->num_regions = (uint32_t)fl_table_num_regions;
	s->num_stackmaps = (uint32_t)nmaps;
	s->modules = sm;
	s->regions = sr;
	s->stackmaps = ss;
	return s;
}

/*
 * Publishes the lists as they are now and frees the removed modules after
 * the grace period.  Under lock.  Returns 0 or -ENOMEM (then nothing
 * changed for the handler; removed modules are still freed only if the
 * publication happened, so on failure the caller must put them back).
 */
int fl_table_publish(struct fl_table_mod **removed, size_t num_removed)
{
	struct fl_snapshot *s = snapshot_build();
	const struct fl_snapshot *old;

	if (!s)
		return -ENOMEM;
	old = fl_snapshot_publish(s);
	fl_snapshot_synchronize();
	free((void *)old);
	for (size_t i = 0; i < num_removed; i++) {
		/*
		 * Kept, final counts and all, until the daemon has saved them
		 * (counters.c); marked so before MODULE_REMOVE can go.
		 */
		if (removed[i]->num_sites)
			fl_counters_retire(removed[i]->counter_base, removed[i]->num_sites);
		/* The observers heard of every published module (fl_table_mod_add). */
		if (fl_table_mod_published(removed[i]))
			for (size_t k = 0; k < fl_table_observers_count(); k++)
				if (observers[k]->module_removed)
					observers[k]->module_removed(removed[i]->id);
		fl_table_mod_free(removed[i]);
	}
	return 0;
}

static bool overlaps(uint64_t start, uint64_t end)
{
	for (size_t i = 0; i < fl_table_num_mods; i++)
		if (fl_table_mods[i]->num_sites && start < fl_table_mods[i]->end &&
		    fl_table_mods[i]->start < end)
			return true;
	return false;
}

/* The span of m's stack map records; false when it has none. */
static bool records_span(const struct fl_table_mod *m, uint64_t *lo, uint64_t *hi)
{
	if (!m->stackmaps)
		return false;
	fl_smindex_span(m->stackmaps, lo, hi);
	return true;
}

/* The span of the code m's unwind information covers; false when it has none. */
static bool unwind_span(const struct fl_table_mod *m, uint64_t *lo, uint64_t *hi)
{
	if (!m->unwind)
		return false;
	fl_unwind_span(m->unwind, lo, hi);
	return true;
}

/* Whether m's span (by span) overlaps a registered module's. */
static bool span_overlaps(const struct fl_table_mod *m,
			  bool (*span)(const struct fl_table_mod *, uint64_t *, uint64_t *))
{
	uint64_t lo, hi, other_lo, other_hi;

	if (!span(m, &lo, &hi))
		return false;
	for (size_t i = 0; i < fl_table_num_mods; i++)
		if (span(fl_table_mods[i], &other_lo, &other_hi) && lo < other_hi && other_lo < hi)
			return true;
	return false;
}

/* Adds m to the lists, with counters, and publishes.  Under lock. */
int fl_table_mod_add(struct fl_table_mod *m)
{
	struct fl_table_mod **grown;
	int64_t base = 0;
	int err;

	if (span_overlaps(m, records_span) || span_overlaps(m, unwind_span))
		return -EEXIST;
	if (m->num_sites) {
		if (overlaps(m->start, m->end))
			return -EEXIST;
		base = fl_counters_alloc(m->num_sites);
		if (base < 0)
			return (int)base;
		m->counter_base = (uint32_t)base;
		for (uint32_t i = 0; i < m->num_sites; i++)
			m->sites[i].counter = m->counter_base + i;
	}
	grown = realloc(fl_table_mods, (fl_table_num_mods + 1) * sizeof(*fl_table_mods));
	if (!grown) {
		err = -ENOMEM;
		goto fail;
	}
	fl_table_mods = grown;
	/*
	 * Before the records are published: a deoptimization that finds one
	 * finds the frame's unwind information too.
	 */
	err = fl_unwind_register(m->unwind);
	if (err)
		goto fail;
	m->id = next_id++;
	fl_table_mods[fl_table_num_mods++] = m;
	if (!fl_table_mod_published(m))
		return m->id;	/* nothing for the snapshot */
	if (m->num_sites)
		fl_counters_describe(m->counter_base, m->num_sites, (uint32_t)m->id, m->sites);
	err = fl_table_publish(NULL, 0);
	if (err == 0) {
		struct fl_table_module tm = {
			.id = m->id, .name = m->name,
			.code_start = m->code_lo, .code_size = m->code_hi - m->code_lo,
			.first_counter = m->counter_base, .num_sites = m->num_sites,
			.sites = m->sites,
		};

		for (size_t i = 0; i < fl_table_observers_count(); i++) {
			void *data = m->observed[i];

			/* The observer owns its data now, whatever it does with it. */
			m->observed[i] = NULL;
			if (observers[i]->module_added)
				observers[i]->module_added(&tm, data);
			else if (data && observers[i]->module_discard)
				observers[i]->module_discard(data);
		}
		return m->id;
	}
	if (m->num_sites)
		fl_counters_describe(m->counter_base, m->num_sites, 0, NULL);
	fl_table_num_mods--;
fail:
	if (m->num_sites)
		fl_counters_free(m->counter_base, m->num_sites);
	return err;
}

void fl_table_report_replaced(void)
{
	if (fl_table_replaced_reported)
		return;
	if ((!fl_dispatch_installed(SIGSEGV) || !fl_dispatch_installed(SIGBUS)) &&
	    !fl_chain_restored_default()) {
		fl_table_replaced_reported = true;
		fl_log(FL_LOG_ERROR, "the SIGSEGV or SIGBUS handler is no longer faultline's: "
		       "something installed another with a raw rt_sigaction; "
		       "implicit checks that fail will crash");
	}
}

void fl_table_mod_take_sites(struct fl_table_mod *m, struct fl_sites *s)
{
	m->sites = s->v;
	m->num_sites = (uint32_t)s->n;
	if (s->n) {
		m->start = s->v[0].faulting_pc;
		m->end = s->v[s->n - 1].faulting_pc + 1;
	}
	s->v = NULL;
	s->n = s->cap = 0;
}

/*
 * The order of the lists does not matter (snapshots are sorted), so a
 * removal that could not be published is undone by appending.  Under lock.
 */
struct fl_table_mod *fl_table_mod_take(size_t i)
{
	struct fl_table_mod *m = fl_table_mods[i];

	fl_table_mods[i] = fl_table_mods[--fl_table_num_mods];
	return m;
}

/*
 * fork: both locks are held across it, so that the child never inherits
 * one locked by a thread it does not have, nor the lists half changed.
 * The observers' handlers run inside (table.h: refresh_lock, lock, then
 * theirs, which module_add takes under lock).
 */
static void fork_prepare(void)
{
	pthread_mutex_lock(&fl_table_refresh_lock);
	pthread_mutex_lock(&fl_table_lock);
	for (size_t i = 0; i < fl_table_observers_count(); i++)
		if (observers[i]->fork_prepare)
			observers[i]->fork_prepare();
}

static void fork_parent(void)
{
	for (size_t i = fl_table_observers_count(); i-- > 0;)
		if (observers[i]->fork_parent)
			observers[i]->fork_parent();
	pthread_mutex_unlock(&fl_table_lock);
	pthread_mutex_unlock(&fl_table_refresh_lock);
}

/*
 * The child's only thread is not between fl_snapshot_enter and leave (a
 * chained handler that forks runs after claim left): any count in readers
 * belongs to a thread that did not come along, and would keep the child's
 * first grace period waiting for ever.  The threads exempt from the
 * patcher's handshake were the parent's.  The child counts on counters of
 * its own from zero, whether an agent is there or not.
 */
static void fork_child(void)
{
	int err;

	atomic_store(&fl_dispatch.readers[0], 0);
	atomic_store(&fl_dispatch.readers[1], 0);
	fl_park_fork_child();
	err = fl_counters_fork_child();
	for (size_t i = 0; i < fl_table_observers_count(); i++)
		if (observers[i]->fork_child)
			observers[i]->fork_child(err);
	pthread_mutex_unlock(&fl_table_lock);
	pthread_mutex_unlock(&fl_table_refresh_lock);
}

int fl_table_init(const struct fl_init_opts *o)
{
	struct fl_snapshot *empty;
	long page = sysconf(_SC_PAGESIZE);
	int err;

	/* Before the lock: it calls into the loader (see the order above). */
	err = fl_libunwind_load();
	if (err)
		return err;
	pthread_mutex_lock(&fl_table_lock);
	if (fl_table_ready()) {
		pthread_mutex_unlock(&fl_table_lock);
		return -EALREADY;
	}
	fl_dispatch.null_bound = o->null_bound ? o->null_bound :
				 (uint64_t)(page > 0 ? page : 4096);
	err = fl_counters_init(o->max_sites ? o->max_sites : 1u << 20);
	if (err)
		goto out;
	empty = snapshot_build();
	if (!empty) {
		err = -ENOMEM;
		goto out;
	}
	fl_snapshot_publish(empty);
	err = fl_dispatch_install();
	if (err)
		goto out;
	fl_table_init_flags = o->flags;
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	/*
	 * Release: fl_sigaction records actions from now on; pairs with its
	 * acquire load of ready (and fl_table_ready's).
	 */
	atomic_store_explicit(&fl_dispatch.ready, 1, memory_order_release);
out:
	pthread_mutex_unlock(&fl_table_lock);
	return err;
}
