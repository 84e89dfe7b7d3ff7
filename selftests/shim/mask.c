// SPDX-License-Identifier: MIT
/*
 * The signal mask under the shim (lib/preload/mask.c): a program that
 * blocks SIGSEGV, SIGBUS and SIGTRAP sees what it set, and behaves as
 * without the shim, while the kernel blocks none of them.
 *
 *   mask CASE
 *
 * stdout is what must be the same with and without the shim; at the
 * moments that matter each case writes to stderr which of the three the
 * kernel blocks ("kernel blocks: none" under the shim, with
 * FAULTLINE_HEAL_AFTER set so that SIGTRAP is faultline's too).  Linked
 * with sites.ll's implicit build (mask-imp) and its explicit one
 * (mask-exp).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shim_arch.h"
#include "sites.h"

extern char **environ;

static const int three[] = { SIGSEGV, SIGBUS, SIGTRAP };

static void fail(const char *what)
{
	printf("FAILED: %s (%s)\n", what, strerror(errno));
	exit(1);
}

/* The kernel's view: which of the three /proc/thread-self/status SigBlk names. */
static void kernel_blocks(const char *when)
{
	char line[256], out[128] = "";
	unsigned long long blk = 0;
	FILE *f = fopen("/proc/thread-self/status", "r");

	if (!f)
		fail("/proc/thread-self/status");
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "SigBlk: %llx", &blk) == 1)
			break;
	fclose(f);
	for (int i = 0; i < 3; i++)
		if (blk & (1ull << (three[i] - 1))) {
			strcat(out, " ");
			strcat(out, sigabbrev_np(three[i]));
		}
	fprintf(stderr, "%s: kernel blocks:%s\n", when, *out ? out : " none");
}

/* The mask as the program sees it, for the signals that matter here. */
static void show(const char *what, const sigset_t *set)
{
	static const int sigs[] = { SIGSEGV, SIGBUS, SIGTRAP, SIGUSR1, SIGUSR2 };

	printf("%s:", what);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (sigismember(set, sigs[i]) == 1)
			printf(" %s", sigabbrev_np(sigs[i]));
	printf("\n");
}

static void show_mask(const char *what)
{
	sigset_t cur;

	if (sigprocmask(SIG_BLOCK, NULL, &cur) != 0)
		fail("sigprocmask");
	show(what, &cur);
}

static bool same_set(const sigset_t *a, const sigset_t *b)
{
	for (int s = 1; s < NSIG; s++)
		if (s != 32 && s != 33 && sigismember(a, s) != sigismember(b, s))
			return false;
	return true;
}

static sigset_t set_of(int a, int b, int c, int d)
{
	sigset_t s;

	sigemptyset(&s);
	for (int i = 0, sigs[] = { a, b, c, d }; i < 4; i++)
		if (sigs[i])
			sigaddset(&s, sigs[i]);
	return s;
}

static void block_three(void)
{
	sigset_t s = set_of(SIGSEGV, SIGBUS, SIGTRAP, 0);

	if (sigprocmask(SIG_BLOCK, &s, NULL) != 0)
		fail("sigprocmask");
}

/* A signal's bit in the BSD calls' int mask (glibc's deprecated sigmask()). */
#define BSD(sig) (1 << ((sig) - 1))

