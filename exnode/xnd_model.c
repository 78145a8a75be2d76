/* xnd_model.c -- the in-memory exNode: create, copy and free exNodes, mappings, functions.
 *
 * Mappings are held by pointer so that a mapping stays where it is while others are added
 * or removed; the array is in document order and appends are amortised O(1).  Any change
 * of the set drops the sorted view (xnd_range.c), which is rebuilt on demand.
 */
#include "xnd_internal.h"
#include "lns_array.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- foreign elements ---- */

void xnd_raw_free(xnd_raw_t *r)
{
    while (r) {
        xnd_raw_t *next = r->next;
        free(r->name);
        free(r->text);
        for (size_t i = 0; i < r->nattrs * 2; i++)
            free(r->attrs[i]);
        free(r->attrs);
        xnd_raw_free(r->kids);
        free(r);
        r = next;
    }
}

static xnd_raw_t *raw_copy1(const xnd_raw_t *r)
{
    xnd_raw_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    if ((r->name && !(c->name = strdup(r->name))) || (r->text && !(c->text = strdup(r->text))))
        goto fail;
    if (r->nattrs) {
        if (!(c->attrs = calloc(r->nattrs * 2, sizeof *c->attrs)))
            goto fail;
        c->nattrs = r->nattrs;
        for (size_t i = 0; i < r->nattrs * 2; i++)
            if (!(c->attrs[i] = strdup(r->attrs[i])))
                goto fail;
    }
    if (r->kids && !(c->kids = xnd_raw_copy(r->kids)))
        goto fail;
    return c;
fail:
    xnd_raw_free(c);
    return NULL;
}

xnd_raw_t *xnd_raw_copy(const xnd_raw_t *r)
{
    xnd_raw_t *head = NULL, **tail = &head;
    for (; r; r = r->next) {
        if (!(*tail = raw_copy1(r))) {
            xnd_raw_free(head);
            return NULL;
        }
        tail = &(*tail)->next;
    }
    return head;
}

/* ---- functions ---- */

xnd_func_t *xnd_func_new(const char *name)
{
    xnd_func_t *f;
    if (!name)
        return NULL;
    if (!(f = calloc(1, sizeof *f)))
        return NULL;
    if (!(f->name = strdup(name))) {
        free(f);
        return NULL;
    }
    return f;
}

void xnd_func_free(xnd_func_t *f)
{
    if (!f)
        return;
    free(f->name);
    xnd_meta_list_clear(&f->args);
    xnd_meta_list_clear(&f->meta);
    for (size_t i = 0; i < f->nsubs; i++)
        xnd_func_free(f->subs[i]);
    free(f->subs);
    xnd_raw_free(f->extra);
    free(f);
}

int xnd_func_add_sub(xnd_func_t *f, xnd_func_t *sub)
{
    if (!f || !sub)
        return XND_E_INVAL;
    if (lns_grow(&f->subs, &f->capsubs, f->nsubs + 1, sizeof *f->subs, 2) < 0) {
        xnd_func_free(sub);
        return XND_E_NOMEM;
    }
    f->subs[f->nsubs++] = sub;
    return XND_OK;
}

xnd_func_t *xnd_func_copy(const xnd_func_t *f)
{
    xnd_func_t *c = xnd_func_new(f->name);
    if (!c)
        return NULL;
    c->line = f->line;
    if (xnd_meta_list_copy(&c->args, &f->args) != XND_OK ||
        xnd_meta_list_copy(&c->meta, &f->meta) != XND_OK ||
        (f->extra && !(c->extra = xnd_raw_copy(f->extra))))
        goto fail;
    for (size_t i = 0; i < f->nsubs; i++) {
        xnd_func_t *s = xnd_func_copy(f->subs[i]);
        if (!s || xnd_func_add_sub(c, s) != XND_OK)
            goto fail;
    }
    return c;
fail:
    xnd_func_free(c);
    return NULL;
}

/* ---- times ---- */

