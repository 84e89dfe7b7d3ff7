// SPDX-License-Identifier: MIT
/*
 * lib/format/table.c, the indexed tables: lookups by PC and ID, section
 * order, errors.
 */
#include <errno.h>
#include <string.h>

#include <check.h>

#include <faultline/format.h>

#include "smvec.h"
#include "suites.h"

static void faultmap_vec(struct vec *v)
{
	vec_init(v, 0);
	put8(v, 1); put8(v, 0); put16(v, 0); put32(v, 2);
	/* function 0x2000: faults at +4 and +12 */
	put64(v, 0x2000); put32(v, 2); put32(v, 0);
	put32(v, FL_FAULT_LOAD); put32(v, 4); put32(v, 40);
	put32(v, FL_FAULT_STORE); put32(v, 12); put32(v, 44);
	/* function 0x1000: fault at +0 */
	put64(v, 0x1000); put32(v, 1); put32(v, 0);
	put32(v, FL_FAULT_LOAD_STORE); put32(v, 0); put32(v, 8);
}

START_TEST(faultmap_table_looks_up_by_faulting_pc)
{
	const struct fl_faultmap_entry *e;
	struct fl_faultmap *fm;
	struct fl_diag d;
	struct vec v;

	faultmap_vec(&v);
	ck_assert_int_eq(fl_faultmap_parse(v.buf, v.len, 0, &fm, &d), 0);
	ck_assert_uint_eq(fl_faultmap_count(fm), 3);
	/* Section order is kept. */
	ck_assert_uint_eq(fl_faultmap_entry(fm, 0)->faulting_pc, 0x2004);
	ck_assert_uint_eq(fl_faultmap_entry(fm, 2)->faulting_pc, 0x1000);
	ck_assert_ptr_null(fl_faultmap_entry(fm, 3));

	e = fl_faultmap_lookup(fm, 0x200c);
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(e->handler_pc, 0x202c);
	ck_assert_uint_eq(e->kind, FL_FAULT_STORE);
	ck_assert_uint_eq(e->function, 0);
	ck_assert_uint_eq(e->index, 1);
	e = fl_faultmap_lookup(fm, 0x1000);
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(e->kind, FL_FAULT_LOAD_STORE);
	ck_assert_uint_eq(e->function_address, 0x1000);
	ck_assert_ptr_null(fl_faultmap_lookup(fm, 0x1001));
	ck_assert_ptr_null(fl_faultmap_lookup(fm, 0));
	ck_assert_ptr_null(fl_faultmap_lookup(fm, UINT64_MAX));
	fl_faultmap_free(fm);
}
END_TEST

START_TEST(faultmap_table_rejects_malformed_input_and_sets_out_null)
{
	struct fl_faultmap *fm = (struct fl_faultmap *)&fm;
	struct fl_diag d;
	struct vec v;

	faultmap_vec(&v);
	ck_assert_int_eq(fl_faultmap_parse(v.buf, v.len - 1, 0, &fm, &d), -EMSGSIZE);
	ck_assert_ptr_null(fm);
	ck_assert_ptr_nonnull(strstr(d.msg, ".llvm_faultmaps: table 0:"));
}
END_TEST

START_TEST(faultmap_table_of_an_empty_table_is_empty)
{
	struct fl_faultmap *fm;
	struct vec v;

	vec_init(&v, 0);
	put8(&v, 1); put8(&v, 0); put16(&v, 0); put32(&v, 0);
	ck_assert_int_eq(fl_faultmap_parse(v.buf, v.len, 0, &fm, NULL), 0);
	ck_assert_uint_eq(fl_faultmap_count(fm), 0);
	ck_assert_ptr_null(fl_faultmap_lookup(fm, 0));
	fl_faultmap_free(fm);
	fl_faultmap_free(NULL);
}
END_TEST

