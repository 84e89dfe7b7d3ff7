/* SPDX-License-Identifier: MIT */
/*
 * The values of a deoptimization with more of them than fit on the stack:
 * see values.h.
 *
 * A handler may leave by longjmp or a C++ exception, as a runtime's
 * interpreter does when the code it resumes throws: nothing of ours runs
 * then, so a mapping only a return unmaps would leak (a page per
 * deoptimization).  Each thread keeps the mappings its deoptimizations
 * hold in a list (in the mappings themselves), and each deoptimization
 * that maps one first unmaps those whose deoptimization is over.  Which
 * are over is told by the frame of each, the word `mark` of its saved
 * registers, where it wrote a cookie unique to its mapping:
 *   - a frame at the very address of ours is over (ours took its place);
 *   - a frame below ours (deeper) is over when the cookie is no longer
 *     there: nothing writes into a frame while it is live.  The word is
 *     read with process_vm_readv, which fails rather than faults when
 *     the memory is gone (another stack, freed: a fiber's);
 *   - any other may be under way: a deoptimization whose handler
 *     deoptimized again (ours is its callee), or one on another stack (a
 *     signal handler's alternate stack, a fiber's).  It is kept, and
 *     unmapped by a later deoptimization once one of the rules above
 *     says it is over.
 * The list is the thread's own; a signal handler's deoptimization that
 * interrupts a change of it (busy) leaves it alone, and unmaps its own
 * array when its handler returns.
 *
 * Only async-signal-safe calls: mmap, munmap, process_vm_readv.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "deopt/values.h"

/* At the start of each mapping; the values follow. */
struct held {
	struct held *next;	/* the thread's list */
	size_t size;		/* of the mapping */
	volatile uint64_t *mark;	/* its deoptimization's frame word */
	uint64_t cookie;	/* what *mark holds while it is under way */
	bool listed;
	struct fl_deopt_value values[];
};

static __thread struct held *thread_held __attribute__((tls_model("initial-exec")));
/* This thread is changing thread_held (a signal handler that deoptimizes leaves it alone). */
static __thread volatile sig_atomic_t busy __attribute__((tls_model("initial-exec")));
static __thread uint64_t next_cookie __attribute__((tls_model("initial-exec")));

/* Whether the deoptimization that holds h is over (see above), ours at mark. */
static bool over(const struct held *h, volatile uint64_t *mark)
{
	uint64_t now;
	struct iovec local = { .iov_base = &now, .iov_len = sizeof(now) };
	struct iovec remote = { .iov_base = (void *)h->mark, .iov_len = sizeof(now) };

	if (h->mark == mark)
		return true;
	if ((uintptr_t)h->mark > (uintptr_t)mark)
		return false;
	if (process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != (ssize_t)sizeof(now))
		/* Gone (EFAULT) is over; a call refused (seccomp) says nothing. */
		return false;
	return now != h->cookie;
}

/* Marks the start and the end of a change of the list (against this thread's signal handlers). */
static void enter(void)
{
	busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
}

static void leave(void)
{
	atomic_signal_fence(memory_order_seq_cst);
	busy = 0;
}

struct fl_deopt_value *fl_deopt_values_get(uint32_t n, volatile uint64_t *mark)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t size = (offsetof(struct held, values) + (size_t)n * sizeof(struct fl_deopt_value) +
		       page - 1) & ~(page - 1);
	bool mine = !busy;
	struct held *h;

	if (mine) {
		enter();
		for (struct held **at = &thread_held; *at;) {
			struct held *o = *at;

			if (!over(o, mark)) {
				at = &o->next;
				continue;
			}
			*at = o->next;
			munmap(o, o->size);
		}
		leave();
	}
	h = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (h == MAP_FAILED)
		return NULL;
	h->size = size;
	h->mark = mark;
	/* Unique to this mapping: its address, and a count for an address mapped again. */
	h->cookie = (uint64_t)(uintptr_t)h ^ (++next_cookie << 48) ^ 0x9e3779b97f4a7c15ull;
	*mark = h->cookie;
	if (mine) {
		enter();
		h->next = thread_held;
		thread_held = h;
		h->listed = true;
		leave();
	}
	return h->values;
}

void fl_deopt_values_put(struct fl_deopt_value *values)
{
	struct held *h = (struct held *)((char *)values - offsetof(struct held, values));

	if (h->listed) {
		enter();
		for (struct held **at = &thread_held; *at; at = &(*at)->next) {
			if (*at == h) {
				*at = h->next;
				break;
			}
		}
		leave();
	}
	*h->mark = 0;
	munmap(h, h->size);
}
