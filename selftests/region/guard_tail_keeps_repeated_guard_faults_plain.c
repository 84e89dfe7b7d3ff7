// SPDX-License-Identifier: MIT
/*
 * The guard tail (lib/dispatch/region_fault.c): once guard faults repeat
 * (FL_GUARD_AFTER claimed through the userfaultfd), the pages past the
 * committed limit are PROT_NONE and a guard fault there is a plain access
 * fault, still claimed and counted.  What the application sees does not
 * change:
 *  - an access past the limit at a PC faultline does not know still
 *    reaches its SIGBUS action with BUS_ADRERR and the exact address (the
 *    tail goes back to read-write, and the access faults again through the
 *    userfaultfd), and guard faults after it are claimed;
 *  - memory committed over the tail reads zero and takes stores;
 *  - fl_region_reset leaves no PROT_NONE page;
 *  - in a child made by fork the region is plain memory (region.h): no
 *    tail there either.
 */
#include "common.h"

#define PAGES 64
#define COMMIT 8
#define REPEAT 10

/* The permissions /proc/self/maps gives the mapping holding addr ("rw-p"). */
static void perms_at(const volatile void *addr, char out[5])
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	uintptr_t a = (uintptr_t)addr;

	t_check(f != NULL, "/proc/self/maps: %s", strerror(errno));
	strcpy(out, "none");
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char p[5];

		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, p) == 3 && a >= lo && a < hi) {
			memcpy(out, p, 5);
			break;
		}
	}
	fclose(f);
}

static void expect_perms(const volatile void *addr, const char *want, const char *when)
{
	char got[5];

	perms_at(addr, got);
	t_check(strcmp(got, want) == 0, "%s: the page past the limit is %s, not %s", when, got,
		want);
}

static volatile uint64_t *child_past;

static void child_reads_plain_memory(void *arg)
{
	(void)arg;
	_exit(t_load(child_past) == 0 ? 0 : 3);
}

static void fail_checks(volatile uint64_t *past, int n)
{
	for (int i = 0; i < n; i++) {
		uint64_t v = t_load(past);

		t_check(v == T_LOAD_FAILED, "load past the limit returned %#llx",
			(unsigned long long)v);
	}
}

int main(int argc, char **argv)
{
	uint32_t flags = t_start(argc, argv);
	struct fl_region *r;
	volatile uint8_t *base;
	volatile uint64_t *past, *later;
	uint64_t claimed;
	volatile int caught;

	t_init();
	t_register_code();
	r = t_region((size_t)PAGES * t_page, COMMIT * t_page, NULL, flags);
	base = fl_region_base(r);
	past = (volatile uint64_t *)(base + 20 * t_page + 8);
	later = (volatile uint64_t *)(base + 40 * t_page + 16);
	t_catch_sigbus();
	claimed = t_stat_claimed();

	expect_perms(past, "rw-p", "before any guard fault");
	fail_checks(past, REPEAT);
	expect_perms(past, "---p", "after repeated guard faults");
	expect_perms(base + (COMMIT - 1) * t_page, "rw-p", "the last committed page");
	child_past = past;
	t_check(t_child(child_reads_plain_memory, NULL) == 0,
		"a child made by fork did not read plain memory past the limit");
	fail_checks(later, REPEAT);
	t_check(t_stat_claimed() - claimed == 2 * REPEAT, "claimed %llu, not %d",
		(unsigned long long)(t_stat_claimed() - claimed), 2 * REPEAT);
	t_check(t_site_faults(t_load_fault) == 2 * REPEAT, "the site counted %llu",
		(unsigned long long)t_site_faults(t_load_fault));

	/* Not faultline's PC: the application's SIGBUS, as without the tail. */
	T_TRY(caught, (void)*past);
	t_check(caught, "an access past the limit at an unknown PC did not reach the application");
	t_check(t_caught.si_signo == SIGBUS && t_caught.si_code == BUS_ADRERR &&
		t_caught.si_addr == (void *)past, "the application got signal %d code %d addr %p",
		t_caught.si_signo, t_caught.si_code, t_caught.si_addr);
	expect_perms(past, "rw-p", "after an unclaimed fault in the tail");
	fail_checks(past, REPEAT);
	expect_perms(past, "---p", "guard faults again");

	/* Committed over the tail: zero, then what is stored. */
	t_check(fl_region_commit(r, 32 * t_page) == 0, "commit");
	t_check(t_load(past) == 0, "load after commit over the tail");
	t_check(t_store(past, 7) == 0 && t_load(past) == 7, "store after commit over the tail");
	fail_checks(later, REPEAT);

	t_check(fl_region_reset(r, COMMIT * t_page) == 0, "fl_region_reset");
	expect_perms(past, "rw-p", "after fl_region_reset");
	expect_perms(later, "rw-p", "after fl_region_reset");
	fail_checks(past, 1);
	t_check(t_site_faults(t_load_fault) == 4 * REPEAT + 1, "the site counted %llu",
		(unsigned long long)t_site_faults(t_load_fault));

	fl_region_destroy(r);
	printf("PASS %s (%s)\n", t_name, flags ? "helper" : "sigbus");
	return 0;
}
