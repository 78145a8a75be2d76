/* depot_server.c -- listening, accepting, and the life of one connection.
 *
 * One detached thread per connection (256 KiB stack), written as blocking code over a
 * non-blocking socket: every wait is a poll() with a timeout (lns_net), so no client can hold
 * a thread forever.  The waits are: the idle timeout between requests (also woken by the
 * shutdown pipe), the header timeout once a request line has started, and the request's own
 * server timeout during its data phase.  The accept loop counts connections and answers
 * "-66 5" beyond --max-connections.
 *
 * Shutdown: the accept loop stops, the wake pipe becomes readable so idle connections close
 * at once, requests in progress get a few seconds, then their sockets are shut down.
 */
#include "depot.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lns_err.h"
#include "lns_log.h"
#include "lns_time.h"
#include "lns_tls.h"

#define CONN_STACK (256 * 1024)
#define CONN_RBUF (16 * 1024)
#define DRAIN_MS 5000
#define LINGER_MS 2000
#define LINGER_BYTES (1024 * 1024)

int depot_server_listen(depot_server_t *srv, char *err, size_t errlen)
{
    int p[2];
    srv->listen_fd = lns_listen(srv->cfg->listen, srv->cfg->port, 4096, &srv->port, err, errlen);
    if (srv->listen_fd < 0)
        return -1;
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) {
        lns_err_set(err, errlen, "pipe: %s", strerror(errno));
        close(srv->listen_fd);
        return -1;
    }
    srv->wake_rd = p[0];
    srv->wake_wr = p[1];
    srv->senders = depot_senders_new();
    if (!srv->senders) {
        lns_err_set(err, errlen, "out of memory");
        close(p[0]);
        close(p[1]);
        close(srv->listen_fd);
        return -1;
    }
    pthread_mutex_init(&srv->conn_mu, NULL);
    pthread_cond_init(&srv->conn_cv, NULL);
    return 0;
}

int depot_conn_timeout_ms(const depot_conn_t *c, int t)
{
    return depot_timeout_ms(t, c->srv->cfg->max_timeout);
}

int depot_reply(depot_conn_t *c, int flags, const char *fmt, ...)
{
    char buf[IBP_MAX_CAP * 3 + 64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof buf)
        n = (int)sizeof buf - 1;
    int t = depot_timeout_ms(c->srv->cfg->max_timeout, c->srv->cfg->max_timeout);
    if (lns_write_full(c->fd, buf, (size_t)n, flags, t, INT64_MAX) < 0) {
        c->close = 1;
        return -1;
    }
    return 0;
}

int depot_reply_err(depot_conn_t *c, int err)
{
    depot_reply(c, 0, "%d \n", err);
    return err;
}

/* ---- one connection -------------------------------------------------------------------- */

static const char *cmd_name(const ibp_req_t *req)
{
    switch (req->cmd) {
    case IBP_CMD_ALLOCATE: return "ALLOCATE";
    case IBP_CMD_STORE: return "STORE";
    case IBP_CMD_WRITE: return "WRITE";
    case IBP_CMD_LOAD: return "LOAD";
    case IBP_CMD_VEC_WRITE: return "VEC_WRITE";
    case IBP_CMD_VEC_READ: return "VEC_READ";
    case IBP_CMD_SEND: return "SEND";
    case IBP_CMD_STATUS: return req->subcmd == IBP_ST_CHANGE ? "STATUS_CHANGE" : "STATUS";
    case DEPOT_CMD_ALIAS_ALLOCATE: return "ALIAS_ALLOCATE";
    case DEPOT_CMD_ALIAS_MANAGE: return "ALIAS_MANAGE";
    case DEPOT_CMD_RENAME: return "RENAME";
    case DEPOT_CMD_SPLIT: return "SPLIT";
    case DEPOT_CMD_MERGE: return "MERGE";
    case DEPOT_CMD_PUSH: return "PUSH";
    case DEPOT_CMD_PULL: return "PULL";
    case IBP_CMD_MANAGE:
        switch (req->subcmd) {
        case IBP_PROBE: return "PROBE";
        case IBP_INCR: return "INCR";
        case IBP_DECR: return "DECR";
        case IBP_CHNG: return "CHNG";
        case IBP_TRUNCATE: return "TRUNCATE";
        default: return "MANAGE";
        }
    default: return "INVALID";
    }
}

