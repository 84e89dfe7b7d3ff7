// SPDX-License-Identifier: MIT
/*
 * jit_null N GO_FILE: "compiles" a function into anonymous executable
 * memory (nop; movq (%rdi), %rax; ret), publishes it in /tmp/perf-PID.map
 * as a JIT would, then, once GO_FILE exists, calls it N times with NULL; a
 * SIGSEGV handler skips the faulting load.  Prints
 *   ip 0x7f... name fl_jit_null_load+0x1
 * and exits 0 when every fault was skipped.  The perf map is left behind
 * for faultline profile to read; the caller removes it.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

static const unsigned char code[] = {
	0x90,			/* nop */
	0x48, 0x8b, 0x07,	/* movq (%rdi), %rax: faults */
	0xc3,			/* ret */
};
#define LOAD_OFFSET 1
#define LOAD_LEN 3

static unsigned char *text;
static volatile sig_atomic_t skipped;

static void on_segv(int sig, siginfo_t *si, void *uc_v)
{
	ucontext_t *uc = uc_v;

	(void)si;
	if (uc->uc_mcontext.gregs[REG_RIP] != (greg_t)(text + LOAD_OFFSET)) {
		signal(sig, SIG_DFL);
		return;
	}
	uc->uc_mcontext.gregs[REG_RIP] += LOAD_LEN;
	skipped++;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { 0 };
	long (*fn)(const long *);
	char path[64];
	FILE *map;
	long n;

	if (argc != 3 || (n = atol(argv[1])) <= 0) {
		fprintf(stderr, "usage: jit_null N GO_FILE\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	text = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (text == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	memcpy(text, code, sizeof(code));
	if (mprotect(text, 4096, PROT_READ | PROT_EXEC)) {
		perror("mprotect");
		return 1;
	}
	fn = (long (*)(const long *))(void *)text;

	/*
	 * perf's format: START SIZE name, hexadecimal without 0x.  A file an
	 * earlier run left for this pid (maybe a symlink, or another user's)
	 * goes first: "wx" creates the map anew or fails.
	 */
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
	unlink(path);
	map = fopen(path, "wx");
	if (!map || fprintf(map, "%lx %zx fl_jit_null_load\n", (unsigned long)text,
			    sizeof(code)) < 0 || fclose(map)) {
		perror(path);
		return 1;
	}
	printf("ip %p name fl_jit_null_load+0x%x\n", (void *)(text + LOAD_OFFSET), LOAD_OFFSET);

	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	while (access(argv[2], F_OK))
		usleep(5000);
	for (long i = 0; i < n; i++)
		fn(NULL);
	printf("skipped %ld\n", (long)skipped);
	return skipped == n ? 0 : 1;
}
