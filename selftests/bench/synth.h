/* SPDX-License-Identifier: MIT */
/*
 * Synthetic sections for the benchmarks: a fault map and a v3 stack map of
 * 10 entries per function (1,000,000 entries each at SYNTH_FUNCTIONS
 * functions, the scaling table's other sizes at fewer), built in memory,
 * always the same bytes for the same number of functions.
 *
 *  fault map   one table, functions x 10 faulting PCs; kinds in the
 *              proportion LLVM emits them in real code (mostly loads:
 *              6 FaultingLoad, 3 FaultingStore, 1 FaultingLoadStore)
 *  stack map   one v3 table, functions x 10 records, 16 large
 *              constants, stack sizes from 8 to 504 bytes (every 100th
 *              function has a dynamic frame); the records, in turn:
 *                5 of 8  call sites (stackmap / statepoint): 2-6 locations,
 *                        Register, Indirect [rsp/rbp + off], Direct, Constant
 *                2 of 8  deoptimization exits: the 3 leading Constants, then
 *                        0-5 deopt values, one of them a ConstantIndex
 *                1 of 8  patch points: 1-4 locations, 1-3 live-outs
 *              which averages 4.6 locations and 0.25 live-outs a record.
 * One table each, so that LLVM's tools (which print only the first table)
 * print all of it.
 */
#ifndef FL_BENCH_SYNTH_H
#define FL_BENCH_SYNTH_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SYNTH_FUNCTIONS 100000u
#define SYNTH_PER_FUNCTION 10u
#define SYNTH_ENTRIES (SYNTH_FUNCTIONS * SYNTH_PER_FUNCTION)
#define SYNTH_CONSTANTS 16u

struct synth_buf {
	unsigned char *p;
	size_t len, cap, table_start;
};

static inline void synth_put(struct synth_buf *b, uint64_t v, unsigned n)
{
	unsigned i;

	if (b->len + n > b->cap) {
		b->cap = b->cap ? 2 * b->cap : 1 << 20;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			abort();
	}
	for (i = 0; i < n; i++)
		b->p[b->len++] = (unsigned char)(v >> (8 * i));	/* little-endian */
}

static inline void synth_pad8(struct synth_buf *b)
{
	while ((b->len - b->table_start) % 8)
		synth_put(b, 0, 1);
}

static inline uint64_t synth_function_address(uint32_t f)
{
	return 0x401000 + (uint64_t)f * 0x200;
}

static inline void synth_faultmap(struct synth_buf *b, uint32_t functions)
{
	static const uint8_t kinds[10] = { 1, 1, 3, 1, 2, 1, 3, 1, 3, 1 };
	uint32_t f, i;

	memset(b, 0, sizeof(*b));
	synth_put(b, 1, 1);
	synth_put(b, 0, 1);
	synth_put(b, 0, 2);
	synth_put(b, functions, 4);
	for (f = 0; f < functions; f++) {
		synth_put(b, synth_function_address(f), 8);
		synth_put(b, SYNTH_PER_FUNCTION, 4);
		synth_put(b, 0, 4);
		for (i = 0; i < SYNTH_PER_FUNCTION; i++) {
			synth_put(b, kinds[(f + i) % 10], 4);
			synth_put(b, 4 + 40 * i, 4);		/* faulting PC offset */
			synth_put(b, 420 + 6 * i, 4);		/* handler PC offset */
		}
	}
}

/* A v3 location: u8 Kind, u8 0, u16 Size, u16 DwarfReg, u16 0, i32 Offset. */
static inline void synth_loc(struct synth_buf *b, uint8_t kind, uint16_t size,
			     uint16_t reg, int32_t offset)
{
	synth_put(b, kind, 1);
	synth_put(b, 0, 1);
	synth_put(b, size, 2);
	synth_put(b, reg, 2);
	synth_put(b, 0, 2);
	synth_put(b, (uint32_t)offset, 4);
}

static inline void synth_stackmap(struct synth_buf *b, uint32_t functions)
{
	/* DWARF registers LLVM uses for live values: rbx, r12-r15, rbp, rsp. */
	static const uint16_t regs[] = { 3, 12, 13, 14, 15, 6, 7 };
	uint32_t f, r, i;

	memset(b, 0, sizeof(*b));
	synth_put(b, 3, 1);
	synth_put(b, 0, 1);
	synth_put(b, 0, 2);
	synth_put(b, functions, 4);
	synth_put(b, SYNTH_CONSTANTS, 4);
	synth_put(b, functions * SYNTH_PER_FUNCTION, 4);
	for (f = 0; f < functions; f++) {
		synth_put(b, synth_function_address(f), 8);
		synth_put(b, f % 100 == 99 ? UINT64_MAX : 8 + 16 * (uint64_t)(f % 32), 8);
		synth_put(b, SYNTH_PER_FUNCTION, 8);
	}
	for (i = 0; i < SYNTH_CONSTANTS; i++)
		synth_put(b, 0x100000000ull + 0x1000 * i, 8);

	for (r = 0; r < functions * SYNTH_PER_FUNCTION; r++) {
		uint32_t kind = r % 8, nloc, nlo = 0;

		if (kind < 5)
			nloc = 2 + r % 5;
		else if (kind < 7)
			nloc = 3 + r % 6;
		else
			nloc = 1 + r % 4;
		if (kind == 7)
			nlo = 1 + r % 3;

		synth_put(b, kind < 5 ? r / 8 : kind < 7 ? 0xABCDEF0Fu : 1000 + r % 64, 8);
		synth_put(b, 16 + 24 * (r % SYNTH_PER_FUNCTION), 4);
		synth_put(b, 0, 2);
		synth_put(b, nloc, 2);
		for (i = 0; i < nloc; i++) {
			uint16_t reg = regs[(r + i) % 5];

			if (kind >= 5 && kind < 7 && i < 3) {
				/* calling convention, flags, number of deopt values */
				synth_loc(b, 4, 8, 0, i == 2 ? (int32_t)nloc - 3 : 0);
				continue;
			}
			switch ((r + 3 * i) % 6) {
			case 0:
			case 1:
				synth_loc(b, 1, 8, reg, 0);
				break;
			case 2:
				synth_loc(b, 3, 8, 7, 8 * (int32_t)(i + 1));
				break;
			case 3:
				synth_loc(b, 3, 8, 6, -8 * (int32_t)(i + 2));
				break;
			case 4:
				synth_loc(b, 2, 8, 7, 16 + 8 * (int32_t)i);
				break;
			default:
				if (kind >= 5 && kind < 7)
					synth_loc(b, 5, 8, 0, (int32_t)(r % SYNTH_CONSTANTS));
				else
					synth_loc(b, 4, 8, 0, (int32_t)(r % 1000) - 500);
			}
		}
		synth_pad8(b);
		synth_put(b, 0, 2);
		synth_put(b, nlo, 2);
		for (i = 0; i < nlo; i++) {
			synth_put(b, regs[i], 2);
			synth_put(b, 0, 1);
			synth_put(b, 8, 1);
		}
		synth_pad8(b);
	}
}

#endif /* FL_BENCH_SYNTH_H */
