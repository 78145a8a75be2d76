/* fuzz_lbone_json.c -- libFuzzer target for the L-Bone's JSON parser (make fuzz).
 *
 * Every registration, heartbeat, report and query answer goes through lbone_json_parse, so
 * it is fuzzed for more than crashes: a tree the parser accepts must be consistent (counts,
 * keys found by lbone_json_get, strings without NUL), it must write back out through
 * lbone_json_put_string as JSON that parses to the same tree, and writing that again must
 * give the same bytes.  Numbers are written with full precision here (integers as
 * integers, others always with a fraction or exponent), since lbone_json_put_number rounds
 * on purpose.  This file lives under
 * tests/fuzz/, with the other fuzz targets.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbone_buf.h"
#include "lbone_json.h"

static void check_tree(const lbone_json_t *v, int depth)
{
    if (depth > LBONE_JSON_MAX_DEPTH)
        abort();
    lbone_json_type t = lbone_json_type_of(v);
    if (t == LBONE_JSON_STRING) {
        size_t n;
        const char *s = lbone_json_string(v, &n);
        if (!s || strlen(s) != n)
            abort();
        return;
    }
    if (t != LBONE_JSON_ARRAY && t != LBONE_JSON_OBJECT)
        return;
    size_t n = 0;
    for (const lbone_json_t *c = lbone_json_child(v); c; c = lbone_json_next(c), n++) {
        if (t == LBONE_JSON_OBJECT &&
            (!lbone_json_key(c) || lbone_json_get(v, lbone_json_key(c)) != c))
            abort(); /* keys are unique, so get must find exactly this member */
        check_tree(c, depth + 1);
    }
    if (n != lbone_json_count(v))
        abort();
}

static void write_value(lbone_buf_t *b, const lbone_json_t *v)
{
    int flag;
    int64_t i;
    double d;
    switch (lbone_json_type_of(v)) {
    case LBONE_JSON_NULL: lbone_buf_puts(b, "null"); break;
    case LBONE_JSON_BOOL:
        lbone_json_bool(v, &flag);
        lbone_buf_puts(b, flag ? "true" : "false");
        break;
    case LBONE_JSON_NUMBER:
        if (lbone_json_int(v, &i) == 0)
            lbone_buf_printf(b, "%lld", (long long)i);
        else if (lbone_json_number(v, &d) == 0) {
            /* Whether a number is an integer depends on how it is written: keep a fraction
             * or an exponent, so 2^63 - 1000.5 (integral once rounded) stays a non-integer. */
            char t[40];
            snprintf(t, sizeof t, "%.17g", d);
            lbone_buf_printf(b, "%s%s", t, strpbrk(t, ".e") ? "" : ".0");
        } else
            abort();
        break;
    case LBONE_JSON_STRING: lbone_json_put_string(b, lbone_json_string(v, NULL)); break;
    case LBONE_JSON_ARRAY:
    case LBONE_JSON_OBJECT: {
        int obj = lbone_json_type_of(v) == LBONE_JSON_OBJECT;
        lbone_buf_puts(b, obj ? "{" : "[");
        for (const lbone_json_t *c = lbone_json_child(v); c; c = lbone_json_next(c)) {
            if (c != lbone_json_child(v))
                lbone_buf_puts(b, ",");
            if (obj) {
                lbone_json_put_string(b, lbone_json_key(c));
                lbone_buf_puts(b, ":");
            }
            write_value(b, c);
        }
        lbone_buf_puts(b, obj ? "}" : "]");
        break;
    }
    }
}

static int same(const lbone_json_t *a, const lbone_json_t *b)
{
    lbone_json_type t = lbone_json_type_of(a);
    if (t != lbone_json_type_of(b))
        return 0;
    int x, y;
    int64_t i, j;
    double d, e;
    size_t n, m;
    switch (t) {
    case LBONE_JSON_NULL: return 1;
    case LBONE_JSON_BOOL: return lbone_json_bool(a, &x) == 0 && lbone_json_bool(b, &y) == 0 && x == y;
    case LBONE_JSON_NUMBER:
        if (lbone_json_number(a, &d) || lbone_json_number(b, &e) || d != e)
            return 0;
        x = lbone_json_int(a, &i) == 0;
        y = lbone_json_int(b, &j) == 0;
        return x == y && (!x || i == j);
    case LBONE_JSON_STRING: {
        const char *s = lbone_json_string(a, &n), *r = lbone_json_string(b, &m);
        return n == m && memcmp(s, r, n) == 0;
    }
    case LBONE_JSON_ARRAY:
    case LBONE_JSON_OBJECT: break;
    }
    if (lbone_json_count(a) != lbone_json_count(b))
        return 0;
    const lbone_json_t *c = lbone_json_child(a), *k = lbone_json_child(b);
    for (; c && k; c = lbone_json_next(c), k = lbone_json_next(k))
        if ((t == LBONE_JSON_OBJECT && strcmp(lbone_json_key(c), lbone_json_key(k)) != 0) ||
            !same(c, k))
            return 0;
    return !c && !k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[160];
    lbone_json_doc_t *doc = lbone_json_parse((const char *)data, size, err, sizeof err);
    if (!doc) {
        if (strncmp(err, "offset ", 7) != 0)
            abort(); /* every error names where it happened */
        return 0;
    }
    const lbone_json_t *root = lbone_json_root(doc);
    check_tree(root, 0);

    lbone_buf_t b1, b2;
    lbone_buf_init(&b1);
    lbone_buf_init(&b2);
    write_value(&b1, root);
    if (b1.oom)
        abort();
    lbone_json_doc_t *back = lbone_json_parse(b1.p, b1.len, err, sizeof err);
    if (!back || !same(root, lbone_json_root(back)))
        abort();
    write_value(&b2, lbone_json_root(back));
    if (b2.oom || b1.len != b2.len || memcmp(b1.p, b2.p, b1.len) != 0)
        abort();
    lbone_buf_free(&b1);
    lbone_buf_free(&b2);
    lbone_json_free(back);
    lbone_json_free(doc);
    return 0;
}
