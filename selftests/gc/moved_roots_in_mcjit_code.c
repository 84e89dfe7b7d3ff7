/* SPDX-License-Identifier: MIT */
/*
 * moved_roots_in_mcjit_code WORKLOAD.OPT.LL: workload.ll after
 * rewrite-statepoints-for-gc, compiled at run time by MCJIT
 * (selftests/jit/mcjit.c: OptLevel 2, large code model) and registered
 * with fl_jit_register with its stack map and its .eh_frame, gives the
 * right results while every safepoint moves every object, collected from
 * C, from IR and from a signal handler (runs.h): fl_stack_walk steps
 * through JIT frames by the .eh_frame the table gave libunwind, and finds
 * their records in the JIT module's.  After fl_jit_unregister its records
 * are found no more.
 * Exits 0 (pass) or 1 (fail, with the reason).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <faultline/deopt.h>
#include <faultline/dispatch.h>

#include "../common/t.h"
#include "../jit/mcjit.h"
#include "collector.h"
#include "heap.h"
#include "runs.h"

/* Reads a whole file (IR). */
static char *slurp(const char *path)
{
	char *buf = jit_read_file(path);

	t_check(buf != NULL, "%s: cannot read", path);
	return buf;
}

static uint64_t fn(struct jit_module *m, const char *name)
{
	uint64_t p = jit_function(m, name);

	t_check(p != 0, "MCJIT: no function %s", name);
	return p;
}

/* The runtime address of the module's first stack map record (MCJIT relocated it). */
static uint64_t first_record(const struct jit_module *m)
{
	struct fl_stackmap *map = NULL;
	uint64_t pc;

	t_check(fl_stackmap_parse(m->stackmap, m->stackmap_size, 0, &map, NULL) == 0 &&
		fl_stackmap_count(map) > 0, "the JIT module's stack map");
	pc = fl_stackmap_record(map, 0)->pc;
	fl_stackmap_free(map);
	return pc;
}

int main(int argc, char **argv)
{
	FL_OPTS(fl_init_opts, o, .flags = FL_INIT_NO_AGENT);
	struct fl_stackmap_at at = { .sz = sizeof(at) };
	struct jit_module m = { 0 };
	struct gc_workload jitted;
	struct fl_diag d = { 0 };
	struct fl_jit_reg r;
	uint64_t pc;
	char *ir;
	int id, err;

	t_name = gc_test_name = "moved_roots_in_mcjit_code";
	if (argc != 2) {
		fprintf(stderr, "usage: %s WORKLOAD.OPT.LL\n", argv[0]);
		return 2;
	}
	fl_set_log(t_log, NULL);
	err = fl_init(&o);
	t_check(err == 0, "fl_init: %d", err);
	gc_heap_init();
	gc_collector_init();
	jit_setup();
	ir = slurp(argv[1]);
	if (jit_compile(&m, ir, "workload") != 0)
		t_fail("MCJIT workload: %s", m.err);
	t_check(m.stackmap && m.eh_frame, "MCJIT: no stack map (%p) or .eh_frame (%p)",
		m.stackmap, m.eh_frame);
	jit_reg(&m, "workload", &r);
	id = fl_jit_register(&r, &d);
	t_check(id > 0, "fl_jit_register: %d %s", id, d.msg);
	jitted = (struct gc_workload){
		.list_run = (int64_t (*)(int64_t))fn(&m, "list_run"),
		.walk_run = (int64_t (*)(int64_t))fn(&m, "walk_run"),
		.deep_run = (int64_t (*)(int64_t))fn(&m, "deep_run"),
		.safepoint_direct = (void (*)(void))fn(&m, "safepoint_direct"),
	};
	printf("moved_roots_in_mcjit_code: workload.ll by MCJIT at 0x%llx\n",
	       (unsigned long long)m.code_start);
	gc_workload_check(&jitted, false);

	pc = first_record(&m);
	err = fl_stackmap_record_at(pc, &at);
	t_check(err == 0 && at.module == id, "record at 0x%llx: %d, module %d, not %d",
		(unsigned long long)pc, err, at.module, id);
	t_check(fl_jit_unregister(id) == 0, "fl_jit_unregister");
	err = fl_stackmap_record_at(pc, &at);
	t_check(err == -ENOENT, "record at 0x%llx after fl_jit_unregister: %d, not -ENOENT",
		(unsigned long long)pc, err);
	jit_free(&m);
	free(ir);
	printf("PASS moved_roots_in_mcjit_code\n");
	return 0;
}
