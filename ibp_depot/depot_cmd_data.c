/* depot_cmd_data.c -- the commands that move bytes: STORE, WRITE, LOAD and SEND.
 *
 * An allocation's bytes are at (fd, base): a slot of a slab file or its own file
 * (depot_data_open); byte i of the allocation is byte base + i of fd.  Incoming bytes take
 * one copy: from the socket into a buffer (the connection's read buffer for what came with
 * the request line, its data buffer for the rest), then pwrite() into the file.  Outgoing
 * bytes take none: the reply line goes out with MSG_MORE and the data follows with
 * sendfile(), so both leave in full segments.  A STORE is acknowledged only after its bytes
 * are in the file and its new size is committed (depot_write_commit).
 */
#include "depot.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lns_io.h"
#include "lns_log.h"
#include "lns_time.h"

#define DATA_CHUNK (256 * 1024)

/* Move len bytes from the client to fd at off.  IBP_OK, IBP_E_SOCK_READ (the client broke
 * off or timed out) or IBP_E_FILE_WRITE. */
static int recv_to_file(depot_conn_t *c, int fd, uint64_t off, uint64_t len, int timeout_ms)
{
    lns_rbuf_t *rb = &c->rb;
    uint64_t done = 0;

    /* Bytes that arrived with the request line: write them straight from the read buffer. */
    const char *early;
    size_t have = lns_rbuf_peek(rb, &early);
    if (have > 0) {
        size_t n = have < len ? have : (size_t)len;
        if (lns_pwrite_all(fd, early, n, off) < 0)
            return IBP_E_FILE_WRITE;
        lns_rbuf_consume(rb, n);
        done = n;
    }
    if (done < len) {
        size_t want = len - done > DATA_CHUNK ? DATA_CHUNK : (size_t)(len - done);
        if (c->dcap < want) {
            char *nb = realloc(c->dbuf, want);
            if (!nb)
                return IBP_E_INTERNAL;
            c->dbuf = nb;
            c->dcap = want;
        }
    }
    while (done < len) {
        size_t want = len - done > c->dcap ? c->dcap : (size_t)(len - done);
        ssize_t r = lns_read_some(c->fd, c->dbuf, want, timeout_ms, INT64_MAX);
        if (r <= 0)
            return IBP_E_SOCK_READ;
        if (lns_pwrite_all(fd, c->dbuf, (size_t)r, off + done) < 0)
            return IBP_E_FILE_WRITE;
        done += (uint64_t)r;
    }
    return IBP_OK;
}

int depot_cmd_store(depot_conn_t *c, const ibp_req_t *req)
{
    depot_alloc_t *a;
    depot_data_t d;
    uint64_t at = 0;
    int kind, rc;
    int tmo = depot_conn_timeout_ms(c, req->timeout);

    /* Any failure before the data is in closes the connection: we cannot tell whether the
     * client already sent it behind the request line. */
    rc = depot_store_lookup(c->srv->store, req->rid, req->key, req->typekey, &a, &kind);
    if (rc != IBP_OK) {
        c->close = 1;
        return depot_reply_err(c, rc);
    }
    c->ev_alloc = a->r.id;
    if (kind != DEPOT_WRITE) {
        rc = IBP_E_CAP_NOT_WRITE;
        goto fail;
    }
    rc = depot_write_begin(a, req->cmd == IBP_CMD_STORE ? UINT64_MAX : req->offset, req->length,
                           &at, &d);
    if (rc != IBP_OK)
        goto fail;
    if (depot_reply(c, 0, "1 \n") < 0) {
        depot_write_abort(a, &d);
        depot_alloc_release(a);
        return IBP_E_SOCK_WRITE;
    }
    rc = recv_to_file(c, d.fd, d.base + at, req->length, tmo);
    if (rc != IBP_OK) {
        depot_write_abort(a, &d);
        depot_alloc_release(a);
        c->close = 1;
        if (rc == IBP_E_SOCK_READ) {
            lns_log(LNS_LOG_INFO, "%s: %016llx: client stopped sending after %s; nothing stored",
                    c->peer, (unsigned long long)c->ev_alloc,
                    errno == ETIMEDOUT ? "a timeout" : "a disconnect");
            return rc; /* no one to answer */
        }
        return depot_reply_err(c, rc);
    }
    rc = depot_write_commit(a, &d, at + req->length);
    depot_alloc_release(a);
    if (rc != IBP_OK) {
        c->close = 1;
        return depot_reply_err(c, rc);
    }
    c->ev_bytes = req->length;
    depot_reply(c, 0, "1 %llu\n", (unsigned long long)req->length);
    return IBP_OK;

fail:
    depot_alloc_release(a);
    c->close = 1;
    return depot_reply_err(c, rc);
}

