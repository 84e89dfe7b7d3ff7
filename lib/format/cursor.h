/* SPDX-License-Identifier: MIT */
/*
 * What the format layer's own walkers (validation, the table builders) use
 * of the cursors beyond the events: a function's faults, a record's
 * locations, each in a loop of its own, with the checks the events make
 * (a million entries' events cost more than their checks).
 */
#ifndef FL_FORMAT_CURSOR_H
#define FL_FORMAT_CURSOR_H

#include <faultline/format.h>

/*
 * Right after an FL_FM_FUNCTION event of c: steps over the function's
 * faults, checking each as fl_faultmap_next would (the first bad one fails
 * the walk with the same error and diagnostic), and when out is not NULL
 * stores them there as table entries (ev.function.num_faulting_pcs of
 * them).  The next fl_faultmap_next goes on after them.  Returns 0, or
 * -errno.  Async-signal-safe.
 */
int fl_faultmap_take_faults(struct fl_faultmap_cursor *c, struct fl_faultmap_entry *out);

/*
 * Right after an FL_FM_TABLE event of c: the most faults the rest of the
 * section can hold besides the table's function headers (for a section of
 * one table, its number of faults), to size what a walk fills in.
 */
size_t fl_faultmap_faults_bound(const struct fl_faultmap_cursor *c);

/*
 * Right after an FL_SM_RECORD event of c: steps over the record's
 * locations, checking each as fl_stackmap_next would (the first bad one
 * fails the walk with the same error and diagnostic), and when out is not
 * NULL stores them there (ev.record.num_locations of them).  The next
 * fl_stackmap_next goes on with the live-outs.  Returns 0, or -errno.
 * Async-signal-safe.
 */
int fl_stackmap_take_locations(struct fl_stackmap_cursor *c, struct fl_stackmap_location *out);

/*
 * Right after an FL_SM_TABLE event of c: the most locations the rest of the
 * section can hold besides the table's functions, constants and record
 * headers, if they are of the table's version (for one table, a few more
 * than it holds), to size what a walk fills in.
 */
size_t fl_stackmap_locations_bound(const struct fl_stackmap_cursor *c);

#endif /* FL_FORMAT_CURSOR_H */
