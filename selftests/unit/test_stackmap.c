// SPDX-License-Identifier: MIT
/* The stack map cursor, versions 1 to 3: every path, every rejection. */
#include <errno.h>
#include <string.h>

#include <check.h>

#include <faultline/format.h>

#include "smvec.h"
#include "suites.h"

static const struct sm_func funcs[] = {
	{ 0x1000, 16, 2 },
	{ 0x2000, FL_STACK_SIZE_DYNAMIC, 1 },
};
static const uint64_t consts[] = { 4294967296ULL, UINT64_MAX };
static const struct sm_loc r0_locs[] = {
	{ FL_LOC_REGISTER, 8, 5, 0 },
	{ FL_LOC_DIRECT, 8, 6, -8 },
	{ FL_LOC_INDIRECT, 8, 7, 16 },
	{ FL_LOC_CONSTANT, 8, 0, -1 },
	{ FL_LOC_CONSTANT_INDEX, 8, 0, 1 },
};
static const struct sm_loc r1_locs[] = { { FL_LOC_REGISTER, 4, 0, 0 } };
static const struct sm_live_out r1_los[] = { { 0, 8 }, { 7, 8 } };
static const struct sm_live_out r2_los[] = { { 3, 16 } };
static const struct sm_rec recs[] = {
	{ 77, 8, 5, r0_locs, 0, NULL },
	{ 78, 16, 1, r1_locs, 2, r1_los },
	{ 77, 4, 0, NULL, 1, r2_los },
};

static void sample(struct vec *v, uint8_t version, int big)
{
	struct sm_spec s = { version, 2, 2, 3, funcs, consts, recs };

	vec_init(v, big);
	sm_table(v, &s);
}

/* Section offsets in the v3 sample (see the layout in stackmap.c). */
#define V3_SIZE 240
#define V3_R0 80
#define V3_R1 168
#define V3_R2 216

