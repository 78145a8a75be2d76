/* serve_http.c -- lors_serve's HTTP front end (libmicrohttpd, a thread per connection: a
 * body is produced by blocking reads of the random-access reader).
 *
 * GET and HEAD of "/" (an HTML index) and of "/NAME" (a network file): Content-Length,
 * Accept-Ranges, ETag (a digest of the exNode) and Last-Modified (its mtime), a content type
 * from the name; Range with one range (206 and Content-Range) or several (206
 * multipart/byteranges); a Range no part of which is in the file, 416 with "Content-Range:
 * bytes *" + "/SIZE"; If-None-Match (304) and If-Range.  Before the headers go out the first
 * bytes of the body are read, so a range that no live copy holds is a 502 whose body and log
 * line name the bytes; a failure later in a body ends the connection (the client sees a
 * short body) and is logged the same way.  With a token, a request must carry
 * "Authorization: Bearer TOKEN" or "?token=TOKEN" (401 otherwise).
 */
#include <errno.h>
#include <microhttpd.h>
#include <openssl/crypto.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include "lns_log.h"
#include "lns_net.h"
#include "serve.h"

#define PRE_BYTES ((int64_t)64 << 10) /* read before the headers: a dead range is a 502 */
#define BODY_BLOCK (256u << 10)        /* libmicrohttpd's buffer per connection */

typedef struct srv {
    const serve_cfg_t *cfg;
    lors_dir_t *d;
} srv_t;

static srv_t S;

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    lns_log_line(S.cfg->log, fmt, ap);
    va_end(ap);
}

static void client_of(struct MHD_Connection *c, char *buf, size_t size)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    snprintf(buf, size, "-");
    if (!ci || !ci->client_addr)
        return;
    const struct sockaddr *sa = ci->client_addr;
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, buf, (socklen_t)size);
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, buf,
                  (socklen_t)size);
}

static enum MHD_Result answer_text(struct MHD_Connection *c, unsigned status, const char *text,
                                   const char *h1, const char *v1)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), (void *)text,
                                                             MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "text/plain; charset=utf-8");
    if (h1)
        MHD_add_response_header(r, h1, v1);
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

/* ---- the body of a file response ------------------------------------------------------ */

typedef struct body {
    lors_dir_file_t *f;
    lors_stream_t *s;
    serve_range_t r[SERVE_MAX_RANGES];
    int nr;
    int multi;
    char *part[SERVE_MAX_RANGES]; /* multipart: each range's part header */
    size_t plen[SERVE_MAX_RANGES];
    char tail[64];
    size_t tlen;
    unsigned char *pre;            /* the first bytes of range 0, read before the headers */
    int64_t npre;
    char who[80], name[256];
} body_t;

static void body_free(void *cls)
{
    body_t *b = cls;
    lors_stream_close(b->s);
    lors_dir_put(S.d, b->f);
    for (int i = 0; i < b->nr; i++)
        free(b->part[i]);
    free(b->pre);
    free(b);
}

static int64_t total_length(const body_t *b)
{
    int64_t n = 0;
    for (int i = 0; i < b->nr; i++)
        n += b->r[i].len + (b->multi ? (int64_t)b->plen[i] : 0);
    return n + (b->multi ? (int64_t)b->tlen : 0);
}

/* Bytes [off, off + len) of the file into buf, from the pre-read bytes or the reader. */
static int64_t file_bytes(body_t *b, unsigned char *buf, size_t len, int64_t off)
{
    if (off >= b->r[0].off && off < b->r[0].off + b->npre) {
        int64_t k = b->r[0].off + b->npre - off;
        if ((int64_t)len > k)
            len = (size_t)k;
        memcpy(buf, b->pre + (off - b->r[0].off), len);
        return (int64_t)len;
    }
    int rc;
    char err[600];
    int64_t n = lors_stream_pread(b->s, buf, len, off, &rc, err, sizeof err);
    if (n <= 0) {
        logf_("%s GET /%s: body cut short: %s", b->who, b->name,
              n < 0 ? err : "the file ended early");
        return -1;
    }
    return n;
}

static ssize_t body_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    body_t *b = cls;
    int64_t p = (int64_t)pos;
    for (int i = 0; i < b->nr; i++) {
        if (b->multi) {
            if (p < (int64_t)b->plen[i]) {
                size_t n = b->plen[i] - (size_t)p < max ? b->plen[i] - (size_t)p : max;
                memcpy(buf, b->part[i] + p, n);
                return (ssize_t)n;
            }
            p -= (int64_t)b->plen[i];
        }
        if (p < b->r[i].len) {
            size_t n = (size_t)(b->r[i].len - p) < max ? (size_t)(b->r[i].len - p) : max;
            int64_t got = file_bytes(b, (unsigned char *)buf, n, b->r[i].off + p);
            return got < 0 ? MHD_CONTENT_READER_END_WITH_ERROR : (ssize_t)got;
        }
        p -= b->r[i].len;
    }
    if (b->multi && p < (int64_t)b->tlen) {
        size_t n = b->tlen - (size_t)p < max ? b->tlen - (size_t)p : max;
        memcpy(buf, b->tail + p, n);
        return (ssize_t)n;
    }
    return MHD_CONTENT_READER_END_OF_STREAM;
}

