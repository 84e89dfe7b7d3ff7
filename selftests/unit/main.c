// SPDX-License-Identifier: MIT
/* The unit test runner: every suite of selftests/unit in one Check run. */
#include <stdlib.h>

#include <check.h>

#include "suites.h"

int main(void)
{
	SRunner *sr = srunner_create(fmt_suite());
	int failed;

	srunner_add_suite(sr, log_suite());
	srunner_add_suite(sr, opts_suite());
	srunner_add_suite(sr, faultmap_suite());
	srunner_add_suite(sr, stackmap_suite());
	srunner_add_suite(sr, format_table_suite());
	srunner_add_suite(sr, discovery_suite());
	srunner_add_suite(sr, dispatch_suite());
	srunner_add_suite(sr, chain_suite());
	srunner_add_suite(sr, proto_suite());
	srunner_add_suite(sr, table_registry_suite());
	srunner_add_suite(sr, cfi_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
