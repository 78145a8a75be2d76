/* depot_cmd_data.c -- the commands that move bytes: STORE, WRITE, LOAD, SEND and ACCRE 1.4's
 * vector WRITE and READ, PUSH and PULL.
 *
 * An allocation's bytes are at (fd, base): a slot of a slab file or its own file
 * (depot_data_open); byte i of the allocation is byte base + i of fd.  Incoming bytes take
 * one copy: from the socket into a buffer (the connection's read buffer for what came with
 * the request line, its data buffer for the rest), then pwrite() into the file.  Outgoing
 * bytes take none: the reply line goes out with MSG_MORE and the data follows with
 * sendfile(), so both leave in full segments.  A STORE is acknowledged only after its bytes
 * are in the file and its new size is committed (depot_write_commit).  A SEND is a STORE to
 * the target depot over a pooled connection, straight from the file with sendfile(); ACCRE's
 * PUSH is a SEND that may WRITE at an offset, and its PULL a WRITE whose bytes come from a
 * LOAD of the other depot over the same clients.
 */
#include "depot.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lns_fail.h"
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
        if (lns_fail("data.write") < 0 || lns_pwrite_all(fd, early, n, off) < 0)
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
        if (lns_fail("data.write") < 0 || lns_pwrite_all(fd, c->dbuf, (size_t)r, off + done) < 0)
            return IBP_E_FILE_WRITE;
        done += (uint64_t)r;
    }
    return IBP_OK;
}

/* The ranges of a vector request, or NULL (memory). */
static ibp_vec_t *vec_ranges(const ibp_req_t *req)
{
    ibp_vec_t *v = malloc((size_t)req->nvec * sizeof *v);
    if (v && ibp_req_vec(req, v) != IBP_OK) {
        free(v);
        v = NULL;
    }
    return v;
}

/* STORE, WRITE and VEC_WRITE: the bytes of each range follow the request line, one range
 * after the other; one commit for them all. */
