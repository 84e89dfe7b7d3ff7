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
 *  - FL_REGION_HELPER_THREAD: a helper thread (every signal blocked) reads
 *    the userfaultfd and populates pages, so that threads touching
 *    committed memory never take a signal.  A fault past the limit is
 *    forwarded to the faulting thread as a SIGBUS (si_code SI_QUEUE: no
 *    thread may send another a kernel si_code), which faultline's handler
 *    checks and then dispatches as in the default mode; unclaimed, the
 *    application sees BUS_ADRERR at the address, si_errno 1 for a write.
 *
 * In both modes, once guard faults repeat (the second claimed past the
 * limit), faultline makes the pages past the limit PROT_NONE (the guard
 * tail): the next guard faults there are plain access faults, as cheap as
 * an mprotect guard page's, with no userfaultfd round trip.  It changes
 * nothing the application sees: committing more stays one atomic store (a
 * page of the tail is made read-write again at its first access), a fault
 * there that faultline does not claim still reaches the SIGBUS action as
 * above, and fl_region_reset removes the tail.  The application must not
 * mprotect the region's pages past the limit itself.
 *
 * In both modes: a system call that writes into a page nobody touched
 * yet fails with EFAULT (UFFD_USER_MODE_ONLY: kernel-mode faults are not
 * served); a thread that blocks SIGBUS and touches the region past the
 * limit kills the process with SIGBUS, as the kernel's own SIGBUS would; a
 * child made by fork sees plain anonymous memory (no registration, no
 * limit).  fl_region_create.3 has the details.
 *
 * Requires fl_init.
 */
#ifndef FAULTLINE_REGION_H
#define FAULTLINE_REGION_H

#include <stddef.h>
#include <stdint.h>

#include <faultline/opts.h>

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
 * Sets the committed limit to bytes (as fl_region_commit), then drops
 * every populated page (MADV_DONTNEED: the next touch populates again,
 * from zero or the template) and the guard tail (mprotect).  Pages
 * touched during the call may be dropped too.  Returns 0, -EINVAL (limit
 * unchanged), or -errno of madvise or mprotect.  Thread-safe.  Not
 * async-signal-safe.
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