static void http_date(time_t t, char *buf, size_t size)
{
    struct tm tm;
    strftime(buf, size, "%a, %d %b %Y %H:%M:%S GMT", gmtime_r(&t, &tm));
}

/* 1 if the If-None-Match list holds etag (or "*"). */
static int etag_listed(const char *list, const char *etag)
{
    if (!list)
        return 0;
    size_t l = strlen(etag);
    for (const char *p = list; *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        if (*p == '*')
            return 1;
        if (strncmp(p, "W/", 2) == 0)
            p += 2;
        if (strncmp(p, etag, l) == 0 && (p[l] == '\0' || p[l] == ',' || p[l] == ' '))
            return 1;
        while (*p && *p != ',')
            p++;
    }
    return 0;
}

static enum MHD_Result serve_file(struct MHD_Connection *c, const char *who, const char *method,
                                  const char *name)
{
    int rc;
    char err[600];
    lors_dir_file_t *f = lors_dir_get(S.d, name, &rc, err, sizeof err);
    if (!f) {
        int status = rc == LORS_E_NOTFOUND ? 404 : 500;
        logf_("%s %s /%s %d %s", who, method, name, status, err);
        char line[700];
        snprintf(line, sizeof line, "%s: %s\n", name, err);
        return answer_text(c, (unsigned)status, line, NULL, NULL);
    }
    int head = strcmp(method, "HEAD") == 0;
    char lm[64], cr[96];
    http_date(f->mtime.tv_sec, lm, sizeof lm);
    if (etag_listed(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "If-None-Match"),
                    f->tag)) {
        struct MHD_Response *r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
        MHD_add_response_header(r, "ETag", f->tag);
        lors_dir_put(S.d, f);
        enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_NOT_MODIFIED, r);
        MHD_destroy_response(r);
        logf_("%s %s /%s 304", who, method, name);
        return ok;
    }

    body_t *b = calloc(1, sizeof *b);
    if (!b || !(b->s = lors_stream_open(f->r))) {
        free(b);
        lors_dir_put(S.d, f);
        return answer_text(c, 500, "out of memory\n", NULL, NULL);
    }
    b->f = f;
    snprintf(b->who, sizeof b->who, "%s", who);
    snprintf(b->name, sizeof b->name, "%s", name);
    const char *range = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Range");
    const char *ifr = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "If-Range");
    if (range && ifr && strcmp(ifr, f->tag) != 0 && strcmp(ifr, lm) != 0)
        range = NULL; /* the representation changed: the whole of it */
    serve_ranges_kind k = serve_parse_ranges(range, f->size, b->r, &b->nr);
    if (k == SERVE_UNSATISFIABLE) {
        snprintf(cr, sizeof cr, "bytes */%lld", (long long)f->size);
        logf_("%s %s /%s 416 %s", who, method, name, range);
        body_free(b);
        return answer_text(c, MHD_HTTP_RANGE_NOT_SATISFIABLE, "range not satisfiable\n",
                           "Content-Range", cr);
    }
    if (k == SERVE_WHOLE) {
        b->nr = 1;
        b->r[0] = (serve_range_t){0, f->size};
    }
    int64_t last = 0; /* no read-ahead past what was asked for */
    for (int i = 0; i < b->nr; i++)
        if (b->r[i].off + b->r[i].len > last)
            last = b->r[i].off + b->r[i].len;
    lors_stream_set_end(b->s, last);
    const char *ctype = serve_content_type(name);
    char boundary[40];
    snprintf(boundary, sizeof boundary, "lns%08lx%08lx", (unsigned long)random(),
             (unsigned long)random());
    if (b->nr > 1) {
        b->multi = 1;
        for (int i = 0; i < b->nr; i++) {
            char h[512];
            int n = snprintf(h, sizeof h, "%s--%s\r\nContent-Type: %s\r\nContent-Range: bytes "
                                          "%lld-%lld/%lld\r\n\r\n",
                             i ? "\r\n" : "", boundary, ctype, (long long)b->r[i].off,
                             (long long)(b->r[i].off + b->r[i].len - 1), (long long)f->size);
            b->part[i] = strdup(h);
            b->plen[i] = (size_t)n;
        }
        b->tlen = (size_t)snprintf(b->tail, sizeof b->tail, "\r\n--%s--\r\n", boundary);
    }
    /* the first bytes now: a range with no live copy is an error the client can see */
    if (!head && b->r[0].len > 0) {
        int64_t want = b->r[0].len < PRE_BYTES ? b->r[0].len : PRE_BYTES;
        b->pre = malloc((size_t)want);
        int64_t got = b->pre ? lors_stream_pread(b->s, b->pre, (size_t)want, b->r[0].off, &rc,
                                                 err, sizeof err)
                             : -1;
        if (got != want) {
            if (!b->pre)
                snprintf(err, sizeof err, "out of memory");
            else if (got >= 0)
                snprintf(err, sizeof err, "the file ended early");
            logf_("%s %s /%s 502 %s", who, method, name, err);
            char line[700];
            snprintf(line, sizeof line, "%s: %s\n", name, err);
            body_free(b);
            return answer_text(c, MHD_HTTP_BAD_GATEWAY, line, NULL, NULL);
        }
        b->npre = got;
    }
    int64_t total = total_length(b);
    struct MHD_Response *r =
        MHD_create_response_from_callback((uint64_t)total, BODY_BLOCK, body_read, b, body_free);
    if (!r) {
        body_free(b);
        return MHD_NO;
    }
    unsigned code = k == SERVE_PARTIAL ? MHD_HTTP_PARTIAL_CONTENT : MHD_HTTP_OK;
    MHD_add_response_header(r, "Accept-Ranges", "bytes");
    MHD_add_response_header(r, "ETag", f->tag);
    MHD_add_response_header(r, "Last-Modified", lm);
    if (b->multi) {
        char ct[96];
        snprintf(ct, sizeof ct, "multipart/byteranges; boundary=%s", boundary);
        MHD_add_response_header(r, "Content-Type", ct);
    } else {
        MHD_add_response_header(r, "Content-Type", ctype);
    }
    if (k == SERVE_PARTIAL && !b->multi) {
        snprintf(cr, sizeof cr, "bytes %lld-%lld/%lld", (long long)b->r[0].off,
                 (long long)(b->r[0].off + b->r[0].len - 1), (long long)f->size);
        MHD_add_response_header(r, "Content-Range", cr);
    }
    enum MHD_Result ok = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    logf_("%s %s /%s %u %s%s%lld bytes", who, method, name, code, range && k ? range : "",
          range && k ? " " : "", (long long)total);
    return ok;
}

