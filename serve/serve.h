/* serve.h -- the HTTP gateway of lors_serve: HTTP byte ranges (pure, unit-tested in
 * tests/unit/test_serve_range.c), the table of served exNodes, and the HTTP front end. */
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
 * most SERVE_MAX_RANGES ranges, in the order given, each clipped to the size; ranges that
 * cannot be satisfied are left out.  More ranges than that: the header is ignored (200). */
serve_ranges_kind serve_parse_ranges(const char *header, int64_t size, serve_range_t *out,
                                     int *n);

/* A content type from a name's extension ("application/octet-stream" when unknown). */
const char *serve_content_type(const char *name);

/* ---- served files (serve_files.c) --------------------------------------------------- */

typedef struct serve_file {
    char *name;            /* as in the URL */
    char *path;            /* the exNode */
    xnd_t *x;
    lors_reader_t *r;
    int64_t size;
    time_t mtime;          /* the exNode file's, for Last-Modified */
    struct timespec mtim;  /* ... with its inode and size: changed on disk or replaced? */
    ino_t ino;
    off_t xsize;
    char etag[40];         /* "\"...\"": a digest of the exNode's bytes */
    int refs;              /* the table's (while current) and each request's */
} serve_file_t;

typedef struct serve_files {
    pthread_mutex_t mu;
    char **dirs;           /* directories of exNodes */
    size_t ndirs;
    char **singles;        /* exNode files given one by one */
    size_t nsingles;
    serve_file_t **open;
    size_t nopen, capopen;
    lors_cache_t *cache;
    lors_reader_opts_t ro;
} serve_files_t;

/* The URL name of an exNode file: its base name without ".xnd". */
void serve_name_of(const char *path, char *name, size_t size);
/* The file for a URL name (no '/', not starting with '.'), opened or reused while its exNode
 * is unchanged: a new reference, or NULL with the HTTP status to answer (404, or 500/502
 * with a line in err). */
serve_file_t *serve_file_get(serve_files_t *t, const char *name, int *status, char *err,
                             size_t errlen);
void serve_file_put(serve_files_t *t, serve_file_t *f);
/* The HTML index of every served name, malloc'd; NULL: out of memory. */
char *serve_index_html(serve_files_t *t);
void serve_files_free(serve_files_t *t);

/* ---- HTTP (serve_http.c) ----------------------------------------------------------- */

typedef struct serve_cfg {
    const char *listen;
    int port;
    const char *token;     /* NULL: none asked */
    int max_clients;
    int idle_timeout_s;
    int quiet;
    FILE *log;             /* one line per request, and the failures */
} serve_cfg_t;

struct MHD_Daemon;
/* Start serving; the bound port in *port.  NULL after a line in err. */
struct MHD_Daemon *serve_http_start(const serve_cfg_t *cfg, serve_files_t *t, int *port,
                                    char *err, size_t errlen);

#endif
