/* lors_resume.c -- lors_verify_prefix: how much of a partly downloaded file can be trusted.
 *
 * lors_download -R appends to an output file that an earlier run left behind; a crash, a full
 * disk or an editor may have left wrong bytes at its end (or anywhere).  The exNode's
 * lns_checksum digests cover the file in checksum blocks, so the file can be checked without
 * touching a depot: walk it from its start, block by block, accepting a block when the digest
 * of any replica whose checksum block is exactly those bytes matches.  The first block that
 * no replica vouches for ends the trusted prefix: a block that fails, one that runs past the
 * bytes the file has (the tail of an interrupted download), one that straddles the start of
 * the range, or bytes that no checksummed mapping holds.
 *
 * An erasure-coded file has no lns_checksum; its column mappings hold one digest per piece.
 * A data piece is file bytes (the last stripe's zero-padded), so the same walk goes piece by
 * piece: at each position, the data piece that starts there, vouched for by the digest of any
 * mapping of its column that holds its stripe, computed over the file's bytes plus the
 * padding.  Parity pieces vouch for nothing here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lors.h"
#include "lors_checksum.h"
#include "lors_ec_int.h"

#define READ_CHUNK ((size_t)1 << 20)

typedef struct ckmap {    /* a mapping with a usable lns_checksum */
    int64_t off, len, bs;
    const char *alg, *digests;
    size_t dlen;          /* hex characters per digest; 0 until the first block tells */
} ckmap_t;

static int usable(const xnd_mapping_t *m, ckmap_t *c)
{
    if (!m->func || strcmp(m->func->name, LORS_CHECKSUM_FUNC) != 0 || m->logical_length <= 0)
        return 0;
    if (xnd_meta_get_string(&m->func->args, "algorithm", &c->alg) != XND_OK ||
        xnd_meta_get_int(&m->func->args, "blocksize", &c->bs) != XND_OK || c->bs <= 0 ||
        xnd_meta_get_string(&m->func->args, "digests", &c->digests) != XND_OK)
        return 0;
    int64_t blocks = (m->logical_length + c->bs - 1) / c->bs;
    size_t hexlen = strlen(c->digests);
    if (hexlen == 0 || hexlen % (size_t)blocks != 0)
        return 0;
    c->dlen = hexlen / (size_t)blocks;
    c->off = m->exnode_offset;
    c->len = m->logical_length;
    return 1;
}

/* Hex digest of fd bytes [from, from + n) and pad zero bytes into *hex (malloc'd). */
static int digest_of(int fd, int64_t from, int64_t n, int64_t pad, const char *alg, int64_t bs,
                     unsigned char *buf, char **hex)
{
    lors_ck_t ck;
    int rc = lors_ck_init(&ck, alg, bs);
    while (rc == LORS_OK && n > 0) {
        size_t want = n < (int64_t)READ_CHUNK ? (size_t)n : READ_CHUNK;
        ssize_t got = pread(fd, buf, want, from);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            rc = LORS_E_READ;
            break;
        }
        rc = lors_ck_update(&ck, buf, (size_t)got);
        from += got;
        n -= got;
    }
    if (pad > 0)
        memset(buf, 0, pad < (int64_t)READ_CHUNK ? (size_t)pad : READ_CHUNK);
    while (rc == LORS_OK && pad > 0) {
        size_t z = pad < (int64_t)READ_CHUNK ? (size_t)pad : READ_CHUNK;
        rc = lors_ck_update(&ck, buf, z);
        pad -= (int64_t)z;
    }
    if (rc == LORS_OK)
        rc = lors_ck_finish(&ck, hex);
    lors_ck_free(&ck);
    return rc;
}

/* The digest the exNode lists for data piece s of column c, if it is the n bytes of fd at
 * from and pad zero bytes: their own digest, bound to the piece's place. */
static int piece_digest_of(const lors__ec_t *ec, const lors__ec_col_t *c, int64_t s, int fd,
                           int64_t from, int64_t n, int64_t pad, unsigned char *buf, char **hex)
{
    char *own = NULL;
    int rc = digest_of(fd, from, n, pad, c->alg, n + pad, buf, &own);
    if (rc == LORS_OK)
        rc = lors__ec_bind(ec, s, c->column, c->alg, own, hex);
    free(own);
    return rc;
}

/* 1 if digest hex matches digest k of a column's list (hexlen digits each). */
static int same_digest(const char *hex, const lors__ec_col_t *c, int64_t k)
{
    return hex && strlen(hex) == c->hexlen &&
           memcmp(hex, c->digests + (size_t)k * c->hexlen, c->hexlen) == 0;
}

/* The erasure-coded walk: the end of the data piece at file position offset + *pos (at fd
 * position at + pos) if a digest vouches for it, piece after piece. */
