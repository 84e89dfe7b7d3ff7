// SPDX-License-Identifier: MIT
/*
 * Implicit null checks in JIT code: a module compiled by MCJIT (mcjit.c)
 * is registered with fl_jit_register from the sections MCJIT loaded,
 * and its failed checks resume at their handler PCs.
 *
 * What it proves, in order (each prints "ok NAME" or "FAIL NAME: why"):
 *   register_before_init_is_enodev
 *   mcjit_faultmap_holds_runtime_addresses   MCJIT relocated the section in
 *        memory: every FunctionAddress is what LLVMGetFunctionAddress says,
 *        and each function has the fault kinds llc-14 gives it
 *   counter_slots_are_reused                 in a child with 8 counter
 *        slots: register/unregister 100 times, -ENOSPC when full
 *   register_rejects_bad_input               the contract's error cases
 *   null_calls_take_the_handler_path         every NULL call returns the
 *        null block's value, the null block ran, valid pointers load
 *   site_counts_match_calls                  fl_site_for_each: the sites
 *        are the fault map's, in address order, each counted exactly
 *   stats_match_calls                        fl_stats_get agrees
 *   unregistered_null_call_dies_of_sigsegv   in a child: the fault is no
 *        longer claimed, goes to SIG_DFL (set with fl_sigaction) and kills
 *   unregistered_fault_reaches_app_handler   in a child: it reaches an
 *        SA_SIGINFO handler recorded with fl_sigaction, si_addr intact
 *   reregistered_module_dispatches           the same code registered again
 *   two_engines_dispatch_side_by_side        a second engine of the same IR
 *   reused_code_address_dispatches           a new engine after the first
 *        is freed (its code may land where the old code was)
 *
 * Exits 0 when everything passed.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <llvm-c/Support.h>

#include <faultline/dispatch.h>
#include <faultline/format.h>

#include "mcjit.h"

#define CALLS 1000

/*
 * llc-14 at OptLevel 2 (MCJIT, x86-64): jit_load, jit_far and both checks
 * of jit_two are FaultingLoad, jit_store FaultingStore, jit_rmw (load, add,
 * store folded into addl) FaultingLoadStore.  Every null block calls
 * jit_npe(id) and returns a value no valid call returns.
 */
static const char jit_ir[] =
	"target datalayout = \"e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128\"\n"
	"target triple = \"x86_64-unknown-linux-gnu\"\n"
	"declare void @jit_npe(i32)\n"
	"declare void @llvm.experimental.stackmap(i64, i32, ...)\n"
	"define i32 @jit_load(i32* %p) {\n"
	"entry:\n"
	"  %c = icmp eq i32* %p, null\n"
	"  br i1 %c, label %isnull, label %ok, !make.implicit !0\n"
	"ok:\n"
	"  %v = load i32, i32* %p\n"
	"  ret i32 %v\n"
	"isnull:\n"
	"  call void @jit_npe(i32 1)\n"
	"  ret i32 -77\n"
	"}\n"
	"define i64 @jit_store(i64* %p, i64 %x) {\n"
	"entry:\n"
	"  %c = icmp eq i64* %p, null\n"
	"  br i1 %c, label %isnull, label %ok, !make.implicit !0\n"
	"ok:\n"
	"  store i64 %x, i64* %p\n"
	"  ret i64 0\n"
	"isnull:\n"
	"  call void @jit_npe(i32 2)\n"
	"  ret i64 -55\n"
	"}\n"
	"define i32 @jit_rmw(i32* %p, i32 %x) {\n"
	"entry:\n"
	"  %c = icmp eq i32* %p, null\n"
	"  br i1 %c, label %isnull, label %ok, !make.implicit !0\n"
	"ok:\n"
	"  %v = load i32, i32* %p\n"
	"  %a = add i32 %v, %x\n"
	"  store i32 %a, i32* %p\n"
	"  ret i32 0\n"
	"isnull:\n"
	"  call void @jit_npe(i32 3)\n"
	"  ret i32 -33\n"
	"}\n"
	"define i32 @jit_far(i32* %p) {\n"
	"entry:\n"
	"  %c = icmp eq i32* %p, null\n"
	"  br i1 %c, label %isnull, label %ok, !make.implicit !0\n"
	"ok:\n"
	"  %f = getelementptr i32, i32* %p, i64 1000\n"
	"  %v = load i32, i32* %f\n"
	"  ret i32 %v\n"
	"isnull:\n"
	"  call void @jit_npe(i32 4)\n"
	"  ret i32 -44\n"
	"}\n"
	"define i64 @jit_two(i64* %a, i64* %b) {\n"
	"entry:\n"
	"  %c1 = icmp eq i64* %a, null\n"
	"  br i1 %c1, label %null1, label %ok1, !make.implicit !0\n"
	"ok1:\n"
	"  %va = load i64, i64* %a\n"
	"  %c2 = icmp eq i64* %b, null\n"
	"  br i1 %c2, label %null2, label %ok2, !make.implicit !0\n"
	"ok2:\n"
	"  %vb = load i64, i64* %b\n"
	"  %s = add i64 %va, %vb\n"
	"  ret i64 %s\n"
	"null1:\n"
	"  call void @jit_npe(i32 5)\n"
	"  ret i64 -1001\n"
	"null2:\n"
	"  call void @jit_npe(i32 6)\n"
	"  ret i64 -1002\n"
	"}\n"
	"define i64 @jit_sm(i64 %a) {\n"
	"  call void (i64, i32, ...) @llvm.experimental.stackmap(i64 42, i32 0, i64 %a)\n"
	"  %r = add i64 %a, 1\n"
	"  ret i64 %r\n"
	"}\n"
	"!0 = !{}\n";

