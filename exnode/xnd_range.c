/* xnd_range.c -- the mappings by file offset: sorted view, range lookups, coverage.
 *
 * The sorted view is built once (O(n log n)) after the set of mappings changes, with a
 * running maximum of the mapping ends beside it.  A lookup of [off, end) binary-searches the
 * last mapping that starts before end and walks back only while that running maximum says
 * an earlier mapping may still reach past off, so a lookup costs O(log n + what it visits).
 * Coverage is a sweep over start/end events.
 */
#include "xnd_internal.h"
#include "lns_array.h"

#include <stdlib.h>
#include <string.h>

typedef struct sort_key {
    int64_t off, len;
    size_t idx;
} sort_key_t;

static int cmp_key(const void *a, const void *b)
{
    const sort_key_t *x = a, *y = b;
    if (x->off != y->off)
        return x->off < y->off ? -1 : 1;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* End of a mapping, saturating (an unvalidated model may hold anything). */
static int64_t map_end(const xnd_mapping_t *m)
{
    if (m->logical_length > 0 && m->exnode_offset > INT64_MAX - m->logical_length)
        return INT64_MAX;
    return m->exnode_offset + (m->logical_length > 0 ? m->logical_length : 0);
}

xnd_mapping_t *const *xnd_sorted(xnd_t *x, size_t *n)
{
    static xnd_mapping_t *const empty[1] = {NULL};
    sort_key_t *keys;
    xnd_mapping_t **s;
    int64_t *maxend, run = INT64_MIN;

    *n = 0;
    if (!x)
        return NULL;
    if (x->sorted_ok) {
        *n = x->nmaps;
        return x->nmaps ? x->sorted : empty;
    }
    if (x->nmaps == 0) {
        x->sorted_ok = 1;
        return empty;
    }
    keys = malloc(x->nmaps * sizeof *keys);
    s = realloc(x->sorted, x->nmaps * sizeof *s);
    if (s)
        x->sorted = s;
    maxend = realloc(x->sorted_maxend, x->nmaps * sizeof *maxend);
    if (maxend)
        x->sorted_maxend = maxend;
    if (!keys || !s || !maxend) {
        free(keys);
        return NULL;
    }
    for (size_t i = 0; i < x->nmaps; i++) {
        keys[i].off = x->maps[i]->exnode_offset;
        keys[i].len = x->maps[i]->logical_length;
        keys[i].idx = i;
    }
    qsort(keys, x->nmaps, sizeof *keys, cmp_key);
    for (size_t i = 0; i < x->nmaps; i++) {
        s[i] = x->maps[keys[i].idx];
        int64_t e = map_end(s[i]);
        run = e > run ? e : run;
        maxend[i] = run;
    }
    free(keys);
    x->sorted_ok = 1;
    *n = x->nmaps;
    return s;
}

/* Collect mappings overlapping [off, end); with whole, only those holding all of it. */
static int lookup(xnd_t *x, int64_t off, int64_t len, int whole, xnd_mapping_t ***out,
                  size_t *n)
{
    xnd_mapping_t *const *s;
    xnd_mapping_t **res = NULL;
    size_t ns, lo = 0, hi, cnt = 0, cap = 0;
    int64_t end;

    if (!out || !n)
        return XND_E_INVAL;
    *out = NULL;
    *n = 0;
    if (!x || off < 0 || len < 0 || off > INT64_MAX - len)
        return XND_E_INVAL;
    if (len == 0)
        return XND_OK;
    end = off + len;
    if (!(s = xnd_sorted(x, &ns)))
        return XND_E_NOMEM;
    /* hi = number of mappings starting before end */
    hi = ns;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s[mid]->exnode_offset < end)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i-- > 0 && x->sorted_maxend[i] > off;) {
        const xnd_mapping_t *m = s[i];
        int64_t me = map_end(m);
        if (m->logical_length <= 0 || me <= off)
            continue;
        if (whole && (m->exnode_offset > off || me < end))
            continue;
        if (lns_grow(&res, &cap, cnt + 1, sizeof *res, 8) < 0) {
            free(res);
            return XND_E_NOMEM;
        }
        res[cnt++] = s[i];
    }
    /* collected backwards: put them in sorted order */
    for (size_t i = 0; i < cnt / 2; i++) {
        xnd_mapping_t *t = res[i];
        res[i] = res[cnt - 1 - i];
        res[cnt - 1 - i] = t;
    }
    *out = res;
    *n = cnt;
    return XND_OK;
}

