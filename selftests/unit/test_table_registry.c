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
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include <faultline/dispatch.h>

#include "dispatch/dispatch.h"
#include "table/table.h"

#include "jitcode.h"
#include "suites.h"

/* JIT code with a fault map: the load as a load, the store as a store. */
static void jit_make_mapped(struct jit *j)
{
	jit_make(j);
	jit_map(j, FL_FAULT_LOAD, FL_FAULT_STORE);
}

static int jit_register(struct jit *j, const char *name)
{
	return jit_register_as(j, name, NULL);
}

/*
 * Registers j's code with a stack map alone: one v3 table, one function at
 * the code's start, one record (ID 7) 4 bytes in, no locations.
 */
static int jit_register_stackmap(struct jit *j, const char *name)
{
	static struct vec map;
	uint64_t at = (uint64_t)(uintptr_t)j->code;

	map.len = 0;
	put8(&map, 3); put8(&map, 0); put16(&map, 0);
	put32(&map, 1); put32(&map, 0); put32(&map, 1);	/* functions, constants, records */
	put64(&map, at); put64(&map, 16); put64(&map, 1);	/* address, stack size, records */
	put64(&map, 7); put32(&map, 4);				/* ID, instruction offset */
	put16(&map, 0); put16(&map, 0);				/* flags, locations */
	put16(&map, 0); put16(&map, 0);				/* padding, live-outs */
	put32(&map, 0);						/* padding to 8 */
	FL_OPTS(fl_jit_reg, reg, .name = name, .stackmap = map.buf, .stackmap_size = map.len,
		.code_start = at, .code_size = 4096);

	return fl_jit_register(&reg, NULL);
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

static const struct fl_snapshot *current(void)
{
	return atomic_load(&fl_dispatch.current);
}

START_TEST(registration_needs_init_and_publishes_the_sites)
{
	struct fl_stats st = { .sz = sizeof(st) };
	const struct fl_site_entry *e;
	struct jit j;
	uint64_t at;
	int id;

	jit_make_mapped(&j);
	at = (uint64_t)(uintptr_t)j.code;
	ck_assert(!fl_table_ready());
	ck_assert_int_eq(jit_register(&j, "before-init"), -ENODEV);
	init_alone();
	ck_assert(fl_table_ready());
	ck_assert_uint_eq(current()->num_modules, 0);

	id = jit_register(&j, "unit-table");
	ck_assert_int_gt(id, 0);
	ck_assert_uint_eq(current()->num_modules, 1);
	ck_assert_int_eq(current()->modules[0].id, id);
	ck_assert_uint_eq(current()->modules[0].num_sites, 2);
	/* A site is found at its faulting PC only, with its handler and kind. */
	e = fl_snapshot_lookup(current(), at);
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(e->handler_pc, at + JIT_LOAD_HANDLER);
	ck_assert_uint_eq(e->kind, FL_FAULT_LOAD);
	e = fl_snapshot_lookup(current(), at + JIT_STORE_FAULT);
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(e->handler_pc, at + JIT_STORE_HANDLER);
	ck_assert_uint_eq(e->kind, FL_FAULT_STORE);
	ck_assert_ptr_null(fl_snapshot_lookup(current(), at + 1));
	ck_assert_ptr_null(fl_snapshot_lookup(current(), at + 4096));

	ck_assert_int_eq(fl_stats_get(&st), 0);
	ck_assert_uint_eq(st.modules, 1);
	ck_assert_uint_eq(st.sites, 2);
	ck_assert_uint_eq(st.claimed, 0);
}
END_TEST

START_TEST(unregistration_unpublishes_the_sites_once)
{
	struct fl_stats st = { .sz = sizeof(st) };
	struct jit j;
	int id;

	init_alone();
	jit_make_mapped(&j);
	id = jit_register(&j, "unit-table");
	ck_assert_int_gt(id, 0);
	ck_assert_int_eq(fl_jit_unregister(id), 0);
	ck_assert_uint_eq(current()->num_modules, 0);
	ck_assert_ptr_null(fl_snapshot_lookup(current(), (uint64_t)(uintptr_t)j.code));
	ck_assert_int_eq(fl_jit_unregister(id), -ENOENT);
	ck_assert_int_eq(fl_stats_get(&st), 0);
	ck_assert_uint_eq(st.modules, 0);
	ck_assert_uint_eq(st.sites, 0);
	/* The same code may be registered again, under a new id. */
	ck_assert_int_gt(jit_register(&j, "unit-table"), id);
}
END_TEST

START_TEST(overlapping_registration_is_refused)
{
	struct fl_jit_reg reg;
	struct fl_diag d;
	struct jit j;
	int id;

	init_alone();
	jit_make_mapped(&j);
	id = jit_register(&j, "first");
	ck_assert_int_gt(id, 0);
	reg = (struct fl_jit_reg){
		.sz = sizeof(reg), .name = "second",
		.faultmap = j.map.buf, .faultmap_size = j.map.len,
		.code_start = (uint64_t)(uintptr_t)j.code, .code_size = 4096,
	};
	ck_assert_int_eq(fl_jit_register(&reg, &d), -EEXIST);
	ck_assert_int_eq(d.err, -EEXIST);
	ck_assert_ptr_nonnull(strstr(d.msg, "overlaps"));
	ck_assert_uint_eq(current()->num_modules, 1);
	ck_assert_int_eq(current()->modules[0].id, id);
}
END_TEST

static int name_and_count(const struct fl_site *s, void *ctx)
{
	uint64_t *v = ctx;

	ck_assert_str_eq(s->module_name, "unit-table");
	v[0]++;
	v[1] += s->faults;
	return 0;
}

static int stop_at_first(const struct fl_site *s, void *ctx)
{
	(void)s;
	++*(int *)ctx;
	return 7;
}

START_TEST(site_walk_and_stats_count_the_claimed_faults)
{
	struct fl_stats st = { .sz = sizeof(st) };
	uint64_t v[2] = { 0, 0 };
	struct jit j;
	int calls = 0;

	init_alone();
	jit_make_mapped(&j);
	ck_assert_int_gt(jit_register(&j, "unit-table"), 0);
	ck_assert_int_eq(j.load(NULL), -1);
	ck_assert_int_eq(j.store(NULL), -2);
	ck_assert_int_eq(j.load(NULL), -1);
	ck_assert_int_eq(fl_site_for_each(name_and_count, v), 0);
	ck_assert_uint_eq(v[0], 2);
	ck_assert_uint_eq(v[1], 3);
	/* A callback's non-zero return stops the walk and is returned. */
	ck_assert_int_eq(fl_site_for_each(stop_at_first, &calls), 7);
	ck_assert_int_eq(calls, 1);
	ck_assert_int_eq(fl_stats_get(&st), 0);
	ck_assert_uint_eq(st.claimed, 3);
	ck_assert_uint_eq(st.chained, 0);
	ck_assert_uint_eq(st.handler_replaced, 0);
}
END_TEST

START_TEST(regions_are_published_and_refused_when_overlapping)
{
	static struct fl_region a, b, c;

	a.start = 0x100000000000ull; a.size = 1 << 20;
	b.start = a.start + (1 << 19); b.size = 1 << 20;	/* inside a */
	c.start = a.start + (1 << 20); c.size = 1 << 20;	/* right after a */
	ck_assert_int_eq(fl_table_region_add(&a), -ENODEV);
	init_alone();
	ck_assert_int_eq(fl_table_region_add(&a), 0);
	ck_assert_int_eq(fl_table_region_add(&b), -EEXIST);
	ck_assert_int_eq(fl_table_region_add(&c), 0);
	ck_assert_uint_eq(current()->num_regions, 2);
	ck_assert_ptr_eq(fl_snapshot_region(current(), a.start + 5)->region, &a);
	ck_assert_ptr_eq(fl_snapshot_region(current(), c.start)->region, &c);
	ck_assert_ptr_null(fl_snapshot_region(current(), c.start + c.size));
	ck_assert_int_eq(fl_table_region_remove(&a), 0);
	ck_assert_int_eq(fl_table_region_remove(&a), -ENOENT);
	ck_assert_uint_eq(current()->num_regions, 1);
	ck_assert_ptr_null(fl_snapshot_region(current(), a.start + 5));
	ck_assert_int_eq(fl_table_region_remove(&c), 0);
	ck_assert_uint_eq(current()->num_regions, 0);
}
END_TEST

/*
 * Observers: an event log of both, in the order the table calls them.
 * Data passes from module_prepare to module_added or module_discard.
 */
static char events[1024];

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
	size_t n = strlen(events);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(events + n, sizeof(events) - n, fmt, ap);
	va_end(ap);
}