static void event(depot_conn_t *c, const ibp_req_t *req, int64_t t0, int result)
{
    char alloc[24] = "-";
    if (c->ev_alloc)
        snprintf(alloc, sizeof alloc, "%016llx", (unsigned long long)c->ev_alloc);
    lns_event("IBP_REQ", "client=%s cmd=%s alloc=%s off=%llu len=%llu bytes=%llu dur_us=%lld result=%d",
              c->peer, cmd_name(req), alloc, (unsigned long long)req->offset,
              (unsigned long long)(req->cmd == IBP_CMD_ALLOCATE ? req->size : req->length),
              (unsigned long long)c->ev_bytes, (long long)((lns_mono_ns() - t0) / 1000), result);
}

/* Wait for the first byte of the next request: 1 ready, 0 close quietly. */
static int wait_request(depot_conn_t *c)
{
    if (lns_rbuf_pending(&c->rb) > 0 || lns_sock_pending(c->fd) > 0)
        return 1;
    struct pollfd p[2] = {{.fd = c->fd, .events = POLLIN}, {.fd = c->srv->wake_rd, .events = POLLIN}};
    int64_t deadline = lns_deadline_ms(c->srv->cfg->idle_timeout * 1000);
    for (;;) {
        int rc = poll(p, 2, lns_ms_left(deadline));
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc <= 0)
            return 0; /* idle timeout: close without a word */
        if (p[0].revents)
            return 1;
        return 0; /* shutting down */
    }
}

static void serve(depot_conn_t *c)
{
    const depot_config_t *cfg = c->srv->cfg;
    ibp_req_t req;

    while (!c->close && !atomic_load(&c->srv->stopping) && wait_request(c)) {
        char *line;
        size_t len;
        int hdr_ms = cfg->header_timeout * 1000;
        int rc = lns_rbuf_readline(&c->rb, &line, &len, IBP_MAX_REQ_LINE, hdr_ms, hdr_ms,
                                   lns_deadline_ms(hdr_ms));
        if (rc == 0)
            break;
        int64_t t0 = lns_mono_ns();
        c->ev_alloc = 0;
        c->ev_bytes = 0;
        if (rc < 0 && errno != EMSGSIZE) {
            lns_log(LNS_LOG_DEBUG, "%s: request line: %s", c->peer,
                    errno == ETIMEDOUT ? "header timeout" : strerror(errno));
            break; /* a slow or broken client: no lingering for it */
        }
        if (rc < 0) { /* EMSGSIZE: an overlong line */
            memset(&req, 0, sizeof req);
            req.cmd = -1;
            rc = IBP_E_BAD_FORMAT;
        } else if (depot_chksum_request(line, len)) { /* 22-32, 34, 36: depot_chksum.c */
            rc = depot_cmd_chksum(c, line, len, &req);
            if (lns_event_sampled())
                event(c, &req, t0, rc);
            continue;
        } else if (depot_alias_request(line, len) || depot_accre_request(line, len)) {
            /* 14, 15: depot_alias.c; 16, 18-21: depot_cmd_accre.c */
            rc = depot_alias_request(line, len) ? depot_cmd_alias(c, line, len, &req)
                                                : depot_cmd_accre(c, line, len, &req);
            if (lns_event_sampled())
                event(c, &req, t0, rc);
            continue;
        } else {
            rc = ibp_req_parse(line, len, &req);
        }
        if (rc != IBP_OK) {
            depot_reply_err(c, rc);
            if (rc == IBP_E_BAD_FORMAT || rc == IBP_E_INVALID_CMD || rc == IBP_E_PROT_VERS ||
                req.cmd == IBP_CMD_STORE || req.cmd == IBP_CMD_WRITE || req.cmd == IBP_CMD_VEC_WRITE)
                c->close = 1;
        } else {
            rc = depot_cmd_run(c, &req);
        }
        if (lns_event_sampled())
            event(c, &req, t0, rc);
    }
}

