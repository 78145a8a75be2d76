/* lbone_json.c -- strict JSON decoding through jansson, with the L-Bone's limits, and the writer.
 *
 * Input comes from the network.  jansson checks the grammar, UTF-8 and duplicate keys; what
 * it does not bound we bound before it runs: the size of the text, and the nesting, which a
 * scan of the raw bytes measures (jansson's own limit is 2048 levels, far above anything the
 * API sends).  Every error names its byte offset, like the errors jansson reports.
 */
#include "lbone_json.h"
#include "lns_err.h"

#include <math.h>
#include <stdio.h>

/* Offset of the first bracket deeper than LBONE_JSON_MAX_DEPTH, or -1.  Brackets inside
 * strings do not count; text that is not JSON is jansson's to reject. */
static long too_deep_at(const char *text, size_t len)
{
    int depth = 0, in_string = 0;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (in_string) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_string = 0;
        } else if (c == '"') {
            in_string = 1;
        } else if (c == '[' || c == '{') {
            if (++depth > LBONE_JSON_MAX_DEPTH)
                return (long)i;
        } else if (c == ']' || c == '}') {
            depth--;
        }
    }
    return -1;
}

json_t *lbone_json_parse(const char *text, size_t len, char *err, size_t errlen)
{
    char dummy[8];
    json_error_t je;
    long at;
    if (!err || errlen == 0) {
        err = dummy;
        errlen = sizeof dummy;
    }
    if (len > LBONE_JSON_MAX_BYTES) {
        lns_err_set(err, errlen, "offset %u: larger than %u bytes", LBONE_JSON_MAX_BYTES,
                 LBONE_JSON_MAX_BYTES);
        return NULL;
    }
    if ((at = too_deep_at(text, len)) >= 0) {
        lns_err_set(err, errlen, "offset %ld: nesting deeper than %d", at, LBONE_JSON_MAX_DEPTH);
        return NULL;
    }
    /* Without JSON_ALLOW_NUL, "\u0000" is refused, so every string is a C string. */
    json_t *v = json_loadb(text, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
    if (!v)
        lns_err_set(err, errlen, "offset %d: %s", je.position, je.text);
    return v;
}

int lbone_json_int(const json_t *v, int64_t *out)
{
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return 0;
    }
    if (!json_is_real(v))
        return -1;
    double d = json_real_value(v);
    if (d != floor(d) || fabs(d) >= 9007199254740992.0)
        return -1;
    *out = (int64_t)d;
    return 0;
}

void lbone_json_put_string(lns_buf_t *b, const char *s)
{
    const char *run = s;
    lns_buf_add(b, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char esc[8];
        const char *rep = NULL;
        if (c == '"')
            rep = "\\\"";
        else if (c == '\\')
            rep = "\\\\";
        else if (c == '\n')
            rep = "\\n";
        else if (c == '\r')
            rep = "\\r";
        else if (c == '\t')
            rep = "\\t";
        else if (c < 0x20 || c == '<' || c == '>' || c == '&' || c == 0x7f) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            rep = esc;
        }
        if (!rep)
            continue;
        lns_buf_add(b, run, (size_t)(s - run));
        lns_buf_puts(b, rep);
        run = s + 1;
    }
    lns_buf_add(b, run, (size_t)(s - run));
    lns_buf_add(b, "\"", 1);
}

void lbone_json_put_number(lns_buf_t *b, double v)
{
    if (!isfinite(v)) {
        lns_buf_puts(b, "null");
        return;
    }
    if (v == floor(v) && fabs(v) < 9007199254740992.0)
        lns_buf_printf(b, "%lld", (long long)v);
    else
        lns_buf_printf(b, "%.10g", v);
}
