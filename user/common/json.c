// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The tools' JSON output through json-c: see json.h. */
#include "json.h"

#include "mroce/version.h"

#include <errno.h>
#include <math.h>
#include <string.h>

struct json_object *mroce_json_doc(const char *tool)
{
	struct json_object *o = json_object_new_object();

	mroce_json_add_i64(o, "schema_version", MROCE_JSON_SCHEMA_VERSION);
	mroce_json_add_str(o, "tool", tool);
	mroce_json_add_str(o, "version", MROCE_VERSION);
	return o;
}

void mroce_json_set_error(struct json_object *doc, int code,
			  const char *message)
{
	struct json_object *e;
	const char *name = NULL;

	if (!doc)
		return;
	e = json_object_new_object();
	mroce_json_add_i64(e, "code", code);
	if (code < 0)
		name = strerrorname_np(-code);
	if (name)
		mroce_json_add_str(e, "name", name);
	mroce_json_add_str(e, "message", message ? message : "");
	json_object_object_add(doc, "error", e);
}

int mroce_json_emit(FILE *f, struct json_object *doc, int pretty)
{
	int flags = JSON_C_TO_STRING_NOSLASHESCAPE |
		    (pretty ? JSON_C_TO_STRING_PRETTY : JSON_C_TO_STRING_PLAIN);
	const char *s = json_object_to_json_string_ext(doc, flags);
	int err = 0;

	if (!s || fprintf(f, "%s\n", s) < 0 || fflush(f))
		err = -EIO;
	json_object_put(doc);
	return err;
}

void mroce_json_add_u64(struct json_object *obj, const char *key, uint64_t v)
{
	if (obj)
		json_object_object_add(obj, key, json_object_new_uint64(v));
}

void mroce_json_add_i64(struct json_object *obj, const char *key, int64_t v)
{
	if (obj)
		json_object_object_add(obj, key, json_object_new_int64(v));
}

void mroce_json_add_str(struct json_object *obj, const char *key,
			const char *v)
{
	if (obj)
		json_object_object_add(obj, key,
				       json_object_new_string(v ? v : ""));
}

void mroce_json_add_bool(struct json_object *obj, const char *key, int v)
{
	if (obj)
		json_object_object_add(obj, key, json_object_new_boolean(v));
}

struct json_object *mroce_json_new_fixed(double v, int decimals)
{
	char buf[64];

	if (!isfinite(v))
		v = 0.0;
	snprintf(buf, sizeof(buf), "%.*f", decimals, v);
	return json_object_new_double_s(v, buf);
}

void mroce_json_add_fixed(struct json_object *obj, const char *key, double v,
			  int decimals)
{
	if (obj)
		json_object_object_add(obj, key, mroce_json_new_fixed(v, decimals));
}
