/* SPDX-License-Identifier: MIT */
/*
 * The process and site tables that faultline stats, ps and sites print
 * from the daemon's JSON documents (docs/json.md).
 */
#ifndef FL_CLI_TABLES_H
#define FL_CLI_TABLES_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

/*
 * The elements of arr (n of them) in a new array of pointers, sorted by
 * cmp (a qsort comparator on json_object **).  Returns the array (free()
 * it), or NULL when out of memory.
 */
json_object **cli_sorted(json_object *arr, size_t n, int (*cmp)(const void *, const void *));

/*
 * Names the sites of the live processes of doc (a stats or sites
 * document) that have no function, from their JIT compiler's perf map
 * (/tmp/perf-PID.map, read as faultline profile reads it): sets their
 * "function" and "function_offset", and "function_from": "perf-map".
 * Best effort: a process whose maps cannot be read stays as it is.
 */
void cli_name_from_perf_maps(json_object *doc);

/*
 * Where site (or a stack map record) is, in a site table's two columns:
 * "module+0xOFF" (the module's file name; without the offset when it is
 * not known) in mod, and unless fn is NULL "function+0xOFF" ("?" without a
 * function) in fn.
 */
void cli_site_where(json_object *site, char *mod, size_t mod_len, char *fn, size_t fn_len);

/* "exited" or "live". */
const char *cli_proc_state(json_object *p);

/* The header of the process table, and one process's row. */
void cli_print_proc_header(void);
void cli_print_proc_row(json_object *p);

/*
 * The sites of process p, most faults first, indent before every line;
 * handler adds the handler PC column; all: the sites were asked for
 * whether they failed or not (no hint at --all).  Returns 0, or -ENOMEM.
 */
int cli_print_sites(json_object *p, const char *indent, bool handler, bool all);

#endif /* FL_CLI_TABLES_H */