static int data_a = 'A', data_b = 'B';
/* The sites of the module being registered: 0 for stack map records only. */
static uint32_t sites_told = 2;

static void *prepare_a(const struct fl_table_source *src)
{
	ck_assert_ptr_nonnull(src->jit);
	ck_assert_ptr_null(src->elf);
	ck_assert_uint_eq(src->num_sites, sites_told);
	note("prepare:A:%s ", src->name);
	return &data_a;
}

static void *prepare_b(const struct fl_table_source *src)
{
	note("prepare:B:%s ", src->name);
	return &data_b;
}

static void added(const struct fl_table_module *m, void *data)
{
	ck_assert_uint_eq(m->num_sites, sites_told);
	ck_assert_uint_eq(m->code_size, 4096);
	if (m->num_sites)
		ck_assert_uint_eq(m->sites[0].counter, m->first_counter);
	note("added:%c:%d ", *(int *)data, m->id);
}

static void discard(void *data)
{
	note("discard:%c ", *(int *)data);
}

static void removed_a(int id) { note("removed:A:%d ", id); }
static void removed_b(int id) { note("removed:B:%d ", id); }
static void prepare_fork_a(void) { note("fork-prepare:A "); }
static void prepare_fork_b(void) { note("fork-prepare:B "); }
static void parent_a(void) { note("fork-parent:A "); }
static void parent_b(void) { note("fork-parent:B "); }
static void child_a(int err) { note("fork-child:A:%d ", err); }
static void child_b(int err) { note("fork-child:B:%d ", err); }

