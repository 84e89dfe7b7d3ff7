/* SPDX-License-Identifier: MIT */
/*
 * Stub memory (stubs.h): pages of executable memory mapped where the
 * healing plans need them, cut in 16-byte chunks, each page with a bitmap
 * of the chunks taken.  A stub may start at any byte (a punned jump may
 * fix its address exactly) but never crosses its page's end.
 *
 * Where a new page goes: in a hole of the address space (no mapping of
 * /proc/self/maps, none of ours) that the window reaches, as near the
 * code as the window allows, so that stubs of one module share pages.
 * Not within STACK_ROOM below a stack (its growth) nor HEAP_ROOM after the
 * heap (brk's), unless the window leaves no other choice.
 *
 * W^X: a new page is written while it is only writable, then made
 * executable, before any jump to it exists.  A page that already holds
 * stubs may be running them: it is made writable and executable for the
 * write, never unexecutable (as patch.c does with code).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "patch/heal_plan.h"
#include "patch/stubs.h"

#define CHUNK 16u
#define STACK_ROOM (8ull << 20)
#define HEAP_ROOM (64ull << 20)

struct stub_page {
	struct stub_page *next;
	uint64_t addr;
	size_t used;		/* chunks taken */
	uint64_t *taken;	/* a bit per chunk */
};

static struct stub_page *pages;

static uint64_t page_size(void)
{
	return (uint64_t)sysconf(_SC_PAGESIZE);
}

static struct stub_page *page_of(uint64_t a)
{
	uint64_t base = a & ~(page_size() - 1);

	for (struct stub_page *p = pages; p; p = p->next)
		if (p->addr == base)
			return p;
	return NULL;
}

static bool chunk_taken(const struct stub_page *p, size_t c)
{
	return p->taken[c / 64] >> (c % 64) & 1;
}

/* Whether [at, at + size) is free in page p (and within it). */
static bool room(const struct stub_page *p, uint64_t at, size_t size)
{
	uint64_t off = at - p->addr;

	if (off + size > page_size())
		return false;
	for (size_t c = off / CHUNK; c <= (off + size - 1) / CHUNK; c++)
		if (chunk_taken(p, c))
			return false;
	return true;
}

static void mark(struct stub_page *p, uint64_t at, size_t size, bool take)
{
	uint64_t off = at - p->addr;

	for (size_t c = off / CHUNK; c <= (off + size - 1) / CHUNK; c++) {
		if (take)
			p->taken[c / 64] |= 1ull << (c % 64);
		else
			p->taken[c / 64] &= ~(1ull << (c % 64));
		p->used += take ? 1 : (size_t)-1;
	}
}

/* The first place in p, in [lo, hi], with room for size bytes. */
static bool find_in_page(const struct stub_page *p, uint64_t lo, uint64_t hi, size_t size,
			 uint64_t *at)
{
	uint64_t end = p->addr + page_size();
	uint64_t a = lo > p->addr ? lo : p->addr;

	while (a <= hi && a + size <= end) {
		if (room(p, a, size)) {
			*at = a;
			return true;
		}
		/* The next chunk boundary. */
		a = (a / CHUNK + 1) * CHUNK;
	}
	return false;
}

/* Whether the page at a is free to map: no mapping there, and none of ours. */
static bool hole(const struct fl_maps *maps, uint64_t a, bool strict)
{
	uint64_t pg = page_size();

	for (size_t i = 0; i < maps->n; i++) {
		const struct fl_mapping *m = &maps->m[i];
		uint64_t lo = m->start, hi = m->end;

		if (strict && m->stack)
			lo = lo > STACK_ROOM ? lo - STACK_ROOM : 0;
		if (strict && m->heap)
			hi += HEAP_ROOM;
		if (a < hi && lo < a + pg)
			return false;
	}
	return !page_of(a);
}

/*
 * A new page for a stub in [lo, hi], the one nearest near: looks at the
 * pages from near's outwards, first those the window allows, on the
 * holes' edges (where a hole starts or ends).
 */
