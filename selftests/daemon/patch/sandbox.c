// SPDX-License-Identifier: MIT
/*
 * The ptrace-free proof's launcher (run.sh, "without ptrace"):
 *
 *   patch-sandbox PROGRAM [ARG...]        runs PROGRAM in the sandbox
 *   patch-sandbox --try ptrace|vm|mem     what the sandbox forbids, tried
 *
 * The sandbox, inherited by every process PROGRAM starts and impossible to
 * leave (no_new_privs; seccomp filters and Landlock domains only stack):
 *
 *  - seccomp kills the process (SECCOMP_RET_KILL_PROCESS, SIGSYS) at any
 *    ptrace or process_vm_writev, and at any system call that is not
 *    x86-64's own (the i386 entry, x32 numbers), which could reach them
 *    under another number;
 *
 *  - Landlock (Linux 5.13, ABI 1) refuses to open any file under /proc for
 *    writing: the ruleset handles LANDLOCK_ACCESS_FS_WRITE_FILE and allows
 *    it beneath every entry of / but proc.  So /proc/PID/mem (and
 *    /proc/self/mem) cannot be opened for writing, by open(), openat2() or
 *    an io_uring OPENAT alike: Landlock checks at the LSM hook, whoever
 *    asks.  seccomp could not do this part: it sees the path argument as a
 *    pointer, not a path, and io_uring opens do not pass through it.  That
 *    holds only if no procfs is mounted outside /proc: the launcher checks
 *    /proc/self/mountinfo and refuses to run (exit 77) otherwise; inside,
 *    Landlock forbids mounting one.
 *
 * What it proves, with faultlined, the target and faultline all in it: no
 * process of the test wrote another's memory through ptrace,
 * process_vm_writev or /proc/PID/mem (the ways one process writes
 * another's code on Linux), yet the patch was made.  --try shows that each
 * of the three is really stopped (the test checks it, so that a sandbox
 * that silently stopped nothing fails).
 */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define SKIP 77

static int landlock_ruleset(void)
{
	struct landlock_ruleset_attr attr = { .handled_access_fs = LANDLOCK_ACCESS_FS_WRITE_FILE };
	int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr), 0);
	DIR *root;
	struct dirent *e;

	if (rs < 0)
		return -errno;
	root = opendir("/");
	if (!root)
		return -errno;
	while ((e = readdir(root))) {
		struct landlock_path_beneath_attr rule = {
			.allowed_access = LANDLOCK_ACCESS_FS_WRITE_FILE,
		};
		char path[300];

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    !strcmp(e->d_name, "proc"))
			continue;
		snprintf(path, sizeof(path), "/%s", e->d_name);
		rule.parent_fd = open(path, O_PATH | O_CLOEXEC);
		if (rule.parent_fd < 0)
			continue;
		/* A file in / (not a directory) takes the right as a file. */
		if (syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) != 0) {
			int err = -errno;

			close(rule.parent_fd);
			closedir(root);
			return err;
		}
		close(rule.parent_fd);
	}
	closedir(root);
	return rs;
}

/* Every procfs is mounted at /proc or beneath it; /proc is one. */
static int procfs_only_at_proc(void)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[4096];
	int at_proc = 0, elsewhere = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char mnt[2048], type[64];
		const char *sep = strstr(line, " - ");

		if (!sep || sscanf(line, "%*s %*s %*s %*s %2047s", mnt) != 1 ||
		    sscanf(sep + 3, "%63s", type) != 1 || strcmp(type, "proc"))
			continue;
		if (!strcmp(mnt, "/proc"))
			at_proc = 1;
		else if (strncmp(mnt, "/proc/", 6))
			elsewhere = 1;
	}
	fclose(f);
	return at_proc && !elsewhere;
}

static int seccomp_filter(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		/* x32 numbers (__X32_SYSCALL_BIT) and above. */
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ptrace, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_writev, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) ? -errno : 0;
}

static int try(const char *what)
{
	char byte = 0;

	if (!strcmp(what, "ptrace")) {
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
	} else if (!strcmp(what, "vm")) {
		struct iovec l = { &byte, 1 }, r = { &byte, 1 };

		process_vm_writev(getpid(), &l, 1, &r, 1, 0);
	} else if (!strcmp(what, "mem")) {
		int fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);

		if (fd >= 0) {
			printf("opened /proc/self/mem for writing\n");
			return 1;
		}
		printf("open /proc/self/mem for writing: %s\n", strerror(errno));
		return errno == EACCES ? 0 : 1;
	}
	printf("%s: not stopped\n", what);
	return 1;
}

int main(int argc, char **argv)
{
	int rs, err;

	if (argc < 2) {
		fprintf(stderr, "usage: patch-sandbox PROGRAM [ARG...] | --try ptrace|vm|mem\n");
		return 2;
	}
	if (!procfs_only_at_proc()) {
		printf("skip: a procfs is mounted outside /proc (or none at /proc)\n");
		return SKIP;
	}
	rs = landlock_ruleset();
	if (rs < 0) {
		printf("skip: Landlock: %s\n", strerror(-rs));
		return SKIP;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
		perror("patch-sandbox: no_new_privs");
		return 1;
	}
	if (syscall(SYS_landlock_restrict_self, rs, 0) != 0) {
		perror("patch-sandbox: landlock_restrict_self");
		return 1;
	}
	close(rs);
	err = seccomp_filter();
	if (err) {
		fprintf(stderr, "patch-sandbox: seccomp: %s\n", strerror(-err));
		return 1;
	}
	if (!strcmp(argv[1], "--try") && argc == 3)
		return try(argv[2]);
	execvp(argv[1], argv + 1);
	fprintf(stderr, "patch-sandbox: %s: %s\n", argv[1], strerror(errno));
	return 127;
}