/* Each mask setter, read back by the others. */
static int c_readback(void)
{
	sigset_t want = set_of(SIGSEGV, SIGBUS, SIGTRAP, SIGUSR1), got, old;

	if (sigprocmask(SIG_BLOCK, &want, NULL) != 0 || sigprocmask(SIG_BLOCK, NULL, &got) != 0)
		fail("sigprocmask");
	show("sigprocmask SIG_BLOCK", &got);
	printf("reads back what it set: %s\n", same_set(&got, &want) ? "yes" : "no");
	kernel_blocks("after sigprocmask");

	want = set_of(SIGSEGV, SIGUSR2, 0, 0);
	if (pthread_sigmask(SIG_SETMASK, &want, &old) != 0 ||
	    pthread_sigmask(SIG_BLOCK, NULL, &got) != 0)
		fail("pthread_sigmask");
	show("pthread_sigmask old", &old);
	show("pthread_sigmask SIG_SETMASK", &got);
	printf("reads back what it set: %s\n", same_set(&got, &want) ? "yes" : "no");
	kernel_blocks("after pthread_sigmask");

	want = set_of(SIGSEGV, 0, 0, 0);
	if (sigprocmask(SIG_UNBLOCK, &want, &old) != 0)
		fail("sigprocmask");
	show("SIG_UNBLOCK SIGSEGV, old", &old);
	show_mask("after it");

	/* The BSD and System V calls are deprecated: what they do is tested here. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
	printf("sigblock(SIGBUS|SIGTRAP) old: %#x\n", sigblock(BSD(SIGBUS) | BSD(SIGTRAP)));
	printf("siggetmask: %#x\n", siggetmask());
	printf("sigsetmask(SIGSEGV) old: %#x\n", sigsetmask(BSD(SIGSEGV)));
	show_mask("after sigsetmask");
	kernel_blocks("after sigsetmask");
	if (sighold(SIGTRAP) != 0)
		fail("sighold");
	show_mask("after sighold(SIGTRAP)");
	if (sigrelse(SIGSEGV) != 0)
		fail("sigrelse");
	show_mask("after sigrelse(SIGSEGV)");
#pragma GCC diagnostic pop
	kernel_blocks("after sighold");
	return 0;
}

/* An implicit null check that fails while SIGSEGV is blocked, in main and in a thread. */
static void *null_check(void *arg)
{
	sigset_t s = set_of(SIGSEGV, SIGBUS, SIGTRAP, 0);

	(void)arg;
	if (pthread_sigmask(SIG_BLOCK, &s, NULL) != 0)
		fail("pthread_sigmask");
	kernel_blocks("null check");
	int r = site_load_i32(NULL);

	printf("site_load_i32(NULL): %d, null block ran %lu times\n", r, site_null_count(1));
	return NULL;
}

static int c_null_check(void)
{
	pthread_t t;

	null_check(NULL);
	if (pthread_create(&t, NULL, null_check, NULL) != 0 || pthread_join(t, NULL) != 0)
		fail("pthread_create");
	show_mask("mask");
	return 0;
}

static void on_signal_noted(int sig)
{
	static const char msg[] = "the handler ran\n";

	(void)sig;
	(void)!write(STDOUT_FILENO, msg, sizeof(msg) - 1);
}

static void int3(void)
{
	SHIM_TRAP();
}

static int *volatile null_16 = (int *)(uintptr_t)16;

static void null_store(void)
{
	*null_16 = 1;
}

/*
 * The program's own fault or trap (a null store at no registered PC, an
 * int3) while it blocks its signal, which has a handler: the kernel kills
 * the process by that signal.
 */
static int own_fault(int sig, const char *what, void (*fault)(void))
{
	struct sigaction sa = { .sa_handler = on_signal_noted };
	char when[64];

	setvbuf(stdout, NULL, _IONBF, 0);
	if (sigaction(sig, &sa, NULL) != 0)
		fail("sigaction");
	block_three();
	snprintf(when, sizeof(when), "before the %s", what);
	kernel_blocks(when);
	printf("%s\n", what);
	fault();
	printf("went on after the %s\n", what);
	return 0;
}

static volatile sig_atomic_t got[NSIG], got_code[NSIG];
static volatile intptr_t got_value[NSIG];

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	got[sig]++;
	got_code[sig] = si->si_code;
	got_value[sig] = (intptr_t)si->si_value.sival_ptr;
}

static const char *code_name(int code)
{
	return code == SI_USER ? "SI_USER" : code == SI_TKILL ? "SI_TKILL" :
	       code == SI_QUEUE ? "SI_QUEUE" : "other";
}

static void show_pending(const char *what)
{
	sigset_t p;

	if (sigpending(&p) != 0)
		fail("sigpending");
	show(what, &p);
}

