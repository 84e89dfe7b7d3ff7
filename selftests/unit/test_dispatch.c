// SPDX-License-Identifier: MIT
/*
 * Dispatch through the library API: JIT code registered with
 * fl_jit_register, the four claim rules, unregistration, the chain
 * records of fl_sigaction, a small alternate stack, and registration under
 * concurrency.  Each test runs in its own process (CK_FORK), so each may
 * call fl_init.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <check.h>

#include <faultline/dispatch.h>

#include "dispatch/dispatch.h"
#include "proto/proto.h"
#include "table/table.h"

#include "jitcode.h"
#include "suites.h"

/* The kernel's flag for sa_restorer (x86-64); glibc does not export it. */
#ifndef SA_RESTORER
#define SA_RESTORER 0x04000000
#endif

static int jit_register(struct jit *j, struct fl_diag *d)
{
	return jit_register_as(j, "unit-jit", d);
}

/* Runs fn(arg) in a child; returns its wait status. */
static int in_child(void (*fn)(void *), void *arg)
{
	pid_t pid = fork();
	int status;

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		/* No core files from the deaths these tests expect. */
		struct rlimit no_core = { 0, 0 };

		setrlimit(RLIMIT_CORE, &no_core);
		fn(arg);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return status;
}

/*
 * Died of the fault as it would without faultline: by SIGSEGV, or, in an
 * ASan build, through ASan's SEGV handler (the action faultline chains to).
 */
static int died_of_segv(int status)
{
#ifdef __SANITIZE_ADDRESS__
	if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
		return 1;
#endif
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV;
}

static void call_load_null(void *arg)
{
	struct jit *j = arg;

	_exit(j->load(NULL) == -1 ? 0 : 3);
}

static void call_load_wild(void *arg)
{
	struct jit *j = arg;

	j->load((int *)(uintptr_t)0xdead0000);
}

static void call_store_null(void *arg)
{
	struct jit *j = arg;

	j->store(NULL);
}

static int count_faults(const struct fl_site *s, void *ctx)
{
	uint64_t *total = ctx;

	*total += s->faults;
	return 0;
}

START_TEST(dispatch_jit_load_and_store_resume_at_handlers)
{
	struct jit j;
	struct fl_stats st = { .sz = sizeof(st) };
	uint64_t total = 0;
	int x = 7, id;

	jit_init_only();
	jit_make(&j);
	jit_map(&j, 1 /* FaultingLoad */, 3 /* FaultingStore */);
	id = jit_register(&j, NULL);
	ck_assert_int_gt(id, 0);

	ck_assert_int_eq(j.load(&x), 7);
	for (int i = 0; i < 100; i++)
		ck_assert_int_eq(j.load(NULL), -1);
	ck_assert_int_eq(j.store(&x), 0);
	ck_assert_int_eq(x, 1);
	ck_assert_int_eq(j.store(NULL), -2);
	/* An address in the null area, not just 0. */
	ck_assert_int_eq(j.load((int *)(uintptr_t)0x100), -1);

	ck_assert_int_eq(fl_site_for_each(count_faults, &total), 0);
	ck_assert_uint_eq(total, 102);
	ck_assert_int_eq(fl_stats_get(&st), 0);
	ck_assert_uint_eq(st.claimed, 102);
	ck_assert_uint_eq(st.sites, 2);
	ck_assert_uint_eq(st.handler_replaced, 0);
}
END_TEST

START_TEST(dispatch_wild_address_at_registered_pc_is_not_claimed)
{
	struct jit j;
	int status;

	jit_init_only();
	jit_make(&j);
	jit_map(&j, 1, 3);
	ck_assert_int_gt(jit_register(&j, NULL), 0);
	status = in_child(call_load_wild, &j);
	ck_assert(died_of_segv(status));
}
END_TEST

START_TEST(dispatch_access_kind_must_match)
{
	struct jit j;
	int status;

	jit_init_only();
	jit_make(&j);
	/*
	 * The store registered as a FaultingLoad: its write fault is not one.
	 * The load registered as a FaultingLoadStore: its read fault is.
	 */
	jit_map(&j, 2, 1);
	ck_assert_int_gt(jit_register(&j, NULL), 0);
	status = in_child(call_store_null, &j);
	ck_assert(died_of_segv(status));
	status = in_child(call_load_null, &j);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}
END_TEST

