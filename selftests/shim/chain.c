// SPDX-License-Identifier: MIT
/*
 * The chaining matrix: an application with its own SIGSEGV/SIGBUS actions.
 *
 *   chain CASE WHEN       WHEN: preinit | ctor | main
 *
 * Each case installs an action (install) and then faults, is sent signals,
 * queries its actions (run), printing what its handlers saw.  The runner
 * runs the implicit build under the shim and the explicit build without it
 * and wants the same output, exit status, signal and core flag: whatever
 * faultline does not claim reaches the application as the kernel would
 * have delivered it.  The null checks of sites.ll run in between (claimed
 * under the shim, explicit without it): the application's handlers must
 * never see them.
 *
 * WHEN says when install runs:
 *   preinit  from this executable's .preinit_array, before any library's
 *            constructor, the shim's included;
 *   ctor     from the constructor of libchainctor.so, a DT_NEEDED library
 *            of this executable (glibc runs it before the constructor of
 *            an LD_PRELOAD library: DT_NEEDED libraries come later in the
 *            search list and constructors run in reverse);
 *   main     from main, after the shim has set up.
 * The first two print whether the kernel's action was still the default
 * (a raw rt_sigaction query): "yes" in both runs proves the order.
 *
 * Handlers only record what they see (recs[]); main prints it afterwards.
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/ucontext.h>
#include <unistd.h>

#include "shim_arch.h"
#include "sites.h"
#include "truncated.h"

/* libchainctor.so calls this from its constructor (see chainctor.c). */
extern void (*chain_ctor_hook)(int argc, char **argv);

/* The probes (shim_arch.h): a load and a store a handler can step over. */
int probe_load(const volatile int *p);
void probe_store(volatile int *p, int x);
extern const char probe_load_end[], probe_store_end[];
__asm__(SHIM_PROBES_ASM);

/* ------------------------------------------------------------------------
 * What handlers saw
 */

struct rec {
	int sig;
	int has_info;
	int code;
	uintptr_t addr;
	uintptr_t rip;
	int err_write;
	int trapno;
	pid_t pid;
	int value;
	int saved_errno;
	int depth;
	int on_altstack;	/* a local of the handler is inside alt[] */
	int ss_flags;		/* what sigaltstack() says */
	uint64_t blocked;	/* the thread's mask inside the handler */
	uint64_t uc_mask;	/* uc_sigmask (the interrupted mask) */
	/*
	 * Where the frame is: where get_sigframe puts it below the top of
	 * the alternate stack or below the interrupted red zone ("alt-top",
	 * "below-sp"), or neither; the handler's locals and the frame's
	 * parts as distances from the ucontext.
	 */
	int has_frame;
	const char *frame_at;
	intptr_t local_below_uc, si_above_uc, fp_above_uc;
};

#define MAX_RECS 16
static struct rec recs[MAX_RECS];
static volatile int nrecs;
static volatile int depth;
static sigjmp_buf jb;
static __thread sigjmp_buf *thread_jb;

static char alt[1 << 16] __attribute__((aligned(16)));
static char *map_base;		/* a mapping the case faults in */
static size_t map_size;

static uint64_t mask_bits(const sigset_t *set)
{
	uint64_t bits = 0;

	for (int s = 1; s <= 64; s++)
		if (sigismember(set, s) == 1)
			bits |= 1ull << (s - 1);
	return bits;
}

static void note_frame(struct rec *r, const siginfo_t *si, const ucontext_t *uc,
		       const char *local)
{
	uintptr_t at = (uintptr_t)uc;

	r->has_frame = 1;
	if (at == shim_kernel_uc_below((uintptr_t)alt + sizeof(alt), uc))
		r->frame_at = "alt-top";
	else if (at == shim_kernel_uc_below(shim_uc_sp(uc) - SHIM_RED_ZONE, uc))
		r->frame_at = "below-sp";
	else
		r->frame_at = "elsewhere";
	r->local_below_uc = (intptr_t)(at - (uintptr_t)local);
	r->si_above_uc = si ? (intptr_t)((uintptr_t)si - at) : 0;
	r->fp_above_uc = shim_uc_fp_offset(uc);
}

/* Signal context: only syscalls and stores. */
static struct rec *note(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	struct rec *r;
	sigset_t cur;
	stack_t ss;
	char local;
	int i = nrecs;

	if (i >= MAX_RECS)
		i = MAX_RECS - 1;
	nrecs = i + 1;
	r = &recs[i];
	memset(r, 0, sizeof(*r));
	r->saved_errno = errno;
	r->sig = sig;
	r->depth = depth;
	sigprocmask(SIG_BLOCK, NULL, &cur);
	r->blocked = mask_bits(&cur);
	r->on_altstack = &local >= alt && &local < alt + sizeof(alt);
	if (sigaltstack(NULL, &ss) == 0)
		r->ss_flags = ss.ss_flags;
	if (si) {
		r->has_info = 1;
		r->code = si->si_code;
		r->addr = (uintptr_t)si->si_addr;
		r->pid = si->si_pid;
		r->value = si->si_value.sival_int;
	}
	if (uc) {
		r->rip = shim_uc_pc(uc);
		r->err_write = shim_uc_wrote(uc);
		r->trapno = shim_uc_trapno(uc);
		r->uc_mask = mask_bits(&uc->uc_sigmask);
		note_frame(r, si, uc, &local);
	}
	errno = r->saved_errno;
	return r;
}