START_TEST(stackmap_v3_walks_as_events)
{
	struct fl_stackmap_cursor c;
	struct fl_stackmap_event ev;
	struct fl_diag d;
	struct vec v;

	sample(&v, 3, 0);
	ck_assert_uint_eq(v.len, V3_SIZE);
	fl_stackmap_cursor_init(&c, v.buf, v.len, FL_PARSE_STRICT, &d);

	ck_assert_int_eq(fl_stackmap_next(&c, &ev), 1);
	ck_assert_int_eq(ev.type, FL_SM_TABLE);
	ck_assert_uint_eq(ev.header.version, 3);
	ck_assert_uint_eq(ev.header.num_functions, 2);
	ck_assert_uint_eq(ev.header.num_constants, 2);
	ck_assert_uint_eq(ev.header.num_records, 3);

	ck_assert_int_eq(fl_stackmap_next(&c, &ev), 1);
	ck_assert_int_eq(ev.type, FL_SM_FUNCTION);
	ck_assert_uint_eq(ev.function.address, 0x1000);
	ck_assert_uint_eq(ev.function.address_offset, 16);
	ck_assert_uint_eq(ev.function.stack_size, 16);
	ck_assert_uint_eq(ev.function.record_count, 2);
	ck_assert_int_eq(fl_stackmap_next(&c, &ev), 1);
	ck_assert_uint_eq(ev.function.address_offset, 40);
	ck_assert_uint_eq(ev.function.stack_size, FL_STACK_SIZE_DYNAMIC);

	ck_assert_int_eq(fl_stackmap_next(&c, &ev), 1);
	ck_assert_int_eq(ev.type, FL_SM_CONSTANT);
	ck_assert_uint_eq(ev.constant.value, 4294967296ULL);
	ck_assert_int_eq(fl_stackmap_next(&c, &ev), 1);
	ck_assert_uint_eq(ev.constant.index, 1);
	ck_assert_uint_eq(ev.constant.value, UINT64_MAX);

	ck_assert_int_eq(fl_stackmap_next(&c, &ev), 1);
	ck_assert_int_eq(ev.type, FL_SM_RECORD);
	ck_assert_uint_eq(ev.offset, V3_R0);
	ck_assert_uint_eq(ev.record.id, 77);
	ck_assert_uint_eq(ev.record.instruction_offset, 8);
	ck_assert_uint_eq(ev.record.num_locations, 5);
	ck_assert_uint_eq(ev.record.num_live_outs, 0);
	ck_assert_uint_eq(ev.record.function, 0);
	ck_assert_uint_eq(ev.record.function_address, 0x1000);
	ck_assert_uint_eq(ev.record.stack_size, 16);

	ck_assert_int_eq(fl_stackmap_next(&c, &ev), 1);
	ck_assert_int_eq(ev.type, FL_SM_LOCATION);
	ck_assert_uint_eq(ev.location.kind, FL_LOC_REGISTER);
	ck_assert_uint_eq(ev.location.dwarf_reg, 5);
	ck_assert_uint_eq(ev.location.size, 8);
	ck_assert_int_eq(fl_stackmap_next(&c, &ev), 1);
	ck_assert_uint_eq(ev.location.kind, FL_LOC_DIRECT);
	ck_assert_int_eq(ev.location.offset, -8);
	ck_assert_int_eq(fl_stackmap_next(&c, &ev), 1);
	ck_assert_uint_eq(ev.location.kind, FL_LOC_INDIRECT);
	ck_assert_int_eq(ev.location.offset, 16);
	ck_assert_uint_eq(ev.location.dwarf_reg, 7);
	ck_assert_int_eq(fl_stackmap_next(&c, &ev), 1);
	ck_assert_uint_eq(ev.location.kind, FL_LOC_CONSTANT);
	ck_assert_uint_eq(ev.location.constant, UINT64_MAX); /* -1 sign-extended */
	ck_assert_int_eq(fl_stackmap_next(&c, &ev), 1);
	ck_assert_uint_eq(ev.location.kind, FL_LOC_CONSTANT_INDEX);
	ck_assert_uint_eq(ev.location.constant, UINT64_MAX);
	ck_assert_uint_eq(ev.location.index, 4);
	ck_assert_int_eq(fl_stackmap_next(&c, &ev), 1);
	ck_assert_int_eq(ev.type, FL_SM_RECORD_END);

	ck_assert_int_eq(fl_stackmap_next(&c, &ev), 1);
	ck_assert_int_eq(ev.type, FL_SM_RECORD);
	ck_assert_uint_eq(ev.offset, V3_R1);
	ck_assert_uint_eq(ev.record.function, 0);
	ck_assert_int_eq(fl_stackmap_next(&c, &ev), 1);
	ck_assert_uint_eq(ev.location.size, 4);
	ck_assert_int_eq(fl_stackmap_next(&c, &ev), 1);
	ck_assert_int_eq(ev.type, FL_SM_LIVE_OUT);
	ck_assert_uint_eq(ev.live_out.dwarf_reg, 0);
	ck_assert_uint_eq(ev.live_out.size, 8);
	ck_assert_int_eq(fl_stackmap_next(&c, &ev), 1);
	ck_assert_uint_eq(ev.live_out.dwarf_reg, 7);
	ck_assert_uint_eq(ev.live_out.index, 1);
	ck_assert_int_eq(fl_stackmap_next(&c, &ev), 1);
	ck_assert_int_eq(ev.type, FL_SM_RECORD_END);

	ck_assert_int_eq(fl_stackmap_next(&c, &ev), 1);
	ck_assert_uint_eq(ev.offset, V3_R2);
	ck_assert_uint_eq(ev.record.function, 1);
	ck_assert_uint_eq(ev.record.function_address, 0x2000);
	ck_assert_uint_eq(ev.record.stack_size, FL_STACK_SIZE_DYNAMIC);
	ck_assert_int_eq(fl_stackmap_next(&c, &ev), 1);
	ck_assert_uint_eq(ev.live_out.size, 16);
	ck_assert_int_eq(fl_stackmap_next(&c, &ev), 1);
	ck_assert_int_eq(ev.type, FL_SM_RECORD_END);
	ck_assert_int_eq(fl_stackmap_next(&c, &ev), 1);
	ck_assert_int_eq(ev.type, FL_SM_TABLE_END);
	ck_assert_uint_eq(ev.offset, V3_SIZE);
	ck_assert_int_eq(fl_stackmap_next(&c, &ev), 0);
}
END_TEST

