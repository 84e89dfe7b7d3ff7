// SPDX-License-Identifier: MIT
/*
 * Call frame information: an FDE's row at an address, and a new .eh_frame
 * that gives chosen rows (cfi.h).
 *
 * The interpreter is DWARF 4's (6.4.2): the CIE's initial instructions make
 * the initial row (what DW_CFA_restore goes back to), then the FDE's run
 * from its start address until one advances the location past the address
 * asked for.  The writer gives each row in full the first time and then
 * only what changed from the row before, as compilers do; a rule that
 * goes back to having none is DW_CFA_restore_extended, which returns it to
 * the new CIE's initial row, where no register has a rule.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "format/cfi.h"
#include "format/diag.h"
#include "format/ehread.h"

#define SAY(err_, ...) fl_diag_say(diag, err_, "call frame information: " __VA_ARGS__)

/* DW_CFA_* opcodes (DWARF 4, 7.23; GNU's 0x2e and 0x2f). */
enum {
	CFA_nop = 0x00, CFA_set_loc = 0x01, CFA_advance_loc1 = 0x02, CFA_advance_loc2 = 0x03,
	CFA_advance_loc4 = 0x04, CFA_offset_extended = 0x05, CFA_restore_extended = 0x06,
	CFA_undefined = 0x07, CFA_same_value = 0x08, CFA_register = 0x09,
	CFA_remember_state = 0x0a, CFA_restore_state = 0x0b, CFA_def_cfa = 0x0c,
	CFA_def_cfa_register = 0x0d, CFA_def_cfa_offset = 0x0e, CFA_def_cfa_expression = 0x0f,
	CFA_expression = 0x10, CFA_offset_extended_sf = 0x11, CFA_def_cfa_sf = 0x12,
	CFA_def_cfa_offset_sf = 0x13, CFA_val_offset = 0x14, CFA_val_offset_sf = 0x15,
	CFA_val_expression = 0x16, CFA_GNU_args_size = 0x2e,
	CFA_GNU_negative_offset_extended = 0x2f,
	CFA_advance_loc = 0x40, CFA_offset = 0x80, CFA_restore = 0xc0,
};

/* How deep remember_state may nest (GCC emits one level). */
#define STATES 16

static bool sleb(struct rd *r, int64_t *v)
{
	uint64_t x;

	if (!leb(r, true, &x))
		return false;
	*v = (int64_t)x;
	return true;
}

int fl_cfi_fde_parse(const void *fde, size_t fde_size, uint64_t fde_addr, const void *cie,
		     size_t cie_size, uint64_t cie_addr, struct fl_cfi_fde *out,
		     struct fl_diag *diag)
{
	struct rd r = { cie, 0, cie_size };
	const char *aug;
	uint64_t v, range, len;
	uint8_t version = 0, b, lsda_enc = PE_OMIT;
	bool z = false;
	size_t aug_end = 0;

	memset(out, 0, sizeof(*out));
	out->fde_enc = PE_ABSPTR;
	if (cie_size < 9 || rd32(r.data, 0) != cie_size - 4 || rd32(r.data + 4, 0) != 0)
		return SAY(-EINVAL, "the CIE at 0x%llx is not one", (unsigned long long)cie_addr);
	r.pos = 8;
	if (!u8(&r, &version) || (version != 1 && version != 3))
		return SAY(-EINVAL, "the CIE at 0x%llx: version %u (1 or 3 expected)",
			   (unsigned long long)cie_addr, version);
	aug = (const char *)r.data + r.pos;
	while (r.pos < r.end && r.data[r.pos])
		r.pos++;
	if (!u8(&r, &b) || !uleb(&r, &out->code_align) || !sleb(&r, &out->data_align) ||
	    !(version == 1 ? (u8(&r, &b) && ((out->ra = b), true)) : uleb(&r, &out->ra)))
		return SAY(-EINVAL, "the CIE at 0x%llx is truncated", (unsigned long long)cie_addr);
	if (aug[0] && aug[0] != 'z')
		return SAY(-EINVAL, "the CIE at 0x%llx: augmentation \"%s\" without 'z'",
			   (unsigned long long)cie_addr, aug);
	if (aug[0] == 'z') {
		z = true;
		if (!uleb(&r, &len) || len > r.end - r.pos)
			return SAY(-EINVAL, "the CIE at 0x%llx: augmentation data past it",
				   (unsigned long long)cie_addr);
		aug_end = r.pos + (size_t)len;
	}
	for (const char *a = aug[0] ? aug + 1 : aug; *a; a++) {
		struct rd d = { r.data, r.pos, aug_end };
		uint8_t enc = 0;
		bool got = true;

		switch (*a) {
		case 'R':
			got = u8(&d, &enc) && readable(enc);
			out->fde_enc = enc;
			break;
		case 'L':
			/* Whether the FDE has an LSDA is in its own data: read there. */
			got = u8(&d, &enc) && (enc == PE_OMIT || readable(enc));
			if (got && enc != PE_OMIT) {
				out->has_lsda = true;
				lsda_enc = enc;
			}
			break;
		case 'P':
			got = u8(&d, &enc) && readable(enc & ~PE_INDIRECT) &&
			      pointer(&d, enc & ~PE_INDIRECT, cie_addr, &v);
			out->has_personality = true;
			break;
		case 'S':
			out->signal_frame = true;
			break;
		default:
			got = false;
		}
		if (!got)
			return SAY(-EINVAL, "the CIE at 0x%llx: augmentation \"%s\" cannot be read",
				   (unsigned long long)cie_addr, aug);
		r.pos = d.pos;
	}
	if (z)
		r.pos = aug_end;
	out->cie_insns = r.data + r.pos;
	out->cie_insns_len = r.end - r.pos;

