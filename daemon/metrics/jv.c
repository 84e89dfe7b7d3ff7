// SPDX-License-Identifier: MIT
/* Reading a JSON document that may hold anything (jv.h). */
#include "jv.h"

json_object *jv_get(json_object *o, const char *key)
{
	json_object *v = NULL;

	if (o && json_object_is_type(o, json_type_object))
		json_object_object_get_ex(o, key, &v);
	return v;
}

uint64_t jv_u64(json_object *o, const char *key)
{
	json_object *v = jv_get(o, key);

	return json_object_is_type(v, json_type_int) ? json_object_get_uint64(v) : 0;
}

int64_t jv_i64(json_object *o, const char *key)
{
	json_object *v = jv_get(o, key);

	return json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : 0;
}

bool jv_bool(json_object *o, const char *key)
{
	json_object *v = jv_get(o, key);

	return json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
}

const char *jv_str(json_object *o, const char *key)
{
	json_object *v = jv_get(o, key);

	return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

size_t jv_array(json_object *o, const char *key, json_object **arr)
{
	json_object *v = jv_get(o, key);

	if (!json_object_is_type(v, json_type_array)) {
		*arr = NULL;
		return 0;
	}
	*arr = v;
	return json_object_array_length(v);
}
