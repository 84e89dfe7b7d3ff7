// SPDX-License-Identifier: MIT
/*
 * Faults faultline must not claim, in a program with no handler of its
 * own (linked with the implicit build of sites.ll):
 *
 *   unclaimed CASE
 *
 * The runner runs each case with and without the shim and wants the same
 * wait status, core flag included.  Each case prints what it is about to
 * do, then does it; surviving prints "survived" and exits 0.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sites.h"
#include "truncated.h"

static volatile int sink;

/* An address that is surely unmapped: a hole made by unmapping a page. */
static int *wild(void)
{
	void *p = mmap((void *)0xdead0000, 4096, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	if (p != (void *)0xdead0000) {
		fprintf(stderr, "0xdead0000 is in use\n");
		exit(3);
	}
	munmap(p, 4096);
	return p;
}

static int recurse(int n)
{
	volatile char pad[1024];

	pad[0] = (char)n;
	pad[sizeof(pad) - 1] = (char)n;
	return n > 1000000000 ? pad[0] : recurse(n + 1) + pad[sizeof(pad) - 1];
}

static void run(const char *name)
{
	long page = sysconf(_SC_PAGESIZE);

	if (!strcmp(name, "wild_pointer_at_registered_load"))
		sink = site_load_i32(wild());
	else if (!strcmp(name, "wild_pointer_at_registered_store"))
		site_store_i32(wild(), 1);
	else if (!strcmp(name, "wild_pointer_at_registered_rmw"))
		site_rmw_add_i32(wild(), 1);
	else if (!strcmp(name, "address_at_null_bound_is_not_null"))
		sink = site_load_i32((int *)(uintptr_t)page);
	else if (!strcmp(name, "null_bound_env_narrows_null_area"))
		sink = (int)site_load_i64_off(NULL);	/* address 4000 */
	else if (!strcmp(name, "null_store_at_unregistered_pc"))
		*(volatile int *)(uintptr_t)sink = 1;
	else if (!strcmp(name, "null_load_at_unregistered_pc"))
		sink = *(volatile int *)(uintptr_t)(sink + 8);
	else if (!strcmp(name, "kill_segv"))
		kill(getpid(), SIGSEGV);
	else if (!strcmp(name, "raise_segv"))
		raise(SIGSEGV);
	else if (!strcmp(name, "sigqueue_segv"))
		sigqueue(getpid(), SIGSEGV, (union sigval){ .sival_int = 1 });
	else if (!strcmp(name, "kill_bus"))
		kill(getpid(), SIGBUS);
	else if (!strcmp(name, "truncated_mapping_sigbus"))
		sink = *(volatile int *)truncated_mapping("unclaimed");
	else if (!strcmp(name, "truncated_mapping_sigbus_at_registered_pc"))
		sink = site_load_i32((int *)truncated_mapping("unclaimed"));
	else if (!strcmp(name, "stack_overflow"))
		sink = recurse(0);
	else {
		fprintf(stderr, "unknown case %s\n", name);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s CASE\n", argv[0]);
		return 2;
	}
	printf("%s\n", argv[1]);
	fflush(stdout);
	run(argv[1]);
	printf("survived\n");
	return 0;
}