	r = (struct rd){ fde, 0, fde_size };
	if (fde_size < 8 || rd32(r.data, 0) != fde_size - 4 || rd32(r.data + 4, 0) == 0)
		return SAY(-EINVAL, "the FDE at 0x%llx is not one", (unsigned long long)fde_addr);
	r.pos = 8;
	if (!pointer(&r, out->fde_enc, fde_addr, &out->start) ||
	    !pointer(&r, out->fde_enc & 0x0f, fde_addr, &range))
		return SAY(-EINVAL, "the FDE at 0x%llx is truncated", (unsigned long long)fde_addr);
	out->end = out->start + range;
	if (z) {
		if (!uleb(&r, &len) || len > r.end - r.pos)
			return SAY(-EINVAL, "the FDE at 0x%llx: augmentation data past it",
				   (unsigned long long)fde_addr);
		/* An 'L' CIE's FDE may still have no LSDA: a pointer of 0. */
		if (out->has_lsda) {
			struct rd d = { r.data, r.pos, r.pos + (size_t)len };
			uint64_t lsda = 0;

			out->has_lsda = pointer(&d, lsda_enc & 0x0f, 0, &lsda) && lsda != 0;
		}
		r.pos += (size_t)len;
	}
	out->fde_insns = r.data + r.pos;
	out->fde_insns_len = r.end - r.pos;
	out->fde_insns_addr = fde_addr + r.pos;
	if (out->code_align == 0)
		return SAY(-EINVAL, "the CIE at 0x%llx: code alignment factor 0",
			   (unsigned long long)cie_addr);
	return 0;
}

/* The interpreter's state while it runs one instruction list. */
struct run {
	const struct fl_cfi_fde *f;
	struct fl_cfi_row *row;
	const struct fl_cfi_row *initial;	/* NULL while the CIE's run */
	struct fl_cfi_row *saved;		/* STATES of them */
	unsigned depth;
	uint64_t loc, pc;
	struct fl_diag *diag;
};

static int reg_ok(struct run *x, uint64_t reg, struct fl_diag *diag)
{
	if (reg >= FL_CFI_REGS)
		return SAY(-ENOTSUP, "the FDE for [0x%llx, 0x%llx) names register %llu (only "
			   "0..%d are followed)", (unsigned long long)x->f->start,
			   (unsigned long long)x->f->end, (unsigned long long)reg,
			   FL_CFI_REGS - 1);
	return 0;
}

/*
 * Runs the instructions in r.  Returns 1 when it stopped at an advance
 * past x->pc, 0 at the end of the list, or -errno with *diag filled in.
 */
