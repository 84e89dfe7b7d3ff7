/* SPDX-License-Identifier: MIT */
/*
 * The FDEs of an .eh_frame section (the call frame information of the
 * System V x86-64 ABI, LSB's variant of DWARF's .debug_frame), found and
 * checked so that an unwinder can be given an index of them: JIT code's
 * .eh_frame, which the runtime hands to fl_jit_register (lib/table/
 * unwind.c registers the index with libunwind).
 *
 * Checked: every record's length, every CIE (version 1 or 3, an
 * augmentation of 'z' followed by 'R', 'P', 'L' and 'S' only, pointer
 * encodings an unwinder can read without a base it does not have: absolute
 * or PC-relative), every FDE's CIE pointer (a CIE before it), the code each
 * FDE covers (inside the code, no two FDEs overlapping), and the call frame
 * instructions of both (known opcodes, operands inside the record).  The
 * 64-bit DWARF format (a length of 0xffffffff) is refused: LLVM does not
 * emit it for x86-64.  A zero length ends the section (RuntimeDyld and the
 * linkers end .eh_frame with one).
 *
 * Pure: no syscalls, no state; reads only [data, data + size).
 */
#ifndef FL_FORMAT_EHFRAME_H
#define FL_FORMAT_EHFRAME_H

#include <stddef.h>
#include <stdint.h>

#include <faultline/format.h>

#define FL_EHFRAME_SECTION ".eh_frame"

/* One FDE: the code it covers, and where it is in the section. */
struct fl_eh_fde {
	uint64_t start;		/* runtime addresses: [start, end) */
	uint64_t end;
	size_t offset;		/* of its length field */
};

/*
 * Finds the FDEs of the .eh_frame section of size bytes at data, whose
 * runtime address is addr (PC-relative pointers are relative to it), each
 * of which must cover code inside [code_lo, code_hi).  FDEs that cover no
 * code (a range of 0) are left out.  Returns the number of FDEs (> 0) with
 * *out set to them sorted by start (free it), -EINVAL with *diag filled in
 * (diag may be NULL) when the section is malformed, covers code outside
 * the range, or has no FDE, or -ENOMEM.  Thread-safe; not async-signal-safe
 * (it allocates).
 */
long fl_ehframe_fdes(const void *data, size_t size, uint64_t addr, uint64_t code_lo,
		     uint64_t code_hi, struct fl_eh_fde **out, struct fl_diag *diag);

#endif /* FL_FORMAT_EHFRAME_H */
