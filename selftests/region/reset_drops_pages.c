// SPDX-License-Identifier: MIT
/*
 * fl_region_reset drops every populated page and sets the limit: below
 * the new limit the next touch populates again (the template, not what
 * was written); past it the touch faults.
 */
#include "common.h"

#define PAGES 32

int main(int argc, char **argv)
{
	uint32_t flags = t_start(argc, argv);
	struct fl_region *r;
	volatile uint8_t *base;
	volatile int caught;
	uint8_t tmpl[1 << 16];

	t_init();
	memset(tmpl, 0xa5, sizeof(tmpl));
	r = t_region((size_t)PAGES * t_page, (size_t)PAGES * t_page, tmpl, flags);
	base = fl_region_base(r);
	t_catch_sigbus();

	for (int round = 0; round < 3; round++) {
		for (size_t i = 0; i < PAGES; i++)
			base[i * t_page + 17] = (uint8_t)i;
		for (size_t i = 0; i < PAGES; i++)
			t_check(base[i * t_page + 17] == (uint8_t)i, "round %d page %zu", round, i);

		t_check(fl_region_reset(r, PAGES / 2 * t_page) == 0, "reset");
		t_check(fl_region_committed(r) == PAGES / 2 * t_page, "committed %zu",
			fl_region_committed(r));
		for (size_t i = 0; i < PAGES / 2; i++)
			t_check(base[i * t_page + 17] == 0xa5,
				"round %d page %zu kept %#x after reset", round, i,
				base[i * t_page + 17]);
		T_TRY(caught, (void)base[(PAGES / 2 + 1) * t_page]);
		t_check(caught, "round %d: a page past the new limit did not fault", round);

		t_check(fl_region_reset(r, (size_t)PAGES * t_page + 1) == -EINVAL, "past size");
		t_check(fl_region_reset(r, (size_t)PAGES * t_page) == 0, "reset");
		t_check(base[(PAGES / 2 + 1) * t_page] == 0xa5, "round %d: not the template",
			round);
	}
	fl_region_destroy(r);
	printf("PASS %s (%s)\n", t_name, flags ? "helper" : "sigbus");
	return 0;
}
