/* lbone_json.h -- strict JSON (RFC 8259): a parser into a read-only tree, and a writer.
 *
 * The parser accepts exactly one JSON value and nothing else: no comments, no trailing
 * commas, no NaN/Infinity, no leading zeros, no raw control characters or invalid UTF-8 in
 * strings, no lone surrogates, no "\u0000" (strings are C strings), no duplicate keys in an
 * object, no nesting deeper than LBONE_JSON_MAX_DEPTH.  Everything a document holds lives in
 * one arena that lbone_json_free releases.  Members keep their document order.
 */
#ifndef LNS_LBONE_JSON_H
#define LNS_LBONE_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "lbone_buf.h"

#define LBONE_JSON_MAX_DEPTH 32

typedef enum lbone_json_type {
    LBONE_JSON_NULL,
    LBONE_JSON_BOOL,
    LBONE_JSON_NUMBER,
    LBONE_JSON_STRING,
    LBONE_JSON_ARRAY,
    LBONE_JSON_OBJECT
} lbone_json_type;

typedef struct lbone_json lbone_json_t;
typedef struct lbone_json_doc lbone_json_doc_t;

/* Parse len bytes of text.  NULL on error with a one-line reason in err ("offset 17:
 * expected ':' after an object key"). */
lbone_json_doc_t *lbone_json_parse(const char *text, size_t len, char *err, size_t errlen);
void lbone_json_free(lbone_json_doc_t *doc);
const lbone_json_t *lbone_json_root(const lbone_json_doc_t *doc);

lbone_json_type lbone_json_type_of(const lbone_json_t *v);
/* "null", "boolean", "number", "string", "array", "object": for error messages. */
const char *lbone_json_type_name(lbone_json_type t);

/* Objects and arrays: the first member (NULL if empty or v is not a container), the next
 * member, and for object members their key. */
const lbone_json_t *lbone_json_child(const lbone_json_t *v);
const lbone_json_t *lbone_json_next(const lbone_json_t *v);
const char *lbone_json_key(const lbone_json_t *member);
size_t lbone_json_count(const lbone_json_t *v);
/* The member of object obj named key, or NULL (also when obj is not an object). */
const lbone_json_t *lbone_json_get(const lbone_json_t *obj, const char *key);

/* Scalars.  Each returns 0 and sets *out when v has the right type, else -1. */
int lbone_json_bool(const lbone_json_t *v, int *out);
int lbone_json_number(const lbone_json_t *v, double *out);
/* An integer: written without fraction or exponent and within int64, or a number whose
 * value is integral and below 2^53 in magnitude (so "1e3" is 1000). */
int lbone_json_int(const lbone_json_t *v, int64_t *out);
/* The string's text (valid UTF-8, no NUL inside); *len may be NULL. */
const char *lbone_json_string(const lbone_json_t *v, size_t *len);

/* Writing.  Strings are quoted and escaped (control characters, quote, backslash, and
 * < > & as \u00XX so a body is also inert inside HTML); numbers that are not finite are
 * written as null. */
void lbone_json_put_string(lbone_buf_t *b, const char *s);
void lbone_json_put_number(lbone_buf_t *b, double v);

#endif
