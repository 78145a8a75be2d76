/* ibp_call.c -- one request/reply exchange over a pooled connection.
 *
 * The retry rule: a depot closes idle connections without a word, so a request sent on a
 * connection from the pool may meet a socket the depot has already closed.  When that
 * happens before the first byte of a reply (the write fails with EPIPE/reset, or the read
 * sees EOF/reset with nothing buffered), the depot has not acted on the request; the
 * exchange is repeated once on a new connection.  So is one answered "-66": an ACCRE depot
 * writes that line when it closes a connection (idle, or after an error), and it may arrive
 * after the pool's check, so on a reused connection it is the parting word, not the reply.
 * Nothing else is retried: timeouts, "-66" on a new connection (the depot asks us to back
 * off), errors on new connections and failures after reply bytes arrived go to the caller,
 * and the connection is closed, because it can no longer be trusted to be in step.
 *
 * Version detection (ibp_version.c): while a depot's version is unknown the request goes in
 * version 1; a fresh connection closed before any reply byte (what a LoCI 1.3 depot does with
 * a version-1 line) or a -27/-25 reply sends the caller back to build it in version 0.  The
 * first real answer teaches the client the depot's version.
 *
 * A call made with an ibp_intr_t can be interrupted from another thread (a LOAD that lost a
 * race, or whose depot stopped answering): the abort shuts the socket down, and an EOF that
 * follows an abort is never retried.
 *
 * An error reply is a complete exchange too: the depot keeps the connection open after
 * it (docs/ibp-protocol.md), except after STORE/WRITE and after -21, -25, -27 and -66,
 * so for the other commands the connection goes back to the pool.
 */
#include "ibp_client_int.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int ibp_sock_err(int err, int writing)
{
    if (err == ETIMEDOUT)
        return IBP_E_CLIENT_TIMEOUT;
    return writing ? IBP_E_SOCK_WRITE : IBP_E_SOCK_READ;
}

int ibp_call_cap(const char *s, ibp_captype kind, ibp_cap_t *cap)
{
    if (!s || ibp_cap_parse(s, cap) != IBP_OK)
        return IBP_E_WRONG_CAP_FORMAT;
    if (kind == 0 || cap->type == kind)
        return IBP_OK;
    switch (kind) {
    case IBP_READCAP:
        return IBP_E_INVALID_READ_CAP;
    case IBP_WRITECAP:
        return IBP_E_INVALID_WRITE_CAP;
    default:
        return IBP_E_INVALID_MANAGE_CAP;
    }
}

void ibp_call_req_cap(ibp_req_t *req, const ibp_cap_t *cap)
{
    memcpy(req->rid, cap->rid, sizeof req->rid);
    memcpy(req->key, cap->key, sizeof req->key);
    memcpy(req->typekey, cap->typekey, sizeof req->typekey);
}

/* Split a reply line and check its status field.  IBP_OK, the depot's negative code, or
 * IBP_E_BAD_FORMAT. */
static int parse_status(ibp_reply_t *rep, const char *line, size_t len)
{
    int64_t st;
    while (len > 0 && line[len - 1] == '\r')
        len--;
    if (len >= sizeof rep->line || memchr(line, 0, len))
        return IBP_E_BAD_FORMAT;
    memcpy(rep->line, line, len);
    rep->line[len] = 0;
    rep->nf = ibp_split_fields(rep->line, rep->f, IBP_REPLY_FIELDS);
    if (rep->nf < 1 || ibp_parse_i64(rep->f[0], strlen(rep->f[0]), &st) < 0)
        return IBP_E_BAD_FORMAT;
    if (st == IBP_OK)
        return IBP_OK;
    if (st < 0 && st > -1000) {
        rep->status = (int)st;
        return (int)st;
    }
    return IBP_E_BAD_FORMAT;
}

/* Read a reply line.  *early is set when the connection ended before any byte of it. */
static int read_reply_line(ibp_client_t *c, ibp_conn_t *conn, int wait_ms, ibp_reply_t *rep,
                           int *early)
{
    char *line;
    size_t len;
    int rc = lns_rbuf_readline(&conn->rb, &line, &len, IBP_MAX_LINE, wait_ms,
                               c->idle_ms, INT64_MAX);
    *early = 0;
    if (rc == 0) {
        *early = 1;
        return IBP_E_SOCK_READ;
    }
    if (rc < 0) {
        if (errno == EMSGSIZE)
            return IBP_E_BAD_FORMAT;
        if (errno == ECONNRESET && lns_rbuf_pending(&conn->rb) == 0)
            *early = 1;
        return ibp_sock_err(errno, 0);
    }
    return parse_status(rep, line, len);
}

