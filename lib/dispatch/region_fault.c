/* SPDX-License-Identifier: MIT */
/*
 * Signal context (see dispatch.h for the rules): a fault inside a
 * userfaultfd region.
 */
#include <errno.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>

#include "dispatch/dispatch.h"

int fl_region_fault(const struct fl_region *r, uint64_t addr)
{
	/* Pairs with the release store in fl_region_commit. */
	uint64_t limit = atomic_load_explicit(&((struct fl_region *)r)->limit,
					      memory_order_acquire);
	uint64_t page = (addr - r->start) & ~(r->page_size - 1);

	if (addr - r->start >= limit || (r->flags & FL_REGION_HELPER_THREAD))
		return 0;
	if (r->template_page) {
		struct uffdio_copy cp = {
			.dst = r->start + page,
			.src = (uint64_t)(uintptr_t)r->template_page,
			.len = r->page_size,
		};

		if (ioctl(r->uffd, UFFDIO_COPY, &cp) == 0 || errno == EEXIST)
			return 1;
	} else {
		struct uffdio_zeropage zp = {
			.range = { .start = r->start + page, .len = r->page_size },
		};

		if (ioctl(r->uffd, UFFDIO_ZEROPAGE, &zp) == 0 || errno == EEXIST)
			return 1;
	}
	return -1;
}
