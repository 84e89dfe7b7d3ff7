// SPDX-License-Identifier: MIT
/*
 * docs/codegen.md's patch point example: discount() (points.ll) calls
 * full_price through patch point 7 until this program rewrites the region
 * with code of its own, then resets it to what llc-14 emitted.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <faultline/dispatch.h>
#include <faultline/patch.h>
#include <faultline/points.h>

int64_t discount(int64_t price);

int main(void)
{
	/* mov %rdi,%rax; shr %rax: the price's first argument, halved. */
	static const uint8_t half[] = { 0x48, 0x89, 0xf8, 0x48, 0xd1, 0xe8 };
	struct fl_diag diag;
	int ret;

	/* Registers the program's stack maps: records 7 and 8. */
	ret = fl_init(NULL);
	if (ret < 0) {
		fprintf(stderr, "points: fl_init: %s\n", strerror(-ret));
		return 1;
	}
	ret = fl_patch_enable(&diag);
	if (ret < 0) {
		fprintf(stderr, "points: fl_patch_enable: %s\n", diag.msg);
		return 1;
	}
	printf("discount(100) = %lld\n", (long long)discount(100));
	/* By ID (pc NULL): 7 is unique in the process. */
	ret = fl_patchpoint_write(7, NULL, half, sizeof(half), NULL, &diag);
	if (ret < 0) {
		fprintf(stderr, "points: %s\n", diag.msg);
		return 1;
	}
	printf("patched: discount(100) = %lld\n", (long long)discount(100));
	ret = fl_patchpoint_reset(7, NULL, &diag);
	if (ret < 0) {
		fprintf(stderr, "points: %s\n", diag.msg);
		return 1;
	}
	printf("reset: discount(100) = %lld\n", (long long)discount(100));
	return 0;
}
