/* lbone_buf.h -- a growable text buffer for building HTTP bodies (JSON, HTML).
 *
 * Appends never fail loudly: on out-of-memory the buffer remembers it (oom = 1), further
 * appends are ignored, and the caller checks once at the end.  The text is always
 * NUL-terminated when p is not NULL.
 */
#ifndef LNS_LBONE_BUF_H
#define LNS_LBONE_BUF_H

#include <stddef.h>

typedef struct lbone_buf {
    char *p;
    size_t len;
    size_t cap;
    int oom;
} lbone_buf_t;

void lbone_buf_init(lbone_buf_t *b);
void lbone_buf_free(lbone_buf_t *b);
/* Hand the text over (caller frees it); the buffer is empty afterwards.  NULL after oom. */
char *lbone_buf_take(lbone_buf_t *b, size_t *len);
void lbone_buf_add(lbone_buf_t *b, const char *s, size_t n);
void lbone_buf_puts(lbone_buf_t *b, const char *s);
void lbone_buf_printf(lbone_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s with & < > " ' replaced by character references: safe in HTML text and attributes. */
void lbone_buf_html(lbone_buf_t *b, const char *s);

#endif
