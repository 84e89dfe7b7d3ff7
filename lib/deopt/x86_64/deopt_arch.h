/* SPDX-License-Identifier: MIT */
/*
 * lib/deopt's x86-64 part: what the generic files (deopt.c, walk.c,
 * location.c) ask of an architecture, under the same names in each
 * architecture's directory (lib/deopt/aarch64/deopt_arch.h is the other).
 *
 *   struct fl_deopt_saved     the caller's registers, as the entries
 *                             (entry.S, walk_entry.S) save them
 *   struct fl_deopt_resume    what fl_deopt_resume loads (entry.S)
 *   fl_arch_saved_*           reading the saved registers: the return
 *                             address, the frame's registers, the
 *                             intrinsic's arguments, a context for libunwind
 *   fl_arch_call_pc           an address inside the call of a return address
 *   fl_arch_resume_*          the deoptimized frame's return
 *   fl_arch_signal_*          a signal handler's context
 *   fl_arch_callee_saved      the registers a frame keeps across its calls
 *   fl_arch_reg_*             DWARF registers: names, vector registers
 *
 * The layouts are the assembly's (save_gprs.inc, entry.S, walk_entry.S):
 * change both together.  Only inline functions and function-local tables:
 * each file that includes this uses a part of it.
 */
#ifndef FL_DEOPT_ARCH_H
#define FL_DEOPT_ARCH_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>

#include <faultline/deopt.h>

#include "table/libunwind.h"

/*
 * The caller's registers as __llvm_deoptimize or fl_stack_walk found them,
 * on its stack (16-byte aligned).  gpr in DWARF order (FL_DWARF_*):
 * gpr[FL_DWARF_RSP] is the caller's stack pointer at the call (before the
 * call pushed the return address), gpr[FL_DWARF_RA] the return address.
 * fl_stack_walk leaves xmm unset, and loads the callee-saved registers
 * back from gpr when the walk returns.
 */
struct fl_deopt_saved {
	uint64_t gpr[17];	/* offset 0 */
	/*
	 * 136: written by deopt.c only, never by the assembly: the cookie of
	 * the values array this deoptimization holds (values.h), a word of
	 * its frame that nothing else writes while it is under way.
	 */
	uint64_t mark;
	uint64_t xmm[8][2];	/* 144: xmm0..xmm7 */
};

_Static_assert(sizeof(struct fl_deopt_saved) == 272, "entry.S's layout");

/* Where fl_deopt_resume sends the thread: the deoptimized frame's caller. */
struct fl_deopt_resume {
	uint64_t rbx, rbp, r12, r13, r14, r15;	/* 0..40: callee-saved */
	uint64_t rsp;				/* 48: after the return */
	uint64_t rip;				/* 56: the return address */
	uint64_t rax, rdx;			/* 64, 72 */
	uint64_t xmm0, xmm1;			/* 80, 88: the low 8 bytes */
};

_Static_assert(sizeof(struct fl_deopt_resume) == 96, "entry.S's layout");

/* ------------------------------------------------------------------------
 * The saved registers
 */

/* The return address of the call (the site): the stack map record's address. */
static inline uint64_t fl_arch_saved_ra(const struct fl_deopt_saved *sv)
{
	return sv->gpr[FL_DWARF_RA];
}

/* The caller's stack pointer at the call. */
static inline uint64_t fl_arch_saved_sp(const struct fl_deopt_saved *sv)
{
	return sv->gpr[FL_DWARF_RSP];
}

/*
 * The registers of the deoptimized frame at the call, for the deopt values:
 * the general registers, the return address and xmm0..xmm7, where the
 * entry saved them.
 */
static inline void fl_arch_saved_frame_regs(struct fl_deopt_saved *sv, struct fl_frame_regs *regs)
{
	memset(regs, 0, sizeof(*regs));
	for (int i = 0; i <= FL_DWARF_RA; i++)
		regs->at[i] = &sv->gpr[i];
	for (int i = 0; i < 8; i++)
		regs->at[FL_DWARF_XMM0 + i] = sv->xmm[i];
}

/*
 * The intrinsic's own arguments, as the SysV calling convention passed
 * them: rdi, rsi, rdx, rcx, r8, r9; xmm0..xmm7; the stack from the caller's
 * stack pointer at the call.
 */
