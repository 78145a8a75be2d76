/* serve.h -- the HTTP gateway of lors_serve: HTTP byte ranges (pure, unit-tested in
 * tests/unit/test_serve_range.c), the index page, and the HTTP front end.  The files come
 * from a lors_dir (lors.h). */
#ifndef LNS_SERVE_H
#define LNS_SERVE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#include "lors.h"

/* ---- ranges (serve_range.c) ------------------------------------------------------- */

#define SERVE_MAX_RANGES 32

typedef struct serve_range {
    int64_t off, len;
} serve_range_t;

typedef enum serve_ranges_kind {
    SERVE_WHOLE = 0,     /* no Range header, or one to ignore (malformed, not "bytes"): 200 */
    SERVE_PARTIAL,       /* *n >= 1 satisfiable ranges: 206 */
    SERVE_UNSATISFIABLE  /* a well-formed header of which no range is satisfiable: 416 */
} serve_ranges_kind;

/* Parse an HTTP Range header (RFC 9110, 14.1.2) for a representation of size bytes into at
 * most SERVE_MAX_RANGES ranges, each clipped to the size; ranges that cannot be satisfied are
 * left out.  Overlapping and adjacent ranges are merged and the result sorted by offset.  More
 * ranges than that, or ranges whose lengths add up to more than the size: the header is
 * ignored (200, the whole file once), so no header multiplies the bytes sent (issue 36). */
serve_ranges_kind serve_parse_ranges(const char *header, int64_t size, serve_range_t *out,
                                     int *n);

/* A content type from a name's extension ("application/octet-stream" when unknown). */
const char *serve_content_type(const char *name);

/* ---- the index (serve_index.c) ---------------------------------------------------- */

/* The HTML index of every name d shows, with sizes, types and links (each exNode is opened:
 * call it off an event loop), malloc'd; NULL: out of memory. */
char *serve_index_html(lors_dir_t *d);

/* ---- HTTP (serve_http.c) ----------------------------------------------------------- */

typedef struct serve_cfg {
    const char *listen;
    int port;
    const char *token;     /* NULL: none asked */
    const char *tls_cert;  /* PEM text of the certificate (chain), NULL: plain HTTP */
    const char *tls_key;   /* PEM text of its key */
    int max_clients;       /* workers: requests whose bytes are read at once */
    int max_connections;   /* open at once */
    int max_per_address;   /* of them from one address; -1: a quarter; 0: no limit */
    int request_timeout_s; /* a whole request within, from the connection's start */
    int idle_timeout_s;
    int quiet;
    FILE *log;             /* one line per request, and the failures */
} serve_cfg_t;

typedef struct serve_http serve_http_t;
/* Start serving (one per process); the bound port in *port.  NULL after a line in err. */
serve_http_t *serve_http_start(const serve_cfg_t *cfg, lors_dir_t *files, int *port, char *err,
                               size_t errlen);
/* Stop listening, let the reads under way end (a body under way is cut), stop. */
void serve_http_stop(serve_http_t *h);

#endif
