/* lors_b3tree.c -- BLAKE3's tree at 16 KiB groups (lors_b3tree.h).
 *
 * Built on the reference implementation's internal routines (blake3_impl.h, compiled into
 * liblors with it): blake3_hash_many hashes many equal inputs side by side with the widest
 * SIMD the CPU has, which is how its own hasher hashes chunks and parents.  A full group is
 * 16 chunks and four levels of parents; up to BATCH groups go through each level at once.
 * The shape rule (BLAKE3 paper, 2.1): a node over n > 1 leaves has on its left the largest
 * power of two less than n, so aligned full groups are subtrees and the tree over a block's
 * groups has the same shape in groups as in chunks.
 */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-conversion"
#pragma GCC diagnostic ignored "-Wconversion"
#pragma GCC diagnostic ignored "-Wcast-qual"
#include <blake3.h>
#include <blake3_impl.h>
#pragma GCC diagnostic pop

#include <stdlib.h>
#include <string.h>

#include "lns_array.h"
#include "lors_b3tree.h"

#define CHUNKS (LORS_B3_GROUP / BLAKE3_CHUNK_LEN) /* 16 */
#define BATCH 16                                  /* full groups hashed together */

int64_t lors__b3_groups(int64_t len)
{
    return len <= 0 ? 0 : (len + LORS_B3_GROUP - 1) / LORS_B3_GROUP;
}

int64_t lors__b3_outboard_len(int64_t len, int64_t bs)
{
    if (len <= 0 || bs <= LORS_B3_GROUP)
        return 0;
    int64_t full = len / bs, last = len % bs;
    int64_t n = full * lors__b3_groups(bs) + (lors__b3_groups(last) > 1 ? lors__b3_groups(last)
                                                                          : 0);
    return n * LORS_B3_CV;
}

static void cv_bytes(const uint32_t w[8], unsigned char out[LORS_B3_CV])
{
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (unsigned char)w[i];
        out[4 * i + 1] = (unsigned char)(w[i] >> 8);
        out[4 * i + 2] = (unsigned char)(w[i] >> 16);
        out[4 * i + 3] = (unsigned char)(w[i] >> 24);
    }
}

/* One parent node: the CVs of its left and right children, side by side in lr. */
static void parent(const unsigned char lr[2 * LORS_B3_CV], uint8_t flags,
                   unsigned char out[LORS_B3_CV])
{
    uint32_t cv[8];
    memcpy(cv, IV, sizeof cv);
    blake3_compress_in_place(cv, lr, BLAKE3_BLOCK_LEN, 0, (uint8_t)(PARENT | flags));
    cv_bytes(cv, out);
}

/* The CV (non-root) of one chunk of len bytes (1 .. 1024), chunk number counter. */
static void chunk_cv(const unsigned char *p, size_t len, uint64_t counter,
                     unsigned char out[LORS_B3_CV])
{
    uint32_t cv[8];
    memcpy(cv, IV, sizeof cv);
    size_t nblocks = len ? (len + BLAKE3_BLOCK_LEN - 1) / BLAKE3_BLOCK_LEN : 1;
    for (size_t b = 0; b < nblocks; b++) {
        unsigned char block[BLAKE3_BLOCK_LEN] = {0};
        size_t n = len - b * BLAKE3_BLOCK_LEN < BLAKE3_BLOCK_LEN ? len - b * BLAKE3_BLOCK_LEN
                                                                 : BLAKE3_BLOCK_LEN;
        memcpy(block, p + b * BLAKE3_BLOCK_LEN, n);
        uint8_t flags = (uint8_t)((b == 0 ? CHUNK_START : 0) |
                                  (b + 1 == nblocks ? CHUNK_END : 0));
        blake3_compress_in_place(cv, block, (uint8_t)n, counter, flags);
    }
    cv_bytes(cv, out);
}

/* The node over n >= 1 CVs by the shape rule; flags ROOT at the top (n >= 2 then). */
static void merge(const unsigned char (*cvs)[LORS_B3_CV], size_t n, uint8_t flags,
                  unsigned char out[LORS_B3_CV])
{
    if (n == 1) {
        memcpy(out, cvs[0], LORS_B3_CV);
        return;
    }
    size_t left = 1;
    while (left * 2 < n)
        left *= 2;
    unsigned char lr[2 * LORS_B3_CV];
    merge(cvs, left, 0, lr);
    merge(cvs + left, n - left, 0, lr + LORS_B3_CV);
    parent(lr, flags, out);
}

/* k <= BATCH full groups at p, the first of them group first of its block. */
static void full_groups(const unsigned char *p, size_t k, uint64_t first,
                        unsigned char (*out)[LORS_B3_CV])
{
    const uint8_t *in[BATCH * CHUNKS] = {0};
    unsigned char cv[BATCH * CHUNKS][LORS_B3_CV], up[BATCH * CHUNKS / 2][LORS_B3_CV];
    size_t n = k * CHUNKS;
    for (size_t i = 0; i < n; i++)
        in[i] = p + i * BLAKE3_CHUNK_LEN;
    blake3_hash_many(in, n, BLAKE3_CHUNK_LEN / BLAKE3_BLOCK_LEN, IV, first * CHUNKS, true, 0,
                     CHUNK_START, CHUNK_END, cv[0]);
    /* four levels of parents, each pair of CVs one 64-byte block; a group's 16 leaves are
     * adjacent, so pairs never straddle two groups */
    unsigned char (*from)[LORS_B3_CV] = cv, (*to)[LORS_B3_CV] = up;
    for (; n > k; n /= 2) {
        for (size_t i = 0; i < n / 2; i++)
            in[i] = from[2 * i];
        blake3_hash_many(in, n / 2, 1, IV, 0, false, PARENT, 0, 0, to[0]);
        unsigned char (*t)[LORS_B3_CV] = from;
        from = to;
        to = t;
    }
    memcpy(out, from, k * LORS_B3_CV);
}

