// SPDX-License-Identifier: MIT
/* The log callback: messages reach it, formatted, and nowhere without it. */
#include <string.h>

#include <check.h>

#include <faultline/log.h>

#include "core/log.h"
#include "suites.h"

struct seen {
	int calls;
	enum fl_log_level level;
	char msg[256];
};

static void record(enum fl_log_level level, const char *msg, void *ctx)
{
	struct seen *s = ctx;

	s->calls++;
	s->level = level;
	strncpy(s->msg, msg, sizeof(s->msg) - 1);
}

START_TEST(log_reaches_the_callback_with_its_context)
{
	struct seen a = { 0 }, b = { 0 };

	ck_assert_ptr_null(fl_set_log(record, &a));
	ck_assert_int_eq(fl_log_enabled(), 1);
	fl_log(FL_LOG_WARN, "module %s: %d sites", "libx.so", 3);
	ck_assert_int_eq(a.calls, 1);
	ck_assert_int_eq(a.level, FL_LOG_WARN);
	ck_assert_str_eq(a.msg, "module libx.so: 3 sites");

	/* Switching the callback switches the context with it. */
	ck_assert_ptr_eq(fl_set_log(record, &b), record);
	fl_log(FL_LOG_ERROR, "x");
	ck_assert_int_eq(a.calls, 1);
	ck_assert_int_eq(b.calls, 1);

	/* NULL drops messages. */
	ck_assert_ptr_eq(fl_set_log(NULL, NULL), record);
	ck_assert_int_eq(fl_log_enabled(), 0);
	fl_log(FL_LOG_ERROR, "dropped");
	ck_assert_int_eq(b.calls, 1);
}
END_TEST

Suite *log_suite(void)
{
	Suite *s = suite_create("log");
	TCase *tc = unit_tcase("log");

	tcase_add_test(tc, log_reaches_the_callback_with_its_context);
	suite_add_tcase(s, tc);
	return s;
}
