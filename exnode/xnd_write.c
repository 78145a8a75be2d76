/* xnd_write.c -- the model as LoCI exNode XML text.
 *
 * The output is what LoRS readers expect: the namespace declared on <exnode>, the exnode:
 * prefix, typed metadata, and per mapping its metadata (the LoRS names first, in the
 * alphabetical order the DLT build writes, then the ones we did not interpret, in their
 * order), the function, then read, write, manage.  Mappings keep document order, so a
 * read-modify-write changes only what was modified.  Values keep the text they were read
 * with.  Text is escaped by hand in one pass; a string that XML 1.0 cannot carry (invalid
 * UTF-8, control characters), which only a call can put in the model, is refused.
 */
#include "xnd_internal.h"

#include <stdlib.h>
#include <string.h>

void xnd_buf_put(xnd_buf_t *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 4096;
        char *nd;
        while (nc < b->len + n + 1)
            nc *= 2;
        if (!(nd = realloc(b->data, nc))) {
            b->oom = 1;
            return;
        }
        b->data = nd;
        b->cap = nc;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = 0;
}

void xnd_buf_puts(xnd_buf_t *b, const char *s)
{
    xnd_buf_put(b, s, strlen(s));
}

typedef struct wstate {
    xnd_buf_t b;
    const char *bad; /* the first string we could not write */
} wstate_t;

/* Length of the valid UTF-8 sequence at s (1..4), or 0. */
static size_t utf8_len(const unsigned char *s)
{
    size_t n;
    uint32_t c;
    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xc2 && s[0] <= 0xdf)
        n = 2, c = s[0] & 0x1f;
    else if (s[0] >= 0xe0 && s[0] <= 0xef)
        n = 3, c = s[0] & 0x0f;
    else if (s[0] >= 0xf0 && s[0] <= 0xf4)
        n = 4, c = s[0] & 0x07;
    else
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        c = (c << 6) | (s[i] & 0x3f);
    }
    if ((n == 3 && (c < 0x800 || (c >= 0xd800 && c <= 0xdfff) || c == 0xfffe || c == 0xffff)) ||
        (n == 4 && (c < 0x10000 || c > 0x10ffff)))
        return 0;
    return n;
}

/* s escaped for element text (attr 0) or a double-quoted attribute value (attr 1). */
static void put_esc(wstate_t *w, const char *s, int attr)
{
    const unsigned char *p = (const unsigned char *)s, *run = p;
    while (*p) {
        const char *rep = NULL;
        size_t n = 1;
        switch (*p) {
        case '&': rep = "&amp;"; break;
        case '<': rep = "&lt;"; break;
        case '>': rep = "&gt;"; break;
        case '\r': rep = "&#13;"; break;
        case '"': rep = attr ? "&quot;" : NULL; break;
        case '\t': rep = attr ? "&#9;" : NULL; break;
        case '\n': rep = attr ? "&#10;" : NULL; break;
        default:
            if (*p < 0x20 || !(n = utf8_len(p))) {
                if (!w->bad)
                    w->bad = s;
                return;
            }
        }
        if (rep) {
            xnd_buf_put(&w->b, (const char *)run, (size_t)(p - run));
            xnd_buf_puts(&w->b, rep);
            run = p + 1;
        }
        p += n;
    }
    xnd_buf_put(&w->b, (const char *)run, (size_t)(p - run));
}

static void put_indent(wstate_t *w, int level)
{
    static const char sp[] = "                                                                ";
    size_t n = (size_t)level * 2;
    while (n > sizeof sp - 1) {
        xnd_buf_put(&w->b, sp, sizeof sp - 1);
        n -= sizeof sp - 1;
    }
    xnd_buf_put(&w->b, sp, n);
}

static void put_i64(wstate_t *w, int64_t v)
{
    char tmp[24], *p = tmp + sizeof tmp;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        *--p = '-';
    xnd_buf_put(&w->b, p, (size_t)(tmp + sizeof tmp - p));
}

/* <exnode:ELEM name="NAME" type="TYPE">, without the value. */
static void open_typed(wstate_t *w, int level, const char *elem, const char *name,
                       const char *type)
{
    put_indent(w, level);
    xnd_buf_puts(&w->b, "<exnode:");
    xnd_buf_puts(&w->b, elem);
    xnd_buf_puts(&w->b, " name=\"");
    put_esc(w, name, 1);
    xnd_buf_puts(&w->b, "\" type=\"");
    put_esc(w, type, 1);
    xnd_buf_puts(&w->b, "\">");
}

static void close_elem(wstate_t *w, const char *elem)
{
    xnd_buf_puts(&w->b, "</exnode:");
    xnd_buf_puts(&w->b, elem);
    xnd_buf_puts(&w->b, ">\n");
}

static void put_int_meta(wstate_t *w, int level, const char *name, int64_t v)
{
    open_typed(w, level, "metadata", name, "integer");
    put_i64(w, v);
    close_elem(w, "metadata");
}

static void put_meta_list(wstate_t *w, int level, const char *elem, const xnd_meta_list_t *l)
{
    for (size_t i = 0; i < l->n; i++) {
        const xnd_meta_t *m = &l->items[i];
        open_typed(w, level, elem, m->name,
                   m->type == XND_OTHER && m->type_name ? m->type_name : xnd_type_name(m->type));
        if (m->type == XND_META) {
            xnd_buf_puts(&w->b, "\n");
            put_meta_list(w, level + 1, "metadata", &m->sub);
            put_indent(w, level);
        } else {
            put_esc(w, m->text ? m->text : "", 0);
        }
        close_elem(w, elem);
    }
}

