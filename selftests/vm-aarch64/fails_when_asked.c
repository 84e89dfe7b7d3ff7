// SPDX-License-Identifier: MIT
/*
 * Fails when VMTEST_AARCH64_FAIL is set to anything but "" or "0", and
 * passes otherwise: `make vmtest-aarch64 VMTEST_AARCH64_FAIL=1` shows that
 * a failing guest test is reported as one (FAIL in the guest, "1 failed"
 * in the summary, exit status 1 from scripts/vmtest.sh and make).
 */
#include "common.h"

int main(void)
{
	const char *fail = getenv("VMTEST_AARCH64_FAIL");
	struct utsname u;

	t_uname(&u);
	if (fail && *fail && strcmp(fail, "0") != 0) {
		printf("FAIL fails_when_asked: VMTEST_AARCH64_FAIL=%s asks for a failure\n", fail);
		return 1;
	}
	printf("PASS fails_when_asked (VMTEST_AARCH64_FAIL unset or 0)\n");
	return 0;
}
