/* fuzz_lbone_json.c -- libFuzzer target for the L-Bone's JSON decoding and writer (make fuzz).
 *
 * Every registration, heartbeat, report and query answer goes through lbone_json_parse
 * (jansson under the L-Bone's limits), so it is fuzzed for more than crashes: every refusal
 * names an offset; a tree it accepts must respect the limits (nesting, strings without NUL,
 * no duplicate keys found by json_object_get), lbone_json_int must agree with jansson's
 * integers, and the tree must write back out through lbone_json_put_string as JSON that
 * parses to an equal tree, and writing that again must give the same bytes (so member order
 * survives too).  Numbers are written with full precision here (integers as integers, others
 * always with a fraction or exponent), since lbone_json_put_number rounds on purpose.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lns_buf.h"
#include "lbone_json.h"

static void check_tree(json_t *v, int depth)
{
    const char *k;
    json_t *m;
    size_t i, n = 0;
    int64_t x;
    switch (json_typeof(v)) {
    case JSON_STRING:
        if (strlen(json_string_value(v)) != json_string_length(v))
            abort();
        return;
    case JSON_INTEGER:
        if (lbone_json_int(v, &x) != 0 || x != json_integer_value(v))
            abort();
        return;
    case JSON_OBJECT:
        if (depth >= LBONE_JSON_MAX_DEPTH)
            abort();
        json_object_foreach (v, k, m) {
            if (json_object_get(v, k) != m)
                abort(); /* keys are unique, so get must find exactly this member */
            check_tree(m, depth + 1);
            n++;
        }
        if (n != json_object_size(v))
            abort();
        return;
    case JSON_ARRAY:
        if (depth >= LBONE_JSON_MAX_DEPTH)
            abort();
        json_array_foreach (v, i, m)
            check_tree(m, depth + 1);
        return;
    default: return;
    }
}

static void write_value(lns_buf_t *b, json_t *v)
{
    const char *k;
    json_t *m;
    size_t i;
    char t[40];
    int first = 1;
    switch (json_typeof(v)) {
    case JSON_NULL: lns_buf_puts(b, "null"); break;
    case JSON_TRUE: lns_buf_puts(b, "true"); break;
    case JSON_FALSE: lns_buf_puts(b, "false"); break;
    case JSON_INTEGER: lns_buf_printf(b, "%lld", (long long)json_integer_value(v)); break;
    case JSON_REAL:
        /* Keep a fraction or an exponent, so the number stays a real when parsed back. */
        snprintf(t, sizeof t, "%.17g", json_real_value(v));
        lns_buf_printf(b, "%s%s", t, strpbrk(t, ".e") ? "" : ".0");
        break;
    case JSON_STRING: lbone_json_put_string(b, json_string_value(v)); break;
    case JSON_ARRAY:
        lns_buf_puts(b, "[");
        json_array_foreach (v, i, m) {
            lns_buf_puts(b, i ? "," : "");
            write_value(b, m);
        }
        lns_buf_puts(b, "]");
        break;
    case JSON_OBJECT:
        lns_buf_puts(b, "{");
        json_object_foreach (v, k, m) {
            lns_buf_puts(b, first ? "" : ",");
            first = 0;
            lbone_json_put_string(b, k);
            lns_buf_puts(b, ":");
            write_value(b, m);
        }
        lns_buf_puts(b, "}");
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[160];
    json_t *root = lbone_json_parse((const char *)data, size, err, sizeof err);
    if (!root) {
        if (strncmp(err, "offset ", 7) != 0)
            abort(); /* every error names where it happened */
        return 0;
    }
    check_tree(root, 0);

    lns_buf_t b1, b2;
    lns_buf_init(&b1);
    lns_buf_init(&b2);
    write_value(&b1, root);
    if (b1.oom)
        abort();
    json_t *back = lbone_json_parse(b1.p, b1.len, err, sizeof err);
    if (!back || !json_equal(root, back))
        abort();
    write_value(&b2, back);
    if (b2.oom || b1.len != b2.len || memcmp(b1.p, b2.p, b1.len) != 0)
        abort();
    lns_buf_free(&b1);
    lns_buf_free(&b2);
    json_decref(back);
    json_decref(root);
    return 0;
}
