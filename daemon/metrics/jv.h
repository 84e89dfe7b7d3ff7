/* SPDX-License-Identifier: MIT */
/*
 * Reading faultlined's JSON documents (docs/json.md) without trusting them:
 * accessors that take a missing key or a value of another type as 0, false,
 * NULL or an empty array.  Shared by faultline and faultlined's metrics.
 * Thread-safe (they only read).
 */
#ifndef FL_METRICS_JV_H
#define FL_METRICS_JV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

/* The value at key of object o, or NULL (o not an object, no such key). */
json_object *jv_get(json_object *o, const char *key);
/* The integer at key, or 0. */
uint64_t jv_u64(json_object *o, const char *key);
int64_t jv_i64(json_object *o, const char *key);
/* The boolean at key, or false. */
bool jv_bool(json_object *o, const char *key);
/* The string at key, or NULL when absent, null or not a string. */
const char *jv_str(json_object *o, const char *key);
/* The array at key in *arr, and its length; 0 and NULL when there is none. */
size_t jv_array(json_object *o, const char *key, json_object **arr);

#endif /* FL_METRICS_JV_H */
