// SPDX-License-Identifier: MIT
/* The async-signal-safe formatter against what printf would print. */
#include <stdint.h>
#include <stdio.h>

#include <check.h>

#include "core/fmt.h"
#include "suites.h"

START_TEST(fmt_integers_match_printf)
{
	char a[128], b[128];

	fl_fmt(a, sizeof(a), "%d %d %u %x %ld %lu %lld %llu %llx %zu %zd",
	       -5, INT32_MIN, 4000000000u, 0xbeefu, -1L, 123UL,
	       (long long)INT64_MIN, (unsigned long long)UINT64_MAX,
	       0xfedcba9876543210ULL, (size_t)42, (ssize_t)-42);
	snprintf(b, sizeof(b), "%d %d %u %x %ld %lu %lld %llu %llx %zu %zd",
		 -5, INT32_MIN, 4000000000u, 0xbeefu, -1L, 123UL,
		 (long long)INT64_MIN, (unsigned long long)UINT64_MAX,
		 0xfedcba9876543210ULL, (size_t)42, (ssize_t)-42);
	ck_assert_str_eq(a, b);
}
END_TEST

START_TEST(fmt_strings_chars_and_percent)
{
	const char *volatile null = NULL;	/* hidden from -Wformat */
	char a[64];

	fl_fmt(a, sizeof(a), "%s|%c|%%|%s", "abc", 'z', null);
	ck_assert_str_eq(a, "abc|z|%|(null)");
}
END_TEST

START_TEST(fmt_precision_bounds_a_string)
{
	char a[64], b[64];
	const char text[] = { 'r', 'e', 'f', 'u', 's', 'e', 'd', '!' };	/* no NUL */

	fl_fmt(a, sizeof(a), "refused: %.*s|%.*s|%.*s|%d", 7, text, 0, "x", -1, "all", 5);
	snprintf(b, sizeof(b), "refused: %.*s|%.*s|%.*s|%d", 7, text, 0, "x", -1, "all", 5);
	ck_assert_str_eq(a, b);
	ck_assert_str_eq(a, "refused: refused||all|5");
	/* Stops at a NUL before the precision, as printf does. */
	fl_fmt(a, sizeof(a), "%.*s", 10, "ab");
	ck_assert_str_eq(a, "ab");
}
END_TEST

START_TEST(fmt_truncates_and_terminates)
{
	char a[8];
	size_t n;

	n = fl_fmt(a, sizeof(a), "%s", "0123456789");
	ck_assert_str_eq(a, "0123456");
	ck_assert_uint_eq(n, 7);
	n = fl_fmt(a, 1, "%s", "x");
	ck_assert_str_eq(a, "");
	ck_assert_uint_eq(n, 0);
}
END_TEST

START_TEST(fmt_unknown_directive_is_copied)
{
	char a[32];

	const char *f = "a%qb%";

	fl_fmt(a, sizeof(a), f, 0);
	ck_assert_str_eq(a, "a%qb%");
}
END_TEST

Suite *fmt_suite(void)
{
	Suite *s = suite_create("fmt");
	TCase *tc = unit_tcase("fmt");

	tcase_add_test(tc, fmt_integers_match_printf);
	tcase_add_test(tc, fmt_strings_chars_and_percent);
	tcase_add_test(tc, fmt_precision_bounds_a_string);
	tcase_add_test(tc, fmt_truncates_and_terminates);
	tcase_add_test(tc, fmt_unknown_directive_is_copied);
	suite_add_tcase(s, tc);
	return s;
}
