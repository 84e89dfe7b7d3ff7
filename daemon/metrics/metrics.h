/* SPDX-License-Identifier: MIT */
/* faultline stats --openmetrics and --prometheus. */
#ifndef FL_METRICS_METRICS_H
#define FL_METRICS_METRICS_H

#include <stdio.h>

#include <json-c/json.h>

enum metrics_format { METRICS_OPENMETRICS, METRICS_PROMETHEUS };

/* Site series by default (faultline stats --top changes it). */
#define METRICS_TOP 10

/*
 * Prints a STATS document as OpenMetrics 1.0 text or as the Prometheus
 * text format 0.0.4 (metrics.c says how they differ), with series per
 * site for the top sites with the most faults, and per process for their
 * processes.  Returns 0, or -1 when out of memory.
 */
int metrics_print(FILE *out, json_object *doc, enum metrics_format fmt, size_t top);

#endif /* FL_METRICS_METRICS_H */
