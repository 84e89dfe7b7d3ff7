// SPDX-License-Identifier: MIT
/*
 * The lookup index of the tables (index.h): a stable sort of the keys when
 * they are out of order, then their Eytzinger layout.
 *
 * The sort is an LSD radix sort on the 11-bit digits in which the keys
 * differ (the others cannot change the order): a PC or an ID varies in its
 * low 20 to 32 bits, so that is two or three passes over the keys, where
 * qsort of a million pointers with a comparator took most of a table's
 * build.  Being stable, it keeps equal keys in section order.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "format/index.h"

#define CACHE_LINE 64
/* Digits of 11 bits: 2,048 counters (8 KiB, on the stack) stay in the L1 cache. */
#define RADIX_BITS 11
#define RADIX (1u << RADIX_BITS)

int fl_keys_sort(struct fl_key *v, size_t n)
{
	uint32_t count[RADIX];	/* keys of each digit value, then where they go */
	struct fl_key *tmp, *src = v, *dst;
	uint64_t differ = 0;
	unsigned shift;
	size_t i;

	for (i = 1; i < n && v[i - 1].key <= v[i].key; i++)
		;
	if (i >= n)
		return 0;
	if (n > FL_INDEX_MAX)
		return -ENOMEM;
	for (i = 1; i < n; i++)
		differ |= v[i].key ^ v[0].key;
	tmp = malloc(n * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;

	dst = tmp;
	for (shift = 0; shift < 64; shift += RADIX_BITS) {
		uint32_t sum = 0, x;
		struct fl_key *t;

		if (!((differ >> shift) & (RADIX - 1)))
			continue;
		memset(count, 0, sizeof(count));
		for (i = 0; i < n; i++)
			count[(src[i].key >> shift) & (RADIX - 1)]++;
		for (x = 0; x < RADIX; x++) {
			uint32_t here = count[x];

			count[x] = sum;
			sum += here;
		}
		for (i = 0; i < n; i++)
			dst[count[(src[i].key >> shift) & (RADIX - 1)]++] = src[i];
		t = src;
		src = dst;
		dst = t;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
	free(tmp);
	return 0;
}

static uint64_t key_at(const uint64_t *keys, size_t stride, size_t i)
{
	return *(const uint64_t *)((const char *)keys + i * stride);
}

/* Aligned, so that 16 slots four levels down start a cache line. */
static void *alloc_slots(size_t n, size_t size)
{
	size_t bytes = ((n + 1) * size + CACHE_LINE - 1) & ~(size_t)(CACHE_LINE - 1);

	return aligned_alloc(CACHE_LINE, bytes);
}

/*
 * Lays out n keys in sorted order (key i of sorted, else of keys by stride,
 * with the value i) in Eytzinger order.  Sorted order is the in-order walk
 * of the tree: start at the leftmost node; the next is the leftmost node of
 * the right subtree, or else the nearest ancestor reached from its left
 * (k >> (trailing ones + 1)).
 */
static void lay_out(struct fl_index *ix, const struct fl_key *sorted,
		    const uint64_t *keys, size_t stride)
{
	size_t n = ix->n, i, k = 1;

	while (2 * k <= n)
		k *= 2;
	for (i = 0; i < n; i++) {
		uint64_t key = sorted ? sorted[i].key : key_at(keys, stride, i);
		uint32_t val = sorted ? sorted[i].val : (uint32_t)i;

		if (ix->narrow)
			ix->narrow[k] = (struct fl_slot32){ (uint32_t)(key - ix->base), val };
		else
			ix->wide[k] = (struct fl_slot64){ key, val, 0 };
		if (2 * k + 1 <= n) {
			k = 2 * k + 1;
			while (2 * k <= n)
				k *= 2;
		} else {
			k >>= __builtin_ffsll((long long)~k);
		}
	}
}

int fl_index_build(struct fl_index *ix, const uint64_t *keys, size_t stride, size_t n,
		   bool in_order)
{
	struct fl_key *sorted = NULL;
	uint64_t last;
	size_t i;
	int ret;

	memset(ix, 0, sizeof(*ix));
	if (n > FL_INDEX_MAX)
		return -ENOMEM;
	if (!in_order) {
		sorted = malloc(n * sizeof(*sorted));
		if (!sorted)
			return -ENOMEM;
		for (i = 0; i < n; i++)
			sorted[i] = (struct fl_key){ key_at(keys, stride, i), (uint32_t)i };
		ret = fl_keys_sort(sorted, n);
		if (ret < 0) {
			free(sorted);
			return ret;
		}
	}
	ix->n = n;
	if (n) {
		ix->base = sorted ? sorted[0].key : key_at(keys, stride, 0);
		last = sorted ? sorted[n - 1].key : key_at(keys, stride, n - 1);
	} else {
		last = 0;
	}
	if (last - ix->base <= UINT32_MAX)
		ix->narrow = alloc_slots(n, sizeof(*ix->narrow));
	else
		ix->wide = alloc_slots(n, sizeof(*ix->wide));
	if (!ix->narrow && !ix->wide) {
		free(sorted);
		return -ENOMEM;
	}
	lay_out(ix, sorted, keys, stride);
	free(sorted);
	return 0;
}

void fl_index_free(struct fl_index *ix)
{
	free(ix->narrow);
	free(ix->wide);
	memset(ix, 0, sizeof(*ix));
}

/*
 * The descent compares without branching (the next node is 2k or 2k + 1)
 * and prefetches the node's descendants four levels down (slots 16k to
 * 16k + 15), so that the misses of successive levels overlap.  When k has
 * gone past a leaf, its bits are the path taken: shifting off the right
 * turns taken after the last left one, and that one, gives the first key
 * >= the target (k == 0: there is none).  A prefetch address may lie past
 * the slots: it is computed as an integer, and a prefetch never faults.
 */
static inline size_t first_at_or_above(size_t k)
{
	return k >> __builtin_ffsll((long long)~k);
}

static inline void prefetch(const void *slots, size_t offset)
{
	__builtin_prefetch((const void *)((uintptr_t)slots + offset));
}

int fl_index_lower_bound(const struct fl_index *ix, uint64_t key, uint64_t *at,
			 uint32_t *val)
{
	size_t k = 1, n = ix->n;

	if (ix->narrow) {
		const struct fl_slot32 *s = ix->narrow;
		uint32_t x;

		if (key > ix->base && key - ix->base > UINT32_MAX)
			return 0;
		x = key > ix->base ? (uint32_t)(key - ix->base) : 0;
		while (k <= n) {
			prefetch(s, 16 * sizeof(*s) * k);
			prefetch(s, 16 * sizeof(*s) * k + CACHE_LINE);
			k = 2 * k + (s[k].key < x);
		}
		k = first_at_or_above(k);
		if (k == 0)
			return 0;
		*at = ix->base + s[k].key;
		*val = s[k].val;
		return 1;
	}
	if (ix->wide) {
		const struct fl_slot64 *s = ix->wide;

		while (k <= n) {
			for (size_t line = 0; line < 16 * sizeof(*s); line += CACHE_LINE)
				prefetch(s, 16 * sizeof(*s) * k + line);
			k = 2 * k + (s[k].key < key);
		}
		k = first_at_or_above(k);
		if (k == 0)
			return 0;
		*at = s[k].key;
		*val = s[k].val;
		return 1;
	}
	return 0;
}

int fl_index_find(const struct fl_index *ix, uint64_t key, uint32_t *val)
{
	uint64_t at;

	return fl_index_lower_bound(ix, key, &at, val) && at == key;
}
