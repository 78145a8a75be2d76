/* xnd_parse.c -- exNode XML into the model, with libxml2's SAX2 parser.
 *
 * SAX keeps the parse linear and lean (no DOM of 100,000 mappings beside our own model): a
 * stack of frames follows the open elements and each callback adds to the model at once.
 * Mapping metadata is first collected like any other metadata; when </exnode:mapping>
 * closes, the names LoRS defines move into the mapping's fields and the rest stays, in
 * order, for the round trip.  Semantic checks are left to xnd_validate(), which runs last.
 *
 * Hostile input: the parser runs with XML_PARSE_NONET, without entity substitution, DTD
 * loading or XML_PARSE_HUGE, and a DOCTYPE or entity declaration stops it at once, so
 * neither entity expansion nor external fetches can happen.  Input size and element depth
 * are limited.  libxml2 delivers a literal '&' inside an attribute value as "&#38;" when it
 * does not substitute entities; attr_dup() turns it back.
 */
#include "xnd_internal.h"

#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/SAX2.h>
#include <libxml/xmlerror.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK (4u << 20)

enum fkind { F_ROOT, F_MAPPING, F_META, F_FUNC, F_CAP, F_RAW };

typedef struct frame {
    enum fkind kind;
    xnd_meta_list_t *list; /* F_META: the entry is list->items[idx] */
    size_t idx;
    int is_arg;
    int textual;       /* F_META with a value, F_CAP: collects text, no child elements */
    const struct known *kn; /* F_META of a LoRS mapping field: goes straight into it */
    xnd_type ktype;
    int kline;
    xnd_func_t *func;  /* F_FUNC */
    int cap;           /* F_CAP */
    xnd_raw_t *raw;    /* F_RAW */
    xnd_raw_t **tail;  /* where this element's foreign children go */
    xnd_raw_t *last;   /* its last foreign child */
} frame_t;

typedef struct pstate {
    xmlParserCtxtPtr ctxt;
    int lax, max_depth;
    xnd_t *x;
    frame_t *stack;
    int depth;
    xnd_buf_t text;
    int rc;
    char *err;
    size_t errlen;
} pstate_t;

static const char *const cap_names[3] = {"read", "write", "manage"};

static int line_now(pstate_t *st)
{
    return xmlSAX2GetLineNumber(st->ctxt);
}

static void fail(pstate_t *st, int code, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void fail(pstate_t *st, int code, int line, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    if (st->rc)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    st->rc = xnd_seterr(st->err, st->errlen, code, line, "%s", msg);
    xmlStopParser(st->ctxt);
}

static int ours(const xmlChar *uri)
{
    return uri && strcmp((const char *)uri, XND_NAMESPACE) == 0;
}

static int is_known_name(const char *local)
{
    static const char *const names[] = {"metadata", "mapping", "function", "argument",
                                        "read", "write", "manage"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(local, names[i]) == 0)
            return 1;
    return 0;
}

/* An attribute value as libxml2 hands it over (not NUL-terminated), "&#38;" back to '&'. */
static char *attr_dup(const xmlChar *v, const xmlChar *end)
{
    size_t n = (size_t)(end - v), j = 0;
    char *s = malloc(n + 1);
    if (!s)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (v[i] == '&' && n - i >= 5 && memcmp(v + i, "&#38;", 5) == 0) {
            s[j++] = '&';
            i += 4;
        } else {
            s[j++] = (char)v[i];
        }
    }
    s[j] = 0;
    return s;
}

/* The un-namespaced attribute local of an element, malloc'd, or NULL if absent (*oom set
 * when out of memory). */
static char *get_attr(const xmlChar **attrs, int nattrs, const char *local, int *oom)
{
    for (int i = 0; i < nattrs; i++) {
        const xmlChar **a = attrs + 5 * i;
        if (!a[2] && strcmp((const char *)a[0], local) == 0) {
            char *v = attr_dup(a[3], a[4]);
            if (!v)
                *oom = 1;
            return v;
        }
    }
    return NULL;
}

static char *qname(const xmlChar *prefix, const xmlChar *local)
{
    size_t pl = prefix ? strlen((const char *)prefix) : 0, ll = strlen((const char *)local);
    char *s = malloc(pl + ll + 2);
    if (!s)
        return NULL;
    if (prefix) {
        memcpy(s, prefix, pl);
        s[pl++] = ':';
    }
    memcpy(s + pl, local, ll + 1);
    return s;
}

