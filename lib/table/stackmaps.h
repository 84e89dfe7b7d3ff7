/* SPDX-License-Identifier: MIT */
/*
 * A registered module's stack map records, indexed by return address
 * (stackmaps.c): built at registration, outside the table's lock, owned
 * by the module (struct fl_table_mod), published in the snapshot
 * (struct fl_snap_stackmap), freed with the module after the grace period.
 *
 * The index is what fl_stackmap_record_at (include/faultline/deopt.h)
 * searches: the deoptimization entry and stack walks ask it for the record
 * of a return address, so it is searched from any context, signal handlers
 * included: the search allocates nothing, takes no lock and makes no
 * syscall.
 */
#ifndef FL_TABLE_STACKMAPS_H
#define FL_TABLE_STACKMAPS_H

#include <stdint.h>

struct fl_diag;
struct fl_module;
struct fl_jit_reg;
struct fl_stackmap_record;

struct fl_smindex;

/*
 * The index of a loaded ELF module's stack map (function addresses as the
 * discovery layer resolved them).  Returns 0 with *out set (NULL: the
 * module has no stack map, or none of its records can be placed), -EINVAL
 * with *diag filled in when a record lies outside the module's code, or
 * -ENOMEM.
 */
int fl_smindex_of_elf(const struct fl_module *fm, struct fl_smindex **out,
		      struct fl_diag *diag);

/*
 * The same for JIT code: function addresses as stored (the code's loader
 * relocated them), every record inside [reg->code_start, + code_size).
 * Returns 0 with *out set (NULL: no stack map), -EINVAL with *diag filled
 * in, or -ENOMEM.
 */
int fl_smindex_of_jit(const struct fl_jit_reg *reg, struct fl_smindex **out,
		      struct fl_diag *diag);

/* Frees x (NULL: nothing). */
void fl_smindex_free(struct fl_smindex *x);

/* [*lo, *hi): the addresses of x's records, the last one's included. */
void fl_smindex_span(const struct fl_smindex *x, uint64_t *lo, uint64_t *hi);

/* The number of records x holds. */
uint32_t fl_smindex_count(const struct fl_smindex *x);

/*
 * Returns the record whose address is pc (the first in section order when
 * several are) with *function and *stack_size set to its function's
 * runtime address and frame size, or NULL.  The record's pc and
 * function_address are runtime addresses.  One hash probe, usually one
 * cache line, and the record is not read.  Async-signal-safe.
 */
const struct fl_stackmap_record *fl_smindex_find(const struct fl_smindex *x, uint64_t pc,
					       uint64_t *function, uint64_t *stack_size);

#endif /* FL_TABLE_STACKMAPS_H */
