// SPDX-License-Identifier: MIT
/*
 * .eh_frame: the FDEs of a section, checked (ehframe.h).
 *
 * The layout (LSB 5.0, "Exception Frames"; DWARF 4, 6.4.1): records one
 * after the other, each a 4-byte length and an id: 0 for a CIE, else the
 * distance back from the id to the FDE's CIE.  A CIE holds a version, an
 * augmentation string, the alignment factors, the return address column,
 * the augmentation data ('z' gives their length; 'R' the encoding of the
 * FDEs' addresses, 'P' a personality routine, 'L' the encoding of the
 * FDEs' LSDA pointers, 'S' a signal frame) and its initial instructions.
 * An FDE holds the start of its code and its length, in the CIE's 'R'
 * encoding, its augmentation data and its instructions.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "format/diag.h"
#include "format/ehframe.h"
#include "format/ehread.h"

/* What an FDE needs of its CIE. */
struct cie {
	size_t offset;
	uint8_t fde_enc;	/* 'R', else absolute */
	uint8_t lsda_enc;	/* 'L', else PE_OMIT */
	bool z;			/* the FDEs have augmentation data */
};

#define SAY(err_, ...) fl_diag_say(diag, err_, FL_EHFRAME_SECTION ": " __VA_ARGS__)

/*
 * Skips the operands of call frame instruction op at r.  Returns 1, 0
 * when they run past the record, -1 for an opcode it does not know.  A
 * signed LEB128 operand is skipped as an unsigned one (the same bytes);
 * DW_CFA_set_loc's is in the FDEs' address encoding, enc.
 */
static int operands(struct rd *r, uint8_t op, uint8_t enc, uint64_t addr)
{
	uint64_t v;

	switch (op >> 6) {
	case 1:		/* advance_loc: the delta is in the opcode */
	case 3:		/* restore: the register is in the opcode */
		return 1;
	case 2:		/* offset: the register in the opcode, an offset */
		return uleb(r, &v);
	}
	switch (op) {
	case 0x00:	/* nop */
	case 0x0a:	/* remember_state */
	case 0x0b:	/* restore_state */
		return 1;
	case 0x01:	/* set_loc: an address */
		return pointer(r, enc, addr, &v);
	case 0x02:	/* advance_loc1 */
		return skip(r, 1);
	case 0x03:	/* advance_loc2 */
		return skip(r, 2);
	case 0x04:	/* advance_loc4 */
		return skip(r, 4);
	case 0x06:	/* restore_extended: a register */
	case 0x07:	/* undefined */
	case 0x08:	/* same_value */
	case 0x0d:	/* def_cfa_register */
	case 0x0e:	/* def_cfa_offset: an offset */
	case 0x13:	/* def_cfa_offset_sf */
	case 0x2e:	/* GNU_args_size: a size */
		return uleb(r, &v);
	case 0x05:	/* offset_extended: a register, an offset */
	case 0x09:	/* register: two registers */
	case 0x0c:	/* def_cfa: a register, an offset */
	case 0x11:	/* offset_extended_sf */
	case 0x12:	/* def_cfa_sf */
	case 0x14:	/* val_offset */
	case 0x15:	/* val_offset_sf */
	case 0x2f:	/* GNU_negative_offset_extended */
		return uleb(r, &v) && uleb(r, &v);
	case 0x0f:	/* def_cfa_expression: a block */
		return uleb(r, &v) && skip(r, v);
	case 0x10:	/* expression: a register, a block */
	case 0x16:	/* val_expression */
		return uleb(r, &v) && uleb(r, &v) && skip(r, v);
	}
	return -1;
}

/*
 * Checks the call frame instructions in r (to r->end) of the record at
 * offset record: every opcode known and every operand inside the record.
 * Returns 0 or -EINVAL with *diag filled in.
 */
static int instructions(struct rd *r, uint8_t enc, uint64_t addr, size_t record,
			struct fl_diag *diag)
{
	while (r->pos < r->end) {
		size_t at = r->pos;
		uint8_t op = r->data[r->pos++];
		int got = operands(r, op, enc, addr);

		if (got < 0)
			return SAY(-EINVAL, "record at offset %zu: call frame instruction 0x%x "
				   "at offset %zu unknown", record, op, at);
		if (got == 0)
			return SAY(-EINVAL, "record at offset %zu: call frame instruction 0x%x at "
				   "offset %zu runs past the record", record, op, at);
	}
	return 0;
}