struct fn_expect {
	const char *name;
	uint32_t kinds[2];	/* in faulting PC order; 0: none */
};

static const struct fn_expect fn_expected[] = {
	{ "jit_load", { FL_FAULT_LOAD } },
	{ "jit_store", { FL_FAULT_STORE } },
	{ "jit_rmw", { FL_FAULT_LOAD_STORE } },
	{ "jit_far", { FL_FAULT_LOAD } },
	{ "jit_two", { FL_FAULT_LOAD, FL_FAULT_LOAD } },
};
#define NFN (sizeof(fn_expected) / sizeof(fn_expected[0]))
#define NSITES 6
#define NPE_IDS 7

typedef int32_t (*load_fn)(int32_t *);
typedef int64_t (*store_fn)(int64_t *, int64_t);
typedef int32_t (*rmw_fn)(int32_t *, int32_t);
typedef int64_t (*two_fn)(int64_t *, int64_t *);
typedef int64_t (*sm_fn)(int64_t);

struct jit_fns {
	load_fn load;
	store_fn store;
	rmw_fn rmw;
	load_fn far;
	two_fn two;
	sm_fn sm;
	uint64_t addr[NFN];
};

/* Null blocks ran, by id; the JIT code calls this (large code model). */
static volatile unsigned long npe_calls[NPE_IDS];

void jit_npe(int32_t id);

void jit_npe(int32_t id)
{
	if (id > 0 && id < NPE_IDS)
		npe_calls[id]++;
}

static int failures;
static const char *current;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void fail(const char *fmt, ...)
{
	va_list ap;

	printf("FAIL %s: ", current);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	failures++;
}

/* Runs one named check and prints ok when it added no failure. */
#define CHECK(name, call)                                                    \
	do {                                                                 \
		int before_ = failures;                                      \
		current = (name);                                            \
		call;                                                        \
		if (failures == before_)                                     \
			printf("ok %s\n", current);                          \
		fflush(stdout);                                              \
	} while (0)

static void compile(struct jit_module *m, struct jit_fns *f, const char *name)
{
	size_t i;

	if (jit_compile(m, jit_ir, name)) {
		fail("compile: %s", m->err);
		printf("FAIL jit: cannot go on without the module\n");
		exit(1);
	}
	for (i = 0; i < NFN; i++)
		f->addr[i] = jit_function(m, fn_expected[i].name);
	f->load = (load_fn)(uintptr_t)f->addr[0];
	f->store = (store_fn)(uintptr_t)f->addr[1];
	f->rmw = (rmw_fn)(uintptr_t)f->addr[2];
	f->far = (load_fn)(uintptr_t)f->addr[3];
	f->two = (two_fn)(uintptr_t)f->addr[4];
	f->sm = (sm_fn)(uintptr_t)jit_function(m, "jit_sm");
	if (m->faultmap == NULL || m->faultmap_size == 0) {
		fail("MCJIT loaded no %s section (finalize calls: %d)",
		     FL_FAULTMAP_SECTION, m->finalize_calls);
		printf("FAIL jit: cannot go on without a fault map\n");
		exit(1);
	}
}

