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

/*
 * Fills *diag (if not NULL) with the formatted text (fl_fmt directives)
 * and err, and returns err: the diagnostic of a layer above this one,
 * which names what failed itself.  Async-signal-safe.
 */
int fl_diag_say(struct fl_diag *diag, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Whether a kind exists: fl_fault_kind_name(kind) != NULL and
 * fl_location_kind_name(kind) != NULL, inline for the cursors, which ask
 * once per entry.  Async-signal-safe.
 */
static inline int fl_fault_kind_known(uint32_t kind)
{
	return kind >= FL_FAULT_LOAD && kind <= FL_FAULT_STORE;
}

static inline int fl_location_kind_known(uint32_t kind)
{
	return kind >= FL_LOC_REGISTER && kind <= FL_LOC_CONSTANT_INDEX;
}

#endif /* FL_FORMAT_DIAG_H */
