/* SPDX-License-Identifier: MIT */
/*
 * The writer side of the handler table: the registry of modules, sites
 * and regions, and the snapshots built from it (lib/dispatch/dispatch.h
 * has the structures and the reader side).  Writers serialize on one
 * mutex; nothing here runs in signal context.
 */
#ifndef FL_TABLE_TABLE_H
#define FL_TABLE_TABLE_H

#include <stdbool.h>

#include "dispatch/dispatch.h"

struct fl_init_opts;
struct fl_module;
struct fl_jit_reg;

/*
 * Initializes the table for opts (fl_init's, already checked): libunwind
 * (fl_libunwind_load), the counters, an empty snapshot, the handler, and the table's fork handlers.
 * Discovery is not run (fl_refresh does it).  Returns 0, -EALREADY when
 * done before, or -errno.
 */
int fl_table_init(const struct fl_init_opts *opts);

/* Returns true once fl_table_init has succeeded (fl_dispatch.ready). */
bool fl_table_ready(void);

/*
 * The first rescan left to the fl-agent thread (FL_INIT_DEFER_DISCOVERY,
 * rescan.c).  fl_table_defer_scan: fl_init's, before that thread starts;
 * faults wait for the rescan from now on (lib/dispatch/scan_wait.c).
 * fl_table_deferred_scan: that thread's, at its start: the rescan, when
 * still pending (also in a child forked before it ran).  Returns what
 * fl_refresh does, or 0 when none was pending.
 * fl_table_scan_pending: whether it has yet to publish the modules.
 * fl_table_scan_wait: waits until it has, at most ms milliseconds;
 * returns whether it has.
 */
void fl_table_defer_scan(void);
int fl_table_deferred_scan(void);
bool fl_table_scan_pending(void);
bool fl_table_scan_wait(int ms);

/* ------------------------------------------------------------------------
 * Observers: what other layers (the agent) learn of the table's changes.
 * The table knows nothing of them beyond this.
 */

/*
 * A published module (one with sites, stack map records or both), as the
 * observers are told of it.
 */
struct fl_table_module {
	int id;
	const char *name;
	/* The code: executable segments (ELF) or the registered range (JIT). */
	uint64_t code_start;
	uint64_t code_size;
	uint32_t first_counter;
	uint32_t num_sites;			/* 0: stack map records only */
	const struct fl_site_entry *sites;	/* sorted by faulting_pc */
};

/* Where a module's sites come from, for module_prepare. */
struct fl_table_source {
	const char *name;
	const struct fl_site_entry *sites;	/* sorted by faulting_pc */
	uint32_t num_sites;
	/*
	 * Exactly one is set: a loaded ELF module, or a JIT registration
	 * (fl_jit_register's copy, checked: its functions, if any, are sorted
	 * by start and do not overlap).
	 */
	const struct fl_module *elf;
	const struct fl_jit_reg *jit;
};

/*
 * Every member may be NULL.  Locks, in the order they are taken: the
 * table's refresh lock, the table's lock, then each observer's own locks.
 * So an observer called under the table's lock may take its own locks, but
 * must never call into the table (fl_stats_get, fl_jit_register, ...)
 * from a callback, nor hold its own lock while calling into the table.
 */
struct fl_table_observer {
	/*
	 * A module with sites or stack map records (or both: src->num_sites
	 * says) is about to be added.  Called without the table's locks (it
	 * may read files, allocate); src and what it points to are valid for
	 * the call only.  Returns the observer's data for the module (handed
	 * to module_added or module_discard), or NULL.
	 */
	void *(*module_prepare)(const struct fl_table_source *src);
	/*
	 * The module is published (the handler dispatches its sites).  Under
	 * the table's lock: must not block.  m is valid for the call only;
	 * the observer takes over data (from its module_prepare, or NULL).
	 */
	void (*module_added)(const struct fl_table_module *m, void *data);
	/* The module was not added after all: frees data (not NULL). */
	void (*module_discard)(void *data);
	/*
	 * The module is unpublished (no handler sees it) and its counter
	 * block retired (fl_counters_retire); its sites are freed after.
	 * Under the table's lock: must not block.
	 */
	void (*module_removed)(int id);
	/*
	 * fork, from the table's pthread_atfork handlers, with both table
	 * locks held across it.  fork_prepare: observers in subscription
	 * order, after the table took its locks; fork_parent: in reverse
	 * order, before the table releases them.  fork_child: in subscription
	 * order, after the table reset its grace period's readers and gave
	 * the child its own counters (fl_counters_fork_child's result in
	 * counters_err: 0, or -errno and the child still counts on its
	 * parent's), before the table releases its locks.
	 */
	void (*fork_prepare)(void);
	void (*fork_parent)(void);
	void (*fork_child)(int counters_err);
};

