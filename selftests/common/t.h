/* SPDX-License-Identifier: MIT */
/*
 * What the one-program-per-property suites (selftests/region,
 * selftests/patch) share: a test names itself (t_name, set by the suite's
 * t_start), fails with a reason (exit 1), skips with a reason (exit 77),
 * and hears libfaultline's warnings and errors on stderr.
 */
#ifndef FL_SELFTESTS_COMMON_T_H
#define FL_SELFTESTS_COMMON_T_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <faultline/log.h>

static const char *t_name = "?";
/*
 * Set in a forked child that must not run the exit handlers (a child of a
 * raw fork, or one in a sandbox where LeakSanitizer's own thread listing
 * would fail): a failure then ends it with _exit(1).
 */
static int t_in_child;

static inline void t_vfail(const char *fmt, va_list ap) __attribute__((noreturn));
static inline void t_vfail(const char *fmt, va_list ap)
{
	fprintf(stderr, "FAIL %s: ", t_name);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	if (t_in_child)
		_exit(1);
	exit(1);
}

static inline void t_fail(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static inline void t_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	t_vfail(fmt, ap);
}

static inline void t_skip(const char *why) __attribute__((noreturn));
static inline void t_skip(const char *why)
{
	printf("SKIP %s: %s\n", t_name, why);
	exit(77);
}

#define t_check(cond, ...) do { if (!(cond)) t_fail(__VA_ARGS__); } while (0)

static inline void t_log(enum fl_log_level level, const char *msg, void *ctx)
{
	(void)ctx;
	if (level <= FL_LOG_WARN)
		fprintf(stderr, "%s: libfaultline: %s\n", t_name, msg);
}

#endif /* FL_SELFTESTS_COMMON_T_H */
