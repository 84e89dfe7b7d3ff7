// SPDX-License-Identifier: MIT
/*
 * hot_new_code SECONDS: the program perf_report_names_hot_new_code.sh
 * records.  It registers a copy of hot_* (seen_asm.S: a million
 * decrements standing for orig_fn from orig_body on) and runs it for
 * SECONDS, then prints "PID NAME" and exits, leaving its perf map for
 * perf report (the script removes it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "seen_test.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.0, end;
	struct fl_seen_row row;
	struct fl_diag diag;
	struct seen_flags f = { 0 };
	char name[256];
	struct fl_seen *s;
	uint8_t *code;
	long calls = 0;
	int n, err;

	t_name = "hot_new_code";
	fl_set_log(t_log, NULL);
	code = seen_copy(hot_begin, hot_end, hot_lit);
	row = (struct fl_seen_row){ .at = (uint64_t)(uintptr_t)code,
				    .orig = (uint64_t)(uintptr_t)orig_body };
	n = snprintf(name, sizeof(name), "faultline:heal:");
	fl_seen_name(row.orig, name + n, sizeof(name) - (size_t)n);
	memset(&diag, 0, sizeof(diag));
	err = fl_seen_add(row.at, (size_t)(hot_end - hot_begin), name, &row, 1, &s, &diag);
	t_check(!err, "fl_seen_add: %d: %s", err, diag.msg);
	for (end = now() + seconds; now() < end; calls++)
		orig_fn(&f, NULL, code);
	fprintf(stderr, "hot_new_code: %ld calls of the new code in %.1f s\n", calls, seconds);
	printf("%d %s\n", (int)getpid(), name);
	fl_seen_remove(s);
	return 0;
}
