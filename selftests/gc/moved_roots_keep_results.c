/* SPDX-License-Identifier: MIT */
/*
 * moved_roots_keep_results VARIANT: workload.ll, compiled as VARIANT
 * (O<level>_<stack|reg>: llc-14 -O<level>, references spilled to the stack
 * or kept in callee-saved registers), gives the right results while every
 * safepoint moves every object, for each way of collecting (collector.h):
 *   - a list built with a collection at each allocation, then summed with
 *     one at each node (heap references inside objects, interior pointers);
 *   - an array summed through a pointer that walks it (a derived pointer
 *     in a loop);
 *   - 101 frames of recursion (deopt values before the references, a null
 *     reference), the innermost collecting: the walk yields each frame.
 * In the reg variants, a collection called from IR (safepoint_direct: no
 * C frame between) finds some references still in the registers that
 * fl_stack_walk was called with: its context.
 * Exits 0 (pass) or 1 (fail, with the reason).
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <faultline/deopt.h>
#include <faultline/dispatch.h>

#include "../common/t.h"
#include "collector.h"
#include "heap.h"

/* workload.ll */
int64_t list_run(int64_t n);
int64_t walk_run(int64_t n);
int64_t deep_run(int64_t depth);

#define LIST 300
#define ARRAY 100
#define DEPTH 100

static const struct {
	const char *name;
	void (*fn)(void);
	bool direct;	/* no C frame between the references and the walk */
} ways[] = {
	{ "from a C callee", gc_collect, false },
	{ "from IR", safepoint_direct, true },
	{ "from a signal handler", gc_collect_by_signal, false },
};

static void run(size_t w, bool reg)
{
	int64_t want = 0, got;

	safepoint_fn = ways[w].fn;
	memset(&gc_stats, 0, sizeof(gc_stats));

	gc_collect_on_alloc = true;
	got = list_run(LIST);
	gc_collect_on_alloc = false;
	t_check(got == (int64_t)LIST * (LIST - 1) / 2, "%s: list_run(%d) = %lld, not %lld",
		ways[w].name, LIST, (long long)got, (long long)LIST * (LIST - 1) / 2);
	/* A collection per allocation and per node, each moving the list so far. */
	t_check(gc_stats.collections == 2 * LIST && gc_stats.moved >= (unsigned long)LIST * LIST / 2,
		"%s: list_run: %lu collections, %lu objects moved", ways[w].name,
		gc_stats.collections, gc_stats.moved);

	for (int i = 0; i < ARRAY; i++)
		want += 100 + i;
	got = walk_run(ARRAY);
	t_check(got == want, "%s: walk_run(%d) = %lld, not %lld", ways[w].name, ARRAY,
		(long long)got, (long long)want);

	want = 0;
	for (int d = 0; d <= DEPTH; d++)
		want += (100 + d % 8) + 100 + 1;
	got = deep_run(DEPTH);
	t_check(got == want, "%s: deep_run(%d) = %lld, not %lld", ways[w].name, DEPTH,
		(long long)got, (long long)want);
	/* @poll, every @deep, @deep_run, and @safepoint_direct when it walks. */
	t_check(gc_stats.last_frames == 1u + (DEPTH + 1) + 1 + ways[w].direct,
		"%s: deep_run(%d): the innermost collection's walk yielded %u frames, not %d",
		ways[w].name, DEPTH, gc_stats.last_frames, DEPTH + 3 + ways[w].direct);

	if (reg && ways[w].direct)
		t_check(gc_stats.roots_below > 0,
			"%s: no reference was in a register that no frame saved (%lu roots)",
			ways[w].name, gc_stats.roots);
	printf("  %s: %lu collections, %lu frames, %lu roots written (%lu to registers below "
	       "the frames), %lu objects moved\n", ways[w].name, gc_stats.collections,
	       gc_stats.frames, gc_stats.roots, gc_stats.roots_below, gc_stats.moved);
}

int main(int argc, char **argv)
{
	FL_OPTS(fl_init_opts, o, .flags = FL_INIT_NO_AGENT);
	static char name[64];
	bool reg;
	int err;

	if (argc != 2) {
		fprintf(stderr, "usage: %s O<level>_<stack|reg>\n", argv[0]);
		return 2;
	}
	snprintf(name, sizeof(name), "moved_roots_keep_results %s", argv[1]);
	t_name = gc_test_name = name;
	reg = strstr(argv[1], "_reg") != NULL;
	fl_set_log(t_log, NULL);
	err = fl_init(&o);
	t_check(err == 0, "fl_init: %d", err);
	gc_heap_init();
	gc_collector_init();
	printf("%s\n", name);
	for (size_t w = 0; w < sizeof(ways) / sizeof(ways[0]); w++)
		run(w, reg);
	printf("PASS %s\n", name);
	return 0;
}
