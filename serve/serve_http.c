/* serve_http.c -- lors_serve's HTTP front end: libmicrohttpd's event loops (epoll, a few
 * threads for any number of connections) and a pool of workers for what blocks.
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
 *
 * Nothing that waits on a depot runs on an event loop: a file's answer is made (the exNode
 * opened, its first bytes read) and each block of its body read by a worker while the
 * connection is suspended, and the worker resumes it; max-clients workers, the requests
 * beyond them queued in the order they came.  Against slow and many clients, as nginx: a
 * whole request within request-timeout (lns_reqclock), at most max-per-address connections
 * from one address, up to max-connections connections (by default as many as the open-file
 * limit allows), and, once all but a quarter of them are open, the oldest unfinished requests
 * closed to make room; a long listen queue holds a burst.
 */
#include <errno.h>
#include <microhttpd.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <pthread.h>
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

#include "lns_err.h"
#include "lns_hex.h"
#include "lns_log.h"
#include "lns_net.h"
#include "lns_reqclock.h"
#include "serve.h"

#define PRE_BYTES ((int64_t)64 << 10) /* read before the headers: a dead range is a 502 */
#define BODY_BLOCK (256u << 10)        /* a body's block, read by a worker */

/* ---- the workers: what blocks, off the event loops ------------------------------------ */

typedef struct job job_t;
struct job {
    job_t *next;
    void (*run)(void *arg);
    void *arg;
    struct MHD_Connection *c; /* suspended: resumed once run has run */
};

/* The server (a process may run more than one). */
struct serve_http {
    const serve_cfg_t *cfg;
    lors_dir_t *d;
    lns_reqclock_t *clock;
    struct MHD_Daemon *mhd;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    job_t *head, *tail;
    int stopping;
    pthread_t *th;
    int nth;
};

static void *worker_main(void *arg)
{
    serve_http_t *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->head && !s->stopping)
            pthread_cond_wait(&s->cv, &s->mu);
        if (!s->head)
            break;
        job_t *j = s->head;
        if (!(s->head = j->next))
            s->tail = NULL;
        pthread_mutex_unlock(&s->mu);
        j->run(j->arg);
        MHD_resume_connection(j->c);
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* Suspend c and have a worker run j (filled in by the caller), which then resumes it; called
 * on c's event loop, from the access handler or the content reader.  0, or -1 when the
 * server is stopping (c is not suspended). */
static int submit(serve_http_t *s, struct MHD_Connection *c, job_t *j)
{
    j->c = c;
    j->next = NULL;
    pthread_mutex_lock(&s->mu);
    if (s->stopping) {
        pthread_mutex_unlock(&s->mu);
        return -1;
    }
    MHD_suspend_connection(c);
    if (s->tail)
        s->tail->next = j;
    else
        s->head = j;
    s->tail = j;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return 0;
}

static void logf_(const serve_http_t *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void logf_(const serve_http_t *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    lns_log_line(s->cfg->log, fmt, ap);
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

static struct MHD_Response *text_response(const char *text, const char *h1, const char *v1)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), (void *)text,
                                                             MHD_RESPMEM_MUST_COPY);
    if (!r)
        return NULL;
    MHD_add_response_header(r, "Content-Type", "text/plain; charset=utf-8");
    if (h1)
        MHD_add_response_header(r, h1, v1);
    return r;
}

