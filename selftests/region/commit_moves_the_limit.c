// SPDX-License-Identifier: MIT
/*
 * fl_region_commit moves the committed limit: a page past it is not
 * populated (the fault goes to the application's SIGBUS action, as
 * BUS_ADRERR at the exact address), and the same page is populated once
 * the limit is past it.  Lowering the limit keeps the pages populated
 * already.  The limit is rounded up to pages and never past the size.
 */
#include "common.h"

#define PAGES 64

int main(int argc, char **argv)
{
	uint32_t flags = t_start(argc, argv);
	struct fl_region_opts bad = { .sz = sizeof(bad), .flags = flags,
				      .commit = PAGES * 4096 * 2 };
	struct fl_region *r;
	volatile uint8_t *base, *p;
	volatile int caught;
	int err;

	t_init();
	err = fl_region_create((size_t)PAGES * t_page, &bad, &r);
	t_check(err == -EINVAL, "initial commit past the size: %d", err);

	r = t_region((size_t)PAGES * t_page, 8 * t_page, NULL, flags);
	base = fl_region_base(r);
	t_catch_sigbus();
	t_check(fl_region_committed(r) == 8 * t_page, "committed %zu", fl_region_committed(r));

	/* Past the limit: the application's action, kernel-style siginfo. */
	p = base + 10 * t_page + 123;
	T_TRY(caught, (void)*p);
	t_check(caught, "a read past the limit did not fault");
	t_check(t_caught.si_signo == SIGBUS && t_caught.si_code == BUS_ADRERR,
		"signal %d code %d", t_caught.si_signo, t_caught.si_code);
	t_check(t_caught.si_addr == (void *)p, "si_addr %p, the access was at %p",
		t_caught.si_addr, (void *)p);

	/* Commit past it: the same access populates. */
	t_check(fl_region_commit(r, 16 * t_page) == 0, "commit");
	T_TRY(caught, t_check(*p == 0, "not zero"));
	t_check(!caught, "a read below the raised limit faulted to the application");
	*p = 7;

	/* Lowering keeps populated pages, stops new ones. */
	t_check(fl_region_commit(r, 4 * t_page) == 0, "commit");
	T_TRY(caught, t_check(*p == 7, "the page lost its byte"));
	t_check(!caught, "a populated page faulted after the limit was lowered");
	T_TRY(caught, base[12 * t_page] = 1);
	t_check(caught, "a write past the lowered limit did not fault");

	/* Rounding and bounds. */
	t_check(fl_region_commit(r, 5) == 0 && fl_region_committed(r) == t_page,
		"5 bytes commit %zu", fl_region_committed(r));
	t_check(fl_region_commit(r, 0) == 0 && fl_region_committed(r) == 0, "0 bytes");
	T_TRY(caught, (void)base[0]);
	t_check(caught, "a read with nothing committed did not fault");
	t_check(fl_region_commit(r, (size_t)PAGES * t_page + 1) == -EINVAL, "past the size");
	t_check(fl_region_committed(r) == 0, "a refused commit changed the limit");
	t_check(fl_region_commit(r, (size_t)PAGES * t_page) == 0 &&
		fl_region_committed(r) == (size_t)PAGES * t_page, "the whole size");
	T_TRY(caught, (void)base[(PAGES - 1) * t_page + t_page - 1]);
	t_check(!caught, "the last byte faulted with everything committed");

	fl_region_destroy(r);
	printf("PASS %s (%s)\n", t_name, flags ? "helper" : "sigbus");
	return 0;
}
