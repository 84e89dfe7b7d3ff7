/* SPDX-License-Identifier: MIT */
/* Hand-built stack map tables, versions 1 to 3, in either byte order. */
#ifndef FL_TEST_SMVEC_H
#define FL_TEST_SMVEC_H

#include "vec.h"

struct sm_func {
	uint64_t addr, stack_size, record_count;
};

struct sm_loc {
	uint8_t kind;
	uint16_t size, reg;
	int32_t offset;
};

struct sm_live_out {
	uint16_t reg;
	uint8_t size;
};

struct sm_rec {
	uint64_t id;
	uint32_t offset;
	uint16_t nloc;
	const struct sm_loc *locs;
	uint16_t nlo;
	const struct sm_live_out *los;
};

struct sm_spec {
	uint8_t version;
	uint32_t nfunc, nconst, nrec;
	const struct sm_func *funcs;
	const uint64_t *consts;
	const struct sm_rec *recs;
};

static inline void sm_table(struct vec *v, const struct sm_spec *s)
{
	uint32_t i;
	uint16_t j;

	v->table_start = v->len;
	put8(v, s->version);
	put8(v, 0);
	put16(v, 0);
	put32(v, s->nfunc);
	put32(v, s->nconst);
	put32(v, s->nrec);
	for (i = 0; i < s->nfunc; i++) {
		put64(v, s->funcs[i].addr);
		put64(v, s->funcs[i].stack_size);
		if (s->version >= 2)
			put64(v, s->funcs[i].record_count);
	}
	for (i = 0; i < s->nconst; i++)
		put64(v, s->consts[i]);
	for (i = 0; i < s->nrec; i++) {
		const struct sm_rec *r = &s->recs[i];

		put64(v, r->id);
		put32(v, r->offset);
		put16(v, 0);
		put16(v, r->nloc);
		for (j = 0; j < r->nloc; j++) {
			put8(v, r->locs[j].kind);
			if (s->version == 3) {
				put8(v, 0);
				put16(v, r->locs[j].size);
				put16(v, r->locs[j].reg);
				put16(v, 0);
			} else {
				put8(v, r->locs[j].size);
				put16(v, r->locs[j].reg);
			}
			put32(v, (uint32_t)r->locs[j].offset);
		}
		pad8(v);
		put16(v, 0);
		put16(v, r->nlo);
		for (j = 0; j < r->nlo; j++) {
			put16(v, r->los[j].reg);
			put8(v, 0);
			put8(v, r->los[j].size);
		}
		pad8(v);
	}
}

#endif /* FL_TEST_SMVEC_H */
