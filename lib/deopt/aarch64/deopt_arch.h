/* SPDX-License-Identifier: MIT */
/*
 * lib/deopt's AArch64 part: what the generic files (deopt.c, walk.c,
 * location.c) ask of an architecture, under the same names as
 * lib/deopt/x86_64/deopt_arch.h (which lists them).
 *
 * DWARF numbers (FL_DWARF_A64_*): x0..x30 0..30, sp 31, v0..v31 64..95;
 * libunwind's UNW_AARCH64_* numbers are the same.  The calling convention
 * is AAPCS64: arguments in x0..x7 and v0..v7, results in x0/x1 and
 * v0..v3, x19..x28, x29 and the low 8 bytes of v8..v15 callee-saved, the
 * return address in x30 (LR) at a call.
 *
 * The layouts are the assembly's (save_regs.inc, entry.S, walk_entry.S):
 * change both together.  Only inline functions and function-local tables.
 */
#ifndef FL_DEOPT_ARCH_H
#define FL_DEOPT_ARCH_H

#include <asm/sigcontext.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>

#include <faultline/deopt.h>

#include "table/libunwind.h"

_Static_assert(sizeof(struct fpsimd_context) == 528, "asm/sigcontext.h's FPSIMD record");

/*
 * The caller's registers as __llvm_deoptimize or fl_stack_walk found them,
 * on its stack (16-byte aligned), in DWARF order: gpr[0..30] x0..x30
 * (x30 the return address: the bl set it), gpr[31] the caller's stack
 * pointer at the call; v[0..31] the whole V registers.  fl_stack_walk
 * saves v8..v15 only, and loads x19..x29 and d8..d15 back from here when
 * the walk returns.
 */
struct fl_deopt_saved {
	uint64_t gpr[32];	/* offset 0; x30 at 240, sp at 248 */
	/*
	 * 256: written by deopt.c only, never by the assembly: the cookie of
	 * the values array this deoptimization holds (values.h), a word of
	 * its frame that nothing else writes while it is under way.
	 */
	uint64_t mark;
	uint64_t pad;		/* 264 */
	uint64_t v[32][2];	/* 272: v0..v31, low 8 bytes first */
};

_Static_assert(sizeof(struct fl_deopt_saved) == 784, "save_regs.inc's layout");

/* Where fl_deopt_resume sends the thread: the deoptimized frame's caller. */
struct fl_deopt_resume {
	uint64_t x19_28[10];	/* 0..72: x19..x28 */
	uint64_t x29;		/* 80 */
	uint64_t sp;		/* 88: after the return */
	uint64_t pc;		/* 96: the return address */
	uint64_t x0, x1;	/* 104, 112 */
	uint64_t d8_15[8];	/* 120..176: the low 8 bytes of v8..v15 */
	uint64_t d0_3[4];	/* 184..208: the result's v0..v3, low 8 bytes */
};

_Static_assert(sizeof(struct fl_deopt_resume) == 216, "entry.S's layout");

/* ------------------------------------------------------------------------
 * The saved registers
 */

static inline uint64_t fl_arch_saved_ra(const struct fl_deopt_saved *sv)
{
	return sv->gpr[FL_DWARF_A64_LR];
}

static inline uint64_t fl_arch_saved_sp(const struct fl_deopt_saved *sv)
{
	return sv->gpr[FL_DWARF_A64_SP];
}

/* The deoptimized frame's registers at the call: x0..x30, sp, v0..v31. */
static inline void fl_arch_saved_frame_regs(struct fl_deopt_saved *sv, struct fl_frame_regs *regs)
{
	memset(regs, 0, sizeof(*regs));
	for (int i = 0; i <= FL_DWARF_A64_SP; i++)
		regs->at[i] = &sv->gpr[i];
	for (int i = 0; i < 32; i++)
		regs->at[FL_DWARF_A64_V0 + i] = sv->v[i];
}

/* The intrinsic's own arguments (AAPCS64): x0..x7, d0..d7, the stack at sp. */
static inline void fl_arch_saved_args(const struct fl_deopt_saved *sv, struct fl_deopt_state *st)
{
	for (int i = 0; i < FL_DEOPT_INT_ARGS; i++)
		st->int_args[i] = sv->gpr[i];
	for (int i = 0; i < FL_DEOPT_FP_ARGS; i++)
		st->xmm_args[i].bits = sv->v[i][0];
	st->stack_args = (const uint64_t *)(uintptr_t)sv->gpr[FL_DWARF_A64_SP];
}

/*
 * The FPSIMD record of a context's __reserved area (arch/arm64/include/
 * uapi/asm/sigcontext.h: a list of {magic, size} records ending with a
 * zero magic; the kernel's signal frame always has FPSIMD first), or NULL.
 */
static inline struct fpsimd_context *fl_arch_fpsimd(ucontext_t *uc)
{
	struct fpsimd_context *f = (struct fpsimd_context *)(void *)uc->uc_mcontext.__reserved;

	return f->head.magic == FPSIMD_MAGIC && f->head.size == sizeof(*f) ? f : NULL;
}