static void put_raw_attrs(wstate_t *w, const xnd_raw_t *r)
{
    for (size_t i = 0; i < r->nattrs; i++) {
        xnd_buf_puts(&w->b, " ");
        put_esc(w, r->attrs[2 * i], 1);
        xnd_buf_puts(&w->b, "=\"");
        put_esc(w, r->attrs[2 * i + 1], 1);
        xnd_buf_puts(&w->b, "\"");
    }
}

/* A foreign element exactly as read: its own whitespace is in its text children. */
static void put_raw(wstate_t *w, const xnd_raw_t *r)
{
    if (!r->name) {
        put_esc(w, r->text, 0);
        return;
    }
    xnd_buf_puts(&w->b, "<");
    xnd_buf_puts(&w->b, r->name);
    put_raw_attrs(w, r);
    if (!r->kids) {
        xnd_buf_puts(&w->b, "/>");
        return;
    }
    xnd_buf_puts(&w->b, ">");
    for (const xnd_raw_t *k = r->kids; k; k = k->next)
        put_raw(w, k);
    xnd_buf_puts(&w->b, "</");
    xnd_buf_puts(&w->b, r->name);
    xnd_buf_puts(&w->b, ">");
}

/* Foreign elements at a level where we indent; whitespace text between them was not kept. */
static void put_extra(wstate_t *w, int level, const xnd_raw_t *r)
{
    for (; r; r = r->next) {
        put_indent(w, level);
        put_raw(w, r);
        xnd_buf_puts(&w->b, "\n");
    }
}

static void put_func(wstate_t *w, int level, const xnd_func_t *f)
{
    put_indent(w, level);
    xnd_buf_puts(&w->b, "<exnode:function name=\"");
    put_esc(w, f->name, 1);
    xnd_buf_puts(&w->b, "\">\n");
    put_meta_list(w, level + 1, "argument", &f->args);
    put_meta_list(w, level + 1, "metadata", &f->meta);
    for (size_t i = 0; i < f->nsubs; i++)
        put_func(w, level + 1, f->subs[i]);
    put_extra(w, level + 1, f->extra);
    put_indent(w, level);
    close_elem(w, "function");
}

static void put_stamp(wstate_t *w, const char *name, const xnd_stamp_t *s)
{
    if (!s->text)
        return;
    open_typed(w, 2, "metadata", name, xnd_type_name(s->type == XND_INTEGER ? XND_INTEGER
                                                                            : XND_STRING));
    put_esc(w, s->text, 0);
    close_elem(w, "metadata");
}

static void put_mapping(wstate_t *w, const xnd_mapping_t *m)
{
    static const char *const caps[3] = {"read", "write", "manage"};
    xnd_buf_puts(&w->b, "  <exnode:mapping>\n");
    put_int_meta(w, 2, "alloc_length", m->alloc_length);
    put_int_meta(w, 2, "alloc_offset", m->alloc_offset);
    if (m->has_e2e_blocksize)
        put_int_meta(w, 2, "e2e_blocksize", m->e2e_blocksize);
    put_stamp(w, "end", &m->end);
    put_int_meta(w, 2, "exnode_offset", m->exnode_offset);
    put_int_meta(w, 2, "logical_length", m->logical_length);
    put_stamp(w, "start", &m->start);
    put_meta_list(w, 2, "metadata", &m->meta);
    if (m->func)
        put_func(w, 2, m->func);
    for (int k = 0; k < 3; k++) {
        if (!m->cap[k])
            continue;
        xnd_buf_puts(&w->b, "    <exnode:");
        xnd_buf_puts(&w->b, caps[k]);
        xnd_buf_puts(&w->b, ">");
        put_esc(w, m->cap[k], 0);
        close_elem(w, caps[k]);
    }
    put_extra(w, 2, m->extra);
    xnd_buf_puts(&w->b, "  </exnode:mapping>\n");
}

int xnd_serialize(const xnd_t *x, char **out, size_t *len, char *err, size_t errlen)
{
    wstate_t w;
    if (err && errlen)
        err[0] = 0;
    if (!x || !out)
        return xnd_seterr(err, errlen, XND_E_INVAL, 0, "no exNode or no output");
    *out = NULL;
    if (len)
        *len = 0;
    memset(&w, 0, sizeof w);
    xnd_buf_puts(&w.b, "<?xml version=\"1.0\"?>\n<exnode xmlns:exnode=\"" XND_NAMESPACE "\"");
    if (x->root)
        put_raw_attrs(&w, x->root);
    xnd_buf_puts(&w.b, ">\n");
    put_meta_list(&w, 1, "metadata", &x->meta);
    if (!xnd_meta_find(&x->meta, "lorsversion"))
        xnd_buf_puts(&w.b, "  <exnode:metadata name=\"lorsversion\" type=\"double\">0.82"
                           "</exnode:metadata>\n");
    for (size_t i = 0; i < x->nmaps && !w.bad && !w.b.oom; i++)
        put_mapping(&w, x->maps[i]);
    put_extra(&w, 1, x->extra);
    xnd_buf_puts(&w.b, "</exnode>\n");
    if (w.b.oom || w.bad) {
        int rc = w.b.oom ? xnd_seterr(err, errlen, XND_E_NOMEM, 0, "out of memory")
                         : xnd_seterr(err, errlen, XND_E_INVAL, 0,
                                      "\"%.40s\" has a byte XML cannot carry (control "
                                      "character or invalid UTF-8)", w.bad);
        free(w.b.data);
        return rc;
    }
    *out = w.b.data;
    if (len)
        *len = w.b.len;
    return XND_OK;
}
