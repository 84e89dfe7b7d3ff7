/* SPDX-License-Identifier: MIT */
/*
 * Internal to lib/patch/: the process's perf map, /tmp/perf-PID.map, where
 * perf and faultline profile find the names of code no file holds
 * (perfmap.c).  Called with the patch lock held.
 */
#ifndef FL_PATCH_PERFMAP_H
#define FL_PATCH_PERFMAP_H

#include <stddef.h>
#include <stdint.h>

/* The variable that decides: 1 always write, 0 never (faultline(1)). */
#define FL_PERFMAP_ENV "FAULTLINE_PERF_MAP"

/*
 * Opens this process's map for writing, the first time and again in a
 * child after fork (whose map is its own PID's).  Returns 1 when this
 * call opened it (the caller writes again what it registered before: the
 * child's copies of its parent's code), 0 when it was open already, or
 * -errno when faultline does not write it (why is logged once, at info):
 * FAULTLINE_PERF_MAP=0; the program has a map of its own and did not set
 * FAULTLINE_PERF_MAP=1; the path is a symlink, not a regular file, or
 * another user's.
 */
int fl_perfmap_open(void);

/*
 * Appends "START SIZE NAME\n" (hex, no 0x) in one write, if the map is
 * open (fl_perfmap_open).  Returns 0 or -errno (logged once).
 */
int fl_perfmap_write(uint64_t start, size_t size, const char *name);

#endif /* FL_PATCH_PERFMAP_H */
