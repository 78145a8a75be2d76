/* xnd_meta.c -- typed metadata lists: lookup, typed get/set, nesting, strict number syntax.
 *
 * Every entry keeps its value as written (text) beside the parsed number, so what we read
 * is written back byte for byte; a setter formats a fresh text.  Lists are small arrays in
 * document order; names may repeat and lookups take the first.
 */
#include "xnd_internal.h"
#include "lns_array.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int xml_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* s without its surrounding XML whitespace: [*b, *e). */
static void trim(const char *s, const char **b, const char **e)
{
    const char *p = s, *q = s + strlen(s);
    while (p < q && xml_space(*p))
        p++;
    while (q > p && xml_space(q[-1]))
        q--;
    *b = p;
    *e = q;
}

int xnd_parse_int(const char *s, int64_t *out)
{
    const char *p, *e;
    int neg = 0;
    uint64_t v = 0, lim;
    trim(s, &p, &e);
    if (p < e && *p == '-') {
        neg = 1;
        p++;
    }
    if (p == e)
        return -1;
    lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; p < e; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        unsigned d = (unsigned)(*p - '0');
        if (v > (lim - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 0;
}

int xnd_parse_double(const char *s, double *out)
{
    const char *p, *e;
    char tmp[128], *end;
    double v;
    trim(s, &p, &e);
    if (p == e || (size_t)(e - p) >= sizeof tmp)
        return -1;
    /* Plain decimal forms only: no hex floats, inf or nan, which strtod would take. */
    for (const char *q = p; q < e; q++)
        if (!strchr("0123456789+-.eE", *q))
            return -1;
    memcpy(tmp, p, (size_t)(e - p));
    tmp[e - p] = 0;
    errno = 0;
    v = strtod(tmp, &end);
    if (*end || end == tmp || errno == ERANGE || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

const char *xnd_type_name(xnd_type t)
{
    static const char *const names[] = {"string", "integer", "double", "meta"};
    return t <= XND_META ? names[t] : "other";
}

int xnd_meta_parse_value(xnd_meta_t *m)
{
    if (m->type == XND_INTEGER)
        return xnd_parse_int(m->text, &m->i) == 0 ? XND_OK : XND_E_NUMBER;
    if (m->type == XND_DOUBLE)
        return xnd_parse_double(m->text, &m->d) == 0 ? XND_OK : XND_E_NUMBER;
    return XND_OK;
}

void xnd_meta_free_entry(xnd_meta_t *m)
{
    free(m->name);
    free(m->type_name);
    free(m->text);
    xnd_meta_list_clear(&m->sub);
    memset(m, 0, sizeof *m);
}

void xnd_meta_list_clear(xnd_meta_list_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        xnd_meta_free_entry(&l->items[i]);
    free(l->items);
    memset(l, 0, sizeof *l);
}

xnd_meta_t *xnd_meta_append(xnd_meta_list_t *l, const char *name, xnd_type type)
{
    xnd_meta_t *m;
    if (lns_grow(&l->items, &l->cap, l->n + 1, sizeof *l->items, 4) < 0)
        return NULL;
    m = &l->items[l->n];
    memset(m, 0, sizeof *m);
    m->name = strdup(name);
    m->text = strdup("");
    if (!m->name || !m->text) {
        xnd_meta_free_entry(m);
        return NULL;
    }
    m->type = type;
    l->n++;
    return m;
}

const xnd_meta_t *xnd_meta_find(const xnd_meta_list_t *l, const char *name)
{
    if (!l || !name)
        return NULL;
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->items[i].name, name) == 0)
            return &l->items[i];
    return NULL;
}

static int get_typed(const xnd_meta_list_t *l, const char *name, xnd_type t,
                     const xnd_meta_t **out)
{
    const xnd_meta_t *m = xnd_meta_find(l, name);
    if (!m)
        return XND_E_NOTFOUND;
    if (m->type != t)
        return XND_E_TYPE;
    *out = m;
    return XND_OK;
}

int xnd_meta_get_string(const xnd_meta_list_t *l, const char *name, const char **out)
{
    const xnd_meta_t *m;
    int rc = get_typed(l, name, XND_STRING, &m);
    if (rc == XND_OK)
        *out = m->text;
    return rc;
}

int xnd_meta_get_int(const xnd_meta_list_t *l, const char *name, int64_t *out)
{
    const xnd_meta_t *m;
    int rc = get_typed(l, name, XND_INTEGER, &m);
    if (rc == XND_OK)
        *out = m->i;
    return rc;
}

int xnd_meta_get_double(const xnd_meta_list_t *l, const char *name, double *out)
{
    const xnd_meta_t *m = xnd_meta_find(l, name);
    if (!m)
        return XND_E_NOTFOUND;
    if (m->type == XND_DOUBLE)
        *out = m->d;
    else if (m->type == XND_INTEGER)
        *out = (double)m->i;
    else
        return XND_E_TYPE;
    return XND_OK;
}

int xnd_meta_get_meta(xnd_meta_list_t *l, const char *name, xnd_meta_list_t **out)
{
    const xnd_meta_t *m;
    int rc = get_typed(l, name, XND_META, &m);
    if (rc == XND_OK)
        *out = &((xnd_meta_t *)m)->sub;
    return rc;
}

/* The entry to overwrite with a value of type t and text: the first of that name, reset,
 * or a new one at the end. */
static int set_text(xnd_meta_list_t *l, const char *name, xnd_type t, const char *text,
                    xnd_meta_t **out)
{
    xnd_meta_t *m = (xnd_meta_t *)xnd_meta_find(l, name);
    char *dup;
    if (!l || !name || !text)
        return XND_E_INVAL;
    if (!(dup = strdup(text)))
        return XND_E_NOMEM;
    if (!m) {
        if (!(m = xnd_meta_append(l, name, t))) {
            free(dup);
            return XND_E_NOMEM;
        }
    } else if (m->type != t || m->type_name) {
        free(m->type_name);
        m->type_name = NULL;
        xnd_meta_list_clear(&m->sub);
    }
    free(m->text);
    m->text = dup;
    m->type = t;
    m->line = 0;
    *out = m;
    return XND_OK;
}

int xnd_meta_set_string(xnd_meta_list_t *l, const char *name, const char *value)
{
    xnd_meta_t *m;
    return set_text(l, name, XND_STRING, value, &m);
}

int xnd_meta_set_int(xnd_meta_list_t *l, const char *name, int64_t value)
{
    char buf[32];
    xnd_meta_t *m;
    int rc;
    snprintf(buf, sizeof buf, "%" PRId64, value);
    if ((rc = set_text(l, name, XND_INTEGER, buf, &m)) == XND_OK)
        m->i = value;
    return rc;
}

int xnd_meta_set_double(xnd_meta_list_t *l, const char *name, double value)
{
    char buf[64];
    xnd_meta_t *m;
    int rc;
    if (!isfinite(value))
        return XND_E_INVAL;
    /* Shortest of %.15g / %.17g that reads back exactly. */
    snprintf(buf, sizeof buf, "%.15g", value);
    if (strtod(buf, NULL) != value)
        snprintf(buf, sizeof buf, "%.17g", value);
    if ((rc = set_text(l, name, XND_DOUBLE, buf, &m)) == XND_OK)
        m->d = value;
    return rc;
}

int xnd_meta_set_meta(xnd_meta_list_t *l, const char *name, xnd_meta_list_t **out)
{
    xnd_meta_t *m = (xnd_meta_t *)xnd_meta_find(l, name);
    int rc;
    if (m && m->type == XND_META) {
        *out = &m->sub;
        return XND_OK;
    }
    if ((rc = set_text(l, name, XND_META, "", &m)) == XND_OK)
        *out = &m->sub;
    return rc;
}

int xnd_meta_remove(xnd_meta_list_t *l, const char *name)
{
    xnd_meta_t *m = (xnd_meta_t *)xnd_meta_find(l, name);
    size_t i;
    if (!m)
        return XND_E_NOTFOUND;
    i = (size_t)(m - l->items);
    xnd_meta_free_entry(m);
    memmove(&l->items[i], &l->items[i + 1], (l->n - i - 1) * sizeof *m);
    l->n--;
    return XND_OK;
}

int xnd_meta_list_copy(xnd_meta_list_t *dst, const xnd_meta_list_t *src)
{
    memset(dst, 0, sizeof *dst);
    for (size_t i = 0; i < src->n; i++) {
        const xnd_meta_t *s = &src->items[i];
        xnd_meta_t *d = xnd_meta_append(dst, s->name, s->type);
        char *text = strdup(s->text);
        if (!d || !text || (s->type_name && !(d->type_name = strdup(s->type_name))) ||
            xnd_meta_list_copy(&d->sub, &s->sub) != XND_OK) {
            free(text);
            xnd_meta_list_clear(dst);
            return XND_E_NOMEM;
        }
        free(d->text);
        d->text = text;
        d->i = s->i;
        d->d = s->d;
        d->line = s->line;
    }
    return XND_OK;
}