/* Sent while blocked: pending, delivered once unblocked. */
static int c_pending(void)
{
	struct sigaction sa = { .sa_sigaction = on_signal, .sa_flags = SA_SIGINFO };
	sigset_t s = set_of(SIGSEGV, SIGBUS, SIGTRAP, 0);

	for (int i = 0; i < 3; i++)
		if (sigaction(three[i], &sa, NULL) != 0)
			fail("sigaction");
	block_three();
	if (kill(getpid(), SIGSEGV) != 0 || raise(SIGTRAP) != 0 ||
	    sigqueue(getpid(), SIGBUS, (union sigval){ .sival_int = 42 }) != 0)
		fail("kill");
	/* Sent again: a standard signal is pending once. */
	if (kill(getpid(), SIGSEGV) != 0 || raise(SIGTRAP) != 0)
		fail("kill");
	printf("handlers ran while blocked: %d\n", got[SIGSEGV] + got[SIGBUS] + got[SIGTRAP]);
	show_pending("sigpending while blocked");
	kernel_blocks("while blocked");
	if (sigprocmask(SIG_UNBLOCK, &s, NULL) != 0)
		fail("sigprocmask");
	for (int i = 0; i < 3; i++)
		printf("%s: delivered %d times, si_code %s, si_value %ld\n",
		       sigabbrev_np(three[i]), got[three[i]], code_name(got_code[three[i]]),
		       three[i] == SIGBUS ? (long)got_value[SIGBUS] : 0L);
	show_pending("sigpending after");
	return 0;
}

/* A thread that sends sig to target after ms milliseconds. */
struct send_later {
	pthread_t target;
	int sig, ms;
};

static void *sender(void *arg)
{
	const struct send_later *l = arg;

	usleep((useconds_t)l->ms * 1000);
	pthread_kill(l->target, l->sig);
	return NULL;
}

static void wait_result(const char *what, int r, const siginfo_t *si)
{
	if (r < 0)
		printf("%s: -1, %s\n", what, strerrorname_np(errno));
	else
		printf("%s: %s, si_code %s\n", what, sigabbrev_np(r), si ? code_name(si->si_code) :
		       "-");
}

/*
 * Waited for (sigwait, sigwaitinfo, sigtimedwait): each of the three sent
 * while blocked is taken by the wait, one sent during the wait too, and
 * one that is blocked but not waited for does not end the wait.
 */
static int c_sigwait(void)
{
	struct timespec ms10 = { 0, 10 * 1000 * 1000 }, s2 = { 2, 0 };
	sigset_t bus = set_of(SIGBUS, 0, 0, 0), segv = set_of(SIGSEGV, 0, 0, 0);
	sigset_t trap = set_of(SIGTRAP, 0, 0, 0), usr1 = set_of(SIGUSR1, 0, 0, 0);
	sigset_t trap_usr1 = set_of(SIGTRAP, SIGUSR1, 0, 0);
	struct send_later later;
	siginfo_t si;
	pthread_t th;
	int sig = 0, r;

	block_three();
	if (sigprocmask(SIG_BLOCK, &usr1, NULL) != 0)
		fail("sigprocmask");
	if (raise(SIGBUS) != 0 || kill(getpid(), SIGSEGV) != 0)
		fail("kill");
	kernel_blocks("before the waits");
	r = sigwait(&bus, &sig);
	printf("sigwait for SIGBUS: %d, %s\n", r, r ? "-" : sigabbrev_np(sig));
	r = sigwaitinfo(&segv, &si);
	wait_result("sigwaitinfo for SIGSEGV", r, &si);
	r = sigtimedwait(&trap, &si, &ms10);
	wait_result("sigtimedwait for SIGTRAP, nothing sent", r, &si);
	/* A bad timeout is the kernel's to refuse. */
	r = sigtimedwait(&trap, &si, &(struct timespec){ 0, -1 });
	wait_result("sigtimedwait with tv_nsec -1", r, &si);
	r = sigtimedwait(&trap, &si, (const struct timespec *)8);
	wait_result("sigtimedwait with a timeout at address 8", r, &si);
	/* Sent while the thread waits for it. */
	later = (struct send_later){ pthread_self(), SIGTRAP, 50 };
	if (pthread_create(&th, NULL, sender, &later) != 0)
		fail("pthread_create");
	r = sigtimedwait(&trap_usr1, &si, &s2);
	wait_result("sigtimedwait for SIGTRAP or SIGUSR1, SIGTRAP sent meanwhile", r, &si);
	pthread_join(th, NULL);
	/* Blocked, not waited for: it stays pending and the wait goes on. */
	later = (struct send_later){ pthread_self(), SIGBUS, 20 };
	if (pthread_create(&th, NULL, sender, &later) != 0)
		fail("pthread_create");
	r = sigtimedwait(&usr1, &si, &(struct timespec){ 0, 300 * 1000 * 1000 });
	wait_result("sigtimedwait for SIGUSR1, SIGBUS sent meanwhile", r, &si);
	pthread_join(th, NULL);
	show_pending("sigpending after");
	r = sigwaitinfo(&bus, &si);
	wait_result("sigwaitinfo for SIGBUS", r, &si);
	show_pending("sigpending at the end");
	kernel_blocks("after the waits");
	return 0;
}