static int raw_add_attr(xnd_raw_t *r, char *name, char *value)
{
    char **na;
    if (!name || !value)
        goto oom;
    if (!(na = realloc(r->attrs, (r->nattrs + 1) * 2 * sizeof *na)))
        goto oom;
    r->attrs = na;
    na[r->nattrs * 2] = name;
    na[r->nattrs * 2 + 1] = value;
    r->nattrs++;
    return 0;
oom:
    free(name);
    free(value);
    return -1;
}

/* Namespace declarations (except skip_prefix's) and attributes of an element into r. */
static int raw_take_attrs(xnd_raw_t *r, int nb_ns, const xmlChar **ns, int nattrs,
                          const xmlChar **attrs, const char *skip_prefix)
{
    for (int i = 0; i < nb_ns; i++) {
        const char *p = (const char *)ns[2 * i], *uri = (const char *)ns[2 * i + 1];
        if (skip_prefix && p && strcmp(p, skip_prefix) == 0)
            continue;
        if (raw_add_attr(r, qname(p ? (const xmlChar *)"xmlns" : NULL,
                                  (const xmlChar *)(p ? p : "xmlns")),
                         strdup(uri ? uri : "")) < 0)
            return -1;
    }
    for (int i = 0; i < nattrs; i++) {
        const xmlChar **a = attrs + 5 * i;
        if (raw_add_attr(r, qname(a[1], a[0]), attr_dup(a[3], a[4])) < 0)
            return -1;
    }
    return 0;
}

/* Append a foreign node to the list of frame f. */
static void raw_link(frame_t *f, xnd_raw_t *r)
{
    *f->tail = r;
    f->tail = &r->next;
    f->last = r;
}

static frame_t *push(pstate_t *st, enum fkind kind)
{
    frame_t *f = &st->stack[st->depth++];
    memset(f, 0, sizeof *f);
    f->kind = kind;
    return f;
}

static void start_raw(pstate_t *st, frame_t *parent, const xmlChar *local,
                      const xmlChar *prefix, int nb_ns, const xmlChar **ns, int nattrs,
                      const xmlChar **attrs, int line)
{
    xnd_raw_t *r = calloc(1, sizeof *r);
    frame_t *f;
    if (!r || !(r->name = qname(prefix, local)) ||
        raw_take_attrs(r, nb_ns, ns, nattrs, attrs, NULL) < 0) {
        xnd_raw_free(r);
        fail(st, XND_E_NOMEM, line, "out of memory");
        return;
    }
    raw_link(parent, r);
    f = push(st, F_RAW);
    f->raw = r;
    f->tail = &r->kids;
}

/* The LoRS metadata of a mapping: name, field line index, and whether it is a time. */
struct known {
    const char *name;
    int line_idx; /* XND_L_*; -1 for start/end */
    size_t off;   /* offset of the int64_t field */
};

static const struct known known[] = {
    {"exnode_offset", XND_L_EXNODE_OFFSET, offsetof(xnd_mapping_t, exnode_offset)},
    {"logical_length", XND_L_LOGICAL_LENGTH, offsetof(xnd_mapping_t, logical_length)},
    {"alloc_offset", XND_L_ALLOC_OFFSET, offsetof(xnd_mapping_t, alloc_offset)},
    {"alloc_length", XND_L_ALLOC_LENGTH, offsetof(xnd_mapping_t, alloc_length)},
    {"e2e_blocksize", XND_L_E2E_BLOCKSIZE, offsetof(xnd_mapping_t, e2e_blocksize)},
    {"start", -1, offsetof(xnd_mapping_t, start)},
    {"end", -1, offsetof(xnd_mapping_t, end)},
};

static const struct known *find_known(const char *name)
{
    for (size_t j = 0; j < sizeof known / sizeof known[0]; j++)
        if (strcmp(name, known[j].name) == 0)
            return &known[j];
    return NULL;
}

/* <exnode:metadata> naming a LoRS field of mapping m: the checks the start tag allows;
 * 0 to go on. */