/* The same content in v1, v2 and v3, in both byte orders, gives the same records. */
START_TEST(stackmap_all_versions_and_byte_orders_agree)
{
	struct fl_stackmap_event want[64], got;
	struct fl_stackmap_cursor c;
	struct fl_diag d;
	struct vec v;
	int n = 0, i, version, big, ret;

	sample(&v, 3, 0);
	fl_stackmap_cursor_init(&c, v.buf, v.len, 0, &d);
	while (fl_stackmap_next(&c, &want[n]) > 0)
		n++;
	ck_assert_int_eq(n, 21);

	for (version = 1; version <= 3; version++) {
		for (big = 0; big <= 1; big++) {
			sample(&v, (uint8_t)version, big);
			fl_stackmap_cursor_init(&c, v.buf, v.len,
						FL_PARSE_STRICT | (big ? FL_PARSE_BIG_ENDIAN : 0), &d);
			for (i = 0; (ret = fl_stackmap_next(&c, &got)) > 0; i++) {
				ck_assert_int_eq(got.type, want[i].type);
				switch (got.type) {
				case FL_SM_TABLE:
					ck_assert_uint_eq(got.header.version, version);
					ck_assert_uint_eq(got.header.num_records, 3);
					break;
				case FL_SM_FUNCTION:
					ck_assert_uint_eq(got.function.address, want[i].function.address);
					ck_assert_uint_eq(got.function.stack_size, want[i].function.stack_size);
					ck_assert_uint_eq(got.function.record_count,
							  version == 1 ? 0 : want[i].function.record_count);
					break;
				case FL_SM_RECORD:
					ck_assert_uint_eq(got.record.id, want[i].record.id);
					ck_assert_uint_eq(got.record.instruction_offset,
							  want[i].record.instruction_offset);
					ck_assert_uint_eq(got.record.function, version == 1 ?
							  FL_NO_FUNCTION : want[i].record.function);
					ck_assert_uint_eq(got.record.num_live_outs,
							  want[i].record.num_live_outs);
					break;
				case FL_SM_LOCATION:
					ck_assert_uint_eq(got.location.kind, want[i].location.kind);
					ck_assert_uint_eq(got.location.size, want[i].location.size);
					ck_assert_uint_eq(got.location.dwarf_reg, want[i].location.dwarf_reg);
					ck_assert_int_eq(got.location.offset, want[i].location.offset);
					ck_assert_uint_eq(got.location.constant, want[i].location.constant);
					break;
				case FL_SM_LIVE_OUT:
					ck_assert_uint_eq(got.live_out.dwarf_reg, want[i].live_out.dwarf_reg);
					ck_assert_uint_eq(got.live_out.size, want[i].live_out.size);
					break;
				default:
					break;
				}
			}
			ck_assert_msg(ret == 0, "v%d big=%d: %s", version, big, d.msg);
			ck_assert_int_eq(i, n);
		}
	}
}
END_TEST

START_TEST(stackmap_v1_and_v2_layouts_have_the_documented_sizes)
{
	struct vec v;

	/* v2: functions of 24, locations of 8, no padding after locations. */
	sample(&v, 2, 0);
	/* 16 + 48 + 16 + (16+40+4 -> 64) + (16+8+4+8 -> 40) + (16+4+4 -> 24) */
	ck_assert_uint_eq(v.len, 208);
	ck_assert_int_eq(fl_stackmap_validate(v.buf, v.len, FL_PARSE_STRICT, NULL), 3);
	/* v1: functions of 16. */
	sample(&v, 1, 0);
	ck_assert_uint_eq(v.len, 192);
	ck_assert_int_eq(fl_stackmap_validate(v.buf, v.len, FL_PARSE_STRICT, NULL), 3);
}
END_TEST

