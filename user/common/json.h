/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Internal: the JSON output of every mroce tool, through json-c (Debian's
 * libjson-c-dev): one escaping, one key scheme, one schema version.
 *
 * Key scheme (docs/json.md has the full list):
 *   - snake_case; a quantity carries its unit as a suffix: _bytes, _pkts,
 *     _ns, _us, _ms, _s, _gbps, _mbps, _mpps, _pct; a plain ratio ends in
 *     _ratio; counters are plural nouns without a unit (retransmits);
 *   - percentiles as <name>_p50_us, _p99_us, _p999_us;
 *   - every top-level document has "schema_version", "tool" and "version";
 *   - a run that fails after it started printing still prints one whole
 *     document with an "error" object: {"code": -errno or exit code,
 *     "name": "EINVAL", "message": "..."}, plus whatever was measured.
 * Tools that print several documents print one per line (JSON lines).
 */
#ifndef MROCE_COMMON_JSON_H
#define MROCE_COMMON_JSON_H

#include <json-c/json.h>
#include <stdint.h>
#include <stdio.h>

#define MROCE_JSON_SCHEMA_VERSION 1

/* A new top-level object with schema_version, tool and version set. */
struct json_object *mroce_json_doc(const char *tool);

/* Add an "error" object to doc: code (negative errno or a tool's exit
 * code), its name when it is an errno, and message. */
void mroce_json_set_error(struct json_object *doc, int code,
			  const char *message);

/* Print doc on one line (pretty when pretty != 0), a newline, flush, and
 * release it. Returns 0 or -EIO. */
int mroce_json_emit(FILE *f, struct json_object *doc, int pretty);

/* Shorthands that add a member to obj (no-ops when obj is NULL). */
void mroce_json_add_u64(struct json_object *obj, const char *key, uint64_t v);
void mroce_json_add_i64(struct json_object *obj, const char *key, int64_t v);
void mroce_json_add_str(struct json_object *obj, const char *key,
			const char *v);
void mroce_json_add_bool(struct json_object *obj, const char *key, int v);

/* A number printed with a fixed count of decimals (json-c's default prints
 * 17 significant digits); a non-finite v prints as 0. */
struct json_object *mroce_json_new_fixed(double v, int decimals);
void mroce_json_add_fixed(struct json_object *obj, const char *key, double v,
			  int decimals);

#endif