/*
 * A context for libunwind: the caller's registers as if captured at the
 * call, its pc the return address pc.  libunwind 1.6.2's unw_context_t on
 * AArch64 Linux is a ucontext_t cut short (libunwind-aarch64.h): the same
 * fields up to __reserved, which holds only an FPSIMD record, where it
 * reads the V registers from.
 */
static inline void fl_arch_saved_context(const struct fl_deopt_saved *sv, uint64_t pc,
					 unw_context_t *uc)
{
	unw_fpsimd_context_t *f = (unw_fpsimd_context_t *)(void *)uc->uc_mcontext.__reserved;

	_Static_assert(sizeof(uc->uc_mcontext.__reserved) >= sizeof(*f), "libunwind's context");
	memset(uc, 0, sizeof(*uc));
	for (int i = 0; i < 31; i++)
		uc->uc_mcontext.regs[i] = sv->gpr[i];
	uc->uc_mcontext.sp = sv->gpr[FL_DWARF_A64_SP];
	uc->uc_mcontext.pc = pc;
	f->_ctx_magic = FPSIMD_MAGIC;
	f->_ctx_size = sizeof(struct fpsimd_context);
	memcpy(f->vregs, sv->v, sizeof(f->vregs));
}

/*
 * An address inside the call (bl) whose return address is ra: the bl
 * itself, 4 bytes before (the call may end its function: ra is then past
 * its end).
 */
static inline uint64_t fl_arch_call_pc(uint64_t ra)
{
	return ra - 4;
}

/* ------------------------------------------------------------------------
 * The deoptimized frame's return
 */

struct fl_arch_resume_reg {
	int unw_reg;
	size_t off;
	bool fp;
};

/* x19..x28, x29, and d8..d15 (floating-point: read by their save location). */
static inline const struct fl_arch_resume_reg *fl_arch_resume_callee_saved(size_t *n)
{
#define X(i) { UNW_AARCH64_X19 + (i), offsetof(struct fl_deopt_resume, x19_28) + 8 * (i), false }
#define D(i) { UNW_AARCH64_V8 + (i), offsetof(struct fl_deopt_resume, d8_15) + 8 * (i), true }
	static const struct fl_arch_resume_reg regs[] = {
		X(0), X(1), X(2), X(3), X(4), X(5), X(6), X(7), X(8), X(9),
		{ UNW_AARCH64_X29, offsetof(struct fl_deopt_resume, x29), false },
		D(0), D(1), D(2), D(3), D(4), D(5), D(6), D(7),
	};
#undef X
#undef D

	*n = sizeof(regs) / sizeof(regs[0]);
	return regs;
}

static inline void fl_arch_resume_to(struct fl_deopt_resume *r, uint64_t pc, uint64_t sp)
{
	r->pc = pc;
	r->sp = sp;
}

static inline void fl_arch_resume_return(struct fl_deopt_resume *r, const struct fl_deopt_return *ret)
{
	r->x0 = ret->x0;
	r->x1 = ret->x1;
	r->d0_3[0] = ret->d0.bits;
	r->d0_3[1] = ret->d1.bits;
	r->d0_3[2] = ret->d2.bits;
	r->d0_3[3] = ret->d3.bits;
}

/* ------------------------------------------------------------------------
 * Stack walks
 */

/*
 * The callee-saved registers by DWARF number: x19..x28, x29, v8..v15
 * (their low 8 bytes).  libunwind's numbers are DWARF's.
 */
static inline const int *fl_arch_callee_saved(size_t *n)
{
	static const int regs[] = {
		19, 20, 21, 22, 23, 24, 25, 26, 27, 28, FL_DWARF_A64_FP,
		FL_DWARF_A64_V0 + 8, FL_DWARF_A64_V0 + 9, FL_DWARF_A64_V0 + 10,
		FL_DWARF_A64_V0 + 11, FL_DWARF_A64_V0 + 12, FL_DWARF_A64_V0 + 13,
		FL_DWARF_A64_V0 + 14, FL_DWARF_A64_V0 + 15,
	};

	*n = sizeof(regs) / sizeof(regs[0]);
	return regs;
}

/* A callee-saved register's 8 bytes in the saved registers, by DWARF number. */
static inline uint64_t *fl_arch_saved_reg(struct fl_deopt_saved *sv, int dwarf)
{
	return dwarf < FL_DWARF_A64_V0 ? &sv->gpr[dwarf] : &sv->v[dwarf - FL_DWARF_A64_V0][0];
}

/* Its storage in a context built by fl_arch_saved_context. */
static inline uint64_t *fl_arch_context_reg(unw_context_t *uc, int dwarf)
{
	unw_fpsimd_context_t *f = (unw_fpsimd_context_t *)(void *)uc->uc_mcontext.__reserved;

	if (dwarf < FL_DWARF_A64_V0)
		return (uint64_t *)&uc->uc_mcontext.regs[dwarf];
	return &f->vregs[2 * (dwarf - FL_DWARF_A64_V0)];
}