static enum MHD_Result queue(struct MHD_Connection *c, unsigned status, struct MHD_Response *r)
{
    if (!r)
        return MHD_NO;
    enum MHD_Result ok = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result answer_text(struct MHD_Connection *c, unsigned status, const char *text,
                                   const char *h1, const char *v1)
{
    return queue(c, status, text_response(text, h1, v1));
}

/* ---- a request ------------------------------------------------------------------------ */

/* What the access handler keeps of a request (*con_cls), from its head to its end.  A file's
 * answer is made by a worker from the copies of its headers, while the connection is
 * suspended; the handler, called again once it is resumed, queues it. */
typedef struct req {
    serve_http_t *s;
    int made;                      /* a worker has made the answer */
    char who[64], method[8];
    char *name, *range, *if_range, *if_none_match;
    unsigned code;
    struct MHD_Response *resp;
    job_t job;
} req_t;

static void req_free(req_t *q)
{
    if (q->resp)
        MHD_destroy_response(q->resp);
    free(q->name);
    free(q->range);
    free(q->if_range);
    free(q->if_none_match);
    free(q);
}

/* ---- the body of a file response ------------------------------------------------------ */

typedef struct body {
    serve_http_t *srv;
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
    /* the block a worker read: buf holds file bytes [boff, boff + blen); failed once a read
     * failed (logged); want_off/want_len what the next read is to get */
    struct MHD_Connection *c;
    unsigned char *buf;
    int64_t boff, want_off;
    size_t blen, want_len;
    int failed;
    job_t job;
    char who[80], name[256];
} body_t;

static void body_free(void *cls)
{
    body_t *b = cls;
    lors_stream_close(b->s);
    lors_dir_put(b->srv->d, b->f);
    for (int i = 0; i < b->nr; i++)
        free(b->part[i]);
    free(b->pre);
    free(b->buf);
    free(b);
}

static int64_t total_length(const body_t *b)
{
    int64_t n = 0;
    for (int i = 0; i < b->nr; i++)
        n += b->r[i].len + (b->multi ? (int64_t)b->plen[i] : 0);
    return n + (b->multi ? (int64_t)b->tlen : 0);
}

/* A worker: the next block of the body. */
static void read_block(void *arg)
{
    body_t *b = arg;
    const serve_http_t *s = b->srv;
    int rc;
    char err[600];
    int64_t n = -1;
    if (b->buf || (b->buf = malloc(BODY_BLOCK)))
        n = lors_stream_pread(b->s, b->buf, b->want_len, b->want_off, &rc, err, sizeof err);
    else
        snprintf(err, sizeof err, "out of memory");
    if (n <= 0) {
        logf_(s, "%s GET /%s: body cut short: %s", b->who, b->name,
              n < 0 ? err : "the file ended early");
        b->failed = 1;
        b->blen = 0;
        return;
    }
    b->boff = b->want_off;
    b->blen = (size_t)n;
}

/* Bytes [off, off + len) of the file into buf, from the pre-read bytes or the block a worker
 * read: how many (at least 1), 0 when a worker must read them first (the connection is then
 * suspended; it reads up to a block of the ahead bytes from off, ahead >= len), or -1 when
 * that failed. */
static int64_t file_bytes(body_t *b, unsigned char *buf, size_t len, int64_t off,
                          int64_t ahead)
{
    const unsigned char *from = NULL;
    int64_t k = 0;
    if (off >= b->r[0].off && off < b->r[0].off + b->npre) {
        k = b->r[0].off + b->npre - off;
        from = b->pre + (off - b->r[0].off);
    } else if (b->blen && off >= b->boff && off < b->boff + (int64_t)b->blen) {
        k = b->boff + (int64_t)b->blen - off;
        from = b->buf + (off - b->boff);
    }
    if (from) {
        if ((int64_t)len > k)
            len = (size_t)k;
        memcpy(buf, from, len);
        return (int64_t)len;
    }
    if (b->failed)
        return -1;
    b->want_off = off;
    b->want_len = ahead < (int64_t)BODY_BLOCK ? (size_t)ahead : BODY_BLOCK;
    b->job.run = read_block;
    b->job.arg = b;
    serve_http_t *s = b->srv;
    if (submit(s, b->c, &b->job) < 0) {
        logf_(s, "%s GET /%s: body cut short: lors_serve is stopping", b->who, b->name);
        return -1;
    }
    return 0;
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
            int64_t left = b->r[i].len - p;
            size_t n = left < (int64_t)max ? (size_t)left : max;
            int64_t got = file_bytes(b, (unsigned char *)buf, n, b->r[i].off + p, left);
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

/* in with every absolute path written as its last part ("the exNode /srv/films/a.xnd: ..."
 * becomes "the exNode a.xnd: ..."): what a client is told names no path of the server's. */
static void no_paths(const char *in, char *out, size_t size)
{
    size_t k = 0;
    for (const char *p = in; *p && k + 1 < size;) {
        int starts = *p == '/' && (p == in || strchr(" (\"'`=", p[-1]));
        if (!starts) {
            out[k++] = *p++;
            continue;
        }
        const char *end = p + strcspn(p, " :,;)\"'`");
        const char *last = p;
        for (const char *c = p; c < end; c++)
            if (*c == '/' && c + 1 < end)
                last = c + 1;
        while (last < end && k + 1 < size)
            out[k++] = *last++;
        p = end;
    }
    out[k] = '\0';
}

/* A text answer "NAME: why" for a failure, with no path of the server's in it. */
static struct MHD_Response *failure_response(const char *name, const char *err)
{
    char safe[700], line[1000];
    no_paths(err, safe, sizeof safe);
    snprintf(line, sizeof line, "%s: %s\n", name, safe);
    return text_response(line, NULL, NULL);
}

/* The answer for a file, in q->code and q->resp (NULL: out of memory, the connection is
 * closed); run by a worker, as it may wait on depots. */
static void make_file_answer(req_t *q, struct MHD_Connection *c)
{
    int rc;
    char err[600];
    serve_http_t *s = q->s;
    const char *who = q->who, *method = q->method, *name = q->name;
    lors_dir_file_t *f = lors_dir_get(s->d, name, &rc, err, sizeof err);
    if (!f) {
        q->code = rc == LORS_E_NOTFOUND ? 404 : 500;
        logf_(s, "%s %s /%s %u %s", who, method, name, q->code, err);
        q->resp = failure_response(name, err);
        return;
    }
    int head = strcmp(method, "HEAD") == 0;
    char lm[64], cr[96];
    http_date(f->mtime.tv_sec, lm, sizeof lm);
    if (etag_listed(q->if_none_match, f->tag)) {
        struct MHD_Response *r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
        if (r)
            MHD_add_response_header(r, "ETag", f->tag);
        lors_dir_put(s->d, f);
        q->code = MHD_HTTP_NOT_MODIFIED;
        q->resp = r;
        logf_(s, "%s %s /%s 304", who, method, name);
        return;
    }

    body_t *b = calloc(1, sizeof *b);
    if (b)
        b->srv = s;
    if (!b || !(b->s = lors_stream_open(f->r))) {
        free(b);
        lors_dir_put(s->d, f);
        q->code = 500;
        q->resp = text_response("out of memory\n", NULL, NULL);
        return;
    }
    b->f = f;
    b->c = c;
    snprintf(b->who, sizeof b->who, "%s", who);
    snprintf(b->name, sizeof b->name, "%s", name);
    const char *range = q->range;
    if (range && q->if_range && strcmp(q->if_range, f->tag) != 0 && strcmp(q->if_range, lm) != 0)
        range = NULL; /* the representation changed: the whole of it */
    serve_ranges_kind k = serve_parse_ranges(range, f->size, b->r, &b->nr);
    if (k == SERVE_UNSATISFIABLE) {
        snprintf(cr, sizeof cr, "bytes */%lld", (long long)f->size);
        logf_(s, "%s %s /%s 416 %s", who, method, name, range);
        body_free(b);
        q->code = MHD_HTTP_RANGE_NOT_SATISFIABLE;
        q->resp = text_response("range not satisfiable\n", "Content-Range", cr);
        return;
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
    unsigned char rnd[8];
    char hex[2 * sizeof rnd + 1];
    if (RAND_bytes(rnd, sizeof rnd) != 1) /* a boundary need only be unlikely in the file */
        memset(rnd, 0x5a, sizeof rnd);
    snprintf(boundary, sizeof boundary, "lns%s", lns_hex(rnd, sizeof rnd, hex));
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
            logf_(s, "%s %s /%s 502 %s", who, method, name, err);
            body_free(b);
            q->code = MHD_HTTP_BAD_GATEWAY;
            q->resp = failure_response(name, err);
            return;
        }
        b->npre = got;
    }
    int64_t total = total_length(b);
    /* libmicrohttpd allocates (and zeroes) the block with every response: a small answer
     * gets a small one (a 4 KiB range paid for 256 KiB, 3 % of the server's samples) */
    size_t block = total < (int64_t)BODY_BLOCK ? (size_t)(total > 4096 ? total : 4096)
                                                : BODY_BLOCK;
    struct MHD_Response *r =
        MHD_create_response_from_callback((uint64_t)total, block, body_read, b, body_free);
    if (!r) {
        body_free(b);
        return;
    }
    q->code = k == SERVE_PARTIAL ? MHD_HTTP_PARTIAL_CONTENT : MHD_HTTP_OK;
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
    q->resp = r;
    logf_(s, "%s %s /%s %u %s%s%lld bytes", who, method, name, q->code, range && k ? range : "",
          range && k ? " " : "", (long long)total);
}

static struct MHD_Connection *job_conn_of(req_t *q)
{
    return q->job.c;
}

/* The index: each file's size and type, so every exNode is opened (by a worker). */
static void make_index_answer(req_t *q)
{
    const serve_http_t *s = q->s;
    char *html = serve_index_html(s->d);
    struct MHD_Response *r =
        html ? MHD_create_response_from_buffer(strlen(html), html, MHD_RESPMEM_MUST_FREE)
             : NULL;
    if (!r) {
        free(html);
        q->code = 500;
        q->resp = text_response("out of memory\n", NULL, NULL);
        return;
    }
    MHD_add_response_header(r, "Content-Type", "text/html; charset=utf-8");
    q->code = MHD_HTTP_OK;
    q->resp = r;
    logf_(s, "%s %s / 200", q->who, q->method);
}

static void make_answer_job(void *arg)
{
    req_t *q = arg;
    if (!q->name[0])
        make_index_answer(q);
    else
        make_file_answer(q, job_conn_of(q));
    q->made = 1;
}

/* The token, compared in constant time (CRYPTO_memcmp, as the depot and the L-Bone do). */
static int same_secret(const char *a, const char *b)
{
    size_t n = strlen(b);
    return strlen(a) == n && CRYPTO_memcmp(a, b, n) == 0;
}

static int authorized(const serve_http_t *s, struct MHD_Connection *c)
{
    if (!s->cfg->token)
        return 1;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (h && strncasecmp(h, "Bearer ", 7) == 0 && same_secret(h + 7, s->cfg->token))
        return 1;
    const char *q = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "token");
    return q && same_secret(q, s->cfg->token);
}

