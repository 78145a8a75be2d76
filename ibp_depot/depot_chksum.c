/* depot_chksum.c -- ACCRE 1.4's checksummed requests and per-block disk checksums.
 *
 * Two kinds, as ACCRE has them (docs/ibp-protocol.md, "Checksums"):
 * - network checksums (WRITE_CHKSUM 27, STORE_CHKSUM 28, LOAD_CHKSUM 24): the request names a
 *   type and a block size; the data stream carries, after every block and after the last
 *   partial one, that block's digest in lower-case hex.  The line is the plain command's with
 *   "<type> <blocksize>" after the command number, so it is parsed as that command.
 *   PUSH_CHKSUM 22, PULL_CHKSUM 23 and SEND_CHKSUM 25 carry no client data: they are the
 *   plain PUSH, PULL and SEND (the copy between depots without stream digests).
 * - disk checksums (ALLOCATE_CHKSUM 29, SPLIT_ALLOCATE_CHKSUM 30): every block of the
 *   allocation has a digest, kept up to date by every write and checked by every read;
 *   GET_CHKSUM 31 returns them, VALIDATE_CHKSUM 32 counts the blocks that fail.
 *
 * The digests live in a side file beside the data, "<data>/<xx>/<id>.cks": a 32-byte header
 * (magic, type, block size, the pending range) and one entry per block (u32 bytes covered,
 * the binary digest).  A write (serialized per allocation by op_mu) marks its range pending
 * in the header before its first byte reaches the data, recomputes the digests of the
 * blocks it touched from the data file, and clears the mark.  So after a crash at any point
 * the blocks whose data and digest may disagree are exactly the pending ones: the next
 * write or read that meets them recomputes their digests from the data and logs them as
 * unverified.  A read that finds a mismatch outside a pending range answers -63 (ACCRE's
 * IBP_E_CHKSUM) before any byte is sent.
 */
#include "depot.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lns_fail.h"
#include "lns_hex.h"
#include "lns_io.h"
#include "lns_log.h"

#define CKS_MAGIC "LNSCKS1\n"
#define CKS_HDR 32
#define CKS_CHUNK (256 * 1024)

enum {
    CMD_PUSH_CHKSUM = 22, CMD_PULL_CHKSUM = 23, CMD_LOAD_CHKSUM = 24, CMD_SEND_CHKSUM = 25,
    CMD_PHOEBUS_SEND_CHKSUM = 26, CMD_WRITE_CHKSUM = 27, CMD_STORE_CHKSUM = 28,
    CMD_ALLOCATE_CHKSUM = 29, CMD_SPLIT_ALLOCATE_CHKSUM = 30, CMD_GET_CHKSUM = 31,
    CMD_VALIDATE_CHKSUM = 32, CMD_VEC_WRITE_CHKSUM = 34, CMD_VEC_READ_CHKSUM = 36
};

static const EVP_MD *cks_md(int type)
{
    switch (type) {
    case DEPOT_CKS_SHA256: return EVP_sha256();
    case DEPOT_CKS_SHA512: return EVP_sha512();
    case DEPOT_CKS_SHA1: return EVP_sha1();
    case DEPOT_CKS_MD5: return EVP_md5();
    default: return NULL;
    }
}

static size_t cks_len(int type)
{
    const EVP_MD *md = cks_md(type);
    return md ? (size_t)EVP_MD_get_size(md) : 0;
}

static int pread_full(int fd, void *buf, size_t n, uint64_t off)
{
    size_t done = 0;
    while (done < n) {
        ssize_t r = pread(fd, (char *)buf + done, n - done, (off_t)(off + done));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        done += (size_t)r;
    }
    return 0;
}

/* ---- the side file ----------------------------------------------------------------------- */

typedef struct cks_file {
    int fd;
    int type;
    uint32_t bs;
    size_t dlen;    /* digest length */
    size_t esz;     /* entry size: 4 + dlen */
} cks_file_t;

static void side_name(uint64_t id, char *buf, size_t size)
{
    snprintf(buf, size, "%02x/%016llx.cks", (unsigned)(id >> 56), (unsigned long long)id);
}

void depot_cks_unlink(depot_resource_t *res, uint64_t id)
{
    char name[40];
    side_name(id, name, sizeof name);
    if (unlinkat(res->data_fd, name, 0) < 0 && errno != ENOENT)
        lns_log(LNS_LOG_WARN, "resource %d: cannot delete checksums of %016llx: %s", res->id,
                (unsigned long long)id, strerror(errno));
}