START_TEST(stackmap_big_endian_needs_the_flag)
{
	struct fl_diag d;
	struct vec v;

	sample(&v, 3, 1);
	ck_assert_int_lt(fl_stackmap_validate(v.buf, v.len, 0, &d), 0);
	ck_assert_int_eq(fl_stackmap_validate(v.buf, v.len, FL_PARSE_BIG_ENDIAN, &d), 3);
}
END_TEST

START_TEST(stackmap_walks_concatenated_tables_of_mixed_versions)
{
	struct fl_stackmap_cursor c;
	struct fl_stackmap_event ev;
	struct fl_diag d;
	struct vec v, w;
	int tables = 0;

	sample(&v, 3, 0);
	sample(&w, 2, 0);
	memcpy(v.buf + v.len, w.buf, w.len);
	v.len += w.len;
	sample(&w, 1, 0);
	memcpy(v.buf + v.len, w.buf, w.len);
	v.len += w.len;
	fl_stackmap_cursor_init(&c, v.buf, v.len, 0, &d);
	while (fl_stackmap_next(&c, &ev) > 0)
		if (ev.type == FL_SM_TABLE) {
			ck_assert_uint_eq(ev.table, tables);
			ck_assert_uint_eq(ev.header.version, 3 - tables);
			tables++;
		}
	ck_assert_int_eq(tables, 3);
	ck_assert_int_eq(fl_stackmap_validate(v.buf, v.len, 0, &d), 9);
	/* Cut inside the third table: the error names table 2. */
	ck_assert_int_eq(fl_stackmap_validate(v.buf, v.len - 8, 0, &d), -EMSGSIZE);
	ck_assert_ptr_nonnull(strstr(d.msg, ".llvm_stackmaps: table 2: "));
}
END_TEST

START_TEST(stackmap_rejects_truncation_at_every_length)
{
	struct fl_diag d;
	struct vec v;
	int version;
	size_t len;

	for (version = 1; version <= 3; version++) {
		sample(&v, (uint8_t)version, 0);
		for (len = 0; len < v.len; len++) {
			long ret = fl_stackmap_validate(v.buf, len, 0, &d);

			ck_assert_msg(ret == -EMSGSIZE, "v%d length %zu: %ld (%s)",
				      version, len, ret, d.msg);
		}
	}
}
END_TEST

START_TEST(stackmap_rejects_counts_past_the_end)
{
	static const uint32_t counts[] = { 100, 0x10000000, 0xffffffff };
	struct fl_diag d;
	struct vec v;
	size_t i, field;

	for (field = 4; field <= 12; field += 4) {
		for (i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
			sample(&v, 3, 0);
			patch_n(&v, field, counts[i], 4);
			ck_assert_int_eq(fl_stackmap_validate(v.buf, v.len, 0, &d), -EMSGSIZE);
		}
	}
	sample(&v, 3, 0);
	patch_n(&v, 4, 0xffffffff, 4);
	fl_stackmap_validate(v.buf, v.len, 0, &d);
	ck_assert_str_eq(d.msg, ".llvm_stackmaps: table 0: NumFunctions 4294967295 "
			 "needs 103079215080 bytes, 224 left");
	sample(&v, 3, 0);
	patch_n(&v, 8, 0xffffffff, 4);
	fl_stackmap_validate(v.buf, v.len, 0, &d);
	ck_assert_str_eq(d.msg, ".llvm_stackmaps: table 0: NumConstants 4294967295 "
			 "needs 34359738360 bytes, 176 left after the functions");
	sample(&v, 3, 0);
	patch_n(&v, 12, 0xffffffff, 4);
	fl_stackmap_validate(v.buf, v.len, 0, &d);
	ck_assert_str_eq(d.msg, ".llvm_stackmaps: table 0: NumRecords 4294967295 "
			 "needs at least 103079215080 bytes, 160 left after the constants");
}
END_TEST