static void conn_unlink(depot_conn_t *c)
{
    depot_server_t *srv = c->srv;
    pthread_mutex_lock(&srv->conn_mu);
    if (c->prev)
        c->prev->next = c->next;
    else
        srv->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    srv->nconns--;
    pthread_cond_broadcast(&srv->conn_cv);
    pthread_mutex_unlock(&srv->conn_mu);
}

/* We end the conversation: send FIN and read what the client still sends for a moment, so
 * that closing with unread bytes does not turn into a reset that destroys our last reply. */
static void linger_close(depot_conn_t *c)
{
    char buf[4096];
    size_t total = 0;
    int64_t deadline = lns_deadline_ms(LINGER_MS);
    shutdown(c->fd, SHUT_WR);
    while (total < LINGER_BYTES) {
        ssize_t r = lns_read_some(c->fd, buf, sizeof buf, LINGER_MS, deadline);
        if (r <= 0)
            break;
        total += (size_t)r;
    }
}

/* The first byte tells a TLS ClientHello (a handshake record, 0x16) from a plain IBP request
 * (a digit), so one port serves both.  1: serve the connection (sealed or plain), 0: close
 * it (idle, a failed handshake, or plaintext refused and answered). */
static int open_conn(depot_conn_t *c)
{
    const depot_config_t *cfg = c->srv->cfg;
    unsigned char b;
    char err[512];
    if (!c->srv->tls_ctx || !wait_request(c))
        return c->srv->tls_ctx ? 0 : 1;
    ssize_t r;
    while ((r = recv(c->fd, &b, 1, MSG_PEEK)) < 0 && errno == EINTR)
        ;
    if (r <= 0)
        return 0;
    if (b == 0x16) {
        int ms = cfg->header_timeout * 1000;
        if (lns_tls_accept(c->srv->tls_ctx, c->fd, ms, lns_deadline_ms(ms), err, sizeof err) < 0) {
            lns_log(LNS_LOG_INFO, "%s: %s", c->peer, err);
            return 0;
        }
        return 1;
    }
    if (cfg->plaintext_refuse) {
        lns_log(LNS_LOG_INFO, "%s: plain IBP refused (--plaintext refuse): answered %d",
                c->peer, IBP_E_CAP_ACCESS_DENIED);
        depot_reply_err(c, IBP_E_CAP_ACCESS_DENIED);
        linger_close(c);
        return 0;
    }
    return 1;
}

static void *conn_main(void *arg)
{
    depot_conn_t *c = arg;
    lns_peer_name(c->fd, c->peer, sizeof c->peer);
    if (lns_rbuf_init(&c->rb, c->fd, CONN_RBUF) == 0 && open_conn(c)) {
        serve(c);
        if (c->close)
            linger_close(c);
    }
    lns_rbuf_free(&c->rb);
    free(c->dbuf);
    /* The seal and this thread's OpenSSL state go before the depot may stop: the last
     * conn_unlink lets it exit, while this detached thread may still be on its way out. */
    lns_tls_drop(c->fd);
    lns_tls_thread_end();
    conn_unlink(c);
    close(c->fd);
    free(c);
    return NULL;
}

/* ---- accepting --------------------------------------------------------------------------- */

static void refuse(int fd)
{
    static const char busy[] = "-66 5\n";
    ssize_t w = send(fd, busy, sizeof busy - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)w;
    close(fd);
}