static int run(struct run *x, struct rd *r)
{
	struct fl_diag *diag = x->diag;
	struct fl_cfi_row *row = x->row;

	while (r->pos < r->end) {
		uint64_t a = 0, b = 0, delta = 0;
		int64_t s = 0;
		uint8_t op = r->data[r->pos++], low = op & 0x3f;
		bool advance = false, ok = true;
		int err;

		switch (op & 0xc0) {
		case CFA_advance_loc:
			delta = low;
			advance = true;
			break;
		case CFA_offset:
			if ((err = reg_ok(x, low, diag)))
				return err;
			ok = uleb(r, &b);
			row->regs[low] = (struct fl_cfi_rule){ .how = FL_CFI_OFFSET,
				.off = (int64_t)b * x->f->data_align };
			break;
		case CFA_restore:
			if (!x->initial)
				return SAY(-EINVAL, "DW_CFA_restore in a CIE");
			if ((err = reg_ok(x, low, diag)))
				return err;
			row->regs[low] = x->initial->regs[low];
			break;
		default:
			switch (op) {
			case CFA_nop:
				break;
			case CFA_set_loc:
				if (!x->initial)
					return SAY(-EINVAL, "DW_CFA_set_loc in a CIE");
				ok = pointer(r, x->f->fde_enc, x->f->fde_insns_addr -
					     (uint64_t)(r->data - x->f->fde_insns), &a);
				if (ok && a < x->loc)
					return SAY(-EINVAL, "DW_CFA_set_loc goes back");
				if (ok && a > x->pc)
					return 1;
				x->loc = a;
				break;
			case CFA_advance_loc1:
				ok = r->pos + 1 <= r->end;
				if (ok)
					delta = r->data[r->pos++];
				advance = true;
				break;
			case CFA_advance_loc2:
				ok = r->end - r->pos >= 2;
				if (ok)
					delta = rd16(r->data + r->pos, 0), r->pos += 2;
				advance = true;
				break;
			case CFA_advance_loc4:
				ok = r->end - r->pos >= 4;
				if (ok)
					delta = rd32(r->data + r->pos, 0), r->pos += 4;
				advance = true;
				break;
			case CFA_offset_extended:
			case CFA_offset_extended_sf:
			case CFA_GNU_negative_offset_extended:
			case CFA_val_offset:
			case CFA_val_offset_sf:
				ok = uleb(r, &a);
				if (ok && (err = reg_ok(x, a, diag)))
					return err;
				if (op == CFA_offset_extended_sf || op == CFA_val_offset_sf) {
					ok = ok && sleb(r, &s);
				} else {
					ok = ok && uleb(r, &b);
					s = (int64_t)b;
				}
				if (op == CFA_GNU_negative_offset_extended)
					s = -s;
				if (ok)
					row->regs[a] = (struct fl_cfi_rule){
						.how = op == CFA_val_offset || op == CFA_val_offset_sf ?
						       FL_CFI_VAL_OFFSET : FL_CFI_OFFSET,
						.off = s * x->f->data_align };
				break;
			case CFA_restore_extended:
				if (!x->initial)
					return SAY(-EINVAL, "DW_CFA_restore_extended in a CIE");
				ok = uleb(r, &a);
				if (ok && (err = reg_ok(x, a, diag)))
					return err;
				if (ok)
					row->regs[a] = x->initial->regs[a];
				break;
			case CFA_undefined:
			case CFA_same_value:
				ok = uleb(r, &a);
				if (ok && (err = reg_ok(x, a, diag)))
					return err;
				if (ok)
					row->regs[a] = (struct fl_cfi_rule){ .how = op == CFA_undefined ?
						FL_CFI_UNDEFINED : FL_CFI_SAME_VALUE };
				break;
			case CFA_register:
				ok = uleb(r, &a) && uleb(r, &b);
				if (ok && ((err = reg_ok(x, a, diag)) || (err = reg_ok(x, b, diag))))
					return err;
				if (ok)
					row->regs[a] = (struct fl_cfi_rule){ .how = FL_CFI_REGISTER,
						.reg = (uint16_t)b };
				break;
			case CFA_remember_state:
				if (x->depth == STATES)
					return SAY(-ENOTSUP, "DW_CFA_remember_state nested deeper than %d",
						   STATES);
				x->saved[x->depth++] = *row;
				break;
			case CFA_restore_state:
				if (x->depth == 0)
					return SAY(-EINVAL, "DW_CFA_restore_state without a remembered "
						   "state");
				/* The CFA too, as GCC's and libunwind's unwinders do: an
				 * epilogue in mid-function is remember, CFA changes, ret,
				 * restore. */
				*row = x->saved[--x->depth];
				break;
			case CFA_def_cfa:
			case CFA_def_cfa_sf:
				ok = uleb(r, &a);
				if (ok && (err = reg_ok(x, a, diag)))
					return err;
				if (op == CFA_def_cfa_sf) {
					ok = ok && sleb(r, &s);
					s *= x->f->data_align;
				} else {
					ok = ok && uleb(r, &b);
					s = (int64_t)b;
				}
				if (ok) {
					row->cfa_is_expr = false;
					row->cfa_reg = (uint16_t)a;
					row->cfa_off = s;
				}
				break;
			case CFA_def_cfa_register:
				ok = uleb(r, &a);
				if (ok && (err = reg_ok(x, a, diag)))
					return err;
				if (ok && row->cfa_is_expr)
					return SAY(-EINVAL, "DW_CFA_def_cfa_register after a CFA "
						   "expression");
				row->cfa_reg = (uint16_t)a;
				break;
			case CFA_def_cfa_offset:
			case CFA_def_cfa_offset_sf:
				if (op == CFA_def_cfa_offset_sf) {
					ok = sleb(r, &s);
					s *= x->f->data_align;
				} else {
					ok = uleb(r, &b);
					s = (int64_t)b;
				}
				if (ok && row->cfa_is_expr)
					return SAY(-EINVAL, "DW_CFA_def_cfa_offset after a CFA "
						   "expression");
				row->cfa_off = s;
				break;
			case CFA_def_cfa_expression:
				ok = uleb(r, &b) && b <= r->end - r->pos && b <= UINT32_MAX;
				if (ok) {
					row->cfa_is_expr = true;
					row->cfa_expr = r->data + r->pos;
					row->cfa_expr_len = (uint32_t)b;
					r->pos += (size_t)b;
				}
				break;
			case CFA_expression:
			case CFA_val_expression:
				ok = uleb(r, &a);
				if (ok && (err = reg_ok(x, a, diag)))
					return err;
				ok = ok && uleb(r, &b) && b <= r->end - r->pos && b <= UINT32_MAX;
				if (ok) {
					row->regs[a] = (struct fl_cfi_rule){
						.how = op == CFA_expression ? FL_CFI_EXPRESSION :
						       FL_CFI_VAL_EXPRESSION,
						.expr = r->data + r->pos, .expr_len = (uint32_t)b };
					r->pos += (size_t)b;
				}
				break;
			case CFA_GNU_args_size:
				ok = uleb(r, &row->args_size);
				break;
			default:
				return SAY(-EINVAL, "the FDE for [0x%llx, 0x%llx): instruction 0x%x "
					   "unknown", (unsigned long long)x->f->start,
					   (unsigned long long)x->f->end, op);
			}
		}
		if (!ok)
			return SAY(-EINVAL, "the FDE for [0x%llx, 0x%llx): instruction 0x%x runs "
				   "past its record", (unsigned long long)x->f->start,
				   (unsigned long long)x->f->end, op);
		if (advance) {
			if (!x->initial)
				return SAY(-EINVAL, "an advance in a CIE");
			a = x->loc + delta * x->f->code_align;
			if (a > x->pc)
				return 1;
			x->loc = a;
		}
	}
	return 0;
}

