// SPDX-License-Identifier: MIT
/*
 * The workload of the daemon's end-to-end tests: fails the implicit null
 * checks of sites.ll a known number of times (L times e2e_load, S times
 * e2e_store, R times e2e_rmw) and says what it did on stdout, one line at
 * a time.  Run under libfaultline-preload.so with FAULTLINE_SOCKET set; it
 * never talks to the daemon itself.
 *
 *   e2e-prog run L S R            fails the checks, prints "pid PID", exits
 *   e2e-prog wait L S R           fails the checks, prints "ready PID", then
 *                                 for each line "fail L S R" on stdin fails
 *                                 those too and prints "ok"; exits at EOF
 *   e2e-prog threads L S R        4 threads each fail L, S, R; prints
 *                                 "pid PID"
 *   e2e-prog fork L S R l s r     fails L, S, R; forks a child that fails
 *                                 l, s, r and prints "child PID MS" (MS: how
 *                                 long fork took to return in the child);
 *                                 when it has exited, fails L, S, R again
 *                                 and prints "parent PID"
 *   e2e-prog stray L S R          fails L, S, R, then reads NULL L times at
 *                                 an instruction that is not a site, each
 *                                 skipped by its own SIGSEGV handler (which
 *                                 faultline chains to); prints "stray PID PC"
 *   e2e-prog churn LIB N          a thread loads and unloads LIB (a library
 *                                 with implicit null checks) in a loop while
 *                                 the main thread forks N children that exit
 *                                 at once; prints "churn PID HUNG" (HUNG: 1
 *                                 when a child did not exit within HANG_S,
 *                                 killed, and no more were forked; else 0),
 *                                 then exits at EOF
 *
 * Valid pointers are interleaved with the NULL ones (those must not count).
 * A check that does not return its sentinel prints "FAIL" and exits 1.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <stdint.h>
#include <unistd.h>

int e2e_load(int *p);
int e2e_store(int *p, int x);
int e2e_rmw(int *p, int x);
long e2e_sm(long x);

#define THREADS 4

/*
 * A child that has not exited this long after fork is hung in fork (a
 * lock held for ever): minutes, so that a slow machine (the child
 * registers with the daemon before fork returns) never looks hung.
 */
#define HANG_S 120

static volatile int sink;

static int fail(long l, long s, long r)
{
	int word = 1;

	for (long i = 0; i < l; i++) {
		if (e2e_load(NULL) != -1)
			return -1;
		sink += e2e_load(&word);
	}
	for (long i = 0; i < s; i++) {
		if (e2e_store(NULL, (int)i) != -1 || e2e_store(&word, (int)i) != 0)
			return -1;
	}
	for (long i = 0; i < r; i++) {
		if (e2e_rmw(NULL, 1) != -1 || e2e_rmw(&word, 1) != 0)
			return -1;
	}
	sink += (int)e2e_sm(l);
	return 0;
}

static long arg(char **argv, int i)
{
	return strtol(argv[i], NULL, 10);
}

static long counts[3];

static void *worker(void *p)
{
	(void)p;
	return (void *)(long)fail(counts[0], counts[1], counts[2]);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static const char *churn_lib;
static volatile int churn_stop;

static void *churner(void *p)
{
	(void)p;
	while (!churn_stop) {
		void *h = dlopen(churn_lib, RTLD_NOW);

		if (h)
			dlclose(h);
	}
	return NULL;
}

static int churn(int n)
{
	pthread_t t;
	int hung = 0;

	if (pthread_create(&t, NULL, churner, NULL))
		return 1;
	for (int i = 0; i < n; i++) {
		pid_t child = fork();
		int status, k;

		if (child == 0)
			_exit(0);
		if (child < 0)
			break;
		for (k = 0; k < HANG_S * 1000; k++) {
			if (waitpid(child, &status, WNOHANG) == child)
				break;
			usleep(1000);
		}
		if (k == HANG_S * 1000) {
			hung++;
			kill(child, SIGKILL);
			waitpid(child, &status, 0);
			break;	/* one is enough to fail, and they would take as long each */
		}
	}
	churn_stop = 1;
	pthread_join(t, NULL);
	printf("churn %d %d\n", (int)getpid(), hung);
	fflush(stdout);
	/* Alive until stdin ends: the daemon is asked about it meanwhile. */
	while (getchar() != EOF)
		;
	return 0;
}

static int bad(const char *what)
{
	printf("FAIL %s\n", what);
	return 1;
}

/* A NULL read that is not an implicit check: its address is the label. */
extern const char e2e_stray_insn[], e2e_stray_end[];

__attribute__((noinline, noclone)) static long stray_read(const long *p)
{
	long v;

	__asm__ volatile(".globl e2e_stray_insn\n\t.hidden e2e_stray_insn\n"
			 "e2e_stray_insn:\n\tmovq (%1), %0\n"
			 ".globl e2e_stray_end\n\t.hidden e2e_stray_end\n"
			 "e2e_stray_end:"
			 : "=r"(v) : "r"(p) : "memory");
	return v;
}

static volatile sig_atomic_t strays_skipped;

static void on_stray(int sig, siginfo_t *si, void *uc_v)
{
	ucontext_t *uc = uc_v;

	(void)si;
	if (uc->uc_mcontext.gregs[REG_RIP] != (greg_t)e2e_stray_insn) {
		signal(sig, SIG_DFL);
		return;
	}
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)e2e_stray_end;
	strays_skipped++;
}

