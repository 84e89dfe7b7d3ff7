/* SPDX-License-Identifier: MIT */
/* faultline stats --openmetrics and --prometheus. */
#ifndef FL_CLI_METRICS_H
#define FL_CLI_METRICS_H

#include <stdio.h>

#include <json-c/json.h>

enum cli_metrics_format { CLI_OPENMETRICS, CLI_PROMETHEUS };

/*
 * Prints a STATS document as OpenMetrics 1.0 text or as the Prometheus
 * text format 0.0.4 (metrics.c says how they differ).  Returns 0, or -1
 * when out of memory.
 */
int cli_print_metrics(FILE *out, json_object *doc, enum cli_metrics_format fmt);

#endif /* FL_CLI_METRICS_H */
