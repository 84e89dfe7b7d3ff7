// SPDX-License-Identifier: MIT
/*
 * A region without a template: every page below the committed limit reads
 * as zeros on its first touch, read or write, and keeps what is written.
 * In the default mode each first touch is one page populated in signal
 * context (fl_stats.populated); in helper mode none is.
 */
#include "common.h"

#define PAGES 256

int main(int argc, char **argv)
{
	uint32_t flags = t_start(argc, argv);
	struct fl_stats before = { .sz = sizeof(before) }, after = { .sz = sizeof(after) };
	struct fl_region *r;
	volatile uint8_t *base;
	static uint8_t zero[1 << 16];
	size_t touched = 0;

	t_init();
	r = t_region((size_t)PAGES * t_page, (size_t)PAGES * t_page, NULL, flags);
	base = fl_region_base(r);
	t_check(fl_region_size(r) == (size_t)PAGES * t_page, "size %zu", fl_region_size(r));
	t_check(fl_stats_get(&before) == 0, "fl_stats_get");

	for (size_t i = 0; i < PAGES; i += 3, touched++) {
		volatile uint8_t *pg = base + i * t_page;

		if (i % 2) {
			/* Read first: the zero page; then a write copies it. */
			t_check(pg[t_page / 2] == 0, "page %zu: read %u", i, pg[t_page / 2]);
			pg[1] = (uint8_t)(i + 1);
		} else {
			pg[1] = (uint8_t)(i + 1);
		}
	}
	for (size_t i = 0; i < PAGES; i += 3) {
		const uint8_t *pg = (const uint8_t *)base + i * t_page;

		t_check(pg[1] == (uint8_t)(i + 1), "page %zu lost its write", i);
		t_check(pg[0] == 0 && memcmp(pg + 2, zero, t_page - 2) == 0,
			"page %zu is not zero-filled", i);
	}

	t_check(fl_stats_get(&after) == 0, "fl_stats_get");
	if (flags)
		t_check(after.populated == before.populated,
			"helper mode populated %llu pages in signal context",
			(unsigned long long)(after.populated - before.populated));
	else
		t_check(after.populated - before.populated == touched,
			"populated %llu pages in signal context, touched %zu",
			(unsigned long long)(after.populated - before.populated), touched);
	fl_region_destroy(r);
	printf("PASS %s (%s): %zu pages\n", t_name, flags ? "helper" : "sigbus", touched);
	return 0;
}
