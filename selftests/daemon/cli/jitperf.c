// SPDX-License-Identifier: MIT
/*
 * JIT code that only a perf map names, for faultline stats's perf map
 * reading (selftests/daemon/cli/run.sh): registers one page of code with
 * fl_jit_register, as module "jitperf" and without function names, writes
 * /tmp/perf-PID.map naming its function "jitperf_load", fails its check N
 * times, prints "ready PID PC", waits for EOF on stdin, then removes the
 * perf map and exits 0.
 *
 *   jitperf N
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <faultline/dispatch.h>

/*
 * 16 bytes of padding, then the function, at +16:
 *   +0  mov (%rdi),%eax; ret     (the check)
 *   +3  mov $-1,%eax; ret        (its handler)
 */
static const unsigned char code_bytes[] = {
	0x8b, 0x07, 0xc3, 0xb8, 0xff, 0xff, 0xff, 0xff, 0xc3,
};
#define FN_AT 16

static void put(unsigned char **p, uint64_t v, int bytes)
{
	memcpy(*p, &v, (size_t)bytes);
	*p += bytes;
}

/* The perf map, once written: removed at any exit of ours. */
static char path[64];

static _Noreturn void die(const char *what)
{
	perror(what);
	if (path[0])
		unlink(path);
	exit(1);
}

int main(int argc, char **argv)
{
	unsigned char map[64], *p = map, *code;
	struct fl_jit_reg reg = { .sz = sizeof(reg), .name = "jitperf" };
	char line[64];
	int (*load)(int *);
	struct fl_diag d = { 0 };
	FILE *f;
	int id;
	long n;

	if (argc != 2 || (n = atol(argv[1])) < 1) {
		fprintf(stderr, "usage: %s N\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (fl_init(NULL) != 0)
		die("fl_init");
	code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED)
		die("mmap");
	memcpy(code + FN_AT, code_bytes, sizeof(code_bytes));
	/* .llvm_faultmaps v1: one function, one FaultingLoad at +0, handler +3. */
	put(&p, 1, 1); put(&p, 0, 1); put(&p, 0, 2); put(&p, 1, 4);
	put(&p, (uintptr_t)code + FN_AT, 8); put(&p, 1, 4); put(&p, 0, 4);
	put(&p, 1, 4); put(&p, 0, 4); put(&p, 3, 4);
	reg.faultmap = map;
	reg.faultmap_size = (size_t)(p - map);
	reg.code_start = (uintptr_t)code;
	reg.code_size = 4096;
	id = fl_jit_register(&reg, &d);
	if (id <= 0) {
		fprintf(stderr, "fl_jit_register: %s\n", id == -EINVAL ? d.msg : strerror(-id));
		return 1;
	}
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	f = fopen(path, "w");
	if (!f || fprintf(f, "%llx %x jitperf_load\n",
			  (unsigned long long)(uintptr_t)(code + FN_AT),
			  (unsigned)sizeof(code_bytes)) < 0 || fclose(f) != 0)
		die(path);
	load = (int (*)(int *))(void *)(code + FN_AT);
	for (long i = 0; i < n; i++)
		if (load(NULL) != -1)
			die("the check did not return -1");
	printf("ready %d 0x%llx\n", (int)getpid(), (unsigned long long)(uintptr_t)load);
	while (fgets(line, sizeof(line), stdin))
		;
	unlink(path);
	return 0;
}