static const char *where(uintptr_t pc)
{
	Dl_info info;

	if (pc == (uintptr_t)probe_load)
		return "probe_load";
	if (pc == (uintptr_t)probe_store)
		return "probe_store";
	if (dladdr((void *)pc, &info) && info.dli_sname)
		return info.dli_sname;
	return "elsewhere";
}

static void print_mask(const char *label, uint64_t bits)
{
	printf(" %s={", label);
	for (int s = 1; s <= 64; s++)
		if (bits & (1ull << (s - 1)))
			printf("%s%d", bits & ((1ull << (s - 1)) - 1) ? "," : "", s);
	printf("}");
}

static void print_recs(void)
{
	for (int i = 0; i < nrecs; i++) {
		const struct rec *r = &recs[i];

		printf("  handler %d: sig=%d depth=%d errno=%d altstack=%d ss_flags=%#x", i,
		       r->sig, r->depth, r->saved_errno, r->on_altstack, r->ss_flags);
		print_mask("blocked", r->blocked);
		if (r->has_info) {
			printf(" code=%d", r->code);
			if (r->code > 0) {
				if (map_base && r->addr >= (uintptr_t)map_base &&
				    r->addr < (uintptr_t)map_base + map_size)
					printf(" addr=map+%#zx", (size_t)(r->addr - (uintptr_t)map_base));
				else if (r->addr < 0x100000000ull)
					printf(" addr=%#" PRIxPTR, r->addr);
				else
					printf(" addr=(high)");
				printf(" pc=%s write=%d trapno=%d", where(r->rip), r->err_write,
				       r->trapno);
			} else {
				printf(" from_self=%d value=%d", r->pid == getpid(), r->value);
			}
			print_mask("uc_sigmask", r->uc_mask);
		}
		if (r->has_frame)
			printf(" frame=%s local=uc-%td si=uc+%td fpregs=uc+%td", r->frame_at,
			       r->local_below_uc, r->si_above_uc, r->fp_above_uc);
		printf("\n");
	}
	nrecs = 0;
	fflush(stdout);
}

static void print_blocked_now(const char *label)
{
	sigset_t cur;

	sigprocmask(SIG_BLOCK, NULL, &cur);
	printf("%s:", label);
	print_mask("blocked", mask_bits(&cur));
	printf("\n");
}

/* ------------------------------------------------------------------------
 * Handlers
 */

static void h_info_jmp(int sig, siginfo_t *si, void *uc)
{
	note(sig, si, uc);
	if (thread_jb)
		siglongjmp(*thread_jb, 1);
	siglongjmp(jb, 1);
}

static void h_plain_jmp(int sig)
{
	note(sig, NULL, NULL);
	siglongjmp(jb, 1);
}

/* Resumes after a probe by editing the context; returns from anything else. */
static void skip_probe(void *ucv)
{
	ucontext_t *uc = ucv;

	if (shim_uc_pc(uc) == (uintptr_t)probe_load) {
		shim_uc_set_pc(uc, (uintptr_t)probe_load_end);
		shim_uc_set_return(uc, 42);
	} else if (shim_uc_pc(uc) == (uintptr_t)probe_store) {
		shim_uc_set_pc(uc, (uintptr_t)probe_store_end);
	}
}

static void h_info_skip(int sig, siginfo_t *si, void *uc)
{
	note(sig, si, uc);
	if (si->si_code > 0)
		skip_probe(uc);
}

/* Faults again from inside the handler, once. */
static void h_nested(int sig, siginfo_t *si, void *uc)
{
	depth++;
	note(sig, si, uc);
	if (depth == 1) {
		static const char msg[] = "outer handler: faulting again\n";
		int mine = nrecs - 1, v;

		(void)!write(STDOUT_FILENO, msg, sizeof(msg) - 1);
		v = probe_load(NULL);
		recs[mine].value = v;
	}
	skip_probe(uc);
	depth--;
}

static struct sigaction self_act;

/* SA_RESETHAND: reinstalls itself (sigaction from a handler). */
static void h_reinstall(int sig, siginfo_t *si, void *uc)
{
	note(sig, si, uc);
	sigaction(SIGSEGV, &self_act, NULL);
	siglongjmp(jb, 1);
}

/* ------------------------------------------------------------------------
 * Helpers
 */