int depot_cmd_store(depot_conn_t *c, const ibp_req_t *req)
{
    depot_alloc_t *a;
    depot_data_t d;
    uint64_t at = 0;
    int kind, rc;
    int tmo = depot_conn_timeout_ms(c, req->timeout);
    int vec = req->cmd == IBP_CMD_VEC_WRITE;
    ibp_vec_t one, *v = &one;
    int nv = 1;

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
    if (vec && !(v = vec_ranges(req))) {
        rc = IBP_E_INTERNAL;
        goto fail;
    }
    /* An alias: its master's bytes (a vector's ranges shifted as its end is). */
    uint64_t off = req->cmd == IBP_CMD_STORE ? UINT64_MAX : req->offset, asked = off;
    rc = depot_alias_write_at(&a, &off, vec ? 0 : req->length);
    if (rc == IBP_OK && vec) {
        nv = req->nvec;
        for (int i = 0; i < nv; i++)
            v[i].off += off - asked;
        rc = depot_write_begin_vec(a, off, &d);
    } else if (rc == IBP_OK) {
        rc = depot_write_begin(a, off, req->length, &at, &d);
        one = (ibp_vec_t){at, req->length};
    }
    if (rc != IBP_OK)
        goto fail;
    /* Disk checksums: the range is marked pending before a byte of it is written. */
    uint64_t cks_lo = vec ? UINT64_MAX : at, cks_hi = vec ? 0 : at + req->length;
    for (int i = 0; vec && i < req->nvec; i++) {
        cks_lo = v[i].off < cks_lo ? v[i].off : cks_lo;
        cks_hi = v[i].off + v[i].len > cks_hi ? v[i].off + v[i].len : cks_hi;
    }
    int cks = a->r.cks_type != 0 && cks_hi > cks_lo;
    /* write_begin zeroed the bytes between the size and what this write reaches: their
     * blocks may hold digests of bytes a refused or crashed write left past the size, so
     * they are recomputed too (for a vector, its holes above the size as well). */
    ibp_vec_t *cv = v, gapv[2];
    int ncv = nv;
    if (cks) {
        depot_row_t now;
        depot_alloc_snapshot(a, &now);
        uint64_t gap_hi = vec ? cks_hi : at;
        if (now.cur_size < gap_hi && (vec ? (cv = malloc((size_t)(nv + 1) * sizeof *cv)) != NULL
                                          : (cv = gapv) != NULL)) {
            memcpy(cv, v, (size_t)nv * sizeof *cv);
            cv[ncv++] = (ibp_vec_t){now.cur_size, gap_hi - now.cur_size};
            cks_lo = now.cur_size < cks_lo ? now.cur_size : cks_lo;
        } else if (!cv) {
            cv = v;
        }
    }
    if (cks && depot_cks_begin(a, cks_lo, cks_hi - cks_lo) != IBP_OK) {
        if (cv != v && cv != gapv)
            free(cv);
        depot_write_abort(a, &d);
        rc = IBP_E_FILE_WRITE;
        goto fail;
    }
    if (lns_fail("store.ack") < 0 || depot_reply(c, 0, "1 \n") < 0) {
        if (cks) /* as a write cut before its first byte: an earlier crash's pending blocks
                  * are healed (begin merged them into the mark), then the mark goes */
            depot_cks_done(a, depot_cks_end(a, &d, cv, ncv) == IBP_OK);
        if (cv != v && cv != gapv)
            free(cv);
        depot_write_abort(a, &d);
        depot_alloc_release(a);
        if (vec)
            free(v);
        c->close = 1; /* the bytes the client sends next are not a request */
        return IBP_E_SOCK_WRITE;
    }
    if (c->ncs_type)
        rc = depot_cks_recv(c, d.fd, d.base, v, nv, tmo);
    for (int i = 0; !c->ncs_type && i < nv && rc == IBP_OK; i++)
        rc = recv_to_file(c, d.fd, d.base + v[i].off, v[i].len, tmo);
    /* The digests of what reached the file, whatever the outcome; then the mark goes. */
    if (cks) {
        int ok = depot_cks_end(a, &d, cv, ncv) == IBP_OK;
        if (cv != v && cv != gapv)
            free(cv);
        if (!ok && rc == IBP_OK)
            rc = IBP_E_FILE_WRITE;
        depot_cks_done(a, ok);
    }
    if (rc != IBP_OK) {
        depot_write_abort(a, &d);
        depot_alloc_release(a);
        if (vec)
            free(v);
        c->close = 1;
        if (rc == IBP_E_SOCK_READ) {
            lns_log(LNS_LOG_INFO, "%s: %016llx: client stopped sending after %s; nothing stored",
                    c->peer, (unsigned long long)c->ev_alloc,
                    errno == ETIMEDOUT ? "a timeout" : "a disconnect");
            return rc; /* no one to answer */
        }
        return depot_reply_err(c, rc);
    }
    rc = depot_write_commit(a, &d, vec ? off : at + req->length);
    depot_alloc_release(a);
    if (vec)
        free(v);
    if (rc != IBP_OK) {
        c->close = 1;
        return depot_reply_err(c, rc);
    }
    lns_fail("store.reply"); /* a crash here: stored, and the client never hears it */
    c->ev_bytes = req->length;
    depot_reply(c, 0, "1 %llu\n", (unsigned long long)req->length);
    return IBP_OK;

fail:
    depot_alloc_release(a);
    if (vec && v != &one)
        free(v);
    c->close = 1;
    return depot_reply_err(c, rc);
}

/* A READ capability and a range inside the current size: the allocation's bytes in *d
 * (d->fd -1 for an empty range) and its reference in *ap, which keeps them where d says.
 * wait_ms >= 0 (a version-0 LOAD, as LoCI 1.3.1 does): a range past the current size but
 * inside the maximum waits up to wait_ms for the bytes (depot_wait.c), then *len is what
 * there is (-46 if nothing past offset); wait_ms < 0: such a range is -30 at once.
 * IBP_OK or the error to answer. */
