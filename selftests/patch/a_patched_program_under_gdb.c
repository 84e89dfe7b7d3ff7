// SPDX-License-Identifier: MIT
/*
 * A patched program under a debugger: with SIGTRAP passed to the program
 * (gdb's `handle SIGTRAP nostop noprint pass`, what a gdb user of a
 * program that faultline patches does), the program runs as without gdb.
 * This test runs itself, as the program, under gdb in batch mode; the
 * program's 2 threads call the code while its main thread changes it
 * 1,000 times, within one instruction (t_one_site: faultline's int3s);
 * then again, with one change in ten moving boundaries and the
 * handshake's signal passed too (gdb stops at a real-time signal by
 * default: `handle SIG<SIGRTMAX - 1> nostop noprint pass`).  RUNS runs of
 * each (argv[1]).  Each run: the
 * program must exit 0 ("[Inferior 1 (process N) exited normally]") having
 * seen every call return 1 or 2.  gdb and the program are killed after
 * T_LIMIT_S.  Skipped without gdb (FL_TEST_GDB, or /usr/bin/gdb, which
 * scripts/deps.sh test installs).
 *
 * The handle command comes once the program is ready, at a breakpoint
 * (program_ready), and the program goes on with `signal 0`: gdb 13, told
 * to pass SIGTRAP, passes it also when it resumes a thread from one of its
 * own breakpoints (the dynamic loader's, at start-up and at each dlopen, or
 * the user's), which kills any program, /bin/true too:
 *   gdb -batch -nx -ex 'handle SIGTRAP nostop noprint pass' -ex run
 *       --args /bin/true
 * ends "Program terminated with signal SIGTRAP".  So:
 *   gdb -batch -nx -ex 'break program_ready' -ex run -ex delete
 *       -ex 'handle SIGTRAP nostop noprint pass' [-ex 'handle SIG63 ...']
 *       -ex 'signal 0' -ex 'info threads' --args PROGRAM --program KIND
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/prctl.h>

#include "common.h"

/* gdb: FL_TEST_GDB (the guest's: Debian's gdb-minimal), or /usr/bin/gdb. */
static const char *gdb = "/usr/bin/gdb";
#define CHANGES 1000
/*
 * Runs of each kind (argv[1], fewer under TCG): a trap went wrong under
 * gdb only when a thread met an int3 as its patch ended (one run in two
 * to one in five before faultline knew gdb moves the PC back).
 */
#define RUNS 10
#define T_LIMIT_S 600

static struct t_site one, move;
static _Atomic int stop;
static _Atomic uint64_t calls, wrong;

static void *caller(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		int a = one.fn(), b = move.fn();

		atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
		if ((a != 1 && a != 2) || (b != 1 && b != 2))
			atomic_fetch_add(&wrong, 1);
	}
	return NULL;
}

/* gdb's breakpoint: faultline is ready, its libraries are loaded. */
static __attribute__((noinline)) void program_ready(void)
{
	__asm__ volatile("" ::: "memory");
}