static void set_action(int sig, void *handler, int flags, const int *mask_sigs)
{
	struct sigaction act;

	memset(&act, 0, sizeof(act));
	if (flags & SA_SIGINFO)
		act.sa_sigaction = (void (*)(int, siginfo_t *, void *))handler;
	else
		act.sa_handler = (void (*)(int))handler;
	act.sa_flags = flags;
	sigemptyset(&act.sa_mask);
	for (; mask_sigs && *mask_sigs; mask_sigs++)
		sigaddset(&act.sa_mask, *mask_sigs);
	if (sigaction(sig, &act, NULL) != 0) {
		perror("sigaction");
		exit(3);
	}
}

static void use_altstack_flags(int flags)
{
	stack_t ss = { .ss_sp = alt, .ss_size = sizeof(alt), .ss_flags = flags };

	if (sigaltstack(&ss, NULL) != 0) {
		perror("sigaltstack");
		exit(3);
	}
}

static void use_altstack(void)
{
	use_altstack_flags(0);
}

static const char *handler_name(uintptr_t h)
{
	if (h == (uintptr_t)SIG_DFL)
		return "SIG_DFL";
	if (h == (uintptr_t)SIG_IGN)
		return "SIG_IGN";
	if (h == (uintptr_t)h_info_jmp)
		return "h_info_jmp";
	if (h == (uintptr_t)h_plain_jmp)
		return "h_plain_jmp";
	if (h == (uintptr_t)h_info_skip)
		return "h_info_skip";
	return "other";
}

/* What sigaction reports, field by field. */
static void print_action(const char *label, const struct sigaction *a)
{
	printf("%s: handler=%s flags=%#x restorer=%s", label,
	       handler_name((uintptr_t)a->sa_handler), (unsigned)a->sa_flags,
	       a->sa_restorer ? "set" : "null");
	print_mask("mask", mask_bits(&a->sa_mask));
	printf("\n");
}

static void query(const char *label, int sig)
{
	struct sigaction a;

	if (sigaction(sig, NULL, &a) != 0) {
		perror("sigaction query");
		exit(3);
	}
	print_action(label, &a);
}

/* The null checks of sites.ll: claimed under the shim, never chained. */
static void null_checks(void)
{
	int before = nrecs;
	long r = 0;

	r += site_load_i32(NULL);
	r += site_load_i8(NULL);
	r += site_load_i64_off(NULL);
	site_store_i32(NULL, 1);
	site_rmw_add_i32(NULL, 1);
	site_store_i64_off(NULL, 1);
	r += site_load_nocall(NULL);
	printf("null checks: returned %ld, handler ran %d times\n", r, nrecs - before);
	fflush(stdout);
}

/* Faults at p by loading (or storing); returns 1 if a handler jumped out. */
static int fault_load(const volatile int *p)
{
	if (sigsetjmp(jb, 1))
		return 1;
	printf("probe_load returned %d\n", probe_load(p));
	return 0;
}

static int fault_store(volatile int *p)
{
	if (sigsetjmp(jb, 1))
		return 1;
	probe_store(p, 1);
	return 0;
}

/* Dies here (or prints that it did not). */
static void fatal_fault(void)
{
	printf("faulting with no way back\n");
	fflush(stdout);
	probe_load(NULL);
	printf("survived the fault\n");
}

static char *chain_truncated_mapping(void)
{
	char *p = truncated_mapping("chain");

	map_base = p;
	map_size = TRUNCATED_SIZE;
	return p;
}

static int recurse(int n)
{
	volatile char pad[1024];

	pad[0] = (char)n;
	pad[sizeof(pad) - 1] = (char)n;
	return n > 1000000000 ? pad[0] : recurse(n + 1) + pad[sizeof(pad) - 1];
}

/* ------------------------------------------------------------------------
 * Cases
 */

static const int usr1_rt[] = { SIGUSR1, 36, SIGKILL, 0 };

static void i_info_jmp(void)
{
	set_action(SIGSEGV, h_info_jmp, SA_SIGINFO, NULL);
}

static int r_siginfo_handler_sees_kernel_fault(void)
{
	char *page;

	null_checks();
	printf("load: caught %d\n", fault_load((const int *)0x18));
	printf("store: caught %d\n", fault_store((int *)0x20));
	if (!sigsetjmp(jb, 1))
		printf("wild pointer at a check returned %d\n", site_load_i32((int *)0xdead0000));
	page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	map_base = page;
	map_size = 4096;
	printf("protected page: caught %d\n", fault_load((const int *)(page + 8)));
	null_checks();
	print_recs();
	return 0;
}

static void i_plain_jmp(void)
{
	set_action(SIGSEGV, h_plain_jmp, 0, NULL);
}

static int r_plain_handler_recovers_by_siglongjmp(void)
{
	printf("first: caught %d\n", fault_load(NULL));
	printf("second: caught %d\n", fault_store(NULL));
	null_checks();
	print_recs();
	print_blocked_now("after");
	return 0;
}

static void i_signal(void)
{
	sighandler_t old = signal(SIGSEGV, h_plain_jmp);

	printf("signal returned %s\n", handler_name((uintptr_t)old));
}

