/* lns_buf.h -- a growable text buffer for building HTTP bodies and pages (JSON, HTML).
 *
 * Appends never fail loudly: on out-of-memory the buffer remembers it (oom = 1), further
 * appends are ignored, and the caller checks once at the end.  The text is always
 * NUL-terminated when p is not NULL.
 */
#ifndef LNS_BUF_H
#define LNS_BUF_H

#include <stddef.h>

typedef struct lns_buf {
    char *p;
    size_t len;
    size_t cap;
    int oom;
} lns_buf_t;

void lns_buf_init(lns_buf_t *b);
void lns_buf_free(lns_buf_t *b);
/* Hand the text over (caller frees it); the buffer is empty afterwards.  NULL after oom. */
char *lns_buf_take(lns_buf_t *b, size_t *len);
void lns_buf_add(lns_buf_t *b, const char *s, size_t n);
void lns_buf_puts(lns_buf_t *b, const char *s);
void lns_buf_printf(lns_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s with & < > " ' replaced by character references: safe in HTML text and attributes. */
void lns_buf_html(lns_buf_t *b, const char *s);

#endif
