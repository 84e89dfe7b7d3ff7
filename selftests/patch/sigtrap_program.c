// SPDX-License-Identifier: MIT
/*
 * An unmodified program with its own SIGTRAP handling (it links nothing of
 * faultline): run.sh runs it without and with libfaultline-preload.so and
 * compares what it prints and how it ends.  It installs a handler with
 * sigaction and one with signal(), takes int3 traps and a raised SIGTRAP,
 * reads its action back, and at the end dies of an int3 with SIG_DFL.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <ucontext.h>

static volatile sig_atomic_t hits, last_code;

static void on_trap(int sig, siginfo_t *si, void *ucv)
{
	(void)sig;
	(void)ucv;
	hits++;
	last_code = si->si_code;
}

static void on_trap_plain(int sig)
{
	(void)sig;
	hits += 100;
}

static void int3(void)
{
	__asm__ volatile("int3");
}

int main(void)
{
	struct sigaction sa, cur;
	struct rlimit no_core = { 0, 0 };

	setvbuf(stdout, NULL, _IONBF, 0);
	setrlimit(RLIMIT_CORE, &no_core);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_trap;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGTRAP, &sa, NULL);
	int3();
	printf("int3 with a SA_SIGINFO handler: hits %d, si_code %s\n", (int)hits,
	       last_code == SI_KERNEL ? "SI_KERNEL" : "other");
	raise(SIGTRAP);
	printf("raise: hits %d, si_code %s\n", (int)hits,
	       last_code == SI_TKILL ? "SI_TKILL" : "other");
	sigaction(SIGTRAP, NULL, &cur);
	printf("sigaction reads back our handler: %s\n",
	       (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_trap ? "yes" : "no");
	signal(SIGTRAP, on_trap_plain);
	int3();
	printf("int3 with a signal() handler: hits %d\n", (int)hits);
	signal(SIGTRAP, SIG_DFL);
	printf("SIG_DFL, then int3:\n");
	int3();
	printf("still alive: wrong\n");
	return 0;
}
