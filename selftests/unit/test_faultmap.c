// SPDX-License-Identifier: MIT
/* The fault map cursor: every path, every rejection, on hand-built vectors. */
#include <errno.h>
#include <string.h>

#include <check.h>

#include <faultline/format.h>

#include "suites.h"
#include "vec.h"

/* A table: header, then per function {address, entries}. */
struct fm_fault {
	uint32_t kind, faulting, handler;
};

static void fm_table(struct vec *v, uint32_t nfunc, const uint64_t *addr,
		     const uint32_t *npcs, const struct fm_fault *faults)
{
	uint32_t f, i, k = 0;

	put8(v, 1);
	put8(v, 0);
	put16(v, 0);
	put32(v, nfunc);
	for (f = 0; f < nfunc; f++) {
		put64(v, addr[f]);
		put32(v, npcs[f]);
		put32(v, 0);
		for (i = 0; i < npcs[f]; i++, k++) {
			put32(v, faults[k].kind);
			put32(v, faults[k].faulting);
			put32(v, faults[k].handler);
		}
	}
}

static const uint64_t two_addr[] = { 0x1000, 0x2000 };
static const uint32_t two_npcs[] = { 2, 1 };
static const struct fm_fault two_faults[] = {
	{ FL_FAULT_LOAD, 4, 20 },
	{ FL_FAULT_STORE, 9, 20 },
	{ FL_FAULT_LOAD_STORE, 0, 7 },
};

/* Two functions: 8 + 2 * 16 + 3 * 12 = 76 bytes. */
static void fm_two(struct vec *v)
{
	vec_init(v, 0);
	fm_table(v, 2, two_addr, two_npcs, two_faults);
}

START_TEST(faultmap_walks_a_table_as_events)
{
	struct fl_faultmap_cursor c;
	struct fl_faultmap_event ev;
	struct fl_diag d;
	struct vec v;

	fm_two(&v);
	ck_assert_uint_eq(v.len, 76);
	fl_faultmap_cursor_init(&c, v.buf, v.len, 0, &d);

	ck_assert_int_eq(fl_faultmap_next(&c, &ev), 1);
	ck_assert_int_eq(ev.type, FL_FM_TABLE);
	ck_assert_uint_eq(ev.header.version, 1);
	ck_assert_uint_eq(ev.header.num_functions, 2);

	ck_assert_int_eq(fl_faultmap_next(&c, &ev), 1);
	ck_assert_int_eq(ev.type, FL_FM_FUNCTION);
	ck_assert_uint_eq(ev.function.address, 0x1000);
	ck_assert_uint_eq(ev.function.address_offset, 8);
	ck_assert_uint_eq(ev.function.num_faulting_pcs, 2);

	ck_assert_int_eq(fl_faultmap_next(&c, &ev), 1);
	ck_assert_int_eq(ev.type, FL_FM_FAULT);
	ck_assert_uint_eq(ev.fault.kind, FL_FAULT_LOAD);
	ck_assert_uint_eq(ev.fault.faulting_pc_offset, 4);
	ck_assert_uint_eq(ev.fault.handler_pc_offset, 20);
	ck_assert_uint_eq(ev.fault.function_address, 0x1000);
	ck_assert_uint_eq(ev.offset, 24);

	ck_assert_int_eq(fl_faultmap_next(&c, &ev), 1);
	ck_assert_uint_eq(ev.fault.kind, FL_FAULT_STORE);
	ck_assert_uint_eq(ev.fault.index, 1);

	ck_assert_int_eq(fl_faultmap_next(&c, &ev), 1);
	ck_assert_int_eq(ev.type, FL_FM_FUNCTION);
	ck_assert_uint_eq(ev.function.index, 1);
	ck_assert_uint_eq(ev.function.address_offset, 48);

	ck_assert_int_eq(fl_faultmap_next(&c, &ev), 1);
	ck_assert_uint_eq(ev.fault.kind, FL_FAULT_LOAD_STORE);
	ck_assert_uint_eq(ev.fault.function, 1);

	ck_assert_int_eq(fl_faultmap_next(&c, &ev), 1);
	ck_assert_int_eq(ev.type, FL_FM_TABLE_END);
	ck_assert_uint_eq(ev.offset, 76);
	ck_assert_int_eq(fl_faultmap_next(&c, &ev), 0);
	ck_assert_int_eq(fl_faultmap_next(&c, &ev), 0);
}
END_TEST

