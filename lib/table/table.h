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

/* Returns true once fl_init has succeeded. */
bool fl_table_ready(void);

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
int fl_counters_fork_child(void);
/* The region's memfd, or -1: none (anonymous memory), or the program closed it. */
int fl_counters_fd(void);
/* The region and this process's own copy of its layout. */
struct fl_shm_layout;
void *fl_counters_region(struct fl_shm_layout *l);
void fl_counters_describe(uint32_t base, uint32_t n, uint32_t module,
			  const struct fl_site_entry *sites);
int64_t fl_counters_alloc(uint32_t n);
int fl_counters_free(uint32_t base, uint32_t n);
/* An unregistered module's block, kept until the daemon saves its counts. */
int fl_counters_retire(uint32_t base, uint32_t n);

#endif /* FL_TABLE_TABLE_H */
