// SPDX-License-Identifier: MIT
/*
 * The handshake in a pid namespace that sees its parent's /proc (as
 * `unshare -p -f` without --mount-proc): /proc/self/task lists the
 * threads by their tids in the parent's namespace, which this one cannot
 * signal (ESRCH).  The patcher must not take them for threads that have
 * exited and write on a guess.  The test unshares CLONE_NEWPID and forks:
 * in the child (pid 1 of the new namespace), a thread spins inside a
 * region, at a boundary other than its first byte (as in
 * boundary_moves_with_threads_running, case 2), and a change of the region
 * that moves boundaries must be refused with -EBUSY, the bytes unchanged.
 * Once the thread has left, the change is made or refused with a reason:
 * either is right (the output says which).
 *
 * The new bytes are NOPs up to the region's end, where the spinning code
 * returns: a change written with the thread inside lets it return instead
 * of crashing the child, so that the child can say what happened.
 */
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "common.h"

#define T_LIMIT_S 600

static _Atomic int go_on, in_place;

static void *spin(void *code)
{
	((void (*)(void))code)();
	return NULL;
}

/* The first tid /proc/self/task lists. */
static long first_listed(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	long tid = -1;

	t_check(d != NULL, "/proc/self/task: %s", strerror(errno));
	while ((e = readdir(d)))
		if (e->d_name[0] != '.') {
			tid = atol(e->d_name);
			break;
		}
	closedir(d);
	return tid;
}

static void child(void) __attribute__((noreturn));
static void child(void)
{
	/*
	 * movabs $&go_on,%rax; movabs $&in_place,%rdx; then the region
	 *   +20: nop; 1: movl $1,(%rdx); cmpl $0,(%rax); je 1b   and then   ret
	 */
	static const uint8_t region[12] = { 0x90, 0xc7, 0x02, 0x01, 0x00, 0x00, 0x00,
					    0x83, 0x38, 0x00, 0x74, 0xf5 };
	static const uint8_t nops[12] = { 0x90, 0x90, 0x90, 0x90, 0x90, 0x90,
					  0x90, 0x90, 0x90, 0x90, 0x90, 0x90 };
	uint8_t code[33] = { 0x48, 0xb8 };
	uintptr_t flag = (uintptr_t)&go_on;
	struct fl_patch p;
	struct fl_diag d = { 0 };
	pthread_t th;
	uint8_t *page;
	int err;

	t_in_child = 1;
	printf("  in the child: getpid() %d, gettid() %d; /proc/self/task lists %ld\n", (int)getpid(),
	       (int)gettid(), first_listed());
	memcpy(code + 2, &flag, 8);
	code[10] = 0x48;
	code[11] = 0xba;
	flag = (uintptr_t)&in_place;
	memcpy(code + 12, &flag, 8);
	memcpy(code + 20, region, 12);
	code[32] = 0xc3;
	page = t_code(code, sizeof(code));
	t_init();
	t_enable();

	t_check(pthread_create(&th, NULL, spin, page) == 0, "pthread_create");
	while (!atomic_load(&in_place))
		;
	p = (struct fl_patch){ .addr = page + 20, .old_bytes = region, .new_bytes = nops, .len = 12 };
	err = fl_patch_text(&p, 1, &d);
	printf("  a thread inside the region: %d: %s\n", err, err ? d.msg : "(made)");
	t_check(err != 0 || memcmp(page + 20, region, 12) != 0, "it returned 0 and did not write");
	t_check(err != 0, "the change was made with a thread inside it (returned 0): the threads "
		"/proc/self/task lists are not this namespace's");
	t_check(err == -EBUSY, "%d, not -EBUSY", err);
	t_check(memcmp(page + 20, region, 12) == 0, "a refused change changed the code");

	atomic_store(&go_on, 1);
	pthread_join(th, NULL);
	err = fl_patch_text(&p, 1, &d);
	if (err == 0) {
		t_check(memcmp(page + 20, nops, 12) == 0, "made (0), but the bytes are not new");
		printf("  once the thread has left: made\n");
	} else {
		t_check(d.msg[0] != 0, "once the thread has left: %d without a message", err);
		t_check(memcmp(page + 20, region, 12) == 0, "a refused change changed the code");
		printf("  once the thread has left: refused, %d: %s\n", err, d.msg);
	}
	_exit(0);
}

int main(int argc, char **argv)
{
	char how[64];
	pid_t pid;
	int status;

	(void)argc;
	t_start(argv);
	if (unshare(CLONE_NEWPID) != 0) {
		char why[128];

		snprintf(why, sizeof(why), "unshare(CLONE_NEWPID): %s", strerror(errno));
		t_skip(why);
	}
	fflush(stdout);
	pid = fork();	/* pid 1 of the new namespace, with this one's /proc */
	t_check(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0)
		child();
	t_check(t_wait(pid, T_LIMIT_S, &status), "the child did not end within %d s (killed)",
		T_LIMIT_S);
	t_check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child ended with %s",
		t_status(status, how));
	printf("PASS %s\n", t_name);
	/*
	 * Not exit: LeakSanitizer's thread listing would clone into the new
	 * pid namespace, whose init (the child) is gone.
	 */
	fflush(stdout);
	_exit(0);
}
