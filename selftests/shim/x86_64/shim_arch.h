/* SPDX-License-Identifier: MIT */
/*
 * What the shim's test programs know of the architecture, x86-64 (the same
 * names in selftests/shim/ARCH/shim_arch.h for every architecture): the
 * probes, a trap instruction, the signal context's registers, and where
 * the kernel puts a signal frame.
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
	".globl probe_load\n.type probe_load,@function\n"		\
	"probe_load:\n\tmovl (%rdi), %eax\n"				\
	".globl probe_load_end\nprobe_load_end:\n\tret\n"		\
	".size probe_load, .-probe_load\n"				\
	".globl probe_store\n.type probe_store,@function\n"		\
	"probe_store:\n\tmovl %esi, (%rdi)\n"				\
	".globl probe_store_end\nprobe_store_end:\n\tret\n"		\
	".size probe_store, .-probe_store\n"

/* A breakpoint trap (SIGTRAP); the kernel resumes after it. */
#define SHIM_TRAP() __asm__ volatile("int3")
/* The flags a SIGTRAP handler needs besides the case's: none, the PC moved on. */
#define SHIM_TRAP_FLAGS 0
/* Steps over the trap a SIGTRAP handler was given (x86-64: nothing to do). */
static inline void shim_after_trap(void *ucv)
{
	(void)ucv;
}

/* glibc has sigvec for programs linked before 2.21, at GLIBC_2.2.5. */
#define SHIM_HAS_SIGVEC 1
#define SHIM_SIGVEC_SYMVER ".symver old_sigvec, sigvec@GLIBC_2.2.5"

/* The red zone below the interrupted stack pointer that a frame skips. */
#define SHIM_RED_ZONE 128

static inline uintptr_t shim_uc_pc(const ucontext_t *uc)
{
	return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
}

static inline void shim_uc_set_pc(ucontext_t *uc, uintptr_t pc)
{
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)pc;
}

static inline uintptr_t shim_uc_sp(const ucontext_t *uc)
{
	return (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
}

static inline void shim_uc_set_return(ucontext_t *uc, long v)
{
	uc->uc_mcontext.gregs[REG_RAX] = v;
}

/* Whether the fault wrote (the error code's bit 1). */
static inline int shim_uc_wrote(const ucontext_t *uc)
{
	return (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0;
}

/* The trap's number (REG_TRAPNO: 14 a page fault, 3 int3). */
static inline int shim_uc_trapno(const ucontext_t *uc)
{
	return (int)uc->uc_mcontext.gregs[REG_TRAPNO];
}

/* Where the frame's FP state is, from the ucontext. */
static inline intptr_t shim_uc_fp_offset(const ucontext_t *uc)
{
	return (intptr_t)((uintptr_t)uc->uc_mcontext.fpregs - (uintptr_t)uc);
}

/*
 * The kernel's x86-64 frame below top (get_sigframe: the xsave area
 * rounded down to 64 bytes, then struct rt_sigframe, 440 bytes, at
 * round_down(sp, 16) - 8; its ucontext 8 bytes in): where the ucontext
 * is.  The xsave area's size is the extended_size of its software
 * bytes, or 512 without xsave.
 */
static inline uintptr_t shim_kernel_uc_below(uintptr_t top, const ucontext_t *uc)
{
	uint32_t sw[2];
	uintptr_t fp;

	memcpy(sw, (const char *)uc->uc_mcontext.fpregs + 464, sizeof(sw));
	fp = (top - (sw[0] == 0x46505853u ? sw[1] : 512)) & ~(uintptr_t)63;
	return ((fp - 440) & ~(uintptr_t)15);
}

#endif /* FL_SHIM_ARCH_H */