static const struct fl_table_observer observer_a = {
	.module_prepare = prepare_a, .module_added = added, .module_discard = discard,
	.module_removed = removed_a, .fork_prepare = prepare_fork_a,
	.fork_parent = parent_a, .fork_child = child_a,
};

static const struct fl_table_observer observer_b = {
	.module_prepare = prepare_b, .module_added = added, .module_discard = discard,
	.module_removed = removed_b, .fork_prepare = prepare_fork_b,
	.fork_parent = parent_b, .fork_child = child_b,
};

START_TEST(observers_are_told_in_subscription_order)
{
	char want[256];
	struct jit j, k;
	int id;

	ck_assert_int_eq(fl_table_observe(&observer_a), 0);
	ck_assert_int_eq(fl_table_observe(&observer_b), 0);
	init_alone();
	jit_make_mapped(&j);
	id = jit_register(&j, "one");
	ck_assert_int_gt(id, 0);
	snprintf(want, sizeof(want), "prepare:A:one prepare:B:one added:A:%d added:B:%d ", id, id);
	ck_assert_str_eq(events, want);

	/* Refused: what the observers prepared is discarded, nothing added. */
	events[0] = 0;
	ck_assert_int_eq(jit_register(&j, "two"), -EEXIST);
	ck_assert_str_eq(events, "prepare:A:two prepare:B:two discard:A discard:B ");

	events[0] = 0;
	ck_assert_int_eq(fl_jit_unregister(id), 0);
	snprintf(want, sizeof(want), "removed:A:%d removed:B:%d ", id, id);
	ck_assert_str_eq(events, want);

	/* A module with neither sites nor stack map records is nothing to the observers. */
	events[0] = 0;
	jit_make_mapped(&k);
	k.map.len = 0;
	put8(&k.map, 1); put8(&k.map, 0); put16(&k.map, 0); put32(&k.map, 0);
	ck_assert_int_gt(jit_register(&k, "empty"), 0);
	ck_assert_str_eq(events, "");

	/* One with stack map records only is published: they hear of it, with no sites. */
	events[0] = 0;
	sites_told = 0;
	id = jit_register_stackmap(&k, "records");
	ck_assert_int_gt(id, 0);
	snprintf(want, sizeof(want), "prepare:A:records prepare:B:records added:A:%d added:B:%d ",
		 id, id);
	ck_assert_str_eq(events, want);
	events[0] = 0;
	ck_assert_int_eq(fl_jit_unregister(id), 0);
	snprintf(want, sizeof(want), "removed:A:%d removed:B:%d ", id, id);
	ck_assert_str_eq(events, want);
}
END_TEST

START_TEST(observers_fork_handlers_nest_inside_the_table_locks)
{
	pid_t pid;
	int status;

	ck_assert_int_eq(fl_table_observe(&observer_a), 0);
	ck_assert_int_eq(fl_table_observe(&observer_b), 0);
	init_alone();
	events[0] = 0;
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct jit j;

		if (strcmp(events, "fork-prepare:A fork-prepare:B fork-child:A:0 "
				   "fork-child:B:0 ") != 0)
			_exit(3);
		/* The child has the table's locks back: it registers. */
		jit_make_mapped(&j);
		_exit(jit_register(&j, "child") > 0 ? 0 : 4);
	}
	ck_assert_str_eq(events, "fork-prepare:A fork-prepare:B fork-parent:B fork-parent:A ");
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
}
END_TEST

static const struct fl_table_observer nothing;

START_TEST(observers_are_limited)
{
	for (int i = 0; i < FL_TABLE_MAX_OBSERVERS; i++)
		ck_assert_int_eq(fl_table_observe(&nothing), 0);
	ck_assert_int_eq(fl_table_observe(&nothing), -ENOSPC);
	/* Observers without callbacks: registration goes on as without any. */
	init_alone();
	{
		struct jit j;

		jit_make_mapped(&j);
		ck_assert_int_gt(jit_register(&j, "unit-table"), 0);
	}
}
END_TEST

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
	jit_make_mapped(&j);
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

	tcase_add_test(tc, registration_needs_init_and_publishes_the_sites);
	tcase_add_test(tc, unregistration_unpublishes_the_sites_once);
	tcase_add_test(tc, overlapping_registration_is_refused);
	tcase_add_test(tc, site_walk_and_stats_count_the_claimed_faults);
	tcase_add_test(tc, regions_are_published_and_refused_when_overlapping);
	tcase_add_test(tc, observers_are_told_in_subscription_order);
	tcase_add_test(tc, observers_fork_handlers_nest_inside_the_table_locks);
	tcase_add_test(tc, observers_are_limited);
	tcase_add_test(tc, fork_child_counts_on_its_own_counters_without_the_agent);
	suite_add_tcase(s, tc);
	return s;
}
