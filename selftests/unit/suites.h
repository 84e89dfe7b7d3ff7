/* SPDX-License-Identifier: MIT */
/* The Check suites of selftests/unit, one per concern. */
#ifndef FL_TEST_SUITES_H
#define FL_TEST_SUITES_H

#include <check.h>

/*
 * A test case's time limit only stops a hang (Check's default is 4 s): it
 * is minutes, for QEMU's TCG on a busy machine.  No test is timed.
 */
#define UNIT_TIMEOUT_S 600

static inline TCase *unit_tcase(const char *name)
{
	TCase *tc = tcase_create(name);

	tcase_set_timeout(tc, UNIT_TIMEOUT_S);
	return tc;
}

Suite *fmt_suite(void);
Suite *log_suite(void);
Suite *opts_suite(void);
Suite *faultmap_suite(void);
Suite *stackmap_suite(void);
Suite *format_table_suite(void);
Suite *discovery_suite(void);
Suite *dispatch_suite(void);
Suite *chain_suite(void);
Suite *proto_suite(void);
Suite *table_registry_suite(void);
Suite *cfi_suite(void);

#endif /* FL_TEST_SUITES_H */