int fl_cfi_row_at(const struct fl_cfi_fde *f, uint64_t pc, struct fl_cfi_row *row,
		  struct fl_diag *diag)
{
	struct fl_cfi_row saved[STATES], initial;
	struct run x = { .f = f, .row = row, .saved = saved, .loc = f->start, .pc = pc,
			 .diag = diag };
	struct rd r = { f->cie_insns, 0, f->cie_insns_len };
	int err;

	memset(row, 0, sizeof(*row));
	row->cfa_reg = UINT16_MAX;
	if (pc < f->start || pc >= f->end)
		return SAY(-EINVAL, "0x%llx is outside the FDE's [0x%llx, 0x%llx)",
			   (unsigned long long)pc, (unsigned long long)f->start,
			   (unsigned long long)f->end);
	if ((err = run(&x, &r)) < 0)
		return err;
	initial = *row;
	x.initial = &initial;
	x.depth = 0;
	r = (struct rd){ f->fde_insns, 0, f->fde_insns_len };
	if ((err = run(&x, &r)) < 0)
		return err;
	if (!row->cfa_is_expr && row->cfa_reg == UINT16_MAX)
		return SAY(-EINVAL, "the FDE for [0x%llx, 0x%llx) gives no CFA at 0x%llx",
			   (unsigned long long)f->start, (unsigned long long)f->end,
			   (unsigned long long)pc);
	return 0;
}

