// SPDX-License-Identifier: MIT
/*
 * A kernel without membarrier's SYNC_CORE command (before 4.16, or a
 * seccomp policy that filters membarrier out, as here: ENOSYS): code
 * patching is refused with a clear error, and nothing else changes:
 * fl_init works, faultline does not take SIGTRAP, and the application's
 * sigaction for it reaches the kernel.
 */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "common.h"

static void filter_membarrier(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_membarrier, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	t_check(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0, "PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
	t_check(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0, "seccomp: %s", strerror(errno));
	t_check(syscall(__NR_membarrier, 0, 0, 0) == -1 && errno == ENOSYS, "the filter does not work");
}

static void handler(int sig)
{
	(void)sig;
}

int main(int argc, char **argv)
{
	static const uint8_t code[] = { 0xb8, 0x01, 0x00, 0x00, 0x00, 0xc3 };
	static const uint8_t mov2[] = { 0xb8, 0x02, 0x00, 0x00, 0x00 };
	struct sigaction sa = { .sa_handler = handler }, cur;
	struct fl_diag d = { 0 };
	struct fl_patch p;
	uint8_t *page;
	int err;

	(void)argc;
	t_start(argv);
	filter_membarrier();
	page = t_code(code, sizeof(code));
	t_init();
	err = fl_patch_enable(&d);
	printf("  fl_patch_enable: %d: %s\n", err, d.msg);
	t_check(err == -ENOSYS, "fl_patch_enable: %d, not -ENOSYS", err);
	t_check(strstr(d.msg, "membarrier") != NULL, "the message does not name membarrier: %s", d.msg);
	p = (struct fl_patch){ .addr = page, .old_bytes = code, .new_bytes = mov2, .len = 5 };
	t_check(fl_patch_text(&p, 1, &d) == -ENOTSUP, "fl_patch_text without patching enabled");
	t_check(memcmp(page, code, sizeof(code)) == 0, "the code changed");

	/* SIGTRAP stays the application's: fl_sigaction goes to the kernel. */
	t_check(sigaction(SIGTRAP, NULL, &cur) == 0 && cur.sa_handler == SIG_DFL,
		"faultline took SIGTRAP");
	t_check(fl_sigaction(SIGTRAP, &sa, NULL) == 0, "fl_sigaction");
	t_check(sigaction(SIGTRAP, NULL, &cur) == 0 && cur.sa_handler == handler,
		"fl_sigaction(SIGTRAP) did not reach the kernel");
	printf("PASS %s\n", t_name);
	return 0;
}