static int start_known(pstate_t *st, const struct known *k, xnd_mapping_t *m, xnd_type t,
                       const char *type, int line)
{
    size_t no = st->x->nmaps - 1;
    const char *tn = t == XND_OTHER ? type : xnd_type_name(t);
    if (k->line_idx < 0) {
        xnd_stamp_t *ts = (xnd_stamp_t *)((char *)m + k->off);
        if (ts->text)
            fail(st, XND_E_FORMAT, line, "mapping %zu: %s given twice", no, k->name);
        else if (t != XND_STRING && t != XND_INTEGER)
            fail(st, XND_E_FORMAT, line, "mapping %zu: %s has type %s", no, k->name, tn);
    } else if (m->line[k->line_idx]) {
        fail(st, XND_E_FORMAT, line, "mapping %zu: %s given twice", no, k->name);
    } else if (t != XND_INTEGER && !st->lax) {
        fail(st, XND_E_NUMBER, line, "mapping %zu: %s has type %s, not integer", no, k->name,
             tn);
    }
    return st->rc;
}

/* Its value, at the end tag. */
static void end_known(pstate_t *st, const frame_t *f, xnd_mapping_t *m)
{
    const struct known *k = f->kn;
    const char *text = st->text.data ? st->text.data : "";
    if (k->line_idx < 0) {
        xnd_stamp_t *ts = (xnd_stamp_t *)((char *)m + k->off);
        if (!(ts->text = strndup(text, st->text.len))) {
            fail(st, XND_E_NOMEM, f->kline, "out of memory");
            return;
        }
        ts->type = f->ktype;
        if (xnd_time_parse(ts->text, &ts->epoch) < 0)
            ts->epoch = XND_TIME_UNKNOWN;
        return;
    }
    if (xnd_parse_int(text, (int64_t *)((char *)m + k->off)) < 0) {
        fail(st, XND_E_NUMBER, f->kline, "mapping %zu: metadata '%s': \"%.40s\" is not a "
             "64-bit decimal integer", st->x->nmaps - 1, k->name, text);
        return;
    }
    m->line[k->line_idx] = f->kline;
    if (k->line_idx == XND_L_E2E_BLOCKSIZE)
        m->has_e2e_blocksize = 1;
}

static void start_meta(pstate_t *st, xnd_meta_list_t *list, xnd_mapping_t *map, int is_arg,
                       int nattrs, const xmlChar **attrs, int line)
{
    const char *what = is_arg ? "argument" : "metadata";
    int oom = 0;
    char *name = get_attr(attrs, nattrs, "name", &oom);
    char *type = get_attr(attrs, nattrs, "type", &oom);
    xnd_type t = XND_STRING;
    const struct known *kn;
    xnd_meta_t *m;
    frame_t *f;

    if (oom)
        goto nomem;
    if (!name) {
        fail(st, XND_E_FORMAT, line, "%s without a name", what);
        goto out;
    }
    if (!type) {
        if (!st->lax) {
            fail(st, XND_E_FORMAT, line, "%s '%s' has no type", what, name);
            goto out;
        }
    } else if (strcmp(type, "string") == 0) {
        t = XND_STRING;
    } else if (strcmp(type, "integer") == 0) {
        t = XND_INTEGER;
    } else if (strcmp(type, "double") == 0) {
        t = XND_DOUBLE;
    } else if (strcmp(type, "meta") == 0) {
        t = XND_META;
    } else {
        t = XND_OTHER;
    }
    if (map && (kn = find_known(name))) {
        if (start_known(st, kn, map, t, type, line) == 0) {
            f = push(st, F_META);
            f->kn = kn;
            f->ktype = t;
            f->kline = line;
            f->textual = 1;
            st->text.len = 0;
        }
        goto out;
    }
    if (!(m = xnd_meta_append(list, name, t)))
        goto nomem;
    m->line = line;
    if (t == XND_OTHER) {
        m->type_name = type;
        type = NULL;
    }
    f = push(st, F_META);
    f->list = list;
    f->idx = list->n - 1;
    f->is_arg = is_arg;
    f->textual = t != XND_META;
    st->text.len = 0;
    goto out;
nomem:
    fail(st, XND_E_NOMEM, line, "out of memory");
out:
    free(name);
    free(type);
}

