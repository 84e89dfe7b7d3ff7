/* SPDX-License-Identifier: MIT */
/*
 * Internal to lib/deopt/: what the assembly entries and their C sides
 * share: __llvm_deoptimize (ARCH/entry.S) and a deoptimization (deopt.c),
 * fl_stack_walk (ARCH/walk_entry.S) and the walk (walk.c).
 */
#ifndef FL_DEOPT_ENTRY_H
#define FL_DEOPT_ENTRY_H

#include <stdint.h>

#include <faultline/deopt.h>

/*
 * struct fl_deopt_saved (the caller's registers, as the entries save them)
 * and struct fl_deopt_resume (what fl_deopt_resume loads) are the
 * architecture's: lib/deopt/ARCH/deopt_arch.h, with what the generic
 * files ask of them.
 */
#include "deopt_arch.h"

/* deopt.c: called by __llvm_deoptimize with its saved registers. */
void fl_deopt_enter(struct fl_deopt_saved *saved) __attribute__((noreturn));

/* ARCH/entry.S: loads r's registers, its stack pointer, and jumps to its pc. */
void fl_deopt_resume(const struct fl_deopt_resume *r) __attribute__((noreturn));

/* walk.c: the walk, called by fl_stack_walk with its caller's registers. */
int fl_walk_enter(struct fl_deopt_saved *saved, const struct fl_walk_start *start,
		  fl_walk_fn fn, void *ctx);

#endif /* FL_DEOPT_ENTRY_H */