/* Version-0 STATUS: bytes up to a NUL (LoCI), a newline (ACCRE) or the end of the connection,
 * as one line. */
static int read_until_nul(ibp_client_t *c, ibp_conn_t *conn, int wait_ms, ibp_reply_t *rep,
                          int *early)
{
    size_t n = lns_rbuf_take(&conn->rb, rep->line, sizeof rep->line - 1);
    *early = 0;
    for (;;) {
        char *nul = memchr(rep->line, 0, n);
        char *nl = memchr(rep->line, '\n', n);
        if (nl && (!nul || nl < nul))
            nul = nl;
        if (nul) {
            n = (size_t)(nul - rep->line);
            break;
        }
        if (n == sizeof rep->line - 1)
            return IBP_E_BAD_FORMAT;
        ssize_t r = lns_read_some(conn->fd, rep->line + n, sizeof rep->line - 1 - n,
                                  n == 0 ? wait_ms : c->idle_ms, INT64_MAX);
        if (r == 0)
            break;
        if (r < 0) {
            if (n == 0 && errno == ECONNRESET)
                *early = 1;
            return ibp_sock_err(errno, 0);
        }
        n += (size_t)r;
    }
    if (n == 0) {
        *early = 1;
        return IBP_E_SOCK_READ;
    }
    rep->line[n] = 0;
    rep->nf = ibp_split_fields(rep->line, rep->f, IBP_REPLY_FIELDS);
    return rep->nf < 1 ? IBP_E_BAD_FORMAT : IBP_OK;
}

/* *early: the depot ended the connection before any byte of a reply. */
static int call_once(ibp_client_t *c, ibp_conn_t *conn, const char *req, size_t len, int flags,
                     int wait_ms, ibp_reply_t *rep, int *early)
{
    int rc;
    *early = 0;
    rep->status = 0;
    if (lns_write_full(conn->fd, req, len, 0, c->idle_ms, INT64_MAX) < 0) {
        int e = errno;
        *early = e == EPIPE || e == ECONNRESET;
        return ibp_sock_err(e, 1);
    }
    if (flags & IBP_CALL_UNTIL_NUL)
        rc = read_until_nul(c, conn, wait_ms, rep, early);
    else
        rc = read_reply_line(c, conn, wait_ms, rep, early);
    return rc;
}

/* After the depot answered err: is the connection still in step? */
static int open_after_error(const ibp_conn_t *conn, int flags, int err)
{
    if (!(flags & IBP_CALL_KEEP_ON_ERROR) || (flags & IBP_CALL_UNTIL_NUL) ||
        lns_rbuf_pending(&conn->rb) > 0)
        return 0;
    return err != IBP_E_BAD_FORMAT && err != IBP_E_INVALID_CMD && err != IBP_E_PROT_VERS &&
           err != IBP_E_OUT_OF_SOCKETS;
}

void ibp_intr_init(ibp_intr_t *i)
{
    pthread_mutex_init(&i->mu, NULL);
    i->fd = -1;
    i->aborted = 0;
}

void ibp_intr_destroy(ibp_intr_t *i)
{
    pthread_mutex_destroy(&i->mu);
}

int ibp_intr_attach(ibp_intr_t *i, int fd)
{
    pthread_mutex_lock(&i->mu);
    int ok = !i->aborted;
    if (ok)
        i->fd = fd;
    pthread_mutex_unlock(&i->mu);
    return ok ? 0 : -1;
}

void ibp_intr_detach(ibp_intr_t *i)
{
    pthread_mutex_lock(&i->mu);
    i->fd = -1;
    pthread_mutex_unlock(&i->mu);
}

/* The fd stays open while attached (the caller detaches before closing it), so the
 * shutdown never reaches a descriptor number that has been reused. */
void ibp_intr_abort(ibp_intr_t *i)
{
    pthread_mutex_lock(&i->mu);
    i->aborted = 1;
    if (i->fd >= 0)
        shutdown(i->fd, SHUT_RDWR);
    pthread_mutex_unlock(&i->mu);
}

int ibp_intr_aborted(ibp_intr_t *i)
{
    pthread_mutex_lock(&i->mu);
    int a = i->aborted;
    pthread_mutex_unlock(&i->mu);
    return a;
}

