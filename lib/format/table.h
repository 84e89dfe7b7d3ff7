/* SPDX-License-Identifier: MIT */
/*
 * Internal to lib/format: a parsed stack map table (table.c) handed over
 * to the index by runtime address (smindex.c), which owns it alone.
 */
#ifndef FL_FORMAT_TABLE_H
#define FL_FORMAT_TABLE_H

#include <faultline/format.h>

/*
 * Returns sm's records (fl_stackmap_count of them, section order),
 * writable, for the index to put at their runtime addresses.  Frees the
 * views sorted by ID and by address, which new addresses would disorder:
 * fl_stackmap_find_id and fl_stackmap_find_pc must not be called on sm
 * again.
 */
struct fl_stackmap_record *fl_stackmap_records_to_place(struct fl_stackmap *sm);

#endif /* FL_FORMAT_TABLE_H */
