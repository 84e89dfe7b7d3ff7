/* SPDX-License-Identifier: MIT */
/* The Check suites of selftests/unit, one per concern. */
#ifndef FL_TEST_SUITES_H
#define FL_TEST_SUITES_H

#include <check.h>

Suite *fmt_suite(void);
Suite *log_suite(void);
Suite *faultmap_suite(void);
Suite *stackmap_suite(void);
Suite *table_suite(void);
Suite *discovery_suite(void);
Suite *dispatch_suite(void);
Suite *proto_suite(void);

#endif /* FL_TEST_SUITES_H */