int ibp_call_begin_intr(ibp_client_t *c, const char *host, int port, ibp_vsel_t *vs,
                        const char *req, size_t len, int flags, int reply_wait_ms,
                        ibp_intr_t *intr, ibp_conn_t **out, ibp_reply_t *rep)
{
    int rc, early = 0, retry, again = 0;
    if (reply_wait_ms < 0)
        reply_wait_ms = c->idle_ms;
    for (int attempt = 0; attempt < 2; attempt++) {
        ibp_conn_t *conn;
        rc = ibp_pool_get(c->pool, host, port, attempt == 0, c->o.connect_timeout_ms, intr,
                          &conn);
        if (rc != IBP_OK)
            return rc;
        if (conn->reused && !ibp_tls_reusable(c, conn)) {
            /* opened in plaintext before the depot's pin was known, or sealed to a key
             * this thread's call does not accept: not for what follows */
            ibp_conn_close(conn);
            rc = ibp_pool_get(c->pool, host, port, 0, c->o.connect_timeout_ms, intr, &conn);
            if (rc != IBP_OK)
                return rc;
        }
        /* a fresh connection is still attached to intr from its connect: detached before
         * it is closed or pooled, or an abort later would shut down whatever socket took
         * its number (ibp_intr_abort) */
        if (!conn->opened) {
            conn->opened = 1;
            if ((rc = ibp_tls_open(c, conn)) != IBP_OK) {
                if (intr)
                    ibp_intr_detach(intr);
                ibp_conn_close(conn); /* nothing was sent on it */
                return rc;
            }
        }
        if (intr && ibp_intr_attach(intr, conn->fd) < 0) {
            ibp_intr_detach(intr);
            ibp_pool_put(c->pool, conn); /* nothing was sent on it */
            return IBP_E_SOCK_READ;
        }
        rc = call_once(c, conn, req, len, flags, reply_wait_ms, rep, &early);
        /* A closed pooled connection, or the "-66" an ACCRE depot writes as it closes one
         * (it may arrive after the pool's liveness check): the request was not acted on. */
        retry = conn->reused && (early || rep->status == IBP_E_OUT_OF_SOCKETS);
        /* A fresh connection dropped before any reply byte, or a version error: an old depot
         * that does not speak version 1. */
        again = vs->detect == 1 && !retry &&
                ((early && !conn->reused) || rep->status == IBP_E_PROT_VERS ||
                 rep->status == IBP_E_INVALID_CMD);
        if (vs->detect && !retry && !again && (rc == IBP_OK || rc == rep->status))
            ibp_version_learn(c, host, port, vs->version);
        if (rc == IBP_OK) {
            *out = conn;
            return IBP_OK;
        }
        if (intr) {
            ibp_intr_detach(intr);
            if (ibp_intr_aborted(intr))
                retry = again = 0; /* the EOF was ours */
        }
        if (rc < 0 && rc == rep->status && open_after_error(conn, flags, rc) &&
            !(intr && ibp_intr_aborted(intr)))
            ibp_pool_put(c->pool, conn);
        else
            ibp_conn_close(conn);
        if (!retry)
            break;
    }
    if (again) {
        vs->version = 0;
        vs->detect = 2;
        return IBP_CALL_AGAIN_V0;
    }
    return rc;
}

int ibp_call_begin(ibp_client_t *c, const char *host, int port, ibp_vsel_t *vs, const char *req,
                   size_t len, int flags, int reply_wait_ms, ibp_conn_t **out, ibp_reply_t *rep)
{
    return ibp_call_begin_intr(c, host, port, vs, req, len, flags, reply_wait_ms, NULL, out,
                               rep);
}

int ibp_call_line(ibp_client_t *c, ibp_conn_t *conn, ibp_reply_t *rep)
{
    int early;
    int rc = read_reply_line(c, conn, c->idle_ms, rep, &early);
    if (rc != IBP_OK)
        ibp_conn_close(conn);
    return rc;
}

int ibp_call_finish(ibp_client_t *c, int rc, ibp_conn_t *conn, const ibp_reply_t *rep,
                    ibp_reply_parser parse, void *out)
{
    if (rc != IBP_OK)
        return rc;
    if (parse && (rc = parse(rep, out)) != IBP_OK) {
        ibp_conn_close(conn);
        return rc;
    }
    ibp_call_end(c, conn);
    return IBP_OK;
}

int ibp_reply_ack(const ibp_reply_t *rep, void *out)
{
    (void)out;
    return rep->nf == 1 ? IBP_OK : IBP_E_BAD_FORMAT;
}

void ibp_call_end(ibp_client_t *c, ibp_conn_t *conn)
{
    ibp_pool_put(c->pool, conn);
}