/* The program gdb runs: "one" (within one instruction only) or "mixed". */
static void program(const char *kind) __attribute__((noreturn));
static void program(const char *kind)
{
	bool mixed = strcmp(kind, "mixed") == 0;
	pthread_t th[2];
	long moves = 0;

	/* No exit handlers: LeakSanitizer's cannot run under ptrace (SAN=1). */
	t_in_child = 1;
	prctl(PR_SET_PDEATHSIG, SIGKILL);	/* gone with gdb */
	t_init();
	t_enable();
	one = t_one_site();
	move = t_move_site();
	program_ready();
	for (int i = 0; i < 2; i++)
		t_check(pthread_create(&th[i], NULL, caller, NULL) == 0, "pthread_create");
	for (long c = 0; c < CHANGES; c++) {
		struct t_site *s = mixed && c % 10 == 9 ? &move : &one;
		struct fl_diag d;
		int err = t_flip(s, &d);

		if (err)
			t_fail("change %ld: %d %s", c, err, d.msg);
		moves += s->moves;
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	printf("the program: %d changes (%ld moving boundaries), %llu calls, %llu wrong\n", CHANGES,
	       moves, (unsigned long long)calls, (unsigned long long)wrong);
	t_check(wrong == 0, "calls returned a mix of versions");
	t_check(t_site_is_whole(&one) && t_site_is_whole(&move), "the code is not the last version");
	_exit(0);
}

/*
 * Runs gdb with the handle commands on the program of kind; returns
 * whether the program exited 0 with its results right.  Prints gdb's
 * output when it did not.
 */
static bool under_gdb(const char *self, const char *kind, const char *handle2)
{
	const char *argv[24];
	char out[65536], extra[96];
	size_t len = 0;
	int fds[2], status, n = 0;
	double end = t_now() + T_LIMIT_S;
	bool hung = false, ok;
	pid_t pid;

	argv[n++] = gdb;
	argv[n++] = "-batch";
	argv[n++] = "-nx";
	argv[n++] = "-ex";
	argv[n++] = "break program_ready";
	argv[n++] = "-ex";
	argv[n++] = "run";
	argv[n++] = "-ex";
	argv[n++] = "delete";
	argv[n++] = "-ex";
	argv[n++] = "handle SIGTRAP nostop noprint pass";
	if (handle2) {
		argv[n++] = "-ex";
		argv[n++] = handle2;
	}
	argv[n++] = "-ex";
	argv[n++] = "signal 0";
	argv[n++] = "-ex";
	argv[n++] = "info threads";
	argv[n++] = "--args";
	argv[n++] = self;
	argv[n++] = "--program";
	argv[n++] = kind;
	argv[n] = NULL;
	snprintf(extra, sizeof(extra), " -ex '%s'", handle2 ? handle2 : "");
	printf("  %s: gdb -batch -nx -ex 'break program_ready' -ex run -ex delete -ex 'handle "
	       "SIGTRAP nostop noprint pass'%s -ex 'signal 0' -ex 'info threads' --args %s "
	       "--program %s\n", kind, handle2 ? extra : "", t_name, kind);
	fflush(stdout);
	t_check(pipe2(fds, O_CLOEXEC) == 0, "pipe: %s", strerror(errno));
	pid = fork();
	t_check(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		setpgid(0, 0);	/* gdb and the program: one group to kill */
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		execv(gdb, (char *const *)argv);
		_exit(127);
	}
	close(fds[1]);
	for (;;) {
		struct pollfd p = { .fd = fds[0], .events = POLLIN };
		int left = (int)((end - t_now()) * 1000);
		ssize_t r;

		if (left <= 0 || poll(&p, 1, left) == 0) {
			hung = true;
			break;
		}
		r = read(fds[0], out + len, sizeof(out) - 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
		if (len == sizeof(out) - 1)
			len = 0;	/* keep reading: only the end matters */
	}
	out[len] = 0;
	close(fds[0]);
	if (!t_wait(pid, hung ? 0 : T_LIMIT_S, &status))
		hung = true;
	ok = !hung && strstr(out, "exited normally]") && strstr(out, " 0 wrong");
	for (char *line = strtok(out, "\n"); line && !ok; line = strtok(NULL, "\n"))
		printf("    | %s\n", line);
	printf("  %s: %s\n", kind, hung ? "gdb did not end within the limit (killed)" : ok ?
	       "the program exited 0, its results right" : "the program did not exit 0 (above)");
	return ok;
}

int main(int argc, char **argv)
{
	char self[4096], handle2[64];
	ssize_t n;
	bool ok = true;
	int runs = RUNS;

	t_start(argv);
	if (argc > 2 && strcmp(argv[1], "--program") == 0)
		program(argv[2]);
	if (argc > 1)
		runs = atoi(argv[1]) > 0 ? atoi(argv[1]) : 1;
	if (getenv("FL_TEST_GDB"))
		gdb = getenv("FL_TEST_GDB");
	if (access(gdb, X_OK) != 0) {
		printf("no %s\n", gdb);
		t_skip("no gdb (scripts/deps.sh test installs it; the guest's comes from vmtest)");
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	t_check(n > 0, "/proc/self/exe: %s", strerror(errno));
	self[n] = 0;
	snprintf(handle2, sizeof(handle2), "handle SIG%d nostop noprint pass", SIGRTMAX - 1);
	for (int run = 0; run < runs; run++) {
		ok &= under_gdb(self, "one", NULL);
		ok &= under_gdb(self, "mixed", handle2);
	}
	t_check(ok, "a run under gdb did not end as without gdb (above)");
	printf("PASS %s\n", t_name);
	return 0;
}
