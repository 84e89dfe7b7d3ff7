/* SPDX-License-Identifier: MIT */
/*
 * Which function of a stack map section a record belongs to.
 *
 * A section holds one table per object that was linked into the file (ld
 * concatenates the objects' .llvm_stackmaps), and a record names its
 * function by its index within its own table.  Whoever places records by
 * the section's functions in order (the discovery layer's
 * fl_module_section.functions, or the addresses stored in a JIT's section)
 * must count the functions of the tables before the record's: that is
 * what this does, once, for the index by runtime address (smindex.c) and
 * the patch layer's registry (lib/patch/points.c).
 */
#ifndef FL_FORMAT_STACKMAP_FUNCTIONS_H
#define FL_FORMAT_STACKMAP_FUNCTIONS_H

#include <stddef.h>
#include <stdint.h>

#include <faultline/format.h>

struct fl_sm_functions {
	/* Every table's functions, in the order of their events: as stored. */
	uint64_t *stored;
	size_t n;
	/* Where each table's functions start in that order. */
	uint32_t *table_base;
	size_t tables;
};

/*
 * Walks the section's tables and functions into *f (zeroed first).
 * Returns 0, -errno on malformed input (with *diag filled in; diag may be
 * NULL) or -ENOMEM; on failure *f holds nothing to free.  Thread-safe; not
 * async-signal-safe (it allocates).
 */
int fl_sm_functions_walk(const void *data, size_t size, uint32_t flags,
			 struct fl_sm_functions *f, struct fl_diag *diag);

/*
 * The index, among f's functions (all tables), of the function record r
 * belongs to; SIZE_MAX when r names none (v1) or one that f does not hold.
 */
size_t fl_sm_function_of(const struct fl_sm_functions *f, const struct fl_stackmap_record *r);

/* Frees what f holds and zeroes it. */
void fl_sm_functions_free(struct fl_sm_functions *f);

#endif /* FL_FORMAT_STACKMAP_FUNCTIONS_H */