static int open_range(depot_conn_t *c, const ibp_req_t *req, int wait_ms, uint64_t *len,
                      depot_alloc_t **ap, depot_data_t *d)
{
    depot_row_t row;
    uint64_t base, limit;
    int kind, rc;

    d->fd = -1;
    d->own = 0;
    *len = req->length;
    rc = depot_store_lookup(c->srv->store, req->rid, req->key, req->typekey, ap, &kind);
    if (rc != IBP_OK)
        return rc;
    c->ev_alloc = (*ap)->r.id;
    if (kind != DEPOT_READ)
        rc = IBP_E_CAP_NOT_READ;
    else if ((rc = depot_alias_resolve(ap, &base, &limit)) == IBP_OK) {
        /* an alias: the master's bytes [base, base + limit), past which it refuses (-19) */
        depot_alloc_snapshot(*ap, &row);
        int vec = req->cmd == IBP_CMD_VEC_READ; /* offset: the end of its furthest range */
        uint64_t off = req->offset > limit ? 0 : base + req->offset; /* base + limit fits */
        if (req->offset > limit || (!vec && req->length > limit - req->offset)) {
            rc = IBP_E_WOULD_EXCEED_LIMIT;
        } else if (wait_ms >= 0 && req->length > 0 && off <= row.max_size &&
                   req->length <= row.max_size - off &&
                   (off > row.cur_size || req->length > row.cur_size - off)) {
            if (depot_wait_size(*ap, off + req->length, wait_ms, &row) < 0)
                rc = IBP_E_CAP_NOT_FOUND;
            else if (row.cur_size <= off)
                rc = IBP_E_SERVER_TIMEOUT;
            else if (req->length > row.cur_size - off)
                *len = row.cur_size - off;
        }
        if (rc != IBP_OK)
            ;
        else if (vec ? off > row.cur_size : off > row.cur_size || *len > row.cur_size - off)
            rc = IBP_E_INVALID_PARAMETER;
        else if (*len > 0 && depot_data_open((*ap)->res, &row, 0, d) < 0) {
            lns_log(LNS_LOG_ERROR, "%s: %016llx: cannot open data: %s", c->peer,
                    (unsigned long long)c->ev_alloc, strerror(errno));
            rc = IBP_E_FILE_OPEN;
        } else {
            d->base += base;
        }
    }
    if (rc != IBP_OK)
        depot_alloc_release(*ap);
    return rc;
}

/* Disk checksums of bytes [off, off + len) of what open_range gave (d's base may be past
 * the allocation's start by an alias's offset). */
static int verify(depot_alloc_t *a, const depot_data_t *d, uint64_t off, uint64_t len)
{
    depot_row_t row;
    if (!a->r.cks_type || len == 0)
        return IBP_OK;
    depot_alloc_snapshot(a, &row);
    depot_data_t m = *d;
    m.base = row.slab ? (uint64_t)row.slot * row.slab : 0;
    return depot_cks_verify(a, &m, d->base - m.base + off, len);
}

/* A LOAD's len bytes from fd at *off, in one sendfile.  Under armed failpoints in two, with
 * "load.mid" between them: kill, the depot dies with half its reply sent (a host killed in
 * the middle of a transfer); error, the reply ends there. */
static int send_range(depot_conn_t *c, int fd, off_t *off, uint64_t len, int tmo)
{
    uint64_t half = lns_fail_armed() ? len / 2 : 0;
    if (half && (lns_sendfile_full(c->fd, fd, off, (size_t)half, tmo, INT64_MAX) < 0 ||
                 lns_fail("load.mid") < 0))
        return -1;
    return lns_sendfile_full(c->fd, fd, off, (size_t)(len - half), tmo, INT64_MAX);
}

int depot_cmd_load(depot_conn_t *c, const ibp_req_t *req)
{
    depot_alloc_t *a;
    depot_data_t d;
    uint64_t len;
    int rc, tmo = depot_conn_timeout_ms(c, req->timeout);
    /* Version 0 waits for bytes not stored yet, as LoCI 1.3.1 (a timeout of 0: no wait);
     * version 1 answers -30 at once, so that a reader fails over to another replica. */
    int wait_ms = req->version == 0 ? (req->timeout > 0 ? tmo : 0) : -1;

    /* The life of a LOAD (docs/netlogger.md): a client matches these lines to its own by
     * (alloc, off, len).  sendfile reads and sends in one, so READ_START is the send start. */
    int ev = lns_event_sampled();
    rc = open_range(c, req, wait_ms, &len, &a, &d);
    if (ev)
        lns_event("IBP_LOAD_RECV", "client=%s alloc=%016llx off=%llu len=%llu", c->peer,
                  (unsigned long long)c->ev_alloc, (unsigned long long)req->offset,
                  (unsigned long long)req->length);
    if (rc != IBP_OK) {
        if (ev)
            lns_event("IBP_LOAD_SEND_END", "client=%s alloc=%016llx off=%llu len=%llu bytes=0 "
                      "result=%d", c->peer, (unsigned long long)c->ev_alloc,
                      (unsigned long long)req->offset, (unsigned long long)req->length, rc);
        return depot_reply_err(c, rc);
    }
    if ((rc = verify(a, &d, req->offset, len)) != IBP_OK) {
        depot_data_close(&d);
        depot_alloc_release(a);
        return depot_reply_err(c, rc);
    }
    if (depot_reply(c, len > 0 ? MSG_MORE : 0, "1 %llu\n",
                    (unsigned long long)len) == 0 && len > 0) {
        off_t off = (off_t)(d.base + req->offset);
        if (ev)
            lns_event("IBP_LOAD_READ_START", "client=%s alloc=%016llx off=%llu len=%llu",
                      c->peer, (unsigned long long)c->ev_alloc,
                      (unsigned long long)req->offset, (unsigned long long)len);
        ibp_vec_t all = {(uint64_t)off, len};
        if (c->ncs_type ? depot_cks_send(c, d.fd, 0, &all, 1, tmo) < 0
                        : send_range(c, d.fd, &off, len, tmo) < 0) {
            lns_log(LNS_LOG_INFO, "%s: %016llx: LOAD cut short: %s", c->peer,
                    (unsigned long long)c->ev_alloc, strerror(errno));
            c->close = 1; /* the client expects bytes we cannot send: end it */
            rc = IBP_E_SOCK_WRITE;
        } else {
            c->ev_bytes = len;
        }
    }
    if (ev)
        lns_event("IBP_LOAD_SEND_END", "client=%s alloc=%016llx off=%llu len=%llu bytes=%llu "
                  "result=%d", c->peer, (unsigned long long)c->ev_alloc,
                  (unsigned long long)req->offset, (unsigned long long)len,
                  (unsigned long long)c->ev_bytes, rc == IBP_OK && !c->close ? 1 : rc);
    depot_data_close(&d);
    depot_alloc_release(a);
    return c->close && rc == IBP_OK ? IBP_E_SOCK_WRITE : rc;
}