static int r_signal_handler_stays_installed(void)
{
	printf("first: caught %d\n", fault_load(NULL));
	printf("second: caught %d\n", fault_load((const int *)8));
	null_checks();
	print_recs();
	query("now", SIGSEGV);
	return 0;
}

static void i_info_skip(void)
{
	set_action(SIGSEGV, h_info_skip, SA_SIGINFO, NULL);
}

static int r_ucontext_rip_edit_resumes(void)
{
	printf("load returned %d\n", probe_load(NULL));
	probe_store((int *)0x40, 5);
	printf("store skipped\n");
	null_checks();
	print_recs();
	print_blocked_now("after");
	return 0;
}

static void i_resethand(void)
{
	set_action(SIGSEGV, h_info_jmp, SA_SIGINFO | SA_RESETHAND, NULL);
}

static int r_sa_resethand_second_fault_kills(void)
{
	printf("first: caught %d\n", fault_load(NULL));
	print_recs();
	query("after the first", SIGSEGV);
	null_checks();
	fatal_fault();
	return 0;
}

static void i_nodefer(void)
{
	set_action(SIGSEGV, h_nested, SA_SIGINFO | SA_NODEFER, NULL);
}

static int r_sa_nodefer_allows_nested_fault(void)
{
	printf("load returned %d\n", probe_load(NULL));
	printf("inner load returned %d\n", recs[0].value);
	print_recs();
	null_checks();
	return 0;
}

static void i_nested_deferred(void)
{
	set_action(SIGSEGV, h_nested, SA_SIGINFO, NULL);
}

static int r_nested_fault_without_nodefer_kills(void)
{
	null_checks();
	fflush(stdout);
	printf("load returned %d\n", probe_load(NULL));
	return 0;
}

static void i_sa_mask(void)
{
	set_action(SIGSEGV, h_info_skip, SA_SIGINFO, usr1_rt);
}

static int r_sa_mask_blocks_listed_signals(void)
{
	sigset_t usr2;

	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	sigprocmask(SIG_BLOCK, &usr2, NULL);
	printf("load returned %d\n", probe_load(NULL));
	print_blocked_now("after returning");
	print_recs();
	query("action", SIGSEGV);
	null_checks();
	return 0;
}

static void i_onstack(void)
{
	use_altstack();
	set_action(SIGSEGV, h_info_skip, SA_SIGINFO | SA_ONSTACK, NULL);
}

static int r_sa_onstack_runs_on_altstack(void)
{
	printf("load returned %d\n", probe_load(NULL));
	print_recs();
	null_checks();
	return 0;
}

static void i_no_onstack(void)
{
	use_altstack();
	set_action(SIGSEGV, h_info_skip, SA_SIGINFO, NULL);
}

static int r_handler_without_sa_onstack_runs_on_thread_stack(void)
{
	printf("load returned %d\n", probe_load(NULL));
	print_recs();
	null_checks();
	return 0;
}

static void i_onstack_jmp(void)
{
	use_altstack();
	set_action(SIGSEGV, h_info_jmp, SA_SIGINFO | SA_ONSTACK, NULL);
}

static int r_stack_overflow_caught_on_altstack(void)
{
	if (!sigsetjmp(jb, 1))
		printf("recursion returned %d\n", recurse(0));
	printf("overflow caught: sig=%d code=%d altstack=%d\n", recs[0].sig, recs[0].code,
	       recs[0].on_altstack);
	nrecs = 0;
	null_checks();
	printf("again: caught %d\n", fault_load(NULL));
	print_recs();
	return 0;
}

static int r_stack_overflow_without_altstack_kills(void)
{
	null_checks();
	printf("recursing\n");
	fflush(stdout);
	if (!sigsetjmp(jb, 1))
		printf("recursion returned %d\n", recurse(0));
	printf("overflow caught\n");
	return 0;
}

static int r_stack_overflow_handler_without_sa_onstack_kills(void)
{
	return r_stack_overflow_without_altstack_kills();
}

static void i_no_onstack_jmp(void)
{
	use_altstack();
	set_action(SIGSEGV, h_info_jmp, SA_SIGINFO, NULL);
}

static void i_no_onstack_nodefer_jmp(void)
{
	use_altstack();
	set_action(SIGSEGV, h_info_jmp, SA_SIGINFO | SA_NODEFER, NULL);
}

static int r_stack_overflow_nodefer_handler_without_sa_onstack_kills(void)
{
	return r_stack_overflow_without_altstack_kills();
}

/* The kernel's SS_AUTODISARM (linux/signal.h, not in glibc's headers). */
#define SS_AUTODISARM_FLAG (1u << 31)

static void i_autodisarm(void)
{
	use_altstack_flags((int)SS_AUTODISARM_FLAG);
	set_action(SIGSEGV, h_info_skip, SA_SIGINFO | SA_ONSTACK, NULL);
}

static int r_sa_onstack_with_ss_autodisarm(void)
{
	stack_t ss;

	printf("load returned %d\n", probe_load(NULL));
	print_recs();
	sigaltstack(NULL, &ss);
	printf("after: ss_flags=%#x\n", ss.ss_flags);
	null_checks();
	return 0;
}