static int hdr_write(const cks_file_t *f, uint64_t lo, uint64_t hi)
{
    unsigned char h[CKS_HDR];
    uint32_t t = (uint32_t)f->type;
    memcpy(h, CKS_MAGIC, 8);
    memcpy(h + 8, &t, 4);
    memcpy(h + 12, &f->bs, 4);
    memcpy(h + 16, &lo, 8);
    memcpy(h + 24, &hi, 8);
    return lns_fail("cks.write") < 0 ? -1 : lns_pwrite_all(f->fd, h, CKS_HDR, 0);
}

/* The pending range in the header ([0, 0) if none or no header yet). */
static void hdr_pending(const cks_file_t *f, uint64_t *lo, uint64_t *hi)
{
    unsigned char h[CKS_HDR];
    *lo = *hi = 0;
    if (pread_full(f->fd, h, CKS_HDR, 0) == 0 && memcmp(h, CKS_MAGIC, 8) == 0) {
        memcpy(lo, h + 16, 8);
        memcpy(hi, h + 24, 8);
    }
}

/* Open a's side file (created for writing).  0 or -1 (errno). */
static int side_open(depot_alloc_t *a, int write, cks_file_t *f)
{
    char name[40];
    side_name(a->r.id, name, sizeof name);
    f->type = a->r.cks_type;
    f->bs = a->r.cks_bs;
    f->dlen = cks_len(f->type);
    f->esz = 4 + f->dlen;
    if (write) {
        char dir[4];
        snprintf(dir, sizeof dir, "%02x", (unsigned)(a->r.id >> 56));
        if (mkdirat(a->res->data_fd, dir, 0750) < 0 && errno != EEXIST)
            return -1;
    }
    f->fd = openat(a->res->data_fd, name, (write ? O_RDWR | O_CREAT : O_RDONLY) | O_CLOEXEC, 0640);
    return f->fd < 0 ? -1 : 0;
}

/* Entry of block b: bytes covered (0: never written) and digest. */
static int entry_get(const cks_file_t *f, uint64_t b, uint32_t *covered, unsigned char *md)
{
    unsigned char e[4 + EVP_MAX_MD_SIZE];
    ssize_t r = pread(f->fd, e, f->esz, (off_t)(CKS_HDR + b * f->esz));
    if (r == 0 || (r > 0 && (size_t)r < f->esz)) {
        *covered = 0; /* past the end of the side file: never written */
        return 0;
    }
    if (r < 0)
        return -1;
    memcpy(covered, e, 4);
    memcpy(md, e + 4, f->dlen);
    return 0;
}

/* Digest of the first n bytes of block b of the data. */
static int block_digest(const cks_file_t *f, const depot_data_t *d, uint64_t b, uint32_t n,
                        unsigned char *md, char *buf)
{
    EVP_MD_CTX *x = EVP_MD_CTX_new();
    unsigned int ml = 0;
    int rc = x && EVP_DigestInit_ex(x, cks_md(f->type), NULL) ? 0 : -1;
    for (uint32_t done = 0; rc == 0 && done < n;) {
        size_t k = n - done > CKS_CHUNK ? CKS_CHUNK : n - done;
        if (pread_full(d->fd, buf, k, d->base + b * f->bs + done) < 0 ||
            !EVP_DigestUpdate(x, buf, k))
            rc = -1;
        done += (uint32_t)k;
    }
    if (rc == 0 && !EVP_DigestFinal_ex(x, md, &ml))
        rc = -1;
    EVP_MD_CTX_free(x);
    return rc;
}

/* Recompute the entries of blocks [b0, b1], each covering at least up to the matching end of
 * [lo, hi) and never past what it covered or that. */
static int recompute(const cks_file_t *f, const depot_data_t *d, uint64_t lo, uint64_t hi,
                     uint64_t b0, uint64_t b1)
{
    unsigned char e[4 + EVP_MAX_MD_SIZE];
    char *buf = malloc(CKS_CHUNK);
    int rc = buf ? 0 : -1;
    for (uint64_t b = b0; rc == 0 && b <= b1; b++) {
        uint32_t covered;
        uint64_t start = b * f->bs, end = start + f->bs;
        if (entry_get(f, b, &covered, e + 4) < 0) {
            rc = -1;
            break;
        }
        uint64_t upto = hi < end ? hi - start : f->bs;
        if (lo >= end || hi <= start)
            upto = 0;
        if (covered > upto)
            upto = covered;
        covered = (uint32_t)upto;
        memcpy(e, &covered, 4);
        if (block_digest(f, d, b, covered, e + 4, buf) < 0 || lns_fail("cks.write") < 0 ||
            lns_pwrite_all(f->fd, e, f->esz, CKS_HDR + b * f->esz) < 0)
            rc = -1;
    }
    free(buf);
    return rc;
}

