// SPDX-License-Identifier: MIT
/*
 * json_check [PATH=VALUE]... < doc.json
 *
 * Exits 0 if stdin is exactly one valid JSON document and every PATH
 * (dot-separated keys and array indexes, e.g. files.0.tables.0.version)
 * has the JSON text VALUE (as json-c prints it unpretty: 1, "x", null, true).
 * Exits 1 with a message otherwise.  For the CLI tests.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

static struct json_object *walk(struct json_object *o, char *path)
{
	char *key, *save = NULL;

	for (key = strtok_r(path, ".", &save); key && o; key = strtok_r(NULL, ".", &save)) {
		if (json_object_is_type(o, json_type_array)) {
			char *end;
			long i = strtol(key, &end, 10);

			if (*end || i < 0 || (size_t)i >= json_object_array_length(o))
				return NULL;
			o = json_object_array_get_idx(o, (size_t)i);
		} else if (!json_object_object_get_ex(o, key, &o)) {
			return NULL;
		}
	}
	return o;
}

int main(int argc, char **argv)
{
	static char buf[64 << 20];
	size_t len = fread(buf, 1, sizeof(buf) - 1, stdin);
	enum json_tokener_error jerr;
	struct json_tokener *tok;
	struct json_object *doc;
	int i, status = 0;

	buf[len] = '\0';
	tok = json_tokener_new();
	doc = json_tokener_parse_ex(tok, buf, (int)len);
	jerr = json_tokener_get_error(tok);
	if (!doc || jerr != json_tokener_success) {
		fprintf(stderr, "json_check: invalid JSON: %s\n", json_tokener_error_desc(jerr));
		return 1;
	}
	/* Nothing but white space may follow the document. */
	for (i = (int)json_tokener_get_parse_end(tok); (size_t)i < len; i++)
		if (!strchr(" \t\r\n", buf[i])) {
			fprintf(stderr, "json_check: trailing data after the document\n");
			return 1;
		}
	for (i = 1; i < argc; i++) {
		char *eq = strchr(argv[i], '='), path[512];
		struct json_object *v;
		const char *got;

		if (!eq || (size_t)(eq - argv[i]) >= sizeof(path)) {
			fprintf(stderr, "json_check: bad argument '%s'\n", argv[i]);
			return 2;
		}
		memcpy(path, argv[i], (size_t)(eq - argv[i]));
		path[eq - argv[i]] = '\0';
		v = walk(doc, path);
		got = v ? json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN |
							 JSON_C_TO_STRING_NOSLASHESCAPE) : "null";
		if (strcmp(got, eq + 1)) {
			fprintf(stderr, "json_check: %.*s is %s, expected %s\n",
				(int)(eq - argv[i]), argv[i], got, eq + 1);
			status = 1;
		}
	}
	json_object_put(doc);
	json_tokener_free(tok);
	return status;
}
