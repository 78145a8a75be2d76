/* ibp_client_data.c -- the calls that move bytes: STORE, WRITE and LOAD.
 *
 * STORE and WRITE are two-phase: the request line, the depot's "1 \n" (or an error, and
 * then no byte is sent), the data, the depot's "1 <n>".  Waiting for the go-ahead costs one
 * round trip but means a refused request never leaves megabytes in flight on a connection
 * the depot is closing.  Up to 64 KiB from memory is the exception: it is sent with the
 * request line at once, since a refusal then costs no more than the round trip saved.
 * The data leaves from the caller's buffer as is (buffer), through one bounce buffer (fd),
 * or straight from the page cache with sendfile(2) (file).
 *
 * LOAD reads "1 <n>" and then n bytes: into the caller's buffer with no copy beyond the
 * few bytes that arrived with the reply line (all at once, or piece by piece as the caller
 * asks through an ibp_loader_t, which another thread may interrupt), or through a bounce
 * buffer to an fd.  If
 * anything goes wrong part way, the connection is closed, never pooled: it may still
 * carry bytes of this exchange.
 */
#include "ibp_client_int.h"
#include "lns_io.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum src_kind { SRC_BUF, SRC_FD, SRC_FILE };

typedef struct data_src {
    enum src_kind kind;
    const void *buf;
    int fd;
    uint64_t file_offset;
} data_src_t;