/* VEC_READ: "1 <total>\n", then the bytes of each range, one after the other. */
int depot_cmd_vec_read(depot_conn_t *c, const ibp_req_t *req)
{
    depot_alloc_t *a;
    depot_data_t d;
    uint64_t len;
    int rc, tmo = depot_conn_timeout_ms(c, req->timeout);
    ibp_vec_t *v = vec_ranges(req);

    if (!v)
        return depot_reply_err(c, IBP_E_INTERNAL);
    rc = open_range(c, req, -1, &len, &a, &d);
    if (rc != IBP_OK) {
        free(v);
        return depot_reply_err(c, rc);
    }
    for (int i = 0; i < req->nvec && rc == IBP_OK; i++)
        rc = verify(a, &d, v[i].off, v[i].len);
    if (rc != IBP_OK) {
        depot_reply_err(c, rc);
    } else if (depot_reply(c, req->length > 0 ? MSG_MORE : 0, "1 %llu\n",
                           (unsigned long long)req->length) < 0) {
        rc = IBP_E_SOCK_WRITE;
    } else if (c->ncs_type) {
        if (depot_cks_send(c, d.fd, d.base, v, req->nvec, tmo) < 0) {
            lns_log(LNS_LOG_INFO, "%s: %016llx: VEC_READ cut short: %s", c->peer,
                    (unsigned long long)c->ev_alloc, strerror(errno));
            c->close = 1;
            rc = IBP_E_SOCK_WRITE;
        } else {
            c->ev_bytes = req->length;
        }
    } else {
        for (int i = 0; i < req->nvec && rc == IBP_OK; i++) {
            off_t off = (off_t)(d.base + v[i].off);
            if (v[i].len > 0 && lns_sendfile_full(c->fd, d.fd, &off, (size_t)v[i].len, tmo,
                                                  INT64_MAX) < 0) {
                lns_log(LNS_LOG_INFO, "%s: %016llx: VEC_READ cut short: %s", c->peer,
                        (unsigned long long)c->ev_alloc, strerror(errno));
                c->close = 1; /* the client expects bytes we cannot send: end it */
                rc = IBP_E_SOCK_WRITE;
            }
        }
        if (rc == IBP_OK)
            c->ev_bytes = req->length;
    }
    depot_data_close(&d);
    depot_alloc_release(a);
    free(v);
    return rc;
}

/* ---- SEND's clients ------------------------------------------------------------------------
 *
 * A libibp client fixes its timeouts, while each SEND names its own (dst_T, sent to the
 * target, and dst_client_T, how long we wait on it).  So there is one pooled client per
 * (wait, dst_T) met so far, up to SENDERS_MAX; in practice one per client program,
 * whose SENDs all ask the same.  Past that, a SEND gets a client of its own, unpooled, as it
 * would without the table. */

#define SENDERS_MAX 16

typedef struct sender {
    int wait_ms, dst_t;
    ibp_client_t *cl;
} sender_t;

