/* SPDX-License-Identifier: MIT */
/*
 * moved_roots_keep_results VARIANT: workload.ll, compiled as VARIANT
 * (O<level>_<stack|reg>: llc-14 -O<level>, references spilled to the stack
 * or kept in callee-saved registers) and linked, gives the right results
 * while every safepoint moves every object, collected from C, from IR and
 * from a signal handler (runs.h).  In the reg variants, a collection from
 * IR (no C frame between) finds some references still in the registers
 * that fl_stack_walk was called with: its context.
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
#include "runs.h"

/* workload.ll */
int64_t list_run(int64_t n);
int64_t walk_run(int64_t n);
int64_t deep_run(int64_t depth);

int main(int argc, char **argv)
{
	FL_OPTS(fl_init_opts, o, .flags = FL_INIT_NO_AGENT);
	const struct gc_workload linked = { list_run, walk_run, deep_run, safepoint_direct };
	static char name[64];
	int err;

	if (argc != 2) {
		fprintf(stderr, "usage: %s O<level>_<stack|reg>\n", argv[0]);
		return 2;
	}
	snprintf(name, sizeof(name), "moved_roots_keep_results %s", argv[1]);
	t_name = gc_test_name = name;
	fl_set_log(t_log, NULL);
	err = fl_init(&o);
	t_check(err == 0, "fl_init: %d", err);
	gc_heap_init();
	gc_collector_init();
	printf("%s\n", name);
	gc_workload_check(&linked, strstr(argv[1], "_reg") != NULL);
	printf("PASS %s\n", name);
	return 0;
}
