// SPDX-License-Identifier: MIT
/*
 * The program of the exact-counts tests (selftests/daemon/counts/run.sh):
 * calls fl_init (it registers with the daemon at $FAULTLINE_SOCKET), prints
 * "pid PID", then runs its steps in order and prints what it did.  Linked
 * with libfaultline and sites.ll's checks.
 *
 *   counts-prog [defer] STEP...
 *     defer        (first) fl_init with FL_INIT_DEFER_DISCOVERY: the
 *                  modules are registered by the fl-agent thread while
 *                  the steps run, as the preload shim does
 *     load:N       fails e2e_load's check N times
 *     store:N      fails e2e_store's check N times
 *     jit:N        registers a JIT module "counts-jit" (a load site and a
 *                  store site), fails its load N times, unregisters it
 *     jitlive:N    the same, and leaves the module registered
 *     many:N       registers a JIT module "counts-many" of N load sites
 *                  (N >= 32), left registered, and fails a handful of them
 *                  a different number of times each; prints "many N" and
 *                  "many-site PC FAULTS" for each it failed
 *     smjit        registers JIT code with a stack map alone (record 77,
 *                  "counts-smjit"), left registered; prints "smjit PC"
 *     wait         prints "wait", then reads a line from stdin (EOF too)
 *     sleep:MS     sleeps MS milliseconds
 *     soak:SEED:MS for MS milliseconds, random steps of the above (from
 *                  SEED), with sleeps of up to 40 ms between them
 *     _exit        ends at once with _exit(0) after "done" (no exit hooks)
 *
 * At the end: "done PID LOADS STORES JIT" (the checks it failed: e2e_load,
 * e2e_store, and the JIT modules' load), then exit(0).  Every fault is
 * counted by the program itself, so the daemon's counts can be compared
 * with these exactly.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <faultline/dispatch.h>

#include "../../deopt/handmade.h"

int e2e_load(int *p);
int e2e_store(int *p, int x);

static uint64_t loads, stores, jits;
static volatile int sink;

/*
 * JIT code, one page:
 *   +0   load:  mov (%rdi),%eax; ret        handler +3:  mov $-1,%eax; ret
 *   +16  store: movl $1,(%rdi); xor %eax,%eax; ret
 *                                            handler +25: mov $-2,%eax; ret
 */
static const unsigned char code_bytes[] = {
	0x8b, 0x07, 0xc3, 0xb8, 0xff, 0xff, 0xff, 0xff, 0xc3,
	0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90,
	0xc7, 0x07, 0x01, 0x00, 0x00, 0x00, 0x31, 0xc0, 0xc3,
	0xb8, 0xfe, 0xff, 0xff, 0xff, 0xc3,
};

static void die(const char *what)
{
	printf("FAIL %s\n", what);
	exit(1);
}

static void put(unsigned char **p, uint64_t v, int bytes)
{
	memcpy(*p, &v, (size_t)bytes);
	*p += bytes;
}

static void fail_loads(long n)
{
	int word = 1;

	for (long i = 0; i < n; i++) {
		if (e2e_load(NULL) != -1)
			die("e2e_load(NULL) did not return -1");
		sink += e2e_load(&word);
		loads++;
	}
}

static void fail_stores(long n)
{
	int word = 1;

	for (long i = 0; i < n; i++) {
		if (e2e_store(NULL, (int)i) != -1 || e2e_store(&word, (int)i) != 0)
			die("e2e_store did not return -1 then 0");
		stores++;
	}
}

/* A JIT module: registered, its load failed n times, unregistered unless keep. */
static void jit(long n, int keep)
{
	unsigned char map[64], *p = map;
	unsigned char *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int (*load)(int *);
	struct fl_jit_reg reg = { .sz = sizeof(reg), .name = "counts-jit" };
	struct fl_diag d;
	int id, word = 1;

	if (code == MAP_FAILED)
		die("mmap");
	memcpy(code, code_bytes, sizeof(code_bytes));
	/* .llvm_faultmaps v1: two functions, one check each. */
	put(&p, 1, 1); put(&p, 0, 1); put(&p, 0, 2); put(&p, 2, 4);
	put(&p, (uintptr_t)code, 8); put(&p, 1, 4); put(&p, 0, 4);
	put(&p, 1, 4); put(&p, 0, 4); put(&p, 3, 4);
	put(&p, (uintptr_t)code + 16, 8); put(&p, 1, 4); put(&p, 0, 4);
	put(&p, 3, 4); put(&p, 0, 4); put(&p, 9, 4);
	reg.faultmap = map;
	reg.faultmap_size = (size_t)(p - map);
	reg.code_start = (uintptr_t)code;
	reg.code_size = 4096;
	id = fl_jit_register(&reg, &d);
	if (id <= 0)
		die("fl_jit_register");
	load = (int (*)(int *))(void *)code;
	for (long i = 0; i < n; i++) {
		if (load(NULL) != -1)
			die("the JIT load did not return -1");
		sink += load(&word);
		jits++;
	}
	if (keep)
		return;
	if (fl_jit_unregister(id) != 0)
		die("fl_jit_unregister");
	munmap(code, 4096);
}

/*
 * N sites of one function, 4 bytes apart (mov (%rdi),%eax; ret; nop), all
 * with one handler after them (mov $-1,%eax; ret).
 */
