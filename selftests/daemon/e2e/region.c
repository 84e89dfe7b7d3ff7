// SPDX-License-Identifier: MIT
/*
 * e2e-region: an implicit null check whose access is the first touch of a
 * userfaultfd region page (the handler populates the page: a fault signal
 * at the site that is not a failed check), then the same check past the
 * region's committed limit (a guard fault: a failed check, which resumes
 * at the handler).  Registers with the daemon at $FAULTLINE_SOCKET through
 * fl_init; prints "region PID" and exits 0, or "FAIL ..." and exits 1.
 * Linked with libfaultline.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <faultline/dispatch.h>
#include <faultline/region.h>

int e2e_load(int *p);

int main(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct fl_region_opts o = { .sz = sizeof(o), .commit = page };
	struct fl_region *r;
	char *base;
	int err, v;

	err = fl_init(NULL);
	if (!err)
		err = fl_region_create(2 * page, &o, &r);
	if (err) {
		printf("FAIL fl_init or fl_region_create: %s\n", strerror(-err));
		return 1;
	}
	base = fl_region_base(r);
	/* A zero page appears: the load reads 0. */
	v = e2e_load((int *)base);
	if (v != 0) {
		printf("FAIL first touch read %d, not 0\n", v);
		return 1;
	}
	/* Past the limit: the check fails, and the handler returns -1. */
	v = e2e_load((int *)(base + page));
	if (v != -1) {
		printf("FAIL past the limit: %d, not the handler's -1\n", v);
		return 1;
	}
	printf("region %d\n", (int)getpid());
	return 0;
}