/* 1 if a connection was taken (served or refused), 0 if there was none or accept failed. */
static int accept_one(depot_server_t *srv, pthread_attr_t *attr)
{
    int fd = accept4(srv->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE) {
            lns_log(LNS_LOG_WARN, "accept: %s", strerror(errno));
            usleep(10000); /* let connections close; the backlog keeps the rest */
        }
        return 0;
    }
    lns_set_nodelay(fd);
    pthread_mutex_lock(&srv->conn_mu);
    if (srv->nconns >= srv->cfg->max_connections) {
        pthread_mutex_unlock(&srv->conn_mu);
        refuse(fd);
        return 1;
    }
    depot_conn_t *c = calloc(1, sizeof *c);
    if (!c) {
        pthread_mutex_unlock(&srv->conn_mu);
        refuse(fd);
        return 1;
    }
    c->srv = srv;
    c->fd = fd;
    c->next = srv->conns;
    if (srv->conns)
        srv->conns->prev = c;
    srv->conns = c;
    srv->nconns++;
    pthread_mutex_unlock(&srv->conn_mu);

    pthread_t t;
    if (pthread_create(&t, attr, conn_main, c) != 0) {
        lns_log(LNS_LOG_WARN, "cannot start a connection thread; refusing");
        conn_unlink(c);
        free(c);
        refuse(fd);
    }
    return 1;
}

/* Stop: wake idle connections, give requests in progress DRAIN_MS, then cut them off. */
static void drain(depot_server_t *srv)
{
    int64_t deadline = lns_mono_ms() + DRAIN_MS;
    atomic_store(&srv->stopping, 1);
    depot_wait_close(srv->store);
    ssize_t w = write(srv->wake_wr, "x", 1);
    (void)w;
    pthread_mutex_lock(&srv->conn_mu);
    while (srv->nconns > 0) {
        if (lns_mono_ms() >= deadline) {
            lns_log(LNS_LOG_WARN, "shutdown: %d connections still busy after %d ms: cut off",
                    srv->nconns, DRAIN_MS);
            for (depot_conn_t *c = srv->conns; c; c = c->next)
                shutdown(c->fd, SHUT_RDWR);
            deadline = INT64_MAX;
        }
        struct timespec ts;
        lns_cond_deadline(&ts, 100 * 1000000LL);
        pthread_cond_timedwait(&srv->conn_cv, &srv->conn_mu, &ts);
    }
    pthread_mutex_unlock(&srv->conn_mu);
}

int depot_server_run(depot_server_t *srv, int sigfd)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, CONN_STACK);

    for (;;) {
        struct pollfd p[2] = {{.fd = srv->listen_fd, .events = POLLIN},
                              {.fd = sigfd, .events = POLLIN}};
        int rc = poll(p, 2, -1);
        if (rc < 0) {
            if (errno == EINTR)
                continue;
            lns_log(LNS_LOG_ERROR, "poll: %s", strerror(errno));
            break;
        }
        if (p[1].revents) {
            struct signalfd_siginfo si;
            if (read(sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
                if (si.ssi_signo == SIGHUP) {
                    lns_log(LNS_LOG_INFO, "SIGHUP ignored (restart to apply new settings)");
                    continue;
                }
                lns_log(LNS_LOG_INFO, "signal %d: shutting down", (int)si.ssi_signo);
            }
            break;
        }
        if (p[0].revents)
            for (int i = 0; i < 64 && accept_one(srv, &attr); i++)
                ; /* a burst without polling between */
    }
    pthread_attr_destroy(&attr);
    close(srv->listen_fd);
    srv->listen_fd = -1;
    drain(srv);
    depot_senders_free(srv->senders); /* no SEND is left running */
    srv->senders = NULL;
    close(srv->wake_rd);
    close(srv->wake_wr);
    pthread_cond_destroy(&srv->conn_cv);
    pthread_mutex_destroy(&srv->conn_mu);
    return 0;
}
