/* SPDX-License-Identifier: MIT */
/*
 * A byte-buffer builder for hand-made fault map and stack map vectors:
 * little- or big-endian puts, alignment relative to a table start, patches.
 */
#ifndef FL_TEST_VEC_H
#define FL_TEST_VEC_H

#include <stdint.h>
#include <string.h>

struct vec {
	unsigned char buf[1 << 16];
	size_t len;
	int big;
	size_t table_start;
};

static inline void vec_init(struct vec *v, int big)
{
	memset(v, 0, sizeof(*v));
	v->big = big;
}

static inline void put_n(struct vec *v, uint64_t x, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		unsigned shift = v->big ? 8 * (n - 1 - i) : 8 * i;

		v->buf[v->len++] = (unsigned char)(x >> shift);
	}
}

static inline void put8(struct vec *v, uint64_t x) { put_n(v, x, 1); }
static inline void put16(struct vec *v, uint64_t x) { put_n(v, x, 2); }
static inline void put32(struct vec *v, uint64_t x) { put_n(v, x, 4); }
static inline void put64(struct vec *v, uint64_t x) { put_n(v, x, 8); }

/* Pads with zeros to a multiple of 8 from the current table start. */
static inline void pad8(struct vec *v)
{
	while ((v->len - v->table_start) % 8)
		v->buf[v->len++] = 0;
}

/* Overwrites n bytes at off with x in the vector's byte order. */
static inline void patch_n(struct vec *v, size_t off, uint64_t x, unsigned n)
{
	size_t len = v->len;

	v->len = off;
	put_n(v, x, n);
	v->len = len;
}

#endif /* FL_TEST_VEC_H */