int fl_cfi_row_shift(struct fl_cfi_row *row, unsigned sp, uint32_t pushed,
		     struct fl_diag *diag)
{
	if (!pushed)
		return 0;
	if (row->cfa_is_expr)
		return SAY(-ENOTSUP, "the CFA is an expression: it cannot be moved by %u bytes",
			   pushed);
	for (unsigned i = 0; i < FL_CFI_REGS; i++)
		if (row->regs[i].how == FL_CFI_EXPRESSION || row->regs[i].how == FL_CFI_VAL_EXPRESSION)
			return SAY(-ENOTSUP, "register %u's rule is an expression: it cannot be "
				   "moved by %u bytes", i, pushed);
	if (row->cfa_reg == sp)
		row->cfa_off += pushed;
	return 0;
}

/* ------------------------------------------------------------------------
 * The writer
 */

struct out {
	unsigned char *p;
	size_t n, cap;
	bool nomem;
};

static void put(struct out *o, const void *v, size_t n)
{
	if (o->nomem)
		return;
	if (o->cap - o->n < n) {
		size_t cap = o->cap ? o->cap : 256;
		unsigned char *p;

		while (cap - o->n < n)
			cap *= 2;
		if (!(p = realloc(o->p, cap))) {
			o->nomem = true;
			return;
		}
		o->p = p;
		o->cap = cap;
	}
	memcpy(o->p + o->n, v, n);
	o->n += n;
}

static void put8(struct out *o, uint8_t v)
{
	put(o, &v, 1);
}

static void put_uleb(struct out *o, uint64_t v)
{
	do {
		uint8_t b = v & 0x7f;

		v >>= 7;
		put8(o, v ? b | 0x80 : b);
	} while (v);
}

static void put_sleb(struct out *o, int64_t v)
{
	for (;;) {
		uint8_t b = v & 0x7f;

		v >>= 7;	/* arithmetic: gcc and clang shift signed values so */
		if ((v == 0 && !(b & 0x40)) || (v == -1 && (b & 0x40))) {
			put8(o, b);
			return;
		}
		put8(o, b | 0x80);
	}
}

static void put32_at(struct out *o, size_t at, uint32_t v)
{
	if (!o->nomem)
		memcpy(o->p + at, &v, 4);
}

/* Pads the record that started at start to a multiple of 8 and sets its length. */
static void end_record(struct out *o, size_t start)
{
	while ((o->n - start) % 8)
		put8(o, CFA_nop);
	put32_at(o, start, (uint32_t)(o->n - start - 4));
}

static bool same_rule(const struct fl_cfi_rule *a, const struct fl_cfi_rule *b)
{
	if (a->how != b->how)
		return false;
	switch (a->how) {
	case FL_CFI_OFFSET:
	case FL_CFI_VAL_OFFSET:
		return a->off == b->off;
	case FL_CFI_REGISTER:
		return a->reg == b->reg;
	case FL_CFI_EXPRESSION:
	case FL_CFI_VAL_EXPRESSION:
		return a->expr_len == b->expr_len && !memcmp(a->expr, b->expr, a->expr_len);
	}
	return true;
}

/* The instructions that take a row from prev (NULL: none yet) to row. */
static int put_row(struct out *o, const struct fl_cfi_row *prev, const struct fl_cfi_row *row,
		   int64_t data_align, struct fl_diag *diag)
{
	if (!prev || prev->cfa_is_expr != row->cfa_is_expr ||
	    (row->cfa_is_expr ? prev->cfa_expr_len != row->cfa_expr_len ||
			       memcmp(prev->cfa_expr, row->cfa_expr, row->cfa_expr_len) :
			       prev->cfa_reg != row->cfa_reg || prev->cfa_off != row->cfa_off)) {
		if (row->cfa_is_expr) {
			put8(o, CFA_def_cfa_expression);
			put_uleb(o, row->cfa_expr_len);
			put(o, row->cfa_expr, row->cfa_expr_len);
		} else if (row->cfa_off >= 0) {
			put8(o, CFA_def_cfa);
			put_uleb(o, row->cfa_reg);
			put_uleb(o, (uint64_t)row->cfa_off);
		} else {
			if (row->cfa_off % data_align)
				return SAY(-EINVAL, "CFA offset %lld is not a multiple of %lld",
					   (long long)row->cfa_off, (long long)data_align);
			put8(o, CFA_def_cfa_sf);
			put_uleb(o, row->cfa_reg);
			put_sleb(o, row->cfa_off / data_align);
		}
	}
	for (unsigned i = 0; i < FL_CFI_REGS; i++) {
		const struct fl_cfi_rule *r = &row->regs[i];
		static const struct fl_cfi_rule none;

		if (same_rule(prev ? &prev->regs[i] : &none, r))
			continue;
		switch (r->how) {
		case FL_CFI_UNSPECIFIED:
			put8(o, CFA_restore_extended);
			put_uleb(o, i);
			break;
		case FL_CFI_UNDEFINED:
		case FL_CFI_SAME_VALUE:
			put8(o, r->how == FL_CFI_UNDEFINED ? CFA_undefined : CFA_same_value);
			put_uleb(o, i);
			break;
		case FL_CFI_OFFSET:
		case FL_CFI_VAL_OFFSET:
			if (r->off % data_align)
				return SAY(-EINVAL, "register %u's offset %lld is not a multiple of "
					   "%lld", i, (long long)r->off, (long long)data_align);
			put8(o, r->how == FL_CFI_OFFSET ? CFA_offset_extended_sf : CFA_val_offset_sf);
			put_uleb(o, i);
			put_sleb(o, r->off / data_align);
			break;
		case FL_CFI_REGISTER:
			put8(o, CFA_register);
			put_uleb(o, i);
			put_uleb(o, r->reg);
			break;
		default:
			put8(o, r->how == FL_CFI_EXPRESSION ? CFA_expression : CFA_val_expression);
			put_uleb(o, i);
			put_uleb(o, r->expr_len);
			put(o, r->expr, r->expr_len);
		}
	}
	if (prev ? prev->args_size != row->args_size : row->args_size != 0) {
		put8(o, CFA_GNU_args_size);
		put_uleb(o, row->args_size);
	}
	return 0;
}

