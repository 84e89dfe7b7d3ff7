/* SPDX-License-Identifier: MIT */
/*
 * JIT code's unwind information, made visible to libunwind (unwind.c):
 * the .eh_frame the runtime gave fl_jit_register, indexed at registration
 * and registered with libunwind's dynamic registration (_U_dyn_register)
 * for as long as the module is registered.  Owned by the module (struct
 * fl_table_mod), like its stack map index.
 *
 * Loaded ELF modules need none of this: libunwind finds their .eh_frame
 * itself (dl_iterate_phdr, PT_GNU_EH_FRAME).  JIT code's is registered by
 * MCJIT with libgcc's __register_frame, which libunwind does not see, so
 * without this every unwind through JIT code (the deoptimization entry's
 * one frame, a stack walk, a profiler using libunwind) stops there.
 */
#ifndef FL_TABLE_UNWIND_H
#define FL_TABLE_UNWIND_H

#include <stddef.h>
#include <stdint.h>

struct fl_diag;
struct fl_jit_reg;

struct fl_unwind;

/*
 * The index of reg's .eh_frame (reg->eh_frame, reg->eh_frame_size): every
 * FDE checked (format/ehframe.h) and inside [reg->code_start, +
 * reg->code_size).  Returns 0 with *out set (NULL: reg has no .eh_frame),
 * -EINVAL with *diag filled in, or -ENOMEM.  Registers nothing.
 */
int fl_unwind_of_jit(const struct fl_jit_reg *reg, struct fl_unwind **out,
		     struct fl_diag *diag);

/*
 * The index of the .eh_frame of size bytes at eh_frame (at its runtime
 * address, which must stay mapped until fl_unwind_free): every FDE checked
 * (format/ehframe.h) and inside [code_lo, code_hi), all within 2 GiB of
 * eh_frame; name is what libunwind calls the code.  Returns 0 with *out
 * set, -EINVAL with *diag filled in, or -ENOMEM.  Registers nothing.
 */
int fl_unwind_of_ehframe(const void *eh_frame, size_t size, uint64_t code_lo,
			 uint64_t code_hi, const char *name, struct fl_unwind **out,
			 struct fl_diag *diag);

/* [*lo, *hi): the code u's FDEs cover, from the first to the end of the last. */
void fl_unwind_span(const struct fl_unwind *u, uint64_t *lo, uint64_t *hi);

/*
 * Registers u with libunwind (u NULL: nothing): from now on libunwind
 * unwinds through the code.  Returns 0 or -ENOMEM.  Under the lock of
 * u's owner (the table's for JIT code).
 */
int fl_unwind_register(struct fl_unwind *u);

/*
 * Cancels u's registration if it is registered, then frees it (NULL:
 * nothing).  When it returns libunwind no longer finds the code's unwind
 * information, and nothing it cached of the code is used again.  Under the
 * lock of u's owner when u is registered.
 */
void fl_unwind_free(struct fl_unwind *u);

#endif /* FL_TABLE_UNWIND_H */