START_TEST(faultmap_walks_concatenated_tables)
{
	struct fl_faultmap_cursor c;
	struct fl_faultmap_event ev;
	uint32_t tables = 0, faults = 0;
	struct vec v;

	fm_two(&v);
	fm_table(&v, 2, two_addr, two_npcs, two_faults);
	fm_table(&v, 0, NULL, NULL, NULL);
	fl_faultmap_cursor_init(&c, v.buf, v.len, 0, NULL);
	while (fl_faultmap_next(&c, &ev) > 0) {
		if (ev.type == FL_FM_TABLE) {
			ck_assert_uint_eq(ev.table, tables);
			tables++;
		}
		if (ev.type == FL_FM_FAULT)
			faults++;
	}
	ck_assert_uint_eq(tables, 3);
	ck_assert_uint_eq(faults, 6);
	ck_assert_int_eq(fl_faultmap_validate(v.buf, v.len, 0, NULL), 6);
}
END_TEST

START_TEST(faultmap_accepts_a_table_without_functions)
{
	struct vec v;

	vec_init(&v, 0);
	fm_table(&v, 0, NULL, NULL, NULL);
	ck_assert_int_eq(fl_faultmap_validate(v.buf, v.len, 0, NULL), 0);
}
END_TEST

START_TEST(faultmap_rejects_an_empty_section)
{
	struct fl_diag d;

	ck_assert_int_eq(fl_faultmap_validate("", 0, 0, &d), -EMSGSIZE);
	ck_assert_str_eq(d.msg, ".llvm_faultmaps: table 0: section is empty");
	ck_assert_int_eq(d.err, -EMSGSIZE);
	ck_assert_int_eq(fl_faultmap_validate(NULL, 100, 0, &d), -EMSGSIZE);
}
END_TEST

/* Every proper prefix of a table ends inside it: all must be rejected. */
START_TEST(faultmap_rejects_truncation_at_every_length)
{
	struct fl_diag d;
	struct vec v;
	size_t len;

	fm_two(&v);
	for (len = 1; len < v.len; len++) {
		long ret = fl_faultmap_validate(v.buf, len, 0, &d);

		ck_assert_msg(ret == -EMSGSIZE, "length %zu: %ld (%s)", len, ret, d.msg);
		ck_assert_ptr_nonnull(strstr(d.msg, ".llvm_faultmaps: table 0: "));
	}
	/* A second table cut short is an error in table 1. */
	fm_table(&v, 2, two_addr, two_npcs, two_faults);
	ck_assert_int_eq(fl_faultmap_validate(v.buf, v.len - 1, 0, &d), -EMSGSIZE);
	ck_assert_ptr_nonnull(strstr(d.msg, "table 1: "));
}
END_TEST

START_TEST(faultmap_rejects_a_truncated_header_with_its_size)
{
	struct fl_diag d;
	struct vec v;

	fm_two(&v);
	ck_assert_int_eq(fl_faultmap_validate(v.buf, 5, 0, &d), -EMSGSIZE);
	ck_assert_str_eq(d.msg, ".llvm_faultmaps: table 0: header truncated: "
			 "8 bytes needed at offset 0, 5 left");
}
END_TEST

