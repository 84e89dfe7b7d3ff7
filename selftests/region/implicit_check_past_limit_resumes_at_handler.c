// SPDX-License-Identifier: MIT
/*
 * Dispatch rule 4 for regions: a fault past the committed limit at a
 * registered faulting PC of the right kind resumes at the handler PC and
 * is counted; below the limit the same code just loads and stores.  A
 * write at a FaultingLoad site is not claimed (rule 3: in helper mode the
 * write bit comes from the userfaultfd message): it reaches the
 * application's SIGBUS action.
 */
#include "common.h"

#define PAGES 64
#define REPEAT 100

int main(int argc, char **argv)
{
	uint32_t flags = t_start(argc, argv);
	struct fl_region *r;
	volatile uint8_t *base;
	volatile uint64_t *below, *past;
	uint64_t claimed, v;
	volatile int caught;

	t_init();
	t_register_code();
	r = t_region((size_t)PAGES * t_page, 8 * t_page, NULL, flags);
	base = fl_region_base(r);
	below = (volatile uint64_t *)(base + 2 * t_page + 64);
	past = (volatile uint64_t *)(base + 20 * t_page + 8);
	t_catch_sigbus();
	claimed = t_stat_claimed();

	t_check(t_load(below) == 0, "load below the limit");
	t_check(t_store(below, 42) == 0, "store below the limit");
	t_check(t_load(below) == 42, "load after store");
	t_check(t_site_faults(t_load_fault) == 0 && t_site_faults(t_store_fault) == 0,
		"below the limit counted as failed checks");

	for (int i = 0; i < REPEAT; i++) {
		v = t_load(past);
		t_check(v == T_LOAD_FAILED, "load past the limit returned %#llx",
			(unsigned long long)v);
	}
	t_check(t_site_faults(t_load_fault) == REPEAT, "load site counted %llu",
		(unsigned long long)t_site_faults(t_load_fault));
	v = t_store(past, 1);
	t_check(v == T_STORE_FAILED, "store past the limit returned %#llx", (unsigned long long)v);
	t_check(t_site_faults(t_store_fault) == 1, "store site not counted");
	t_check(t_stat_claimed() - claimed == REPEAT + 1, "claimed %llu",
		(unsigned long long)(t_stat_claimed() - claimed));

	T_TRY(caught, t_store_as_load(past, 1));
	t_check(caught, "a write at a FaultingLoad site was claimed");
	t_check(t_caught.si_code == BUS_ADRERR && t_caught.si_addr == (void *)past,
		"the application got code %d addr %p", t_caught.si_code, t_caught.si_addr);
	t_check(t_site_faults(t_store_as_load_fault) == 0, "the wrong-kind site was counted");

	/* Committed now: the page is populated, the load succeeds. */
	t_check(fl_region_commit(r, 32 * t_page) == 0, "commit");
	t_check(t_load(past) == 0, "load after commit");
	t_check(t_store(past, 9) == 0 && t_load(past) == 9, "store after commit");
	t_check(t_site_faults(t_load_fault) == REPEAT, "counted after commit");

	fl_region_destroy(r);
	printf("PASS %s (%s)\n", t_name, flags ? "helper" : "sigbus");
	return 0;
}
