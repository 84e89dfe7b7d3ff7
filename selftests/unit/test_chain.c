// SPDX-License-Identifier: MIT
/*
 * The kernel's action for SIGSEGV and SIGBUS mirrors the recorded one
 * (lib/dispatch/chain.c, fl_chain_mirror): faultline's handler with the
 * application's sa_mask, SA_NODEFER and SA_RESTART, so that an unclaimed
 * fault reaches the application's handler with the mask the kernel set.
 * These tests prove the mirror follows every fl_sigaction, that the
 * application's handler runs with exactly the mask it asked for also when
 * the kernel delivered through another mirror (a signal in flight while the
 * action changed, an action put back by hand), that the handshake's signal
 * stays unblocked in faultline's handler, and that unwinders cross the
 * mirror's signal frame.  Each test runs in its own process (CK_FORK).
 */
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include <faultline/dispatch.h>

#include "dispatch/dispatch.h"

#include "../common/kaction.h"
#include "jitcode.h"
#include "suites.h"

/* What the application's handler saw at its last call. */
static volatile int app_calls;
static sigset_t app_blocked;
static void *app_frames[64];
static volatile int app_nframes;
static volatile uintptr_t app_fault_pc;
/* Where the handler ran: a local's address, its siginfo's and ucontext's, the interrupted sp. */
static volatile uintptr_t app_local, app_si, app_uc, app_sp;

static void app_handler(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	(void)sig;
	pthread_sigmask(SIG_BLOCK, NULL, &app_blocked);
	app_fault_pc = test_uc_pc(uc);
	app_local = (uintptr_t)&uc;
	app_si = (uintptr_t)si;
	app_uc = (uintptr_t)uc;
	app_sp = test_uc_sp(uc);
	app_nframes = backtrace(app_frames, 64);
	/* Skip the load. */
	test_uc_skip(uc, JIT_LOAD_BYTES);
	app_calls++;
}

static void app_action(struct sigaction *a, int flags, int masked)
{
	memset(a, 0, sizeof(*a));
	a->sa_sigaction = app_handler;
	a->sa_flags = SA_SIGINFO | flags;
	sigemptyset(&a->sa_mask);
	if (masked)
		sigaddset(&a->sa_mask, masked);
}

/* The kernel's action for sig, restorer included (glibc reports it). */
static void kernel_action(int sig, struct sigaction *out)
{
	ck_assert_int_eq(sigaction(sig, NULL, out), 0);
}


/* An unclaimed fault: a NULL load in code nobody registered. */
static void unclaimed_fault(struct jit *j)
{
	int calls = app_calls;

	j->load(NULL);
	ck_assert_int_eq(app_calls, calls + 1);
}

START_TEST(mirror_follows_every_recorded_action)
{
	struct sigaction a, k;

	jit_init_only();
	app_action(&a, SA_NODEFER | SA_RESTART, SIGUSR1);
	ck_assert_int_eq(fl_sigaction(SIGSEGV, &a, NULL), 0);
	kernel_action(SIGSEGV, &k);
	ck_assert_ptr_eq(k.sa_sigaction, fl_dispatch_handler);
	ck_assert_int_eq(sigismember(&k.sa_mask, SIGUSR1), 1);
	ck_assert(k.sa_flags & SA_NODEFER);
	ck_assert(k.sa_flags & SA_RESTART);
	ck_assert(k.sa_flags & SA_ONSTACK);

	app_action(&a, 0, SIGUSR2);
	ck_assert_int_eq(fl_sigaction(SIGSEGV, &a, NULL), 0);
	kernel_action(SIGSEGV, &k);
	ck_assert_ptr_eq(k.sa_sigaction, fl_dispatch_handler);
	ck_assert_int_eq(sigismember(&k.sa_mask, SIGUSR1), 0);
	ck_assert_int_eq(sigismember(&k.sa_mask, SIGUSR2), 1);
	ck_assert(!(k.sa_flags & SA_NODEFER));
	ck_assert(!(k.sa_flags & SA_RESTART));
	/* SA_RESETHAND stays the chain's: the kernel must keep our handler. */
	app_action(&a, SA_RESETHAND, 0);
	ck_assert_int_eq(fl_sigaction(SIGBUS, &a, NULL), 0);
	kernel_action(SIGBUS, &k);
	ck_assert_ptr_eq(k.sa_sigaction, fl_dispatch_handler);
	ck_assert(!(k.sa_flags & SA_RESETHAND));

	/* Nothing of the application's to run: nothing blocked, SA_NODEFER. */
	memset(&a, 0, sizeof(a));
	a.sa_handler = SIG_DFL;
	ck_assert_int_eq(fl_sigaction(SIGSEGV, &a, NULL), 0);
	kernel_action(SIGSEGV, &k);
	ck_assert_ptr_eq(k.sa_sigaction, fl_dispatch_handler);
	ck_assert_int_eq(sigismember(&k.sa_mask, SIGUSR2), 0);
	ck_assert(k.sa_flags & SA_NODEFER);
}
END_TEST