START_TEST(faultmap_rejects_num_functions_past_the_end)
{
	static const uint32_t counts[] = { 3, 1000, 0x7fffffff, 0xffffffff };
	struct fl_diag d;
	struct vec v;
	size_t i;

	for (i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		fm_two(&v);
		patch_n(&v, 4, counts[i], 4);
		ck_assert_int_eq(fl_faultmap_validate(v.buf, v.len, 0, &d), -EMSGSIZE);
		/* 3 functions pass the header check; function 0 then runs out. */
		ck_assert_ptr_nonnull(strstr(d.msg, i == 0 ? "function 0: NumFaultingPCs 2 "
					     "needs 24 bytes, 20 left" : "NumFunctions"));
	}
	ck_assert_str_eq(d.msg, ".llvm_faultmaps: table 0: NumFunctions 4294967295 "
			 "needs at least 68719476720 bytes, 68 left");
}
END_TEST

START_TEST(faultmap_rejects_num_faulting_pcs_past_the_end)
{
	struct fl_diag d;
	struct vec v;

	fm_two(&v);
	/* function 1 claims 2 entries: only room for 1 */
	patch_n(&v, 56, 2, 4);
	ck_assert_int_eq(fl_faultmap_validate(v.buf, v.len, 0, &d), -EMSGSIZE);
	ck_assert_str_eq(d.msg, ".llvm_faultmaps: table 0: function 1: "
			 "NumFaultingPCs 2 needs 24 bytes, 12 left");
	fm_two(&v);
	patch_n(&v, 16, 0xffffffff, 4);
	ck_assert_int_eq(fl_faultmap_validate(v.buf, v.len, 0, &d), -EMSGSIZE);
	ck_assert_ptr_nonnull(strstr(d.msg, "function 0: NumFaultingPCs 4294967295"));
}
END_TEST

START_TEST(faultmap_rejects_unknown_fault_kinds)
{
	static const uint32_t kinds[] = { 0, 4, 0xffffffff };
	struct fl_diag d;
	struct vec v;
	size_t i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		fm_two(&v);
		patch_n(&v, 64, kinds[i], 4);	/* function 1, fault 0 */
		ck_assert_int_eq(fl_faultmap_validate(v.buf, v.len, 0, &d), -EINVAL);
	}
	fm_two(&v);
	patch_n(&v, 64, 4, 4);
	ck_assert_int_eq(fl_faultmap_validate(v.buf, v.len, 0, &d), -EINVAL);
	ck_assert_str_eq(d.msg, ".llvm_faultmaps: table 0: function 1: fault 0: "
			 "FaultKind 4 unknown");
}
END_TEST

START_TEST(faultmap_rejects_unsupported_versions)
{
	static const uint8_t versions[] = { 0, 2, 3, 255 };
	struct fl_diag d;
	struct vec v;
	size_t i;

	for (i = 0; i < sizeof(versions); i++) {
		fm_two(&v);
		v.buf[0] = versions[i];
		ck_assert_int_eq(fl_faultmap_validate(v.buf, v.len, 0, &d),
				 -EPROTONOSUPPORT);
	}
	ck_assert_str_eq(d.msg, ".llvm_faultmaps: table 0: Version 255 unsupported "
			 "(supported: 1)");
}
END_TEST

/*
 * Fault maps are in the object's byte order: a big-endian table reads with
 * FL_PARSE_BIG_ENDIAN, and a table in the other byte order than the flag
 * says is rejected with a hint.
 */
START_TEST(faultmap_reads_the_objects_byte_order_and_rejects_the_other)
{
	struct fl_faultmap_cursor c;
	struct fl_faultmap_event ev;
	struct fl_diag d;
	struct vec v;

	vec_init(&v, 1);
	fm_table(&v, 2, two_addr, two_npcs, two_faults);
	ck_assert_int_eq(fl_faultmap_validate(v.buf, v.len, FL_PARSE_BIG_ENDIAN, &d), 3);
	fl_faultmap_cursor_init(&c, v.buf, v.len, FL_PARSE_BIG_ENDIAN, &d);
	ck_assert_int_eq(fl_faultmap_next(&c, &ev), 1);
	ck_assert_int_eq(fl_faultmap_next(&c, &ev), 1);
	ck_assert_uint_eq(ev.function.address, 0x1000);
	ck_assert_int_eq(fl_faultmap_next(&c, &ev), 1);
	ck_assert_uint_eq(ev.fault.handler_pc_offset, 20);

	ck_assert_int_lt(fl_faultmap_validate(v.buf, v.len, 0, &d), 0);
	ck_assert_ptr_nonnull(strstr(d.msg, "looks big-endian, the object is little-endian"));
	fm_two(&v);
	ck_assert_int_lt(fl_faultmap_validate(v.buf, v.len, FL_PARSE_BIG_ENDIAN, &d), 0);
	ck_assert_ptr_nonnull(strstr(d.msg, "looks little-endian, the object is big-endian"));
}
END_TEST