/* At most this many observers. */
#define FL_TABLE_MAX_OBSERVERS 4

/*
 * Subscribes o (not copied: it must outlive the process) to the changes
 * from now on: modules added before are not reported.  Callable before
 * fl_table_init.  Returns 0, or -ENOSPC when FL_TABLE_MAX_OBSERVERS are
 * subscribed.
 */
int fl_table_observe(const struct fl_table_observer *o);

/*
 * The registered sites whose faulting PC is in [lo, hi): copies at most
 * cap of them into out, in address order within a module, and returns how
 * many there are.  Takes the table's lock; not signal context.
 */
size_t fl_table_sites_in(uint64_t lo, uint64_t hi, struct fl_site_entry *out, size_t cap);

/*
 * Publishes a snapshot that includes region r (r->start, r->size set).
 * Returns 0, -EEXIST when it overlaps a registered region, -ENODEV before
 * fl_init, -ENOMEM.
 */
int fl_table_region_add(struct fl_region *r);

/*
 * Publishes a snapshot without r and waits until no handler can still see
 * it: when this returns, r may be freed.  Returns 0 or -ENOENT.
 */
int fl_table_region_remove(struct fl_region *r);

/*
 * Waits for a grace period after publishing (lib/table/publish.c): every
 * handler that could hold the snapshot current before the call has left.
 */
void fl_snapshot_synchronize(void);

/* Publishes s as the current snapshot; returns the previous one. */
const struct fl_snapshot *fl_snapshot_publish(const struct fl_snapshot *s);

/* Counters (counters.c); all under the registry lock. */
int fl_counters_init(uint32_t max_sites);
/*
 * In a forked child (the table's atfork child handler, before the
 * observers' fork_child): a region of its own, the parent's site table
 * copied, its counters from zero.  Returns 0 or -errno (then the child
 * still counts on its parent's region).
 */
int fl_counters_fork_child(void);
/* The region's memfd, or -1: none (anonymous memory), or the program closed it. */
int fl_counters_fd(void);
/* The region and this process's own copy of its layout. */
struct fl_shm_layout;
void *fl_counters_region(struct fl_shm_layout *l);
/*
 * The healing slot of counter slot slot in the region (its address is
 * stable: a forked child's region takes its parent's place), or NULL.
 */
struct fl_shm_heal *fl_counters_heal(uint32_t slot);
/*
 * Marks slots [base, base + n) changed in the region's dirty summary
 * (fl_shm_mark_dirty), after a change to their counters, populations or
 * heal slots made before the call: the daemon saves their blocks.  Slots
 * past the region's capacity are ignored.  Lock-free; async-signal-safe.
 */
void fl_counters_mark_dirty(uint32_t base, uint32_t n);
/* The faulting PC of a live slot's site, or 0. */
uint64_t fl_counters_site_pc(uint32_t slot);
void fl_counters_describe(uint32_t base, uint32_t n, uint32_t module,
			  const struct fl_site_entry *sites);
int64_t fl_counters_alloc(uint32_t n);
int fl_counters_free(uint32_t base, uint32_t n);
/* An unregistered module's block, kept until the daemon saves its counts. */
int fl_counters_retire(uint32_t base, uint32_t n);
/*
 * Whether a slot of [base, base + n) still holds module's final count
 * unsaved (RETIRED, its entry module's): the daemon has not said SAVED.
 * Lock-free; a slot saved and reused meanwhile reads as not.
 */
bool fl_counters_unsaved(uint32_t base, uint32_t n, uint32_t module);

#endif /* FL_TABLE_TABLE_H */
