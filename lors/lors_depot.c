/* lors_depot.c -- depot addresses as users write them: "host[:port][/rid][#pin]", and lists
 * of them.
 *
 * Parsing is strict so that a typo fails here, with the entry named, rather than as a
 * connection error halfway through an upload.  An IPv6 address must be in brackets
 * ("[::1]:6714"): without them its colons could not be told from the port separator.  The
 * pin ("#sha256:<64 hex>", the form of the L-Bone's URL) is the depot's TLS identity as its
 * owner published it: checked from the first connection on, instead of learned there.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lors.h"
#include "lns_array.h"
#include "lns_err.h"

static int host_char(int c)
{
    return isalnum(c) || c == '-' || c == '.' || c == '_';
}

static int v6_char(int c)
{
    return isxdigit(c) || c == ':' || c == '.';
}

static int rid_char(int c)
{
    return isalnum(c) || c == '-' || c == '_' || c == '.';
}

/* Parse s[0..len) into d. */
static int parse_one(const char *s, size_t len, lors_depot_t *d)
{
    const char *p = s, *end = s + len;
    size_t hl = 0;

    memset(d, 0, sizeof *d);
    d->port = IBP_DEFAULT_PORT;
    if (p == end)
        return LORS_E_DEPOT;
    if (*p == '[') {
        const char *close = memchr(p, ']', (size_t)(end - p));
        if (!close || close == p + 1)
            return LORS_E_DEPOT;
        for (const char *q = p + 1; q < close; q++)
            if (!v6_char((unsigned char)*q))
                return LORS_E_DEPOT;
        if (!memchr(p + 1, ':', (size_t)(close - p - 1)))
            return LORS_E_DEPOT; /* brackets are for IPv6 only */
        hl = (size_t)(close - p - 1);
        if (hl >= sizeof d->host)
            return LORS_E_DEPOT;
        memcpy(d->host, p + 1, hl);
        p = close + 1;
    } else {
        while (p < end && host_char((unsigned char)*p))
            p++;
        hl = (size_t)(p - s);
        if (hl == 0 || hl >= sizeof d->host)
            return LORS_E_DEPOT;
        memcpy(d->host, s, hl);
    }
    d->host[hl] = '\0';

    if (p < end && *p == ':') {
        long port = 0;
        p++;
        if (p == end || !isdigit((unsigned char)*p))
            return LORS_E_DEPOT;
        while (p < end && isdigit((unsigned char)*p)) {
            port = port * 10 + (*p - '0');
            if (port > 65535)
                return LORS_E_DEPOT;
            p++;
        }
        if (port < 1)
            return LORS_E_DEPOT;
        d->port = (int)port;
    }
    if (p < end && *p == '/') {
        const char *r = ++p;
        while (p < end && rid_char((unsigned char)*p))
            p++;
        size_t rl = (size_t)(p - r);
        if (rl == 0 || rl >= sizeof d->rid)
            return LORS_E_DEPOT;
        memcpy(d->rid, r, rl);
        d->rid[rl] = '\0';
    }
    if (p < end && *p == '#') {
        size_t pl = (size_t)(end - ++p);
        if (pl >= sizeof d->pin)
            return LORS_E_DEPOT;
        memcpy(d->pin, p, pl);
        d->pin[pl] = '\0';
        if (!ibp_tls_pin_valid(d->pin))
            return LORS_E_DEPOT;
        p = end;
    }
    return p == end ? LORS_OK : LORS_E_DEPOT;
}

int lors_depot_parse(const char *s, lors_depot_t *d)
{
    if (!s || !d)
        return LORS_E_INVAL;
    return parse_one(s, strlen(s), d);
}

static int is_sep(int c)
{
    return c == ',' || isspace(c);
}

int lors_depot_list_parse(const char *s, lors_depot_t **out, size_t *n, char *err, size_t errlen)
{
    lors_depot_t *v = NULL;
    size_t nv = 0, cap = 0;

    if (err && errlen)
        err[0] = '\0';
    if (!s || !out || !n)
        return LORS_E_INVAL;
    *out = NULL;
    *n = 0;
    for (const char *p = s; *p;) {
        while (*p && is_sep((unsigned char)*p))
            p++;
        if (!*p)
            break;
        const char *start = p;
        while (*p && !is_sep((unsigned char)*p))
            p++;
        if (lns_grow(&v, &cap, nv + 1, sizeof *v, 8) < 0) {
            free(v);
            return LORS_E_NOMEM;
        }
        if (parse_one(start, (size_t)(p - start), &v[nv]) != LORS_OK) {
            /* the address good, the pin not: say so, not that the whole entry is wrong */
            const char *hash = memchr(start, '#', (size_t)(p - start));
            int pin_bad = hash && parse_one(start, (size_t)(hash - start), &v[nv]) == LORS_OK;
            int len = (int)(p - start > 200 ? 200 : p - start);
            if (err && errlen && pin_bad)
                lns_err_set(err, errlen, "depot %zu: \"%.*s\": the pin is not sha256: and 64 "
                            "lowercase hex digits", nv + 1, len, start);
            else if (err && errlen)
                lns_err_set(err, errlen, "depot %zu: \"%.*s\" is not "
                            "host[:port][/rid][#sha256:PIN]", nv + 1, len, start);
            free(v);
            return LORS_E_DEPOT;
        }
        nv++;
    }
    if (nv == 0) {
        if (err && errlen)
            lns_err_set(err, errlen, "the depot list is empty");
        free(v);
        return LORS_E_NODEPOTS;
    }
    *out = v;
    *n = nv;
    return LORS_OK;
}

void lors_depot_format(const lors_depot_t *d, char *buf, size_t size)
{
    int v6 = strchr(d->host, ':') != NULL;
    snprintf(buf, size, "%s%s%s:%d%s%s", v6 ? "[" : "", d->host, v6 ? "]" : "", d->port,
             d->rid[0] ? "/" : "", d->rid);
}

void lors_depot_pins_use(const lors_depot_t *d, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (d[i].pin[0])
            ibp_tls_pin(d[i].host, d[i].port, d[i].pin); /* valid: lors_depot_parse checked it */
}