/* A pending range left by a crash or a failed write: recompute its blocks from the data,
 * which the client wrote or was refused; those blocks are unverified.  The mark becomes
 * [keep_lo, keep_hi): the range of the write in progress, if any. */
static int heal_pending(depot_alloc_t *a, const cks_file_t *f, const depot_data_t *d,
                        uint64_t keep_lo, uint64_t keep_hi)
{
    uint64_t lo, hi;
    hdr_pending(f, &lo, &hi);
    if (hi <= lo)
        return 0;
    lns_log(LNS_LOG_WARN, "resource %d: %016llx: bytes %llu..%llu were being written when the "
            "depot stopped or the write failed: their checksums are recomputed from the data "
            "(unverified)",
            a->res->id, (unsigned long long)a->r.id, (unsigned long long)lo,
            (unsigned long long)hi);
    if (recompute(f, d, lo, lo, lo / f->bs, (hi - 1) / f->bs) < 0)
        return -1;
    return hdr_write(f, keep_lo, keep_hi);
}

/* ---- the write path ---------------------------------------------------------------------- */

int depot_cks_begin(depot_alloc_t *a, uint64_t off, uint64_t len)
{
    cks_file_t f;
    if (len == 0)
        return IBP_OK;
    depot_cks_cache_write_begin(a, off / a->r.cks_bs, (off + len - 1) / a->r.cks_bs);
    if (side_open(a, 1, &f) < 0) {
        depot_cks_cache_write_end(a);
        return IBP_E_FILE_WRITE;
    }
    uint64_t lo, hi;
    hdr_pending(&f, &lo, &hi);
    if (hi > lo) { /* a crash left one: keep it, and ours, until the digests are redone */
        lo = lo < off ? lo : off;
        hi = hi > off + len ? hi : off + len;
    } else {
        lo = off;
        hi = off + len;
    }
    int rc = hdr_write(&f, lo, hi) < 0 ? IBP_E_FILE_WRITE : IBP_OK;
    close(f.fd);
    if (rc != IBP_OK)
        depot_cks_cache_write_end(a);
    return rc;
}

int depot_cks_end(depot_alloc_t *a, const depot_data_t *d, const ibp_vec_t *v, int nv)
{
    cks_file_t f;
    uint64_t wlo = UINT64_MAX, whi = 0; /* what begin marked for this write */
    for (int i = 0; i < nv; i++)
        if (v[i].len > 0) {
            wlo = v[i].off < wlo ? v[i].off : wlo;
            whi = v[i].off + v[i].len > whi ? v[i].off + v[i].len : whi;
        }
    if (whi <= wlo)
        return IBP_OK;
    if (side_open(a, 1, &f) < 0)
        return IBP_E_FILE_WRITE;
    uint64_t lo, hi;
    hdr_pending(&f, &lo, &hi);
    int rc = IBP_OK;
    /* Blocks of an earlier pending range outside ours: from the data as it is; ours stays
     * marked until its digests are done. */
    if (hi > lo && (lo < wlo || hi > whi))
        rc = heal_pending(a, &f, d, wlo, whi) < 0 ? IBP_E_FILE_WRITE : IBP_OK;
    for (int i = 0; i < nv && rc == IBP_OK; i++)
        if (v[i].len > 0 && recompute(&f, d, v[i].off, v[i].off + v[i].len, v[i].off / f.bs,
                                      (v[i].off + v[i].len - 1) / f.bs) < 0)
            rc = IBP_E_FILE_WRITE;
    if (rc == IBP_OK && a->res->store->durability == DEPOT_DUR_FSYNC && fdatasync(f.fd) < 0)
        rc = IBP_E_FILE_WRITE;
    close(f.fd);
    /* Digests just computed from the bytes on disk: those blocks are known good. */
    for (int i = 0; i < nv && rc == IBP_OK; i++)
        if (v[i].len > 0)
            depot_cks_cache_put(a, v[i].off / f.bs, (v[i].off + v[i].len - 1) / f.bs, 1, 0);
    return rc;
}

