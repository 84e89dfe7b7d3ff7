/* SPDX-License-Identifier: MIT */
/*
 * The array of a deoptimization's values when they do not fit on the
 * stack (values.c): mapped, and unmapped when the handler returns, or,
 * when the handler left by longjmp or a C++ exception (no code of ours
 * runs then), at a later deoptimization of the same thread.
 */
#ifndef FL_DEOPT_VALUES_H
#define FL_DEOPT_VALUES_H

#include <stdint.h>

#include <faultline/deopt.h>

/*
 * Maps an array of n values for the deoptimization whose saved registers
 * hold *mark (struct fl_deopt_saved's mark: a word of its frame, which
 * nothing else writes while the deoptimization is under way), after
 * unmapping what the thread's deoptimizations that were left without a
 * return still hold (their frames are gone).  Returns the array, or NULL
 * when it cannot be mapped.  Async-signal-safe: no lock, no allocation
 * but mmap's.
 */
struct fl_deopt_value *fl_deopt_values_get(uint32_t n, volatile uint64_t *mark);

/* The handler returned: unmaps values (from fl_deopt_values_get).  Async-signal-safe. */
void fl_deopt_values_put(struct fl_deopt_value *values);

#endif /* FL_DEOPT_VALUES_H */