START_TEST(dispatch_unregistered_code_faults_as_before)
{
	struct jit j;
	int id, status;

	jit_init_only();
	jit_make(&j);
	jit_map(&j, 1, 3);
	id = jit_register(&j, NULL);
	ck_assert_int_gt(id, 0);
	status = in_child(call_load_null, &j);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert_int_eq(fl_jit_unregister(id), 0);
	ck_assert_int_eq(fl_jit_unregister(id), -ENOENT);
	status = in_child(call_load_null, &j);
	ck_assert(died_of_segv(status));
	/* And again: registration after unregistration works. */
	ck_assert_int_gt(jit_register(&j, NULL), 0);
	ck_assert_int_eq(j.load(NULL), -1);
}
END_TEST

START_TEST(dispatch_register_rejects_bad_input)
{
	struct jit j;
	struct fl_diag d;
	struct fl_jit_reg reg = { .sz = sizeof(reg) };
	unsigned char junk[3] = { 9, 9, 9 };

	jit_make(&j);
	jit_map(&j, 1, 3);
	/* Before fl_init. */
	ck_assert_int_eq(jit_register(&j, &d), -ENODEV);
	jit_init_only();
	ck_assert_int_eq(fl_init(NULL), -EALREADY);

	ck_assert_int_eq(fl_jit_register(NULL, &d), -EINVAL);
	ck_assert_int_eq(fl_jit_register(&reg, &d), -EINVAL);
	reg.faultmap = junk;
	reg.faultmap_size = sizeof(junk);
	reg.code_start = (uint64_t)(uintptr_t)j.code;
	reg.code_size = 4096;
	ck_assert_int_eq(fl_jit_register(&reg, &d), -EINVAL);
	ck_assert(strstr(d.msg, ".llvm_faultmaps") != NULL);

	/* A handler PC outside the code range. */
	reg.faultmap = j.map.buf;
	reg.faultmap_size = j.map.len;
	reg.code_size = 10;
	ck_assert_int_eq(fl_jit_register(&reg, &d), -EINVAL);
	ck_assert(strstr(d.msg, "outside the code range") != NULL);

	/* Two modules over the same code. */
	ck_assert_int_gt(jit_register(&j, &d), 0);
	ck_assert_int_eq(jit_register(&j, &d), -EEXIST);
}
END_TEST

static volatile sig_atomic_t app_calls;
static volatile uintptr_t app_addr;

static void app_handler(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	(void)sig;
	app_calls++;
	app_addr = (uintptr_t)si->si_addr;
	/* Skip the load, as a runtime's own handler might. */
	test_uc_skip(uc, JIT_LOAD_BYTES);
}

START_TEST(dispatch_unclaimed_fault_reaches_recorded_handler)
{
	struct sigaction act, old, before;
	struct jit j;

	ck_assert_int_eq(sigaction(SIGSEGV, NULL, &before), 0);
	jit_init_only();
	jit_make(&j);
	jit_map(&j, 1, 3);
	ck_assert_int_gt(jit_register(&j, NULL), 0);

	memset(&act, 0, sizeof(act));
	act.sa_sigaction = app_handler;
	act.sa_flags = SA_SIGINFO;
	sigemptyset(&act.sa_mask);
	sigaddset(&act.sa_mask, SIGUSR1);
	sigaddset(&act.sa_mask, SIGKILL);
	ck_assert_int_eq(fl_sigaction(SIGSEGV, &act, &old), 0);
	ck_assert_ptr_eq(old.sa_handler, before.sa_handler);
	ck_assert_int_eq(fl_sigaction(SIGSEGV, NULL, &old), 0);
	ck_assert_ptr_eq(old.sa_sigaction, app_handler);
	ck_assert_int_eq(old.sa_flags & ~SA_RESTORER, SA_SIGINFO);
	/* As the kernel reports it: SIGKILL and SIGSTOP cannot be masked. */
	ck_assert_int_eq(sigismember(&old.sa_mask, SIGKILL), 0);
	ck_assert_int_eq(sigismember(&old.sa_mask, SIGUSR1), 1);

	/* Claimed: the application's handler is not involved. */
	ck_assert_int_eq(j.load(NULL), -1);
	ck_assert_int_eq(app_calls, 0);
	/* A wild address goes to it, with the fault's siginfo. */
	j.load((int *)(uintptr_t)0xdead0000);
	ck_assert_int_eq(app_calls, 1);
	ck_assert_uint_eq(app_addr, 0xdead0000);
	/* The kernel still has faultline's handler. */
	ck_assert_int_eq(sigaction(SIGSEGV, NULL, &old), 0);
	ck_assert_ptr_ne(old.sa_sigaction, app_handler);
}
END_TEST

