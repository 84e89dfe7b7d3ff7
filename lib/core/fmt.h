/* SPDX-License-Identifier: MIT */
/*
 * A small formatter for diagnostics that must be built anywhere, including
 * in a signal handler: no allocation, no locale, no locks, no errno changes.
 * stdio's snprintf promises none of that, hence this.
 *
 * Directives: %s, %.*s (at most that many bytes: the int argument before
 * the string; a negative one is no limit, as printf's), %c, %% and the integers %d %u %x with the length modifiers
 * none, l, ll, z (e.g. %zu, %llx, %ld).  %#x is not supported: write 0x%x.
 * A directive it does not know is copied as it stands.
 */
#ifndef FL_CORE_FMT_H
#define FL_CORE_FMT_H

#include <stdarg.h>
#include <stddef.h>

/*
 * Formats into buf (always NUL-terminated when size > 0, truncated if need
 * be).  Returns the length written, not counting the NUL.
 * Async-signal-safe.
 */
size_t fl_fmt(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
size_t fl_vfmt(char *buf, size_t size, const char *fmt, va_list ap);

#endif /* FL_CORE_FMT_H */
