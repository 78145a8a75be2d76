/* test_json.c -- a strict JSON checker for tests of programs that print JSON.
 *
 * Recursive descent over RFC 8259's grammar: objects, arrays, strings (escapes checked, no
 * raw control characters), numbers (no leading zeros, no bare '.'), true, false, null.  It
 * answers only "is this one valid document"; it builds nothing.
 */
#include "test_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *js_ws(const char *p)
{
    while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
        p++;
    return p;
}

static const char *js_value(const char *p, int depth);

static const char *js_string(const char *p)
{
    if (*p++ != '"')
        return NULL;
    for (; *p != '"'; p++) {
        if ((unsigned char)*p < 0x20)
            return NULL;
        if (*p == '\\') {
            p++;
            if (*p == 'u') {
                for (int i = 1; i <= 4; i++)
                    if (!strchr("0123456789abcdefABCDEF", p[i]) || !p[i])
                        return NULL;
                p += 4;
            } else if (!*p || !strchr("\"\\/bfnrt", *p)) {
                return NULL;
            }
        }
    }
    return p + 1;
}

static const char *js_number(const char *p)
{
    const char *s = p;
    if (*p == '-')
        p++;
    if (*p == '0')
        p++;
    else if (*p >= '1' && *p <= '9')
        while (*p >= '0' && *p <= '9')
            p++;
    else
        return NULL;
    if (*p == '.') {
        if (*++p < '0' || *p > '9')
            return NULL;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (*p < '0' || *p > '9')
            return NULL;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    return p > s ? p : NULL;
}

static const char *js_list(const char *p, int depth, char close, int keyed)
{
    p = js_ws(p + 1);
    if (*p == close)
        return p + 1;
    for (;;) {
        if (keyed) {
            if (!(p = js_string(p)))
                return NULL;
            p = js_ws(p);
            if (*p++ != ':')
                return NULL;
        }
        if (!(p = js_value(p, depth + 1)))
            return NULL;
        p = js_ws(p);
        if (*p == close)
            return p + 1;
        if (*p++ != ',')
            return NULL;
        p = js_ws(p);
    }
}

static const char *js_value(const char *p, int depth)
{
    p = js_ws(p);
    if (depth > 64)
        return NULL;
    switch (*p) {
    case '{': return js_list(p, depth, '}', 1);
    case '[': return js_list(p, depth, ']', 0);
    case '"': return js_string(p);
    case 't': return strncmp(p, "true", 4) ? NULL : p + 4;
    case 'f': return strncmp(p, "false", 5) ? NULL : p + 5;
    case 'n': return strncmp(p, "null", 4) ? NULL : p + 4;
    default: return js_number(p);
    }
}

int tj_valid(const char *text)
{
    const char *p = js_value(text, 0);
    return p && *js_ws(p) == 0;
}

long long tj_nth_int(const char *text, const char *key, int n)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = text;
    for (int i = 0; p && i <= n; i++)
        if ((p = strstr(p, pat)) != NULL && i < n)
            p += strlen(pat);
    return p ? strtoll(p + strlen(pat), NULL, 10) : -1;
}
