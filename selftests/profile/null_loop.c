// SPDX-License-Identifier: MIT
/*
 * null_loop N GO_FILE: takes N NULL faults at one labelled load, skipped by
 * a SIGSEGV handler, once GO_FILE exists (so that faultline profile is
 * counting by then), and exits.  Prints where the load is, as profile
 * should name it:
 *   ip 0x55d0c0de1139 function null_load+0x4
 * Exits 0 when every fault was skipped, 1 otherwise.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>
#include <unistd.h>

extern const char fl_profile_null_insn[], fl_profile_null_end[];

/* noclone: a copy would define the labels twice. */
__attribute__((noinline, noclone)) static long null_load(const long *p)
{
	long v;

	__asm__ volatile("nop\n"
			 ".globl fl_profile_null_insn\n\t.hidden fl_profile_null_insn\n"
			 "fl_profile_null_insn:\n\tmovq (%1), %0\n"
			 ".globl fl_profile_null_end\n\t.hidden fl_profile_null_end\n"
			 "fl_profile_null_end:"
			 : "=r"(v) : "r"(p) : "memory");
	return v;
}

static const long *volatile null_ptr;
static volatile sig_atomic_t skipped;

/* Skips the labelled load; any other SIGSEGV is a real crash. */
static void on_segv(int sig, siginfo_t *si, void *uc_v)
{
	ucontext_t *uc = uc_v;

	(void)si;
	if (uc->uc_mcontext.gregs[REG_RIP] != (greg_t)fl_profile_null_insn) {
		signal(sig, SIG_DFL);
		return;
	}
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)fl_profile_null_end;
	skipped++;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { 0 };
	long n;

	if (argc != 3 || (n = atol(argv[1])) <= 0) {
		fprintf(stderr, "usage: null_loop N GO_FILE\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ip %p function null_load+0x%lx\n", (void *)fl_profile_null_insn,
	       (unsigned long)(fl_profile_null_insn - (const char *)null_load));
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	while (access(argv[2], F_OK))
		usleep(5000);
	for (long i = 0; i < n; i++)
		null_load(null_ptr);
	printf("skipped %ld\n", (long)skipped);
	return skipped == n ? 0 : 1;
}