/* A forked child has nothing pending; its parent keeps what it had. */
static int c_fork(void)
{
	struct sigaction sa = { .sa_sigaction = on_signal, .sa_flags = SA_SIGINFO };
	sigset_t s = set_of(SIGSEGV, SIGTRAP, 0, 0);
	int status;
	pid_t pid;

	if (sigaction(SIGSEGV, &sa, NULL) != 0 || sigaction(SIGTRAP, &sa, NULL) != 0)
		fail("sigaction");
	block_three();
	if (kill(getpid(), SIGSEGV) != 0 || raise(SIGTRAP) != 0)
		fail("kill");
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		fail("fork");
	if (pid == 0) {
		show_pending("child: sigpending");
		show_mask("child: mask");
		kernel_blocks("child");
		if (sigprocmask(SIG_UNBLOCK, &s, NULL) != 0)
			fail("sigprocmask");
		printf("child: handlers ran %d times\n", got[SIGSEGV] + got[SIGTRAP]);
		fflush(stdout);
		/* No exit handlers of the parent's (a sanitizer's leak check). */
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		fail("the child");
	show_pending("parent: sigpending");
	kernel_blocks("parent");
	if (sigprocmask(SIG_UNBLOCK, &s, NULL) != 0)
		fail("sigprocmask");
	printf("parent: handlers ran %d times\n", got[SIGSEGV] + got[SIGTRAP]);
	return 0;
}

static void *show_thread(void *what)
{
	show_mask(what);
	kernel_blocks(what);
	return NULL;
}

/* A new thread starts with its creator's mask, or its attributes'. */
static int c_thread(void)
{
	sigset_t s = set_of(SIGSEGV, SIGBUS, SIGTRAP, SIGUSR1), attr_mask = set_of(SIGBUS, SIGUSR2, 0, 0);
	pthread_attr_t attr;
	pthread_t t;

	if (sigprocmask(SIG_BLOCK, &s, NULL) != 0)
		fail("sigprocmask");
	if (pthread_create(&t, NULL, show_thread, "thread") != 0 || pthread_join(t, NULL) != 0)
		fail("pthread_create");
	if (pthread_attr_init(&attr) != 0 || pthread_attr_setsigmask_np(&attr, &attr_mask) != 0 ||
	    pthread_create(&t, &attr, show_thread, "thread with its attributes' mask") != 0 ||
	    pthread_join(t, NULL) != 0 || pthread_attr_destroy(&attr) != 0)
		fail("pthread_create with a mask");
	show_mask("creator");
	return 0;
}

/*
 * cgo's way (Go's runtime with cgo): a thread created with every signal
 * blocked by pthread_sigmask, which then unblocks them with the raw system
 * call, and faults: its SIGSEGV handler runs, as without the shim.
 */
static sigjmp_buf raw_jb;
static volatile int *volatile raw_null;

static void on_raw_segv(int sig)
{
	(void)sig;
	siglongjmp(raw_jb, 1);
}

static void *raw_unblocker(void *arg)
{
	uint64_t none = 0;

	(void)arg;
	if (syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, 8) != 0)
		fail("rt_sigprocmask");
	if (!sigsetjmp(raw_jb, 1))
		*raw_null = 1;
	else
		printf("the fault reached the handler after the raw unblock\n");
	kernel_blocks("after the handler");
	return NULL;
}

static int c_raw_unblock(void)
{
	sigset_t all, old;
	pthread_t t;

	signal(SIGSEGV, on_raw_segv);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&t, NULL, raw_unblocker, NULL) != 0)
		fail("pthread_create");
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pthread_join(t, NULL) != 0)
		fail("pthread_join");
	c_null_check();
	return 0;
}

/* The environment without LD_PRELOAD: the child shows the kernel's mask. */
static char **plain_env(void)
{
	static char *env[256];
	int n = 0;

	for (char **e = environ; *e && n < 255; e++)
		if (strncmp(*e, "LD_PRELOAD=", 11))
			env[n++] = *e;
	env[n] = NULL;
	return env;
}

