/* lbone_srv_http.c -- the HTTP front: libmicrohttpd, routing, bodies, credentials.
 *
 * libmicrohttpd runs a fixed pool of threads, each with its own epoll loop over its share of
 * at most max-connections connections, so the number of threads and sockets is bounded
 * whatever the load.  A request's body is gathered (up to max-body; a declared
 * Content-Length above it is refused before a byte is read, a chunked one that passes the
 * limit is drained and refused at its end) and handed to one handler once complete.  Against
 * slow clients: at most max-per-address connections from one address (libmicrohttpd closes
 * the others at once), a whole request within request-timeout (lns_reqclock.c;
 * libmicrohttpd's own timeout, idle-timeout, counts only inactivity), and once all but a
 * quarter of the connections are open the oldest unfinished requests are closed to make
 * room, against slow clients from many addresses.  Routes:
 *
 *   GET  /                          status page        GET  /healthz                 "ok"
 *   GET  /v1/depots                 query              POST /v1/depots               register
 *   GET  /v1/depots/{id}            one depot          DELETE /v1/depots/{id}        delete
 *   PUT  /v1/depots/{id}/heartbeat  heartbeat          POST /v1/reports              reports
 */
#include "lbone_srv.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lns_err.h"
#include "lns_log.h"
#include "lns_net.h"
#include "lns_time.h"

#define MAX_ARGS 32

typedef struct req {
    char *body;
    size_t len, cap;
    uint64_t drained; /* bytes of an oversized body thrown away */
    int too_big;      /* 1: over the limit while reading, 2: declared over it */
} req_t;

enum kind { K_JSON, K_HTML, K_TEXT };

static enum MHD_Result send_buf(struct MHD_Connection *conn, int code, lns_buf_t *b,
                                enum kind kind, const char *allow, int close)
{
    size_t len;
    char *text = lns_buf_take(b, &len);
    struct MHD_Response *r;
    if (!text) {
        static const char oom[] = "{\"error\":\"out of memory\"}\n";
        code = 503;
        kind = K_JSON;
        r = MHD_create_response_from_buffer(sizeof oom - 1, (void *)oom, MHD_RESPMEM_PERSISTENT);
    } else if (code == 204) {
        free(text);
        r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
    } else {
        r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
        if (!r)
            free(text);
    }
    if (!r)
        return MHD_NO;
    if (code != 204)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                                kind == K_JSON   ? "application/json"
                                : kind == K_HTML ? "text/html; charset=utf-8"
                                                 : "text/plain; charset=utf-8");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    if (kind == K_HTML)
        MHD_add_response_header(r, "Content-Security-Policy",
                                "default-src 'none'; style-src 'unsafe-inline'");
    if (allow)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
    if (close)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result ok = MHD_queue_response(conn, (unsigned)code, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result send_error(struct MHD_Connection *conn, int code, const char *allow,
                                  int close, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static enum MHD_Result send_error(struct MHD_Connection *conn, int code, const char *allow,
                                  int close, const char *fmt, ...)
{
    char msg[256];
    lns_buf_t b;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    lns_buf_init(&b);
    lbone_api_error(&b, code, "%s", msg);
    return send_buf(conn, code, &b, K_JSON, allow, close);
}

/* "Bearer <token>" -> token (printable ASCII, no blanks), or NULL. */
static const char *bearer(struct MHD_Connection *conn)
{
    const char *h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return NULL;
    h += 7;
    while (*h == ' ')
        h++;
    if (!*h || strlen(h) > 512)
        return NULL;
    for (const char *p = h; *p; p++)
        if ((unsigned char)*p < 0x21 || (unsigned char)*p > 0x7e)
            return NULL;
    return h;
}

static const struct sockaddr *peer(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return ci ? ci->client_addr : NULL;
}

/* The client's address as text (IPv4-mapped IPv6 shown as IPv4), for the rate limit. */
static int peer_addr(struct MHD_Connection *conn, char *out, size_t size)
{
    const struct sockaddr *sa = peer(conn);
    if (!sa)
        return -1;
    if (sa->sa_family == AF_INET)
        return inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, out,
                         (socklen_t)size)
                   ? 0
                   : -1;
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(a))
            return inet_ntop(AF_INET, &a->s6_addr[12], out, (socklen_t)size) ? 0 : -1;
        return inet_ntop(AF_INET6, a, out, (socklen_t)size) ? 0 : -1;
    }
    return -1;
}

typedef struct args {
    lbone_kv_t kv[MAX_ARGS];
    size_t n;
    int overflow;
} args_t;

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    args_t *a = cls;
    (void)kind;
    if (a->n == MAX_ARGS) {
        a->overflow = 1;
        return MHD_NO;
    }
    a->kv[a->n].key = key;
    a->kv[a->n].value = value;
    a->n++;
    return MHD_YES;
}