START_TEST(stackmap_rejects_record_counts_that_do_not_add_up)
{
	static const uint64_t counts[] = { 0, 1, 3, 4, UINT64_MAX, 1ULL << 32 };
	struct fl_diag d;
	struct vec v;
	size_t i;

	for (i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		sample(&v, 3, 0);
		patch_n(&v, 16 + 16, counts[i], 8);	/* function 0: RecordCount */
		ck_assert_int_eq(fl_stackmap_validate(v.buf, v.len, 0, &d), -EINVAL);
	}
	sample(&v, 3, 0);
	patch_n(&v, 32, 1, 8);
	fl_stackmap_validate(v.buf, v.len, 0, &d);
	ck_assert_str_eq(d.msg, ".llvm_stackmaps: table 0: sum of RecordCount 2 != NumRecords 3");
	sample(&v, 3, 0);
	patch_n(&v, 32, UINT64_MAX, 8);
	fl_stackmap_validate(v.buf, v.len, 0, &d);
	ck_assert_str_eq(d.msg, ".llvm_stackmaps: table 0: function 0: RecordCount "
			 "18446744073709551615 takes the sum of RecordCount past NumRecords 3");
	/* v1 has no RecordCount to check. */
	sample(&v, 1, 0);
	ck_assert_int_eq(fl_stackmap_validate(v.buf, v.len, 0, &d), 3);
}
END_TEST

START_TEST(stackmap_assigns_records_across_functions_without_records)
{
	static const struct sm_func f[] = {
		{ 0x10, 8, 0 }, { 0x20, 8, 1 }, { 0x30, 8, 0 }, { 0x40, 8, 0 }, { 0x50, 8, 2 },
	};
	static const struct sm_rec r[] = {
		{ 1, 0, 0, NULL, 0, NULL },
		{ 2, 0, 0, NULL, 0, NULL },
		{ 3, 0, 0, NULL, 0, NULL },
	};
	struct sm_spec s = { 3, 5, 0, 3, f, NULL, r };
	static const uint32_t want[] = { 1, 4, 4 };
	struct fl_stackmap_cursor c;
	struct fl_stackmap_event ev;
	struct vec v;
	int i = 0;

	vec_init(&v, 0);
	sm_table(&v, &s);
	fl_stackmap_cursor_init(&c, v.buf, v.len, 0, NULL);
	while (fl_stackmap_next(&c, &ev) > 0)
		if (ev.type == FL_SM_RECORD) {
			ck_assert_uint_eq(ev.record.function, want[i]);
			ck_assert_uint_eq(ev.record.function_address, f[want[i]].addr);
			i++;
		}
	ck_assert_int_eq(i, 3);
}
END_TEST

START_TEST(stackmap_rejects_unknown_location_kinds)
{
	static const uint8_t kinds[] = { 0, 6, 0xff };
	struct fl_diag d;
	struct vec v;
	size_t i;

	for (i = 0; i < sizeof(kinds); i++) {
		sample(&v, 3, 0);
		v.buf[V3_R0 + 16 + 2 * 12] = kinds[i];	/* record 0, location 2 */
		ck_assert_int_eq(fl_stackmap_validate(v.buf, v.len, 0, &d), -EINVAL);
	}
	ck_assert_str_eq(d.msg, ".llvm_stackmaps: table 0: record 0: location 2: Kind 255 unknown");
}
END_TEST

