/* SPDX-License-Identifier: MIT */
/*
 * Signal context (see dispatch.h for the rules), AArch64: what the
 * handlers read and set in the ucontext_t the kernel gives them, the same
 * functions as lib/dispatch/x86_64/uctx.h.  All inline, lock-free and
 * allocation-free.
 *
 * mcontext_t (glibc 2.36; Linux's struct sigcontext, asm/sigcontext.h):
 * fault_address, regs[31] (x29 the frame pointer, x30 the link register),
 * sp, pc, pstate, then __reserved: records { u32 magic; u32 size; ... }
 * one after the other, ending with a record of magic 0.  FPSIMD's is
 * always there; an ESR record (the exception syndrome) only for a fault
 * the kernel took on a user address; SVE's, ZA's and an EXTRA record (more
 * records elsewhere) as the task uses them.
 */
#ifndef FL_DISPATCH_UCTX_H
#define FL_DISPATCH_UCTX_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>

/* asm/sigcontext.h's record of the exception syndrome (ESR_MAGIC). */
#define FL_A64_ESR_MAGIC 0x45535201u
/* ESR_ELx: the exception class, and a data abort's write-not-read bit. */
#define FL_A64_ESR_EC(esr) ((uint32_t)((esr) >> 26) & 0x3fu)
#define FL_A64_EC_DABT_LOW 0x24u
#define FL_A64_ESR_WNR (1u << 6)

/* The interrupted program counter. */
static inline uint64_t fl_uc_pc(const ucontext_t *uc)
{
	return uc->uc_mcontext.pc;
}

/* Where the interrupted context goes on when the handler returns. */
static inline void fl_uc_set_pc(ucontext_t *uc, uint64_t pc)
{
	uc->uc_mcontext.pc = pc;
}

/* The interrupted stack pointer. */
static inline uint64_t fl_uc_sp(const ucontext_t *uc)
{
	return uc->uc_mcontext.sp;
}

/*
 * Integer argument n (0, 1, 2) of a function whose first instruction the
 * context is at: x0, x1, x2 (a handler's signal, siginfo and ucontext).
 */
static inline uint64_t fl_uc_arg(const ucontext_t *uc, int n)
{
	return uc->uc_mcontext.regs[n];
}

/*
 * The ESR record of a fault's context, into *esr: whether there is one.
 * The records are walked within __reserved only, each checked to fit.
 */
static inline bool fl_uc_esr(const ucontext_t *uc, uint64_t *esr)
{
	const unsigned char *base = (const unsigned char *)uc->uc_mcontext.__reserved;
	size_t room = sizeof(uc->uc_mcontext.__reserved), at = 0;

	while (room - at >= 8) {
		uint32_t head[2];

		memcpy(head, base + at, sizeof(head));
		if (head[0] == 0 || head[1] < 8 || head[1] > room - at || head[1] % 8)
			return false;
		if (head[0] == FL_A64_ESR_MAGIC && head[1] >= 16) {
			memcpy(esr, base + at + 8, sizeof(*esr));
			return true;
		}
		at += head[1];
	}
	return false;
}

/*
 * Whether the A64 instruction insn writes memory, of the loads and stores
 * (Arm ARM C4.1.66): the load/store register forms (immediate, unscaled,
 * register offset, pre- and post-index: a store has opc 00, and a SIMD&FP
 * one also opc 10, its 128-bit form), atomic memory operations (they
 * write), pairs and exclusives (bit 22, L, clear).  Anything else reads.
 */
static inline bool fl_a64_insn_writes(uint32_t insn)
{
	uint32_t opc = (insn >> 22) & 3, v = (insn >> 26) & 1;

	if ((insn & 0x3b000000u) == 0x38000000u) {	/* load/store register, not literal */
		/* Atomic memory operations: bit 21 set, bits 11:10 00. */
		if ((insn & 0x00200c00u) == 0x00200000u && !v)
			return true;
		return opc == 0 || (v && opc == 2);
	}
	if ((insn & 0x3b000000u) == 0x39000000u)	/* load/store register, unsigned immediate */
		return opc == 0 || (v && opc == 2);
	if ((insn & 0x3a000000u) == 0x28000000u)	/* load/store pair (all its indexings) */
		return !(insn & (1u << 22));
	if ((insn & 0x3f000000u) == 0x08000000u)	/* exclusives, load-acquire, store-release */
		return !(insn & (1u << 22));
	return false;
}

/*
 * Whether the access a SIGSEGV or SIGBUS of the kernel's reports was a
 * write: the ESR record's WnR bit for a data abort, which the kernel gives
 * for a fault on a user address; without it (qemu-user gives none), the
 * faulting instruction, at the PC, says.
 */
static inline bool fl_uc_fault_wrote(const ucontext_t *uc, const siginfo_t *si)
{
	uint64_t esr;
	uint32_t insn;

	(void)si;
	if (fl_uc_esr(uc, &esr) && FL_A64_ESR_EC(esr) == FL_A64_EC_DABT_LOW)
		return (esr & FL_A64_ESR_WNR) != 0;
	memcpy(&insn, (const void *)(uintptr_t)uc->uc_mcontext.pc, sizeof(insn));
	return fl_a64_insn_writes(insn);
}

#endif /* FL_DISPATCH_UCTX_H */
