/* SPDX-License-Identifier: MIT */
/*
 * The collector of the statepoint example: at a safepoint it walks the
 * stack with fl_stack_walk, finds every reference the frames of
 * workload.ll hold (their gc.statepoint records), moves the objects
 * (heap.h) and writes each reference's new value back with
 * fl_location_write.
 *
 * Three ways to get there, one per safepoint_fn:
 *   gc_collect            a C function the frames call (through @poll)
 *   safepoint_direct      workload.ll's: fl_stack_walk called from IR,
 *                         no C frame between
 *   gc_collect_by_signal  raises SIGUSR1; the handler walks the stack the
 *                         signal interrupted, from its context
 */
#ifndef FL_TEST_GC_COLLECTOR_H
#define FL_TEST_GC_COLLECTOR_H

#include <faultline/deopt.h>

/* workload.ll calls it at every safepoint (and gc_alloc, when it collects). */
extern void (*safepoint_fn)(void);

void gc_collect(void);
void safepoint_direct(void);
void gc_collect_by_signal(void);

/* Installs gc_collect_by_signal's handler (SIGUSR1).  Dies on failure. */
void gc_collector_init(void);

/*
 * The ID rewrite-statepoints-for-gc gives a statepoint's record, unless
 * the call says otherwise.
 */
#define GC_STATEPOINT_ID 0xABCDEF00u

/* The steps, for safepoint_direct: workload.ll calls them. */
void gc_begin(void);
int gc_relocate_frame(const struct fl_walk_frame *frame, void *ctx);
void gc_end(int walk_result);

#endif /* FL_TEST_GC_COLLECTOR_H */
