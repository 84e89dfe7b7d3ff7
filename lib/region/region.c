// SPDX-License-Identifier: MIT
/*
 * userfaultfd regions: the writer side.  The handler side (populating a
 * page in signal context) is lib/dispatch/region_fault.c; the helper
 * thread of FL_REGION_HELPER_THREAD is helper.c.
 *
 * Setting up a region:
 *  1. Probe: a userfaultfd whose UFFDIO_API asks for no feature reports
 *     every feature the kernel has.  The features a userfaultfd may use
 *     are fixed by its one UFFDIO_API, so a second one asks for exactly
 *     what this region uses: UFFD_FEATURE_SIGBUS (default mode: a missing
 *     page is a SIGBUS in the faulting thread, never a wait), or
 *     UFFD_FEATURE_THREAD_ID (helper mode: the message names the thread to
 *     forward a fault past the limit to) and UFFD_FEATURE_EXACT_ADDRESS
 *     when there is one (the forwarded si_addr is then the exact address,
 *     as in the default mode).
 *  2. UFFD_USER_MODE_ONLY: faults from kernel mode (a read(2) into the
 *     region) are not handled; the syscall fails with EFAULT instead.  It
 *     is also what an unprivileged process may use when
 *     vm.unprivileged_userfaultfd is 0.
 *  3. Reserve with MAP_NORESERVE and register the range for missing
 *     pages; the range must offer UFFDIO_ZEROPAGE, UFFDIO_COPY and
 *     UFFDIO_WAKE.
 *  4. Publish it in the handler table (fl_table_region_add): from then on
 *     the handler sees it.  Destroying goes the other way: unpublish (this
 *     waits until no handler can still read the struct), then unmap.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <faultline/region.h>

#include "core/log.h"
#include "core/opts.h"
#include "region/internal.h"
#include "table/table.h"

#define NEED_IOCTLS ((1ull << _UFFDIO_ZEROPAGE) | (1ull << _UFFDIO_COPY) | \
		     (1ull << _UFFDIO_WAKE))

/*
 * Opens a userfaultfd and does its UFFDIO_API handshake asking for
 * features.  Returns the fd with *offered set (what the kernel has), or
 * -errno.
 */
static int uffd_open(uint64_t features, uint64_t *offered)
{
	struct uffdio_api api = { .api = UFFD_API, .features = features };
	int fd, err;

	fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	if (fd < 0) {
		err = errno;
		/* Before 5.11 the flag is unknown. */
		return err == EINVAL ? -EOPNOTSUPP : -err;
	}
	if (ioctl(fd, UFFDIO_API, &api) != 0) {
		err = errno;
		close(fd);
		return err == EINVAL ? -EOPNOTSUPP : -err;
	}
	if (offered)
		*offered = api.features;
	return fd;
}

/*
 * Opens the region's userfaultfd with exactly the features the mode uses.
 * Returns the fd, or -errno.
 */
static int uffd_open_for(uint32_t flags)
{
	uint64_t offered, need, want;
	int fd;

	fd = uffd_open(0, &offered);
	if (fd < 0) {
		fl_log(FL_LOG_ERROR, "fl_region_create: userfaultfd: %s", strerror(-fd));
		return fd;
	}
	close(fd);

	if (flags & FL_REGION_HELPER_THREAD) {
		need = UFFD_FEATURE_THREAD_ID;
		want = need | (offered & UFFD_FEATURE_EXACT_ADDRESS);
	} else {
		need = UFFD_FEATURE_SIGBUS;
		want = need;
	}
	if ((offered & need) != need) {
		fl_log(FL_LOG_ERROR,
		       "fl_region_create: userfaultfd lacks feature %#llx (offers %#llx)",
		       (unsigned long long)(need & ~offered), (unsigned long long)offered);
		return -EOPNOTSUPP;
	}
	fd = uffd_open(want, NULL);
	if (fd < 0)
		fl_log(FL_LOG_ERROR, "fl_region_create: UFFDIO_API features %#llx: %s",
		       (unsigned long long)want, strerror(-fd));
	return fd;
}