static void *on_small_altstack(void *arg)
{
	struct jit *j = arg;
	long min = sysconf(_SC_MINSIGSTKSZ);
	stack_t ss = { .ss_size = (size_t)(min > MINSIGSTKSZ ? min : MINSIGSTKSZ) };
	int r;

	ss.ss_sp = mmap(NULL, ss.ss_size, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ss.ss_sp == MAP_FAILED || sigaltstack(&ss, NULL) != 0)
		return (void *)1;
	r = j->load(NULL);
	return (void *)(uintptr_t)(r == -1 ? 0 : 2);
}

START_TEST(dispatch_runs_on_a_minimal_sigaltstack)
{
	struct jit j;
	pthread_t t;
	void *r;

	jit_init_only();
	jit_make(&j);
	jit_map(&j, 1, 3);
	ck_assert_int_gt(jit_register(&j, NULL), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, on_small_altstack, &j), 0);
	ck_assert_int_eq(pthread_join(t, &r), 0);
	ck_assert_ptr_eq(r, NULL);
}
END_TEST

/*
 * Two threads fail checks in module A while a third registers and
 * unregisters other modules as fast as it can: every fault must still
 * land on A's handler, and no snapshot may be freed under a reader.
 */
struct churn {
	struct jit a;
	_Atomic int stop;
	_Atomic unsigned long wrong;
	_Atomic unsigned long faults;
};

static void *fault_loop(void *arg)
{
	struct churn *c = arg;
	int x = 5;

	while (!atomic_load(&c->stop)) {
		if (c->a.load(NULL) != -1 || c->a.load(&x) != 5)
			atomic_fetch_add(&c->wrong, 1);
		atomic_fetch_add(&c->faults, 1);
	}
	return NULL;
}

START_TEST(dispatch_survives_registration_churn)
{
	struct churn c = { 0 };
	struct jit others[8];
	pthread_t t[2];
	int ids[8];

	jit_init_only();
	jit_make(&c.a);
	jit_map(&c.a, 1, 3);
	ck_assert_int_gt(jit_register(&c.a, NULL), 0);
	for (int i = 0; i < 8; i++) {
		jit_make(&others[i]);
		jit_map(&others[i], 1, 3);
	}
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, fault_loop, &c), 0);
	for (int round = 0; round < 300; round++) {
		for (int i = 0; i < 8; i++)
			ck_assert_int_gt(ids[i] = jit_register(&others[i], NULL), 0);
		for (int i = 0; i < 8; i++)
			ck_assert_int_eq(fl_jit_unregister(ids[i]), 0);
	}
	atomic_store(&c.stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	ck_assert_uint_eq(atomic_load(&c.wrong), 0);
	ck_assert_uint_gt(atomic_load(&c.faults), 0);
}
END_TEST


/*
 * Fork while other threads are inside the table's protocol: a handler
 * between fl_snapshot_enter and leave (a count the child's grace periods
 * must not wait for), and a writer in its grace period holding the
 * registry lock (which the child must not inherit locked).
 */
struct forking {
	struct jit parent_code;
	struct jit child_code;
	atomic_int leave;		/* the reader leaves when set */
	unsigned leave_after_ms;	/* or, if not 0, this long after entering */
	atomic_int entered;
};

static void *hold_snapshot(void *arg)
{
	struct forking *f = arg;
	const struct fl_snapshot *snap;
	unsigned parity = fl_snapshot_enter(&snap);

	atomic_store(&f->entered, 1);
	if (f->leave_after_ms)
		usleep(f->leave_after_ms * 1000);
	else
		while (!atomic_load(&f->leave))
			usleep(1000);
	fl_snapshot_leave(parity);
	return NULL;
}

static void *register_parent_code(void *arg)
{
	struct forking *f = arg;

	jit_register(&f->parent_code, NULL);
	return NULL;
}

/* In the child: a registration publishes, waits a grace period, dispatches. */
static void child_registers(void *arg)
{
	struct forking *f = arg;
	int id;

	/* A grace period that waits for ever dies of SIGALRM, before Check's limit. */
	signal(SIGALRM, SIG_DFL);
	alarm(UNIT_TIMEOUT_S / 2);
	id = jit_register(&f->child_code, NULL);
	if (id <= 0)
		_exit(3);
	if (f->child_code.load(NULL) != -1)
		_exit(4);
	_exit(fl_jit_unregister(id) == 0 ? 0 : 5);
}

