/* xnd_internal.h -- what the files of libexnode share and nobody else sees.
 *
 * xnd_raw_t keeps an element we do not interpret (another namespace, or an exnode element we
 * do not know) as a small tree of qualified names, attributes and text, so that it can be
 * written back as it came.  xnd_buf_t is the growable output buffer of the serializer.
 */
#ifndef LNS_XND_INTERNAL_H
#define LNS_XND_INTERNAL_H

#include "xnd.h"

#include <stdarg.h>

typedef struct xnd_raw {
    struct xnd_raw *next;
    char *name;   /* qualified name as written; NULL for a text node */
    char *text;   /* text node: the characters */
    char **attrs; /* name, value, name, value ... (namespace declarations included) */
    size_t nattrs;
    struct xnd_raw *kids;
} xnd_raw_t;

void xnd_raw_free(xnd_raw_t *r); /* the whole sibling chain */
xnd_raw_t *xnd_raw_copy(const xnd_raw_t *r); /* the whole sibling chain; NULL on OOM */

typedef struct xnd_buf {
    char *data;
    size_t len, cap;
    int oom;
} xnd_buf_t;

void xnd_buf_put(xnd_buf_t *b, const char *s, size_t n);
void xnd_buf_puts(xnd_buf_t *b, const char *s);

/* exnode's setter, lns_err_set with "line N: " (if line > 0) before the message; returns code. */
int xnd_seterr(char *err, size_t errlen, int code, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Strict numbers: optional '-', decimal digits, within int64; surrounding XML whitespace
 * allowed.  0 or -1. */
/* xnd_file.c: the bytes of fd, at most max (XND_E_LIMIT past it; *out malloc'd); the bytes
 * of the file path ("-": stdin) with err naming it; the file read and parsed, its bytes kept
 * in *bytes (malloc'd) when bytes is not NULL; text written to path atomically ("-": stdout;
 * excl: never replacing a file). */
int xnd_read_all(int fd, size_t max, char **out, size_t *len);
int xnd_read_bytes(const char *path, size_t max, char **buf, size_t *len, char *err,
                   size_t errlen);
int xnd_read_file_raw(const char *path, const xnd_opts_t *opts, xnd_t **out, char **bytes,
                      size_t *nbytes, char *err, size_t errlen);
int xnd_write_text(const char *text, size_t len, const char *path, int excl, char *err,
                   size_t errlen);

int xnd_parse_int(const char *s, int64_t *out);
int xnd_parse_double(const char *s, double *out);
/* Parse text as type; XND_OK or XND_E_NUMBER. */
int xnd_meta_parse_value(xnd_meta_t *m);
/* Append an entry with name/type (text empty); returns it or NULL. */
xnd_meta_t *xnd_meta_append(xnd_meta_list_t *l, const char *name, xnd_type type);
void xnd_meta_free_entry(xnd_meta_t *m);
const char *xnd_type_name(xnd_type t);
xnd_func_t *xnd_func_copy(const xnd_func_t *f);

#endif