/* A SIGUSR1 handler on the alternate stack faults there. */
static void h_usr1_faults(int sig)
{
	(void)sig;
	recs[MAX_RECS - 1].value = probe_load(NULL);
}

static void i_fault_on_altstack(void)
{
	use_altstack();
	set_action(SIGUSR1, h_usr1_faults, SA_ONSTACK, NULL);
	set_action(SIGSEGV, h_info_skip, SA_SIGINFO, NULL);
}

static int r_fault_on_altstack_runs_handler_there(void)
{
	raise(SIGUSR1);
	printf("load in the SIGUSR1 handler returned %d\n", recs[MAX_RECS - 1].value);
	print_recs();
	null_checks();
	return 0;
}

static void i_sig_ign(void)
{
	sighandler_t old = signal(SIGSEGV, SIG_IGN);

	printf("signal returned %s\n", handler_name((uintptr_t)old));
}

static int r_sig_ign_kernel_fault_still_kills(void)
{
	null_checks();
	fatal_fault();
	return 0;
}

static void i_sig_ign_both(void)
{
	set_action(SIGSEGV, SIG_IGN, 0, NULL);
	set_action(SIGBUS, SIG_IGN, 0, NULL);
}

static void send_all(int sig)
{
	union sigval v = { .sival_int = 77 };

	errno = 4242;
	printf("kill %d: %d\n", sig, kill(getpid(), sig));
	printf("raise %d: %d\n", sig, raise(sig));
	printf("sigqueue %d: %d\n", sig, sigqueue(getpid(), sig, v));
	printf("tgkill %d: %d\n", sig, (int)syscall(SYS_tgkill, getpid(), gettid(), sig));
	printf("errno after: %d\n", errno);
	fflush(stdout);
}

static int r_sig_ign_sent_signals_are_ignored(void)
{
	send_all(SIGSEGV);
	send_all(SIGBUS);
	null_checks();
	print_recs();
	query("segv", SIGSEGV);
	query("bus", SIGBUS);
	return 0;
}

static int r_sig_dfl_keeps_core_dump(void)
{
	struct sigaction dfl, old;

	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigaction(SIGSEGV, &dfl, &old);
	print_action("replaced", &old);
	null_checks();
	fatal_fault();
	return 0;
}

static int r_sig_dfl_sent_segv_keeps_core_dump(void)
{
	signal(SIGSEGV, SIG_DFL);
	null_checks();
	printf("sending SIGSEGV\n");
	fflush(stdout);
	kill(getpid(), SIGSEGV);
	printf("survived\n");
	return 0;
}

static void i_oldact(void)
{
	set_action(SIGSEGV, h_info_jmp, SA_SIGINFO | SA_ONSTACK | SA_RESTART, usr1_rt);
	set_action(SIGBUS, h_plain_jmp, SA_NODEFER, NULL);
}

static int r_oldact_returns_previous_action(void)
{
	struct sigaction act, old;

	query("segv as installed", SIGSEGV);
	query("bus as installed", SIGBUS);

	memset(&act, 0, sizeof(act));
	act.sa_sigaction = h_info_skip;
	/* 0x400 (SA_UNSUPPORTED) and 0x20000000: bits the kernel drops. */
	act.sa_flags = SA_SIGINFO | SA_NODEFER | SA_RESETHAND | 0x400 | 0x20000000;
	sigfillset(&act.sa_mask);
	memset(&old, 0xa5, sizeof(old));
	printf("sigaction: %d\n", sigaction(SIGSEGV, &act, &old));
	print_action("old segv", &old);
	query("new segv", SIGSEGV);

	printf("signal returned %s\n", handler_name((uintptr_t)signal(SIGSEGV, h_plain_jmp)));
	query("after signal", SIGSEGV);
	printf("sysv_signal returned %s\n",
	       handler_name((uintptr_t)sysv_signal(SIGSEGV, SIG_IGN)));
	query("after sysv_signal", SIGSEGV);
	printf("signal(SIGBUS) returned %s\n", handler_name((uintptr_t)signal(SIGBUS, SIG_DFL)));
	query("bus after signal", SIGBUS);
	null_checks();
	return 0;
}

static void i_sigbus(void)
{
	set_action(SIGBUS, h_info_jmp, SA_SIGINFO, NULL);
}

static int r_sigbus_handler_sees_adrerr(void)
{
	char *p = chain_truncated_mapping();

	printf("read: caught %d\n", fault_load((const int *)(p + 4)));
	printf("write: caught %d\n", fault_store((int *)(p + 4096)));
	if (!sigsetjmp(jb, 1))
		printf("check on the mapping returned %d\n", site_load_i32((int *)(p + 12)));
	null_checks();
	print_recs();
	return 0;
}

static int r_sent_signals_reach_handler_with_sender_info(void)
{
	send_all(SIGSEGV);
	null_checks();
	print_recs();
	return 0;
}

