/* SPDX-License-Identifier: MIT */
/*
 * Signal context (see dispatch.h for the rules), x86-64: what the handlers
 * read and set in the ucontext_t the kernel gives them.  Every other
 * architecture has the same functions in its own directory
 * (lib/dispatch/ARCH/uctx.h, picked by the Makefile's ARCH).  All of them
 * are inline, lock-free and allocation-free.
 */
#ifndef FL_DISPATCH_UCTX_H
#define FL_DISPATCH_UCTX_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <ucontext.h>

/* The interrupted program counter. */
static inline uint64_t fl_uc_pc(const ucontext_t *uc)
{
	return (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
}

/* Where the interrupted context goes on when the handler returns. */
static inline void fl_uc_set_pc(ucontext_t *uc, uint64_t pc)
{
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)pc;
}

/* The interrupted stack pointer. */
static inline uint64_t fl_uc_sp(const ucontext_t *uc)
{
	return (uint64_t)uc->uc_mcontext.gregs[REG_RSP];
}

/*
 * Integer argument n (0, 1, 2) of a function whose first instruction the
 * context is at: rdi, rsi, rdx (a handler's signal, siginfo and ucontext).
 */
static inline uint64_t fl_uc_arg(const ucontext_t *uc, int n)
{
	static const int regs[3] = { REG_RDI, REG_RSI, REG_RDX };

	return (uint64_t)uc->uc_mcontext.gregs[regs[n]];
}

/*
 * Whether the access a SIGSEGV or SIGBUS of the kernel's reports was a
 * write: bit 1 of the page fault's error code (REG_ERR).
 */
static inline bool fl_uc_fault_wrote(const ucontext_t *uc, const siginfo_t *si)
{
	(void)si;
	return (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0;
}

#endif /* FL_DISPATCH_UCTX_H */
