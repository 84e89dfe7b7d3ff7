/* SPDX-License-Identifier: MIT */
/*
 * Internal to lib/format/: the readers of .eh_frame's fields that the
 * checker (ehframe.c) and the call frame interpreter (cfi.c) share.  Pure:
 * each reads only [data + pos, data + end).
 */
#ifndef FL_FORMAT_EHREAD_H
#define FL_FORMAT_EHREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/read.h"

/* DW_EH_PE_*: a pointer's format (low nibble) and how it applies (0x70). */
enum {
	PE_ABSPTR = 0x00, PE_ULEB128 = 0x01, PE_UDATA2 = 0x02, PE_UDATA4 = 0x03,
	PE_UDATA8 = 0x04, PE_SLEB128 = 0x09, PE_SDATA2 = 0x0a, PE_SDATA4 = 0x0b,
	PE_SDATA8 = 0x0c,
	PE_PCREL = 0x10, PE_APPLICATION = 0x70, PE_INDIRECT = 0x80, PE_OMIT = 0xff,
};

/* A run of bytes being read: [pos, end) of the section. */
struct rd {
	const unsigned char *data;
	size_t pos;
	size_t end;
};

static inline bool u8(struct rd *r, uint8_t *v)
{
	if (r->pos >= r->end)
		return false;
	*v = r->data[r->pos++];
	return true;
}

static inline bool skip(struct rd *r, uint64_t n)
{
	if (n > r->end - r->pos)
		return false;
	r->pos += (size_t)n;
	return true;
}

/* LEB128 of at most 10 bytes (64 bits). */
static inline bool leb(struct rd *r, bool sign, uint64_t *v)
{
	uint64_t x = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (shift >= 70 || !u8(r, &b))
			return false;
		if (shift < 64)
			x |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (sign && shift < 64 && (b & 0x40))
		x |= ~0ull << shift;
	*v = x;
	return true;
}

static inline bool uleb(struct rd *r, uint64_t *v)
{
	return leb(r, false, v);
}

/*
 * Whether an unwinder reads a pointer of encoding enc with what it has: a
 * known format, applied as it is or relative to its own address (text,
 * data and function relative need a base it does not have; an indirect
 * or aligned pointer is refused as well).
 */
static inline bool readable(uint8_t enc)
{
	switch (enc & 0x0f) {
	case PE_ABSPTR: case PE_ULEB128: case PE_UDATA2: case PE_UDATA4: case PE_UDATA8:
	case PE_SLEB128: case PE_SDATA2: case PE_SDATA4: case PE_SDATA8:
		break;
	default:
		return false;
	}
	return (enc & ~(0x0f | PE_APPLICATION)) == 0 &&
	       ((enc & PE_APPLICATION) == 0 || (enc & PE_APPLICATION) == PE_PCREL);
}

/*
 * Reads a pointer of encoding enc (readable) at r, PC-relative ones
 * relative to the runtime address addr of the section.  Returns false
 * when the record ends first.
 */
static inline bool pointer(struct rd *r, uint8_t enc, uint64_t addr, uint64_t *v)
{
	uint64_t at = addr + r->pos, x;
	size_t n;

	switch (enc & 0x0f) {
	case PE_UDATA2: case PE_SDATA2: n = 2; break;
	case PE_UDATA4: case PE_SDATA4: n = 4; break;
	case PE_ULEB128: case PE_SLEB128: n = 0; break;
	default: n = 8; break;
	}
	if (n == 0) {
		if (!leb(r, (enc & 0x0f) == PE_SLEB128, &x))
			return false;
	} else {
		if (n > r->end - r->pos)
			return false;
		x = n == 8 ? rd64(r->data + r->pos, 0) : n == 4 ? rd32(r->data + r->pos, 0) :
		    rd16(r->data + r->pos, 0);
		if ((enc & 0x0f) == PE_SDATA4)
			x = (uint64_t)(int64_t)(int32_t)x;
		else if ((enc & 0x0f) == PE_SDATA2)
			x = (uint64_t)(int64_t)(int16_t)x;
		r->pos += n;
	}
	*v = (enc & PE_APPLICATION) == PE_PCREL ? at + x : x;
	return true;
}

#endif /* FL_FORMAT_EHREAD_H */
