// SPDX-License-Identifier: MIT
/*
 * A region with a template: every page below the limit holds a copy of
 * the template on its first touch (read or write).  The template is
 * copied at fl_region_create: changing the caller's buffer afterwards
 * changes nothing.
 */
#include "common.h"

#define PAGES 128

int main(int argc, char **argv)
{
	uint32_t flags = t_start(argc, argv);
	struct fl_region *r;
	volatile uint8_t *base;
	uint8_t *tmpl, *want;

	t_init();
	tmpl = malloc(t_page);
	want = malloc(t_page);
	t_check(tmpl && want, "malloc");
	for (size_t i = 0; i < t_page; i++)
		tmpl[i] = (uint8_t)(i * 7 + 3);
	memcpy(want, tmpl, t_page);
	r = t_region((size_t)PAGES * t_page, (size_t)PAGES * t_page, tmpl, flags);
	memset(tmpl, 0xee, t_page);
	free(tmpl);
	base = fl_region_base(r);

	for (size_t i = 0; i < PAGES; i += 2) {
		volatile uint8_t *pg = base + i * t_page;

		if (i % 4 == 0) {
			t_check(pg[100] == want[100], "page %zu: read %u, template %u", i,
				pg[100], want[100]);
		} else {
			pg[5] = want[5];	/* a write first, of the same byte */
		}
	}
	for (size_t i = 0; i < PAGES; i += 2)
		t_check(memcmp((const uint8_t *)base + i * t_page, want, t_page) == 0,
			"page %zu is not the template", i);
	fl_region_destroy(r);
	free(want);
	printf("PASS %s (%s)\n", t_name, flags ? "helper" : "sigbus");
	return 0;
}