void lors__b3_group_cvs(const unsigned char *p, size_t len, uint64_t first,
                        unsigned char (*out)[LORS_B3_CV])
{
    size_t full = len / LORS_B3_GROUP;
    for (size_t i = 0; i < full; i += BATCH) {
        size_t k = full - i < BATCH ? full - i : BATCH;
        full_groups(p + i * LORS_B3_GROUP, k, first + i, out + i);
    }
    size_t rest = len - full * LORS_B3_GROUP;
    if (!rest)
        return;
    /* a shorter last group: its chunks, the last maybe short, under the same rule */
    const unsigned char *q = p + full * LORS_B3_GROUP;
    unsigned char cv[CHUNKS][LORS_B3_CV];
    size_t n = (rest + BLAKE3_CHUNK_LEN - 1) / BLAKE3_CHUNK_LEN;
    uint64_t c0 = (first + full) * CHUNKS;
    for (size_t c = 0; c < n; c++) {
        size_t l = rest - c * BLAKE3_CHUNK_LEN < BLAKE3_CHUNK_LEN ? rest - c * BLAKE3_CHUNK_LEN
                                                                  : BLAKE3_CHUNK_LEN;
        chunk_cv(q + c * BLAKE3_CHUNK_LEN, l, c0 + c, cv[c]);
    }
    merge((const unsigned char (*)[LORS_B3_CV])cv, n, 0, out[full]);
}

void lors__b3_root(const unsigned char (*cvs)[LORS_B3_CV], size_t n,
                   unsigned char out[LORS_B3_CV])
{
    merge(cvs, n, ROOT, out);
}

void lors__b3_small(const unsigned char *p, size_t len, unsigned char out[LORS_B3_CV])
{
    blake3_hasher h; /* the whole block: the reference hasher as it is */
    blake3_hasher_init(&h);
    blake3_hasher_update(&h, p, len);
    blake3_hasher_finalize(&h, out, LORS_B3_CV);
}

/* ---- streaming ------------------------------------------------------------------------ */

void lors__b3s_init(lors_b3s_t *s, int64_t bs)
{
    memset(s, 0, sizeof *s);
    s->bs = bs;
}

void lors__b3s_free(lors_b3s_t *s)
{
    free(s->cvs);
    free(s->ob);
    memset(s, 0, sizeof *s);
}

/* The CVs of len bytes of whole groups (the last maybe short) onto the block's list. */
static int add_groups(lors_b3s_t *s, const unsigned char *p, size_t len)
{
    size_t n = (size_t)lors__b3_groups((int64_t)len);
    if (lns_grow(&s->cvs, &s->cvcap, s->ncvs + n, LORS_B3_CV, 64) < 0)
        return -1;
    lors__b3_group_cvs(p, len, s->ncvs, s->cvs + s->ncvs);
    s->ncvs += n;
    return 0;
}

int lors__b3s_end(lors_b3s_t *s, int (*digest)(void *arg, const unsigned char d[LORS_B3_CV]),
                  void *arg)
{
    unsigned char d[LORS_B3_CV];
    if (s->in_block == 0)
        return 0;
    if (s->ncvs == 0) { /* the whole block is in the buffer: one group, hashed as a root */
        lors__b3_small(s->gbuf, s->glen, d);
    } else {
        if (s->glen && add_groups(s, s->gbuf, s->glen) < 0)
            return -1;
        lors__b3_root((const unsigned char (*)[LORS_B3_CV])s->cvs, s->ncvs, d);
        size_t n = s->ncvs * LORS_B3_CV;
        if (lns_grow(&s->ob, &s->obcap, s->oblen + n, 1, 4096) < 0)
            return -1;
        memcpy(s->ob + s->oblen, s->cvs, n);
        s->oblen += n;
    }
    s->glen = s->ncvs = 0;
    s->in_block = 0;
    return digest(arg, d);
}

int lors__b3s_update(lors_b3s_t *s, const void *data, size_t len,
                     int (*digest)(void *arg, const unsigned char d[LORS_B3_CV]), void *arg)
{
    const unsigned char *p = data;
    while (len > 0) {
        size_t k = (size_t)(s->bs - s->in_block) < len ? (size_t)(s->bs - s->in_block) : len;
        s->in_block += (int64_t)k;
        len -= k;
        /* k bytes of this block at p; a full buffer is hashed only once a byte follows it */
        while (k > 0) {
            if (s->glen == LORS_B3_GROUP) {
                if (add_groups(s, s->gbuf, LORS_B3_GROUP) < 0)
                    return -1;
                s->glen = 0;
            }
            size_t direct = s->glen ? 0 : (k - 1) / LORS_B3_GROUP * LORS_B3_GROUP;
            if (direct) {
                if (add_groups(s, p, direct) < 0)
                    return -1;
            } else {
                direct = LORS_B3_GROUP - s->glen < k ? LORS_B3_GROUP - s->glen : k;
                memcpy(s->gbuf + s->glen, p, direct);
                s->glen += direct;
            }
            p += direct;
            k -= direct;
        }
        if (s->in_block == s->bs && lors__b3s_end(s, digest, arg) < 0)
            return -1;
    }
    return 0;
}