struct depot_senders {
    pthread_mutex_t mu;
    sender_t s[SENDERS_MAX];
    int n;
};

depot_senders_t *depot_senders_new(void)
{
    depot_senders_t *s = calloc(1, sizeof *s);
    if (s)
        pthread_mutex_init(&s->mu, NULL);
    return s;
}

void depot_senders_free(depot_senders_t *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n; i++)
        ibp_client_free(s->s[i].cl);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static ibp_client_t *sender_client(int wait_ms, int dst_t, int pooled)
{
    ibp_client_opts_t o;
    ibp_client_opts_init(&o);
    o.connect_timeout_ms = wait_ms;
    o.io_timeout_ms = wait_ms;
    o.server_timeout_s = dst_t;
    if (!pooled)
        o.max_idle_per_depot = 0;
    return ibp_client_new(&o);
}

/* The shared client for these settings (made on first use), or NULL if the table is full or
 * memory is short. */
static ibp_client_t *sender_shared(depot_senders_t *s, int wait_ms, int dst_t)
{
    ibp_client_t *cl = NULL;
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < s->n && !cl; i++)
        if (s->s[i].wait_ms == wait_ms && s->s[i].dst_t == dst_t)
            cl = s->s[i].cl;
    if (!cl && s->n < SENDERS_MAX && (cl = sender_client(wait_ms, dst_t, 1)))
        s->s[s->n++] = (sender_t){wait_ms, dst_t, cl};
    pthread_mutex_unlock(&s->mu);
    return cl;
}

/* The client for a copy's dst_T and wait (the shared one, else one of its own in *own). */
static ibp_client_t *sender_for(depot_senders_t *senders, const ibp_req_t *req, int wait_ms,
                                ibp_client_t **own)
{
    int dst_t = req->dst_timeout > 0 ? req->dst_timeout : 1;
    ibp_client_t *cl = sender_shared(senders, wait_ms, dst_t);
    *own = NULL;
    if (!cl)
        cl = *own = sender_client(wait_ms, dst_t, 0);
    return cl;
}

/* STORE the requested range of d to the target depot (or, for ACCRE's PUSH with a remote
 * offset, WRITE it there: dst_off >= 0), in the version libibp finds out for it (version 1,
 * or 0 for a LoCI 1.3 depot that drops version-1 lines), as every client does. */
static int send_to(depot_senders_t *senders, const ibp_req_t *req, const depot_data_t *d,
                   int64_t dst_off, int wait_ms, uint64_t *copied)
{
    int rc;
    ibp_cap_t t;
    ibp_client_t *own, *cl = sender_for(senders, req, wait_ms, &own);
    if (!cl)
        return IBP_E_INTERNAL;
    if (lns_fail("send.store") < 0) {
        ibp_client_free(own);
        return IBP_E_CONNECTION;
    }
    /* The pin the client named for the target, checked for this copy only: what one client
     * names must not change what this depot believes of a depot for the others. */
    if (req->target_pin[0] && (ibp_cap_parse(req->target_cap, &t) != IBP_OK ||
                               ibp_tls_expect(t.host, t.port, req->target_pin) != IBP_OK)) {
        ibp_client_free(own);
        return IBP_E_WRONG_CAP_FORMAT;
    }
    if (dst_off < 0)
        rc = ibp_store_file(cl, req->target_cap, d->fd, d->base + req->offset, req->length,
                            copied);
    else
        rc = ibp_write_file(cl, req->target_cap, (uint64_t)dst_off, d->fd,
                            d->base + req->offset, req->length, copied);
    if (rc == IBP_E_TLS_PIN || rc == IBP_E_TLS)
        lns_log(LNS_LOG_WARN, "a copy's target refused: %s", ibp_tls_error());
    ibp_tls_expect(NULL, 0, NULL);
    ibp_client_free(own);
    return rc;
}

