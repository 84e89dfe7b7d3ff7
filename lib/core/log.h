/* SPDX-License-Identifier: MIT */
/* Internal logging: formats with fl_fmt and hands the text to fl_set_log's callback. */
#ifndef FL_CORE_LOG_H
#define FL_CORE_LOG_H

#include <faultline/log.h>

/* Returns non-zero when a callback is set (skip building costly messages). */
int fl_log_enabled(void);

/* Formats (fl_fmt directives) and logs one message.  Not for signal context. */
void fl_log(enum fl_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif /* FL_CORE_LOG_H */
