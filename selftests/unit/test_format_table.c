// SPDX-License-Identifier: MIT
/*
 * lib/format/table.c, the indexed tables: lookups by PC and ID, section
 * order, errors.
 */
#include <errno.h>
#include <stdbool.h>
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

/* A small deterministic generator for the tables below. */
static uint64_t next_rand(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/*
 * n faults in two functions: offsets in order (sorted) or not, with
 * repeats; the second function 8 GiB away when wide (keys that do not fit
 * 32-bit offsets).
 */
static void faultmap_of(struct vec *v, uint32_t n, bool sorted, bool wide, uint64_t *x)
{
	uint32_t half = n / 2, i;

	vec_init(v, 0);
	put8(v, 1); put8(v, 0); put16(v, 0); put32(v, 2);
	put64(v, 0x400000); put32(v, half); put32(v, 0);
	for (i = 0; i < half; i++) {
		put32(v, FL_FAULT_LOAD);
		put32(v, sorted ? 2 * (i / 2) : (uint32_t)(next_rand(x) % (n + 1)));
		put32(v, i);
	}
	put64(v, wide ? 0x200400000ull : 0x400000 + 4 * (uint64_t)n);
	put32(v, n - half); put32(v, 0);
	for (i = half; i < n; i++) {
		put32(v, FL_FAULT_STORE);
		put32(v, sorted ? 2 * (i / 2) : (uint32_t)(next_rand(x) % (n + 1)));
		put32(v, i);
	}
}

/* The first entry in section order at pc, by looking at every one. */
static const struct fl_faultmap_entry *first_at(const struct fl_faultmap *fm, uint64_t pc)
{
	for (size_t i = 0; i < fl_faultmap_count(fm); i++)
		if (fl_faultmap_entry(fm, i)->faulting_pc == pc)
			return fl_faultmap_entry(fm, i);
	return NULL;
}

START_TEST(faultmap_lookup_finds_the_first_of_equal_pcs_at_every_size)
{
	static const uint32_t big[] = { 255, 256, 257, 1000, 4095 };
	uint64_t x = 0x9e3779b97f4a7c15ull;
	static struct vec v;

	for (uint32_t k = 0; k < 130 + sizeof(big) / sizeof(big[0]); k++) {
		uint32_t n = k < 130 ? k : big[k - 130];

		for (int variant = 0; variant < 4; variant++) {
			struct fl_faultmap *fm;
			struct fl_diag d;

			faultmap_of(&v, n, variant & 1, variant & 2, &x);
			ck_assert_int_eq(fl_faultmap_parse(v.buf, v.len, 0, &fm, &d), 0);
			ck_assert_uint_eq(fl_faultmap_count(fm), n);
			for (uint32_t i = 0; i < n; i++) {
				uint64_t pc = fl_faultmap_entry(fm, i)->faulting_pc;

				ck_assert_ptr_eq(fl_faultmap_lookup(fm, pc), first_at(fm, pc));
				ck_assert_ptr_eq(fl_faultmap_lookup(fm, pc + 1), first_at(fm, pc + 1));
				ck_assert_ptr_eq(fl_faultmap_lookup(fm, pc - 1), first_at(fm, pc - 1));
			}
			ck_assert_ptr_null(fl_faultmap_lookup(fm, 0));
			ck_assert_ptr_null(fl_faultmap_lookup(fm, 0x3fffff));
			ck_assert_ptr_null(fl_faultmap_lookup(fm, 0x100400000ull));
			ck_assert_ptr_null(fl_faultmap_lookup(fm, UINT64_MAX));
			fl_faultmap_free(fm);
		}
	}
}
END_TEST

START_TEST(stackmap_lookups_find_every_record_at_every_size)
{
	static struct sm_rec rs[600];
	static struct vec v;
	uint64_t x = 0x2545f4914f6cdd1dull;
	/* IDs: a few values, repeated, or any 64-bit value (0 and the largest too). */
	static const uint64_t ids[] = { 0, 7, 0xABCDEF0F, UINT64_MAX, 1ull << 40 };

	for (uint32_t n = 0; n <= 600; n += n < 70 ? 1 : 53) {
		for (int variant = 0; variant < 2; variant++) {
			struct sm_func fs[2] = { { 0x1000, 16, n / 2 },
						 { variant ? 0x300001000ull : 0x9000, 32, n - n / 2 } };
			struct sm_spec s = { 3, 2, 0, n, fs, NULL, rs };
			struct fl_stackmap *sm;
			struct fl_diag d;

			for (uint32_t i = 0; i < n; i++)
				rs[i] = (struct sm_rec){
					.id = variant ? next_rand(&x) % 3 == 0 ? next_rand(&x) :
						ids[next_rand(&x) % 5] : next_rand(&x) % 9,
					.offset = (uint32_t)(next_rand(&x) % 64),
				};
			vec_init(&v, 0);
			sm_table(&v, &s);
			ck_assert_int_eq(fl_stackmap_parse(v.buf, v.len, 0, &sm, &d), 0);
			ck_assert_uint_eq(fl_stackmap_count(sm), n);
			for (uint32_t i = 0; i < n; i++) {
				const struct fl_stackmap_record *r = fl_stackmap_record(sm, i), *first = NULL;
				const struct fl_stackmap_record *const *found = NULL;
				size_t same = 0, at = 0, nfound;

				for (uint32_t j = 0; j < n; j++) {
					const struct fl_stackmap_record *o = fl_stackmap_record(sm, j);

					if (o->pc == r->pc && !first)
						first = o;
					same += o->id == r->id;
				}
				ck_assert_ptr_eq(fl_stackmap_find_pc(sm, r->pc), first);
				nfound = fl_stackmap_find_id(sm, r->id, &found);
				ck_assert_uint_eq(nfound, same);
				/* In section order, every one of them. */
				for (uint32_t j = 0; j < n; j++)
					if (fl_stackmap_record(sm, j)->id == r->id)
						ck_assert_ptr_eq(found[at++], fl_stackmap_record(sm, j));
			}
			ck_assert_uint_eq(fl_stackmap_find_id(sm, 12345, NULL), 0);
			ck_assert_ptr_null(fl_stackmap_find_pc(sm, 0xfff));
			ck_assert_ptr_null(fl_stackmap_find_pc(sm, UINT64_MAX));
			fl_stackmap_free(sm);
		}
	}
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
	tcase_add_test(tc, faultmap_lookup_finds_the_first_of_equal_pcs_at_every_size);
	tcase_add_test(tc, stackmap_lookups_find_every_record_at_every_size);
	suite_add_tcase(s, tc);
	return s;
}