/*
 * Whether libunwind gives no save location (UNW_SLT_NONE) for a
 * callee-saved register that no frame saved, whose value is then the
 * start context's: on AArch64 the V registers (libunwind 1.6.2 starts
 * them with no location, and gives one only where a frame's CFI saves
 * one); x19..x29 point into the context.
 */
static inline bool fl_arch_unsaved_in_context(int dwarf)
{
	return dwarf >= FL_DWARF_A64_V0;
}

/*
 * Whether uc is the context the kernel gave a signal handler, as
 * arch/arm64/kernel/signal.c lays out its signal frame (lib/dispatch/
 * aarch64/frame.c has the whole of it): uc_flags and uc_link zero,
 * __reserved a list of records that starts with the FPSIMD one (always
 * there) and ends with a zero magic, and right above the frame (above the
 * ucontext, or above an EXTRA record's area) the frame record { x29, x30 }
 * of the interrupted code, which the handler's x29 points at.  A copy of
 * the context or a getcontext one has the records, but not the frame
 * record above it (their x29 and x30 are not the next 16 bytes).  Reads
 * those 16 bytes: a context passed as a signal handler's must be one.
 */
static inline bool fl_arch_signal_from_kernel(const ucontext_t *uc)
{
	const unsigned char *p = uc->uc_mcontext.__reserved;
	size_t off = 0, room = sizeof(uc->uc_mcontext.__reserved);
	uintptr_t above = (uintptr_t)uc + sizeof(*uc);
	uint64_t record[2];

	if (uc->uc_flags || uc->uc_link || !fl_arch_fpsimd((ucontext_t *)(uintptr_t)uc))
		return false;
	for (;;) {
		struct _aarch64_ctx h;

		if (off + sizeof(h) > room)
			return false;
		memcpy(&h, p + off, sizeof(h));
		if (h.magic == 0) {
			if (h.size != 0)
				return false;
			break;
		}
		if (h.size < sizeof(h) || h.size % 16 || h.size > room - off)
			return false;
		if (h.magic == EXTRA_MAGIC && h.size >= sizeof(struct extra_context)) {
			struct extra_context x;

			memcpy(&x, p + off, sizeof(x));
			above = ((uintptr_t)x.datap + x.size + 15) & ~(uintptr_t)15;
		}
		off += h.size;
	}
	memcpy(record, (const void *)above, sizeof(record));
	return record[0] == uc->uc_mcontext.regs[29] && record[1] == uc->uc_mcontext.regs[30];
}

/*
 * The interrupted frame's registers, all in the signal context: x0..x30
 * and v0..v31 (the stack pointer is the walk's copy, set after).
 */
static inline void fl_arch_signal_regs(ucontext_t *uc, struct fl_frame_regs *regs)
{
	struct fpsimd_context *f = fl_arch_fpsimd(uc);

	for (int i = 0; i < 31; i++)
		regs->at[i] = &uc->uc_mcontext.regs[i];
	for (int i = 0; f && i < 32; i++)
		regs->at[FL_DWARF_A64_V0 + i] = &f->vregs[i];
}

/*
 * Every frame's stack pointer, and but in a frame a signal interrupted
 * (whose LR is the context's) its LR, which holds the return address at
 * the call: the walk's copies (writing them changes nothing).
 */
static inline void fl_arch_frame_sp_pc(struct fl_frame_regs *regs, uint64_t *sp, uint64_t *pc,
				       bool signal_top)
{
	regs->at[FL_DWARF_A64_SP] = sp;
	if (!signal_top)
		regs->at[FL_DWARF_A64_LR] = pc;
}

/* ------------------------------------------------------------------------
 * DWARF registers
 */

static inline const char *fl_arch_reg_name(unsigned reg)
{
	static const char *const x[32] = {
		"x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10",
		"x11", "x12", "x13", "x14", "x15", "x16", "x17", "x18", "x19", "x20",
		"x21", "x22", "x23", "x24", "x25", "x26", "x27", "x28", "x29", "x30", "sp",
	};
	static const char *const v[32] = {
		"v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10",
		"v11", "v12", "v13", "v14", "v15", "v16", "v17", "v18", "v19", "v20",
		"v21", "v22", "v23", "v24", "v25", "v26", "v27", "v28", "v29", "v30", "v31",
	};

	if (reg < 32)
		return x[reg];
	if (reg >= FL_DWARF_A64_V0 && reg < FL_DWARF_REGS)
		return v[reg - FL_DWARF_A64_V0];
	return "?";
}

static inline bool fl_arch_reg_is_vector(unsigned reg)
{
	return reg >= FL_DWARF_A64_V0 && reg < FL_DWARF_REGS;
}

#endif /* FL_DEOPT_ARCH_H */