static int do_register(const struct jit_module *m, const char *name)
{
	struct fl_jit_reg r;
	struct fl_diag d = { 0 };
	int id;

	jit_reg(m, name, &r);
	id = fl_jit_register(&r, &d);
	if (id <= 0)
		fail("fl_jit_register(%s): %d (%s) %s", name, id, strerror(-id), d.msg);
	return id;
}

static void register_before_init_is_enodev(const struct jit_module *m)
{
	struct fl_jit_reg r;
	int id;

	jit_reg(m, "early", &r);
	id = fl_jit_register(&r, NULL);
	if (id != -ENODEV) {
		fail("got %d, want -ENODEV", id);
		if (id > 0)
			fl_jit_unregister(id);
	}
}

static const char *fn_name(const struct jit_fns *f, uint64_t addr)
{
	size_t i;

	for (i = 0; i < NFN; i++)
		if (f->addr[i] == addr)
			return fn_expected[i].name;
	return NULL;
}

/* The fault map as the test reads it, for the site checks. */
struct site_key {
	uint64_t faulting_pc;
	uint64_t handler_pc;
	uint32_t kind;
};

static size_t read_faultmap(const struct jit_module *m, struct site_key *keys,
			    size_t max)
{
	struct fl_faultmap *fm = NULL;
	struct fl_diag d = { 0 };
	size_t i, n;

	if (fl_faultmap_parse(m->faultmap, m->faultmap_size, 0, &fm, &d)) {
		fail("fl_faultmap_parse: %s", d.msg);
		return 0;
	}
	n = fl_faultmap_count(fm);
	for (i = 0; i < n && i < max; i++) {
		const struct fl_faultmap_entry *e = fl_faultmap_entry(fm, i);

		keys[i].faulting_pc = e->faulting_pc;
		keys[i].handler_pc = e->handler_pc;
		keys[i].kind = e->kind;
	}
	fl_faultmap_free(fm);
	return n;
}

static void mcjit_faultmap_holds_runtime_addresses(const struct jit_module *m,
						   const struct jit_fns *f)
{
	struct fl_faultmap *fm = NULL;
	struct fl_diag d = { 0 };
	unsigned seen[NFN] = { 0 };
	size_t i, j, n;

	printf("  code [%#lx, +%#lx), %s %zu bytes, %s %zu bytes\n",
	       (unsigned long)m->code_start, (unsigned long)m->code_size,
	       FL_FAULTMAP_SECTION, m->faultmap_size, FL_STACKMAP_SECTION,
	       m->stackmap_size);
	if (fl_faultmap_parse(m->faultmap, m->faultmap_size, 0, &fm, &d)) {
		fail("fl_faultmap_parse: %s", d.msg);
		return;
	}
	n = fl_faultmap_count(fm);
	if (n != NSITES)
		fail("%zu fault map entries, want %d", n, NSITES);
	for (i = 0; i < n; i++) {
		const struct fl_faultmap_entry *e = fl_faultmap_entry(fm, i);
		const char *name = fn_name(f, e->function_address);

		printf("  %-9s %#lx +%lu -> +%lu %s\n", name ? name : "?",
		       (unsigned long)e->function_address,
		       (unsigned long)(e->faulting_pc - e->function_address),
		       (unsigned long)(e->handler_pc - e->function_address),
		       fl_fault_kind_name(e->kind));
		if (!name) {
			fail("FunctionAddress %#lx is no function's runtime address",
			     (unsigned long)e->function_address);
			continue;
		}
		for (j = 0; j < NFN; j++) {
			if (strcmp(fn_expected[j].name, name))
				continue;
			if (seen[j] >= 2 || fn_expected[j].kinds[seen[j]] != e->kind)
				fail("%s: entry %u is %s", name, seen[j],
				     fl_fault_kind_name(e->kind));
			seen[j]++;
		}
		if (e->faulting_pc < m->code_start ||
		    e->handler_pc >= m->code_start + m->code_size)
			fail("entry %zu outside the code", i);
	}
	for (j = 0; j < NFN; j++) {
		unsigned want = fn_expected[j].kinds[1] ? 2 : 1;

		if (seen[j] != want)
			fail("%s: %u entries, want %u", fn_expected[j].name, seen[j], want);
	}
	fl_faultmap_free(fm);

	if (m->stackmap) {
		struct fl_stackmap *sm = NULL;
		const struct fl_stackmap_record *const *recs;
		uint64_t sm_addr = (uint64_t)(uintptr_t)f->sm;

		if (fl_stackmap_parse(m->stackmap, m->stackmap_size, 0, &sm, &d)) {
			fail("fl_stackmap_parse: %s", d.msg);
		} else {
			if (fl_stackmap_find_id(sm, 42, &recs) != 1 ||
			    recs[0]->function_address != sm_addr)
				fail("stack map record 42 not at jit_sm %#lx",
				     (unsigned long)sm_addr);
			fl_stackmap_free(sm);
		}
	} else {
		fail("MCJIT loaded no %s section", FL_STACKMAP_SECTION);
	}
}