static void start_root(pstate_t *st, const xmlChar *local, const xmlChar *uri, int nb_ns,
                       const xmlChar **ns, int nattrs, const xmlChar **attrs, int line)
{
    int declared = ours(uri);
    frame_t *f;
    if (strcmp((const char *)local, "exnode") != 0 || (uri && !ours(uri))) {
        fail(st, XND_E_NAMESPACE, line, "root element is <%s>, not an exnode", local);
        return;
    }
    for (int i = 0; i < nb_ns; i++)
        declared |= ours(ns[2 * i + 1]);
    if (!declared) {
        fail(st, XND_E_NAMESPACE, line, "the exnode element does not declare the namespace %s",
             XND_NAMESPACE);
        return;
    }
    if (!(st->x->root = calloc(1, sizeof *st->x->root)) ||
        raw_take_attrs(st->x->root, nb_ns, ns, nattrs, attrs, "exnode") < 0) {
        fail(st, XND_E_NOMEM, line, "out of memory");
        return;
    }
    f = push(st, F_ROOT);
    f->tail = &st->x->extra;
}

static void on_start(void *ud, const xmlChar *local, const xmlChar *prefix, const xmlChar *uri,
                     int nb_ns, const xmlChar **ns, int nattrs, int nb_defaulted,
                     const xmlChar **attrs)
{
    pstate_t *st = ud;
    int line = line_now(st), mine = ours(uri);
    const char *l = (const char *)local;
    frame_t *top;
    xnd_mapping_t *m;
    (void)nb_defaulted;

    if (st->rc)
        return;
    if (st->depth >= st->max_depth) {
        fail(st, XND_E_LIMIT, line, "elements nested deeper than %d", st->max_depth);
        return;
    }
    if (st->depth == 0) {
        start_root(st, local, uri, nb_ns, ns, nattrs, attrs, line);
        return;
    }
    top = &st->stack[st->depth - 1];
    m = st->x->nmaps ? st->x->maps[st->x->nmaps - 1] : NULL;
    if (top->kind == F_RAW) {
        start_raw(st, top, local, prefix, nb_ns, ns, nattrs, attrs, line);
        return;
    }
    if (top->textual) {
        fail(st, XND_E_FORMAT, line, "element <%s> inside a value", l);
        return;
    }
    if (!mine && is_known_name(l) && !st->lax) {
        fail(st, XND_E_NAMESPACE, line, "<%s%s%s> is not in the exnode namespace",
             prefix ? (const char *)prefix : "", prefix ? ":" : "", l);
        return;
    }
    if (top->kind == F_META) { /* type meta: only metadata inside */
        if (!mine || strcmp(l, "metadata") != 0) {
            fail(st, XND_E_FORMAT, line, "<%s> inside metadata of type meta", l);
            return;
        }
        start_meta(st, &top->list->items[top->idx].sub, NULL, 0, nattrs, attrs, line);
        return;
    }
    if (mine && strcmp(l, "metadata") == 0) {
        xnd_meta_list_t *list = top->kind == F_ROOT ? &st->x->meta
                                : top->kind == F_MAPPING ? &m->meta : &top->func->meta;
        start_meta(st, list, top->kind == F_MAPPING ? m : NULL, 0, nattrs, attrs, line);
    } else if (mine && top->kind == F_ROOT && strcmp(l, "mapping") == 0) {
        frame_t *f;
        if (!(m = xnd_mapping_new()) || xnd_append(st->x, m) != XND_OK) {
            fail(st, XND_E_NOMEM, line, "out of memory");
            return;
        }
        m->line[XND_L_MAPPING] = line;
        f = push(st, F_MAPPING);
        f->tail = &m->extra;
    } else if (mine && top->kind != F_ROOT && strcmp(l, "function") == 0) {
        int oom = 0;
        char *name = get_attr(attrs, nattrs, "name", &oom);
        xnd_func_t *fn = name ? xnd_func_new(name) : NULL;
        frame_t *f;
        free(name);
        if (!fn) {
            if (!oom && !name)
                fail(st, XND_E_FORMAT, line, "function without a name");
            else
                fail(st, XND_E_NOMEM, line, "out of memory");
            return;
        }
        fn->line = line;
        if (top->kind == F_MAPPING) {
            if (m->func) {
                xnd_func_free(fn);
                fail(st, XND_E_FORMAT, line, "mapping %zu: a second function", st->x->nmaps - 1);
                return;
            }
            m->func = fn;
        } else if (xnd_func_add_sub(top->func, fn) != XND_OK) {
            fail(st, XND_E_NOMEM, line, "out of memory");
            return;
        }
        f = push(st, F_FUNC);
        f->func = fn;
        f->tail = &fn->extra;
    } else if (mine && top->kind == F_FUNC && strcmp(l, "argument") == 0) {
        start_meta(st, &top->func->args, NULL, 1, nattrs, attrs, line);
    } else if (mine && top->kind == F_MAPPING &&
               (!strcmp(l, "read") || !strcmp(l, "write") || !strcmp(l, "manage"))) {
        int k = l[0] == 'r' ? XND_READ : l[0] == 'w' ? XND_WRITE : XND_MANAGE;
        frame_t *f;
        if (m->cap[k] || m->line[XND_L_READ + k]) {
            fail(st, XND_E_FORMAT, line, "mapping %zu: a second %s capability",
                 st->x->nmaps - 1, cap_names[k]);
            return;
        }
        m->line[XND_L_READ + k] = line;
        f = push(st, F_CAP);
        f->cap = k;
        f->textual = 1;
        st->text.len = 0;
    } else if (mine && is_known_name(l) && !st->lax) {
        fail(st, XND_E_FORMAT, line, "<%s> does not belong inside <%s>", l,
             top->kind == F_ROOT ? "exnode" : top->kind == F_MAPPING ? "mapping" : "function");
    } else {
        start_raw(st, top, local, prefix, nb_ns, ns, nattrs, attrs, line);
    }
}

