// SPDX-License-Identifier: MIT
/*
 * SIGTRAP belongs to the program, but for faultline's own int3s while they
 * are there.  After a patch has been made (so faultline has taken traps
 * before), the program runs three traps of its own:
 *   - int $3 (cd 03);
 *   - int3 (cc);
 *   - an int3 it writes itself (a breakpoint) at the address faultline
 *     patched, after the patch;
 *   - int $3 right before another address faultline patched (its PC
 *     after the trap is that address: it is the program's all the same).
 * Its own SA_SIGINFO handler (installed with sigaction before
 * fl_patch_enable, so the chain's) runs exactly once for each, with
 * si_code SI_KERNEL and the PC just after the trap instruction, and the
 * program goes on after it (the function returns what its code after the
 * trap says).  And with no handler (SIG_DFL), each ends the
 * process by SIGTRAP, as without faultline.  Each case runs in a child
 * (today int $3 ends in SIGSEGV, and the breakpoint in an endless trap
 * loop, which is killed after T_LIMIT_S).
 */
#include <sys/resource.h>

#include "common.h"

#define T_LIMIT_S 60

static volatile sig_atomic_t hits, code;
static volatile uintptr_t pc;

static void handler(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	(void)sig;
	hits++;
	code = si->si_code;
	pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
}

struct trap {
	const char *what;
	uint8_t *fn;		/* a function that traps */
	uintptr_t after;	/* the PC just after the trap instruction */
	int returns;		/* what fn returns after the trap, or -1: not known */
};

/* Runs t in a child, with the program's handler or none; returns its status. */
static int in_child(const struct trap *t, bool with_handler)
{
	pid_t pid;
	int status, r;

	fflush(stdout);
	pid = fork();
	t_check(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		t_in_child = 1;
		if (!with_handler) {
			struct sigaction dfl = { .sa_handler = SIG_DFL };
			struct rlimit no_core = { 0, 0 };

			setrlimit(RLIMIT_CORE, &no_core);	/* no core file of this death */
			t_check(fl_sigaction(SIGTRAP, &dfl, NULL) == 0, "fl_sigaction");
		}
		r = ((int (*)(void))(void *)t->fn)();
		t_check(with_handler, "SIG_DFL: the trap did not end the process (the function "
			"returned %d)", r);
		t_check(hits == 1, "the program's handler ran %d times, not once", (int)hits);
		t_check(code == SI_KERNEL, "si_code %d, not SI_KERNEL (%d)", (int)code, SI_KERNEL);
		t_check(pc == t->after, "the PC was %#lx, not %#lx (just after the trap)",
			(unsigned long)pc, (unsigned long)t->after);
		t_check(t->returns < 0 || r == t->returns, "the function returned %d, not %d: it "
			"did not go on after the trap", r, t->returns);
		_exit(0);
	}
	if (!t_wait(pid, T_LIMIT_S, &status))
		return -1;
	return status;
}

int main(int argc, char **argv)
{
	/*
	 *  +0: int $3; mov $7,%eax; ret      +16: int3; mov $7,%eax; ret
	 * +32: mov $1,%eax; ret   (patched to mov $2,%eax, then the program's
	 *                          breakpoint: int3; nop x 4)
	 * +40: int $3; mov $1,%eax; ret   (the mov at +42 patched to mov $2)
	 * The code after each trap is the program's: after the trap, it goes on
	 * there (and returns 7).
	 */
	static const uint8_t int_3[] = { 0xcd, 0x03, 0xb8, 0x07, 0x00, 0x00, 0x00, 0xc3 };
	static const uint8_t int3[] = { 0xcc, 0xb8, 0x07, 0x00, 0x00, 0x00, 0xc3 };
	uint8_t code_bytes[48];
	static const uint8_t bp[5] = { 0xcc, 0x90, 0x90, 0x90, 0x90 };
	struct sigaction sa = { .sa_sigaction = handler, .sa_flags = SA_SIGINFO };
	size_t pagesz = (size_t)sysconf(_SC_PAGESIZE);
	struct t_site site, after_int_3;
	struct trap traps[4];
	struct fl_diag d;
	uint8_t *page;
	bool bad = false;
	int err;

	(void)argc;
	t_start(argv);
	memset(code_bytes, 0xcc, sizeof(code_bytes));
	memcpy(code_bytes, int_3, sizeof(int_3));
	memcpy(code_bytes + 16, int3, sizeof(int3));
	memcpy(code_bytes + 32, t_one_v[0], 5);
	code_bytes[37] = 0xc3;
	memcpy(code_bytes + 40, int_3, 2);
	memcpy(code_bytes + 42, t_one_v[0], 5);
	code_bytes[47] = 0xc3;
	page = t_code(code_bytes, sizeof(code_bytes));
	t_check(sigaction(SIGTRAP, &sa, NULL) == 0, "sigaction: %s", strerror(errno));
	t_init();
	t_enable();

	/* faultline's patch, within one instruction: its int3 came and went. */
	site = (struct t_site){ .fn = (int (*)(void))(void *)(page + 32), .addr = page + 32,
				.v = { t_one_v[0], t_one_v[1] }, .len = 5 };
	err = t_flip(&site, &d);
	t_check(err == 0, "fl_patch_text: %d %s", err, d.msg);
	t_check(site.fn() == 2, "the patched code");
	t_check(hits == 0, "the program's handler ran during faultline's patch");
	after_int_3 = (struct t_site){ .fn = (int (*)(void))(void *)(page + 40), .addr = page + 42,
				       .v = { t_one_v[0], t_one_v[1] }, .len = 5 };
	err = t_flip(&after_int_3, &d);
	t_check(err == 0, "fl_patch_text: %d %s", err, d.msg);

	/* The program's breakpoint where faultline patched. */
	t_check(mprotect(page, pagesz, PROT_READ | PROT_WRITE) == 0, "mprotect: %s", strerror(errno));
	memcpy(page + 32, bp, sizeof(bp));
	t_check(mprotect(page, pagesz, PROT_READ | PROT_EXEC) == 0, "mprotect: %s", strerror(errno));

	traps[0] = (struct trap){ "int $3 (cd 03)", page, (uintptr_t)page + 2, 7 };
	traps[1] = (struct trap){ "int3 (cc)", page + 16, (uintptr_t)page + 17, 7 };
	traps[2] = (struct trap){ "the program's int3 where faultline patched", page + 32,
				  (uintptr_t)page + 33, -1 };
	traps[3] = (struct trap){ "int $3 right before an address faultline patched", page + 40,
				  (uintptr_t)page + 42, 2 };
	for (int i = 0; i < 4; i++)
		for (int h = 1; h >= 0; h--) {
			int status = in_child(&traps[i], h);
			bool ok = h ? status == 0 : status > 0 && WIFSIGNALED(status) &&
				  WTERMSIG(status) == SIGTRAP;
			char how[64];

			printf("  %s, %s: %s (%s)\n", traps[i].what, h ? "the program's handler" :
			       "no handler", ok ? "as without faultline" : "NOT as without faultline",
			       status < 0 ? "did not end: killed after 60 s" : status == 0 && h ?
			       "the handler ran once, SI_KERNEL, the PC after the trap; went on" :
			       t_status(status, how));
			bad |= !ok;
		}
	t_check(!bad, "the program's own traps did not reach it as without faultline (above)");
	printf("PASS %s\n", t_name);
	return 0;
}