static void expect_reject(const char *what, struct fl_jit_reg *r, int want)
{
	struct fl_diag d = { 0 };
	int id = fl_jit_register(r, &d);

	if (id != want) {
		fail("%s: got %d (%s), want %d (%s)", what, id,
		     id < 0 ? strerror(-id) : "an id", want, strerror(-want));
		if (id > 0)
			fl_jit_unregister(id);
		return;
	}
	if (want == -EINVAL && d.msg[0] == '\0')
		fail("%s: -EINVAL without a diagnostic", what);
	printf("  %s: %d %s\n", what, id, d.msg);
}

/*
 * The contract (dispatch.h): malformed sections are -EINVAL with a
 * diagnostic, whatever the format layer's own code for the problem
 * (-EMSGSIZE for truncation, -EPROTONOSUPPORT for an unknown version).
 */
#define MALFORMED (-EINVAL)

static void register_rejects(const struct jit_module *m, int registered_id)
{
	struct fl_jit_reg r;
	unsigned char bad[512];

	jit_reg(m, "overlap", &r);
	expect_reject("same code range again", &r, -EEXIST);

	jit_reg(m, "short code range", &r);
	r.code_size = 1;
	expect_reject("handler PCs outside the code", &r, -EINVAL);

	jit_reg(m, "truncated fault map", &r);
	r.faultmap_size = m->faultmap_size - 1;
	expect_reject("truncated fault map", &r, MALFORMED);

	jit_reg(m, "bad kind", &r);
	if (m->faultmap_size <= sizeof(bad)) {
		memcpy(bad, m->faultmap, m->faultmap_size);
		bad[24] = 9;	/* the first entry's Kind (header 8, function 16) */
		r.faultmap = bad;
		expect_reject("fault kind 9", &r, MALFORMED);
	}

	jit_reg(m, "truncated stack map", &r);
	r.stackmap_size = m->stackmap_size - 1;
	expect_reject("truncated stack map", &r, MALFORMED);

	jit_reg(m, "bad stack map version", &r);
	if (m->stackmap_size <= sizeof(bad)) {
		memcpy(bad, m->stackmap, m->stackmap_size);
		bad[0] = 77;
		r.stackmap = bad;
		expect_reject("stack map version 77", &r, MALFORMED);
	}

	if (fl_jit_unregister(registered_id + 1000) != -ENOENT)
		fail("fl_jit_unregister of an unknown id is not -ENOENT");
}

/*
 * In a child, before any fl_init: with 8 counter slots, a 6-site module
 * registers and unregisters 100 times (slots come back), and a second one
 * at the same time is -ENOSPC.
 */
static void counter_slots_are_reused(const struct jit_module *m1,
				     const struct jit_module *m2)
{
	struct fl_init_opts opts = { .sz = sizeof(opts), .flags = FL_INIT_NO_DISCOVERY,
				     .max_sites = 8 };
	struct fl_jit_reg r1, r2;
	int status = 0, i, id, id2;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		fail("fork: %s", strerror(errno));
		return;
	}
	if (pid == 0) {
		if (fl_init(&opts))
			_exit(10);
		jit_reg(m1, "slots-1", &r1);
		jit_reg(m2, "slots-2", &r2);
		for (i = 0; i < 100; i++) {
			id = fl_jit_register(&r1, NULL);
			if (id <= 0)
				_exit(11);
			if (i == 50) {
				id2 = fl_jit_register(&r2, NULL);
				if (id2 != -ENOSPC)
					_exit(12);
			}
			if (fl_jit_unregister(id))
				_exit(13);
		}
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid)
		fail("waitpid: %s", strerror(errno));
	else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail("child status %#x: %s", status,
		     !WIFEXITED(status) ? "crashed" :
		     WEXITSTATUS(status) == 10 ? "fl_init failed" :
		     WEXITSTATUS(status) == 11 ? "a re-registration failed (slots not reused?)" :
		     WEXITSTATUS(status) == 12 ? "the second module was not -ENOSPC" :
		     "fl_jit_unregister failed");
}