static int all_space(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r')
            return 0;
    return 1;
}

static void on_text(void *ud, const xmlChar *ch, int len)
{
    pstate_t *st = ud;
    frame_t *top;
    const char *s = (const char *)ch;
    if (st->rc || st->depth == 0 || len <= 0)
        return;
    top = &st->stack[st->depth - 1];
    if (top->textual) {
        xnd_buf_put(&st->text, s, (size_t)len);
        if (st->text.oom)
            fail(st, XND_E_NOMEM, line_now(st), "out of memory");
    } else if (top->kind == F_RAW) {
        xnd_raw_t *last = top->last;
        if (last && !last->name) {
            size_t ol = strlen(last->text);
            char *nt = realloc(last->text, ol + (size_t)len + 1);
            if (!nt) {
                fail(st, XND_E_NOMEM, line_now(st), "out of memory");
                return;
            }
            memcpy(nt + ol, s, (size_t)len);
            nt[ol + (size_t)len] = 0;
            last->text = nt;
        } else {
            xnd_raw_t *r = calloc(1, sizeof *r);
            if (!r || !(r->text = strndup(s, (size_t)len))) {
                free(r);
                fail(st, XND_E_NOMEM, line_now(st), "out of memory");
                return;
            }
            raw_link(top, r);
        }
    } else if (!all_space(s, (size_t)len) && !st->lax) {
        /* libxml2 reports the line where the text ends: count back to where it starts */
        size_t b = 0, e;
        int line = line_now(st);
        while (all_space(s + b, 1))
            b++;
        for (size_t i = b; i < (size_t)len; i++)
            line -= s[i] == '\n';
        for (e = b; e < (size_t)len && e - b < 20 && s[e] != '\n' && s[e] != '\r'; e++)
            ;
        fail(st, XND_E_FORMAT, line, "text \"%.*s\" where only elements belong", (int)(e - b),
             s + b);
    }
}

/* At </exnode:mapping>: the fields LoRS cannot do without, and defaults for the others. */
static void finish_mapping(pstate_t *st, xnd_mapping_t *m, size_t no)
{
    if (!m->line[XND_L_EXNODE_OFFSET] || !m->line[XND_L_LOGICAL_LENGTH]) {
        fail(st, XND_E_FORMAT, m->line[XND_L_MAPPING], "mapping %zu has no %s", no,
             m->line[XND_L_EXNODE_OFFSET] ? "logical_length" : "exnode_offset");
        return;
    }
    /* LoRS always writes these two; default them as if it had. */
    if (!m->line[XND_L_ALLOC_LENGTH] && m->alloc_offset >= 0 && m->logical_length >= 0 &&
        m->alloc_offset <= INT64_MAX - m->logical_length)
        m->alloc_length = m->alloc_offset + m->logical_length;
}

