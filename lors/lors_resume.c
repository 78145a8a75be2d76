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
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lors.h"
#include "lors_checksum.h"

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

/* Hex digest of fd bytes [from, from + n) into *hex (malloc'd). */
static int digest_of(int fd, int64_t from, int64_t n, const ckmap_t *c, unsigned char *buf,
                     char **hex)
{
    lors_ck_t ck;
    int rc = lors_ck_init(&ck, c->alg, c->bs);
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
    if (rc == LORS_OK)
        rc = lors_ck_finish(&ck, hex);
    lors_ck_free(&ck);
    return rc;
}

int lors_verify_prefix(const xnd_t *x, int fd, int64_t offset, int64_t len, int64_t *good)
{
    ckmap_t *cm;
    size_t n = 0;
    unsigned char *buf;
    int rc = LORS_OK;

    if (good)
        *good = 0;
    if (!x || fd < 0 || offset < 0 || len < 0 || !good || offset > INT64_MAX - len)
        return LORS_E_INVAL;
    if (len == 0)
        return LORS_OK;
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
            rc = digest_of(fd, pos, end - p, c, buf, &hex);
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