/* NULL and valid calls of every function, CALLS times each. */
static void null_calls_take_the_handler_path(const struct jit_fns *f)
{
	unsigned long npe_before[NPE_IDS];
	int32_t i32 = 5;
	int64_t i64a = 40, i64b = 2;
	int32_t farr[1001];
	int i, k, wrong = 0;

	for (k = 0; k < NPE_IDS; k++)
		npe_before[k] = npe_calls[k];
	farr[1000] = 1234;
	for (i = 0; i < CALLS; i++) {
		wrong += f->load(NULL) != -77;
		wrong += f->store(NULL, i) != -55;
		wrong += f->rmw(NULL, 1) != -33;
		wrong += f->far(NULL) != -44;
		wrong += f->two(NULL, &i64b) != -1001;
		wrong += f->two(&i64a, NULL) != -1002;

		i32 = i;
		wrong += f->load(&i32) != i;
		wrong += f->store(&i64a, 40) != 0 || i64a != 40;
		wrong += f->rmw(&i32, 3) != 0 || i32 != i + 3;
		wrong += f->far(farr) != 1234;
		wrong += f->two(&i64a, &i64b) != 42;
	}
	if (wrong)
		fail("%d wrong results", wrong);
	for (k = 1; k < NPE_IDS; k++)
		if (npe_calls[k] - npe_before[k] != CALLS)
			fail("null block %d ran %lu times, want %d", k,
			     npe_calls[k] - npe_before[k], CALLS);
	if (f->sm(41) != 42)
		fail("jit_sm(41) != 42");
}

struct site_walk {
	int module;
	uint64_t last_pc;
	size_t n;
	int out_of_order;
	struct fl_site sites[64];
	char name[64];
};

static int collect(const struct fl_site *s, void *ctx)
{
	struct site_walk *w = ctx;

	if (w->n && s->faulting_pc <= w->last_pc)
		w->out_of_order++;
	w->last_pc = s->faulting_pc;
	if (s->module != w->module)
		return 0;
	if (w->n < sizeof(w->sites) / sizeof(w->sites[0])) {
		w->sites[w->n] = *s;
		w->sites[w->n].module_name = NULL;	/* valid only now */
		snprintf(w->name, sizeof(w->name), "%s",
			 s->module_name ? s->module_name : "(null)");
	}
	w->n++;
	return 0;
}

static size_t sites_of(int module, struct site_walk *w)
{
	int rc;

	memset(w, 0, sizeof(*w));
	w->module = module;
	rc = fl_site_for_each(collect, w);
	if (rc)
		fail("fl_site_for_each: %d", rc);
	if (w->out_of_order)
		fail("fl_site_for_each: %d sites out of address order", w->out_of_order);
	return w->n;
}

/* Each site of module id: a fault map entry, counted exactly want times. */
static void site_counts_match_calls(const struct jit_module *m, int id,
				    const char *name, uint64_t want)
{
	struct site_key keys[16];
	struct site_walk w;
	size_t nkeys = read_faultmap(m, keys, 16), i, j;

	if (sites_of(id, &w) != NSITES)
		fail("module %d has %zu sites, want %d", id, w.n, NSITES);
	if (w.n && strcmp(w.name, name))
		fail("module name \"%s\", want \"%s\"", w.name, name);
	for (i = 0; i < w.n && i < 64; i++) {
		const struct fl_site *s = &w.sites[i];

		for (j = 0; j < nkeys; j++)
			if (keys[j].faulting_pc == s->faulting_pc)
				break;
		if (j == nkeys) {
			fail("site %#lx is not in the fault map",
			     (unsigned long)s->faulting_pc);
			continue;
		}
		if (keys[j].handler_pc != s->handler_pc || keys[j].kind != s->kind)
			fail("site %#lx: handler %#lx kind %u, fault map says %#lx %u",
			     (unsigned long)s->faulting_pc, (unsigned long)s->handler_pc,
			     s->kind, (unsigned long)keys[j].handler_pc, keys[j].kind);
		if (s->faults != want)
			fail("site %#lx: %lu faults, want %lu",
			     (unsigned long)s->faulting_pc, (unsigned long)s->faults,
			     (unsigned long)want);
	}
}