START_TEST(stackmap_rejects_constant_index_out_of_range)
{
	static const struct sm_func f[] = { { 0, 8, 4 } };
	static const uint64_t k[] = { 1, 2 };
	static const struct sm_loc ok[] = {
		{ FL_LOC_CONSTANT_INDEX, 8, 0, 0 },
		{ FL_LOC_CONSTANT_INDEX, 8, 0, 1 },
		{ FL_LOC_REGISTER, 8, 3, 0 },
	};
	static const struct sm_loc bad[] = {
		{ FL_LOC_REGISTER, 8, 3, 0 },
		{ FL_LOC_CONSTANT, 8, 0, 7 },
		{ FL_LOC_CONSTANT_INDEX, 8, 0, 7 },
	};
	static const struct sm_rec r[] = {
		{ 1, 0, 3, ok, 0, NULL },
		{ 2, 0, 3, ok, 0, NULL },
		{ 3, 0, 3, ok, 0, NULL },
		{ 4, 0, 3, bad, 0, NULL },
	};
	struct sm_spec s = { 3, 1, 2, 4, f, k, r };
	struct fl_diag d;
	struct vec v;

	vec_init(&v, 0);
	sm_table(&v, &s);
	ck_assert_int_eq(fl_stackmap_validate(v.buf, v.len, 0, &d), -EINVAL);
	ck_assert_str_eq(d.msg, ".llvm_stackmaps: table 0: record 3: location 2: "
			 "ConstantIndex 7 >= NumConstants 2");
	/* A negative index is a huge unsigned one. */
	{
		static const struct sm_loc neg[] = { { FL_LOC_CONSTANT_INDEX, 8, 0, -1 } };
		static const struct sm_rec rn[] = { { 1, 0, 1, neg, 0, NULL } };
		static const struct sm_func fn[] = { { 0, 8, 1 } };
		struct sm_spec sn = { 3, 1, 2, 1, fn, k, rn };

		vec_init(&v, 0);
		sm_table(&v, &sn);
		ck_assert_int_eq(fl_stackmap_validate(v.buf, v.len, 0, &d), -EINVAL);
		ck_assert_str_eq(d.msg, ".llvm_stackmaps: table 0: record 0: location 0: "
				 "ConstantIndex 4294967295 >= NumConstants 2");
	}
}
END_TEST

START_TEST(stackmap_rejects_locations_and_live_outs_past_the_end)
{
	struct fl_diag d;
	struct vec v;

	sample(&v, 3, 0);
	patch_n(&v, V3_R2 + 14, 1, 2);	/* record 2: NumLocations 1, no room */
	ck_assert_int_eq(fl_stackmap_validate(v.buf, v.len, 0, &d), -EMSGSIZE);
	ck_assert_str_eq(d.msg, ".llvm_stackmaps: table 0: record 2: NumLocations 1 "
			 "needs 36 bytes, 24 left");
	sample(&v, 3, 0);
	patch_n(&v, V3_R0 + 14, 0xffff, 2);
	ck_assert_int_eq(fl_stackmap_validate(v.buf, v.len, 0, &d), -EMSGSIZE);
	sample(&v, 3, 0);
	patch_n(&v, V3_R2 + 18, 3, 2);	/* record 2: NumLiveOuts 3 */
	ck_assert_int_eq(fl_stackmap_validate(v.buf, v.len, 0, &d), -EMSGSIZE);
	ck_assert_str_eq(d.msg, ".llvm_stackmaps: table 0: record 2: NumLiveOuts 3 "
			 "needs 16 bytes, 8 left");
	sample(&v, 3, 0);
	patch_n(&v, V3_R0 + 16 + 60 + 4 + 2, 0xffff, 2);
	ck_assert_int_eq(fl_stackmap_validate(v.buf, v.len, 0, &d), -EMSGSIZE);
}
END_TEST

START_TEST(stackmap_rejects_unsupported_versions)
{
	static const uint8_t versions[] = { 0, 4, 5, 255 };
	struct fl_diag d;
	struct vec v;
	size_t i;

	for (i = 0; i < sizeof(versions); i++) {
		sample(&v, 3, 0);
		v.buf[0] = versions[i];
		ck_assert_int_eq(fl_stackmap_validate(v.buf, v.len, 0, &d),
				 -EPROTONOSUPPORT);
	}
	ck_assert_str_eq(d.msg, ".llvm_stackmaps: table 0: Version 255 unsupported "
			 "(supported: 1, 2, 3)");
}
END_TEST

START_TEST(stackmap_rejects_an_empty_section)
{
	struct fl_diag d;

	ck_assert_int_eq(fl_stackmap_validate("", 0, 0, &d), -EMSGSIZE);
	ck_assert_str_eq(d.msg, ".llvm_stackmaps: table 0: section is empty");
}
END_TEST