/* Days since 1970-01-01 of a proleptic Gregorian date (no time zone, no libc state). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int digits(const char *s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

int xnd_time_parse(const char *s, int64_t *epoch)
{
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int y, mo, d, h, mi, se;
    if (!s)
        return -1;
    if (xnd_parse_int(s, epoch) == 0)
        return 0;
    /* YYYY-MM-DD HH:MM:SS, exactly */
    if (strlen(s) != 19 || s[4] != '-' || s[7] != '-' || s[10] != ' ' || s[13] != ':' ||
        s[16] != ':' || digits(s, 4, &y) || digits(s + 5, 2, &mo) || digits(s + 8, 2, &d) ||
        digits(s + 11, 2, &h) || digits(s + 14, 2, &mi) || digits(s + 17, 2, &se))
        return -1;
    if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 || mi > 59 || se > 60)
        return -1;
    if (mo == 2 && d == 29 && !((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
        return -1;
    *epoch = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se;
    return 0;
}

void xnd_time_format(int64_t epoch, char *buf, size_t size)
{
    time_t t = (time_t)epoch;
    struct tm tm;
    if (!gmtime_r(&t, &tm) || strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm) == 0) {
        if (size)
            buf[0] = 0;
    }
}

/* ---- mappings ---- */

xnd_mapping_t *xnd_mapping_new(void)
{
    xnd_mapping_t *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->start.epoch = m->end.epoch = XND_TIME_UNKNOWN;
    return m;
}

void xnd_mapping_free(xnd_mapping_t *m)
{
    if (!m)
        return;
    free(m->start.text);
    free(m->end.text);
    for (int i = 0; i < 3; i++)
        free(m->cap[i]);
    xnd_func_free(m->func);
    xnd_meta_list_clear(&m->meta);
    xnd_raw_free(m->extra);
    free(m);
}

xnd_mapping_t *xnd_mapping_copy(const xnd_mapping_t *m)
{
    xnd_mapping_t *c;
    if (!m || !(c = malloc(sizeof *c)))
        return NULL;
    *c = *m;
    c->start.text = c->end.text = NULL;
    c->cap[0] = c->cap[1] = c->cap[2] = NULL;
    c->func = NULL;
    c->extra = NULL;
    memset(&c->meta, 0, sizeof c->meta);
    if ((m->start.text && !(c->start.text = strdup(m->start.text))) ||
        (m->end.text && !(c->end.text = strdup(m->end.text))))
        goto fail;
    for (int i = 0; i < 3; i++)
        if (m->cap[i] && !(c->cap[i] = strdup(m->cap[i])))
            goto fail;
    if ((m->func && !(c->func = xnd_func_copy(m->func))) ||
        (m->extra && !(c->extra = xnd_raw_copy(m->extra))) ||
        xnd_meta_list_copy(&c->meta, &m->meta) != XND_OK)
        goto fail;
    return c;
fail:
    xnd_mapping_free(c);
    return NULL;
}

int xnd_mapping_set_cap(xnd_mapping_t *m, xnd_capkind kind, const char *cap)
{
    char *dup = NULL;
    if (!m || kind < XND_READ || kind > XND_MANAGE)
        return XND_E_INVAL;
    if (cap && !(dup = strdup(cap)))
        return XND_E_NOMEM;
    free(m->cap[kind]);
    m->cap[kind] = dup;
    m->line[XND_L_READ + kind] = 0;
    return XND_OK;
}

int xnd_mapping_set_time(xnd_mapping_t *m, int which, int64_t epoch)
{
    char buf[64];
    xnd_stamp_t *st;
    char *dup;
    if (!m || (which != 0 && which != 1))
        return XND_E_INVAL;
    st = which ? &m->end : &m->start;
    xnd_time_format(epoch, buf, sizeof buf);
    if (!buf[0])
        return XND_E_INVAL;
    if (!(dup = strdup(buf)))
        return XND_E_NOMEM;
    free(st->text);
    st->text = dup;
    st->type = XND_STRING;
    st->epoch = epoch;
    return XND_OK;
}

void xnd_mapping_set_func(xnd_mapping_t *m, xnd_func_t *f)
{
    if (!m)
        return;
    xnd_func_free(m->func);
    m->func = f;
}

/* ---- the exNode ---- */

xnd_t *xnd_new(void)
{
    return calloc(1, sizeof(xnd_t));
}

void xnd_free(xnd_t *x)
{
    if (!x)
        return;
    for (size_t i = 0; i < x->nmaps; i++)
        xnd_mapping_free(x->maps[i]);
    free(x->maps);
    free(x->sorted);
    free(x->sorted_maxend);
    xnd_meta_list_clear(&x->meta);
    xnd_raw_free(x->root);
    xnd_raw_free(x->extra);
    free(x);
}

int64_t xnd_size(const xnd_t *x)
{
    int64_t v;
    if (!x || xnd_meta_get_int(&x->meta, "size", &v) != XND_OK)
        return -1;
    return v;
}

int64_t xnd_extent(const xnd_t *x)
{
    int64_t size = xnd_size(x);
    if (size >= 0 || !x)
        return size >= 0 ? size : 0;
    size = 0;
    for (size_t i = 0; i < x->nmaps; i++)
        if (x->maps[i]->exnode_offset + x->maps[i]->logical_length > size)
            size = x->maps[i]->exnode_offset + x->maps[i]->logical_length;
    return size;
}

int xnd_set_size(xnd_t *x, int64_t size)
{
    if (!x || size < 0)
        return XND_E_INVAL;
    return xnd_meta_set_int(&x->meta, "size", size);
}

void xnd_changed(xnd_t *x)
{
    if (x)
        x->sorted_ok = 0;
}

int xnd_append(xnd_t *x, xnd_mapping_t *m)
{
    if (!x || !m) {
        xnd_mapping_free(m);
        return XND_E_INVAL;
    }
    if (lns_grow(&x->maps, &x->capmaps, x->nmaps + 1, sizeof *x->maps, 16) < 0) {
        xnd_mapping_free(m);
        return XND_E_NOMEM;
    }
    x->maps[x->nmaps++] = m;
    x->sorted_ok = 0;
    return XND_OK;
}

int xnd_remove(xnd_t *x, size_t index)
{
    if (!x || index >= x->nmaps)
        return XND_E_NOTFOUND;
    xnd_mapping_free(x->maps[index]);
    memmove(&x->maps[index], &x->maps[index + 1], (x->nmaps - index - 1) * sizeof *x->maps);
    x->nmaps--;
    x->sorted_ok = 0;
    return XND_OK;
}