static char *dup_header(struct MHD_Connection *c, const char *name)
{
    const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
    return v ? strdup(v) : NULL;
}

static lns_reqclock_conn_t *clock_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_size, void **con_cls)
{
    serve_http_t *s = cls;
    (void)upload_data;
    req_t *q = *con_cls;
    if (!q) { /* headers in; answer at the next call (after any body) */
        if (!(q = calloc(1, sizeof *q)))
            return MHD_NO;
        q->s = s;
        *con_cls = q;
        return MHD_YES;
    }
    if (*upload_size) { /* a body we do not take */
        *upload_size = 0;
        return MHD_YES;
    }
    if (q->made) { /* resumed: a worker made the answer */
        struct MHD_Response *r = q->resp;
        q->resp = NULL;
        return queue(c, q->code, r);
    }
    lns_reqclock_received(s->clock, clock_of(c)); /* the whole request is in */
    client_of(c, q->who, sizeof q->who);
    const char *who = q->who;
    if (strcmp(version, MHD_HTTP_VERSION_1_1) == 0 &&
        !MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST)) {
        logf_(s, "%s %s %s 400 no Host header", who, method, url);
        return answer_text(c, MHD_HTTP_BAD_REQUEST, "an HTTP/1.1 request needs a Host "
                                                    "header\n", "Connection", "close");
    }
    /* the absolute form (RFC 9112 3.2.2: "GET http://host:port/name"): its path */
    if (strncasecmp(url, "http://", 7) == 0 || strncasecmp(url, "https://", 8) == 0) {
        const char *path = strchr(strstr(url, "//") + 2, '/');
        url = path ? path : "/";
    }
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        logf_(s, "%s %s %s 405", who, method, url);
        return answer_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "lors_serve is read-only: GET and "
                                                           "HEAD\n", "Allow", "GET, HEAD");
    }
    if (!authorized(s, c)) {
        logf_(s, "%s %s %s 401", who, method, url);
        return answer_text(c, MHD_HTTP_UNAUTHORIZED, "a token is needed: \"Authorization: "
                                                     "Bearer TOKEN\" or ?token=TOKEN\n",
                           "WWW-Authenticate", "Bearer");
    }
    snprintf(q->method, sizeof q->method, "%s", method);
    q->name = strdup(url + 1);
    q->range = dup_header(c, "Range");
    q->if_range = dup_header(c, "If-Range");
    q->if_none_match = dup_header(c, "If-None-Match");
    if (!q->name)
        return MHD_NO;
    q->job.run = make_answer_job;
    q->job.arg = q;
    if (submit(s, c, &q->job) < 0)
        return answer_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "lors_serve is stopping\n", NULL,
                           NULL);
    return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    serve_http_t *s = cls;
    (void)toe;
    if (*con_cls) {
        req_free(*con_cls);
        *con_cls = NULL;
    }
    lns_reqclock_next(s->clock, clock_of(c));
}

