/* SPDX-License-Identifier: MIT */
/*
 * Internal to lib/deopt/: what the assembly entries and their C sides
 * share: __llvm_deoptimize (entry.S) and a deoptimization (deopt.c),
 * fl_stack_walk (walk_entry.S) and the walk (walk.c).  The layouts are the
 * assembly's (save_gprs.inc): change both together.
 */
#ifndef FL_DEOPT_ENTRY_H
#define FL_DEOPT_ENTRY_H

#include <stdint.h>

#include <faultline/deopt.h>

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

/* deopt.c: called by __llvm_deoptimize with its saved registers. */
void fl_deopt_enter(struct fl_deopt_saved *saved) __attribute__((noreturn));

/* entry.S: loads r's registers, its stack pointer, and jumps to r->rip. */
void fl_deopt_resume(const struct fl_deopt_resume *r) __attribute__((noreturn));

/* walk.c: the walk, called by fl_stack_walk with its caller's registers. */
int fl_walk_enter(struct fl_deopt_saved *saved, const struct fl_walk_start *start,
		  fl_walk_fn fn, void *ctx);

#endif /* FL_DEOPT_ENTRY_H */
