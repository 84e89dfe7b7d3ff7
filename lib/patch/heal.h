/* SPDX-License-Identifier: MIT */
/* lib/patch/heal.c's side that fl_init needs. */
#ifndef FL_PATCH_HEAL_H
#define FL_PATCH_HEAL_H

/*
 * Subscribes the healed sites' registry to the table, so that a module
 * that goes away (dlclose, fl_jit_unregister) takes its heals with it.
 * Before the first rescan (fl_init).  Returns 0 or -ENOSPC.
 */
int fl_heal_subscribe(void);

#endif /* FL_PATCH_HEAL_H */