static void i_sysv(void)
{
	sighandler_t old = sysv_signal(SIGSEGV, h_plain_jmp);

	printf("sysv_signal returned %s\n", handler_name((uintptr_t)old));
}

static int r_sysv_signal_is_one_shot_second_fault_kills(void)
{
	printf("first: caught %d\n", fault_load(NULL));
	print_recs();
	query("after the first", SIGSEGV);
	null_checks();
	fatal_fault();
	return 0;
}

static void i_sigset(void)
{
	sighandler_t old;

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
	old = sigset(SIGSEGV, h_plain_jmp);
#pragma GCC diagnostic pop

	printf("sigset returned %s\n", handler_name((uintptr_t)old));
}

static int r_sigset_handler_stays_installed(void)
{
	printf("first: caught %d\n", fault_load(NULL));
	printf("second: caught %d\n", fault_load(NULL));
	print_recs();
	query("now", SIGSEGV);
	null_checks();
	return 0;
}

static void *thread_main(void *arg)
{
	sigjmp_buf mine;

	(void)arg;
	thread_jb = &mine;
	if (!sigsetjmp(mine, 1))
		probe_store((int *)0x30, 1);
	thread_jb = NULL;
	null_checks();
	return NULL;
}

static int r_fault_in_thread_reaches_handler(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, thread_main, NULL) != 0)
		return 3;
	pthread_join(t, NULL);
	printf("thread joined\n");
	print_recs();
	return 0;
}

static void i_dfl_siginfo(void)
{
	struct sigaction act;

	memset(&act, 0, sizeof(act));
	act.sa_sigaction = NULL;	/* SIG_DFL, with SA_SIGINFO */
	act.sa_flags = SA_SIGINFO;
	sigaction(SIGSEGV, &act, NULL);
}

/*
 * The outer handler of a nested fault: it keeps copies of its siginfo and
 * ucontext (the kernel's 304 bytes of it), fills deep locals, faults again
 * (nested_at: SIGBUS on the truncated mapping, or SIGSEGV at NULL) and
 * checks that nothing of its own changed meanwhile.
 */
static volatile int *nested_at;
static int outer_intact[3];	/* siginfo, ucontext, locals */

static void h_outer(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	unsigned char si_copy[sizeof(*si)], uc_copy[304];
	volatile unsigned char deep[8192];
	int mine, v;

	depth++;
	note(sig, si, uc);
	mine = nrecs - 1;
	memcpy(si_copy, si, sizeof(si_copy));
	memcpy(uc_copy, uc, sizeof(uc_copy));
	for (size_t i = 0; i < sizeof(deep); i++)
		deep[i] = (unsigned char)(i * 7 + 1);
	v = probe_load(nested_at);
	outer_intact[0] = !memcmp(si_copy, si, sizeof(si_copy));
	outer_intact[1] = !memcmp(uc_copy, uc, sizeof(uc_copy));
	outer_intact[2] = 1;
	for (size_t i = 0; i < sizeof(deep); i++)
		if (deep[i] != (unsigned char)(i * 7 + 1))
			outer_intact[2] = 0;
	recs[mine].value = v;
	skip_probe(uc);
	if (sig == SIGTRAP)
		shim_after_trap(uc);
	depth--;
}

static void print_outer(void)
{
	printf("outer handler: siginfo intact %d, ucontext intact %d, locals intact %d\n",
	       outer_intact[0], outer_intact[1], outer_intact[2]);
	print_recs();
}

/* SIGSEGV's handler without SA_ONSTACK, SIGBUS's with it, in a thread with an alternate stack. */
static void i_nested_segv_bus(void)
{
	use_altstack();
	set_action(SIGSEGV, h_outer, SA_SIGINFO, NULL);
	set_action(SIGBUS, h_info_skip, SA_SIGINFO | SA_ONSTACK, NULL);
}

static int r_nested_sigbus_leaves_outer_frame_intact(void)
{
	nested_at = (volatile int *)(chain_truncated_mapping() + 4);
	printf("load returned %d\n", probe_load(NULL));
	print_outer();
	null_checks();
	return 0;
}

/* SIGTRAP's handler without SA_ONSTACK, SIGSEGV's with it. */
static void i_nested_trap_segv(void)
{
	use_altstack();
	set_action(SIGTRAP, h_outer, SA_SIGINFO, NULL);
	set_action(SIGSEGV, h_info_skip, SA_SIGINFO | SA_ONSTACK, NULL);
}

static int r_nested_sigsegv_in_sigtrap_handler_leaves_outer_frame_intact(void)
{
	nested_at = NULL;
	SHIM_TRAP();
	printf("after the int3\n");
	print_outer();
	null_checks();
	return 0;
}

/*
 * SIGTRAP's sa_mask holds from the delivery on: a thread sends SIGUSR1
 * to the main thread all along while it traps 100000 times (2000 in the
 * QEMU guest); SIGUSR1's
 * handler must never interrupt the SIGTRAP handler, nor anything on the
 * alternate stack (no handler of the application's runs there).
 */
