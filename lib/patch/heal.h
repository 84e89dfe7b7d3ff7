/* SPDX-License-Identifier: MIT */
/* lib/patch/heal.c's side that fl_init needs. */
#ifndef FL_PATCH_HEAL_H
#define FL_PATCH_HEAL_H

#include <stddef.h>
#include <stdint.h>

/*
 * Subscribes the healed sites' registry to the table, so that a module
 * that goes away (dlclose, fl_jit_unregister) takes its heals with it.
 * Before the first rescan (fl_init).  Returns 0 or -ENOSPC.
 */
int fl_heal_subscribe(void);

/*
 * Heals the sites pcs[0..n) as fl_site_heal does each, in batches that
 * share their changes of code (the heal policy's sites wanted at once).
 * results[i]: 0, or -errno (-EOPNOTSUPP: unhealable).  Returns 0, or
 * -errno when nothing could be tried.
 */
int fl_sites_heal(const uint64_t *pcs, size_t n, int *results);

#endif /* FL_PATCH_HEAL_H */