/* A program executed starts with the mask the program set. */
static int c_exec(const char *how, char *self)
{
	sigset_t s = set_of(SIGSEGV, SIGBUS, SIGTRAP, SIGUSR1);
	char *argv[] = { self, "showmask", NULL };
	bool shim = strstr(how, "-shim") != NULL;
	char **env = shim ? environ : plain_env();
	int r;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (sigprocmask(SIG_BLOCK, &s, NULL) != 0)
		fail("sigprocmask");
	kernel_blocks("before exec");
	r = execve("/nonexistent/x", argv, env);
	printf("execve of nothing: %d, %s\n", r, strerrorname_np(errno));
	kernel_blocks("after a failed exec");
	if (!strcmp(how, "system") || !strcmp(how, "popen")) {
		char cmd[4200], line[512];
		FILE *f;

		/* The shell and the program without the shim: the kernel's mask. */
		environ = env;
		snprintf(cmd, sizeof(cmd), "exec '%s' showmask", self);
		if (!strcmp(how, "system")) {
			if (system(cmd) != 0)
				fail("system");
		} else {
			f = popen(cmd, "r");
			if (!f)
				fail("popen");
			while (fgets(line, sizeof(line), f))
				fputs(line, stdout);
			if (pclose(f) != 0)
				fail("pclose");
		}
		kernel_blocks(how);
		show_mask("parent");
		return 0;
	}
	if (!strncmp(how, "spawn", 5)) {
		int status;
		pid_t pid;

		if (posix_spawn(&pid, self, NULL, NULL, argv, env) != 0 ||
		    waitpid(pid, &status, 0) != pid)
			fail("posix_spawn");
		kernel_blocks("after posix_spawn");
		show_mask("parent");
		return 0;
	}
	if (shim)
		execv(self, argv);
	else
		execve(self, argv, env);
	fail("execve");
	return 1;
}

/* What the exec'd program sees (without the shim: the kernel's mask). */
static int c_showmask(void)
{
	show_mask("executed program");
	kernel_blocks("executed program");
	return 0;
}

/* A bad how: EINVAL, nothing changed; an old set that cannot be written: EFAULT. */
static int c_bad_how(void)
{
	sigset_t s = set_of(SIGSEGV, SIGUSR1, 0, 0), old, before;
	int r;

	block_three();
	kernel_blocks("blocked");
	memset(&old, 0x5a, sizeof(old));
	before = old;
	errno = 0;
	r = sigprocmask(12345, &s, &old);
	printf("sigprocmask(12345): %d %s, old untouched: %s\n", r, strerrorname_np(errno),
	       memcmp(&old, &before, sizeof(old)) ? "no" : "yes");
	errno = 0;
	r = pthread_sigmask(-1, &s, &old);
	printf("pthread_sigmask(-1): %s, errno %s, old untouched: %s\n", strerrorname_np(r),
	       errno ? strerrorname_np(errno) : "0",
	       memcmp(&old, &before, sizeof(old)) ? "no" : "yes");
	show_mask("mask");
	r = sigprocmask(12345, NULL, &old);
	printf("sigprocmask(12345, NULL): %d\n", r);
	show("its old", &old);
	s = set_of(SIGSEGV, 0, 0, 0);
	if (sigprocmask(SIG_UNBLOCK, &s, NULL) != 0)
		fail("sigprocmask");
	errno = 0;
	r = sigprocmask(SIG_BLOCK, &s, (sigset_t *)(uintptr_t)8);
	printf("sigprocmask with an old set at 8: %d %s\n", r, strerrorname_np(errno));
	show_mask("mask");
	kernel_blocks("after the errors");
	return 0;
}

/* A handler for SIGSEGV sees in uc_sigmask the mask it interrupted; it runs with SIGSEGV blocked. */
static void on_segv_uc(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	sigset_t cur;

	(void)sig;
	(void)si;
	show("uc_sigmask", &uc->uc_sigmask);
	if (sigprocmask(SIG_BLOCK, NULL, &cur) != 0)
		fail("sigprocmask");
	show("in the handler", &cur);
	kernel_blocks("in the handler");
	/* On return the mask is this: SIGUSR2 and SIGBUS added. */
	sigaddset(&uc->uc_sigmask, SIGUSR2);
	sigaddset(&uc->uc_sigmask, SIGBUS);
}