int xnd_find(xnd_t *x, int64_t offset, int64_t length, xnd_mapping_t ***out, size_t *n)
{
    return lookup(x, offset, length, 0, out, n);
}

int xnd_replicas(xnd_t *x, int64_t offset, int64_t length, xnd_mapping_t ***out, size_t *n)
{
    return lookup(x, offset, length, 1, out, n);
}

typedef struct event {
    int64_t pos;
    int delta;
    size_t group;
} event_t;

static int cmp_event(const void *a, const void *b)
{
    const event_t *x = a, *y = b;
    if (x->pos != y->pos)
        return x->pos < y->pos ? -1 : 1;
    return x->delta - y->delta;
}

static int push_range(xnd_range_t **r, size_t *n, size_t *cap, int64_t from, int64_t to,
                      size_t count)
{
    if (to <= from)
        return XND_OK;
    if (*n && (*r)[*n - 1].count == count) {
        (*r)[*n - 1].length = to - (*r)[*n - 1].offset;
        return XND_OK;
    }
    if (lns_grow(r, cap, *n + 1, sizeof **r, 8) < 0)
        return XND_E_NOMEM;
    (*r)[*n].offset = from;
    (*r)[*n].length = to - from;
    (*r)[*n].count = count;
    (*n)++;
    return XND_OK;
}

int xnd_coverage(const xnd_t *x, int (*count_it)(const xnd_mapping_t *m, void *arg), void *arg,
                 xnd_range_t **out, size_t *n)
{
    return xnd_coverage_by(x, count_it, NULL, arg, out, n);
}

int xnd_coverage_by(const xnd_t *x, int (*count_it)(const xnd_mapping_t *m, void *arg),
                    size_t (*group_of)(const xnd_mapping_t *m, void *arg), void *arg,
                    xnd_range_t **out, size_t *n)
{
    event_t *ev;
    xnd_range_t *r = NULL;
    size_t nev = 0, nr = 0, cap = 0, count = 0, ngroups = 0, *held = NULL;
    int64_t last = 0, total;

    if (!x || !out || !n)
        return XND_E_INVAL;
    *out = NULL;
    *n = 0;
    total = xnd_size(x) > 0 ? xnd_size(x) : 0;
    if (!(ev = malloc((x->nmaps ? x->nmaps : 1) * 2 * sizeof *ev)))
        return XND_E_NOMEM;
    for (size_t i = 0; i < x->nmaps; i++) {
        const xnd_mapping_t *m = x->maps[i];
        if (m->logical_length <= 0 || m->exnode_offset < 0 || (count_it && !count_it(m, arg)))
            continue;
        size_t g = group_of ? group_of(m, arg) : 0;
        if (g >= ngroups)
            ngroups = g + 1;
        ev[nev++] = (event_t){m->exnode_offset, 1, g};
        ev[nev++] = (event_t){map_end(m), -1, g};
        if (map_end(m) > total)
            total = map_end(m);
    }
    if (group_of && !(held = calloc(ngroups ? ngroups : 1, sizeof *held)))
        goto oom;
    qsort(ev, nev, sizeof *ev, cmp_event);
    for (size_t i = 0; i < nev; i++) {
        if (push_range(&r, &nr, &cap, last, ev[i].pos, count) != XND_OK)
            goto oom;
        last = ev[i].pos > last ? ev[i].pos : last;
        if (!held) {
            count = (size_t)((long long)count + ev[i].delta);
        } else if (ev[i].delta > 0) {
            count += held[ev[i].group]++ == 0; /* a group counts once, however many it holds */
        } else {
            count -= --held[ev[i].group] == 0;
        }
    }
    if (push_range(&r, &nr, &cap, last, total, count) != XND_OK)
        goto oom;
    free(held);
    free(ev);
    *out = r;
    *n = nr;
    return XND_OK;
oom:
    free(held);
    free(ev);
    free(r);
    return XND_E_NOMEM;
}
