// SPDX-License-Identifier: MIT
/*
 * A fork while another thread patches: the child must get whole code, old
 * or new, never an int3 of a patch that nobody will finish in it (its copy
 * of the page would keep it, and a thread of the child that ran there
 * would trap for ever).  One thread rewrites a 5-byte instruction back to
 * back; the main thread watches the site and forks the moment it sees the
 * patch's int3 there, argv[1] times (default 100).  Each child must find
 * no int3 at the site, call the function, and return 1 or 2 within
 * T_CHILD_S seconds.
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/wait.h>

#include "common.h"

#define T_CHILD_S 30

static const uint8_t v1[5] = { 0xb8, 0x01, 0x00, 0x00, 0x00 };	/* mov $1,%eax */
static const uint8_t v2[5] = { 0xb8, 0x02, 0x00, 0x00, 0x00 };	/* mov $2,%eax */
static uint8_t *page;
static _Atomic int stop;
static _Atomic uint64_t patches;

static void *patcher(void *arg)
{
	bool one = true;

	(void)arg;
	while (!atomic_load(&stop)) {
		struct fl_patch p = { .addr = page, .old_bytes = one ? v1 : v2,
				      .new_bytes = one ? v2 : v1, .len = 5 };
		struct fl_diag d = { 0 };

		if (fl_patch_text(&p, 1, &d) != 0)
			t_fail("fl_patch_text: %s", d.msg);
		one = !one;
		atomic_fetch_add(&patches, 1);
		sched_yield();	/* the lock is not fair: let a fork take it */
	}
	return NULL;
}

int main(int argc, char **argv)
{
	uint8_t code[8];
	long forks = argc > 1 ? atol(argv[1]) : 100;
	pthread_t th;

	t_start(argv);
	memcpy(code, v1, 5);
	code[5] = 0xc3;
	page = t_code(code, 6);
	t_init();
	t_enable();
	t_check(pthread_create(&th, NULL, patcher, NULL) == 0, "pthread_create");
	for (long i = 0; i < forks; i++) {
		pid_t pid;
		int status;

		/* In the middle of a patch: its int3 is at the site. */
		while (*(volatile uint8_t *)page != 0xcc)
			;
		pid = fork();

		t_check(pid >= 0, "fork: %s", strerror(errno));
		if (pid == 0) {
			/* An int3 left at the site: nobody will finish the patch here. */
			if (page[0] == 0xcc)
				_exit(3);
			alarm(T_CHILD_S);
			_exit(((int (*)(void))(void *)page)());
		}
		t_check(waitpid(pid, &status, 0) == pid, "waitpid");
		if (!WIFEXITED(status) || (WEXITSTATUS(status) != 1 && WEXITSTATUS(status) != 2)) {
			atomic_store(&stop, 1);
			t_fail("fork %ld: the child %s %d (3: it has an int3 at the site)", i,
			       WIFSIGNALED(status) ? "was killed by signal" : "returned",
			       WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
		}
	}
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	printf("  %ld forks in the middle of a patch (%llu patches): every child ran whole code\n", forks,
	       (unsigned long long)patches);
	printf("PASS %s\n", t_name);
	return 0;
}
