/* SPDX-License-Identifier: MIT */
/*
 * The lookup index of the format layer's tables: 64-bit keys (PCs, stack
 * map IDs), each with a 32-bit value (the index of its entry), searched by
 * exact key.
 *
 * The keys are kept apart from the entries, sorted, in the Eytzinger layout
 * (the order of a breadth-first walk of the implicit binary search tree:
 * the root at 1, the children of k at 2k and 2k + 1), each beside its
 * value.  A search reads only the index, never an entry, and the 16 slots
 * four levels below the one it is at are contiguous, so it prefetches them
 * while it compares.  Keys that span less than 4 GiB (the PCs of a module,
 * most IDs) are stored as 32-bit offsets from the smallest: 8-byte slots,
 * 16 of them two cache lines.  At a million keys a binary search over
 * pointers to the entries waited for two cache misses per level; this waits
 * for about two per lookup.
 *
 * Built once, then read by any number of threads; lookups allocate nothing
 * and are async-signal-safe.
 */
#ifndef FL_FORMAT_INDEX_H
#define FL_FORMAT_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A key and its value, for fl_keys_sort. */
struct fl_key {
	uint64_t key;
	uint32_t val;
};

struct fl_slot32 {
	uint32_t key;		/* key - base */
	uint32_t val;
};

struct fl_slot64 {
	uint64_t key;
	uint32_t val;
	uint32_t unused;
};

struct fl_index {
	size_t n;
	uint64_t base;			/* the smallest key */
	struct fl_slot32 *narrow;	/* [1..n] when the keys span < 2^32 */
	struct fl_slot64 *wide;		/* [1..n] otherwise */
};

/* The most keys an index holds: values are 32-bit. */
#define FL_INDEX_MAX UINT32_MAX

/*
 * Sorts v[0..n) by key, stably: equal keys keep their order.  Input already
 * in order costs one pass.  Returns 0, or -ENOMEM (also for more than
 * FL_INDEX_MAX keys out of order).  Thread-safe.
 */
int fl_keys_sort(struct fl_key *v, size_t n);

/*
 * Builds ix over n keys in section order, key i at (char *)keys + i *
 * stride (a uint64_t), whose value is i.  Equal keys: a lookup finds the
 * first.  in_order says that the keys do not go down (as LLVM writes PCs;
 * the builders see it while they fill in): they are laid out as they are;
 * others are sorted first.  Returns 0, or -ENOMEM (also for more than
 * FL_INDEX_MAX keys).  Thread-safe.
 */
int fl_index_build(struct fl_index *ix, const uint64_t *keys, size_t stride, size_t n,
		   bool in_order);

/* Frees what fl_index_build allocated (a zeroed ix: nothing). */
void fl_index_free(struct fl_index *ix);

/*
 * Returns 1 with *at set to the first key (in sorted order) that is key or
 * above and *val to its value, or 0 when every key is below key.
 * Thread-safe; async-signal-safe.
 */
int fl_index_lower_bound(const struct fl_index *ix, uint64_t key, uint64_t *at,
			 uint32_t *val);

/*
 * Returns 1 with *val set to the value of the first key equal to key, or 0
 * when there is none.  Thread-safe; async-signal-safe.
 */
int fl_index_find(const struct fl_index *ix, uint64_t key, uint32_t *val);

#endif /* FL_FORMAT_INDEX_H */
