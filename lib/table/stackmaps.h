/* SPDX-License-Identifier: MIT */
/*
 * A registered module's stack map records, indexed by return address
 * (the format layer's index, format/smindex.h, built by stackmaps.c):
 * built at registration, outside the table's lock, owned by the module
 * (struct fl_table_mod), published in the snapshot (struct
 * fl_snap_stackmap), freed with the module after the grace period.
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

#include "format/smindex.h"

struct fl_diag;
struct fl_module;
struct fl_jit_reg;

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

#endif /* FL_TABLE_STACKMAPS_H */
