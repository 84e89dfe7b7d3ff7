/* SPDX-License-Identifier: MIT */
/*
 * A module's stack map records by return address (smindex.h).
 *
 * The deoptimization entry looks up the record of its return address
 * once per deoptimization, and a stack walk once per frame, over every
 * registered module: at 10^6 records a binary search touches about 20
 * cache lines that are all cold when the lookups are random, so a module
 * keeps an open-addressing hash table instead, at most half full.  A slot
 * holds what a lookup returns besides the record's address (its function
 * and frame size), so that a lookup reads one slot line and not the
 * record; a large table asks for transparent huge pages, so that the
 * random lookups of a walk over many modules' frames do not each miss the
 * TLB as well.  Modules themselves are few: the table layer's snapshot
 * keeps them sorted by address and the lookup finds the module by binary
 * search (lookup.c in lib/deopt/); faultlined tries each module of a
 * process.
 *
 * The records are the format layer's parsed table's, which the index
 * keeps, their pc and function_address made runtime addresses in place
 * (table.h): a record costs the index its parsed form, a slot pair and a
 * place in the section order, no copy.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <faultline/format.h>

#include "format/diag.h"
#include "format/smindex.h"
#include "format/stackmap_functions.h"
#include "format/table.h"

struct slot {
	uint32_t key;		/* pc - base + 1; 0: empty */
	uint32_t index;		/* into rec */
	uint32_t offset;	/* pc - its function's address */
	uint32_t stack_size;	/* its function's, SLOT_STACK_SIZE_OTHER: see the record */
};

#define SLOT_STACK_SIZE_OTHER UINT32_MAX

/* A table this large asks for huge pages (the size of one, x86-64). */
#define HUGE_PAGE (2u << 20)

struct fl_smindex {
	uint64_t base;		/* the lowest record address */
	uint64_t limit;		/* the highest, plus 1 */
	uint32_t n;
	uint32_t mask;		/* slots - 1 (a power of 2) */
	unsigned shift;		/* 64 - log2(slots) */
	struct slot *slots;
	struct fl_stackmap *map;		/* the parsed table: records, locations */
	struct fl_stackmap_record *rec;		/* its records, placed at runtime addresses */
	uint32_t *placed;	/* the n records placed (v1's are not), section order */
};

/* Fibonacci hashing: offsets of return addresses share their low bits' patterns. */
static inline uint32_t slot_of(const struct fl_smindex *x, uint32_t key)
{
	return (uint32_t)(((uint64_t)key * 0x9E3779B97F4A7C15ull) >> x->shift) & x->mask;
}

const struct fl_stackmap_record *fl_smindex_find(const struct fl_smindex *x, uint64_t pc,
					       uint64_t *function, uint64_t *stack_size)
{
	uint32_t key, i;

	if (pc < x->base || pc >= x->limit)
		return NULL;
	key = (uint32_t)(pc - x->base) + 1;
	/* Never full (at most half): an empty slot ends every probe. */
	for (i = slot_of(x, key); x->slots[i].key; i = (i + 1) & x->mask) {
		const struct slot *sl = &x->slots[i];
		const struct fl_stackmap_record *r;

		if (sl->key != key)
			continue;
		r = &x->rec[sl->index];
		*function = pc - sl->offset;
		*stack_size = sl->stack_size == SLOT_STACK_SIZE_OTHER ? r->stack_size :
			      sl->stack_size;
		return r;
	}
	return NULL;
}

void fl_smindex_span(const struct fl_smindex *x, uint64_t *lo, uint64_t *hi)
{
	*lo = x->base;
	*hi = x->limit;
}

uint32_t fl_smindex_count(const struct fl_smindex *x)
{
	return x->n;
}

const struct fl_stackmap_record *fl_smindex_record(const struct fl_smindex *x, uint32_t i)
{
	return &x->rec[x->placed[i]];
}

static void slots_free(struct fl_smindex *x)
{
	size_t bytes = ((size_t)x->mask + 1) * sizeof(*x->slots);

	if (x->slots && bytes >= HUGE_PAGE)
		munmap(x->slots, bytes);
	else
		free(x->slots);
}

void fl_smindex_free(struct fl_smindex *x)
{
	if (!x)
		return;
	slots_free(x);
	free(x->placed);
	fl_stackmap_free(x->map);
	free(x);
}

/*
 * Zeroed slots: a table of a huge page or more is a mapping of its own
 * (a power of 2, so a whole number of huge pages) with MADV_HUGEPAGE
 * (transparent huge pages are often "madvise" only); a smaller one is
 * malloc's.
 */
static struct slot *slots_alloc(size_t bytes)
{
	void *p;