static volatile int in_trap, usr1_wrong;
static volatile int sending;

/* Its context only with SHIM_TRAP_FLAGS' SA_SIGINFO (where a trap must be stepped over). */
static void h_trap_count(int sig, siginfo_t *si, void *ucv)
{
	(void)sig;
	(void)si;
	if (SHIM_TRAP_FLAGS & SA_SIGINFO)
		shim_after_trap(ucv);
	in_trap = 1;
	for (volatile int i = 0; i < 20; i++)
		;
	in_trap = 0;
}

static void h_usr1_check(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	uintptr_t sp = shim_uc_sp(uc);

	(void)sig;
	(void)si;
	if (in_trap || (sp >= (uintptr_t)alt && sp < (uintptr_t)alt + sizeof(alt)))
		usr1_wrong++;
}

static void *send_usr1(void *arg)
{
	pthread_t main_thread = *(pthread_t *)arg;

	while (sending)
		pthread_kill(main_thread, SIGUSR1);
	return NULL;
}

static void i_trap_mask(void)
{
	static const int usr1[] = { SIGUSR1, 0 };

	use_altstack();
	set_action(SIGTRAP, h_trap_count, SHIM_TRAP_FLAGS, usr1);
	set_action(SIGUSR1, h_usr1_check, SA_SIGINFO | SA_RESTART, NULL);
}

static int r_sigtrap_handler_sa_mask_holds_from_delivery(void)
{
	pthread_t self = pthread_self(), sender;
	/* Fewer in make vmtest's guest: a trap there takes TCG a hundred times longer. */
	int traps = getenv("VMTEST_WHERE") ? 2000 : 100000;

	sending = 1;
	if (pthread_create(&sender, NULL, send_usr1, &self) != 0)
		return 3;
	for (int i = 0; i < traps; i++)
		SHIM_TRAP();
	sending = 0;
	pthread_join(sender, NULL);
	printf("%d traps; SIGUSR1 inside the SIGTRAP handler or on the alternate stack: %d\n",
	       traps, usr1_wrong);
	null_checks();
	return 0;
}

static int r_sig_dfl_with_siginfo_flag_dies_by_default(void)
{
	null_checks();
	fatal_fault();
	return 0;
}

static void i_ign_siginfo(void)
{
	struct sigaction act;

	memset(&act, 0, sizeof(act));
	act.sa_sigaction = (void (*)(int, siginfo_t *, void *))(uintptr_t)SIG_IGN;
	act.sa_flags = SA_SIGINFO;
	sigaction(SIGSEGV, &act, NULL);
}

static int r_sig_ign_with_siginfo_flag_ignores_sent_segv(void)
{
	send_all(SIGSEGV);
	null_checks();
	return 0;
}

static void i_reinstall(void)
{
	memset(&self_act, 0, sizeof(self_act));
	self_act.sa_sigaction = h_reinstall;
	self_act.sa_flags = SA_SIGINFO | SA_RESETHAND;
	sigemptyset(&self_act.sa_mask);
	sigaction(SIGSEGV, &self_act, NULL);
}

static int r_handler_reinstalls_itself_with_sigaction(void)
{
	for (int i = 0; i < 3; i++)
		printf("fault %d: caught %d\n", i, fault_load(NULL));
	print_recs();
	null_checks();
	return 0;
}

static void i_none(void)
{
}

/* struct k_sigaction of x86-64 rt_sigaction. */
struct kernel_sigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	uint64_t mask;
};

static int r_raw_rt_sigaction_replaces_handler(void)
{
	struct sigaction usr1;
	struct kernel_sigaction k = { 0 };
	void *h;

	/* glibc's restorer: what it installs for SIGUSR1 (not interposed). */
	set_action(SIGUSR1, h_plain_jmp, 0, NULL);
	if (sigaction(SIGUSR1, NULL, &usr1) != 0 || !usr1.sa_restorer)
		return 3;
	null_checks();
	k.handler = (void *)h_info_jmp;
	k.flags = SA_SIGINFO | 0x04000000;	/* SA_RESTORER */
	k.restorer = (void *)usr1.sa_restorer;
	if (syscall(SYS_rt_sigaction, SIGSEGV, &k, NULL, 8) != 0) {
		perror("rt_sigaction");
		return 3;
	}
	printf("raw rt_sigaction done\n");
	printf("fault: caught %d\n", fault_load(NULL));
	print_recs();
	fflush(stdout);
	/* The shim reports the replaced handler at its next rescan. */
	fprintf(stderr, "before dlopen\n");
	h = dlopen("libm.so.6", RTLD_NOW);
	printf("dlopen libm: %s\n", h ? "ok" : "failed");
	return 0;
}

struct chain_case {
	const char *name;
	void (*install)(void);
	int (*run)(void);
	int main_only;
};

