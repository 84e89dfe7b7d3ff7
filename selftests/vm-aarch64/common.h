/* SPDX-License-Identifier: MIT */
/*
 * The arm64 guest's smoke tests (scripts/vmtest/aarch64.mk): each is a
 * small program about one thing the kernel must offer faultline on arm64,
 * cross-built with aarch64-linux-gnu-gcc and run in the QEMU guest on
 * Debian's arm64 6.1 kernel.  Each prints the kernel it runs on and what it
 * found, and exits 0 (pass), 77 (skip, the reason printed) or 1 (fail).
 */
#ifndef VMA64_COMMON_H
#define VMA64_COMMON_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#define T_SKIP 77

/* "kernel: RELEASE (WHERE)", as every guest test prints it; WHERE is
 * VMTEST_WHERE ("QEMU guest" there) or "host". */
static inline void t_kernel(const struct utsname *u)
{
	const char *where = getenv("VMTEST_WHERE");

	printf("kernel: %s %s (%s)\n", u->release, u->machine, where ? where : "host");
}

static inline void t_uname(struct utsname *u)
{
	if (uname(u) != 0) {
		printf("FAIL uname: %s\n", strerror(errno));
		exit(1);
	}
	t_kernel(u);
}

#define t_check(cond, ...)                              \
	do {                                            \
		if (!(cond)) {                          \
			printf("FAIL %s: ", __FILE__);  \
			printf(__VA_ARGS__);            \
			printf("\n");                   \
			exit(1);                        \
		}                                       \
	} while (0)

#endif