void depot_cks_done(depot_alloc_t *a, int ok)
{
    cks_file_t f;
    if (!ok) /* the digests may not match the data: the mark stays, the next access heals */
        lns_log(LNS_LOG_WARN, "resource %d: %016llx: the checksums of a write could not be "
                "written: its bytes stay marked pending", a->res->id, (unsigned long long)a->r.id);
    else if (side_open(a, 1, &f) == 0) {
        if (hdr_write(&f, 0, 0) < 0)
            lns_log(LNS_LOG_WARN, "resource %d: %016llx: cannot clear the checksums' pending "
                    "mark", a->res->id, (unsigned long long)a->r.id);
        close(f.fd);
    }
    depot_cks_cache_write_end(a);
}

/* ---- the read path ----------------------------------------------------------------------- */

/* Check blocks [b0, b1]; *bad gets how many fail (a block of a pending range is healed under
 * op_mu instead).  cached: a block known good (depot_chksum_cache.c) is not hashed again.
 * 0 or -1 (I/O). */
static int check_blocks(depot_alloc_t *a, const depot_data_t *d, uint64_t b0, uint64_t b1,
                        uint64_t size, int cached, uint64_t *bad)
{
    uint32_t seq = depot_cks_cache_seq(a);
    cks_file_t f;
    unsigned char want[EVP_MAX_MD_SIZE], got[EVP_MAX_MD_SIZE];
    char *buf = malloc(CKS_CHUNK);
    int rc = 0;
    *bad = 0;
    if (!buf)
        return -1;
    if (side_open(a, 0, &f) < 0) {
        free(buf);
        return errno == ENOENT ? 0 : -1; /* never written */
    }
    for (uint64_t b = b0; rc == 0 && b <= b1; b++) {
        uint32_t covered;
        if (entry_get(&f, b, &covered, want) < 0) {
            rc = -1;
            break;
        }
        if (covered == 0 || b * f.bs >= size)
            continue;
        if (covered > size - b * f.bs)
            continue; /* cut by a TRUNCATE: nothing to compare it with */
        if (cached && depot_cks_cache_hit(a, b, seq))
            continue;
        if (lns_fail("cks.verify") < 0 || block_digest(&f, d, b, covered, got, buf) < 0) {
            rc = -1;
            break;
        }
        if (memcmp(got, want, f.dlen) == 0) {
            depot_cks_cache_put(a, b, b, 0, seq);
            continue;
        }
        /* A write may be between its data and its digests: wait for it, then look again. */
        pthread_mutex_lock(&a->op_mu);
        uint64_t lo, hi;
        hdr_pending(&f, &lo, &hi);
        if (hi > lo && lo < (b + 1) * f.bs && hi > b * f.bs) {
            /* Pending: its digest is redone from the data.  If that cannot be written, the
             * block is unverified, not spoiled: this read fails (I/O), the mark stays, and a
             * later read heals it. */
            cks_file_t w;
            if (side_open(a, 1, &w) < 0) {
                rc = -1;
            } else {
                rc = heal_pending(a, &w, d, 0, 0) < 0 ? -1 : 0;
                close(w.fd);
            }
        }
        if (rc == 0 && (entry_get(&f, b, &covered, want) < 0 ||
                        block_digest(&f, d, b, covered, got, buf) < 0))
            rc = -1;
        pthread_mutex_unlock(&a->op_mu);
        if (rc == 0 && memcmp(got, want, f.dlen) != 0) {
            char hw[2 * EVP_MAX_MD_SIZE + 1], hg[2 * EVP_MAX_MD_SIZE + 1];
            lns_hex(want, f.dlen, hw);
            lns_hex(got, f.dlen, hg);
            lns_log(LNS_LOG_ERROR, "resource %d: %016llx: block %llu (bytes %llu..%llu) fails "
                    "its checksum: stored %s, data %s", a->res->id, (unsigned long long)a->r.id,
                    (unsigned long long)b, (unsigned long long)(b * f.bs),
                    (unsigned long long)(b * f.bs + covered), hw, hg);
            (*bad)++;
        }
    }
    close(f.fd);
    free(buf);
    return rc;
}

int depot_cks_verify(depot_alloc_t *a, const depot_data_t *d, uint64_t off, uint64_t len)
{
    depot_row_t row;
    uint64_t bad;
    if (!a->r.cks_type || len == 0)
        return IBP_OK;
    depot_alloc_snapshot(a, &row);
    if (check_blocks(a, d, off / row.cks_bs, (off + len - 1) / row.cks_bs, row.cur_size, 1,
                     &bad) < 0)
        return IBP_E_FILE_READ;
    return bad ? IBP_E_CHKSUM : IBP_OK;
}

