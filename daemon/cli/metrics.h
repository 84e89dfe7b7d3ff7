/* SPDX-License-Identifier: MIT */
/* faultline stats --openmetrics and --prometheus. */
#ifndef FL_CLI_METRICS_H
#define FL_CLI_METRICS_H

#include <stdio.h>

#include <json-c/json.h>

enum cli_metrics_format { CLI_OPENMETRICS, CLI_PROMETHEUS };

/* Site series by default (faultline stats --top changes it). */
#define CLI_METRICS_TOP 10

/*
 * Prints a STATS document as OpenMetrics 1.0 text or as the Prometheus
 * text format 0.0.4 (metrics.c says how they differ), with series per
 * site for the top sites with the most faults, and per process for their
 * processes.  Returns 0, or -1 when out of memory.
 */
int cli_print_metrics(FILE *out, json_object *doc, enum cli_metrics_format fmt, size_t top);

#endif /* FL_CLI_METRICS_H */
