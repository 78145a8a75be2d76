/* ibp_cap.c -- capabilities: parse, format and the key as it goes on the wire.
 *
 *     ibp://<host>:<port>/<rid>#<key>/<typekey>/READ|WRITE|MANAGE     (1.4 form)
 *     ibp://<host>:<port>/<key>/<typekey>/READ|WRITE|MANAGE           (old six-field form)
 *
 * A capability is handed from user to user like a URL, so the parser trusts nothing: every
 * part must be present, within its size limit, and made of printable ASCII without the
 * separators; the port is canonical decimal 1..65535.  What parses formats back to the same
 * string (round trip), which the unit tests check.  IPv6 literal hosts are written in
 * brackets and kept without them in ibp_cap_t, ready for getaddrinfo().
 */
#include "ibp.h"
#include "lns_units.h"

#include <stdio.h>
#include <string.h>

#define CAP_PREFIX "ibp://"

static const char *const kind_names[] = {NULL, "READ", "WRITE", "MANAGE"};

const char *ibp_captype_name(ibp_captype t)
{
    if (t >= IBP_READCAP && t <= IBP_MANAGECAP)
        return kind_names[t];
    return "UNKNOWN";
}

/* Printable ASCII other than the capability's separators. */
static int text_char(unsigned char ch)
{
    return ch >= 0x21 && ch <= 0x7e && ch != '/' && ch != '#';
}

static int host_char(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '-' || ch == '.' || ch == '_';
}

/* Inside [ ]: hex digits, ':' and '.' (a v4-mapped tail), then an optional %zone. */
static int v6_literal_ok(const char *s, size_t n)
{
    size_t i = 0;
    if (n < 2 || !memchr(s, ':', n))
        return 0;
    for (; i < n && s[i] != '%'; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F') ||
              ch == ':' || ch == '.'))
            return 0;
    }
    if (i < n && ++i == n)
        return 0; /* '%' with no zone */
    for (; i < n; i++)
        if (!host_char((unsigned char)s[i]))
            return 0;
    return 1;
}

/* Copy the text field s[0..n) into dst[size] if it is non-empty, fits and is clean. */
static int take_text(const char *s, size_t n, char *dst, size_t size)
{
    if (n == 0 || n >= size)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (!text_char((unsigned char)s[i]))
            return -1;
    memcpy(dst, s, n);
    dst[n] = 0;
    return 0;
}

static int parse_port(const char *s, size_t n, int *port)
{
    int64_t v = lns_parse_digits(s, n, 5);
    if (v < 1 || v > 65535)
        return -1;
    *port = (int)v;
    return 0;
}

/* host:port up to (not including) end. */
static int parse_authority(const char *s, const char *end, ibp_cap_t *cap)
{
    const char *colon;
    if (s < end && *s == '[') {
        const char *close = memchr(s, ']', (size_t)(end - s));
        size_t n;
        if (!close || close + 1 >= end || close[1] != ':')
            return -1;
        n = (size_t)(close - s - 1);
        if (n >= sizeof cap->host || !v6_literal_ok(s + 1, n))
            return -1;
        memcpy(cap->host, s + 1, n);
        cap->host[n] = 0;
        colon = close + 1;
    } else {
        size_t n;
        colon = memchr(s, ':', (size_t)(end - s));
        if (!colon)
            return -1;
        n = (size_t)(colon - s);
        if (n == 0 || n >= sizeof cap->host)
            return -1;
        for (size_t i = 0; i < n; i++)
            if (!host_char((unsigned char)s[i]))
                return -1;
        memcpy(cap->host, s, n);
        cap->host[n] = 0;
    }
    return parse_port(colon + 1, (size_t)(end - colon - 1), &cap->port);
}

int ibp_cap_parse(const char *s, ibp_cap_t *out)
{
    ibp_cap_t cap;
    const char *p, *slash, *hash, *kind;
    size_t len, plen = strlen(CAP_PREFIX);

    if (!s || !out)
        return IBP_E_WRONG_CAP_FORMAT;
    len = strnlen(s, IBP_MAX_CAP);
    if (len >= IBP_MAX_CAP || len <= plen || memcmp(s, CAP_PREFIX, plen) != 0)
        return IBP_E_WRONG_CAP_FORMAT;
    memset(&cap, 0, sizeof cap);
    p = s + plen;

    slash = strchr(p, '/');
    if (!slash || parse_authority(p, slash, &cap) < 0)
        return IBP_E_WRONG_CAP_FORMAT;

    /* [<rid>#]<key> */
    p = slash + 1;
    slash = strchr(p, '/');
    if (!slash)
        return IBP_E_WRONG_CAP_FORMAT;
    hash = memchr(p, '#', (size_t)(slash - p));
    if (hash) {
        if (take_text(p, (size_t)(hash - p), cap.rid, sizeof cap.rid) < 0 ||
            take_text(hash + 1, (size_t)(slash - hash - 1), cap.key, sizeof cap.key) < 0)
            return IBP_E_WRONG_CAP_FORMAT;
    } else if (take_text(p, (size_t)(slash - p), cap.key, sizeof cap.key) < 0) {
        return IBP_E_WRONG_CAP_FORMAT;
    }

    /* <typekey>/<kind> and nothing after it */
    p = slash + 1;
    slash = strchr(p, '/');
    if (!slash || take_text(p, (size_t)(slash - p), cap.typekey, sizeof cap.typekey) < 0)
        return IBP_E_WRONG_CAP_FORMAT;
    kind = slash + 1;
    if (strcmp(kind, "READ") == 0)
        cap.type = IBP_READCAP;
    else if (strcmp(kind, "WRITE") == 0)
        cap.type = IBP_WRITECAP;
    else if (strcmp(kind, "MANAGE") == 0)
        cap.type = IBP_MANAGECAP;
    else
        return IBP_E_WRONG_CAP_FORMAT;
    *out = cap;
    return IBP_OK;
}

int ibp_cap_format(const ibp_cap_t *cap, char *buf, size_t size)
{
    int n;
    const char *ob, *cb;
    if (!cap || !buf || cap->type < IBP_READCAP || cap->type > IBP_MANAGECAP ||
        cap->port < 1 || cap->port > 65535 || !cap->host[0] || !cap->key[0] || !cap->typekey[0])
        return IBP_E_INVALID_PARAMETER;
    /* Bracket IPv6 literals so the port stays unambiguous. */
    ob = strchr(cap->host, ':') ? "[" : "";
    cb = *ob ? "]" : "";
    n = snprintf(buf, size, CAP_PREFIX "%s%s%s:%d/%s%s%s/%s/%s", ob, cap->host, cb, cap->port,
                 cap->rid, cap->rid[0] ? "#" : "", cap->key, cap->typekey,
                 ibp_captype_name(cap->type));
    if (n < 0 || (size_t)n >= size || n >= IBP_MAX_CAP) {
        if (size > 0)
            buf[0] = 0;
        return IBP_E_INVALID_PARAMETER;
    }
    return IBP_OK;
}

int ibp_cap_wire_key(const ibp_cap_t *cap, char *buf, size_t size)
{
    int n;
    if (!cap || !buf || !cap->key[0])
        return IBP_E_INVALID_PARAMETER;
    n = snprintf(buf, size, "%s%s%s", cap->rid, cap->rid[0] ? "#" : "", cap->key);
    if (n < 0 || (size_t)n >= size) {
        if (size > 0)
            buf[0] = 0;
        return IBP_E_INVALID_PARAMETER;
    }
    return IBP_OK;
}