static void get_stats(struct fl_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->sz = sizeof(*st);
	if (fl_stats_get(st))
		fail("fl_stats_get failed");
}

static void stats_match_calls(const struct fl_stats *before, uint32_t modules,
			      uint64_t claimed)
{
	struct fl_stats st;

	get_stats(&st);
	printf("  claimed %lu chained %lu modules %u sites %u handler_replaced %u\n",
	       (unsigned long)st.claimed, (unsigned long)st.chained, st.modules,
	       st.sites, st.handler_replaced);
	if (st.claimed - before->claimed != claimed)
		fail("claimed +%lu, want +%lu",
		     (unsigned long)(st.claimed - before->claimed), (unsigned long)claimed);
	if (st.chained != before->chained)
		fail("chained +%lu, want 0",
		     (unsigned long)(st.chained - before->chained));
	if (st.modules != modules || st.sites != modules * NSITES)
		fail("%u modules %u sites, want %u and %u", st.modules, st.sites,
		     modules, modules * NSITES);
	if (st.handler_replaced)
		fail("handler_replaced");
}

static void child_handler(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	_exit(sig == SIGSEGV && si->si_code > 0 && (uintptr_t)si->si_addr < 4096 ? 42 : 43);
}

/*
 * Runs load(NULL) in a child whose SIGSEGV action (recorded with
 * fl_sigaction) is act; returns the wait status.
 */
static int null_call_in_child(load_fn load, const struct sigaction *act)
{
	struct rlimit no_core = { 0, 0 };
	int status = 0;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		fail("fork: %s", strerror(errno));
		return 0;
	}
	if (pid == 0) {
		setrlimit(RLIMIT_CORE, &no_core);
		if (fl_sigaction(SIGSEGV, act, NULL))
			_exit(44);
		load(NULL);
		_exit(45);	/* dispatched: the site is still registered */
	}
	if (waitpid(pid, &status, 0) != pid)
		fail("waitpid: %s", strerror(errno));
	return status;
}