static void put_advance(struct out *o, uint64_t d)
{
	if (d < 0x40) {
		put8(o, (uint8_t)(CFA_advance_loc | d));
	} else if (d <= UINT8_MAX) {
		put8(o, CFA_advance_loc1);
		put8(o, (uint8_t)d);
	} else if (d <= UINT16_MAX) {
		uint16_t v = (uint16_t)d;

		put8(o, CFA_advance_loc2);
		put(o, &v, 2);
	} else {
		uint32_t v = (uint32_t)d;

		put8(o, CFA_advance_loc4);
		put(o, &v, 4);
	}
}

int fl_cfi_emit(uint64_t start, uint64_t len, uint64_t ra, int64_t data_align,
		const struct fl_cfi_at *rows, size_t nrows, void **out, size_t *size,
		struct fl_diag *diag)
{
	struct out o = { 0 };
	size_t cie, fde;
	uint32_t zero = 0;
	int err = 0;

	*out = NULL;
	*size = 0;
	if (!nrows || !len || start + len < start || rows[0].at != start || !data_align ||
	    ra > UINT8_MAX)
		return SAY(-EINVAL, "nothing to describe, or the first row not at the start");
	for (size_t i = 1; i < nrows; i++)
		if (rows[i].at <= rows[i - 1].at || rows[i].at - start >= len ||
		    rows[i].at - rows[i - 1].at > UINT32_MAX)
			return SAY(-EINVAL, "row %zu at 0x%llx: rows must ascend inside [0x%llx, "
				   "+0x%llx)", i, (unsigned long long)rows[i].at,
				   (unsigned long long)start, (unsigned long long)len);
	/* The CIE: version 1, "zR", code alignment 1, absolute pointers. */
	cie = o.n;
	put(&o, &zero, 4);
	put(&o, &zero, 4);
	put8(&o, 1);
	put(&o, "zR", 3);
	put_uleb(&o, 1);
	put_sleb(&o, data_align);
	put8(&o, (uint8_t)ra);
	put_uleb(&o, 1);
	put8(&o, PE_ABSPTR);
	end_record(&o, cie);
	/* The FDE: its CIE pointer is the distance back from the pointer itself. */
	fde = o.n;
	put(&o, &zero, 4);
	put32_at(&o, fde, 0);
	{
		uint32_t back = (uint32_t)(fde + 4 - cie);

		put(&o, &back, 4);
	}
	put(&o, &start, 8);
	put(&o, &len, 8);
	put_uleb(&o, 0);
	for (size_t i = 0; i < nrows && !err; i++) {
		if (i)
			put_advance(&o, rows[i].at - rows[i - 1].at);
		err = put_row(&o, i ? &rows[i - 1].row : NULL, &rows[i].row, data_align, diag);
	}
	end_record(&o, fde);
	put(&o, &zero, 4);
	if (!err && o.nomem)
		err = -ENOMEM;
	if (err) {
		free(o.p);
		return err;
	}
	*out = o.p;
	*size = o.n;
	return 0;
}