/* ---- network checksums ------------------------------------------------------------------- */

/* Read exactly n bytes of the request's data (what came with the line first). */
static int conn_read(depot_conn_t *c, void *buf, size_t n, int timeout_ms)
{
    const char *early;
    size_t have = lns_rbuf_peek(&c->rb, &early), done = 0;
    if (have > 0) {
        done = have < n ? have : n;
        memcpy(buf, early, done);
        lns_rbuf_consume(&c->rb, done);
    }
    while (done < n) {
        ssize_t r = lns_read_some(c->fd, (char *)buf + done, n - done, timeout_ms, INT64_MAX);
        if (r <= 0)
            return -1;
        done += (size_t)r;
    }
    return 0;
}

/* The digest stream of a network-checksummed transfer: one block of ncs_bs bytes after the
 * other over all the ranges' bytes in order (a block may span two ranges, as ACCRE's client
 * streams a vector), each block's digest in hex after it, the last partial block's at the
 * end. */
typedef struct ncs_stream {
    EVP_MD_CTX *x;
    const EVP_MD *md;
    uint32_t bs;
    uint64_t inblk;   /* bytes of the current block so far */
} ncs_stream_t;

static int ncs_open(ncs_stream_t *n, const depot_conn_t *c)
{
    n->md = cks_md(c->ncs_type);
    n->bs = c->ncs_bs;
    n->inblk = 0;
    n->x = EVP_MD_CTX_new();
    return n->x && EVP_DigestInit_ex(n->x, n->md, NULL) ? 0 : -1;
}

/* How much of k bytes to take before the current block is full. */
static size_t ncs_room(const ncs_stream_t *n, size_t k)
{
    return n->bs - n->inblk < k ? (size_t)(n->bs - n->inblk) : k;
}

/* The current block's digest in hex (its length returned) and a new block begun. */
static size_t ncs_finish(ncs_stream_t *n, char *hex)
{
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned int dl = 0;
    EVP_DigestFinal_ex(n->x, d, &dl);
    lns_hex(d, dl, hex);
    EVP_DigestInit_ex(n->x, n->md, NULL);
    n->inblk = 0;
    return 2 * dl;
}

int depot_cks_recv(depot_conn_t *c, int fd, uint64_t base, const ibp_vec_t *v, int nv,
                   int timeout_ms)
{
    ncs_stream_t n = {0};
    size_t hl = 2 * cks_len(c->ncs_type);
    int rc = IBP_OK, mismatch = 0;
    char want[2 * EVP_MAX_MD_SIZE + 1], sent[2 * EVP_MAX_MD_SIZE + 1];
    if (c->dcap < CKS_CHUNK) {
        char *nb = realloc(c->dbuf, CKS_CHUNK);
        if (!nb)
            return IBP_E_INTERNAL;
        c->dbuf = nb;
        c->dcap = CKS_CHUNK;
    }
    if (ncs_open(&n, c) < 0) {
        EVP_MD_CTX_free(n.x);
        return IBP_E_INTERNAL;
    }
    for (int i = 0; i < nv && rc == IBP_OK; i++) {
        for (uint64_t got = 0; rc == IBP_OK && got < v[i].len;) {
            size_t k = ncs_room(&n, v[i].len - got > CKS_CHUNK ? CKS_CHUNK : (size_t)(v[i].len - got));
            if (conn_read(c, c->dbuf, k, timeout_ms) < 0)
                rc = IBP_E_SOCK_READ;
            else if (lns_fail("data.write") < 0 ||
                     lns_pwrite_all(fd, c->dbuf, k, base + v[i].off + got) < 0)
                rc = IBP_E_FILE_WRITE;
            else
                EVP_DigestUpdate(n.x, c->dbuf, k);
            got += k;
            n.inblk += k;
            if (rc == IBP_OK && n.inblk == n.bs) {
                ncs_finish(&n, want);
                if (conn_read(c, sent, hl, timeout_ms) < 0)
                    rc = IBP_E_SOCK_READ;
                else if (memcmp(sent, want, hl) != 0)
                    mismatch = 1;
            }
        }
    }
    if (rc == IBP_OK && n.inblk > 0) {
        ncs_finish(&n, want);
        if (conn_read(c, sent, hl, timeout_ms) < 0)
            rc = IBP_E_SOCK_READ;
        else if (memcmp(sent, want, hl) != 0)
            mismatch = 1;
    }
    EVP_MD_CTX_free(n.x);
    if (rc == IBP_OK && mismatch) {
        lns_log(LNS_LOG_WARN, "%s: %016llx: a block's network checksum does not match its bytes",
                c->peer, (unsigned long long)c->ev_alloc);
        rc = IBP_E_CHKSUM;
    }
    return rc;
}

