// SPDX-License-Identifier: MIT
/*
 * With code patching enabled, faultline's SIGTRAP handler is installed and
 * chained as its SIGSEGV and SIGBUS handlers are: the application's own
 * SIGTRAP handlers work as without faultline.
 *   - A handler installed with sigaction before fl_patch_enable is the
 *     chain's afterwards: it gets the kernel's SIGTRAP of an int3 (si_code
 *     SI_KERNEL, the PC one past the int3) and the process goes on.
 *   - One installed after, through fl_sigaction (what the preload shim's
 *     sigaction calls), replaces it, and fl_sigaction reports the old one;
 *     the kernel's action stays faultline's.
 *   - A SIGTRAP someone sends (raise) reaches it with its si_code.
 *   - With SIG_DFL, an int3 kills the process by SIGTRAP (a child), as
 *     without faultline; with SIG_IGN too (the kernel forces the default
 *     for a trap).
 *   - A patch in between does not disturb any of it.
 */
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "common.h"

static volatile sig_atomic_t hits_a, hits_b, last_code;
static volatile uintptr_t last_pc;

static void handler_a(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	(void)sig;
	hits_a++;
	last_code = si->si_code;
	last_pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
}

static void handler_b(int sig)
{
	(void)sig;
	hits_b++;
}

static int die_by_int3(void (*how)(int), void (*int3)(void))
{
	pid_t pid = fork();
	int status;

	t_check(pid >= 0, "fork");
	if (pid == 0) {
		struct sigaction sa = { .sa_handler = how };
		struct rlimit no_core = { 0, 0 };

		setrlimit(RLIMIT_CORE, &no_core);	/* no core file of this death */

		fl_sigaction(SIGTRAP, &sa, NULL);
		int3();
		_exit(0);
	}
	t_check(waitpid(pid, &status, 0) == pid, "waitpid");
	return status;
}

int main(int argc, char **argv)
{
	/* int3; ret  and  mov $1,%eax; ret */
	static const uint8_t code[] = { 0xcc, 0xc3, 0x90, 0x90, 0xb8, 0x01, 0x00, 0x00, 0x00, 0xc3 };
	static const uint8_t mov2[] = { 0xb8, 0x02, 0x00, 0x00, 0x00 };
	struct sigaction sa = { .sa_sigaction = handler_a, .sa_flags = SA_SIGINFO }, old, cur;
	uint8_t *page;
	void (*int3)(void);
	struct fl_patch p;
	struct fl_diag d = { 0 };
	int status;

	(void)argc;
	t_start(argv);
	page = t_code(code, sizeof(code));
	int3 = (void (*)(void))(void *)page;
	t_check(sigaction(SIGTRAP, &sa, NULL) == 0, "sigaction");
	t_init();
	t_enable();
	t_check(sigaction(SIGTRAP, NULL, &cur) == 0 && cur.sa_sigaction != handler_a,
		"the kernel's SIGTRAP action is not faultline's after fl_patch_enable");

	/* The handler from before is the chain's. */
	int3();
	t_check(hits_a == 1, "the application's handler was not called (%d)", (int)hits_a);
	t_check(last_code == SI_KERNEL, "si_code %d, not SI_KERNEL", (int)last_code);
	t_check(last_pc == (uintptr_t)page + 1, "the PC was %#lx, not one past the int3 at %p",
		(unsigned long)last_pc, (void *)page);

	/* A patch elsewhere in the page changes nothing of that. */
	p = (struct fl_patch){ .addr = page + 4, .old_bytes = code + 4, .new_bytes = mov2, .len = 5 };
	t_check(fl_patch_text(&p, 1, &d) == 0, "fl_patch_text: %s", d.msg);
	t_check(((int (*)(void))(void *)(page + 4))() == 2, "the patched code");
	int3();
	t_check(hits_a == 2, "the application's handler after a patch (%d)", (int)hits_a);

	/* Replaced through fl_sigaction: the old one reported, the new one called. */
	sa = (struct sigaction){ .sa_handler = handler_b };
	t_check(fl_sigaction(SIGTRAP, &sa, &old) == 0, "fl_sigaction");
	t_check((old.sa_flags & SA_SIGINFO) && old.sa_sigaction == handler_a,
		"fl_sigaction reported another old action");
	t_check(sigaction(SIGTRAP, NULL, &cur) == 0 && cur.sa_handler != handler_b &&
		cur.sa_sigaction != handler_a, "fl_sigaction reached the kernel");
	int3();
	t_check(hits_b == 1 && hits_a == 2, "after fl_sigaction: a %d, b %d", (int)hits_a, (int)hits_b);

	/* A sent SIGTRAP reaches it too. */
	raise(SIGTRAP);
	t_check(hits_b == 2, "raise(SIGTRAP) did not reach the handler");

	/* SIG_DFL and SIG_IGN: the int3 kills, by SIGTRAP. */
	status = die_by_int3(SIG_DFL, int3);
	t_check(WIFSIGNALED(status) && WTERMSIG(status) == SIGTRAP,
		"SIG_DFL: status %#x, not killed by SIGTRAP", status);
	status = die_by_int3(SIG_IGN, int3);
	t_check(WIFSIGNALED(status) && WTERMSIG(status) == SIGTRAP,
		"SIG_IGN: status %#x, not killed by SIGTRAP", status);
	printf("PASS %s\n", t_name);
	return 0;
}
