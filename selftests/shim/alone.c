// SPDX-License-Identifier: MIT
/*
 * faultline's threads and descriptors change nothing the program can do
 * (lib/preload/threads.c, lib/core/ownfd.c, lib/core/workers.c).
 *
 *   alone CASE
 *
 * The runner runs the implicit build (alone-imp) under the shim and the
 * explicit one (alone-exp) without it and wants the same stdout, stderr
 * and exit status.  Each case ends with sites.ll's null checks: claimed
 * under the shim (faultline still works after the case), explicit without.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sites.h"

static void fail(const char *what)
{
	printf("FAILED: %s (%s)\n", what, strerror(errno));
	fflush(stdout);
	exit(1);
}

static void null_checks(void)
{
	long r = site_load_i32(NULL) + site_load_i8(NULL) + site_load_i64_off(NULL);

	site_store_i32(NULL, 1);
	printf("null checks returned %ld\n", r);
	fflush(stdout);
}

/* How many of this process's threads are named fl-* (faultline's). */
static int faultline_threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	char path[300], name[32];
	int n = 0;
	FILE *f;

	if (!d)
		fail("/proc/self/task");
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		/* A thread that ended meanwhile: not counted. */
		if (!(f = fopen(path, "r")))
			continue;
		if (fgets(name, sizeof(name), f) && !strncmp(name, "fl-", 3))
			n++;
		fclose(f);
	}
	closedir(d);
	return n;
}

static void *short_worker(void *arg)
{
	struct timespec ts = { 0, 100 * 1000 * 1000 };

	nanosleep(&ts, NULL);
	printf("worker %ld done\n", (long)(intptr_t)arg);
	fflush(stdout);
	return arg;
}

/* main ends by pthread_exit while a worker runs: the worker's end ends the process, exit 0. */
static int main_pthread_exits(void)
{
	pthread_t t;

	null_checks();
	if (pthread_create(&t, NULL, short_worker, (void *)1) != 0)
		fail("pthread_create");
	printf("main calls pthread_exit\n");
	fflush(stdout);
	pthread_exit(NULL);
}

/* Every thread ends by pthread_exit, the last one a thread main did not create. */
static void *chained_worker(void *arg)
{
	long n = (long)(intptr_t)arg;
	pthread_t t;

	short_worker(arg);
	if (n < 3 && pthread_create(&t, NULL, chained_worker, (void *)(intptr_t)(n + 1)) != 0)
		fail("pthread_create");
	pthread_exit(NULL);
}

static int every_thread_pthread_exits(void)
{
	pthread_t t;

	null_checks();
	if (pthread_create(&t, NULL, chained_worker, (void *)1) != 0)
		fail("pthread_create");
	pthread_exit(NULL);
}

/* A parent waits for a child whose main calls pthread_exit: it ends, with status 0. */
static int parent_waits_for_such_a_child(void)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		fail("fork");
	if (pid == 0)
		main_pthread_exits();
	if (waitpid(pid, &status, 0) != pid)
		fail("waitpid");
	printf("child: %s %d\n", WIFEXITED(status) ? "exit" : "signal",
	       WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	null_checks();
	return 0;
}

/* unshare(CLONE_NEWUSER) wants a single-threaded caller. */
static int unshare_user_namespace(void)
{
	int before = faultline_threads(), r;
	pthread_t t;

	r = unshare(CLONE_NEWUSER);
	printf("unshare(CLONE_NEWUSER): %s\n", r == 0 ? "0" : strerror(errno));
	/* The program's threads work in the new namespace; faultline's are back. */
	if (pthread_create(&t, NULL, short_worker, (void *)1) != 0 || pthread_join(t, NULL) != 0)
		fail("a thread after unshare");
	printf("faultline's threads as before: %s\n",
	       faultline_threads() == before ? "yes" : "no");
	null_checks();
	return r == 0 ? 0 : 1;
}

/* setns into a mount namespace wants a caller that shares its fs with no thread. */
static int setns_mount_namespace(void)
{
	int before = faultline_threads(), fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC), r;

	if (fd < 0)
		fail("/proc/self/ns/mnt");
	if (unshare(CLONE_NEWNS) != 0)
		fail("unshare(CLONE_NEWNS)");
	r = setns(fd, CLONE_NEWNS);
	printf("setns(CLONE_NEWNS): %s\n", r == 0 ? "0" : strerror(errno));
	close(fd);
	printf("faultline's threads as before: %s\n",
	       faultline_threads() == before ? "yes" : "no");
	null_checks();
	return r == 0 ? 0 : 1;
}

/*
 * The descriptors an executed program has: the program opens two, and
 * executes itself (list-fds) without the shim and with it, each listing
 * every descriptor below its soft RLIMIT_NOFILE (what sysconf's
 * _SC_OPEN_MAX loops and CPython's fd_status.py look at).
 */
/*
 * The two the program opened are named a and b: their numbers may differ
 * between the runs (a thread of faultline's may hold a number for a moment,
 * reading a module's file, when the program opens them).  The executed
 * program runs under the shim too, whose threads read files of their own
 * at its start: a number taken for a moment is not one the program was
 * given.  So the listing is taken again until two in a row agree (a
 * descriptor passed by exec stays), 5 s at most.
 */