/* Every reserved byte of the v3 sample: accepted, but rejected when strict. */
START_TEST(stackmap_reserved_fields_are_accepted_unless_strict)
{
	static const size_t offsets[] = {
		1, 2, 3,			/* header */
		V3_R0 + 12, V3_R0 + 13,		/* record flags */
		V3_R0 + 16 + 1,			/* location 0 reserved u8 */
		V3_R0 + 16 + 6, V3_R0 + 16 + 7,	/* location 0 reserved u16 */
		V3_R0 + 76,			/* padding after the locations */
		V3_R0 + 80, V3_R0 + 81,		/* padding before NumLiveOuts */
		V3_R1 + 32 + 4 + 2,		/* live-out 0 reserved */
		V3_R1 + 44,			/* padding after the live-outs */
	};
	struct fl_diag d;
	struct vec v;
	size_t i;

	for (i = 0; i < sizeof(offsets) / sizeof(offsets[0]); i++) {
		sample(&v, 3, 0);
		v.buf[offsets[i]] = 0x11;
		ck_assert_msg(fl_stackmap_validate(v.buf, v.len, 0, &d) == 3,
			      "offset %zu: %s", offsets[i], d.msg);
		ck_assert_msg(fl_stackmap_validate(v.buf, v.len, FL_PARSE_STRICT, &d) == -EINVAL,
			      "offset %zu not rejected when strict", offsets[i]);
		ck_assert_ptr_nonnull(strstr(d.msg, "(strict)"));
	}
}
END_TEST

START_TEST(stackmap_error_is_sticky_and_diag_optional)
{
	struct fl_stackmap_cursor c;
	struct fl_stackmap_event ev;
	struct vec v;
	int ret;

	sample(&v, 3, 0);
	v.buf[V3_R0 + 16] = 9;
	fl_stackmap_cursor_init(&c, v.buf, v.len, 0, NULL);
	while ((ret = fl_stackmap_next(&c, &ev)) > 0)
		;
	ck_assert_int_eq(ret, -EINVAL);
	ck_assert_int_eq(fl_stackmap_next(&c, &ev), -EINVAL);
}
END_TEST

START_TEST(location_kind_names)
{
	ck_assert_str_eq(fl_location_kind_name(1), "Register");
	ck_assert_str_eq(fl_location_kind_name(5), "ConstantIndex");
	ck_assert_ptr_null(fl_location_kind_name(0));
	ck_assert_ptr_null(fl_location_kind_name(6));
}
END_TEST

Suite *stackmap_suite(void)
{
	Suite *s = suite_create("stackmap");
	TCase *tc = unit_tcase("cursor");

	tcase_add_test(tc, stackmap_v3_walks_as_events);
	tcase_add_test(tc, stackmap_all_versions_and_byte_orders_agree);
	tcase_add_test(tc, stackmap_v1_and_v2_layouts_have_the_documented_sizes);
	tcase_add_test(tc, stackmap_big_endian_needs_the_flag);
	tcase_add_test(tc, stackmap_walks_concatenated_tables_of_mixed_versions);
	tcase_add_test(tc, stackmap_rejects_truncation_at_every_length);
	tcase_add_test(tc, stackmap_rejects_counts_past_the_end);
	tcase_add_test(tc, stackmap_rejects_record_counts_that_do_not_add_up);
	tcase_add_test(tc, stackmap_assigns_records_across_functions_without_records);
	tcase_add_test(tc, stackmap_rejects_unknown_location_kinds);
	tcase_add_test(tc, stackmap_rejects_constant_index_out_of_range);
	tcase_add_test(tc, stackmap_rejects_locations_and_live_outs_past_the_end);
	tcase_add_test(tc, stackmap_rejects_unsupported_versions);
	tcase_add_test(tc, stackmap_rejects_an_empty_section);
	tcase_add_test(tc, stackmap_reserved_fields_are_accepted_unless_strict);
	tcase_add_test(tc, stackmap_error_is_sticky_and_diag_optional);
	tcase_add_test(tc, location_kind_names);
	suite_add_tcase(s, tc);
	return s;
}