/* Parses the CIE whose id ends at r->pos (its record in [start, r->end)). */
static int cie_parse(struct rd *r, size_t start, uint64_t addr, struct cie *c,
		     struct fl_diag *diag)
{
	const char *aug;
	size_t aug_end = 0;
	uint8_t version, b;
	uint64_t v, len;

	*c = (struct cie){ .offset = start, .fde_enc = PE_ABSPTR, .lsda_enc = PE_OMIT };
	if (!u8(r, &version))
		return SAY(-EINVAL, "CIE at offset %zu: truncated", start);
	if (version != 1 && version != 3)
		return SAY(-EINVAL, "CIE at offset %zu: version %u (1 or 3 expected)", start,
			   version);
	aug = (const char *)r->data + r->pos;
	while (r->pos < r->end && r->data[r->pos])
		r->pos++;
	if (!u8(r, &b))
		return SAY(-EINVAL, "CIE at offset %zu: its augmentation string runs past it",
			   start);
	/* Alignment factors, then the return address column (a byte in version 1). */
	if (!uleb(r, &v) || !leb(r, true, &v) || !(version == 1 ? u8(r, &b) : uleb(r, &v)))
		return SAY(-EINVAL, "CIE at offset %zu: truncated", start);
	if (aug[0] && aug[0] != 'z')
		return SAY(-EINVAL, "CIE at offset %zu: augmentation \"%s\" without 'z' (its "
			   "data cannot be skipped)", start, aug);
	if (aug[0] == 'z') {
		c->z = true;
		if (!uleb(r, &len) || len > r->end - r->pos)
			return SAY(-EINVAL, "CIE at offset %zu: augmentation data past the record",
				   start);
		aug_end = r->pos + (size_t)len;
	}
	for (const char *a = aug[0] ? aug + 1 : aug; *a; a++) {
		struct rd data = { r->data, r->pos, aug_end };
		uint8_t enc = 0;
		bool got = true;

		switch (*a) {
		case 'R':
		case 'L':
		case 'P':
			if (!(got = u8(&data, &enc)))
				break;
			/* A personality routine's pointer may be indirect: it is not followed. */
			if (!readable(*a == 'P' ? enc & ~PE_INDIRECT : enc) &&
			    !(*a == 'L' && enc == PE_OMIT))
				return SAY(-EINVAL, "CIE at offset %zu: '%c' pointer encoding 0x%x "
					   "cannot be read", start, *a, enc);
			if (*a == 'R')
				c->fde_enc = enc;
			else if (*a == 'L')
				c->lsda_enc = enc;
			else
				got = pointer(&data, enc & ~PE_INDIRECT, addr, &v);
			break;
		case 'S':
			break;
		default:
			return SAY(-EINVAL, "CIE at offset %zu: augmentation \"%s\": '%c' unknown",
				   start, aug, *a);
		}
		if (!got)
			return SAY(-EINVAL, "CIE at offset %zu: augmentation data too short for "
				   "\"%s\"", start, aug);
		r->pos = data.pos;
	}
	if (c->z)
		r->pos = aug_end;
	return instructions(r, c->fde_enc, addr, start, diag);
}

/* The CIE at offset off among the n parsed so far (in section order), or NULL. */
static const struct cie *cie_at(const struct cie *cies, size_t n, size_t off)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cies[mid].offset < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && cies[lo].offset == off ? &cies[lo] : NULL;
}

/* Parses the FDE whose CIE pointer is at id_at (its record in [start, r->end)). */
static int fde_parse(struct rd *r, size_t start, size_t id_at, uint32_t cie_ptr, uint64_t addr,
		     const struct cie *cies, size_t num_cies, uint64_t code_lo, uint64_t code_hi,
		     struct fl_eh_fde *out, struct fl_diag *diag)
{
	const struct cie *c = cie_ptr <= id_at ? cie_at(cies, num_cies, id_at - cie_ptr) : NULL;
	uint64_t begin, range, len, lsda;

