/* SPDX-License-Identifier: MIT */
/*
 * Signal context (see dispatch.h for the rules): a fault inside a
 * userfaultfd region, and a fault a region's helper thread forwarded.
 * Reads only the struct fl_region the snapshot names; the syscalls are
 * ioctl on the region's userfaultfd and mprotect on its guard tail.
 */
#include <errno.h>
#include <linux/userfaultfd.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <ucontext.h>

#include "dispatch/dispatch.h"
#include "uctx.h"

_Static_assert(sizeof(struct fl_region_forward) == 48,
	       "the kernel keeps 48 bytes of a queued siginfo");
_Static_assert(offsetof(struct fl_region_forward, write) == offsetof(siginfo_t, si_errno) &&
	       offsetof(struct fl_region_forward, code) == offsetof(siginfo_t, si_code) &&
	       offsetof(struct fl_region_forward, addr) == offsetof(siginfo_t, si_addr),
	       "struct fl_region_forward follows siginfo_t");

int fl_region_populate(const struct fl_region *r, uint64_t off, bool wake)
{
	int ret;

	if (r->template_page) {
		struct uffdio_copy cp = {
			.dst = r->start + off,
			.src = (uint64_t)(uintptr_t)r->template_page,
			.len = r->page_size,
			.mode = wake ? 0 : UFFDIO_COPY_MODE_DONTWAKE,
		};

		ret = ioctl(r->uffd, UFFDIO_COPY, &cp);
	} else {
		struct uffdio_zeropage zp = {
			.range = { .start = r->start + off, .len = r->page_size },
			.mode = wake ? 0 : UFFDIO_ZEROPAGE_MODE_DONTWAKE,
		};

		ret = ioctl(r->uffd, UFFDIO_ZEROPAGE, &zp);
	}
	return ret == 0 ? 0 : -errno;
}

int fl_region_fault(const struct fl_region *r, uint64_t addr)
{
	/*
	 * Acquire: pairs with the release store of fl_region_commit and
	 * fl_region_reset (lib/region/region.c).
	 */
	uint64_t limit = atomic_load_explicit(&r->limit, memory_order_acquire);
	uint64_t off = addr - r->start;
	int err;

	if (off >= limit)
		return 0;
	/*
	 * EEXIST: another thread populated the page first.  EAGAIN: the
	 * kernel asks to try again.  Either way the access just retries.
	 */
	err = fl_region_populate(r, off & ~(r->page_size - 1),
				 (r->flags & FL_REGION_HELPER_THREAD) != 0);
	if (err == 0 || err == -EEXIST || err == -EAGAIN)
		return 1;
	return -1;
}

/* Widens [guard_lo, guard_hi) to hold [lo, hi).  Lock-free. */
static void span_widen(uint64_t lo, uint64_t hi)
{
	uint64_t cur = atomic_load_explicit(&fl_dispatch.guard_lo, memory_order_relaxed);

	while ((cur == 0 || lo < cur) &&
	       !atomic_compare_exchange_weak_explicit(&fl_dispatch.guard_lo, &cur, lo,
						      memory_order_relaxed, memory_order_relaxed))
		;
	cur = atomic_load_explicit(&fl_dispatch.guard_hi, memory_order_relaxed);
	while (hi > cur &&
	       !atomic_compare_exchange_weak_explicit(&fl_dispatch.guard_hi, &cur, hi,
						      memory_order_relaxed, memory_order_relaxed))
		;
}

bool fl_region_maybe_guarded(uint64_t addr)
{
	return addr >= atomic_load_explicit(&fl_dispatch.guard_lo, memory_order_relaxed) &&
	       addr < atomic_load_explicit(&fl_dispatch.guard_hi, memory_order_relaxed);
}

int fl_region_guard(struct fl_region *r)
{
	/* Acquire: pairs with the release store of fl_region_commit. */
	uint64_t from = atomic_load_explicit(&r->limit, memory_order_acquire);
	uint64_t cur = atomic_load_explicit(&r->guard_from, memory_order_relaxed);

	if (from >= r->size)
		return 0;
	/*
	 * guard_from first, and the span: a SIGSEGV of a page made PROT_NONE
	 * must find it ours.  Relaxed: the mprotect below is a syscall, which
	 * orders it; a handler that reads an older value sees a fault it
	 * cannot claim, unguards and retries.
	 */
	while (from < cur &&
	       !atomic_compare_exchange_weak_explicit(&r->guard_from, &cur, from,
						      memory_order_relaxed, memory_order_relaxed))
		;
	span_widen(r->start, r->start + r->size);
	if (mprotect((void *)(uintptr_t)(r->start + from), r->size - from, PROT_NONE) != 0)
		return -errno;
	return 0;
}

int fl_region_unguard(struct fl_region *r, uint64_t off, uint64_t to)
{
	uint64_t page = r->page_size;

	off &= ~(page - 1);
	to = to >= r->size ? r->size : (to + page - 1) & ~(page - 1);
	if (to <= off)
		return 0;
	if (mprotect((void *)(uintptr_t)(r->start + off), to - off, PROT_READ | PROT_WRITE) != 0)
		return -errno;
	return 0;
}

int fl_region_forwarded(siginfo_t *si, const void *ucv)
{
	const ucontext_t *uc = ucv;
	const struct fl_snapshot *snap;
	const struct fl_snap_region *sr;
	struct fl_region_forward f;
	unsigned parity;
	int ret = 0;

	memcpy(&f, si, sizeof(f));
	if (f.signo != SIGBUS || f.code != SI_QUEUE)
		return 0;

	parity = fl_snapshot_enter(&snap);
	sr = snap ? fl_snapshot_region(snap, f.addr) : NULL;
	if (!sr || !(sr->region->flags & FL_REGION_HELPER_THREAD) ||
	    f.cookie != sr->region->forward_cookie)
		goto out;
	/* Relaxed: the helper reads it a few milliseconds later (helper.c). */
	atomic_fetch_add_explicit(&sr->region->forwards_taken, 1, memory_order_relaxed);
	/*
	 * The thread waited in the fault at (pc, sp).  If it was interrupted
	 * there by another signal before this one came, this may be that
	 * signal's handler: not the faulting instruction.
	 */
	if (f.pc && (f.pc != fl_uc_pc(uc) ||
		     f.sp != fl_uc_sp(uc))) {
		ret = -1;
		goto out;
	}
	si->si_code = BUS_ADRERR;
	memset((char *)si + offsetof(struct fl_region_forward, pc), 0,
	       sizeof(f) - offsetof(struct fl_region_forward, pc));
	ret = 1;
out:
	fl_snapshot_leave(parity);
	return ret;
}
