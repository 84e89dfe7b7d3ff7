/* SPDX-License-Identifier: MIT */
/*
 * Unaligned, byte-order-aware reads for the format layer.  Callers check
 * bounds first; these only read.  memcpy keeps them free of alignment and
 * aliasing traps; the compiler turns each into one load.
 */
#ifndef FL_FORMAT_READ_H
#define FL_FORMAT_READ_H

#include <stdint.h>
#include <string.h>

static inline uint8_t rd8(const unsigned char *p)
{
	return p[0];
}

static inline uint16_t rd16(const unsigned char *p, int big)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return big ? __builtin_bswap16(v) : v;
}

static inline uint32_t rd32(const unsigned char *p, int big)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return big ? __builtin_bswap32(v) : v;
}

static inline uint64_t rd64(const unsigned char *p, int big)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return big ? __builtin_bswap64(v) : v;
}

/* Bytes left in a section of size bytes from pos (pos <= size). */
static inline uint64_t left(size_t size, size_t pos)
{
	return (uint64_t)size - (uint64_t)pos;
}

#endif /* FL_FORMAT_READ_H */
