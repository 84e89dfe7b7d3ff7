// SPDX-License-Identifier: MIT
/*
 * lib/format/cfi.c: an FDE's rows (advances, CFA changes, offsets, restore,
 * remember and restore_state), moved by what new code pushed, and written
 * again as a new .eh_frame that ehframe.c accepts and that gives the same
 * rows back.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "format/cfi.h"
#include "format/ehframe.h"
#include "suites.h"

/* A CIE (v1, "zR", absolute pointers, CFA rsp+8, ra at CFA-8) and its FDE for [0x1000, +0x20). */
static const unsigned char cie[] = {
	0x14, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 16, 1, 0x00,
	0x0c, 7, 8, 0x90, 1, 0, 0,
};
static const unsigned char fde[] = {
	0x2c, 0, 0, 0, 0x1c, 0, 0, 0,
	0x00, 0x10, 0, 0, 0, 0, 0, 0, 0x20, 0, 0, 0, 0, 0, 0, 0, 0,
	0x41, 0x0e, 16, 0x86, 2,	/* 0x1001: CFA rsp+16, rbp at CFA-16 */
	0x43, 0x0d, 6,			/* 0x1004: CFA rbp+16 */
	0x44, 0x0a, 0x0c, 7, 8, 0xc6,	/* 0x1008: remember; CFA rsp+8, rbp restored */
	0x41, 0x0b,			/* 0x1009: restore_state */
	0, 0, 0, 0, 0, 0, 0,		/* DW_CFA_nop to the length */
};

_Static_assert(sizeof(cie) == 24 && sizeof(fde) == 48, "the lengths in the records");

static struct fl_cfi_fde parsed(void)
{
	struct fl_cfi_fde f;

	ck_assert_int_eq(fl_cfi_fde_parse(fde, sizeof(fde), 0x200, cie, sizeof(cie), 0x100, &f,
					  NULL), 0);
	return f;
}

START_TEST(cfi_rows_follow_the_instructions)
{
	struct fl_cfi_fde f = parsed();
	struct fl_cfi_row r;

	ck_assert_uint_eq(f.start, 0x1000);
	ck_assert_uint_eq(f.end, 0x1020);
	ck_assert_uint_eq(f.ra, 16);
	ck_assert_int_eq(fl_cfi_row_at(&f, 0x1000, &r, NULL), 0);
	ck_assert(r.cfa_reg == 7 && r.cfa_off == 8 && r.regs[16].how == FL_CFI_OFFSET &&
		  r.regs[16].off == -8 && r.regs[6].how == FL_CFI_UNSPECIFIED);
	ck_assert_int_eq(fl_cfi_row_at(&f, 0x1003, &r, NULL), 0);
	ck_assert(r.cfa_reg == 7 && r.cfa_off == 16 && r.regs[6].how == FL_CFI_OFFSET &&
		  r.regs[6].off == -16);
	ck_assert_int_eq(fl_cfi_row_at(&f, 0x1004, &r, NULL), 0);
	ck_assert(r.cfa_reg == 6 && r.cfa_off == 16);
	ck_assert_int_eq(fl_cfi_row_at(&f, 0x1008, &r, NULL), 0);
	ck_assert(r.cfa_reg == 7 && r.cfa_off == 8 && r.regs[6].how == FL_CFI_UNSPECIFIED);
	ck_assert_int_eq(fl_cfi_row_at(&f, 0x101f, &r, NULL), 0);
	ck_assert(r.cfa_reg == 6 && r.cfa_off == 16 && r.regs[6].off == -16);
	ck_assert_int_eq(fl_cfi_row_at(&f, 0x1020, &r, NULL), -EINVAL);
}
END_TEST