static void list_once(int a, int b, char *out, size_t size)
{
	long max = sysconf(_SC_OPEN_MAX);
	size_t n = 0;

	out[0] = 0;
	for (int fd = 0; fd < max && n + 16 < size; fd++)
		if (fcntl(fd, F_GETFD) >= 0) {
			if (fd == a || fd == b)
				n += (size_t)snprintf(out + n, size - n, " %c", fd == a ? 'a' : 'b');
			else
				n += (size_t)snprintf(out + n, size - n, " %d", fd);
		}
}

static void list_fds(const char *who, int a, int b)
{
	static char was[4096], now[4096];

	list_once(a, b, was, sizeof(was));
	for (int i = 0; i < 250; i++) {
		nanosleep(&(struct timespec){ .tv_nsec = 20 * 1000 * 1000 }, NULL);
		list_once(a, b, now, sizeof(now));
		if (!strcmp(was, now))
			break;
		memcpy(was, now, sizeof(was));
	}
	printf("%s:%s\n", who, now);
	fflush(stdout);
}

static void run_self(char **argv, const char *who, bool shim, int a, int b)
{
	char fa[16], fb[16];
	int status;
	pid_t pid = fork();

	if (pid < 0)
		fail("fork");
	if (pid == 0) {
		if (!shim)
			unsetenv("LD_PRELOAD");
		snprintf(fa, sizeof(fa), "%d", a);
		snprintf(fb, sizeof(fb), "%d", b);
		execl("/proc/self/exe", argv[0], "list-fds", who, fa, fb, (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))
		fail("the executed program");
}

static int executed_programs_see_only_their_descriptors(char **argv)
{
	struct rlimit lim;
	int a = open("/dev/null", O_RDONLY), b = open("/dev/null", O_WRONLY);

	if (a < 0 || b < 0)
		fail("open");
	/* The usual soft limit, with room above it for faultline's (lib/core/ownfd.c). */
	if (getrlimit(RLIMIT_NOFILE, &lim) != 0)
		fail("getrlimit");
	lim.rlim_cur = 1024;
	if (lim.rlim_max != RLIM_INFINITY && lim.rlim_max < 1024 + 64) {
		printf("the hard RLIMIT_NOFILE (%llu) leaves no room above 1024\n",
		       (unsigned long long)lim.rlim_max);
		return 1;
	}
	if (setrlimit(RLIMIT_NOFILE, &lim) != 0)
		fail("setrlimit");
	run_self(argv, "without the shim", false, a, b);
	run_self(argv, "with the shim as its parent had it", true, a, b);
	null_checks();
	return 0;
}

/*
 * A child of vfork (CPython's subprocess) resets a handler and the mask
 * before it executes: the parent's handler and mask stay as they were.
 */
static volatile int usr1_seen;

static void on_usr1(int sig)
{
	(void)sig;
	usr1_seen++;
}

static int vfork_child_resets_its_handlers(void)
{
	struct sigaction act = { .sa_handler = on_usr1 }, dfl = { .sa_handler = SIG_DFL };
	sigset_t all, none, now;
	int status;
	pid_t pid;

	sigemptyset(&none);
	sigfillset(&all);
	sigaction(SIGUSR1, &act, NULL);
	pthread_sigmask(SIG_SETMASK, &all, NULL);
	pid = vfork();
	if (pid == 0) {
		sigaction(SIGUSR1, &dfl, NULL);
		pthread_sigmask(SIG_SETMASK, &none, NULL);
		execl("/proc/self/exe", "alone", "exit-0", (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		fail("vfork");
	pthread_sigmask(SIG_BLOCK, NULL, &now);
	printf("the parent's mask: SIGSEGV %s, SIGUSR1 %s\n",
	       sigismember(&now, SIGSEGV) ? "blocked" : "not blocked",
	       sigismember(&now, SIGUSR1) ? "blocked" : "not blocked");
	pthread_sigmask(SIG_SETMASK, &none, NULL);
	raise(SIGUSR1);
	printf("the parent's SIGUSR1 handler ran %d time(s)\n", usr1_seen);
	null_checks();
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "list-fds")) {
		list_fds(argv[2], atoi(argv[3]), atoi(argv[4]));
		return 0;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: %s CASE\n", argv[0]);
		return 2;
	}
	if (!strcmp(argv[1], "exit-0"))
		return 0;
	if (!strcmp(argv[1], "main-pthread-exits"))
		return main_pthread_exits();
	if (!strcmp(argv[1], "every-thread-pthread-exits"))
		return every_thread_pthread_exits();
	if (!strcmp(argv[1], "parent-waits"))
		return parent_waits_for_such_a_child();
	if (!strcmp(argv[1], "unshare-user"))
		return unshare_user_namespace();
	if (!strcmp(argv[1], "setns-mount"))
		return setns_mount_namespace();
	if (!strcmp(argv[1], "vfork-child"))
		return vfork_child_resets_its_handlers();
	if (!strcmp(argv[1], "exec-fds"))
		return executed_programs_see_only_their_descriptors(argv);
	fprintf(stderr, "%s: no case %s\n", argv[0], argv[1]);
	return 2;
}