int depot_cks_send(depot_conn_t *c, int fd, uint64_t base, const ibp_vec_t *v, int nv,
                   int timeout_ms)
{
    ncs_stream_t n = {0};
    char hex[2 * EVP_MAX_MD_SIZE + 1];
    char *buf = malloc(CKS_CHUNK);
    int rc = buf && ncs_open(&n, c) == 0 ? 0 : -1;
    uint64_t left = 0; /* the last digest goes without MSG_MORE */
    for (int i = 0; i < nv; i++)
        left += v[i].len;
    for (int i = 0; rc == 0 && i < nv; i++) {
        for (uint64_t got = 0; rc == 0 && got < v[i].len;) {
            size_t k = ncs_room(&n, v[i].len - got > CKS_CHUNK ? CKS_CHUNK : (size_t)(v[i].len - got));
            if (pread_full(fd, buf, k, base + v[i].off + got) < 0 ||
                lns_write_full(c->fd, buf, k, MSG_MORE, timeout_ms, INT64_MAX) < 0)
                rc = -1;
            else
                EVP_DigestUpdate(n.x, buf, k);
            got += k;
            left -= k;
            n.inblk += k;
            if (rc == 0 && (n.inblk == n.bs || left == 0)) {
                size_t hl = ncs_finish(&n, hex);
                rc = lns_write_full(c->fd, hex, hl, left ? MSG_MORE : 0, timeout_ms,
                                    INT64_MAX) < 0 ? -1 : 0;
            }
        }
    }
    if (n.x)
        EVP_MD_CTX_free(n.x);
    free(buf);
    return rc;
}

/* ---- the requests ------------------------------------------------------------------------ */

int depot_chksum_request(const char *line, size_t len)
{
    long v[2];
    size_t e;
    return depot_line_head(line, len, v, &e) == 0 && (v[0] == 0 || v[0] == 1) &&
           ((v[1] >= CMD_PUSH_CHKSUM && v[1] <= CMD_VALIDATE_CHKSUM) ||
            v[1] == CMD_VEC_WRITE_CHKSUM || v[1] == CMD_VEC_READ_CHKSUM);
}

/* The next space-separated field at *i as a signed number.  0 or -1. */
static int next_num(const char *line, size_t len, size_t *i, long long *out)
{
    char buf[32];
    size_t n = 0;
    while (*i < len && line[*i] == ' ')
        (*i)++;
    while (*i < len && line[*i] != ' ' && n < sizeof buf - 1)
        buf[n++] = line[(*i)++];
    buf[n] = 0;
    int64_t v;
    if (n == 0 || ibp_parse_i64(buf, n, &v) < 0)
        return -1;
    *out = v;
    return 0;
}

/* GET_CHKSUM "V 31 RID#key tk info_only T" and VALIDATE_CHKSUM "V 32 RID#key tk correct T":
 * on a manage capability of the whole allocation. */
