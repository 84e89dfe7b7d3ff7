/* SPDX-License-Identifier: MIT */
/* A fault map or stack map section as faultline's JSON (docs/json.md). */
#ifndef FL_CLI_PRINT_JSON_H
#define FL_CLI_PRINT_JSON_H

#include <stdint.h>

#include "input.h"

struct json_object;
/* Returns the JSON object for one file's fault map or stack map section. */
struct json_object *faultmap_json(struct cli_file *f, uint32_t flags);
struct json_object *stackmap_json(struct cli_file *f, uint32_t flags);
/* Returns {"file": path, "ok": false, "error": err}: a file that could not be read. */
struct json_object *file_error_json(const char *path, const char *err);

#endif /* FL_CLI_PRINT_JSON_H */