static const struct chain_case cases[] = {
#define CASE(name, install) { #name, install, r_##name, 0 }
	CASE(siginfo_handler_sees_kernel_fault, i_info_jmp),
	CASE(plain_handler_recovers_by_siglongjmp, i_plain_jmp),
	CASE(signal_handler_stays_installed, i_signal),
	CASE(ucontext_rip_edit_resumes, i_info_skip),
	CASE(sa_resethand_second_fault_kills, i_resethand),
	CASE(sa_nodefer_allows_nested_fault, i_nodefer),
	CASE(nested_fault_without_nodefer_kills, i_nested_deferred),
	CASE(sa_mask_blocks_listed_signals, i_sa_mask),
	CASE(sa_onstack_runs_on_altstack, i_onstack),
	CASE(handler_without_sa_onstack_runs_on_thread_stack, i_no_onstack),
	CASE(stack_overflow_caught_on_altstack, i_onstack_jmp),
	CASE(stack_overflow_without_altstack_kills, i_info_jmp),
	CASE(stack_overflow_handler_without_sa_onstack_kills, i_no_onstack_jmp),
	CASE(stack_overflow_nodefer_handler_without_sa_onstack_kills, i_no_onstack_nodefer_jmp),
	CASE(sa_onstack_with_ss_autodisarm, i_autodisarm),
	CASE(fault_on_altstack_runs_handler_there, i_fault_on_altstack),
	CASE(sig_ign_kernel_fault_still_kills, i_sig_ign),
	CASE(sig_ign_sent_signals_are_ignored, i_sig_ign_both),
	CASE(sig_dfl_keeps_core_dump, i_info_jmp),
	CASE(sig_dfl_sent_segv_keeps_core_dump, i_info_jmp),
	CASE(oldact_returns_previous_action, i_oldact),
	CASE(sigbus_handler_sees_adrerr, i_sigbus),
	CASE(sent_signals_reach_handler_with_sender_info, i_info_skip),
	CASE(sysv_signal_is_one_shot_second_fault_kills, i_sysv),
	CASE(sigset_handler_stays_installed, i_sigset),
	CASE(fault_in_thread_reaches_handler, i_info_jmp),
	CASE(sig_dfl_with_siginfo_flag_dies_by_default, i_dfl_siginfo),
	CASE(sig_ign_with_siginfo_flag_ignores_sent_segv, i_ign_siginfo),
	CASE(handler_reinstalls_itself_with_sigaction, i_reinstall),
	CASE(nested_sigbus_leaves_outer_frame_intact, i_nested_segv_bus),
	CASE(nested_sigsegv_in_sigtrap_handler_leaves_outer_frame_intact, i_nested_trap_segv),
	CASE(sigtrap_handler_sa_mask_holds_from_delivery, i_trap_mask),
	{ "raw_rt_sigaction_replaces_handler", i_none, r_raw_rt_sigaction_replaces_handler, 1 },
#undef CASE
};

#define NUM_CASES (sizeof(cases) / sizeof(cases[0]))

static const struct chain_case *find_case(const char *name)
{
	for (size_t i = 0; i < NUM_CASES; i++)
		if (!strcmp(cases[i].name, name))
			return &cases[i];
	return NULL;
}

/* Installs early (WHEN preinit or ctor) when argv asks for it there. */
static void install_early(int argc, char **argv, const char *when)
{
	const struct chain_case *c;
	struct kernel_sigaction k;

	if (argc != 3 || strcmp(argv[2], when) || !(c = find_case(argv[1])) || c->main_only)
		return;
	if (syscall(SYS_rt_sigaction, SIGSEGV, NULL, &k, 8) != 0)
		k.handler = (void *)-1;
	printf("%s: the kernel's SIGSEGV action is the default: %s\n", when,
	       k.handler == (void *)SIG_DFL ? "yes" : "no");
	fflush(stdout);
	c->install();
}

static void ctor_hook(int argc, char **argv)
{
	install_early(argc, argv, "ctor");
}

static void preinit(int argc, char **argv, char **envp)
{
	(void)envp;
	chain_ctor_hook = ctor_hook;
	install_early(argc, argv, "preinit");
}

__attribute__((section(".preinit_array"), used))
static void (*const preinit_entry)(int, char **, char **) = preinit;

int main(int argc, char **argv)
{
	const struct chain_case *c = argc == 3 ? find_case(argv[1]) : NULL;

	if (argc == 2 && !strcmp(argv[1], "list")) {
		for (size_t i = 0; i < NUM_CASES; i++)
			printf("%s %s\n", cases[i].name, cases[i].main_only ? "main" : "all");
		return 0;
	}
	if (!c || (strcmp(argv[2], "preinit") && strcmp(argv[2], "ctor") &&
		   strcmp(argv[2], "main")) || (c->main_only && strcmp(argv[2], "main"))) {
		fprintf(stderr, "usage: %s list | CASE preinit|ctor|main\n", argv[0]);
		return 2;
	}
	if (!strcmp(argv[2], "main"))
		c->install();
	return c->run();
}