static bool find_new(const struct fl_maps *maps, uint64_t lo, uint64_t hi, size_t size,
		     uint64_t near, bool strict, uint64_t *at)
{
	uint64_t pg = page_size(), best = 0, best_dist = UINT64_MAX;
	uint64_t first = lo & ~(pg - 1), last = hi & ~(pg - 1);
	/* Candidates: the pages by near, and by each mapping's edges. */
	uint64_t cand[2 + 2 * 512];
	size_t n = 0;

	cand[n++] = near & ~(pg - 1);
	cand[n++] = first;
	for (size_t i = 0; i < maps->n && n + 2 <= sizeof(cand) / sizeof(cand[0]); i++) {
		cand[n++] = maps->m[i].end;
		cand[n++] = maps->m[i].start - pg;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t p = cand[i], s, dist;

		if (p < first)
			p = first;
		if (p > last)
			p = last;
		s = p > lo ? p : lo;
		if (s > hi || s + size > p + pg || !hole(maps, p, strict))
			continue;
		dist = p > near ? p - near : near - p;
		if (dist < best_dist) {
			best_dist = dist;
			best = s;
		}
	}
	if (best_dist == UINT64_MAX)
		return false;
	*at = best;
	return true;
}

bool fl_stubs_find(const struct fl_maps *maps, uint64_t lo, uint64_t hi, size_t size,
		   uint64_t near, uint64_t *at)
{
	if (size == 0 || size > page_size() || lo > hi)
		return false;
	for (struct stub_page *p = pages; p; p = p->next)
		if (p->addr + page_size() > lo && p->addr <= hi &&
		    find_in_page(p, lo, hi, size, at))
			return true;
	return find_new(maps, lo, hi, size, near, true, at) ||
	       find_new(maps, lo, hi, size, near, false, at);
}

int fl_stubs_take(uint64_t at, const uint8_t *bytes, size_t size)
{
	uint64_t pg = page_size(), base = at & ~(pg - 1);
	struct stub_page *p = page_of(at);
	void *m;

	if (p) {
		if (!room(p, at, size))
			return -EEXIST;
		if (mprotect((void *)(uintptr_t)base, pg, PROT_READ | PROT_WRITE | PROT_EXEC) != 0)
			return -errno;
		memcpy((void *)(uintptr_t)at, bytes, size);
		mprotect((void *)(uintptr_t)base, pg, PROT_READ | PROT_EXEC);
		mark(p, at, size, true);
		return 0;
	}
	p = calloc(1, sizeof(*p));
	if (p)
		p->taken = calloc((pg / CHUNK + 63) / 64, sizeof(*p->taken));
	if (!p || !p->taken) {
		free(p);
		return -ENOMEM;
	}
	m = mmap((void *)(uintptr_t)base, pg, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (m == MAP_FAILED || m != (void *)(uintptr_t)base) {
		int err = m == MAP_FAILED ? -errno : -EEXIST;

		/* A kernel before 4.17 takes the flag for a hint. */
		if (m != MAP_FAILED)
			munmap(m, pg);
		free(p->taken);
		free(p);
		return err;
	}
	memcpy((void *)(uintptr_t)at, bytes, size);
	if (mprotect(m, pg, PROT_READ | PROT_EXEC) != 0) {
		int err = -errno;

		munmap(m, pg);
		free(p->taken);
		free(p);
		return err;
	}
	p->addr = base;
	mark(p, at, size, true);
	p->next = pages;
	pages = p;
	return 0;
}

void fl_stubs_free(uint64_t at, size_t size)
{
	struct stub_page **pp, *p;

	for (pp = &pages; (p = *pp); pp = &p->next)
		if (p->addr == (at & ~(page_size() - 1)))
			break;
	if (!p)
		return;
	mark(p, at, size, false);
	if (p->used)
		return;
	*pp = p->next;
	munmap((void *)(uintptr_t)p->addr, page_size());
	free(p->taken);
	free(p);
}