/* The token, compared in constant time (CRYPTO_memcmp, as the depot and the L-Bone do). */
static int same_secret(const char *a, const char *b)
{
    size_t n = strlen(b);
    return strlen(a) == n && CRYPTO_memcmp(a, b, n) == 0;
}

static int authorized(struct MHD_Connection *c)
{
    if (!S.cfg->token)
        return 1;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (h && strncasecmp(h, "Bearer ", 7) == 0 && same_secret(h + 7, S.cfg->token))
        return 1;
    const char *q = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "token");
    return q && same_secret(q, S.cfg->token);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_size, void **con_cls)
{
    (void)cls;
    (void)version;
    (void)upload_data;
    char who[64];
    client_of(c, who, sizeof who);
    if (*upload_size) { /* a body we do not take */
        *upload_size = 0;
        return MHD_YES;
    }
    if (!*con_cls) { /* headers in; answer at the next call (after any body) */
        *con_cls = (void *)1;
        return MHD_YES;
    }
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        logf_("%s %s %s 405", who, method, url);
        return answer_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "lors_serve is read-only: GET and "
                                                           "HEAD\n", "Allow", "GET, HEAD");
    }
    if (!authorized(c)) {
        logf_("%s %s %s 401", who, method, url);
        return answer_text(c, MHD_HTTP_UNAUTHORIZED, "a token is needed: \"Authorization: "
                                                     "Bearer TOKEN\" or ?token=TOKEN\n",
                           "WWW-Authenticate", "Bearer");
    }
    if (strcmp(url, "/") == 0) {
        char *html = serve_index_html(S.d);
        if (!html)
            return answer_text(c, 500, "out of memory\n", NULL, NULL);
        struct MHD_Response *r =
            MHD_create_response_from_buffer(strlen(html), html, MHD_RESPMEM_MUST_FREE);
        MHD_add_response_header(r, "Content-Type", "text/html; charset=utf-8");
        enum MHD_Result ok = MHD_queue_response(c, MHD_HTTP_OK, r);
        MHD_destroy_response(r);
        logf_("%s %s / 200", who, method);
        return ok;
    }
    return serve_file(c, who, method, url + 1);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t n = strlen(line);
    while (n && line[n - 1] == '\n')
        line[--n] = '\0';
    logf_("libmicrohttpd: %s", line);
}

struct MHD_Daemon *serve_http_start(const serve_cfg_t *cfg, lors_dir_t *files, int *port,
                                    char *err, size_t errlen)
{
    S.cfg = cfg;
    S.d = files;
    srandom((unsigned)time(NULL) ^ (unsigned)getpid());
    int fd = lns_listen(cfg->listen, cfg->port, 128, port, err, errlen);
    if (fd < 0)
        return NULL;
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0,
        NULL, NULL, on_request, NULL, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
        MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->max_clients, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)cfg->idle_timeout_s, MHD_OPTION_END);
    if (!d) {
        close(fd);
        snprintf(err, errlen, "cannot start the HTTP server (libmicrohttpd) on port %d", *port);
        return NULL;
    }
    return d;
}
