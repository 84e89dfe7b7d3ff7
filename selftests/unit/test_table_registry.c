// SPDX-License-Identifier: MIT
/*
 * The table's own API (lib/table/table.h and the registry part of
 * <faultline/dispatch.h>): registration and unregistration of JIT code,
 * lookups in the published snapshot, the statistics, and a forked child's
 * counters.  Each test runs in its own process (CK_FORK), so each may call
 * fl_init.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include <faultline/dispatch.h>

#include "dispatch/dispatch.h"
#include "table/table.h"

#include "suites.h"
#include "vec.h"

/*
 * Machine code, as test_dispatch.c's:
 *   +0   load:  mov (%rdi),%eax; ret        handler +3:  mov $-1,%eax; ret
 *   +16  store: movl $1,(%rdi); xor %eax,%eax; ret
 *                                            handler +25: mov $-2,%eax; ret
 */
static const unsigned char code_bytes[] = {
	0x8b, 0x07, 0xc3, 0xb8, 0xff, 0xff, 0xff, 0xff, 0xc3,
	0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90,
	0xc7, 0x07, 0x01, 0x00, 0x00, 0x00, 0x31, 0xc0, 0xc3,
	0xb8, 0xfe, 0xff, 0xff, 0xff, 0xc3,
};

typedef int (*fn_t)(int *p);

struct jit {
	unsigned char *code;
	fn_t load;
	fn_t store;
	struct vec map;
};

/* JIT code with a fault map: the load as a load, the store as a store. */
static void jit_make(struct jit *j)
{
	struct vec *v = &j->map;

	j->code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(j->code, MAP_FAILED);
	memcpy(j->code, code_bytes, sizeof(code_bytes));
	j->load = (fn_t)(void *)j->code;
	j->store = (fn_t)(void *)(j->code + 16);
	vec_init(v, 0);
	put8(v, 1); put8(v, 0); put16(v, 0); put32(v, 2);
	put64(v, (uint64_t)(uintptr_t)j->code); put32(v, 1); put32(v, 0);
	put32(v, FL_FAULT_LOAD); put32(v, 0); put32(v, 3);
	put64(v, (uint64_t)(uintptr_t)j->code + 16); put32(v, 1); put32(v, 0);
	put32(v, FL_FAULT_STORE); put32(v, 0); put32(v, 9);
}

static int jit_register(struct jit *j, const char *name)
{
	struct fl_module_reg reg = {
		.sz = sizeof(reg),
		.name = name,
		.faultmap = j->map.buf,
		.faultmap_size = j->map.len,
		.code_start = (uint64_t)(uintptr_t)j->code,
		.code_size = 4096,
	};

	return fl_module_register(&reg, NULL);
}

static void init_alone(void)
{
	struct fl_init_opts o = { .sz = sizeof(o),
				  .flags = FL_INIT_NO_DISCOVERY | FL_INIT_NO_AGENT };

	ck_assert_int_eq(fl_init(&o), 0);
}

static int count_faults(const struct fl_site *s, void *ctx)
{
	uint64_t *total = ctx;

	*total += s->faults;
	return 0;
}

static uint64_t faults(void)
{
	uint64_t total = 0;

	ck_assert_int_eq(fl_site_for_each(count_faults, &total), 0);
	return total;
}

/*
 * A forked child counts on counters of its own, from zero (the design's
 * FL_HELLO_FIRST child, docs/protocol.md), with or without the agent: the
 * parent's counts do not move with the child's faults, nor the child's
 * with the parent's.
 */
START_TEST(fork_child_counts_on_its_own_counters_without_the_agent)
{
	struct jit j;
	pid_t pid;
	int status;

	init_alone();
	jit_make(&j);
	ck_assert_int_gt(jit_register(&j, "fork-counts"), 0);
	ck_assert_int_eq(j.load(NULL), -1);
	ck_assert_uint_eq(faults(), 1);

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		uint64_t before = faults(), after;

		j.load(NULL);
		j.store(NULL);
		after = faults();
		_exit(before == 0 && after == 2 ? 0 : 10 + (int)(before * 3 + after));
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child status %#x: its counts did not start from zero", status);
	ck_assert_uint_eq(faults(), 1);
}
END_TEST

Suite *table_registry_suite(void)
{
	Suite *s = suite_create("table-registry");
	TCase *tc = unit_tcase("table-registry");

	tcase_add_test(tc, fork_child_counts_on_its_own_counters_without_the_agent);
	suite_add_tcase(s, tc);
	return s;
}