	if (bytes < HUGE_PAGE)
		return calloc(1, bytes);
	/* Twice the size, to cut a huge-page-aligned table out of it. */
	p = mmap(NULL, bytes + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	uintptr_t start = ((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
	uintptr_t end = (uintptr_t)p + bytes + HUGE_PAGE;

	if (start > (uintptr_t)p)
		munmap(p, start - (uintptr_t)p);
	if (end > start + bytes)
		munmap((void *)(start + bytes), end - (start + bytes));
	/* Advice only: without huge pages the table works the same. */
	madvise((void *)start, bytes, MADV_HUGEPAGE);
	return (struct slot *)start;
}

/* The slots for x's records; a PC twice keeps its first record (section order). */
static int index_build(struct fl_smindex *x)
{
	unsigned bits = 1;

	while ((1ull << bits) < 2ull * x->n)
		bits++;
	x->mask = (uint32_t)((1ull << bits) - 1);
	x->shift = 64 - bits;
	x->slots = slots_alloc(((size_t)x->mask + 1) * sizeof(*x->slots));
	if (!x->slots)
		return -ENOMEM;
	for (uint32_t k = 0; k < x->n; k++) {
		const struct fl_stackmap_record *rec = &x->rec[x->placed[k]];
		uint32_t key = (uint32_t)(rec->pc - x->base) + 1, i;

		for (i = slot_of(x, key); x->slots[i].key && x->slots[i].key != key;
		     i = (i + 1) & x->mask)
			;
		if (!x->slots[i].key)
			x->slots[i] = (struct slot){
				.key = key, .index = x->placed[k], .offset = rec->instruction_offset,
				.stack_size = rec->stack_size < SLOT_STACK_SIZE_OTHER ?
					      (uint32_t)rec->stack_size : SLOT_STACK_SIZE_OTHER,
			};
	}
	return 0;
}

static bool code_contains(const struct fl_smindex_code *c, uint64_t pc)
{
	return c->contains ? c->contains(c->arg, pc) : pc >= c->lo && pc < c->hi;
}

int fl_smindex_build(const char *what, const void *data, size_t size, uint32_t flags,
		     const uint64_t *funcs, size_t num_funcs, const struct fl_smindex_code *code,
		     struct fl_smindex **out, struct fl_diag *diag)
{
	struct fl_sm_functions f = { 0 };
	struct fl_smindex *x = calloc(1, sizeof(*x));
	size_t count;
	int err;

	*out = NULL;
	if (!x)
		return -ENOMEM;
	err = fl_sm_functions_walk(data, size, flags, &f, diag);
	if (!err)
		err = fl_stackmap_parse(data, size, flags, &x->map, diag);
	if (err)
		goto fail;
	if (!funcs) {
		funcs = f.stored;
		num_funcs = f.n;
	}
	count = fl_stackmap_count(x->map);
	x->rec = fl_stackmap_records_to_place(x->map);
	x->placed = calloc(count ? count : 1, sizeof(*x->placed));
	if (!x->placed) {
		err = -ENOMEM;
		goto fail;
	}
	x->base = UINT64_MAX;
	for (size_t i = 0; i < count; i++) {
		struct fl_stackmap_record *r = &x->rec[i];
		size_t fn;
		uint64_t pc;

		if (r->function == FL_NO_FUNCTION)
			continue;
		fn = fl_sm_function_of(&f, r);
		if (fn >= num_funcs) {
			err = fl_diag_set(diag, -EINVAL, FL_STACKMAP_SECTION, r->table,
					  "record %u: function %u unknown", r->index, r->function);
			goto fail;
		}
		pc = funcs[fn] + r->instruction_offset;
		/*
		 * In the code, or right after its last byte: the return
		 * address of a call that ends it (a deoptimization in the
		 * last function of JIT code, nothing after it).
		 */
		if (!code_contains(code, pc) && !(pc > 0 && code_contains(code, pc - 1))) {
			err = fl_diag_set(diag, -EINVAL, FL_STACKMAP_SECTION, r->table,
					  "record %u (ID %llu): address 0x%llx outside %s's code",
					  r->index, (unsigned long long)r->id, (unsigned long long)pc,
					  what);
			goto fail;
		}
		r->function_address = funcs[fn];
		r->pc = pc;
		x->placed[x->n] = (uint32_t)i;
		if (pc < x->base)
			x->base = pc;
		if (pc >= x->limit)
			x->limit = pc + 1;
		x->n++;
	}
	if (x->n == 0) {
		fl_smindex_free(x);
		x = NULL;
		goto out;
	}
	if (x->limit - x->base >= UINT32_MAX) {
		err = fl_diag_say(diag, -EINVAL, "%s: %s: records spread over more than 4 GiB",
				  what, FL_STACKMAP_SECTION);
		goto fail;
	}
	err = index_build(x);
	if (err)
		goto fail;
out:
	fl_sm_functions_free(&f);
	*out = x;
	return 0;
fail:
	fl_sm_functions_free(&f);
	fl_smindex_free(x);
	return err;
}

