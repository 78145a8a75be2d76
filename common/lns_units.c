/* lns_units.c -- sizes and durations as people type them. */
#include "lns_units.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct unit {
    char c;
    uint64_t mul;
} unit_t;

/* Digits, then an optional one-character suffix whose multiplier is in units[]; an unknown
 * suffix, trailing junk or a result past INT64_MAX is -1. */
static int parse(const char *s, const unit_t *units, int nunits, uint64_t *out)
{
    uint64_t v = 0, mul = 1;
    if (!s || *s < '0' || *s > '9')
        return -1;
    for (; *s >= '0' && *s <= '9'; s++) {
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    if (*s) {
        int i;
        for (i = 0; i < nunits && units[i].c != *s; i++)
            ;
        if (i == nunits || s[1])
            return -1;
        mul = units[i].mul;
    }
    if (v > (uint64_t)INT64_MAX / mul)
        return -1;
    *out = v * mul;
    return 0;
}

int lns_parse_size(const char *s, uint64_t *out)
{
    static const unit_t units[] = {
        {'k', 1ULL << 10}, {'K', 1ULL << 10}, {'m', 1ULL << 20}, {'M', 1ULL << 20},
        {'g', 1ULL << 30}, {'G', 1ULL << 30}, {'t', 1ULL << 40}, {'T', 1ULL << 40},
    };
    return parse(s, units, 8, out);
}

int lns_parse_seconds(const char *s, int64_t *out)
{
    static const unit_t units[] = {{'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400}};
    uint64_t v;
    if (parse(s, units, 4, &v) < 0)
        return -1;
    *out = (int64_t)v;
    return 0;
}

int lns_parse_rate(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !(v > 0))
        return -1;
    switch (*end) {
    case 'k': case 'K': v *= 1e3; end++; break;
    case 'm': case 'M': v *= 1e6; end++; break;
    case 'g': case 'G': v *= 1e9; end++; break;
    default: break;
    }
    if (*end && strcmp(end, "bit/s") != 0 && strcmp(end, "bps") != 0)
        return -1;
    if (!(v >= 1 && v <= 1e12)) /* also refuses inf and nan */
        return -1;
    *out = v;
    return 0;
}

int64_t lns_parse_digits(const char *s, size_t n, size_t maxdigits)
{
    int64_t v = 0;
    if (n == 0 || n > maxdigits || n > 18 || s[0] == '0')
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

void lns_format_size(int64_t n, char *buf, size_t size)
{
    static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = (double)n;
    int u = 0;
    while (v >= 1024 && u < 5) {
        v /= 1024;
        u++;
    }
    snprintf(buf, size, u == 0 ? "%.0f%s" : "%.1f%s", v, unit[u]);
}
