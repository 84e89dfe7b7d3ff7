/* SPDX-License-Identifier: MIT */
/*
 * workload.ll's programs, run with every safepoint collecting, each of
 * the three ways (collector.h), their results and the collector's counts
 * checked (runs.c).  For workload.ll linked (moved_roots_keep_results)
 * and compiled by MCJIT (moved_roots_in_mcjit_code).
 */
#ifndef FL_TEST_GC_RUNS_H
#define FL_TEST_GC_RUNS_H

#include <stdbool.h>
#include <stdint.h>

/* workload.ll's functions, wherever they were compiled. */
struct gc_workload {
	int64_t (*list_run)(int64_t n);
	int64_t (*walk_run)(int64_t n);
	int64_t (*deep_run)(int64_t depth);
	void (*safepoint_direct)(void);
};

/*
 * Runs w's programs from C, from IR and from a signal handler, and fails
 * the test (gc_die) at the first wrong result or count.  in_registers:
 * the code keeps references in callee-saved registers, so that a
 * collection from IR (no C frame between) finds some still in the
 * registers fl_stack_walk was called with.  Prints the counts.
 */
void gc_workload_check(const struct gc_workload *w, bool in_registers);

#endif /* FL_TEST_GC_RUNS_H */
