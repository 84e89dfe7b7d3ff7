/* SPDX-License-Identifier: MIT */
/*
 * The patcher's tests (selftests/patch/): one program per property, each
 * exiting 0 (pass) or 1 (fail, with the reason); run.sh runs them.
 *
 * The code they patch is hand-written machine code in a page of its own,
 * mapped read-write, filled, then made read-execute as a JIT's would be.
 */
#ifndef FL_TEST_PATCH_COMMON_H
#define FL_TEST_PATCH_COMMON_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <faultline/dispatch.h>
#include <faultline/log.h>
#include <faultline/patch.h>

#include "../common/t.h"

static inline void t_start(char **argv)
{
	const char *slash = strrchr(argv[0], '/');

	t_name = slash ? slash + 1 : argv[0];
	setvbuf(stdout, NULL, _IOLBF, 0);
	fl_set_log(t_log, NULL);
}

static inline void t_init(void)
{
	FL_OPTS(fl_init_opts, o, .flags = FL_INIT_NO_DISCOVERY | FL_INIT_NO_AGENT);
	int err = fl_init(&o);

	t_check(err == 0, "fl_init: %s", strerror(-err));
}

static inline void t_enable(void)
{
	struct fl_diag d = { 0 };
	int err = fl_patch_enable(&d);

	t_check(err == 0, "fl_patch_enable: %d %s", err, d.msg);
}

/* A page of code: the bytes at its start, then int3s; read-execute. */
static inline uint8_t *t_code(const void *bytes, size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uint8_t *p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	t_check(p != MAP_FAILED, "mmap: %s", strerror(errno));
	memset(p, 0xcc, page);
	memcpy(p, bytes, len);
	t_check(mprotect(p, page, PROT_READ | PROT_EXEC) == 0, "mprotect: %s", strerror(errno));
	return p;
}

/* The protection of the page at p, from /proc/self/maps ("r-xp"). */
static inline void t_prot(const void *p, char out[5])
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long long s, e;
	char perms[5];

	strcpy(out, "?");
	t_check(f != NULL, "/proc/self/maps: %s", strerror(errno));
	while (fscanf(f, "%llx-%llx %4s%*[^\n]", &s, &e, perms) == 3)
		if ((uintptr_t)p >= s && (uintptr_t)p < e) {
			memcpy(out, perms, 5);
			break;
		}
	fclose(f);
}

#endif /* FL_TEST_PATCH_COMMON_H */
