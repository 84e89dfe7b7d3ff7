/* SPDX-License-Identifier: MIT */
/*
 * faultlined's log: one line per message on stderr with a level prefix.
 * Under systemd (stderr is the journal stream named by $JOURNAL_STREAM) the
 * prefix is the sd-daemon "<N>" priority, which journald strips and keeps as
 * the priority; on a terminal it is "faultlined: LEVEL: ".  Single-threaded,
 * like the daemon.
 */
#ifndef FLD_DLOG_H
#define FLD_DLOG_H

#include <faultline/log.h>

/* Sets the most verbose level printed (default FL_LOG_INFO). */
void fld_log_set_level(enum fl_log_level level);

/* Returns the level for "error", "warn", "info" or "debug", or -1. */
int fld_log_parse_level(const char *s);

/* Returns non-zero when messages of this level are printed. */
int fld_log_enabled(enum fl_log_level level);

void fld_log(enum fl_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define fld_err(...) fld_log(FL_LOG_ERROR, __VA_ARGS__)
#define fld_warn(...) fld_log(FL_LOG_WARN, __VA_ARGS__)
#define fld_info(...) fld_log(FL_LOG_INFO, __VA_ARGS__)
#define fld_debug(...) \
	do { \
		if (fld_log_enabled(FL_LOG_DEBUG)) \
			fld_log(FL_LOG_DEBUG, __VA_ARGS__); \
	} while (0)

#endif /* FLD_DLOG_H */
