// SPDX-License-Identifier: MIT
/*
 * A fork that faultline does not hear of (syscall(SYS_fork): no
 * pthread_atfork handlers run, so it cannot wait for a patch under way)
 * while another thread patches: the child may get a copy of the code with
 * a patch's int3 in it, and no patching thread.  It must still run whole
 * code, old or new.  One thread changes t_one_site within its instruction
 * back to back; the main thread forks 2,000 times (argv[1]); each child
 * calls the function 3 times and _exits 0 if every call returned 1 or 2.
 * No child may hang (each is killed after T_CHILD_S, and the test fails),
 * and each must exit 0.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>

#include "common.h"

#define FORKS 2000
#define T_CHILD_S 60

static struct t_site one;
static _Atomic int stop;
static _Atomic uint64_t patches;

static void *patcher(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		struct fl_diag d;
		int err = t_flip(&one, &d);

		if (err)
			t_fail("fl_patch_text: %d %s", err, d.msg);
		atomic_fetch_add(&patches, 1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long forks = argc > 1 ? atol(argv[1]) : FORKS;
	pthread_t th;

	t_start(argv);
	t_init();
	t_enable();
	one = t_one_site();
	t_check(pthread_create(&th, NULL, patcher, NULL) == 0, "pthread_create");
	while (atomic_load(&patches) == 0)
		sched_yield();
	fflush(stdout);
	for (long i = 0; i < forks; i++) {
		pid_t pid = (pid_t)syscall(SYS_fork);
		char how[64];
		int status;

		t_check(pid >= 0, "fork %ld: %s", i, strerror(errno));
		if (pid == 0) {
			/* Only this thread is here: nothing that takes a lock. */
			for (int c = 0; c < 3; c++) {
				int v = one.fn();

				if (v != 1 && v != 2)
					_exit(2);
			}
			_exit(0);
		}
		if (!t_wait(pid, T_CHILD_S, &status)) {
			atomic_store(&stop, 1);
			t_fail("fork %ld of %ld: the child did not end within %d s (killed)", i, forks,
			       T_CHILD_S);
		}
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			atomic_store(&stop, 1);
			t_fail("fork %ld: the child ended with %s (2: a call returned neither 1 nor 2)", i,
			       t_status(status, how));
		}
	}
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	printf("  %ld raw forks during %llu patches: every child ran whole code and exited\n", forks,
	       (unsigned long long)patches);
	printf("PASS %s\n", t_name);
	return 0;
}
