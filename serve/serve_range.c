/* serve_range.c -- HTTP byte ranges and content types for lors_serve (pure functions). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "serve.h"

/* Digits at *p into *v (no sign, no overflow past INT64_MAX / 10): 1 if any. */
static int digits(const char **p, int64_t *v)
{
    const char *s = *p;
    int64_t x = 0;
    if (!isdigit((unsigned char)*s))
        return 0;
    while (isdigit((unsigned char)*s)) {
        if (x > (INT64_MAX - 9) / 10)
            return 0;
        x = x * 10 + (*s++ - '0');
    }
    *v = x;
    *p = s;
    return 1;
}

static int by_offset(const void *a, const void *b)
{
    int64_t x = ((const serve_range_t *)a)->off, y = ((const serve_range_t *)b)->off;
    return (x > y) - (x < y);
}

static const char *skip_ws(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

serve_ranges_kind serve_parse_ranges(const char *h, int64_t size, serve_range_t *out, int *n)
{
    *n = 0;
    if (!h)
        return SERVE_WHOLE;
    h = skip_ws(h);
    if (strncasecmp(h, "bytes", 5) != 0)
        return SERVE_WHOLE;
    h = skip_ws(h + 5);
    if (*h++ != '=')
        return SERVE_WHOLE;
    int specs = 0;
    for (;;) {
        h = skip_ws(h);
        if (*h == ',') { /* empty list elements are allowed */
            h++;
            continue;
        }
        if (!*h)
            break;
        int64_t a = -1, b = -1;
        if (*h == '-') { /* suffix: the last b bytes */
            h++;
            if (!digits(&h, &b))
                return SERVE_WHOLE;
        } else {
            if (!digits(&h, &a) || *h++ != '-')
                return SERVE_WHOLE;
            if (isdigit((unsigned char)*h) && !digits(&h, &b))
                return SERVE_WHOLE;
            if (b >= 0 && b < a)
                return SERVE_WHOLE; /* invalid: the header is ignored */
        }
        h = skip_ws(h);
        if (*h && *h != ',')
            return SERVE_WHOLE;
        if (++specs > SERVE_MAX_RANGES)
            return SERVE_WHOLE;
        serve_range_t r;
        if (a < 0) { /* suffix */
            if (b == 0 || size == 0)
                continue;
            r.len = b < size ? b : size;
            r.off = size - r.len;
        } else {
            if (a >= size)
                continue;
            int64_t end = b < 0 || b >= size ? size - 1 : b;
            r.off = a;
            r.len = end - a + 1;
        }
        out[(*n)++] = r;
    }
    if (specs == 0)
        return SERVE_WHOLE;
    if (!*n)
        return SERVE_UNSATISFIABLE;
    /* ranges that ask for more bytes than the file has: the whole file once (as nginx);
     * else overlapping and adjacent ranges merged, so no header makes us send a byte twice */
    int64_t asked = 0;
    for (int i = 0; i < *n; i++)
        asked += out[i].len;
    if (asked > size)
        return SERVE_WHOLE;
    qsort(out, (size_t)*n, sizeof *out, by_offset);
    int m = 0;
    for (int i = 1; i < *n; i++) {
        if (out[i].off <= out[m].off + out[m].len) {
            int64_t end = out[i].off + out[i].len;
            if (end > out[m].off + out[m].len)
                out[m].len = end - out[m].off;
        } else {
            out[++m] = out[i];
        }
    }
    *n = m + 1;
    return SERVE_PARTIAL;
}

static const struct {
    const char *ext, *type;
} types[] = {
    {"mp4", "video/mp4"},       {"m4v", "video/mp4"},         {"webm", "video/webm"},
    {"mkv", "video/x-matroska"}, {"ts", "video/mp2t"},         {"mpg", "video/mpeg"},
    {"mpeg", "video/mpeg"},     {"mov", "video/quicktime"},   {"avi", "video/x-msvideo"},
    {"ogv", "video/ogg"},       {"mp3", "audio/mpeg"},        {"m4a", "audio/mp4"},
    {"ogg", "audio/ogg"},       {"oga", "audio/ogg"},         {"opus", "audio/ogg"},
    {"wav", "audio/wav"},       {"flac", "audio/flac"},       {"jpg", "image/jpeg"},
    {"jpeg", "image/jpeg"},     {"png", "image/png"},         {"gif", "image/gif"},
    {"webp", "image/webp"},     {"svg", "image/svg+xml"},     {"tif", "image/tiff"},
    {"tiff", "image/tiff"},     {"html", "text/html; charset=utf-8"},
    {"htm", "text/html; charset=utf-8"}, {"txt", "text/plain; charset=utf-8"},
    {"csv", "text/csv"},        {"json", "application/json"}, {"xml", "application/xml"},
    {"pdf", "application/pdf"}, {"tar", "application/x-tar"}, {"gz", "application/gzip"},
    {"tgz", "application/gzip"}, {"bz2", "application/x-bzip2"}, {"xz", "application/x-xz"},
    {"zst", "application/zstd"}, {"zip", "application/zip"}, {"iso", "application/x-iso9660-image"},
};

const char *serve_content_type(const char *name)
{
    const char *dot = strrchr(name, '.');
    if (dot && dot != name)
        for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
            if (strcasecmp(dot + 1, types[i].ext) == 0)
                return types[i].type;
    return "application/octet-stream";
}
