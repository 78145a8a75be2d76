/* lbone_json.c -- strict JSON (RFC 8259): a recursive-descent parser and a writer.
 *
 * Input comes from the network, so the parser trusts nothing: it reads through an explicit
 * end pointer (no NUL needed), bounds its recursion by LBONE_JSON_MAX_DEPTH, checks every
 * byte of every string for UTF-8 validity, and reports the first error with its byte offset.
 * Nodes and unescaped strings come from one arena of chunks, so a document is freed in one
 * call and a parse that fails half-way leaks nothing.  An unescaped string is never longer
 * than its escaped form, which bounds each string's arena space by its input length.
 */
#include "lbone_json.h"
#include "lns_err.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct lbone_json {
    lbone_json_type type;
    int boolean;
    int is_int;  /* the literal was an integer that fits int64 */
    int64_t i;
    double d;
    const char *s; /* string text, NUL-terminated */
    size_t slen;
    const char *key; /* for object members */
    lbone_json_t *child, *last, *next;
    size_t count;
};

typedef struct chunk {
    struct chunk *prev;
    size_t used, cap;
    max_align_t data[]; /* aligned storage */
} chunk_t;

struct lbone_json_doc {
    chunk_t *chunks;
    lbone_json_t *root;
};

typedef struct parser {
    const char *start, *p, *end;
    lbone_json_doc_t *doc;
    char *err;
    size_t errlen;
    int failed;
} parser_t;

static void *arena_alloc(lbone_json_doc_t *doc, size_t n)
{
    n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    chunk_t *c = doc->chunks;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > 8192 ? n : 8192;
        chunk_t *nc = malloc(sizeof *nc + cap);
        if (!nc)
            return NULL;
        nc->prev = doc->chunks;
        nc->used = 0;
        nc->cap = cap;
        doc->chunks = nc;
        c = nc;
    }
    void *r = (char *)c->data + c->used;
    c->used += n;
    return r;
}

static int fail(parser_t *ps, const char *what)
{
    if (!ps->failed) {
        ps->failed = 1;
        lns_err_set(ps->err, ps->errlen, "offset %zu: %s", (size_t)(ps->p - ps->start), what);
    }
    return -1;
}

