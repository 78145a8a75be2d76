/* lns_buf.c -- a growable text buffer for building HTTP bodies (JSON, HTML).
 *
 * Capacity doubles, so building a body of n bytes costs O(n) copies; an allocation failure
 * turns the buffer into a sink (oom) instead of making every caller check every append.
 */
#include "lns_buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void lns_buf_init(lns_buf_t *b)
{
    memset(b, 0, sizeof *b);
}

void lns_buf_free(lns_buf_t *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

char *lns_buf_take(lns_buf_t *b, size_t *len)
{
    char *p = b->oom ? NULL : b->p;
    if (b->oom)
        free(b->p);
    else if (!p)
        p = calloc(1, 1);
    if (len)
        *len = p ? b->len : 0;
    memset(b, 0, sizeof *b);
    return p;
}

static int reserve(lns_buf_t *b, size_t extra)
{
    if (b->oom)
        return -1;
    if (b->len + extra + 1 <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1) {
        if (cap > ((size_t)-1) / 2) {
            b->oom = 1;
            return -1;
        }
        cap *= 2;
    }
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = 1;
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

void lns_buf_add(lns_buf_t *b, const char *s, size_t n)
{
    if (reserve(b, n) < 0)
        return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

void lns_buf_puts(lns_buf_t *b, const char *s)
{
    lns_buf_add(b, s, strlen(s));
}

void lns_buf_printf(lns_buf_t *b, const char *fmt, ...)
{
    va_list ap;
    char small[256];
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->oom = 1;
        return;
    }
    if ((size_t)n < sizeof small) {
        lns_buf_add(b, small, (size_t)n);
        return;
    }
    if (reserve(b, (size_t)n) < 0)
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void lns_buf_html(lns_buf_t *b, const char *s)
{
    const char *run = s;
    for (; *s; s++) {
        const char *rep = NULL;
        switch (*s) {
        case '&': rep = "&amp;"; break;
        case '<': rep = "&lt;"; break;
        case '>': rep = "&gt;"; break;
        case '"': rep = "&quot;"; break;
        case '\'': rep = "&#39;"; break;
        default: continue;
        }
        lns_buf_add(b, run, (size_t)(s - run));
        lns_buf_puts(b, rep);
        run = s + 1;
    }
    lns_buf_add(b, run, (size_t)(s - run));
}
