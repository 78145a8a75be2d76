/* lns_hex.h -- bytes as lowercase hexadecimal and back.  The digests, keys, pins, tags and
 * tokens of every layer say their bytes this one way.
 */
#ifndef LNS_HEX_H
#define LNS_HEX_H

#include <stddef.h>

/* n bytes as 2n lowercase hex digits and a NUL into out (2n + 1 bytes); returns out. */
char *lns_hex(const void *bytes, size_t n, char *out);
/* The value of one lowercase hex digit (also an uppercase one with any_case), or -1. */
int lns_hex_digit(char c, int any_case);
/* The len hex digits of s into n bytes at out: 0, or -1 when len is not 2n or a character is
 * not a digit (lowercase; uppercase too with any_case). */
int lns_unhex(const char *s, size_t len, void *out, size_t n, int any_case);

#endif