static void skip_ws(parser_t *ps)
{
    while (ps->p < ps->end &&
           (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static lbone_json_t *new_node(parser_t *ps, lbone_json_type t)
{
    lbone_json_t *v = arena_alloc(ps->doc, sizeof *v);
    if (!v) {
        fail(ps, "out of memory");
        return NULL;
    }
    memset(v, 0, sizeof *v);
    v->type = t;
    return v;
}

static int literal(parser_t *ps, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
        return fail(ps, "invalid literal (expected true, false or null)");
    ps->p += n;
    return 0;
}

static int hex4(parser_t *ps, unsigned *out)
{
    unsigned v = 0;
    if (ps->end - ps->p < 4)
        return fail(ps, "truncated \\u escape");
    for (int k = 0; k < 4; k++) {
        char c = ps->p[k];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return fail(ps, "bad hex digit in \\u escape");
    }
    ps->p += 4;
    *out = v;
    return 0;
}

static size_t put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Length of the valid UTF-8 sequence at p (lead byte >= 0x80), or 0 if invalid: no
 * overlong forms, no surrogates, nothing above U+10FFFF. */
static size_t utf8_seq(const unsigned char *p, const unsigned char *end)
{
    unsigned char c = p[0];
    size_t n;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if ((size_t)(end - p) < n)
        return 0;
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (size_t k = 2; k < n; k++)
        if (p[k] < 0x80 || p[k] > 0xBF)
            return 0;
    return n;
}

/* At the opening quote.  Unescapes into the arena. */
static int parse_string(parser_t *ps, const char **out, size_t *outlen)
{
    const char *q = ps->p + 1;
    /* Find the closing quote first to size the output (escaped form >= unescaped). */
    while (q < ps->end && *q != '"') {
        if (*q == '\\')
            q++;
        q++;
    }
    if (q >= ps->end)
        return fail(ps, "unterminated string");
    char *o = arena_alloc(ps->doc, (size_t)(q - ps->p));
    if (!o)
        return fail(ps, "out of memory");
    size_t n = 0;
    ps->p++;
    for (;;) {
        unsigned char c = (unsigned char)*ps->p;
        if (c == '"') {
            ps->p++;
            break;
        }
        if (c < 0x20)
            return fail(ps, "control character in string");
        if (c == '\\') {
            ps->p++;
            char e = *ps->p++;
            unsigned cp;
            switch (e) {
            case '"': o[n++] = '"'; break;
            case '\\': o[n++] = '\\'; break;
            case '/': o[n++] = '/'; break;
            case 'b': o[n++] = '\b'; break;
            case 'f': o[n++] = '\f'; break;
            case 'n': o[n++] = '\n'; break;
            case 'r': o[n++] = '\r'; break;
            case 't': o[n++] = '\t'; break;
            case 'u':
                if (hex4(ps, &cp) < 0)
                    return -1;
                if (cp >= 0xDC00 && cp <= 0xDFFF)
                    return fail(ps, "lone low surrogate in \\u escape");
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    unsigned lo;
                    if (ps->end - ps->p < 2 || ps->p[0] != '\\' || ps->p[1] != 'u')
                        return fail(ps, "high surrogate without a low surrogate");
                    ps->p += 2;
                    if (hex4(ps, &lo) < 0)
                        return -1;
                    if (lo < 0xDC00 || lo > 0xDFFF)
                        return fail(ps, "high surrogate without a low surrogate");
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                }
                if (cp == 0)
                    return fail(ps, "\\u0000 is not allowed in strings");
                n += put_utf8(o + n, cp);
                break;
            default:
                ps->p--;
                return fail(ps, "invalid escape in string");
            }
            continue;
        }
        if (c < 0x80) {
            o[n++] = (char)c;
            ps->p++;
            continue;
        }
        size_t k = utf8_seq((const unsigned char *)ps->p, (const unsigned char *)ps->end);
        if (k == 0)
            return fail(ps, "invalid UTF-8 in string");
        memcpy(o + n, ps->p, k);
        n += k;
        ps->p += k;
    }
    o[n] = 0;
    *out = o;
    *outlen = n;
    return 0;
}

static int parse_number(parser_t *ps, lbone_json_t *v)
{
    const char *s = ps->p, *q = ps->p;
    int integral = 1;
    char buf[64];

    if (q < ps->end && *q == '-')
        q++;
    if (q >= ps->end || *q < '0' || *q > '9')
        return fail(ps, "invalid number");
    if (*q == '0') {
        q++;
        if (q < ps->end && *q >= '0' && *q <= '9')
            return fail(ps, "leading zero in number");
    } else {
        while (q < ps->end && *q >= '0' && *q <= '9')
            q++;
    }
    if (q < ps->end && *q == '.') {
        integral = 0;
        q++;
        if (q >= ps->end || *q < '0' || *q > '9')
            return fail(ps, "digits expected after '.'");
        while (q < ps->end && *q >= '0' && *q <= '9')
            q++;
    }
    if (q < ps->end && (*q == 'e' || *q == 'E')) {
        integral = 0;
        q++;
        if (q < ps->end && (*q == '+' || *q == '-'))
            q++;
        if (q >= ps->end || *q < '0' || *q > '9')
            return fail(ps, "digits expected in exponent");
        while (q < ps->end && *q >= '0' && *q <= '9')
            q++;
    }
    if ((size_t)(q - s) >= sizeof buf)
        return fail(ps, "number too long");
    memcpy(buf, s, (size_t)(q - s));
    buf[q - s] = 0;
    errno = 0;
    v->d = strtod(buf, NULL);
    if (!isfinite(v->d))
        return fail(ps, "number out of range");
    if (integral) {
        errno = 0;
        long long ll = strtoll(buf, NULL, 10);
        if (errno == 0) {
            v->is_int = 1;
            v->i = ll;
        }
    }
    ps->p = q;
    return 0;
}

static int parse_value(parser_t *ps, lbone_json_t **out, int depth);

static void append(lbone_json_t *parent, lbone_json_t *child)
{
    if (parent->last)
        parent->last->next = child;
    else
        parent->child = child;
    parent->last = child;
    parent->count++;
}

static int parse_container(parser_t *ps, lbone_json_t *v, int depth)
{
    int obj = v->type == LBONE_JSON_OBJECT;
    char close = obj ? '}' : ']';

    if (depth >= LBONE_JSON_MAX_DEPTH)
        return fail(ps, "nesting too deep");
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        return 0;
    }
    for (;;) {
        const char *key = NULL;
        size_t klen;
        lbone_json_t *m;
        skip_ws(ps);
        if (obj) {
            if (ps->p >= ps->end || *ps->p != '"')
                return fail(ps, "expected a string key in object");
            const char *kstart = ps->p;
            if (parse_string(ps, &key, &klen) < 0)
                return -1;
            for (const lbone_json_t *o = v->child; o; o = o->next)
                if (strcmp(o->key, key) == 0) {
                    ps->p = kstart;
                    return fail(ps, "duplicate key in object");
                }
            skip_ws(ps);
            if (ps->p >= ps->end || *ps->p != ':')
                return fail(ps, "expected ':' after an object key");
            ps->p++;
        }
        if (parse_value(ps, &m, depth + 1) < 0)
            return -1;
        m->key = key;
        append(v, m);
        skip_ws(ps);
        if (ps->p >= ps->end)
            return fail(ps, obj ? "unterminated object" : "unterminated array");
        if (*ps->p == ',') {
            ps->p++;
            continue;
        }
        if (*ps->p == close) {
            ps->p++;
            return 0;
        }
        return fail(ps, obj ? "expected ',' or '}' in object" : "expected ',' or ']' in array");
    }
}

static int parse_value(parser_t *ps, lbone_json_t **out, int depth)
{
    lbone_json_t *v;
    skip_ws(ps);
    if (ps->p >= ps->end)
        return fail(ps, "value expected");
    switch (*ps->p) {
    case '{':
    case '[':
        if (!(v = new_node(ps, *ps->p == '{' ? LBONE_JSON_OBJECT : LBONE_JSON_ARRAY)))
            return -1;
        if (parse_container(ps, v, depth) < 0)
            return -1;
        break;
    case '"':
        if (!(v = new_node(ps, LBONE_JSON_STRING)))
            return -1;
        if (parse_string(ps, &v->s, &v->slen) < 0)
            return -1;
        break;
    case 't':
    case 'f':
        if (!(v = new_node(ps, LBONE_JSON_BOOL)))
            return -1;
        v->boolean = *ps->p == 't';
        if (literal(ps, v->boolean ? "true" : "false") < 0)
            return -1;
        break;
    case 'n':
        if (!(v = new_node(ps, LBONE_JSON_NULL)))
            return -1;
        if (literal(ps, "null") < 0)
            return -1;
        break;
    default:
        if (!(v = new_node(ps, LBONE_JSON_NUMBER)))
            return -1;
        if (parse_number(ps, v) < 0)
            return -1;
        break;
    }
    *out = v;
    return 0;
}

void lbone_json_free(lbone_json_doc_t *doc)
{
    if (!doc)
        return;
    chunk_t *c = doc->chunks;
    while (c) {
        chunk_t *prev = c->prev;
        free(c);
        c = prev;
    }
    free(doc);
}

lbone_json_doc_t *lbone_json_parse(const char *text, size_t len, char *err, size_t errlen)
{
    char dummy[8];
    parser_t ps;
    lbone_json_doc_t *doc = calloc(1, sizeof *doc);
    if (!err || errlen == 0) {
        err = dummy;
        errlen = sizeof dummy;
    }
    if (!doc) {
        lns_err_set(err, errlen, "out of memory");
        return NULL;
    }
    memset(&ps, 0, sizeof ps);
    ps.start = ps.p = text;
    ps.end = text + len;
    ps.doc = doc;
    ps.err = err;
    ps.errlen = errlen;
    if (parse_value(&ps, &doc->root, 0) == 0) {
        skip_ws(&ps);
        if (ps.p != ps.end)
            fail(&ps, "unexpected data after the JSON value");
    }
    if (ps.failed) {
        lbone_json_free(doc);
        return NULL;
    }
    return doc;
}

const lbone_json_t *lbone_json_root(const lbone_json_doc_t *doc)
{
    return doc ? doc->root : NULL;
}

lbone_json_type lbone_json_type_of(const lbone_json_t *v)
{
    return v ? v->type : LBONE_JSON_NULL;
}

const char *lbone_json_type_name(lbone_json_type t)
{
    static const char *names[] = {"null", "boolean", "number", "string", "array", "object"};
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "unknown";
}

const lbone_json_t *lbone_json_child(const lbone_json_t *v)
{
    return v && (v->type == LBONE_JSON_OBJECT || v->type == LBONE_JSON_ARRAY) ? v->child : NULL;
}

const lbone_json_t *lbone_json_next(const lbone_json_t *v)
{
    return v ? v->next : NULL;
}

const char *lbone_json_key(const lbone_json_t *member)
{
    return member ? member->key : NULL;
}

size_t lbone_json_count(const lbone_json_t *v)
{
    return v && (v->type == LBONE_JSON_OBJECT || v->type == LBONE_JSON_ARRAY) ? v->count : 0;
}

const lbone_json_t *lbone_json_get(const lbone_json_t *obj, const char *key)
{
    if (!obj || obj->type != LBONE_JSON_OBJECT)
        return NULL;
    for (const lbone_json_t *m = obj->child; m; m = m->next)
        if (strcmp(m->key, key) == 0)
            return m;
    return NULL;
}

int lbone_json_bool(const lbone_json_t *v, int *out)
{
    if (!v || v->type != LBONE_JSON_BOOL)
        return -1;
    *out = v->boolean;
    return 0;
}

int lbone_json_number(const lbone_json_t *v, double *out)
{
    if (!v || v->type != LBONE_JSON_NUMBER)
        return -1;
    *out = v->d;
    return 0;
}

int lbone_json_int(const lbone_json_t *v, int64_t *out)
{
    if (!v || v->type != LBONE_JSON_NUMBER)
        return -1;
    if (v->is_int) {
        *out = v->i;
        return 0;
    }
    if (v->d != floor(v->d) || fabs(v->d) >= 9007199254740992.0)
        return -1;
    *out = (int64_t)v->d;
    return 0;
}

const char *lbone_json_string(const lbone_json_t *v, size_t *len)
{
    if (!v || v->type != LBONE_JSON_STRING)
        return NULL;
    if (len)
        *len = v->slen;
    return v->s;
}

void lbone_json_put_string(lbone_buf_t *b, const char *s)
{
    const char *run = s;
    lbone_buf_add(b, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char esc[8];
        const char *rep = NULL;
        if (c == '"')
            rep = "\\\"";
        else if (c == '\\')
            rep = "\\\\";
        else if (c == '\n')
            rep = "\\n";
        else if (c == '\r')
            rep = "\\r";
        else if (c == '\t')
            rep = "\\t";
        else if (c < 0x20 || c == '<' || c == '>' || c == '&' || c == 0x7f) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            rep = esc;
        }
        if (!rep)
            continue;
        lbone_buf_add(b, run, (size_t)(s - run));
        lbone_buf_puts(b, rep);
        run = s + 1;
    }
    lbone_buf_add(b, run, (size_t)(s - run));
    lbone_buf_add(b, "\"", 1);
}

void lbone_json_put_number(lbone_buf_t *b, double v)
{
    if (!isfinite(v)) {
        lbone_buf_puts(b, "null");
        return;
    }
    if (v == floor(v) && fabs(v) < 9007199254740992.0)
        lbone_buf_printf(b, "%lld", (long long)v);
    else
        lbone_buf_printf(b, "%.10g", v);
}