static inline void fl_arch_saved_args(const struct fl_deopt_saved *sv, struct fl_deopt_state *st)
{
	static const int int_arg_regs[FL_DEOPT_INT_ARGS] = {
		FL_DWARF_RDI, FL_DWARF_RSI, FL_DWARF_RDX, FL_DWARF_RCX, FL_DWARF_R8, FL_DWARF_R9,
	};

	for (int i = 0; i < FL_DEOPT_INT_ARGS; i++)
		st->int_args[i] = sv->gpr[int_arg_regs[i]];
	for (int i = 0; i < FL_DEOPT_FP_ARGS; i++)
		st->xmm_args[i].bits = sv->xmm[i][0];
	st->stack_args = (const uint64_t *)(uintptr_t)sv->gpr[FL_DWARF_RSP];
}

/* Where the general registers are in a ucontext_t, by DWARF number (0..15). */
static inline int fl_arch_greg_of(int dwarf)
{
	static const int greg_of[16] = {
		REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI, REG_RBP, REG_RSP,
		REG_R8, REG_R9, REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15,
	};

	return greg_of[dwarf];
}

/*
 * A context for libunwind (unw_context_t is a ucontext_t on x86-64): the
 * caller's registers as if captured at the call, its pc the return
 * address pc.
 */
static inline void fl_arch_saved_context(const struct fl_deopt_saved *sv, uint64_t pc,
					 unw_context_t *uc)
{
	memset(uc, 0, sizeof(*uc));
	for (int i = 0; i < 16; i++)
		uc->uc_mcontext.gregs[fl_arch_greg_of(i)] = (greg_t)sv->gpr[i];
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)pc;
}

/*
 * An address inside the call whose return address is ra, to find the call's
 * function by (the call may end its function: ra is then past its end).
 */
static inline uint64_t fl_arch_call_pc(uint64_t ra)
{
	return ra - 1;
}

/* ------------------------------------------------------------------------
 * The deoptimized frame's return
 */

/*
 * The callee-saved registers fl_deopt_resume loads, each with libunwind's
 * number, its offset in struct fl_deopt_resume (8 bytes) and whether it
 * is a floating-point register (its low 8 bytes); *n is their number.
 */
struct fl_arch_resume_reg {
	int unw_reg;
	size_t off;
	bool fp;
};

static inline const struct fl_arch_resume_reg *fl_arch_resume_callee_saved(size_t *n)
{
	static const struct fl_arch_resume_reg regs[] = {
		{ UNW_X86_64_RBX, offsetof(struct fl_deopt_resume, rbx) },
		{ UNW_X86_64_RBP, offsetof(struct fl_deopt_resume, rbp) },
		{ UNW_X86_64_R12, offsetof(struct fl_deopt_resume, r12) },
		{ UNW_X86_64_R13, offsetof(struct fl_deopt_resume, r13) },
		{ UNW_X86_64_R14, offsetof(struct fl_deopt_resume, r14) },
		{ UNW_X86_64_R15, offsetof(struct fl_deopt_resume, r15) },
	};

	*n = sizeof(regs) / sizeof(regs[0]);
	return regs;
}

/* The caller's pc (the frame's return address) and its stack pointer after the return. */
static inline void fl_arch_resume_to(struct fl_deopt_resume *r, uint64_t pc, uint64_t sp)
{
	r->rip = pc;
	r->rsp = sp;
}

/* The handler's return value, into the registers the function returns in. */
static inline void fl_arch_resume_return(struct fl_deopt_resume *r, const struct fl_deopt_return *ret)
{
	r->rax = ret->rax;
	r->rdx = ret->rdx;
	r->xmm0 = ret->xmm0.bits;
	r->xmm1 = ret->xmm1.bits;
}

/* ------------------------------------------------------------------------
 * Stack walks
 */

/*
 * The callee-saved registers by DWARF number (*n of them): a frame at a
 * call keeps its values in these.  libunwind numbers x86-64's registers
 * as DWARF does (unw_get_save_loc takes these numbers).
 */