static void assert_blocked(int usr1, int usr2, int segv)
{
	ck_assert_int_eq(sigismember(&app_blocked, SIGUSR1), usr1);
	ck_assert_int_eq(sigismember(&app_blocked, SIGUSR2), usr2);
	ck_assert_int_eq(sigismember(&app_blocked, SIGSEGV), segv);
}

START_TEST(handler_runs_with_its_mask_through_any_mirror)
{
	struct sigaction a, b, mirror_a, plain;
	struct jit j;

	jit_init_only();
	jit_make(&j);

	/* Through its own mirror: the kernel's mask. */
	app_action(&a, 0, SIGUSR2);
	ck_assert_int_eq(fl_sigaction(SIGSEGV, &a, NULL), 0);
	kernel_action(SIGSEGV, &mirror_a);
	unclaimed_fault(&j);
	assert_blocked(0, 1, 1);

	/*
	 * The action changed while a signal was in flight: the kernel applied
	 * a's mirror, the handler now recorded is b's, and b's mask is the
	 * one it runs with.
	 */
	app_action(&b, SA_NODEFER, SIGUSR1);
	ck_assert_int_eq(fl_sigaction(SIGSEGV, &b, NULL), 0);
	ck_assert_int_eq(t_rt_sigaction(SIGSEGV, &mirror_a), 0);
	unclaimed_fault(&j);
	assert_blocked(1, 0, 0);

	/* Our handler with libc's restorer: no mirror is known. */
	plain = mirror_a;
	ck_assert_int_eq(sigaction(SIGSEGV, &plain, NULL), 0);
	unclaimed_fault(&j);
	assert_blocked(1, 0, 0);

	/* And back through b's own mirror. */
	ck_assert_int_eq(fl_sigaction(SIGSEGV, &b, NULL), 0);
	unclaimed_fault(&j);
	assert_blocked(1, 0, 0);
}
END_TEST

START_TEST(mirror_leaves_the_handshake_signal_unblocked)
{
	struct sigaction a, k;
	struct jit j;
	int park = SIGRTMAX - FL_PARK_SIGNAL_FROM_MAX;

	/* scripts/qemu-user.sh says so: the arm64 guest runs this one. */
	if (getenv("FL_QEMU_USER")) {
		printf("skip: mirror_leaves_the_handshake_signal_unblocked: under qemu-user no "
		       "program can block signal %d (qemu keeps the last real-time signals for "
		       "itself); it runs in the arm64 guest\n", park);
		return;
	}
	jit_init_only();
	jit_make(&j);
	/* As fl_patch_enable sets it, before fl_dispatch_install_trap. */
	fl_park.signo = park;
	memset(&a, 0, sizeof(a));
	a.sa_sigaction = app_handler;
	a.sa_flags = SA_SIGINFO;
	sigfillset(&a.sa_mask);
	ck_assert_int_eq(fl_sigaction(SIGSEGV, &a, NULL), 0);
	kernel_action(SIGSEGV, &k);
	ck_assert_int_eq(sigismember(&k.sa_mask, park), 0);
	ck_assert_int_eq(sigismember(&k.sa_mask, SIGUSR1), 1);
	/* The application's handler still runs with all it asked for. */
	unclaimed_fault(&j);
	ck_assert_int_eq(sigismember(&app_blocked, park), 1);
	ck_assert_int_eq(sigismember(&app_blocked, SIGUSR1), 1);
}
END_TEST