/* SEND, and ACCRE's PUSH (20): the same, with a remote offset (< 0: append). */
static int send_common(depot_conn_t *c, const ibp_req_t *req, int64_t dst_off, int accre)
{
    depot_alloc_t *a;
    depot_data_t d;
    uint64_t copied = 0;
    int rc;

    uint64_t len;
    rc = open_range(c, req, -1, &len, &a, &d);
    if (rc != IBP_OK)
        return depot_reply_err(c, rc);
    if (req->length > 0 && (rc = verify(a, &d, req->offset, req->length)) != IBP_OK)
        depot_data_close(&d);
    else if (req->length > 0) {
        rc = send_to(c->srv->senders, req, &d, dst_off,
                     depot_conn_timeout_ms(c, req->dst_client_timeout), &copied);
        depot_data_close(&d);
    }
    depot_alloc_release(a);
    if (rc != IBP_OK) {
        lns_log(LNS_LOG_INFO, "%s: %016llx: %s failed: %s", c->peer,
                (unsigned long long)c->ev_alloc, accre ? "PUSH" : "SEND", ibp_strerror(rc));
        return depot_reply_err(c, rc);
    }
    c->ev_bytes = copied;
    depot_reply(c, 0, accre ? "1 %llu \n" : "1 %llu\n", (unsigned long long)copied);
    return IBP_OK;
}

int depot_cmd_send(depot_conn_t *c, const ibp_req_t *req)
{
    return send_common(c, req, -1, 0);
}

int depot_cmd_push(depot_conn_t *c, const ibp_req_t *req, int64_t remote_off)
{
    return send_common(c, req, remote_off, 1);
}

/* LOAD len bytes at off of the remote read capability rcap into fd at at, through SEND's
 * clients. */
static int pull_from(depot_senders_t *senders, const ibp_req_t *req, uint64_t off, int fd,
                     uint64_t at, int wait_ms, char *buf, size_t bufsize)
{
    ibp_client_t *own, *cl = sender_for(senders, req, wait_ms, &own);
    ibp_loader_t *l = cl ? ibp_loader_new(cl) : NULL;
    int rc;
    if (!l) {
        ibp_client_free(own);
        return IBP_E_INTERNAL;
    }
    rc = lns_fail("pull.load") < 0 ? IBP_E_CONNECTION
                                   : ibp_loader_start(l, req->target_cap, off, req->length);
    for (uint64_t done = 0; rc == IBP_OK && done < req->length;) {
        size_t n = req->length - done < bufsize ? (size_t)(req->length - done) : bufsize;
        if ((rc = ibp_loader_read(l, buf, n)) != IBP_OK)
            break;
        if (lns_fail("data.write") < 0 || lns_pwrite_all(fd, buf, n, at + done) < 0)
            rc = IBP_E_FILE_WRITE;
        done += n;
    }
    ibp_loader_free(l);
    ibp_client_free(own);
    return rc;
}

/* ACCRE's PULL (21): a WRITE (or STORE: req->offset UINT64_MAX) into the local allocation
 * whose bytes come from a LOAD of the remote one.  Committed as a STORE is, or nothing. */
int depot_cmd_pull(depot_conn_t *c, const ibp_req_t *req, uint64_t remote_off)
{
    depot_alloc_t *a;
    depot_data_t d;
    uint64_t at = 0, off = req->offset;
    int kind, rc;

    rc = depot_store_lookup(c->srv->store, req->rid, req->key, req->typekey, &a, &kind);
    if (rc != IBP_OK)
        return depot_reply_err(c, rc);
    c->ev_alloc = a->r.id;
    if (kind != DEPOT_WRITE)
        rc = IBP_E_CAP_NOT_WRITE;
    else if ((rc = depot_alias_write_at(&a, &off, req->length)) == IBP_OK)
        rc = depot_write_begin(a, off, req->length, &at, &d);
    if (rc != IBP_OK) {
        depot_alloc_release(a);
        return depot_reply_err(c, rc);
    }
    size_t want = req->length > DATA_CHUNK ? DATA_CHUNK : (size_t)req->length;
    if (c->dcap < want) {
        char *nb = realloc(c->dbuf, want);
        if (nb) {
            c->dbuf = nb;
            c->dcap = want;
        }
    }
    if (c->dcap < want)
        rc = IBP_E_INTERNAL;
    else
        rc = pull_from(c->srv->senders, req, remote_off, d.fd, d.base + at,
                       depot_conn_timeout_ms(c, req->dst_client_timeout), c->dbuf, c->dcap);
    if (rc != IBP_OK)
        depot_write_abort(a, &d);
    else
        rc = depot_write_commit(a, &d, at + req->length);
    depot_alloc_release(a);
    if (rc != IBP_OK) {
        lns_log(LNS_LOG_INFO, "%s: %016llx: PULL failed: %s", c->peer,
                (unsigned long long)c->ev_alloc, ibp_strerror(rc));
        return depot_reply_err(c, rc);
    }
    c->ev_bytes = req->length;
    depot_reply(c, 0, "1 %llu \n", (unsigned long long)req->length);
    return IBP_OK;
}