/* Opened: its request clock starts (without memory for one, it is shut down at once).
 * Closed: libmicrohttpd tells us before it closes the socket. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    serve_http_t *s = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!ci)
            return;
        *socket_context = lns_reqclock_open(s->clock, ci->connect_fd);
        if (!*socket_context)
            shutdown(ci->connect_fd, SHUT_RDWR);
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        lns_reqclock_close(s->clock, *socket_context);
        *socket_context = NULL;
    }
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    const serve_http_t *s = cls;
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t n = strlen(line);
    while (n && line[n - 1] == '\n')
        line[--n] = '\0';
    /* A client that goes away in the middle of a body (a player that seeks, or stops) is no
     * error: said as what it is. */
    static const char body[] = "Failed to send the response body for the request for `";
    const char *u = strncmp(line, body, sizeof body - 1) == 0 ? line + sizeof body - 1 : NULL;
    const char *q = u ? strchr(u, '\'') : NULL;
    if (q && (strstr(q, "no longer available") || strstr(q, "forcibly closed") ||
              strstr(q, "reset"))) {
        logf_(s, "GET %.*s: the client closed the connection before the end of the body (a seek "
              "or a stop)", (int)(q - u), u);
        return;
    }
    logf_(s, "libmicrohttpd: %s", line);
}

