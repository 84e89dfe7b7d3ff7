// SPDX-License-Identifier: MIT
/*
 * The options rule (lib/core/opts.c, <faultline/opts.h>): a shorter struct
 * takes defaults, a longer one is accepted only when its unknown tail is
 * zero, a result struct is written up to the caller's size.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <check.h>

#include <faultline/opts.h>

#include "core/opts.h"
#include "suites.h"

/* What this "library" knows: version 2 of an options struct. */
struct t_opts {
	size_t sz;
	uint32_t flags;
	uint32_t limit;
	uint64_t extra;
};

/* What an older caller was built with: version 1. */
struct t_opts_v1 {
	size_t sz;
	uint32_t flags;
};

/* What a newer caller was built with: version 3. */
struct t_opts_v3 {
	size_t sz;
	uint32_t flags;
	uint32_t limit;
	uint64_t extra;
	uint64_t newer;
};

START_TEST(opts_null_is_all_defaults)
{
	struct t_opts o;

	memset(&o, 0xa5, sizeof(o));
	ck_assert_int_eq(fl_opts_copy(&o, sizeof(o), NULL), 0);
	ck_assert_uint_eq(o.sz, 0);
	ck_assert_uint_eq(o.flags, 0);
	ck_assert_uint_eq(o.limit, 0);
	ck_assert_uint_eq(o.extra, 0);
}
END_TEST

START_TEST(opts_shorter_struct_takes_defaults)
{
	struct t_opts_v1 old;
	struct t_opts o;

	memset(&old, 0, sizeof(old));	/* its padding too: see <faultline/opts.h> */
	old.sz = sizeof(old);
	old.flags = 7;
	memset(&o, 0xa5, sizeof(o));
	ck_assert_int_eq(fl_opts_copy(&o, sizeof(o), &old), 0);
	ck_assert_uint_eq(o.sz, sizeof(old));
	ck_assert_uint_eq(o.flags, 7);
	ck_assert_uint_eq(o.limit, 0);
	ck_assert_uint_eq(o.extra, 0);
}
END_TEST

START_TEST(opts_same_struct_is_copied)
{
	FL_OPTS(t_opts, in, .flags = 1, .limit = 2, .extra = 3);
	struct t_opts o;

	ck_assert_uint_eq(in.sz, sizeof(struct t_opts));
	ck_assert_int_eq(fl_opts_copy(&o, sizeof(o), &in), 0);
	ck_assert_int_eq(memcmp(&o, &in, sizeof(o)), 0);
}
END_TEST

START_TEST(opts_macro_zeroes_padding)
{
	FL_OPTS(t_opts_v1, v1, .flags = 7);
	const unsigned char *p = (const unsigned char *)&v1;

	ck_assert_uint_eq(v1.sz, sizeof(v1));
	ck_assert_uint_eq(v1.flags, 7);
	/* The padding after flags is where version 2 has limit. */
	for (size_t i = offsetof(struct t_opts_v1, flags) + sizeof(v1.flags); i < sizeof(v1); i++)
		ck_assert_uint_eq(p[i], 0);
}
END_TEST

START_TEST(opts_longer_struct_with_zero_tail_is_accepted)
{
	FL_OPTS(t_opts_v3, in, .flags = 1, .limit = 2, .extra = 3);
	struct t_opts o;

	ck_assert_int_eq(fl_opts_copy(&o, sizeof(o), &in), 0);
	ck_assert_uint_eq(o.sz, sizeof(in));
	ck_assert_uint_eq(o.flags, 1);
	ck_assert_uint_eq(o.limit, 2);
	ck_assert_uint_eq(o.extra, 3);
}
END_TEST

START_TEST(opts_longer_struct_with_nonzero_tail_is_refused)
{
	FL_OPTS(t_opts_v3, in, .flags = 1, .newer = 1ULL << 56);
	struct t_opts o;

	ck_assert_int_eq(fl_opts_copy(&o, sizeof(o), &in), -EINVAL);
	in.newer = 0;
	ck_assert_int_eq(fl_opts_copy(&o, sizeof(o), &in), 0);
}
END_TEST

START_TEST(opts_size_smaller_than_its_field_is_refused)
{
	struct t_opts in = { .sz = sizeof(size_t) - 1 };
	struct t_opts o;

	ck_assert_int_eq(fl_opts_copy(&o, sizeof(o), &in), -EINVAL);
	in.sz = 0;
	ck_assert_int_eq(fl_opts_copy(&o, sizeof(o), &in), -EINVAL);
	in.sz = sizeof(size_t);		/* only the size: every field defaults */
	in.flags = 9;
	ck_assert_int_eq(fl_opts_copy(&o, sizeof(o), &in), 0);
	ck_assert_uint_eq(o.flags, 0);
}
END_TEST

START_TEST(opts_out_writes_up_to_the_callers_size)
{
	struct t_opts from = { .sz = 999, .flags = 1, .limit = 2, .extra = 3 };
	struct t_opts_v1 old;
	struct t_opts_v3 newer;
	unsigned char past[sizeof(struct t_opts_v3)];

	/* An older caller: only its own bytes are written, sz is its own. */
	memset(past, 0xa5, sizeof(past));
	old.sz = sizeof(old);
	memcpy(past, &old, sizeof(old.sz));
	ck_assert_int_eq(fl_opts_out(past, &from, sizeof(from)), 0);
	memcpy(&old, past, sizeof(old));
	ck_assert_uint_eq(old.sz, sizeof(old));
	ck_assert_uint_eq(old.flags, 1);
	for (size_t i = sizeof(old); i < sizeof(past); i++)
		ck_assert_uint_eq(past[i], 0xa5);

	/* A newer caller: the bytes this library does not know are zeroed. */
	memset(&newer, 0xa5, sizeof(newer));
	newer.sz = sizeof(newer);
	ck_assert_int_eq(fl_opts_out(&newer, &from, sizeof(from)), 0);
	ck_assert_uint_eq(newer.sz, sizeof(newer));
	ck_assert_uint_eq(newer.flags, 1);
	ck_assert_uint_eq(newer.limit, 2);
	ck_assert_uint_eq(newer.extra, 3);
	ck_assert_uint_eq(newer.newer, 0);

	newer.sz = 3;
	ck_assert_int_eq(fl_opts_out(&newer, &from, sizeof(from)), -EINVAL);
}
END_TEST

Suite *opts_suite(void)
{
	Suite *s = suite_create("opts");
	TCase *tc = unit_tcase("opts");

	tcase_add_test(tc, opts_null_is_all_defaults);
	tcase_add_test(tc, opts_shorter_struct_takes_defaults);
	tcase_add_test(tc, opts_same_struct_is_copied);
	tcase_add_test(tc, opts_macro_zeroes_padding);
	tcase_add_test(tc, opts_longer_struct_with_zero_tail_is_accepted);
	tcase_add_test(tc, opts_longer_struct_with_nonzero_tail_is_refused);
	tcase_add_test(tc, opts_size_smaller_than_its_field_is_refused);
	tcase_add_test(tc, opts_out_writes_up_to_the_callers_size);
	suite_add_tcase(s, tc);
	return s;
}
