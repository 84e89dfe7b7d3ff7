/* SPDX-License-Identifier: MIT */
/*
 * Internal to lib/table/: the registry's lists and their publication
 * (modules.c), which jit.c, rescan.c, regions.c and stats.c change and
 * read.  Everything here is under fl_table_lock unless said otherwise;
 * nothing runs in signal context.
 */
#ifndef FL_TABLE_MODULES_H
#define FL_TABLE_MODULES_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "table/table.h"

struct fl_sites;

/*
 * A registered module.  It is in the snapshot when it has sites or stack
 * map records (fl_table_mod_published).
 */
struct fl_table_mod {
	int id;
	char *name;
	/* Loaded ELF module: its identity in dl_iterate_phdr. */
	bool elf;
	uint64_t bias;
	uint64_t first_load;
	bool seen;
	/* [start, end) covers the sites (ELF) or the code (JIT). */
	uint64_t start;
	uint64_t end;
	/* The code, for the daemon: executable segments (ELF) or [start, end). */
	uint64_t code_lo;
	uint64_t code_hi;
	struct fl_site_entry *sites;
	uint32_t num_sites;
	uint32_t counter_base;
	/* Its stack map records by address, or NULL (stackmaps.h). */
	struct fl_smindex *stackmaps;
	/* JIT: its .eh_frame, registered with libunwind while it is in the lists, or NULL (unwind.h). */
	struct fl_unwind *unwind;
	/*
	 * Per observer, its data from module_prepare until module_added
	 * takes it (module_discard frees what is left).
	 */
	void *observed[FL_TABLE_MAX_OBSERVERS];
};

/*
 * Locks, in order: fl_table_refresh_lock (one rescan at a time), then
 * fl_table_lock (the lists), then the observers' (table.h).
 */
extern pthread_mutex_t fl_table_refresh_lock;
extern pthread_mutex_t fl_table_lock;

/* FL_INIT_* of fl_init: written before fl_dispatch.ready is set. */
extern uint32_t fl_table_init_flags;
/* The lists, in no order (snapshots are sorted). */
extern struct fl_table_mod **fl_table_mods;
extern size_t fl_table_num_mods;
extern struct fl_region **fl_table_regions;
extern size_t fl_table_num_regions;
/* The handler was found replaced, and said so once. */
extern bool fl_table_replaced_reported;

/* The number of observers subscribed; without lock. */
size_t fl_table_observers_count(void);

/*
 * Asks the observers for their data about m, a module with sites or stack
 * map records (none asked when it has neither: it is not published).
 * Without lock: they may read files.
 */
void fl_table_mod_prepare(struct fl_table_mod *m, const struct fl_module *elf,
			  const struct fl_jit_reg *jit);

/* Whether m is in the snapshots: it has sites or stack map records. */
bool fl_table_mod_published(const struct fl_table_mod *m);

/* Frees m, and the observers' data it still holds (NULL: nothing). */
void fl_table_mod_free(struct fl_table_mod *m);

/* m's sites are s's (sorted); s is left empty.  [start, end) covers them. */
void fl_table_mod_take_sites(struct fl_table_mod *m, struct fl_sites *s);

/*
 * Adds m to the lists, with counters and its unwind information registered
 * with libunwind, publishes, and tells the observers.  Returns m's id,
 * -EEXIST (its sites, its stack map records or the code its .eh_frame
 * covers overlap a registered module's), -ENOMEM or -ENOSPC (no counters);
 * on failure m is not in the lists (fl_table_mod_free cancels what was
 * registered).
 */
int fl_table_mod_add(struct fl_table_mod *m);

/* Takes fl_table_mods[i] off the list (the last takes its place). */
struct fl_table_mod *fl_table_mod_take(size_t i);

/*
 * Publishes the lists as they are now, waits for the grace period, then
 * retires, reports (module_removed) and frees the removed modules.
 * Returns 0 or -ENOMEM: then nothing changed for the handler, nothing was
 * freed, and the caller puts the removed modules back.
 */
int fl_table_publish(struct fl_table_mod **removed, size_t num_removed);

/* Logs once that the SIGSEGV or SIGBUS handler is no longer faultline's. */
void fl_table_report_replaced(void);

#endif /* FL_TABLE_MODULES_H */