/* A JSON body must say so (or say nothing). */
static int json_type_ok(struct MHD_Connection *conn)
{
    const char *ct = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (!ct)
        return 1;
    size_t n = strcspn(ct, "; ");
    return n == 16 && strncasecmp(ct, "application/json", 16) == 0;
}

static int is_id(const char *s, size_t n)
{
    if (n != LBONE_ID_LEN)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return 1;
}

static enum MHD_Result route(lbone_srv_t *s, struct MHD_Connection *conn, const char *url,
                             const char *method, req_t *rq)
{
    lns_buf_t b;
    int code, get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    char net[80];
    const char *body = rq->body ? rq->body : "";

    lns_buf_init(&b);
    if (rq->len && (strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0) &&
        !json_type_ok(conn))
        return send_error(conn, 415, NULL, 0, "the body must be application/json");
    if (lbone_client_net(peer(conn), net, sizeof net) < 0)
        snprintf(net, sizeof net, "unknown");

    if (strcmp(url, "/") == 0) {
        if (!get)
            return send_error(conn, 405, "GET, HEAD", 0, "only GET here");
        code = lbone_page_status(s, &b);
        return send_buf(conn, code, &b, K_HTML, NULL, 0);
    }
    if (strcmp(url, "/healthz") == 0) {
        if (!get)
            return send_error(conn, 405, "GET, HEAD", 0, "only GET here");
        lns_buf_puts(&b, "ok\n");
        return send_buf(conn, 200, &b, K_TEXT, NULL, 0);
    }
    if (strcmp(url, "/v1/depots") == 0) {
        if (get) {
            args_t a;
            a.n = 0;
            a.overflow = 0;
            MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, collect_arg, &a);
            if (a.overflow)
                return send_error(conn, 400, NULL, 0, "too many query parameters");
            code = lbone_api_query(s, net, a.kv, a.n, &b);
        } else if (strcmp(method, "POST") == 0) {
            code = lbone_api_register(s, bearer(conn), body, rq->len, &b);
        } else {
            return send_error(conn, 405, "GET, HEAD, POST", 0, "GET to query, POST to register");
        }
        return send_buf(conn, code, &b, K_JSON, NULL, 0);
    }
    if (strcmp(url, "/v1/reports") == 0) {
        char addr[INET6_ADDRSTRLEN];
        if (strcmp(method, "POST") != 0)
            return send_error(conn, 405, "POST", 0, "only POST here");
        if (peer_addr(conn, addr, sizeof addr) < 0 || !lbone_rl_allow(s->rl, addr, lns_mono_ms()))
            return send_error(conn, 429, NULL, 0, "too many reports from %s (at most %d a minute)",
                              addr, s->cfg->report_rate);
        code = lbone_api_reports(s, net, body, rq->len, &b);
        return send_buf(conn, code, &b, K_JSON, NULL, 0);
    }
    if (strncmp(url, "/v1/depots/", 11) == 0) {
        const char *id = url + 11, *rest = id + strcspn(id, "/");
        char idbuf[LBONE_ID_LEN + 1];
        if (!is_id(id, (size_t)(rest - id)))
            return send_error(conn, 404, NULL, 0, "no such depot id (ids are 16 hex digits)");
        memcpy(idbuf, id, LBONE_ID_LEN);
        idbuf[LBONE_ID_LEN] = 0;
        if (!*rest) {
            if (get)
                code = lbone_api_depot(s, idbuf, &b);
            else if (strcmp(method, "DELETE") == 0)
                code = lbone_api_delete(s, idbuf, bearer(conn), &b);
            else
                return send_error(conn, 405, "GET, HEAD, DELETE", 0, "GET or DELETE here");
            return send_buf(conn, code, &b, K_JSON, NULL, 0);
        }
        if (strcmp(rest, "/heartbeat") == 0) {
            if (strcmp(method, "PUT") != 0)
                return send_error(conn, 405, "PUT", 0, "only PUT here");
            code = lbone_api_heartbeat(s, idbuf, bearer(conn), body, rq->len, &b);
            return send_buf(conn, code, &b, K_JSON, NULL, 0);
        }
    }
    return send_error(conn, 404, NULL, 0, "no such resource (see lbone-api.md)");
}