static inline const int *fl_arch_callee_saved(size_t *n)
{
	static const int regs[] = {
		FL_DWARF_RBX, FL_DWARF_RBP, FL_DWARF_R12, FL_DWARF_R13, FL_DWARF_R14, FL_DWARF_R15,
	};

	*n = sizeof(regs) / sizeof(regs[0]);
	return regs;
}

/* A callee-saved register's value in the saved registers, by DWARF number. */
static inline uint64_t *fl_arch_saved_reg(struct fl_deopt_saved *sv, int dwarf)
{
	return &sv->gpr[dwarf];
}

/* Its storage in a context built by fl_arch_saved_context. */
static inline uint64_t *fl_arch_context_reg(unw_context_t *uc, int dwarf)
{
	return (uint64_t *)&uc->uc_mcontext.gregs[fl_arch_greg_of(dwarf)];
}

/*
 * Whether libunwind gives no save location (UNW_SLT_NONE) for a
 * callee-saved register that no frame saved, whose value is then the
 * start context's: none on x86-64 (it points into the context), where
 * NONE means unknown (past a frame stepped over by a guess).
 */
static inline bool fl_arch_unsaved_in_context(int dwarf)
{
	(void)dwarf;
	return false;
}

/*
 * Whether uc is the context the kernel gave a signal handler, as
 * arch/x86/kernel/signal_64.c lays out its signal frame: every frame's
 * uc_flags has UC_SIGCONTEXT_SS (Linux 4.6 and later), and its FP state,
 * which uc_mcontext.fpregs points at, follows the frame: the kernel's
 * ucontext (whose signal mask is 8 bytes, not glibc's 128) and the
 * siginfo, rounded up to the FP state's 64-byte alignment.  getcontext's
 * context has no flags and points at its own __fpregs_mem; a copy of the
 * kernel's points back at the original's FP state, far from the copy.
 */
static inline bool fl_arch_signal_from_kernel(const ucontext_t *uc)
{
	const unsigned long uc_sigcontext_ss = 0x2;
	uintptr_t fp = (uintptr_t)uc->uc_mcontext.fpregs;
	uintptr_t end = (uintptr_t)uc + offsetof(ucontext_t, uc_sigmask) + 8 + sizeof(siginfo_t);

	return (uc->uc_flags & uc_sigcontext_ss) && fp >= end && fp - end < 64;
}

/*
 * The interrupted frame's registers, all in the signal context: the
 * general registers and xmm0..xmm15 (the stack pointer and the pc are the
 * walk's copies, set after).
 */
static inline void fl_arch_signal_regs(ucontext_t *uc, struct fl_frame_regs *regs)
{
	for (int i = 0; i < 16; i++)
		regs->at[i] = &uc->uc_mcontext.gregs[fl_arch_greg_of(i)];
	for (int i = 0; i < 16; i++)
		regs->at[FL_DWARF_XMM0 + i] = uc->uc_mcontext.fpregs->_xmm[i].element;
}

/*
 * Every frame's stack pointer and return address, where the walk keeps
 * copies of them (writing them changes nothing).  signal_top: the frame
 * interrupted by a signal, whose registers are the context's.
 */
static inline void fl_arch_frame_sp_pc(struct fl_frame_regs *regs, uint64_t *sp, uint64_t *pc,
				       bool signal_top)
{
	(void)signal_top;
	regs->at[FL_DWARF_RSP] = sp;
	regs->at[FL_DWARF_RA] = pc;
}

/* ------------------------------------------------------------------------
 * DWARF registers
 */

/* A register's name in messages, or "?". */
static inline const char *fl_arch_reg_name(unsigned reg)
{
	static const char *const names[FL_DWARF_REGS] = {
		"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
		"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "ra",
		"xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
		"xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15",
	};

	return reg < FL_DWARF_REGS ? names[reg] : "?";
}

/*
 * Whether reg is a vector register, whose Register locations llc-14 gives
 * the register's size (16) for a float or a double kept in its low bytes.
 */
static inline bool fl_arch_reg_is_vector(unsigned reg)
{
	return reg >= FL_DWARF_XMM0 && reg < FL_DWARF_REGS;
}

#endif /* FL_DEOPT_ARCH_H */