static void forking_init(struct forking *f)
{
	memset(f, 0, sizeof(*f));
	jit_init_only();
	jit_make(&f->parent_code);
	jit_map(&f->parent_code, 1, 3);
	jit_make(&f->child_code);
	jit_map(&f->child_code, 1, 3);
}

START_TEST(fork_child_ignores_parent_threads_in_the_handler)
{
	struct forking f;
	pthread_t reader;
	int status;

	forking_init(&f);
	ck_assert_int_eq(pthread_create(&reader, NULL, hold_snapshot, &f), 0);
	while (!atomic_load(&f.entered))
		usleep(1000);
	status = in_child(child_registers, &f);
	atomic_store(&f.leave, 1);
	pthread_join(reader, NULL);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child status %#x (SIGALRM: its grace period waited for a parent thread)",
		      status);
}
END_TEST

START_TEST(fork_during_a_grace_period_leaves_the_child_unlocked)
{
	struct forking f;
	pthread_t reader, writer;
	uint64_t epoch;
	int status;

	forking_init(&f);
	f.leave_after_ms = 300;
	epoch = atomic_load(&fl_dispatch.epoch);
	ck_assert_int_eq(pthread_create(&reader, NULL, hold_snapshot, &f), 0);
	while (!atomic_load(&f.entered))
		usleep(1000);
	ck_assert_int_eq(pthread_create(&writer, NULL, register_parent_code, &f), 0);
	/* The writer is in its grace period, under the registry lock. */
	while (atomic_load(&fl_dispatch.epoch) == epoch)
		usleep(1000);
	status = in_child(child_registers, &f);
	pthread_join(reader, NULL);
	pthread_join(writer, NULL);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child status %#x (SIGALRM: it inherited the registry locked)", status);
}
END_TEST

static void exit_42(int sig)
{
	(void)sig;
	_exit(42);
}

#define NESTED_ALTSTACK (256 * 1024)

struct nested {
	struct jit *j;
	unsigned char *altstack;	/* MAP_SHARED: the parent reads it after */
};

static void fault_inside_handler(void *arg)
{
	struct nested *n = arg;
	/* A snapshot whose module array is unmapped: the lookup faults. */
	static struct fl_snapshot broken = {
		.num_modules = 1,
		.modules = (const struct fl_snap_module *)(uintptr_t)0x18,
	};
	stack_t ss = { .ss_sp = n->altstack, .ss_size = NESTED_ALTSTACK };
	struct sigaction act;

	memset(&act, 0, sizeof(act));
	act.sa_handler = exit_42;
	fl_sigaction(SIGSEGV, &act, NULL);
	sigaltstack(&ss, NULL);
	fl_snapshot_publish(&broken);
	n->j->load(NULL);
	_exit(3);
}

/* The slots of module id in the region's site table: *first, and how many. */
static uint32_t slots_of(int id, uint32_t *first)
{
	struct fl_shm_layout l;
	struct fl_shm_site *t = (struct fl_shm_site *)((char *)fl_counters_region(&l) +
						       l.sites_offset);
	uint32_t n = 0;

	for (uint32_t i = 0; i < l.capacity; i++) {
		if (t[i].module == (uint32_t)id && t[i].kind) {
			if (!n)
				*first = i;
			n++;
		}
	}
	return n;
}

static _Atomic uint32_t *slot_state(uint32_t slot)
{
	struct fl_shm_layout l;
	struct fl_shm_site *t = (struct fl_shm_site *)((char *)fl_counters_region(&l) +
						       l.sites_offset);

	return &t[slot].state;
}

/*
 * What faultlined must find after the module is gone: its slots keep the
 * module and its final counts (RETIRED) and are not reused until the
 * daemon marks them SAVED; then they are cleared and reused.  Unsaved ones
 * are reused only when nothing else is left.
 */