/* Send len bytes of src on the socket.  IBP_OK or an error. */
static int send_data(ibp_client_t *c, ibp_conn_t *conn, const data_src_t *src, uint64_t len)
{
    int io = c->idle_ms;
    if (len == 0)
        return IBP_OK;
    if (len > SIZE_MAX)
        return IBP_E_INV_PAR_SIZE;
    if (src->kind == SRC_BUF) {
        if (lns_write_full(conn->fd, src->buf, (size_t)len, 0, io, INT64_MAX) < 0)
            return ibp_sock_err(errno, 1);
        return IBP_OK;
    }
    if (src->kind == SRC_FILE) {
        off_t off = (off_t)src->file_offset;
        int rc = IBP_OK;
        /* sendfile(2) has no MSG_NOSIGNAL: hold SIGPIPE for this thread so a depot that goes
         * away is an error for our caller, not the death of its process. */
        sigset_t pipe_set, old_set;
        sigemptyset(&pipe_set);
        sigaddset(&pipe_set, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
        if (lns_sendfile_full(conn->fd, src->fd, &off, (size_t)len, io, INT64_MAX) < 0) {
            int e = errno;
            /* sendfile fails for the socket or the file; tell which by the errno. */
            if (e == EIO || e == EINVAL || e == EBADF || e == ESPIPE)
                rc = IBP_E_FILE_READ;
            else
                rc = ibp_sock_err(e, 1);
            if (e == EPIPE && !sigismember(&old_set, SIGPIPE)) {
                const struct timespec zero = {0, 0};
                sigtimedwait(&pipe_set, NULL, &zero); /* drop the SIGPIPE we caused */
            }
        }
        pthread_sigmask(SIG_SETMASK, &old_set, NULL);
        return rc;
    }
    size_t cap = len < IBP_CHUNK ? (size_t)len : IBP_CHUNK;
    char *chunk = malloc(cap);
    int rc = IBP_OK;
    if (!chunk)
        return IBP_E_ALLOC_FAILED;
    while (len > 0 && rc == IBP_OK) {
        size_t want = len < cap ? (size_t)len : cap;
        ssize_t r = lns_fd_read_some(src->fd, chunk, want, io);
        if (r <= 0) {
            rc = IBP_E_FILE_READ; /* an early EOF too: we promised len bytes */
            break;
        }
        if (lns_write_full(conn->fd, chunk, (size_t)r, 0, io, INT64_MAX) < 0)
            rc = ibp_sock_err(errno, 1);
        len -= (uint64_t)r;
    }
    free(chunk);
    return rc;
}

/* The request line of a STORE, WRITE or LOAD of len bytes at offset, in version v; its length
 * or -1. */
static int data_request(const ibp_client_t *c, int v, int cmd, const ibp_cap_t *cap,
                        uint64_t offset, uint64_t len, char *line, size_t size)
{
    ibp_req_t req;
    memset(&req, 0, sizeof req);
    req.version = v;
    req.cmd = cmd;
    req.timeout = c->o.server_timeout_s;
    ibp_call_req_cap(&req, cap);
    req.offset = offset;
    req.length = len;
    return ibp_req_format(&req, line, size);
}

/* STOREs and WRITEs from memory up to this size send their data with the request line. */
#define IBP_PIPELINE_MAX (64 * 1024)

static int store_common(ibp_client_t *c, const char *wcap, int cmd, uint64_t offset,
                        const data_src_t *src, uint64_t len, uint64_t *done)
{
    char line[IBP_MAX_LINE];
    ibp_cap_t cap;
    ibp_reply_t rep;
    ibp_conn_t *conn;
    ibp_vsel_t vs;
    uint64_t n;
    int rc, linelen;

    if (done)
        *done = 0;
    if (!c || (src->kind == SRC_BUF && !src->buf && len > 0))
        return IBP_E_INV_PAR_PTR;
    if ((rc = ibp_call_cap(wcap, IBP_WRITECAP, &cap)) != IBP_OK)
        return rc;
    if (offset + len < offset)
        return IBP_E_INV_PAR_SIZE;

    ibp_version_for(c, cap.host, cap.port, &vs);
    if (cmd == IBP_CMD_WRITE && vs.version == 0)
        return IBP_E_INVALID_CMD;
    if ((linelen = data_request(c, vs.version, cmd, &cap, offset, len, line, sizeof line)) < 0)
        return IBP_E_INVALID_PARAMETER;

    if (src->kind == SRC_BUF && len <= IBP_PIPELINE_MAX && !vs.detect) {
        /* Small data goes right behind the request line, in the same segment: the contract
         * allows it and it saves a round trip per STORE.  The depot still answers "1 \n"
         * first, and drains what we sent before it closes after an error, so its error
         * reply is not lost to a reset.  Not while the depot's version is unknown: the
         * request line alone finds it out, and no data goes before a reply. */
        char *both = malloc((size_t)linelen + (size_t)len);
        if (!both)
            return IBP_E_ALLOC_FAILED;
        memcpy(both, line, (size_t)linelen);
        if (len > 0)
            memcpy(both + linelen, src->buf, (size_t)len);
        rc = ibp_call_begin(c, cap.host, cap.port, &vs, both, (size_t)linelen + (size_t)len,
                            IBP_CALL_LINE, -1, &conn, &rep);
        free(both);
        if (rc != IBP_OK)
            return rc;
    } else {
        rc = ibp_call_begin(c, cap.host, cap.port, &vs, line, (size_t)linelen, IBP_CALL_LINE,
                            -1, &conn, &rep);
        if (rc == IBP_CALL_AGAIN_V0) {
            if (cmd == IBP_CMD_WRITE)
                return IBP_E_INVALID_CMD;
            if ((linelen = data_request(c, 0, cmd, &cap, offset, len, line, sizeof line)) < 0)
                return IBP_E_INVALID_PARAMETER;
            rc = ibp_call_begin(c, cap.host, cap.port, &vs, line, (size_t)linelen,
                                IBP_CALL_LINE, -1, &conn, &rep);
        }
        if (rc != IBP_OK)
            return rc;
        if ((rc = send_data(c, conn, src, len)) != IBP_OK) {
            ibp_conn_close(conn);
            return rc;
        }
    }
    if ((rc = ibp_call_line(c, conn, &rep)) != IBP_OK)
        return rc;
    if (rep.nf != 2 || ibp_parse_u64(rep.f[1], strlen(rep.f[1]), &n) < 0 || n != len) {
        ibp_conn_close(conn);
        return IBP_E_BAD_FORMAT;
    }
    ibp_call_end(c, conn);
    if (done)
        *done = n;
    return IBP_OK;
}

int ibp_store(ibp_client_t *c, const char *wcap, const void *buf, uint64_t len, uint64_t *stored)
{
    data_src_t src = {.kind = SRC_BUF, .buf = buf};
    return store_common(c, wcap, IBP_CMD_STORE, 0, &src, len, stored);
}

int ibp_store_fd(ibp_client_t *c, const char *wcap, int fd, uint64_t len, uint64_t *stored)
{
    data_src_t src = {.kind = SRC_FD, .fd = fd};
    if (fd < 0)
        return IBP_E_FILE_READ;
    return store_common(c, wcap, IBP_CMD_STORE, 0, &src, len, stored);
}

int ibp_store_file(ibp_client_t *c, const char *wcap, int file_fd, uint64_t file_offset,
                   uint64_t len, uint64_t *stored)
{
    data_src_t src = {.kind = SRC_FILE, .fd = file_fd, .file_offset = file_offset};
    if (file_fd < 0)
        return IBP_E_FILE_READ;
    if (file_offset > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX - file_offset)
        return IBP_E_INV_PAR_SIZE;
    return store_common(c, wcap, IBP_CMD_STORE, 0, &src, len, stored);
}

int ibp_write(ibp_client_t *c, const char *wcap, uint64_t offset, const void *buf, uint64_t len,
              uint64_t *written)
{
    data_src_t src = {.kind = SRC_BUF, .buf = buf};
    return store_common(c, wcap, IBP_CMD_WRITE, offset, &src, len, written);
}

int ibp_write_fd(ibp_client_t *c, const char *wcap, uint64_t offset, int fd, uint64_t len,
                 uint64_t *written)
{
    data_src_t src = {.kind = SRC_FD, .fd = fd};
    if (fd < 0)
        return IBP_E_FILE_READ;
    return store_common(c, wcap, IBP_CMD_WRITE, offset, &src, len, written);
}

int ibp_write_file(ibp_client_t *c, const char *wcap, uint64_t offset, int file_fd,
                   uint64_t file_offset, uint64_t len, uint64_t *written)
{
    data_src_t src = {.kind = SRC_FILE, .fd = file_fd, .file_offset = file_offset};
    if (file_fd < 0)
        return IBP_E_FILE_READ;
    if (file_offset > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX - file_offset)
        return IBP_E_INV_PAR_SIZE;
    return store_common(c, wcap, IBP_CMD_WRITE, offset, &src, len, written);
}

/* Send the LOAD request and check that the reply announces exactly len bytes. */
static int load_begin(ibp_client_t *c, const char *rcap, uint64_t offset, uint64_t len,
                      ibp_intr_t *intr, ibp_conn_t **conn)
{
    char line[IBP_MAX_LINE];
    ibp_cap_t cap;
    ibp_reply_t rep;
    ibp_vsel_t vs;
    uint64_t n;
    int rc, linelen;

    if (!c)
        return IBP_E_INV_PAR_PTR;
    if ((rc = ibp_call_cap(rcap, IBP_READCAP, &cap)) != IBP_OK)
        return rc;
    if (offset + len < offset)
        return IBP_E_INV_PAR_SIZE;
    ibp_version_for(c, cap.host, cap.port, &vs);
    do {
        linelen = data_request(c, vs.version, IBP_CMD_LOAD, &cap, offset, len, line, sizeof line);
        if (linelen < 0)
            return IBP_E_INVALID_PARAMETER;
        rc = ibp_call_begin_intr(c, cap.host, cap.port, &vs, line, (size_t)linelen,
                                 IBP_CALL_KEEP_ON_ERROR, -1, intr, conn, &rep);
    } while (rc == IBP_CALL_AGAIN_V0);
    if (rc != IBP_OK)
        return rc;
    if (rep.nf != 2 || ibp_parse_u64(rep.f[1], strlen(rep.f[1]), &n) < 0 || n != len) {
        if (intr)
            ibp_intr_detach(intr);
        ibp_conn_close(*conn);
        return IBP_E_BAD_FORMAT;
    }
    return IBP_OK;
}

int ibp_load(ibp_client_t *c, const char *rcap, uint64_t offset, uint64_t len, void *buf)
{
    ibp_conn_t *conn;
    int rc;
    if (!buf && len > 0)
        return IBP_E_INV_PAR_PTR;
    if (len > SIZE_MAX)
        return IBP_E_INV_PAR_SIZE;
    if ((rc = load_begin(c, rcap, offset, len, NULL, &conn)) != IBP_OK)
        return rc;
    if (len > 0 && lns_rbuf_read(&conn->rb, buf, (size_t)len, c->idle_ms, INT64_MAX) < 0) {
        rc = ibp_sock_err(errno, 0);
        ibp_conn_close(conn);
        return rc;
    }
    ibp_call_end(c, conn);
    return IBP_OK;
}

int ibp_load_ranges(ibp_client_t *c, const char *rcap, const ibp_range_t *r, int n, void *buf)
{
    char line[IBP_MAX_LINE];
    ibp_cap_t cap;
    ibp_reply_t rep;
    ibp_vsel_t vs;
    ibp_req_t req;
    ibp_vec_t v[16];
    ibp_conn_t *conn;
    uint64_t total = 0, got;
    int rc, linelen;

    if (!c || !r || !buf)
        return IBP_E_INV_PAR_PTR;
    if (n < 1 || n > 16)
        return IBP_E_INVALID_PARAMETER;
    for (int i = 0; i < n; i++) {
        if (r[i].offset + r[i].length < r[i].offset || r[i].length > ((uint64_t)1 << 30))
            return IBP_E_INV_PAR_SIZE;
        v[i].off = r[i].offset;
        v[i].len = r[i].length;
        total += r[i].length;
    }
    if (total > ((uint64_t)1 << 30) || total > SIZE_MAX)
        return IBP_E_INV_PAR_SIZE;
    if ((rc = ibp_call_cap(rcap, IBP_READCAP, &cap)) != IBP_OK)
        return rc;
    ibp_version_for(c, cap.host, cap.port, &vs);
    if (vs.version == 0 && !vs.detect)
        return IBP_E_INVALID_CMD; /* a version-0 depot has no vector LOAD */
    memset(&req, 0, sizeof req);
    req.version = 1;
    req.cmd = IBP_CMD_VEC_READ;
    req.timeout = c->o.server_timeout_s;
    ibp_call_req_cap(&req, &cap);
    req.nvec = n;
    req.ranges = v;
    if ((linelen = ibp_req_format(&req, line, sizeof line)) < 0)
        return IBP_E_INVALID_PARAMETER;
    vs.version = 1;
    rc = ibp_call_begin(c, cap.host, cap.port, &vs, line, (size_t)linelen, IBP_CALL_KEEP_ON_ERROR,
                        -1, &conn, &rep);
    if (rc == IBP_CALL_AGAIN_V0)
        return IBP_E_INVALID_CMD;
    if (rc != IBP_OK)
        return rc;
    if (rep.nf != 2 || ibp_parse_u64(rep.f[1], strlen(rep.f[1]), &got) < 0 || got != total) {
        ibp_conn_close(conn);
        return IBP_E_BAD_FORMAT;
    }
    if (total > 0 && lns_rbuf_read(&conn->rb, buf, (size_t)total, c->idle_ms, INT64_MAX) < 0) {
        rc = ibp_sock_err(errno, 0);
        ibp_conn_close(conn);
        return rc;
    }
    ibp_call_end(c, conn);
    return IBP_OK;
}

struct ibp_loader {
    ibp_client_t *c;
    ibp_conn_t *conn;  /* from a successful start until ibp_loader_free */
    uint64_t left;     /* bytes of the reply not read yet */
    int failed;
    ibp_intr_t intr;   /* what ibp_loader_abort acts on */
};

ibp_loader_t *ibp_loader_new(ibp_client_t *c)
{
    ibp_loader_t *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->c = c;
    ibp_intr_init(&l->intr);
    return l;
}

int ibp_loader_start(ibp_loader_t *l, const char *rcap, uint64_t offset, uint64_t len)
{
    int rc;
    if (l->conn || l->failed)
        return IBP_E_INVALID_PARAMETER;
    if (len > SIZE_MAX)
        return IBP_E_INV_PAR_SIZE;
    if ((rc = load_begin(l->c, rcap, offset, len, &l->intr, &l->conn)) != IBP_OK) {
        l->conn = NULL;
        l->failed = 1;
        return rc;
    }
    l->left = len;
    return IBP_OK;
}

int ibp_loader_read(ibp_loader_t *l, void *buf, size_t n)
{
    if (!l->conn || l->failed)
        return IBP_E_SOCK_READ;
    if (n > l->left || (!buf && n > 0))
        return IBP_E_INV_PAR_SIZE;
    if (n > 0 && lns_rbuf_read(&l->conn->rb, buf, n, l->c->idle_ms, INT64_MAX) < 0) {
        l->failed = 1;
        return ibp_sock_err(errno, 0);
    }
    l->left -= n;
    return IBP_OK;
}

void ibp_loader_abort(ibp_loader_t *l)
{
    ibp_intr_abort(&l->intr);
}

void ibp_loader_free(ibp_loader_t *l)
{
    if (!l)
        return;
    if (l->conn) {
        ibp_intr_detach(&l->intr);
        if (!l->failed && l->left == 0 && !ibp_intr_aborted(&l->intr))
            ibp_call_end(l->c, l->conn);
        else
            ibp_conn_close(l->conn); /* bytes of the reply may still come: never pooled */
    }
    ibp_intr_destroy(&l->intr);
    free(l);
}

int ibp_load_fd(ibp_client_t *c, const char *rcap, uint64_t offset, uint64_t len, int fd)
{
    ibp_conn_t *conn;
    char *chunk;
    size_t cap;
    int rc = IBP_OK;

    if (fd < 0)
        return IBP_E_FILE_WRITE;
    cap = len < IBP_CHUNK ? (size_t)len : IBP_CHUNK;
    chunk = malloc(cap ? cap : 1);
    if (!chunk)
        return IBP_E_ALLOC_FAILED;
    if ((rc = load_begin(c, rcap, offset, len, NULL, &conn)) != IBP_OK) {
        free(chunk);
        return rc;
    }
    while (len > 0) {
        size_t want = len < cap ? (size_t)len : cap;
        size_t got = lns_rbuf_take(&conn->rb, chunk, want);
        if (got == 0) {
            ssize_t r = lns_read_some(conn->fd, chunk, want, c->idle_ms, INT64_MAX);
            if (r <= 0) {
                rc = r == 0 ? IBP_E_SOCK_READ : ibp_sock_err(errno, 0);
                break;
            }
            got = (size_t)r;
        }
        if (lns_fd_write_all(fd, chunk, got, c->o.io_timeout_ms) < 0) {
            rc = IBP_E_FILE_WRITE;
            break;
        }
        len -= got;
    }
    free(chunk);
    if (rc == IBP_OK)
        ibp_call_end(c, conn);
    else
        ibp_conn_close(conn);
    return rc;
}
