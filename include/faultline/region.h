/* SPDX-License-Identifier: MIT */
/*
 * userfaultfd regions: a large reserved range whose pages appear on first
 * touch below a committed limit, and whose uncommitted part is a guard
 * zone for implicit checks.
 *
 * Below the limit a touched page is populated (zero-filled, or a copy of
 * the template) and the access retries.  Past the limit, a fault at a
 * registered faulting PC of the right kind is an implicit-check failure
 * and resumes at its handler PC (dispatch.h, rule 4); any other fault
 * there goes to the application's SIGBUS action, as without faultline.
 *
 * Modes:
 *  - default: UFFD_FEATURE_SIGBUS.  The faulting thread handles its own
 *    fault in faultline's SIGBUS handler.
 *  - FL_REGION_HELPER_THREAD: a helper thread reads the userfaultfd and
 *    populates pages, so that threads touching committed memory never take
 *    a signal.  A fault past the limit is sent back to the faulting thread
 *    as a SIGBUS (BUS_ADRERR, si_addr the address) and dispatched as in the
 *    default mode.
 *
 * Requires fl_init.
 */
#ifndef FAULTLINE_REGION_H
#define FAULTLINE_REGION_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
	FL_REGION_HELPER_THREAD = 1u << 0,
};

struct fl_region_opts {
	size_t sz;
	uint32_t flags;			/* FL_REGION_* */
	/*
	 * NULL: pages are zero-filled (UFFDIO_ZEROPAGE).  Otherwise one page
	 * (the page size) copied into every populated page (UFFDIO_COPY).
	 * Copied; need not outlive the call.
	 */
	const void *template_page;
	size_t commit;			/* initial committed limit, bytes */
};

struct fl_region;

/*
 * Reserves size bytes (rounded up to pages) and registers them with
 * userfaultfd.  Returns 0 with *out set, -EINVAL for a zero size or a bad
 * option, -ENODEV before fl_init, -ENOSYS/-EPERM/-EOPNOTSUPP when
 * userfaultfd or a needed feature is unavailable, -errno otherwise.
 * Thread-safe.  Not async-signal-safe.
 */
int fl_region_create(size_t size, const struct fl_region_opts *opts,
		     struct fl_region **out);

/* Returns the first byte of the region.  Thread-safe, async-signal-safe. */
void *fl_region_base(const struct fl_region *r);

/* Returns the region's size in bytes.  Thread-safe, async-signal-safe. */
size_t fl_region_size(const struct fl_region *r);

/*
 * Sets the committed limit to bytes (rounded up to pages, at most the
 * size): one atomic store, no syscall.  Lowering it does not drop pages
 * already populated (fl_region_reset does).  Returns 0, or -EINVAL when
 * bytes exceeds the size.  Thread-safe, async-signal-safe.
 */
int fl_region_commit(struct fl_region *r, size_t bytes);

/* Returns the committed limit.  Thread-safe, async-signal-safe. */
size_t fl_region_committed(const struct fl_region *r);

/*
 * Drops every populated page (the next touch populates again) and sets
 * the committed limit to bytes.  Returns 0, -EINVAL, or -errno.
 * Thread-safe.  Not async-signal-safe.
 */
int fl_region_reset(struct fl_region *r, size_t bytes);

/*
 * Unregisters and unmaps the region; stops the helper thread.  No thread
 * may touch the region any more.  NULL is fine.  Thread-safe.  Not
 * async-signal-safe.
 */
void fl_region_destroy(struct fl_region *r);

#ifdef __cplusplus
}
#endif

#endif /* FAULTLINE_REGION_H */