/* A READ capability and a range inside the current size: the allocation's bytes in *d
 * (d->fd -1 for an empty range) and its reference in *ap, which keeps them where d says.
 * IBP_OK or the error to answer. */
static int open_range(depot_conn_t *c, const ibp_req_t *req, depot_alloc_t **ap,
                      depot_data_t *d)
{
    depot_row_t row;
    int kind, rc;

    d->fd = -1;
    d->own = 0;
    rc = depot_store_lookup(c->srv->store, req->rid, req->key, req->typekey, ap, &kind);
    if (rc != IBP_OK)
        return rc;
    c->ev_alloc = (*ap)->r.id;
    if (kind != DEPOT_READ)
        rc = IBP_E_CAP_NOT_READ;
    else {
        depot_alloc_snapshot(*ap, &row);
        if (req->offset > row.cur_size || req->length > row.cur_size - req->offset)
            rc = IBP_E_INVALID_PARAMETER;
        else if (req->length > 0 && depot_data_open((*ap)->res, &row, 0, d) < 0) {
            lns_log(LNS_LOG_ERROR, "%s: %016llx: cannot open data: %s", c->peer,
                    (unsigned long long)c->ev_alloc, strerror(errno));
            rc = IBP_E_FILE_OPEN;
        }
    }
    if (rc != IBP_OK)
        depot_alloc_release(*ap);
    return rc;
}

int depot_cmd_load(depot_conn_t *c, const ibp_req_t *req)
{
    depot_alloc_t *a;
    depot_data_t d;
    int rc, tmo = depot_conn_timeout_ms(c, req->timeout);

    rc = open_range(c, req, &a, &d);
    if (rc != IBP_OK)
        return depot_reply_err(c, rc);
    if (depot_reply(c, req->length > 0 ? MSG_MORE : 0, "1 %llu\n",
                    (unsigned long long)req->length) == 0 && req->length > 0) {
        off_t off = (off_t)(d.base + req->offset);
        if (lns_sendfile_full(c->fd, d.fd, &off, (size_t)req->length, tmo, INT64_MAX) < 0) {
            lns_log(LNS_LOG_INFO, "%s: %016llx: LOAD cut short: %s", c->peer,
                    (unsigned long long)c->ev_alloc, strerror(errno));
            c->close = 1; /* the client expects bytes we cannot send: end it */
            rc = IBP_E_SOCK_WRITE;
        } else {
            c->ev_bytes = req->length;
        }
    }
    depot_data_close(&d);
    depot_alloc_release(a);
    return c->close && rc == IBP_OK ? IBP_E_SOCK_WRITE : rc;
}

/* STORE the requested range of d to the target depot; version 1 first, 0 if it is an old
 * one. */
static int send_to(const ibp_req_t *req, const depot_data_t *d, int tmo_ms, uint64_t *copied)
{
    int rc = IBP_E_CONNECTION;
    for (int v = 1; v >= 0; v--) {
        ibp_client_opts_t o;
        ibp_client_opts_init(&o);
        o.version = v;
        o.connect_timeout_ms = tmo_ms;
        o.io_timeout_ms = tmo_ms;
        o.server_timeout_s = req->dst_timeout > 0 ? req->dst_timeout : 1;
        o.max_idle_per_depot = 0;
        ibp_client_t *cl = ibp_client_new(&o);
        if (!cl)
            return IBP_E_INTERNAL;
        rc = ibp_store_file(cl, req->target_cap, d->fd, d->base + req->offset, req->length,
                            copied);
        ibp_client_free(cl);
        if (rc != IBP_E_PROT_VERS && rc != IBP_E_INVALID_CMD)
            break;
    }
    return rc;
}

int depot_cmd_send(depot_conn_t *c, const ibp_req_t *req)
{
    depot_alloc_t *a;
    depot_data_t d;
    uint64_t copied = 0;
    int rc;

    rc = open_range(c, req, &a, &d);
    if (rc != IBP_OK)
        return depot_reply_err(c, rc);
    if (req->length > 0) {
        rc = send_to(req, &d, depot_conn_timeout_ms(c, req->dst_client_timeout), &copied);
        depot_data_close(&d);
    }
    depot_alloc_release(a);
    if (rc != IBP_OK) {
        lns_log(LNS_LOG_INFO, "%s: %016llx: SEND failed: %s", c->peer,
                (unsigned long long)c->ev_alloc, ibp_strerror(rc));
        return depot_reply_err(c, rc);
    }
    c->ev_bytes = copied;
    depot_reply(c, 0, "1 %llu\n", (unsigned long long)copied);
    return IBP_OK;
}
