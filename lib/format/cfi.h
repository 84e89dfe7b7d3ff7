/* SPDX-License-Identifier: MIT */
/*
 * Call frame information, interpreted and written (cfi.c): the rules an
 * FDE gives at one address of its code (a row of DWARF 4, 6.4.1's table),
 * and a new .eh_frame whose one FDE gives chosen rows at chosen addresses.
 * lib/patch/seen.c uses both to describe code faultline writes (a stub, a
 * relocated copy) with the rules of the original code it stands for.
 *
 * Pure: no syscalls, no state; reads only the records it is given, and the
 * expression blocks it hands back point into them.
 */
#ifndef FL_FORMAT_CFI_H
#define FL_FORMAT_CFI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <faultline/format.h>

/*
 * The registers a row holds rules for: DWARF numbers below this.  An FDE
 * that names a higher one is refused (-ENOTSUP).  x86-64's are 0..16 (the
 * general registers and the return address), 17..32 the SSE registers.
 */
#define FL_CFI_REGS 64

enum fl_cfi_how {
	FL_CFI_UNSPECIFIED = 0,	/* no rule: the unwinder's default (same value) */
	FL_CFI_UNDEFINED,
	FL_CFI_SAME_VALUE,
	FL_CFI_OFFSET,		/* saved at CFA + off */
	FL_CFI_VAL_OFFSET,	/* the value is CFA + off */
	FL_CFI_REGISTER,	/* in register reg */
	FL_CFI_EXPRESSION,	/* saved at the address expr computes */
	FL_CFI_VAL_EXPRESSION,	/* the value is what expr computes */
};

struct fl_cfi_rule {
	uint8_t how;		/* enum fl_cfi_how */
	uint16_t reg;		/* FL_CFI_REGISTER */
	int64_t off;		/* FL_CFI_*OFFSET, in bytes */
	const uint8_t *expr;	/* FL_CFI_*EXPRESSION: the block, in the record */
	uint32_t expr_len;
};

/* The complete rule set at one address. */
struct fl_cfi_row {
	bool cfa_is_expr;	/* else CFA = cfa_reg + cfa_off */
	uint16_t cfa_reg;
	int64_t cfa_off;
	const uint8_t *cfa_expr;
	uint32_t cfa_expr_len;
	uint64_t args_size;	/* DW_CFA_GNU_args_size's, 0 when none was given */
	struct fl_cfi_rule regs[FL_CFI_REGS];
};

/* One FDE and what it needs of its CIE. */
struct fl_cfi_fde {
	uint64_t start, end;		/* the code it covers: [start, end) */
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra;			/* the return address column */
	bool has_lsda;			/* its augmentation data names an LSDA */
	bool has_personality;		/* its CIE names a personality routine */
	bool signal_frame;		/* its CIE has 'S' */
	uint8_t fde_enc;		/* 'R' */
	const uint8_t *cie_insns, *fde_insns;
	size_t cie_insns_len, fde_insns_len;
	uint64_t fde_insns_addr;	/* runtime address of fde_insns */
};

/*
 * Parses the FDE record of fde_size bytes at fde (from its length field;
 * runtime address fde_addr) and its CIE, the record of cie_size bytes at
 * cie (runtime address cie_addr), as ehframe.h checks them.  Returns 0
 * with *out set (pointing into the records), or -EINVAL with *diag filled
 * in.  Thread-safe.
 */
int fl_cfi_fde_parse(const void *fde, size_t fde_size, uint64_t fde_addr, const void *cie,
		     size_t cie_size, uint64_t cie_addr, struct fl_cfi_fde *out,
		     struct fl_diag *diag);

/*
 * The row of f at address pc (in [f->start, f->end)): the CIE's initial
 * instructions, then the FDE's up to the first that advances past pc.
 * Returns 0 with *row set, -EINVAL with *diag filled in (malformed
 * instructions, pc outside the FDE, a restore_state without its remember,
 * no CFA rule), or -ENOTSUP (a register of FL_CFI_REGS or above, or
 * remember_state nested deeper than 16).  Thread-safe.
 */
int fl_cfi_row_at(const struct fl_cfi_fde *f, uint64_t pc, struct fl_cfi_row *row,
		  struct fl_diag *diag);

/*
 * Moves row to code whose stack holds pushed more bytes below the stack
 * pointer (DWARF register sp) than the code it was read at: a CFA of sp +
 * off becomes sp + off + pushed; other rules are relative to the CFA and
 * stay.  Returns 0, or -ENOTSUP with *diag filled in when the row has a
 * rule that cannot be moved and pushed is not 0: a CFA expression, or a
 * register's expression (which may read sp; they are not looked into).
 */
int fl_cfi_row_shift(struct fl_cfi_row *row, unsigned sp, uint32_t pushed,
		     struct fl_diag *diag);

/* A row of the code fl_cfi_emit describes: row applies from at on. */
struct fl_cfi_at {
	uint64_t at;
	struct fl_cfi_row row;
};

/*
 * Writes a new .eh_frame: one CIE (augmentation "zR", absolute pointers,
 * no personality, no initial instructions; ra and data_align as given)
 * and one FDE for [start, start + len) whose instructions give rows[i].row
 * from rows[i].at on (rows ascending, rows[0].at == start, all inside),
 * then the zero terminator.  Returns 0 with *out (malloc'd: free it) and
 * *size set, -EINVAL with *diag filled in (rows not as said, a register
 * offset that data_align does not divide), or -ENOMEM.  Thread-safe.
 */
int fl_cfi_emit(uint64_t start, uint64_t len, uint64_t ra, int64_t data_align,
		const struct fl_cfi_at *rows, size_t nrows, void **out, size_t *size,
		struct fl_diag *diag);

#endif /* FL_FORMAT_CFI_H */