static void on_end(void *ud, const xmlChar *local, const xmlChar *prefix, const xmlChar *uri)
{
    pstate_t *st = ud;
    frame_t *f;
    (void)local;
    (void)prefix;
    (void)uri;
    if (st->rc || st->depth == 0)
        return;
    f = &st->stack[--st->depth];
    if (f->kind == F_META && f->kn) {
        end_known(st, f, st->x->maps[st->x->nmaps - 1]);
    } else if (f->kind == F_META) {
        xnd_meta_t *e = &f->list->items[f->idx];
        if (e->type == XND_META)
            return;
        free(e->text);
        if (!(e->text = strndup(st->text.data ? st->text.data : "", st->text.len))) {
            fail(st, XND_E_NOMEM, e->line, "out of memory");
            return;
        }
        if (xnd_meta_parse_value(e) != XND_OK) {
            char where[48] = "";
            if (st->depth > 0 && st->stack[st->depth - 1].kind == F_MAPPING)
                snprintf(where, sizeof where, "mapping %zu: ", st->x->nmaps - 1);
            fail(st, XND_E_NUMBER, e->line, "%s%s '%s': \"%.40s\" is not a %s", where,
                 f->is_arg ? "argument" : "metadata", e->name, e->text,
                 e->type == XND_INTEGER ? "64-bit decimal integer" : "finite decimal number");
        }
    } else if (f->kind == F_CAP) {
        xnd_mapping_t *m = st->x->maps[st->x->nmaps - 1];
        const char *b = st->text.data ? st->text.data : "";
        size_t n = st->text.len;
        while (n && all_space(b, 1)) {
            b++;
            n--;
        }
        while (n && all_space(b + n - 1, 1))
            n--;
        if (n && !(m->cap[f->cap] = strndup(b, n)))
            fail(st, XND_E_NOMEM, line_now(st), "out of memory");
    } else if (f->kind == F_MAPPING) {
        finish_mapping(st, st->x->maps[st->x->nmaps - 1], st->x->nmaps - 1);
    }
}

static void on_doctype(void *ud, const xmlChar *name, const xmlChar *ext, const xmlChar *sys)
{
    pstate_t *st = ud;
    (void)name;
    (void)ext;
    (void)sys;
    fail(st, XND_E_FORBIDDEN, line_now(st), "DOCTYPE refused: an exNode has no DTD or entities");
}

static void on_entity(void *ud, const xmlChar *name, int type, const xmlChar *pub,
                      const xmlChar *sys, xmlChar *content)
{
    pstate_t *st = ud;
    (void)type;
    (void)pub;
    (void)sys;
    (void)content;
    fail(st, XND_E_FORBIDDEN, line_now(st), "entity declaration '%s' refused", name);
}

static xmlParserInputPtr on_resolve(void *ud, const xmlChar *pub, const xmlChar *sys)
{
    pstate_t *st = ud;
    (void)pub;
    fail(st, XND_E_FORBIDDEN, line_now(st), "external reference \"%.60s\" refused",
         sys ? (const char *)sys : "");
    return NULL;
}

static void on_error(void *ud, xmlErrorPtr e)
{
    pstate_t *st = ud;
    char msg[256];
    size_t n;
    int code = XND_E_XML;
    if (!e || e->level < XML_ERR_ERROR || st->rc)
        return;
    snprintf(msg, sizeof msg, "%s", e->message ? e->message : "XML error");
    n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
        msg[--n] = 0;
    /* The push parser says "Extra content" also when the document stops short. */
    if (e->code == XML_ERR_DOCUMENT_END && st->depth > 0) {
        frame_t *top = &st->stack[st->depth - 1];
        fail(st, XND_E_XML, e->line, "the document ends inside <%s> (truncated?)",
             top->kind == F_ROOT ? "exnode" : top->kind == F_MAPPING ? "exnode:mapping"
             : top->kind == F_FUNC ? "exnode:function" : top->kind == F_META ? "exnode:metadata"
             : top->kind == F_CAP ? "exnode:read|write|manage" : "a foreign element");
        return;
    }
    if (e->code == XML_ERR_UNDECLARED_ENTITY || e->code == XML_WAR_UNDECLARED_ENTITY ||
        e->code == XML_ERR_ENTITY_LOOP || e->code == XML_ERR_ENTITY_BOUNDARY)
        code = XND_E_FORBIDDEN;
    fail(st, code, e->line, "%s", msg);
}

