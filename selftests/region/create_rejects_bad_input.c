// SPDX-License-Identifier: MIT
/*
 * fl_region_create's contract: -ENODEV before fl_init; -EINVAL for a zero
 * or overflowing size, unknown flags, a bad sz, a non-zero tail past the
 * struct it knows (the options rule, <faultline/opts.h>), a commit past the
 * size, a NULL out; NULL opts are the defaults, a longer struct whose tail
 * is zero is accepted.  Sizes round up to pages.
 * fl_region_destroy(NULL) does nothing.
 */
#include "common.h"

int main(int argc, char **argv)
{
	struct fl_region_opts o = { .sz = sizeof(o) };
	struct fl_region *r = (struct fl_region *)&o;
	int err;

	t_start(argc, argv);
	err = fl_region_create(t_page, NULL, &r);
	t_check(err == -ENODEV, "before fl_init: %d", err);
	t_check(r == NULL, "*out not cleared on failure");
	t_init();

	t_check(fl_region_create(0, NULL, &r) == -EINVAL, "size 0");
	t_check(fl_region_create(SIZE_MAX, NULL, &r) == -EINVAL, "size SIZE_MAX");
	t_check(fl_region_create(t_page, NULL, NULL) == -EINVAL, "out NULL");
	o.flags = 1u << 7;
	t_check(fl_region_create(t_page, &o, &r) == -EINVAL, "unknown flag");
	o.flags = 0;
	o.sz = 4;
	t_check(fl_region_create(t_page, &o, &r) == -EINVAL, "sz 4");
	struct {
		struct fl_region_opts o;
		uint64_t tail;
	} longer = { .o = { .sz = sizeof(longer) }, .tail = 1 };
	t_check(fl_region_create(t_page, &longer.o, &r) == -EINVAL, "non-zero tail past the struct");
	longer.tail = 0;
	t_check(fl_region_create(t_page, &longer.o, &r) == 0, "zero tail past the struct");
	fl_region_destroy(r);
	o.sz = sizeof(o);
	o.commit = 2 * t_page + 1;
	t_check(fl_region_create(2 * t_page, &o, &r) == -EINVAL, "commit past the size");
	o.commit = 2 * t_page - 1;
	t_check(fl_region_create(2 * t_page - 5, &o, &r) == 0, "commit within the rounded size");
	t_check(fl_region_size(r) == 2 * t_page && fl_region_committed(r) == 2 * t_page,
		"size %zu committed %zu", fl_region_size(r), fl_region_committed(r));
	fl_region_destroy(r);

	err = fl_region_create(3 * t_page, NULL, &r);
	if (err == -ENOSYS || err == -EPERM || err == -EOPNOTSUPP)
		t_skip("no userfaultfd region here");
	t_check(err == 0, "NULL opts: %s", strerror(-err));
	t_check(fl_region_committed(r) == 0, "NULL opts: committed %zu", fl_region_committed(r));
	fl_region_destroy(r);
	fl_region_destroy(NULL);
	printf("PASS %s\n", t_name);
	return 0;
}
