// SPDX-License-Identifier: MIT
/*
 * Every step of a change is followed by membarrier(SYNC_CORE), which makes
 * every other thread serialize (lib/patch/patch.c).  When it fails after
 * fl_patch_enable (here a seccomp filter, plain BPF, makes it fail with
 * EPERM; no_membarrier_no_patching covers a filter from before), the
 * other threads may run a mix of old and new bytes: changes within one
 * instruction and changes that move boundaries must be refused (nonzero,
 * with a message that names membarrier), the bytes unchanged.
 */
#include <linux/filter.h>
#include <linux/membarrier.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "common.h"

static void deny_membarrier(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_membarrier, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	t_check(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0, "PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
	t_check(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0, "seccomp: %s", strerror(errno));
	t_check(syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) == -1 &&
		errno == EPERM, "the filter does not work");
}

int main(int argc, char **argv)
{
	struct t_site sites[2];
	bool bad = false;

	(void)argc;
	t_start(argv);
	t_init();
	t_enable();
	sites[0] = t_one_site();
	sites[1] = t_move_site();
	deny_membarrier();
	for (int i = 0; i < 2; i++) {
		struct t_site *s = &sites[i];
		struct fl_diag d;
		int err = t_flip(s, &d);
		bool ok = err != 0 && strstr(d.msg, "membarrier") && t_site_is_whole(s);

		printf("  membarrier denied, a change %s: %d: %s%s\n", s->moves ? "moving boundaries" :
		       "within one instruction", err, err ? d.msg : "(made)",
		       err && !t_site_is_whole(s) ? " (and the bytes changed)" : "");
		bad |= !ok;
	}
	t_check(!bad, "changes were made, or refused without naming membarrier or with the bytes "
		"changed, without the serialization (above)");
	printf("PASS %s\n", t_name);
	return 0;
}