/* libxml2 reports some input errors (encoding) only to its generic handler, which prints on
 * stderr; a library must not, and the parse fails with its own message anyway. */
static void quiet(void *ctx, const char *msg, ...)
{
    (void)ctx;
    (void)msg;
}

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init_libxml(void)
{
    xmlInitParser();
}

int xnd_parse_buf_opts(const char *buf, size_t len, const xnd_opts_t *opts, xnd_t **out,
                       char *err, size_t errlen)
{
    xmlSAXHandler sax;
    pstate_t st;
    size_t max_size = opts && opts->max_size ? opts->max_size : XND_DEFAULT_MAX_SIZE;
    int max_depth = opts && opts->max_depth > 0 ? opts->max_depth : XND_DEFAULT_MAX_DEPTH;

    if (err && errlen)
        err[0] = 0;
    if (!out || (!buf && len))
        return xnd_seterr(err, errlen, XND_E_INVAL, 0, "no buffer");
    *out = NULL;
    if (len == 0)
        return xnd_seterr(err, errlen, XND_E_XML, 0, "empty document");
    if (len > max_size || len > INT_MAX)
        return xnd_seterr(err, errlen, XND_E_LIMIT, 0,
                          "exNode of %zu bytes is larger than the limit of %zu", len, max_size);
    if (max_depth > 1000)
        max_depth = 1000;
    pthread_once(&init_once, init_libxml);

    memset(&st, 0, sizeof st);
    st.lax = opts ? opts->lax : 0;
    st.max_depth = max_depth;
    st.err = err;
    st.errlen = errlen;
    if (!(st.x = xnd_new()) || !(st.stack = calloc((size_t)max_depth, sizeof *st.stack))) {
        xnd_free(st.x);
        return xnd_seterr(err, errlen, XND_E_NOMEM, 0, "out of memory");
    }

    memset(&sax, 0, sizeof sax);
    sax.initialized = XML_SAX2_MAGIC;
    sax.startElementNs = on_start;
    sax.endElementNs = on_end;
    sax.characters = on_text;
    sax.ignorableWhitespace = on_text;
    sax.cdataBlock = on_text;
    sax.internalSubset = on_doctype;
    sax.externalSubset = on_doctype;
    sax.entityDecl = on_entity;
    sax.resolveEntity = on_resolve;
    sax.serror = on_error;

    /* per thread in libxml2, so this does not disturb other threads */
    xmlGenericErrorFunc old_handler = xmlGenericError;
    void *old_ctx = xmlGenericErrorContext;
    xmlSetGenericErrorFunc(NULL, quiet);
    st.ctxt = xmlCreatePushParserCtxt(&sax, &st, NULL, 0, NULL);
    if (!st.ctxt) {
        st.rc = xnd_seterr(err, errlen, XND_E_NOMEM, 0, "out of memory");
    } else {
        xmlCtxtUseOptions(st.ctxt, XML_PARSE_NONET);
        for (size_t off = 0; !st.rc;) {
            size_t n = len - off > CHUNK ? CHUNK : len - off;
            int last = off + n == len;
            xmlParseChunk(st.ctxt, buf ? buf + off : "", (int)n, last);
            off += n;
            if (last)
                break;
        }
        if (!st.rc && !st.ctxt->wellFormed)
            st.rc = xnd_seterr(err, errlen, XND_E_XML, line_now(&st), "not well-formed XML");
        if (!st.rc && !st.x->root)
            st.rc = xnd_seterr(err, errlen, XND_E_FORMAT, 0, "no exnode element");
        xmlFreeParserCtxt(st.ctxt);
    }
    xmlSetGenericErrorFunc(old_ctx, old_handler);
    free(st.stack);
    free(st.text.data);
    if (!st.rc)
        st.rc = xnd_validate(st.x, st.lax, err, errlen);
    if (st.rc) {
        xnd_free(st.x);
        return st.rc;
    }
    *out = st.x;
    return XND_OK;
}

int xnd_parse_buf(const char *buf, size_t len, xnd_t **out, char *err, size_t errlen)
{
    return xnd_parse_buf_opts(buf, len, NULL, out, err, errlen);
}