START_TEST(unregistered_module_keeps_its_counts_until_the_daemon_saves_them)
{
	struct fl_init_opts o = { .sz = sizeof(o),
				  .flags = FL_INIT_NO_DISCOVERY | FL_INIT_NO_AGENT, .max_sites = 4 };
	struct jit a, b, c;
	uint32_t a0 = 0, b0 = 0, c0 = 0;
	int ida, idb, idc;

	ck_assert_int_eq(fl_init(&o), 0);
	jit_make(&a);
	jit_map(&a, 1, 3);
	ida = jit_register(&a, NULL);
	ck_assert_int_gt(ida, 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(a.load(NULL), -1);
	ck_assert_uint_eq(slots_of(ida, &a0), 2);
	ck_assert_int_eq(fl_jit_unregister(ida), 0);

	/* Retired: described still, the count there, not reused. */
	ck_assert_uint_eq(slots_of(ida, &a0), 2);
	ck_assert_uint_eq(atomic_load(slot_state(a0)), FL_SHM_SITE_RETIRED);
	ck_assert_uint_eq(atomic_load(&fl_dispatch.counters[a0]), 3);
	jit_make(&b);
	jit_map(&b, 1, 3);
	idb = jit_register(&b, NULL);
	ck_assert_int_gt(idb, 0);
	ck_assert_uint_eq(slots_of(idb, &b0), 2);
	ck_assert_uint_ne(b0, a0);
	ck_assert_int_eq(b.load(NULL), -1);
	ck_assert_int_eq(fl_jit_unregister(idb), 0);

	/* The daemon saved a's counts: its slots are the ones reused. */
	atomic_store(slot_state(a0), FL_SHM_SITE_SAVED);
	atomic_store(slot_state(a0 + 1), FL_SHM_SITE_SAVED);
	jit_make(&c);
	jit_map(&c, 1, 3);
	idc = jit_register(&c, NULL);
	ck_assert_int_gt(idc, 0);
	ck_assert_uint_eq(slots_of(idc, &c0), 2);
	ck_assert_uint_eq(c0, a0);
	ck_assert_uint_eq(atomic_load(&fl_dispatch.counters[c0]), 0);
	ck_assert_uint_eq(slots_of(ida, &a0), 0);
	/* b's are still kept, its count with them. */
	ck_assert_uint_eq(atomic_load(slot_state(b0)), FL_SHM_SITE_RETIRED);
	ck_assert_uint_eq(atomic_load(&fl_dispatch.counters[b0]), 1);

	/* No room left but b's unsaved slots: those are reused rather than fail. */
	ck_assert_int_eq(fl_jit_unregister(idc), 0);
	atomic_store(slot_state(c0), FL_SHM_SITE_SAVED);
	atomic_store(slot_state(c0 + 1), FL_SHM_SITE_SAVED);
	ck_assert_int_gt(jit_register(&a, NULL), 0);
	ck_assert_int_gt(jit_register(&b, NULL), 0);
}
END_TEST

START_TEST(dispatch_fault_inside_handler_dies_by_default_action)
{
	struct nested n;
	struct jit j;
	size_t used = 0;
	int status;

	jit_init_only();
	jit_make(&j);
	jit_map(&j, 1, 3);
	ck_assert_int_gt(jit_register(&j, NULL), 0);
	n.j = &j;
	n.altstack = mmap(NULL, NESTED_ALTSTACK, PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(n.altstack, MAP_FAILED);
	memset(n.altstack, 0xa5, NESTED_ALTSTACK);

	/*
	 * Neither the application's handler (which would exit 42) nor a
	 * recursion: the nested fault restores SIG_DFL and the process dies
	 * by it, two signal frames deep.  Looping handlers would have used
	 * the whole alternate stack before the kernel gave up.
	 */
	status = in_child(fault_inside_handler, &n);
	ck_assert(died_of_segv(status));
	while (used < NESTED_ALTSTACK && n.altstack[used] == 0xa5)
		used++;
	used = NESTED_ALTSTACK - used;
	ck_assert_uint_lt(used, 32 * 1024);
	ck_assert_uint_gt(used, 0);
}
END_TEST

Suite *dispatch_suite(void)
{
	Suite *s = suite_create("dispatch");
	TCase *tc = unit_tcase("dispatch");

	tcase_add_test(tc, dispatch_jit_load_and_store_resume_at_handlers);
	tcase_add_test(tc, dispatch_wild_address_at_registered_pc_is_not_claimed);
	tcase_add_test(tc, dispatch_access_kind_must_match);
	tcase_add_test(tc, dispatch_unregistered_code_faults_as_before);
	tcase_add_test(tc, dispatch_register_rejects_bad_input);
	tcase_add_test(tc, dispatch_unclaimed_fault_reaches_recorded_handler);
	tcase_add_test(tc, dispatch_runs_on_a_minimal_sigaltstack);
	tcase_add_test(tc, dispatch_survives_registration_churn);
	tcase_add_test(tc, unregistered_module_keeps_its_counts_until_the_daemon_saves_them);
	tcase_add_test(tc, dispatch_fault_inside_handler_dies_by_default_action);
	tcase_add_test(tc, fork_child_ignores_parent_threads_in_the_handler);
	tcase_add_test(tc, fork_during_a_grace_period_leaves_the_child_unlocked);
	suite_add_tcase(s, tc);
	return s;
}
