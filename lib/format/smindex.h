/* SPDX-License-Identifier: MIT */
/*
 * A stack map section's records indexed by runtime address (smindex.c):
 * the lookup of a return address's record.
 *
 * Built once per module: by the table layer at registration (lib/table/
 * stackmaps.h builds it for loaded ELF modules and JIT code, and publishes
 * it in the snapshot that fl_stackmap_record_at searches: the
 * deoptimization entry and stack walks), and by faultlined for each
 * module a process describes to it (faultline stackmaps --pc), so that
 * both find the same record.  The search allocates nothing, takes no lock
 * and makes no syscall: it runs in any context, signal handlers included.
 */
#ifndef FL_FORMAT_SMINDEX_H
#define FL_FORMAT_SMINDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fl_diag;
struct fl_stackmap_record;

struct fl_smindex;

/*
 * Where the records must be: in [lo, hi), or, when contains is set,
 * where contains(arg, pc) says.
 */
struct fl_smindex_code {
	uint64_t lo, hi;
	bool (*contains)(const void *arg, uint64_t pc);
	const void *arg;
};

/*
 * The index of the stack map section data[0..size) (parsed with flags),
 * whose i-th function, in the order of its function events over all its
 * tables, is at runtime address funcs[i] (funcs NULL: at the address the
 * section stores).  what names the module in diagnostics.  Records of v1
 * tables name no function, so their address is unknown: they are left
 * out.  Returns 0 with *out set (NULL: no record could be placed), -EINVAL
 * with *diag filled in for a malformed section, a record outside code or
 * records spread over 4 GiB or more, or -ENOMEM.
 */
int fl_smindex_build(const char *what, const void *data, size_t size, uint32_t flags,
		     const uint64_t *funcs, size_t num_funcs, const struct fl_smindex_code *code,
		     struct fl_smindex **out, struct fl_diag *diag);

/* Frees x (NULL: nothing). */
void fl_smindex_free(struct fl_smindex *x);

/* [*lo, *hi): the addresses of x's records, the last one's included. */
void fl_smindex_span(const struct fl_smindex *x, uint64_t *lo, uint64_t *hi);

/* The number of records x holds. */
uint32_t fl_smindex_count(const struct fl_smindex *x);

/*
 * Record i (< fl_smindex_count) of x, in section order: its pc and
 * function_address runtime addresses, its locations and live-outs as the
 * format layer parsed them.
 */
const struct fl_stackmap_record *fl_smindex_record(const struct fl_smindex *x, uint32_t i);

/*
 * Returns the record whose address is pc (the first in section order when
 * several are) with *function and *stack_size set to its function's
 * runtime address and frame size, or NULL.  The record's pc and
 * function_address are runtime addresses.  One hash probe, usually one
 * cache line, and the record is not read.  Async-signal-safe.
 */
const struct fl_stackmap_record *fl_smindex_find(const struct fl_smindex *x, uint64_t pc,
					       uint64_t *function, uint64_t *stack_size);

#endif /* FL_FORMAT_SMINDEX_H */