	if (!c)
		return SAY(-EINVAL, "FDE at offset %zu: its CIE pointer (%u) names no CIE", start,
			   cie_ptr);
	if (!pointer(r, c->fde_enc, addr, &begin) || !pointer(r, c->fde_enc & 0x0f, addr, &range))
		return SAY(-EINVAL, "FDE at offset %zu: truncated", start);
	if (c->z) {
		size_t aug_end;

		if (!uleb(r, &len) || len > r->end - r->pos)
			return SAY(-EINVAL, "FDE at offset %zu: augmentation data past the record",
				   start);
		aug_end = r->pos + (size_t)len;
		if (c->lsda_enc != PE_OMIT &&
		    !pointer(&(struct rd){ r->data, r->pos, aug_end }, c->lsda_enc, addr, &lsda))
			return SAY(-EINVAL, "FDE at offset %zu: augmentation data too short for its "
				   "LSDA pointer", start);
		r->pos = aug_end;
	}
	if (range && (begin < code_lo || begin >= code_hi || range > code_hi - begin))
		return SAY(-EINVAL, "FDE at offset %zu covers [0x%llx, +0x%llx), outside the code "
			   "[0x%llx, 0x%llx)", start, (unsigned long long)begin,
			   (unsigned long long)range, (unsigned long long)code_lo,
			   (unsigned long long)code_hi);
	*out = (struct fl_eh_fde){ .start = begin, .end = begin + range, .offset = start };
	return instructions(r, c->fde_enc, addr, start, diag);
}

/* Appends x (of size elem) to *v, which holds n of cap. */
static int push(void **v, size_t n, size_t *cap, const void *x, size_t elem)
{
	if (n == *cap) {
		size_t grown = *cap ? 2 * *cap : 16;
		void *p = realloc(*v, grown * elem);

		if (!p)
			return -ENOMEM;
		*v = p;
		*cap = grown;
	}
	memcpy((char *)*v + n * elem, x, elem);
	return 0;
}

static int by_start(const void *a, const void *b)
{
	const struct fl_eh_fde *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

long fl_ehframe_fdes(const void *data, size_t size, uint64_t addr, uint64_t code_lo,
		     uint64_t code_hi, struct fl_eh_fde **out, struct fl_diag *diag)
{
	const unsigned char *p = data;
	struct cie *cies = NULL;
	struct fl_eh_fde *fdes = NULL;
	size_t num_cies = 0, cies_cap = 0, n = 0, cap = 0, pos = 0;
	int err = 0;

	*out = NULL;
	while (pos < size) {
		size_t start = pos;
		uint32_t len, id;
		struct rd r;

		if (left(size, pos) < 4) {
			err = SAY(-EINVAL, "record at offset %zu: truncated length", start);
			break;
		}
		len = rd32(p + pos, 0);
		if (len == 0)
			break;		/* the terminator */
		if (len == 0xffffffffu) {
			err = SAY(-EINVAL, "record at offset %zu: 64-bit DWARF format is not "
				  "supported", start);
			break;
		}
		if (len < 4 || len > left(size, pos + 4)) {
			err = SAY(-EINVAL, "record at offset %zu: length %u %s", start, len,
				  len < 4 ? "leaves no room for its id" : "runs past the section");
			break;
		}
		id = rd32(p + pos + 4, 0);
		r = (struct rd){ p, pos + 8, pos + 4 + len };
		if (id == 0) {
			struct cie c;

			err = cie_parse(&r, start, addr, &c, diag);
			if (!err)
				err = push((void **)&cies, num_cies++, &cies_cap, &c, sizeof(c));
		} else {
			struct fl_eh_fde f;

			err = fde_parse(&r, start, pos + 4, id, addr, cies, num_cies, code_lo, code_hi,
					&f, diag);
			if (!err && f.end > f.start)
				err = push((void **)&fdes, n++, &cap, &f, sizeof(f));
		}
		if (err)
			break;
		pos += 4 + (size_t)len;
	}
	free(cies);
	if (!err && n == 0)
		err = SAY(-EINVAL, "no FDE: nothing describes the code");
	if (!err) {
		qsort(fdes, n, sizeof(*fdes), by_start);
		for (size_t i = 1; i < n && !err; i++)
			if (fdes[i].start < fdes[i - 1].end)
				err = SAY(-EINVAL, "the FDEs at offsets %zu and %zu overlap",
					  fdes[i - 1].offset, fdes[i].offset);
	}
	if (err) {
		free(fdes);
		return err;
	}
	*out = fdes;
	return (long)n;
}