/* The connection's request clock (NULL if it could not have one). */
static lns_reqclock_conn_t *clock_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    lbone_srv_t *s = cls;
    req_t *rq = *con_cls;
    (void)version;

    if (!rq) {
        const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                     MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (!(rq = calloc(1, sizeof *rq)))
            return MHD_NO;
        *con_cls = rq;
        if (cl && strtoull(cl, NULL, 10) > s->cfg->max_body) {
            rq->too_big = 2;
            lns_reqclock_received(s->deadline, clock_of(conn)); /* answered and closed */
            return send_error(conn, 413, NULL, 1, "body larger than %llu bytes",
                              (unsigned long long)s->cfg->max_body);
        }
        return MHD_YES;
    }
    if (*upload_data_size) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        /* libmicrohttpd cannot answer in the middle of a body: an oversized (chunked)
         * body is drained and answered 413 at its end, but one that goes on past 16 times
         * the limit is cut off by closing the connection. */
        if (n > s->cfg->max_body - rq->len || rq->too_big) {
            rq->too_big = 1;
            free(rq->body);
            rq->body = NULL;
            rq->cap = 0;
            rq->drained += n;
            return rq->drained > 16 * s->cfg->max_body ? MHD_NO : MHD_YES;
        }
        if (rq->len + n + 1 > rq->cap) {
            size_t cap = rq->cap ? rq->cap : 1024;
            while (cap < rq->len + n + 1)
                cap *= 2;
            char *p = realloc(rq->body, cap);
            if (!p)
                return MHD_NO;
            rq->body = p;
            rq->cap = cap;
        }
        memcpy(rq->body + rq->len, upload_data, n);
        rq->len += n;
        rq->body[rq->len] = 0;
        return MHD_YES;
    }
    if (rq->too_big == 2)
        return MHD_YES; /* answered before the body was read */
    lns_reqclock_received(s->deadline, clock_of(conn));
    if (rq->too_big)
        return send_error(conn, 413, NULL, 1, "body larger than %llu bytes",
                          (unsigned long long)s->cfg->max_body);
    return route(s, conn, url, method, rq);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    lbone_srv_t *s = cls;
    req_t *rq = *con_cls;
    (void)toe;
    if (rq) {
        free(rq->body);
        free(rq);
        *con_cls = NULL;
    }
    lns_reqclock_next(s->deadline, clock_of(conn));
}

/* Opened: its request clock starts (without memory for one, it is shut down at once).
 * Closed: libmicrohttpd tells us before it closes the socket. */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    lbone_srv_t *s = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!ci)
            return;
        *socket_context = lns_reqclock_open(s->deadline, ci->connect_fd);
        if (!*socket_context)
            shutdown(ci->connect_fd, SHUT_RDWR);
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        lns_reqclock_close(s->deadline, *socket_context);
        *socket_context = NULL;
    }
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512];
    (void)cls;
    vsnprintf(msg, sizeof msg, fmt, ap);
    msg[strcspn(msg, "\n")] = 0;
    lns_log(LNS_LOG_DEBUG, "http: %s", msg);
}

int lbone_http_start(lbone_srv_t *s, char *err, size_t errlen)
{
    int port = 0;
    /* The oldest unfinished requests make room once all but a quarter of the connections
     * are open, so that a flood of slow clients from any number of addresses leaves slots
     * to the clients that send their requests at once. */
    int max = s->cfg->max_connections, room = max / 4 > 8 ? max / 4 : 8;
    if (!(s->deadline = lns_reqclock_start("http", NULL, s->cfg->request_timeout_s,
                                           max > 2 * room ? max - room : 0, err, errlen)))
        return -1;
    /* A long listen queue holds the clients that wait for a slot instead of refusing them. */
    int fd = lns_listen(s->cfg->listen, s->cfg->port, 4096, &port, err, errlen);
    if (fd < 0) {
        lns_reqclock_stop(s->deadline);
        s->deadline = NULL;
        return -1;
    }
    /* HTTPS: libmicrohttpd's TLS with the PEM texts; else the list ends at once */
    struct MHD_OptionItem tls[] = {
        {s->tls_cert ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, s->tls_cert},
        {MHD_OPTION_HTTPS_MEM_KEY, 0, s->tls_key},
        {MHD_OPTION_END, 0, NULL},
    };
    s->mhd = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG |
            (s->tls_cert ? MHD_USE_TLS : 0), 0, NULL, NULL,
        on_request, s, MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd, MHD_OPTION_THREAD_POOL_SIZE,
        (unsigned)s->cfg->threads, MHD_OPTION_CONNECTION_LIMIT, (unsigned)s->cfg->max_connections,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)s->cfg->max_per_address,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)s->cfg->idle_timeout_s,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_NOTIFY_CONNECTION,
        on_connection, s, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL, MHD_OPTION_ARRAY, tls,
        MHD_OPTION_END);
    if (!s->mhd) {
        close(fd);
        lns_reqclock_stop(s->deadline);
        s->deadline = NULL;
        lns_err_set(err, errlen, "cannot start the HTTP server (libmicrohttpd) on port %d", port);
        return -1;
    }
    s->port = port;
    return 0;
}

void lbone_http_stop(lbone_srv_t *s)
{
    if (s->mhd) {
        MHD_stop_daemon(s->mhd);
        s->mhd = NULL;
    }
    lns_reqclock_stop(s->deadline); /* after the daemon: no connection is left on it */
    s->deadline = NULL;
}