static int verify_ec(const xnd_t *x, const lors__ec_t *ec, int fd, int64_t at, int64_t offset,
                     int64_t len, unsigned char *buf, int64_t *good)
{
    size_t n = x->nmaps;
    lors__ec_col_t *cols = calloc(n ? n : 1, sizeof *cols);
    int rc = cols ? LORS_OK : LORS_E_NOMEM;
    for (size_t i = 0; rc == LORS_OK && i < n; i++)
        lors__ec_col(ec, x->maps[i], &cols[i]);
    int64_t S = (int64_t)ec->k * ec->piece, pos = 0;
    while (rc == LORS_OK && pos < len) {
        int64_t p = offset + pos, s = p / S, next = -1;
        if (s >= ec->stripes)
            break;
        int64_t plen = lors__ec_piece_len(ec, s), in = p - s * S;
        if (plen <= 0 || in % plen != 0)
            break; /* inside a piece: the range starts there, it cannot be checked */
        int j = (int)(in / plen);
        int64_t a, l;
        lors__ec_data_range(ec, s, j, &a, &l);
        if (l <= 0 || a != p || p + l > offset + len)
            break; /* the file stops inside this piece */
        for (size_t i = 0; i < n && next < 0 && rc == LORS_OK; i++) {
            const lors__ec_col_t *c = &cols[i];
            if (!c->ok || c->column != j || !c->alg || !c->digests || c->hexlen == 0 ||
                s < c->first || s >= c->first + c->n)
                continue;
            char *hex = NULL;
            rc = piece_digest_of(ec, c, s, fd, at + pos, l, plen - l, buf, &hex);
            if (rc == LORS_E_DIGEST || rc == LORS_E_INVAL)
                rc = LORS_OK;
            else if (rc == LORS_OK && same_digest(hex, c, s - c->first))
                next = p + l;
            free(hex);
        }
        if (next < 0)
            break;
        pos = next - offset;
    }
    free(cols);
    *good = pos;
    return rc;
}

int lors_verify_prefix(const xnd_t *x, int fd, int64_t offset, int64_t len, int64_t *good)
{
    return lors_verify_at(x, fd, 0, offset, len, good);
}

int lors_verify_at(const xnd_t *x, int fd, int64_t at, int64_t offset, int64_t len,
                   int64_t *good)
{
    ckmap_t *cm;
    size_t n = 0;
    unsigned char *buf;
    int rc = LORS_OK;

    if (good)
        *good = 0;
    if (!x || fd < 0 || offset < 0 || len < 0 || !good || offset > INT64_MAX - len || at < 0 ||
        at > INT64_MAX - len)
        return LORS_E_INVAL;
    if (len == 0)
        return LORS_OK;
    lors__ec_t ec;
    int ec_present = 0;
    char err[128];
    if (lors__ec_read(x, &ec, &ec_present, err, sizeof err) != LORS_OK)
        return LORS_E_INVAL;
    if (ec_present) {
        buf = malloc(READ_CHUNK);
        rc = buf ? verify_ec(x, &ec, fd, at, offset, len, buf, good) : LORS_E_NOMEM;
        free(buf);
        lors__ec_free(&ec);
        return rc;
    }
    cm = calloc(x->nmaps ? x->nmaps : 1, sizeof *cm);
    buf = malloc(READ_CHUNK);
    if (!cm || !buf) {
        free(cm);
        free(buf);
        return LORS_E_NOMEM;
    }
    for (size_t i = 0; i < x->nmaps; i++)
        if (usable(x->maps[i], &cm[n]))
            n++;

    int64_t pos = 0; /* bytes of the file verified so far */
    while (pos < len && rc == LORS_OK) {
        int64_t p = offset + pos, next = -1;
        for (size_t i = 0; i < n && next < 0 && rc == LORS_OK; i++) {
            const ckmap_t *c = &cm[i];
            if (p < c->off || p >= c->off + c->len || (p - c->off) % c->bs != 0)
                continue; /* does not hold p, or p is inside one of its blocks */
            int64_t k = (p - c->off) / c->bs;
            int64_t end = p + c->bs < c->off + c->len ? p + c->bs : c->off + c->len;
            if (end > offset + len)
                continue; /* the file stops inside this block: it cannot be checked */
            char *hex = NULL;
            rc = digest_of(fd, at + pos, end - p, 0, c->alg, c->bs, buf, &hex);
            if (rc == LORS_E_DIGEST || rc == LORS_E_INVAL) {
                rc = LORS_OK; /* an algorithm we cannot compute vouches for nothing */
            } else if (rc == LORS_OK && strlen(hex) == c->dlen &&
                       memcmp(hex, c->digests + (size_t)k * c->dlen, c->dlen) == 0) {
                next = end;
            }
            free(hex);
        }
        if (next < 0)
            break;
        pos = next - offset;
    }
    free(buf);
    free(cm);
    *good = pos;
    return rc;
}
