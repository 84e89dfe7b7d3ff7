/* SPDX-License-Identifier: MIT */
/*
 * What the shim's test programs know of the architecture, AArch64 (the
 * same names in selftests/shim/ARCH/shim_arch.h for every architecture):
 * the probes, a trap instruction, the signal context's registers, and
 * where the kernel puts a signal frame.
 */
#ifndef FL_SHIM_ARCH_H
#define FL_SHIM_ARCH_H

#include <stdint.h>
#include <string.h>
#include <ucontext.h>

/*
 * probe_load(p) returns *p, probe_store(p, x) stores x; a handler that
 * finds the PC at one of them resumes at the matching *_end label (the
 * ret), with the return register 42 for a load.
 */
#define SHIM_PROBES_ASM							\
	".text\n"							\
	".globl probe_load\n.type probe_load,%function\n"		\
	"probe_load:\n\tldr w0, [x0]\n"					\
	".globl probe_load_end\nprobe_load_end:\n\tret\n"		\
	".size probe_load, .-probe_load\n"				\
	".globl probe_store\n.type probe_store,%function\n"		\
	"probe_store:\n\tstr w1, [x0]\n"				\
	".globl probe_store_end\nprobe_store_end:\n\tret\n"		\
	".size probe_store, .-probe_store\n"

/* A breakpoint trap (SIGTRAP); the PC stays at it: the handler steps over. */
#define SHIM_TRAP() __asm__ volatile("brk #0x7")
/* A SIGTRAP handler needs its context to step over the BRK. */
#define SHIM_TRAP_FLAGS SA_SIGINFO
static inline void shim_after_trap(void *ucv)
{
	ucontext_t *uc = ucv;
	uint32_t insn;

	memcpy(&insn, (const void *)(uintptr_t)uc->uc_mcontext.pc, sizeof(insn));
	if ((insn & 0xffe0001fu) == 0xd4200000u)	/* brk #imm */
		uc->uc_mcontext.pc += 4;
}

/* No sigvec: glibc's AArch64 port began after it was gone. */
#define SHIM_HAS_SIGVEC 0

/* AAPCS64 has no red zone. */
#define SHIM_RED_ZONE 0

static inline uintptr_t shim_uc_pc(const ucontext_t *uc)
{
	return (uintptr_t)uc->uc_mcontext.pc;
}

static inline void shim_uc_set_pc(ucontext_t *uc, uintptr_t pc)
{
	uc->uc_mcontext.pc = pc;
}

static inline uintptr_t shim_uc_sp(const ucontext_t *uc)
{
	return (uintptr_t)uc->uc_mcontext.sp;
}

static inline void shim_uc_set_return(ucontext_t *uc, long v)
{
	uc->uc_mcontext.regs[0] = (unsigned long)v;
}

/* The ESR record's syndrome, or 0 (qemu-user gives none). */
static inline uint64_t shim_uc_esr(const ucontext_t *uc)
{
	const unsigned char *p = (const unsigned char *)uc->uc_mcontext.__reserved;
	size_t at = 0, room = sizeof(uc->uc_mcontext.__reserved);

	while (room - at >= 16) {
		uint32_t head[2];
		uint64_t esr;

		memcpy(head, p + at, sizeof(head));
		if (!head[0] || head[1] < 8 || head[1] > room - at)
			return 0;
		if (head[0] == 0x45535201u) {
			memcpy(&esr, p + at + 8, sizeof(esr));
			return esr;
		}
		at += head[1];
	}
	return 0;
}

/* Whether the fault wrote (the ESR's WnR bit; 0 without one). */
static inline int shim_uc_wrote(const ucontext_t *uc)
{
	return (shim_uc_esr(uc) >> 6) & 1;
}

/* The exception class (ESR_ELx.EC: 0x24 a data abort, 0x3c a BRK), or 0. */
static inline int shim_uc_trapno(const ucontext_t *uc)
{
	return (int)(shim_uc_esr(uc) >> 26) & 0x3f;
}

/* Where the frame's FP state is (its records, in the ucontext itself). */
static inline intptr_t shim_uc_fp_offset(const ucontext_t *uc)
{
	return (intptr_t)((uintptr_t)uc->uc_mcontext.__reserved - (uintptr_t)uc);
}

/*
 * The kernel's arm64 frame below top (get_sigframe: a frame record at
 * round_down(top - 16, 16), struct rt_sigframe, 4688 bytes, right below
 * it; its ucontext 128 bytes in, after the siginfo): where the ucontext is.
 */
static inline uintptr_t shim_kernel_uc_below(uintptr_t top, const ucontext_t *uc)
{
	(void)uc;
	return ((top - 16) & ~(uintptr_t)15) - 4688 + 128;
}

#endif /* FL_SHIM_ARCH_H */