static int get_validate(depot_conn_t *c, const char *line, size_t len, long cmd, ibp_req_t *req)
{
    char copy[1024], *f[8];
    if (len >= sizeof copy)
        return IBP_E_BAD_FORMAT;
    memcpy(copy, line, len);
    copy[len] = 0;
    int64_t flag;
    if (ibp_split_fields(copy, f, 8) != 6 || ibp_parse_i64(f[4], strlen(f[4]), &flag) < 0)
        return IBP_E_BAD_FORMAT;
    if (flag < 0)
        return IBP_E_INV_PAR_SIZE;
    char *hash = strchr(f[2], '#');
    if (!hash || hash - f[2] >= IBP_MAX_RID || strlen(hash + 1) >= IBP_MAX_KEY ||
        strlen(f[3]) >= IBP_MAX_KEY)
        return IBP_E_BAD_FORMAT;
    *hash = 0;
    snprintf(req->rid, sizeof req->rid, "%s", f[2]);
    snprintf(req->key, sizeof req->key, "%s", hash + 1);
    snprintf(req->typekey, sizeof req->typekey, "%s", f[3]);

    depot_alloc_t *a;
    int kind, rc = depot_store_lookup(c->srv->store, req->rid, req->key, req->typekey, &a, &kind);
    if (rc != IBP_OK)
        return rc;
    c->ev_alloc = a->r.id;
    uint64_t base, limit;
    if (kind != DEPOT_MANAGE) {
        depot_alloc_release(a);
        return IBP_E_CAP_NOT_MANAGE;
    }
    if ((rc = depot_alias_resolve(&a, &base, &limit)) != IBP_OK) {
        depot_alloc_release(a);
        return rc;
    }
    if (base != 0 || (limit != UINT64_MAX && limit < a->r.max_size)) {
        depot_alloc_release(a); /* ACCRE: only an alias of the whole allocation */
        return IBP_E_WOULD_EXCEED_LIMIT;
    }
    depot_row_t row;
    depot_alloc_snapshot(a, &row);
    if (!row.cks_type) {
        depot_alloc_release(a);
        return IBP_E_CHKSUM; /* ACCRE: no checksums stored */
    }
    uint64_t nblocks = (row.cur_size + row.cks_bs - 1) / row.cks_bs;
    depot_data_t d = {.fd = -1};
    if (row.cur_size > 0 && depot_data_open(a->res, &row, 0, &d) < 0) {
        depot_alloc_release(a);
        return IBP_E_FILE_OPEN;
    }
    if (cmd == CMD_VALIDATE_CHKSUM) {
        uint64_t bad = 0;
        if (nblocks && check_blocks(a, &d, 0, nblocks - 1, row.cur_size, 0, &bad) < 0)
            rc = IBP_E_FILE_READ;
        else
            depot_reply(c, 0, "1 %llu\n", (unsigned long long)bad);
    } else {
        cks_file_t sf;
        size_t dl = cks_len(row.cks_type);
        depot_reply(c, flag == 1 ? 0 : MSG_MORE, "1 %d %zu %u %llu %llu\n", row.cks_type, dl,
                    row.cks_bs, (unsigned long long)nblocks, (unsigned long long)(nblocks * dl));
        if (flag != 1 && nblocks > 0) {
            int have = side_open(a, 0, &sf) == 0;
            unsigned char md[EVP_MAX_MD_SIZE];
            unsigned int el = 0;
            EVP_Digest("", 0, md, &el, cks_md(row.cks_type), NULL); /* a block never written */
            for (uint64_t b = 0; b < nblocks && !c->close; b++) {
                uint32_t covered = 0;
                unsigned char e[EVP_MAX_MD_SIZE];
                if (have && entry_get(&sf, b, &covered, e) < 0)
                    covered = 0;
                if (lns_write_full(c->fd, covered ? e : md, dl, b + 1 < nblocks ? MSG_MORE : 0,
                                   depot_conn_timeout_ms(c, req->timeout), INT64_MAX) < 0)
                    c->close = 1;
            }
            if (have)
                close(sf.fd);
        }
    }
    depot_data_close(&d);
    depot_alloc_release(a);
    return rc;
}