static int c_handler_mask(void)
{
	struct sigaction sa = { .sa_sigaction = on_segv_uc, .sa_flags = SA_SIGINFO };
	sigset_t s = set_of(SIGTRAP, SIGUSR1, 0, 0);

	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGTRAP);
	if (sigaction(SIGSEGV, &sa, NULL) != 0)
		fail("sigaction");
	s = set_of(SIGUSR1, 0, 0, 0);
	if (sigprocmask(SIG_BLOCK, &s, NULL) != 0)
		fail("sigprocmask");
	s = set_of(SIGTRAP, 0, 0, 0);
	if (sigprocmask(SIG_BLOCK, &s, NULL) != 0)
		fail("sigprocmask");
	s = set_of(SIGTRAP, 0, 0, 0);
	if (sigprocmask(SIG_UNBLOCK, &s, NULL) != 0)
		fail("sigprocmask");
	if (raise(SIGSEGV) != 0)
		fail("raise");
	show_mask("after the handler");
	kernel_blocks("after the handler");
	return 0;
}

/* Which signals of 1 to 64 a set lacks (glibc's internal 32 and 33 left out). */
static void show_lacks(const char *what, const sigset_t *set)
{
	printf("%s lacks:", what);
	for (int sig = 1; sig <= 64; sig++)
		if (sig != 32 && sig != 33 && sigismember(set, sig) != 1)
			printf(" %d", sig);
	printf("\n");
}

static void show_action(const char *what, int sig, void (*handler)(void))
{
	struct sigaction old;
	int flags = SA_SIGINFO | SA_RESTART | SA_RESETHAND | SA_NODEFER | SA_ONSTACK;

	if (sigaction(sig, NULL, &old) != 0)
		fail("sigaction");
	printf("%s: handler %s, flags %#x\n", what,
	       (void (*)(void))old.sa_handler == handler ? "as set" :
	       old.sa_handler == SIG_DFL ? "SIG_DFL" : "another", old.sa_flags & flags);
	show_lacks("  its sa_mask", &old.sa_mask);
}

static sigjmp_buf out_of_usr1;
static volatile sig_atomic_t jump_out;

/*
 * SIGUSR1's handler, installed with sa_mask = sigfillset: it runs with the
 * three blocked as the program sees its mask, the kernel blocking none of
 * them under the shim.
 */
static void on_usr1(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	int r;

	(void)sig;
	(void)si;
	show("  uc_sigmask", &uc->uc_sigmask);
	show_mask("  in the handler");
	kernel_blocks("in the SIGUSR1 handler");
	r = site_load_i32(NULL);
	printf("  site_load_i32(NULL): %d, null block ran %lu times\n", r, site_null_count(1));
	if (kill(getpid(), SIGSEGV) != 0)
		fail("kill");
	printf("  SIGSEGV sent; its handler ran %d times before this one returns\n",
	       got[SIGSEGV]);
	if (jump_out)
		siglongjmp(out_of_usr1, 1);
}

/* sigvec, for programs linked before glibc 2.21: no header declares it now. */
struct old_sigvec {
	void (*sv_handler)(int);
	int sv_mask;
	int sv_flags;
};

#if SHIM_HAS_SIGVEC
int old_sigvec(int sig, const struct old_sigvec *vec, struct old_sigvec *ovec);
__asm__(SHIM_SIGVEC_SYMVER);
#endif

/* SIGALRM's handler, installed by sigvec with every signal of its mask. */
static void on_alrm(int sig)
{
	(void)sig;
	show_mask("  in the SIGALRM handler");
	kernel_blocks("in the SIGALRM handler");
	printf("  site_load_i32(NULL): %d\n", site_load_i32(NULL));
}