START_TEST(faultmap_reserved_fields_are_accepted_unless_strict)
{
	static const size_t offsets[] = { 1, 2, 3, 20, 60 };
	struct fl_diag d;
	struct vec v;
	size_t i;

	for (i = 0; i < sizeof(offsets) / sizeof(offsets[0]); i++) {
		fm_two(&v);
		v.buf[offsets[i]] = 0x5a;
		ck_assert_int_eq(fl_faultmap_validate(v.buf, v.len, 0, &d), 3);
		ck_assert_int_eq(fl_faultmap_validate(v.buf, v.len, FL_PARSE_STRICT, &d),
				 -EINVAL);
		ck_assert_ptr_nonnull(strstr(d.msg, "(strict)"));
	}
	ck_assert_str_eq(d.msg, ".llvm_faultmaps: table 0: function 1: Reserved is "
			 "0x5a, expected 0 (strict)");
}
END_TEST

START_TEST(faultmap_error_is_sticky)
{
	struct fl_faultmap_cursor c;
	struct fl_faultmap_event ev;
	struct vec v;

	fm_two(&v);
	patch_n(&v, 24, 9, 4);
	fl_faultmap_cursor_init(&c, v.buf, v.len, 0, NULL);
	ck_assert_int_eq(fl_faultmap_next(&c, &ev), 1);
	ck_assert_int_eq(fl_faultmap_next(&c, &ev), 1);
	ck_assert_int_eq(fl_faultmap_next(&c, &ev), -EINVAL);
	ck_assert_int_eq(fl_faultmap_next(&c, &ev), -EINVAL);
}
END_TEST

START_TEST(fault_kind_names_are_llvms)
{
	ck_assert_str_eq(fl_fault_kind_name(1), "FaultingLoad");
	ck_assert_str_eq(fl_fault_kind_name(2), "FaultingLoadStore");
	ck_assert_str_eq(fl_fault_kind_name(3), "FaultingStore");
	ck_assert_ptr_null(fl_fault_kind_name(0));
	ck_assert_ptr_null(fl_fault_kind_name(4));
}
END_TEST

Suite *faultmap_suite(void)
{
	Suite *s = suite_create("faultmap");
	TCase *tc = unit_tcase("cursor");

	tcase_add_test(tc, faultmap_walks_a_table_as_events);
	tcase_add_test(tc, faultmap_walks_concatenated_tables);
	tcase_add_test(tc, faultmap_accepts_a_table_without_functions);
	tcase_add_test(tc, faultmap_rejects_an_empty_section);
	tcase_add_test(tc, faultmap_rejects_truncation_at_every_length);
	tcase_add_test(tc, faultmap_rejects_a_truncated_header_with_its_size);
	tcase_add_test(tc, faultmap_rejects_num_functions_past_the_end);
	tcase_add_test(tc, faultmap_rejects_num_faulting_pcs_past_the_end);
	tcase_add_test(tc, faultmap_rejects_unknown_fault_kinds);
	tcase_add_test(tc, faultmap_rejects_unsupported_versions);
	tcase_add_test(tc, faultmap_reads_the_objects_byte_order_and_rejects_the_other);
	tcase_add_test(tc, faultmap_reserved_fields_are_accepted_unless_strict);
	tcase_add_test(tc, faultmap_error_is_sticky);
	tcase_add_test(tc, fault_kind_names_are_llvms);
	suite_add_tcase(s, tc);
	return s;
}