START_TEST(backtrace_crosses_the_mirror_signal_frame)
{
	struct sigaction a;
	struct jit j;
	int found = 0;

	jit_init_only();
	jit_make(&j);
	app_action(&a, 0, 0);
	ck_assert_int_eq(fl_sigaction(SIGSEGV, &a, NULL), 0);
	unclaimed_fault(&j);
	/*
	 * libgcc's unwinder knows a signal frame by its restorer's bytes: the
	 * frame after it is the faulting instruction's.
	 */
	for (int i = 0; i < app_nframes; i++)
		found |= (uintptr_t)app_frames[i] == app_fault_pc;
	ck_assert_msg(found, "the faulting PC %#lx is not in the handler's backtrace (%d frames)",
		      (unsigned long)app_fault_pc, app_nframes);
}
END_TEST

/*
 * An action without SA_ONSTACK, in a thread with an alternate stack: the
 * handler runs on the interrupted stack, below its stack pointer, with its
 * siginfo and ucontext there too (the kernel's frame for the action, not
 * faultline's on the alternate stack), and the program goes on after.
 */
START_TEST(handler_without_onstack_runs_below_the_interrupted_stack)
{
	static char alt[1 << 16] __attribute__((aligned(16)));
	stack_t ss = { .ss_sp = alt, .ss_size = sizeof(alt) }, old;
	uintptr_t lo = (uintptr_t)alt, hi = lo + sizeof(alt);
	struct sigaction a;
	struct jit j;

	jit_init_only();
	jit_make(&j);
	ck_assert_int_eq(sigaltstack(&ss, &old), 0);
	app_action(&a, 0, 0);
	ck_assert_int_eq(fl_sigaction(SIGSEGV, &a, NULL), 0);
	unclaimed_fault(&j);
	ck_assert_int_eq(sigaltstack(&old, NULL), 0);
	ck_assert_msg(app_local < lo || app_local >= hi, "the handler ran on the alternate stack");
	ck_assert_msg(app_uc < lo || app_uc >= hi, "its ucontext is on the alternate stack");
	ck_assert_msg(app_si < lo || app_si >= hi, "its siginfo is on the alternate stack");
	ck_assert_msg(app_uc < app_sp && app_sp - app_uc < 65536 && app_si < app_sp &&
		      app_local < app_si && app_local < app_uc,
		      "the frame is not below the interrupted sp %#lx: siginfo %#lx, ucontext %#lx, "
		      "a local %#lx", (unsigned long)app_sp, (unsigned long)app_si,
		      (unsigned long)app_uc, (unsigned long)app_local);
}
END_TEST

Suite *chain_suite(void)
{
	Suite *s = suite_create("chain");
	TCase *tc = unit_tcase("mirror");

	tcase_add_test(tc, mirror_follows_every_recorded_action);
	tcase_add_test(tc, handler_runs_with_its_mask_through_any_mirror);
	tcase_add_test(tc, mirror_leaves_the_handshake_signal_unblocked);
	tcase_add_test(tc, backtrace_crosses_the_mirror_signal_frame);
	tcase_add_test(tc, handler_without_onstack_runs_below_the_interrupted_stack);
	suite_add_tcase(s, tc);
	return s;
}
