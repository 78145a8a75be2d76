/* lns_units.h -- sizes and durations as people type them: "64M", "1g", "30d", "90s", and
 * sizes as they read them.
 *
 * Syntax only: decimal digits, then at most one suffix, nothing else; the result must fit an
 * int64_t.  What a value may be (non-zero, below some policy limit) is the caller's rule.
 */
#ifndef LNS_UNITS_H
#define LNS_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* Bytes with an optional K, M, G or T suffix (powers of 1024, either case). 0 ok, -1 bad. */
int lns_parse_size(const char *s, uint64_t *out);
/* Seconds with an optional s, m, h or d suffix. 0 ok, -1 bad. */
int lns_parse_seconds(const char *s, int64_t *out);
/* A bitrate in bits per second: a decimal number (fractions allowed: "1.5M"), an optional
 * k, M or G suffix (powers of 1000, as bitrates are counted, either case) and optionally
 * "bit/s" or "bps"; 1 .. 1e12.  0 ok, -1 bad. */
int lns_parse_rate(const char *s, double *out);
/* The strict decimal of a wire field: s[0..n), 1 to maxdigits (at most 18) digits, no sign,
 * no leading zero.  The value, or -1. */
int64_t lns_parse_digits(const char *s, size_t n, size_t maxdigits);
/* Bytes as people read them: "512B", "1.5MiB" (powers of 1024, one decimal). */
void lns_format_size(int64_t n, char *buf, size_t size);

#endif
