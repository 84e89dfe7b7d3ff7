/* SPDX-License-Identifier: MIT */
/*
 * Hand-made sections for "JIT code" that is a static buffer of the test
 * program: a one-record stack map, and .eh_frame bytes (a CIE, FDEs, the
 * terminator) built where they are registered from, since their
 * PC-relative pointers depend on it.
 */
#ifndef FL_TEST_DEOPT_HANDMADE_H
#define FL_TEST_DEOPT_HANDMADE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/*
 * A v3 stack map of 64 bytes: one function at code_start (stack size 16),
 * one record (ID 7) 4 bytes into it, no locations.
 */
static inline void map_one_record(uint8_t m[64], uint64_t code_start)
{
	memset(m, 0, 64);
	m[0] = 3;
	m[4] = 1;		/* NumFunctions */
	m[12] = 1;		/* NumRecords */
	memcpy(m + 16, &code_start, 8);
	m[24] = 16;		/* StackSize */
	m[32] = 1;		/* RecordCount */
	m[40] = 7;		/* ID */
	m[48] = 4;		/* InstrOffset */
	/* flags, NumLocations 0; at 56 padding, NumLiveOuts 0; 64 bytes */
}

/* An .eh_frame being built, at its runtime address. */
struct eh {
	uint8_t b[512];
	size_t n;
	bool absptr;	/* the last CIE's FDE pointers: absolute 8-byte ones */
};

static inline void eh_put(struct eh *e, uint64_t v, size_t len)
{
	memcpy(e->b + e->n, &v, len);
	e->n += len;
}

static inline void eh_bytes(struct eh *e, const void *p, size_t len)
{
	if (len)
		memcpy(e->b + e->n, p, len);
	e->n += len;
}

/* Ends the record whose length field is at start: nops to 4 bytes, then its length. */
static inline void eh_end_record(struct eh *e, size_t start)
{
	uint32_t len;

	while ((e->n - start) % 4)
		eh_put(e, 0, 1);	/* DW_CFA_nop */
	len = (uint32_t)(e->n - start - 4);
	memcpy(e->b + start, &len, 4);
}

/*
 * A CIE; returns its offset.  aug NULL: "zR" with enc as the FDEs' pointer
 * encoding; else that augmentation string, with no augmentation data.
 * Initial instructions: DW_CFA_def_cfa rsp+8; DW_CFA_offset r16 (the
 * return address) at cfa-8.
 */
static inline size_t eh_cie(struct eh *e, uint8_t version, const char *aug, uint8_t enc)
{
	static const uint8_t instr[] = { 0x0c, 7, 8, 0x90, 1 };
	size_t start = e->n;

	e->absptr = !aug && enc == 0x00;
	eh_put(e, 0, 4);
	eh_put(e, 0, 4);		/* CIE id */
	eh_put(e, version, 1);
	eh_bytes(e, aug ? aug : "zR", strlen(aug ? aug : "zR") + 1);
	eh_put(e, 1, 1);		/* code alignment */
	eh_put(e, 0x78, 1);		/* data alignment -8 */
	eh_put(e, 16, 1);		/* return address column */
	if (!aug) {
		eh_put(e, 1, 1);	/* augmentation data: 1 byte */
		eh_put(e, enc, 1);
	} else if (aug[0] == 'z') {
		eh_put(e, 0, 1);	/* no augmentation data */
	}
	eh_bytes(e, instr, sizeof(instr));
	eh_end_record(e, start);
	return start;
}

/*
 * An FDE of the CIE at cie_at (the last one made) over [lo, lo + range),
 * with instr: its pointers absolute 8-byte ones when the CIE says absptr,
 * else PC-relative 4-byte ones (also when it says data-relative).
 */
static inline void eh_fde(struct eh *e, size_t cie_at, uint64_t lo, uint32_t range,
			  const uint8_t *instr, size_t len)
{
	size_t start = e->n;
	uint64_t field;

	eh_put(e, 0, 4);
	eh_put(e, (uint32_t)(e->n - cie_at), 4);	/* back to the CIE */
	field = (uint64_t)(uintptr_t)(e->b + e->n);
	if (e->absptr) {
		eh_put(e, lo, 8);
		eh_put(e, range, 8);
	} else {
		eh_put(e, (uint32_t)(int32_t)(lo - field), 4);
		eh_put(e, range, 4);
	}
	eh_put(e, 0, 1);		/* no augmentation data */
	eh_bytes(e, instr, len);
	eh_end_record(e, start);
}

/* A well-formed .eh_frame: one "zR" CIE (pcrel sdata4), one FDE over [lo, lo + range), the terminator. */
static inline void eh_simple(struct eh *e, uint64_t lo, uint32_t range)
{
	size_t c;

	e->n = 0;
	c = eh_cie(e, 1, NULL, 0x1b);
	eh_fde(e, c, lo, range, NULL, 0);
	eh_put(e, 0, 4);
}

#endif /* FL_TEST_DEOPT_HANDMADE_H */