START_TEST(cfi_shift_moves_only_an_rsp_based_cfa)
{
	struct fl_cfi_fde f = parsed();
	struct fl_cfi_row r;

	ck_assert_int_eq(fl_cfi_row_at(&f, 0x1002, &r, NULL), 0);
	ck_assert_int_eq(fl_cfi_row_shift(&r, 7, 144, NULL), 0);
	ck_assert(r.cfa_off == 160 && r.regs[6].off == -16);
	ck_assert_int_eq(fl_cfi_row_at(&f, 0x1005, &r, NULL), 0);
	ck_assert_int_eq(fl_cfi_row_shift(&r, 7, 144, NULL), 0);
	ck_assert(r.cfa_reg == 6 && r.cfa_off == 16);
	r.cfa_is_expr = true;
	ck_assert_int_eq(fl_cfi_row_shift(&r, 7, 8, NULL), -ENOTSUP);
	ck_assert_int_eq(fl_cfi_row_shift(&r, 7, 0, NULL), 0);
}
END_TEST

START_TEST(cfi_emitted_eh_frame_gives_the_rows_back)
{
	struct fl_cfi_fde f = parsed(), g;
	struct fl_cfi_at rows[3];
	const uint64_t orig[3] = { 0x1002, 0x1005, 0x1008 }, at[3] = { 0x5000, 0x5010, 0x5018 };
	struct fl_eh_fde *fdes;
	struct fl_cfi_row r;
	unsigned char *eh;
	size_t size;
	void *out;

	for (int i = 0; i < 3; i++) {
		rows[i].at = at[i];
		ck_assert_int_eq(fl_cfi_row_at(&f, orig[i], &rows[i].row, NULL), 0);
		ck_assert_int_eq(fl_cfi_row_shift(&rows[i].row, 7, i == 0 ? 144 : 0, NULL), 0);
	}
	ck_assert_int_eq(fl_cfi_emit(0x5000, 0x20, f.ra, f.data_align, rows, 3, &out, &size,
				     NULL), 0);
	eh = out;
	ck_assert_int_eq(fl_ehframe_fdes(eh, size, (uint64_t)(uintptr_t)eh, 0x5000, 0x5020, &fdes,
					 NULL), 1);
	ck_assert(fdes[0].start == 0x5000 && fdes[0].end == 0x5020);
	ck_assert_int_eq(fl_cfi_fde_parse(eh + fdes[0].offset, size - 4 - fdes[0].offset,
					  (uint64_t)(uintptr_t)eh + fdes[0].offset, eh,
					  fdes[0].offset, (uint64_t)(uintptr_t)eh, &g, NULL), 0);
	ck_assert(!g.has_lsda && !g.has_personality);
	for (int i = 0; i < 3; i++) {
		for (uint64_t pc = at[i]; pc < (i < 2 ? at[i + 1] : 0x5020); pc++) {
			ck_assert_int_eq(fl_cfi_row_at(&g, pc, &r, NULL), 0);
			ck_assert(r.cfa_reg == rows[i].row.cfa_reg && r.cfa_off == rows[i].row.cfa_off);
			for (int k = 0; k < FL_CFI_REGS; k++)
				ck_assert(r.regs[k].how == rows[i].row.regs[k].how &&
					  r.regs[k].off == rows[i].row.regs[k].off);
		}
	}
	/* Rows out of order are refused. */
	rows[1].at = 0x5000;
	ck_assert_int_eq(fl_cfi_emit(0x5000, 0x20, f.ra, f.data_align, rows, 3, &out, &size,
				     NULL), -EINVAL);
	free(fdes);
	free(eh);
}
END_TEST

Suite *cfi_suite(void)
{
	Suite *s = suite_create("cfi");
	TCase *tc = unit_tcase("cfi");

	tcase_add_test(tc, cfi_rows_follow_the_instructions);
	tcase_add_test(tc, cfi_shift_moves_only_an_rsp_based_cfa);
	tcase_add_test(tc, cfi_emitted_eh_frame_gives_the_rows_back);
	suite_add_tcase(s, tc);
	return s;
}
