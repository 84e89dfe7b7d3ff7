/* SPDX-License-Identifier: MIT */
/* The heap of the statepoint example (heap.h): spaces, objects, copies. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "../common/t.h"
#include "collector.h"
#include "heap.h"

const char *gc_test_name = "?";
struct gc_stats gc_stats;
bool gc_collect_on_alloc;

static char *range;		/* GC_SPACES spaces, PROT_NONE but the current one */
static unsigned current;	/* the space objects are allocated in */
static char *top;		/* its first free byte */
static unsigned from;		/* during a collection: the space it leaves */
static char *from_top;		/* ...and its first free byte */

void gc_die(const char *fmt, ...)
{
	va_list ap;

	t_name = gc_test_name;
	va_start(ap, fmt);
	t_vfail(fmt, ap);
}

static char *space(unsigned i)
{
	return range + (size_t)i * GC_SPACE;
}

static void open_space(unsigned i)
{
	if (mprotect(space(i), GC_SPACE, PROT_READ | PROT_WRITE))
		gc_die("mprotect: %m");
	current = i;
	top = space(i);
}

void gc_heap_init(void)
{
	range = mmap(NULL, (size_t)GC_SPACES * GC_SPACE, PROT_NONE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (range == MAP_FAILED)
		gc_die("mmap of the heap's range: %m");
	open_space(0);
}

/* A new object in the current space: its memory is fresh, zeroed. */
static uint64_t *place(uint32_t nptrs, uint32_t nwords)
{
	struct gc_header *h = (struct gc_header *)top;
	size_t bytes = sizeof(*h) + (size_t)nwords * 8;

	if (top + bytes > space(current) + GC_SPACE)
		gc_die("the heap is full (%zu bytes live)", (size_t)(top - space(current)));
	top += bytes;
	h->nptrs = nptrs;
	h->nwords = nwords;
	return (uint64_t *)(h + 1);
}

static struct gc_header *header(uint64_t ref)
{
	return (struct gc_header *)(uintptr_t)ref - 1;
}

uint64_t *gc_alloc(uint64_t nptrs, uint64_t nwords)
{
	if (nptrs > nwords || nwords > GC_SPACE / 8)
		gc_die("gc_alloc(%llu, %llu)", (unsigned long long)nptrs,
		       (unsigned long long)nwords);
	if (gc_collect_on_alloc)
		safepoint_fn();
	return place((uint32_t)nptrs, (uint32_t)nwords);
}

void gc_fill(uint64_t *obj)
{
	struct gc_header *h = header((uint64_t)(uintptr_t)obj);

	if (!gc_is_object((uint64_t)(uintptr_t)obj))
		gc_die("gc_fill(%p): not an object", (void *)obj);
	for (uint32_t i = h->nptrs; i < h->nwords; i++)
		obj[i] = 100 + i;
}

/* Whether ref is an object's reference in space i, below end. */
static bool object_in(unsigned i, const char *end, uint64_t ref)
{
	const char *p = (const char *)(uintptr_t)ref;

	if (p < space(i) + sizeof(struct gc_header) || p >= end || (ref & 7))
		return false;
	/* Objects are laid end to end: walk them. */
	for (const char *o = space(i); o < end;) {
		const struct gc_header *h = (const struct gc_header *)o;

		if ((const char *)(h + 1) == p)
			return true;
		o += sizeof(*h) + (size_t)h->nwords * 8;
		if (o > p)
			return false;
	}
	return false;
}

bool gc_is_object(uint64_t ref)
{
	return object_in(current, top, ref);
}

void gc_flip(void)
{
	from = current;
	from_top = top;
	open_space((current + 1) % GC_SPACES);
	gc_stats.collections++;
}

uint64_t gc_forward(uint64_t ref)
{
	struct gc_header *h = header(ref);
	uint64_t *copy;

	if (!ref)
		return 0;
	if (!object_in(from, from_top, ref))
		gc_die("0x%llx is not the reference of an object of the space left",
		       (unsigned long long)ref);
	if (h->forward)
		return h->forward;
	copy = place(h->nptrs, h->nwords);
	memcpy(copy, h + 1, (size_t)h->nwords * 8);
	h->forward = (uint64_t)(uintptr_t)copy;
	gc_stats.moved++;
	return h->forward;
}

void gc_finish(void)
{
	/* Cheney: the copies' references, the copies they make, in order. */
	for (char *o = space(current); o < top;) {
		struct gc_header *h = (struct gc_header *)o;
		uint64_t *w = (uint64_t *)(h + 1);

		for (uint32_t i = 0; i < h->nptrs; i++)
			w[i] = gc_forward(w[i]);
		o += sizeof(*h) + (size_t)h->nwords * 8;
	}
	/* The old space: its memory back, its addresses a fault. */
	if (madvise(space(from), GC_SPACE, MADV_DONTNEED) ||
	    mprotect(space(from), GC_SPACE, PROT_NONE))
		gc_die("leaving the old space: %m");
}