static const struct sm_func funcs[] = { { 0x1000, 32, 2 }, { 0x3000, 48, 2 } };
static const uint64_t consts[] = { 0x123456789ULL };
static const struct sm_loc locs[] = {
	{ FL_LOC_CONSTANT_INDEX, 8, 0, 0 },
	{ FL_LOC_INDIRECT, 8, 7, -24 },
};
static const struct sm_live_out los[] = { { 3, 8 } };
static const struct sm_rec recs[] = {
	{ 0xABCDEF0F, 0x10, 2, locs, 1, los },
	{ 5, 0x20, 0, NULL, 0, NULL },
	{ 0xABCDEF0F, 0x08, 1, locs + 1, 0, NULL },
	{ 2, 0x10, 0, NULL, 1, los },
};

START_TEST(stackmap_table_finds_records_by_id_and_pc)
{
	const struct fl_stackmap_record *const *found;
	const struct fl_stackmap_record *r;
	struct sm_spec s = { 3, 2, 1, 4, funcs, consts, recs };
	struct fl_stackmap *sm;
	struct fl_diag d;
	struct vec v;

	vec_init(&v, 0);
	sm_table(&v, &s);
	ck_assert_int_eq(fl_stackmap_parse(v.buf, v.len, 0, &sm, &d), 0);
	ck_assert_uint_eq(fl_stackmap_count(sm), 4);

	ck_assert_uint_eq(fl_stackmap_find_id(sm, 0xABCDEF0F, &found), 2);
	ck_assert_uint_eq(found[0]->pc, 0x1010);	/* section order */
	ck_assert_uint_eq(found[1]->pc, 0x3008);
	ck_assert_uint_eq(found[1]->stack_size, 48);
	ck_assert_uint_eq(found[1]->function, 1);
	ck_assert_uint_eq(fl_stackmap_find_id(sm, 5, &found), 1);
	ck_assert_uint_eq(found[0]->index, 1);
	ck_assert_uint_eq(fl_stackmap_find_id(sm, 6, &found), 0);
	ck_assert_uint_eq(fl_stackmap_find_id(sm, 0, NULL), 0);

	r = fl_stackmap_find_pc(sm, 0x1010);
	ck_assert_ptr_nonnull(r);
	ck_assert_uint_eq(r->id, 0xABCDEF0F);
	ck_assert_uint_eq(r->num_locations, 2);
	ck_assert_uint_eq(r->locations[0].kind, FL_LOC_CONSTANT_INDEX);
	ck_assert_uint_eq(r->locations[0].constant, 0x123456789ULL);
	ck_assert_int_eq(r->locations[1].offset, -24);
	ck_assert_uint_eq(r->num_live_outs, 1);
	ck_assert_uint_eq(r->live_outs[0].dwarf_reg, 3);
	ck_assert_uint_eq(r->version, 3);
	r = fl_stackmap_find_pc(sm, 0x3010);
	ck_assert_ptr_nonnull(r);
	ck_assert_uint_eq(r->id, 2);
	ck_assert_ptr_null(fl_stackmap_find_pc(sm, 0x3011));
	ck_assert_ptr_null(fl_stackmap_record(sm, 4));
	ck_assert_uint_eq(fl_stackmap_record(sm, 3)->live_outs[0].size, 8);
	fl_stackmap_free(sm);
}
END_TEST

START_TEST(stackmap_table_rejects_malformed_input_and_sets_out_null)
{
	struct sm_spec s = { 3, 2, 1, 4, funcs, consts, recs };
	struct fl_stackmap *sm = (struct fl_stackmap *)&sm;
	struct fl_diag d;
	struct vec v;

	vec_init(&v, 0);
	sm_table(&v, &s);
	ck_assert_int_eq(fl_stackmap_parse(v.buf, v.len - 8, 0, &sm, &d), -EMSGSIZE);
	ck_assert_ptr_null(sm);
	fl_stackmap_free(NULL);
}
END_TEST

Suite *format_table_suite(void)
{
	Suite *s = suite_create("format_table");
	TCase *tc = unit_tcase("table");

	tcase_add_test(tc, faultmap_table_looks_up_by_faulting_pc);
	tcase_add_test(tc, faultmap_table_rejects_malformed_input_and_sets_out_null);
	tcase_add_test(tc, faultmap_table_of_an_empty_table_is_empty);
	tcase_add_test(tc, stackmap_table_finds_records_by_id_and_pc);
	tcase_add_test(tc, stackmap_table_rejects_malformed_input_and_sets_out_null);
	suite_add_tcase(s, tc);
	return s;
}
