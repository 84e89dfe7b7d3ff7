/* SPDX-License-Identifier: MIT */
/*
 * workload.ll's programs under a collector that moves every object at
 * every safepoint (runs.h):
 *   - a list built with a collection at each allocation, then summed with
 *     one at each node (heap references inside objects, interior pointers);
 *   - an array summed through a pointer that walks it (a derived pointer
 *     in a loop);
 *   - 101 frames of recursion (deopt values before the references, a null
 *     reference), the innermost collecting: the walk yields each frame.
 */
#include <stdio.h>
#include <string.h>

#include "collector.h"
#include "heap.h"
#include "runs.h"

#define LIST 300
#define ARRAY 100
#define DEPTH 100

enum way { FROM_C, FROM_IR, FROM_A_SIGNAL };

static const char *const way_names[] = {
	[FROM_C] = "from a C callee", [FROM_IR] = "from IR",
	[FROM_A_SIGNAL] = "from a signal handler",
};

static void run(const struct gc_workload *wl, enum way w, bool reg)
{
	int64_t want = 0, got;
	const char *name = way_names[w];

	safepoint_fn = w == FROM_C ? gc_collect : w == FROM_IR ? wl->safepoint_direct :
		       gc_collect_by_signal;
	memset(&gc_stats, 0, sizeof(gc_stats));

	gc_collect_on_alloc = true;
	got = wl->list_run(LIST);
	gc_collect_on_alloc = false;
	gc_check(got == (int64_t)LIST * (LIST - 1) / 2, "%s: list_run(%d) = %lld, not %lld",
		 name, LIST, (long long)got, (long long)LIST * (LIST - 1) / 2);
	/* A collection per allocation and per node, each moving the list so far. */
	gc_check(gc_stats.collections == 2 * LIST &&
		 gc_stats.moved >= (unsigned long)LIST * LIST / 2,
		 "%s: list_run: %lu collections, %lu objects moved", name, gc_stats.collections,
		 gc_stats.moved);

	for (int i = 0; i < ARRAY; i++)
		want += 100 + i;
	got = wl->walk_run(ARRAY);
	gc_check(got == want, "%s: walk_run(%d) = %lld, not %lld", name, ARRAY,
		 (long long)got, (long long)want);

	want = 0;
	for (int d = 0; d <= DEPTH; d++)
		want += (100 + d % 8) + 100 + 1;
	got = wl->deep_run(DEPTH);
	gc_check(got == want, "%s: deep_run(%d) = %lld, not %lld", name, DEPTH,
		 (long long)got, (long long)want);
	/* @poll, every @deep, @deep_run, and @safepoint_direct when it walks. */
	gc_check(gc_stats.last_frames == 1u + (DEPTH + 1) + 1 + (w == FROM_IR),
		 "%s: deep_run(%d): the innermost collection's walk yielded %u frames, not %d",
		 name, DEPTH, gc_stats.last_frames, DEPTH + 3 + (w == FROM_IR));
	/* From IR no C frame is between: below the frames is the walk's context. */
	if (reg && w == FROM_IR)
		gc_check(gc_stats.roots_below > 0,
			 "%s: no reference was in a register that no frame saved (%lu roots)",
			 name, gc_stats.roots);
	printf("  %s: %lu collections, %lu frames, %lu roots written (%lu to registers below "
	       "the frames), %lu objects moved\n", name, gc_stats.collections,
	       gc_stats.frames, gc_stats.roots, gc_stats.roots_below, gc_stats.moved);
}

void gc_workload_check(const struct gc_workload *w, bool in_registers)
{
	run(w, FROM_C, in_registers);
	run(w, FROM_IR, in_registers);
	run(w, FROM_A_SIGNAL, in_registers);
}
