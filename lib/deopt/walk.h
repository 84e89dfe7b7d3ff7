/* SPDX-License-Identifier: MIT */
/*
 * Internal to lib/deopt/: what fl_stack_walk's assembly entry
 * (walk_entry.S) and the walk (walk.c) share.  The layout is the
 * assembly's: change both together.
 */
#ifndef FL_DEOPT_WALK_H
#define FL_DEOPT_WALK_H

#include <stdint.h>

#include <faultline/deopt.h>

/*
 * The caller's callee-saved registers as fl_stack_walk found them, its
 * stack pointer at the call and the return address.  The entry loads the
 * callee-saved ones back from here when the walk returns: a write to one
 * that no frame between saved is a write here.
 */
struct fl_walk_saved {
	uint64_t rbx, rbp, r12, r13, r14, r15;	/* 0..40 */
	uint64_t rsp;				/* 48: before the call pushed rip */
	uint64_t rip;				/* 56: the return address */
};

_Static_assert(sizeof(struct fl_walk_saved) == 64, "walk_entry.S's layout");

/* walk.c: the walk, called by fl_stack_walk with the caller's registers. */
int fl_walk_enter(struct fl_walk_saved *saved, const struct fl_walk_start *start,
		  fl_walk_fn fn, void *ctx);

#endif /* FL_DEOPT_WALK_H */