static void unregistered_null_call_dies_of_sigsegv(load_fn load)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	int status = null_call_in_child(load, &dfl);

	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGSEGV)
		fail("child status %#x (exit %d, signal %d), want death by SIGSEGV",
		     status, WIFEXITED(status) ? WEXITSTATUS(status) : -1,
		     WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

static void unregistered_fault_reaches_app_handler(load_fn load)
{
	struct sigaction sa = { .sa_sigaction = child_handler, .sa_flags = SA_SIGINFO };
	int status = null_call_in_child(load, &sa);

	if (!WIFEXITED(status) || WEXITSTATUS(status) != 42)
		fail("child status %#x, want exit 42 from the handler", status);
}

static void reregistered_module_dispatches(const struct jit_module *m,
					   const struct jit_fns *f, int *id)
{
	struct fl_stats before;

	get_stats(&before);
	*id = do_register(m, "jit-again");
	if (*id <= 0)
		return;
	null_calls_take_the_handler_path(f);
	site_counts_match_calls(m, *id, "jit-again", CALLS);
	stats_match_calls(&before, 1, 6 * CALLS);
}

static void unregister(int id)
{
	int rc = fl_jit_unregister(id);

	if (rc)
		fail("fl_jit_unregister(%d): %d", id, rc);
}

/* The functions of f, each up to the next one's start, the last to the code's end. */
static size_t functions_of(const struct jit_module *m, const struct jit_fns *f,
			   struct fl_jit_function *out)
{
	size_t n = 0;

	for (size_t i = 0; i < NFN; i++) {
		uint64_t end = m->code_start + m->code_size;

		for (size_t j = 0; j < NFN; j++)
			if (f->addr[j] > f->addr[i] && f->addr[j] < end)
				end = f->addr[j];
		out[n++] = (struct fl_jit_function){ fn_expected[i].name, f->addr[i],
						     end - f->addr[i] };
	}
	return n;
}

/* A rejection whose diagnostic must name the function at fault. */
static void expect_function_reject(const char *what, struct fl_jit_reg *r, const char *says)
{
	struct fl_diag d = { 0 };
	int id = fl_jit_register(r, &d);

	if (id != -EINVAL) {
		fail("%s: got %d (%s), want -EINVAL", what, id, id < 0 ? strerror(-id) : "an id");
		if (id > 0)
			fl_jit_unregister(id);
		return;
	}
	if (!strstr(d.msg, says))
		fail("%s: diagnostic \"%s\" does not say \"%s\"", what, d.msg, says);
	printf("  %s: %s\n", what, d.msg);
}

/*
 * m is not registered: each bad list of functions alone makes the
 * registration fail (without the checks it would succeed), and nothing is
 * registered; the good list registers.
 */
static void function_names_are_checked(const struct jit_module *m, const struct jit_fns *f)
{
	struct fl_jit_function fns[NFN], bad[NFN];
	struct fl_stats before, after;
	struct fl_jit_reg r;
	char long_name[FL_JIT_MAX_FUNCTION_NAME + 2];
	size_t n = functions_of(m, f, fns);
	int id;

	get_stats(&before);
	jit_reg(m, "names", &r);
	r.functions = bad;
	r.num_functions = n;

	memcpy(bad, fns, sizeof(fns));
	bad[1].start = m->code_start + m->code_size - 1;
	bad[1].size = 2;
	expect_function_reject("function past the code's end", &r, "function 1 (jit_store)");

	memcpy(bad, fns, sizeof(fns));
	bad[0].start = m->code_start - 16;
	expect_function_reject("function before the code", &r, "function 0 (jit_load)");

	memcpy(bad, fns, sizeof(fns));
	bad[2].start = bad[3].start - 1;
	bad[2].size = 2;
	expect_function_reject("overlapping functions", &r, "overlap");

	memcpy(bad, fns, sizeof(fns));
	bad[4].name = "";
	expect_function_reject("empty name", &r, "function 4: no name");

	memcpy(bad, fns, sizeof(fns));
	bad[4].name = NULL;
	expect_function_reject("no name", &r, "function 4: no name");

	memcpy(bad, fns, sizeof(fns));
	bad[3].size = 0;
	expect_function_reject("size 0", &r, "function 3 (jit_far): size 0");

	memcpy(bad, fns, sizeof(fns));
	bad[2].name = "two\nlines";
	expect_function_reject("newline in a name", &r, "function 2: newline");

	memset(long_name, 'x', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = 0;
	memcpy(bad, fns, sizeof(fns));
	bad[0].name = long_name;
	expect_function_reject("name too long", &r, "function 0: name longer than 4096");

	r.functions = NULL;
	expect_function_reject("functions at NULL", &r, "functions at NULL");

	get_stats(&after);
	if (after.modules != before.modules || after.sites != before.sites)
		fail("rejections registered something: %u modules, %u sites (were %u, %u)",
		     after.modules, after.sites, before.modules, before.sites);

	/* The longest name allowed, and the good list: registered. */
	long_name[FL_JIT_MAX_FUNCTION_NAME] = 0;
	fns[0].name = long_name;
	r.functions = fns;
	id = fl_jit_register(&r, NULL);
	if (id <= 0)
		fail("good functions: %d (%s)", id, strerror(-id));
	else
		unregister(id);
}

/*
 * A caller built before the functions existed passes a shorter struct:
 * whatever follows it in memory is not read as functions.
 */
static void older_caller_passes_no_functions(const struct jit_module *m)
{
	union {
		struct fl_jit_reg r;
		unsigned char bytes[sizeof(struct fl_jit_reg)];
	} u;
	int id;

	jit_reg(m, "old caller", &u.r);
	memset(u.bytes + offsetof(struct fl_jit_reg, functions), 0xa5,
	       sizeof(u.bytes) - offsetof(struct fl_jit_reg, functions));
	u.r.sz = offsetof(struct fl_jit_reg, functions);
	id = fl_jit_register(&u.r, NULL);
	if (id <= 0)
		fail("shorter struct: %d (%s)", id, strerror(-id));
	else
		unregister(id);
}

static void two_engines_dispatch_side_by_side(const struct jit_module *m1,
					      const struct jit_fns *f1, int id1,
					      const struct jit_module *m2,
					      const struct jit_fns *f2)
{
	struct fl_stats before;
	int id2;

	get_stats(&before);
	id2 = do_register(m2, "jit-2");
	if (id2 <= 0)
		return;
	if (id2 == id1)
		fail("both modules have id %d", id1);
	null_calls_take_the_handler_path(f1);
	null_calls_take_the_handler_path(f2);
	site_counts_match_calls(m1, id1, "jit-again", 2 * CALLS);
	site_counts_match_calls(m2, id2, "jit-2", CALLS);
	stats_match_calls(&before, 2, 12 * CALLS);
	unregister(id2);
}

static void reused_code_address_dispatches(uint64_t old_start)
{
	struct jit_module m = { 0 };
	struct jit_fns f;
	struct fl_stats before;
	int id;

	compile(&m, &f, "jit-3");
	printf("  new code at %#lx, freed code was at %#lx%s\n",
	       (unsigned long)m.code_start, (unsigned long)old_start,
	       m.code_start == old_start ? " (same address)" : "");
	get_stats(&before);
	id = do_register(&m, "jit-3");
	if (id > 0) {
		null_calls_take_the_handler_path(&f);
		site_counts_match_calls(&m, id, "jit-3", CALLS);
		stats_match_calls(&before, 1, 6 * CALLS);
		unregister(id);
	}
	jit_free(&m);
}

int main(void)
{
	struct jit_module m1 = { 0 }, m2 = { 0 };
	struct jit_fns f1, f2;
	struct fl_init_opts opts = { .sz = sizeof(opts), .flags = FL_INIT_NO_DISCOVERY };
	struct fl_stats before;
	struct site_walk w;
	uint64_t old_start;
	int rc, id;

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* For jit_npe: MCJIT resolves it here, not through dlsym. */
	LLVMAddSymbol("jit_npe", (void *)jit_npe);
	jit_setup();
	compile(&m1, &f1, "jit-1");

	compile(&m2, &f2, "jit-2");

	CHECK("register_before_init_is_enodev", register_before_init_is_enodev(&m1));
	CHECK("counter_slots_are_reused", counter_slots_are_reused(&m1, &m2));
	CHECK("mcjit_faultmap_holds_runtime_addresses",
	      mcjit_faultmap_holds_runtime_addresses(&m1, &f1));

	rc = fl_init(&opts);
	if (rc) {
		current = "fl_init";
		fail("%d (%s)", rc, strerror(-rc));
		printf("FAIL jit\n");
		return 1;
	}
	get_stats(&before);
	current = "register";
	id = do_register(&m1, "jit-1");
	if (id <= 0) {
		printf("FAIL jit\n");
		return 1;
	}
	printf("ok register (module %d)\n", id);

	CHECK("register_rejects_bad_input", register_rejects(&m1, id));
	CHECK("function_names_are_checked", function_names_are_checked(&m2, &f2));
	CHECK("older_caller_passes_no_functions", older_caller_passes_no_functions(&m2));
	CHECK("null_calls_take_the_handler_path", null_calls_take_the_handler_path(&f1));
	CHECK("site_counts_match_calls", site_counts_match_calls(&m1, id, "jit-1", CALLS));
	CHECK("stats_match_calls", stats_match_calls(&before, 1, 6 * CALLS));

	current = "unregister";
	unregister(id);
	if (sites_of(id, &w) != 0)
		fail("%zu sites left after unregister", w.n);
	CHECK("unregistered_null_call_dies_of_sigsegv",
	      unregistered_null_call_dies_of_sigsegv(f1.load));
	CHECK("unregistered_fault_reaches_app_handler",
	      unregistered_fault_reaches_app_handler(f1.load));

	CHECK("reregistered_module_dispatches", reregistered_module_dispatches(&m1, &f1, &id));
	if (id > 0)
		CHECK("two_engines_dispatch_side_by_side",
		      two_engines_dispatch_side_by_side(&m1, &f1, id, &m2, &f2));
	current = "unregister";
	if (id > 0)
		unregister(id);
	old_start = m1.code_start;
	jit_free(&m1);
	jit_free(&m2);
	CHECK("reused_code_address_dispatches", reused_code_address_dispatches(old_start));

	if (failures) {
		printf("FAIL jit: %d error(s)\n", failures);
		return 1;
	}
	printf("PASS jit\n");
	return 0;
}
