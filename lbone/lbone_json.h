/* lbone_json.h -- the L-Bone's JSON: strict decoding through jansson, and the body writer.
 *
 * Decoding is jansson's (RFC 8259: UTF-8 checked, no lone surrogates, no "\u0000" so strings
 * are C strings, no duplicate keys, nothing after the value) with the L-Bone's limits on
 * top: at most LBONE_JSON_MAX_BYTES of text, at most LBONE_JSON_MAX_DEPTH nested arrays and
 * objects.  Callers read the tree with jansson's own accessors (json_object_get,
 * json_string_value, json_object_foreach, ...), which are NULL-safe; object members keep
 * their document order.  Writing stays ours: bodies must also be inert inside HTML (< > &
 * escaped), which jansson's encoder does not do, and numbers keep the API's short form.
 */
#ifndef LNS_LBONE_JSON_H
#define LNS_LBONE_JSON_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "lns_buf.h"

#define LBONE_JSON_MAX_DEPTH 32
#define LBONE_JSON_MAX_BYTES (32u << 20) /* the largest answer a client accepts */

/* Decode len bytes of text (no NUL needed) into a tree the caller releases with
 * json_decref.  NULL on error with a one-line reason in err ("offset 17: ..."). */
json_t *lbone_json_parse(const char *text, size_t len, char *err, size_t errlen);

/* An integer: written without fraction or exponent (within int64), or a number whose value
 * is integral and below 2^53 in magnitude (so "1e3" is 1000).  0 and *out set, else -1. */
int lbone_json_int(const json_t *v, int64_t *out);

/* Writing.  Strings are quoted and escaped (control characters, quote, backslash, DEL, and
 * < > & as \u00XX so a body is also inert inside HTML); numbers that are not finite are
 * written as null, integral ones without a fraction. */
void lbone_json_put_string(lns_buf_t *b, const char *s);
void lbone_json_put_number(lns_buf_t *b, double v);

#endif