/* Another signal's handler whose sa_mask names the three (sigfillset), as without the shim. */
static int c_other_handler(void)
{
	struct sigaction usr1 = { .sa_sigaction = on_usr1, .sa_flags = SA_SIGINFO | SA_RESTART },
			 segv = { .sa_sigaction = on_signal, .sa_flags = SA_SIGINFO },
			 usr2 = { .sa_handler = on_signal_noted, .sa_flags = SA_RESETHAND };
	sigset_t bus = set_of(SIGBUS, 0, 0, 0), before, after;

	setvbuf(stdout, NULL, _IONBF, 0);
	sigfillset(&usr1.sa_mask);
	sigfillset(&usr2.sa_mask);
	if (sigaction(SIGSEGV, &segv, NULL) != 0 || sigaction(SIGUSR1, &usr1, NULL) != 0 ||
	    sigaction(SIGUSR2, &usr2, NULL) != 0)
		fail("sigaction");
	/* Blocked around the handler: uc_sigmask shows it. */
	if (sigprocmask(SIG_BLOCK, &bus, &before) != 0 ||
	    sigprocmask(SIG_BLOCK, NULL, &before) != 0)
		fail("sigprocmask");
	printf("SIGUSR1 raised\n");
	if (raise(SIGUSR1) != 0)
		fail("raise");
	printf("SIGSEGV's handler ran %d times once it returned\n", got[SIGSEGV]);
	if (sigprocmask(SIG_BLOCK, NULL, &after) != 0)
		fail("sigprocmask");
	show("after the handler", &after);
	printf("the mask reads back as before: %s\n", same_set(&before, &after) ? "yes" : "no");
	kernel_blocks("after the SIGUSR1 handler");
	show_action("SIGUSR1's action", SIGUSR1, (void (*)(void))on_usr1);

	printf("SIGUSR1 raised again, its handler jumps out\n");
	jump_out = 1;
	if (!sigsetjmp(out_of_usr1, 1) && raise(SIGUSR1) != 0)
		fail("raise");
	printf("SIGSEGV's handler ran %d times after the siglongjmp\n", got[SIGSEGV]);
	if (sigprocmask(SIG_BLOCK, NULL, &after) != 0)
		fail("sigprocmask");
	show("after the siglongjmp", &after);
	printf("the mask reads back as before: %s\n", same_set(&before, &after) ? "yes" : "no");
	kernel_blocks("after the siglongjmp");

	/* SA_RESETHAND: the handler runs once, and SIG_DFL reads back with the mask set. */
	show_action("SIGUSR2's action", SIGUSR2, (void (*)(void))on_signal_noted);
	if (raise(SIGUSR2) != 0)
		fail("raise");
	show_action("SIGUSR2's action after it ran", SIGUSR2, (void (*)(void))on_signal_noted);

#if SHIM_HAS_SIGVEC
	/* sigvec (old binaries): its BSD mask, every bit set. */
	struct old_sigvec alrm = { .sv_handler = on_alrm, .sv_mask = -1 }, ovec;

	if (old_sigvec(SIGALRM, &alrm, NULL) != 0 || raise(SIGALRM) != 0 ||
	    old_sigvec(SIGALRM, NULL, &ovec) != 0)
		fail("sigvec");
	printf("sigvec reads back: handler %s, sv_mask %#x, sv_flags %#x\n",
	       ovec.sv_handler == on_alrm ? "as set" : "another", (unsigned int)ovec.sv_mask,
	       (unsigned int)ovec.sv_flags);
#else
	(void)on_alrm;
	printf("sigvec: none in this architecture's C library\n");
#endif
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s CASE\n", argv[0]);
		return 2;
	}
	if (!strcmp(argv[1], "readback"))
		return c_readback();
	if (!strcmp(argv[1], "null_check"))
		return c_null_check();
	if (!strcmp(argv[1], "int3"))
		return own_fault(SIGTRAP, "int3", int3);
	if (!strcmp(argv[1], "segv"))
		return own_fault(SIGSEGV, "null store", null_store);
	if (!strcmp(argv[1], "pending"))
		return c_pending();
	if (!strcmp(argv[1], "fork"))
		return c_fork();
	if (!strcmp(argv[1], "thread"))
		return c_thread();
	if (!strcmp(argv[1], "raw_unblock"))
		return c_raw_unblock();
	if (!strcmp(argv[1], "sigwait"))
		return c_sigwait();
	if (!strncmp(argv[1], "exec", 4) || !strncmp(argv[1], "spawn", 5) ||
	    !strcmp(argv[1], "system") || !strcmp(argv[1], "popen"))
		return c_exec(argv[1], argv[0]);
	if (!strcmp(argv[1], "showmask"))
		return c_showmask();
	if (!strcmp(argv[1], "bad_how"))
		return c_bad_how();
	if (!strcmp(argv[1], "handler_mask"))
		return c_handler_mask();
	if (!strcmp(argv[1], "other_handler"))
		return c_other_handler();
	fprintf(stderr, "%s: no case %s\n", argv[0], argv[1]);
	return 2;
}
