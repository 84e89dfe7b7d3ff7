/* SPDX-License-Identifier: MIT */
/* The preload library's summary at exit (summary.c). */
#ifndef FL_PRELOAD_SUMMARY_H
#define FL_PRELOAD_SUMMARY_H

/*
 * Takes FAULTLINE_SUMMARY's value: "1" turns the summary on, NULL, "" and
 * "0" off.  Returns 0, or -EINVAL for any other value (the summary is
 * off then).  Called by the library's constructor, before any thread of
 * faultline's runs.  Not thread-safe.  Hidden: the shim exports only
 * what it interposes.
 */
__attribute__((visibility("hidden"))) int fl_preload_summary_env(const char *value);

#endif /* FL_PRELOAD_SUMMARY_H */