static uint64_t new_cookie(void)
{
	uint64_t c;
	struct timespec ts;

	if (getrandom(&c, sizeof(c), 0) == (ssize_t)sizeof(c))
		return c;
	/* No getrandom: still unknown outside the process in practice. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	c = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull;
	return c ^ (uint64_t)(uintptr_t)&c ^ ((uint64_t)getpid() << 32);
}

/* Rounds bytes up to pages; returns false when that exceeds size. */
static bool round_limit(size_t bytes, uint64_t size, uint64_t page, uint64_t *out)
{
	if (bytes > size)
		return false;
	*out = ((uint64_t)bytes + page - 1) & ~(page - 1);
	return true;
}

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

/*
 * In a child made by fork the regions are plain anonymous memory (no
 * userfaultfd, no limit: region.h): their guard tails become read-write.
 * The child has one thread, and the snapshot it inherited.
 */
static void fork_child(void)
{
	const struct fl_snapshot *s = atomic_load(&fl_dispatch.current);

	for (uint32_t i = 0; s && i < s->num_regions; i++) {
		struct fl_region *r = s->regions[i].region;
		uint64_t from = atomic_load_explicit(&r->guard_from, memory_order_relaxed);

		if (from < r->size)
			fl_region_unguard(r, from, r->size);
	}
}

static void fork_handler_install(void)
{
	pthread_atfork(NULL, NULL, fork_child);
}

static void region_free(struct fl_region_priv *p)
{
	fl_region_helper_stop(p);
	if (p->r.start)
		munmap((void *)(uintptr_t)p->r.start, p->r.size);
	if (p->r.uffd >= 0)
		close(p->r.uffd);
	if (p->template_copy)
		munmap(p->template_copy, p->r.page_size);
	free(p);
}

int fl_region_create(size_t size, const struct fl_region_opts *opts, struct fl_region **out)
{
	struct fl_region_opts o;
	struct fl_region_priv *p;
	struct uffdio_register reg;
	long page = sysconf(_SC_PAGESIZE);
	uint64_t limit;
	void *mem;
	int err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (fl_opts_copy(&o, sizeof(o), opts))
		return -EINVAL;
	if (page <= 0 || size == 0 || size > SIZE_MAX - (size_t)page ||
	    (o.flags & ~(uint32_t)FL_REGION_HELPER_THREAD))
		return -EINVAL;
	size = (size + (size_t)page - 1) & ~((size_t)page - 1);
	if (!round_limit(o.commit, size, (uint64_t)page, &limit))
		return -EINVAL;
	if (!fl_table_ready())
		return -ENODEV;
	pthread_once(&fork_once, fork_handler_install);

	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->r.priv = p;
	p->r.page_size = (uint64_t)page;
	p->r.flags = o.flags;
	p->r.uffd = -1;
	p->stop_fd = -1;
	/* Relaxed: nobody else sees the region before fl_table_region_add. */
	atomic_store_explicit(&p->r.limit, limit, memory_order_relaxed);
	atomic_store_explicit(&p->r.guard_from, (uint64_t)size, memory_order_relaxed);
	if (o.flags & FL_REGION_HELPER_THREAD)
		p->r.forward_cookie = new_cookie();

	if (o.template_page) {
		p->template_copy = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p->template_copy == MAP_FAILED) {
			p->template_copy = NULL;
			err = -errno;
			goto fail;
		}
		memcpy(p->template_copy, o.template_page, (size_t)page);
		p->r.template_page = p->template_copy;
	}

	err = uffd_open_for(o.flags);
	if (err < 0)
		goto fail;
	p->r.uffd = err;

	mem = mmap(NULL, size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (mem == MAP_FAILED) {
		err = -errno;
		goto fail;
	}
	p->r.start = (uint64_t)(uintptr_t)mem;
	p->r.size = size;

	memset(&reg, 0, sizeof(reg));
	reg.range.start = p->r.start;
	reg.range.len = size;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	if (ioctl(p->r.uffd, UFFDIO_REGISTER, &reg) != 0) {
		err = -errno;
		fl_log(FL_LOG_ERROR, "fl_region_create: UFFDIO_REGISTER: %s", strerror(-err));
		goto fail;
	}
	if ((reg.ioctls & NEED_IOCTLS) != NEED_IOCTLS) {
		fl_log(FL_LOG_ERROR, "fl_region_create: the range offers ioctls %#llx, not %#llx",
		       (unsigned long long)reg.ioctls, (unsigned long long)NEED_IOCTLS);
		err = -EOPNOTSUPP;
		goto fail;
	}

	if (o.flags & FL_REGION_HELPER_THREAD) {
		err = fl_region_helper_start(p);
		if (err)
			goto fail;
	}
	err = fl_table_region_add(&p->r);
	if (err)
		goto fail;
	*out = &p->r;
	return 0;
fail:
	region_free(p);
	return err;
}

void *fl_region_base(const struct fl_region *r)
{
	return (void *)(uintptr_t)r->start;
}

size_t fl_region_size(const struct fl_region *r)
{
	return (size_t)r->size;
}

int fl_region_commit(struct fl_region *r, size_t bytes)
{
	uint64_t limit;

	if (!round_limit(bytes, r->size, r->page_size, &limit))
		return -EINVAL;
	/*
	 * Release: pairs with the acquire loads in fl_region_fault
	 * (lib/dispatch/region_fault.c) and the helper thread (helper.c).
	 */
	atomic_store_explicit(&r->limit, limit, memory_order_release);
	return 0;
}

size_t fl_region_committed(const struct fl_region *r)
{
	/* Acquire: pairs with the release store of fl_region_commit. */
	return (size_t)atomic_load_explicit(&r->limit, memory_order_acquire);
}

int fl_region_reset(struct fl_region *r, size_t bytes)
{
	/*
	 * The limit first: a page touched during the madvise is populated
	 * only below the new limit.
	 */
	int err = fl_region_commit(r, bytes);

	if (err)
		return err;
	/*
	 * On anonymous memory registered for missing pages, MADV_DONTNEED
	 * empties the page tables: the next touch is a missing-page fault
	 * again (no event reaches the userfaultfd: UFFD_FEATURE_EVENT_REMOVE
	 * is not asked for).
	 */
	if (madvise((void *)(uintptr_t)r->start, r->size, MADV_DONTNEED) != 0)
		return -errno;
	/*
	 * And no guard tail (lib/dispatch/region_fault.c): as created.  The
	 * handler may make one again meanwhile; that is a guard tail as any.
	 */
	atomic_store_explicit(&r->uffd_guards, 0, memory_order_relaxed);
	return fl_region_unguard(r, 0, r->size);
}

void fl_region_destroy(struct fl_region *r)
{
	int err;

	if (!r)
		return;
	/*
	 * When this returns no handler can still be reading *r.  It fails
	 * only for want of memory for the new snapshot: then the handler may
	 * still see r, and r must stay (leaked, with its mapping).
	 */
	for (int tries = 0; (err = fl_table_region_remove(r)) == -ENOMEM; tries++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		if (tries == 100) {
			fl_log(FL_LOG_ERROR, "fl_region_destroy: out of memory: region %#llx leaked",
			       (unsigned long long)r->start);
			return;
		}
		nanosleep(&ts, NULL);
	}
	if (err)
		fl_log(FL_LOG_ERROR, "fl_region_destroy: %s", strerror(-err));
	region_free(r->priv);
}
