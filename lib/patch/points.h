/* SPDX-License-Identifier: MIT */
/* lib/patch/points.c's side that fl_init needs. */
#ifndef FL_PATCH_POINTS_H
#define FL_PATCH_POINTS_H

/*
 * Subscribes the registry of stack map records to the table, so that it
 * knows the records of JIT code (fl_jit_register's stack maps).  Before the
 * first rescan (fl_init).  Returns 0 or -ENOSPC.
 */
int fl_points_subscribe(void);

#endif /* FL_PATCH_POINTS_H */
