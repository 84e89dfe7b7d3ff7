/* SPDX-License-Identifier: MIT */
/*
 * Logging.  libfaultline never prints: what it has to say goes to a callback
 * the application sets.  Without one, messages are dropped.
 */
#ifndef FAULTLINE_LOG_H
#define FAULTLINE_LOG_H

#ifdef __cplusplus
extern "C" {
#endif

enum fl_log_level {
	FL_LOG_ERROR = 0,
	FL_LOG_WARN = 1,
	FL_LOG_INFO = 2,
	FL_LOG_DEBUG = 3,
};

/* Receives one message, without a trailing newline. */
typedef void (*fl_log_fn)(enum fl_log_level level, const char *msg, void *ctx);

/*
 * Sets the log callback (NULL: drop messages) and returns the previous one.
 * Thread-safe: the pair (fn, ctx) is switched atomically with respect to
 * other fl_set_log calls; a message being logged concurrently may still go
 * to the old callback.  Not async-signal-safe.
 */
fl_log_fn fl_set_log(fl_log_fn fn, void *ctx);

#ifdef __cplusplus
}
#endif

#endif /* FAULTLINE_LOG_H */