static void many(long n)
{
	static const unsigned char site[4] = { 0x8b, 0x07, 0xc3, 0x90 };
	static const unsigned char handler[6] = { 0xb8, 0xff, 0xff, 0xff, 0xff, 0xc3 };
	/* Spread over the module (its first, its last), each failed its own number of times. */
	const long fail_at[5] = { 0, 1, n / 3, n / 2 + 7, n - 1 };
	size_t code_size = (size_t)n * 4 + sizeof(handler);
	size_t map_size = 8 + 16 + 12 * (size_t)n;
	unsigned char *code = mmap(NULL, code_size, PROT_READ | PROT_WRITE | PROT_EXEC,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char *map = malloc(map_size), *p = map;
	struct fl_jit_reg reg = { .sz = sizeof(reg), .name = "counts-many" };
	struct fl_diag d;

	if (n < 32 || n > 1000000 || code == MAP_FAILED || !map)
		die("many: N out of range, or out of memory");
	for (long i = 0; i < n; i++)
		memcpy(code + 4 * i, site, sizeof(site));
	memcpy(code + 4 * n, handler, sizeof(handler));
	/* .llvm_faultmaps v1: one function, n checks (FaultingLoad). */
	put(&p, 1, 1); put(&p, 0, 1); put(&p, 0, 2); put(&p, 1, 4);
	put(&p, (uintptr_t)code, 8); put(&p, (uint64_t)n, 4); put(&p, 0, 4);
	for (long i = 0; i < n; i++) {
		put(&p, 1, 4); put(&p, (uint64_t)(4 * i), 4); put(&p, (uint64_t)(4 * n), 4);
	}
	reg.faultmap = map;
	reg.faultmap_size = (size_t)(p - map);
	reg.code_start = (uintptr_t)code;
	reg.code_size = code_size;
	if (fl_jit_register(&reg, &d) <= 0)
		die("fl_jit_register (many sites)");
	free(map);
	printf("many %ld\n", n);
	for (int k = 0; k < 5; k++) {
		int (*load)(int *) = (int (*)(int *))(void *)(code + 4 * fail_at[k]);

		for (int i = 0; i <= k; i++) {
			if (load(NULL) != -1)
				die("a many-site load did not return -1");
			jits++;
		}
		printf("many-site 0x%llx %d\n", (unsigned long long)(uintptr_t)load, k + 1);
	}
}

/*
 * A JIT module with a stack map and no fault map (deoptimization-only
 * code), left registered: one record, ID 77, 4 bytes into the code
 * (selftests/deopt/handmade.h).  Prints "smjit PC".
 */
static void smjit(void)
{
	uint8_t map[64];
	unsigned char *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct fl_jit_reg reg = { .sz = sizeof(reg), .name = "counts-smjit" };
	struct fl_diag d;

	if (code == MAP_FAILED)
		die("mmap");
	memcpy(code, code_bytes, sizeof(code_bytes));
	map_one_record(map, (uintptr_t)code);
	map[40] = 77;		/* the record's ID */
	reg.stackmap = map;
	reg.stackmap_size = sizeof(map);
	reg.code_start = (uintptr_t)code;
	reg.code_size = 4096;
	if (fl_jit_register(&reg, &d) <= 0)
		die("fl_jit_register (stack map only)");
	printf("smjit 0x%llx\n", (unsigned long long)(uintptr_t)code + 4);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Random steps for ms milliseconds; at most one JIT module left registered. */
static void soak(unsigned seed, long ms)
{
	double end = now() + (double)ms / 1000;
	int live = 0;

	srand(seed);
	while (now() < end) {
		int r = rand() % 100;

		if (r < 55)
			fail_loads(1 + rand() % 3000);
		else if (r < 70)
			fail_stores(1 + rand() % 1000);
		else if (r < 85)
			jit(rand() % 50, 0);
		else if (r < 88 && !live++)
			jit(1 + rand() % 50, 1);
		sleep_ms(rand() % 40);
	}
}

int main(int argc, char **argv)
{
	char line[64];
	int quick = 0, err;

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* "defer" first: the modules are registered by the fl-agent thread, as in the shim. */
	if (argc > 1 && !strcmp(argv[1], "defer")) {
		struct fl_init_opts o = { .sz = sizeof(o), .flags = FL_INIT_DEFER_DISCOVERY };

		argv++;
		argc--;
		err = fl_init(&o);
	} else {
		err = fl_init(NULL);
	}
	if (err) {
		printf("FAIL fl_init: %s\n", strerror(-err));
		return 1;
	}
	printf("pid %d\n", (int)getpid());
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		unsigned seed;
		long n;

		if (sscanf(a, "load:%ld", &n) == 1)
			fail_loads(n);
		else if (sscanf(a, "store:%ld", &n) == 1)
			fail_stores(n);
		else if (sscanf(a, "jit:%ld", &n) == 1)
			jit(n, 0);
		else if (sscanf(a, "jitlive:%ld", &n) == 1)
			jit(n, 1);
		else if (!strcmp(a, "smjit"))
			smjit();
		else if (sscanf(a, "many:%ld", &n) == 1)
			many(n);
		else if (sscanf(a, "sleep:%ld", &n) == 1)
			sleep_ms(n);
		else if (sscanf(a, "soak:%u:%ld", &seed, &n) == 2)
			soak(seed, n);
		else if (!strcmp(a, "wait")) {
			printf("wait\n");
			if (!fgets(line, sizeof(line), stdin))
				line[0] = 0;
		} else if (!strcmp(a, "_exit"))
			quick = 1;
		else
			die("unknown step");
	}
	printf("done %d %llu %llu %llu\n", (int)getpid(), (unsigned long long)loads,
	       (unsigned long long)stores, (unsigned long long)jits);
	if (quick)
		_exit(0);
	return 0;
}
