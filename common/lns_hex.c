/* lns_hex.c -- bytes as lowercase hexadecimal and back. */
#include "lns_hex.h"

char *lns_hex(const void *bytes, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    const unsigned char *b = bytes;
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
    out[2 * n] = 0;
    return out;
}

int lns_hex_digit(char c, int any_case)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (any_case && c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int lns_unhex(const char *s, size_t len, void *out, size_t n, int any_case)
{
    unsigned char *o = out;
    if (len != 2 * n)
        return -1;
    for (size_t i = 0; i < n; i++) {
        int hi = lns_hex_digit(s[2 * i], any_case), lo = lns_hex_digit(s[2 * i + 1], any_case);
        if (hi < 0 || lo < 0)
            return -1;
        o[i] = (unsigned char)(hi << 4 | lo);
    }
    return 0;
}