int depot_cmd_chksum(depot_conn_t *c, const char *line, size_t len, ibp_req_t *req)
{
    long v[2];
    size_t i;
    long long type, bs;
    int rc;

    memset(req, 0, sizeof *req);
    req->cmd = -1;
    if (depot_line_head(line, len, v, &i) < 0) {
        c->close = 1;
        return depot_reply_err(c, IBP_E_BAD_FORMAT);
    }
    req->version = (int)v[0];
    req->cmd = (int)v[1];
    if (v[1] == CMD_GET_CHKSUM || v[1] == CMD_VALIDATE_CHKSUM) {
        rc = get_validate(c, line, len, v[1], req);
        if (rc != IBP_OK)
            depot_reply_err(c, rc);
        return rc;
    }
    /* The plain command each one is, with "<type> <blocksize>" after the command number. */
    int plain;
    switch (v[1]) {
    case CMD_LOAD_CHKSUM: plain = IBP_CMD_LOAD; break;
    case CMD_WRITE_CHKSUM: plain = IBP_CMD_WRITE; break;
    case CMD_STORE_CHKSUM: plain = IBP_CMD_STORE; break;
    case CMD_ALLOCATE_CHKSUM: plain = IBP_CMD_ALLOCATE; break;
    case CMD_VEC_WRITE_CHKSUM: plain = IBP_CMD_VEC_WRITE; break;
    case CMD_VEC_READ_CHKSUM: plain = IBP_CMD_VEC_READ; break;
    case CMD_SEND_CHKSUM: plain = IBP_CMD_SEND; break;
    case CMD_PUSH_CHKSUM: plain = DEPOT_CMD_PUSH; break;
    case CMD_PULL_CHKSUM: plain = DEPOT_CMD_PULL; break;
    case CMD_SPLIT_ALLOCATE_CHKSUM: plain = DEPOT_CMD_SPLIT; break;
    default: plain = 0; break; /* 26: no Phoebus gateway (docs/interop.md) */
    }
    if (!plain) {
        c->close = 1;
        return depot_reply_err(c, IBP_E_INVALID_CMD);
    }
    int store = plain == IBP_CMD_WRITE || plain == IBP_CMD_STORE || plain == IBP_CMD_VEC_WRITE;
    if (next_num(line, len, &i, &type) < 0 || next_num(line, len, &i, &bs) < 0) {
        c->close = 1;
        return depot_reply_err(c, IBP_E_BAD_FORMAT);
    }
    /* ACCRE: an allocation (ALLOCATE, SPLIT) may say NONE (0); its block size is then not
     * looked at.  A transfer needs a real type and a block size of at least 1. */
    int alloc = plain == IBP_CMD_ALLOCATE || plain == DEPOT_CMD_SPLIT;
    if (alloc ? (type != 0 && !cks_md((int)type)) : !cks_md((int)type))
        rc = IBP_E_CHKSUM_TYPE;
    else if (alloc ? (type != 0 && (bs <= 0 || bs > DEPOT_CKS_BS_MAX))
                   : (bs < 1 || bs > DEPOT_CKS_BS_MAX))
        rc = IBP_E_CHKSUM_BLOCKSIZE;
    else
        rc = IBP_OK;
    /* The plain command's line; req points into it (a vector's ranges) until the end. */
    char *rest = NULL;
    if (rc == IBP_OK && !(rest = malloc(IBP_MAX_REQ_LINE)))
        rc = IBP_E_INTERNAL;
    if (rc == IBP_OK) {
        int n = snprintf(rest, IBP_MAX_REQ_LINE, "%ld %d%.*s", v[0], plain, (int)(len - i),
                         line + i);
        if (n < 0 || n >= IBP_MAX_REQ_LINE)
            rc = IBP_E_BAD_FORMAT;
        else if (plain == DEPOT_CMD_SPLIT || plain == DEPOT_CMD_PUSH || plain == DEPOT_CMD_PULL) {
            /* SPLIT's new allocation gets the disk checksums; PUSH/PULL copy the bytes as the
             * plain ones do, as SEND_CHKSUM (docs/interop.md).  They answer, errors included. */
            uint32_t cbs = type ? (uint32_t)(bs > UINT32_MAX ? UINT32_MAX : bs) : 0;
            rc = depot_cmd_accre_cks(c, rest, (size_t)n, req,
                                     plain == DEPOT_CMD_SPLIT ? (int)type : 0, cbs);
            free(rest);
            return rc;
        } else {
            rc = ibp_req_parse(rest, (size_t)n, req);
        }
    }
    if (rc != IBP_OK) {
        free(rest);
        depot_reply_err(c, rc);
        if (store || rc == IBP_E_BAD_FORMAT || rc == IBP_E_INTERNAL)
            c->close = 1; /* the data may follow the line */
        return rc;
    }
    if (plain == IBP_CMD_ALLOCATE) {
        rc = depot_cmd_allocate_cks(c, req, (int)type,
                                    type ? (uint32_t)(bs > UINT32_MAX ? UINT32_MAX : bs) : 0);
        free(rest);
        return rc;
    }
    c->ncs_type = (int)type;
    c->ncs_bs = (uint32_t)(bs > UINT32_MAX ? UINT32_MAX : bs);
    /* SEND_CHKSUM: the bytes go to the target as a plain SEND's do (docs/interop.md: ACCRE's
     * own sends a plain STORE line and a checksummed stream, which no target can store). */
    rc = store ? depot_cmd_store(c, req)
         : plain == IBP_CMD_VEC_READ ? depot_cmd_vec_read(c, req)
         : plain == IBP_CMD_SEND ? depot_cmd_send(c, req) : depot_cmd_load(c, req);
    c->ncs_type = 0;
    c->ncs_bs = 0;
    free(rest);
    return rc;
}
