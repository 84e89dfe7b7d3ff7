/* SPDX-License-Identifier: MIT */
/* Diagnostics of the format layer. */
#ifndef FL_FORMAT_DIAG_H
#define FL_FORMAT_DIAG_H

#include <faultline/format.h>

/*
 * Fills *diag (if not NULL) with "<section>: table <table>: " followed by
 * the formatted text (fl_fmt directives), and returns err.
 * Async-signal-safe.
 */
int fl_diag_set(struct fl_diag *diag, int err, const char *section,
		uint32_t table, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

#endif /* FL_FORMAT_DIAG_H */
