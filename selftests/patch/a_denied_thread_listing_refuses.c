// SPDX-License-Identifier: MIT
/*
 * The handshake lists the process's threads (/proc/self/task, with
 * getdents64).  When the listing fails, the patcher does not know where
 * the threads are: a change that moves instruction boundaries must be
 * refused (nonzero, with a message that says why), the bytes unchanged,
 * not made as if there were no other thread.  In a child, after
 * fl_patch_enable and with a thread calling the code, a seccomp filter
 * (plain BPF: PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP) makes getdents64 of the
 * patching thread fail with EPERM.
 */
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "common.h"

#define T_LIMIT_S 600

static struct t_site move;
static _Atomic int stop, running;
static _Atomic uint64_t calls, wrong;

static void *caller(void *arg)
{
	(void)arg;
	atomic_store(&running, 1);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		int v = move.fn();

		atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
		if (v != 1 && v != 2)
			atomic_fetch_add(&wrong, 1);
	}
	return NULL;
}

static void deny_getdents64(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_getdents64, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };
	char buf[1024];
	int fd;

	t_check(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0, "PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
	t_check(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0, "seccomp: %s", strerror(errno));
	fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	t_check(fd >= 0, "/proc/self/task: %s", strerror(errno));
	t_check(syscall(SYS_getdents64, fd, buf, sizeof(buf)) == -1 && errno == EPERM,
		"the filter does not work");
	close(fd);
}

static bool says_why(const char *msg)
{
	return strstr(msg, "getdents") || strstr(msg, "/proc/self/task") || strstr(msg, "thread") ||
	       strstr(msg, strerror(EPERM));
}

static void child(void) __attribute__((noreturn));
static void child(void)
{
	struct fl_diag d;
	pthread_t th;
	int err;

	t_in_child = 1;
	t_init();
	t_enable();
	move = t_move_site();
	t_check(pthread_create(&th, NULL, caller, NULL) == 0, "pthread_create");
	while (!atomic_load(&running))
		sched_yield();
	deny_getdents64();

	err = t_flip(&move, &d);
	printf("  getdents64 denied, a change moving boundaries: %d: %s\n", err,
	       err ? d.msg : "(made)");
	t_check(err != 0, "made (0) without a list of the threads");
	t_check(says_why(d.msg), "refused (%d), but the message does not say why: '%s'", err, d.msg);
	t_check(t_site_is_whole(&move), "a refused change changed the code");
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	t_check(wrong == 0, "%llu calls returned a mix of versions", (unsigned long long)wrong);
	_exit(0);
}

int main(int argc, char **argv)
{
	char how[64];
	pid_t pid;
	int status;

	(void)argc;
	t_start(argv);
	fflush(stdout);
	pid = fork();
	t_check(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0)
		child();
	t_check(t_wait(pid, T_LIMIT_S, &status), "the child did not end within %d s (killed)",
		T_LIMIT_S);
	t_check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child ended with %s",
		t_status(status, how));
	printf("PASS %s\n", t_name);
	return 0;
}