static int stray(long n)
{
	static const long *volatile null_ptr;
	struct sigaction sa = { .sa_sigaction = on_stray, .sa_flags = SA_SIGINFO };

	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, NULL))
		return bad("sigaction");
	for (long i = 0; i < n; i++)
		stray_read(null_ptr);
	if (strays_skipped != n)
		return bad("the stray reads were not all skipped");
	printf("stray %d %llu\n", (int)getpid(), (unsigned long long)(uintptr_t)e2e_stray_insn);
	return 0;
}

/*
 * A sled of NULL reads, "movq (%rdi), %rax" (48 8b 07) each, then "ret",
 * mapped at 1 MiB on purpose: below the program's text (PIE or not), so that
 * the kernel's signal entries of these PCs sort before those of the sites.
 */
#define SLED_AT 0x100000ul
#define SLED_INSN 3

static unsigned char *sled;
static long sled_len;
static volatile sig_atomic_t sled_skipped;

static void on_sled(int sig, siginfo_t *si, void *uc_v)
{
	ucontext_t *uc = uc_v;
	uintptr_t rip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];

	(void)si;
	if (rip < (uintptr_t)sled || rip >= (uintptr_t)sled + (uintptr_t)sled_len * SLED_INSN) {
		signal(sig, SIG_DFL);
		return;
	}
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)(rip + SLED_INSN);
	sled_skipped++;
}

static int strays(long n)
{
	struct sigaction sa = { .sa_sigaction = on_sled, .sa_flags = SA_SIGINFO };
	size_t size = ((size_t)n * SLED_INSN + 1 + 4095) & ~(size_t)4095;
	void *m = mmap((void *)SLED_AT, size, PROT_READ | PROT_WRITE | PROT_EXEC,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	if (n < 1 || m != (void *)SLED_AT)
		return bad("mmap of the sled at 0x100000");
	sled = m;
	sled_len = n;
	for (long i = 0; i < n; i++)
		memcpy(sled + i * SLED_INSN, "\x48\x8b\x07", SLED_INSN);
	sled[n * SLED_INSN] = 0xc3;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, NULL))
		return bad("sigaction");
	((void (*)(const void *))(uintptr_t)sled)(NULL);
	if (sled_skipped != n)
		return bad("the sled's reads were not all skipped");
	printf("strays %d\n", (int)getpid());
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 4)
		return bad("usage: e2e-prog run|wait|threads|fork|stray|strays L S R [l s r|N] | churn LIB N");
	if (!strcmp(argv[1], "churn")) {
		churn_lib = argv[2];
		return churn(atoi(argv[3]));
	}
	if (argc < 5)
		return bad("usage: e2e-prog run|wait|threads|fork|stray|strays L S R [l s r|N] | churn LIB N");
	counts[0] = arg(argv, 2);
	counts[1] = arg(argv, 3);
	counts[2] = arg(argv, 4);
	if (!strcmp(argv[1], "run")) {
		if (fail(counts[0], counts[1], counts[2]))
			return bad("a check did not return its sentinel");
		printf("pid %d\n", (int)getpid());
		return 0;
	}
	if (!strcmp(argv[1], "stray")) {
		if (fail(counts[0], counts[1], counts[2]))
			return bad("a check did not return its sentinel");
		return stray(counts[0]);
	}
	if (!strcmp(argv[1], "strays") && argc == 6) {
		if (fail(counts[0], counts[1], counts[2]))
			return bad("a check did not return its sentinel");
		return strays(arg(argv, 5));
	}
	if (!strcmp(argv[1], "wait")) {
		char line[128];
		long l, s, r;

		if (fail(counts[0], counts[1], counts[2]))
			return bad("a check did not return its sentinel");
		printf("ready %d\n", (int)getpid());
		while (fgets(line, sizeof(line), stdin)) {
			if (sscanf(line, "fail %ld %ld %ld", &l, &s, &r) != 3)
				return bad("expected: fail L S R");
			if (fail(l, s, r))
				return bad("a check did not return its sentinel");
			printf("ok\n");
		}
		return 0;
	}
	if (!strcmp(argv[1], "threads")) {
		pthread_t t[THREADS];
		int errs = 0;

		for (int i = 0; i < THREADS; i++)
			if (pthread_create(&t[i], NULL, worker, NULL))
				return bad("pthread_create");
		for (int i = 0; i < THREADS; i++) {
			void *ret;

			pthread_join(t[i], &ret);
			errs += ret != NULL;
		}
		if (errs)
			return bad("a check did not return its sentinel");
		printf("pid %d\n", (int)getpid());
		return 0;
	}
	if (!strcmp(argv[1], "fork") && argc == 8) {
		pid_t child;
		int status;
		double t0;

		if (fail(counts[0], counts[1], counts[2]))
			return bad("a check did not return its sentinel");
		fflush(stdout);
		t0 = now_ms();
		child = fork();
		if (child < 0)
			return bad("fork");
		if (child == 0) {
			double ms = now_ms() - t0;

			if (fail(arg(argv, 5), arg(argv, 6), arg(argv, 7)))
				_exit(bad("a check did not return its sentinel in the child"));
			printf("child %d %.1f\n", (int)getpid(), ms);
			fflush(stdout);
			_exit(0);
		}
		if (waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			return bad("the child failed");
		if (fail(counts[0], counts[1], counts[2]))
			return bad("a check did not return its sentinel after fork");
		printf("parent %d\n", (int)getpid());
		return 0;
	}
	return bad("usage: e2e-prog run|wait|threads|fork|stray|strays L S R [l s r|N] | churn LIB N");
}