static void stop_workers(serve_http_t *s)
{
    pthread_mutex_lock(&s->mu);
    s->stopping = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < s->nth; i++)
        pthread_join(s->th[i], NULL);
    free(s->th);
    s->th = NULL;
    s->nth = 0;
}

serve_http_t *serve_http_start(const serve_cfg_t *cfg, lors_dir_t *files, int *port, char *err,
                               size_t errlen)
{
    serve_http_t *s = calloc(1, sizeof *s);
    if (!s) {
        lns_err_set(err, errlen, "out of memory");
        return NULL;
    }
    s->cfg = cfg;
    s->d = files;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    int max = cfg->max_connections, room = max / 4 > 8 ? max / 4 : 8;
    int per_address = cfg->max_per_address >= 0 ? cfg->max_per_address
                      : max >= 4                 ? max / 4
                                                 : 1;
    int loops = (int)sysconf(_SC_NPROCESSORS_ONLN);
    loops = loops < 2 ? 2 : loops > 8 ? 8 : loops;
    if (!(s->th = calloc((size_t)cfg->max_clients, sizeof *s->th))) {
        lns_err_set(err, errlen, "out of memory");
        return NULL;
    }
    for (; s->nth < cfg->max_clients; s->nth++)
        if (pthread_create(&s->th[s->nth], NULL, worker_main, s) != 0) {
            lns_err_set(err, errlen, "cannot start %d worker threads", cfg->max_clients);
            stop_workers(s);
            return NULL;
        }
    if (!(s->clock = lns_reqclock_start("lors_serve", cfg->log, cfg->request_timeout_s,
                                       max > 2 * room ? max - room : 0, err, errlen))) {
        stop_workers(s);
        return NULL;
    }
    /* a long listen queue holds a burst of clients while the event loops accept */
    int fd = lns_listen(cfg->listen, cfg->port, 4096, port, err, errlen);
    if (fd < 0) {
        lns_reqclock_stop(s->clock);
        stop_workers(s);
        return NULL;
    }
    /* HTTPS: libmicrohttpd's TLS (GnuTLS) with the PEM texts; else the list ends at once */
    struct MHD_OptionItem tls[] = {
        {cfg->tls_cert ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, (void *)cfg->tls_cert},
        {MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)cfg->tls_key},
        {MHD_OPTION_END, 0, NULL},
    };
    s->mhd = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
            MHD_USE_ERROR_LOG | (cfg->tls_cert ? MHD_USE_TLS : 0),
        0, NULL, NULL, on_request, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s,
        MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd, MHD_OPTION_THREAD_POOL_SIZE, (unsigned)loops,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)max, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        (unsigned)per_address, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->idle_timeout_s,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_NOTIFY_CONNECTION,
        on_connection, s, MHD_OPTION_ARRAY, tls, MHD_OPTION_END);
    if (!s->mhd) {
        close(fd);
        lns_reqclock_stop(s->clock);
        stop_workers(s);
        lns_err_set(err, errlen, "cannot start the HTTP%s server (libmicrohttpd) on port %d%s",
                 cfg->tls_cert ? "S" : "", *port,
                 cfg->tls_cert ? ": is the key the certificate's?" : "");
        return NULL;
    }
    return s;
}

void serve_http_stop(serve_http_t *s)
{
    if (!s)
        return;
    /* No new connection; then the queued jobs still run (a worker resumes each connection
     * it took) and new ones are refused: only then may the daemon stop, as it must not hold
     * a suspended connection. */
    MHD_socket fd = MHD_quiesce_daemon(s->mhd);
    if (fd != MHD_INVALID_SOCKET)
        close(fd);
    stop_workers(s);
    MHD_stop_daemon(s->mhd);
    s->mhd = NULL;
    lns_reqclock_stop(s->clock); /* after the daemon: no connection is left on it */
    s->clock = NULL;
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}
