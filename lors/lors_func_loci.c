/* lors_func_loci.c -- the end-to-end functions of the original LoRS tools (1.3.1): a mapping's
 * chain parsed, its blocks found in the allocation, and decoded.
 *
 * The original lors_upload puts each mapping's bytes through a chain of functions (its -k,
 * -x, -e, -a, -z, in the order given) and writes the chain as nested exnode:function elements,
 * the last one applied outermost, each with a blocksize argument: the bytes of each block it
 * wrote.  The fixed-size functions work block by block: plain block i (e2e_blocksize bytes of
 * the mapping's range, the last one shorter) becomes stored block i, so any run of whole
 * blocks decodes on its own; zlib compresses the whole mapping, so a chain with it is one
 * block.  docs/exnode.md, "The LoRS 1.3.1 functions", has each layout (learnt from the
 * original's sources and checked against its output).
 *
 * Every size the exNode states is checked against the layout before a byte is read: a chain
 * lns cannot account for exactly is refused, never guessed at.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "lns_hex.h"
#include "lors_func_int.h"
#include "lns_err.h"

#define CK_HEAD 33          /* checksum: 32 hex digits of MD5 and ':' before each block */
#define ZLIB_HEAD 13        /* zlib: the plain length in 12 decimal digits and ':' */

static const struct {
    const char *name;
    int kind;
    int keyed;
} known[] = {
    {"checksum", LORS_LOCI_CHECKSUM, 0},
    {"xor_encrypt", LORS_LOCI_XOR, 1},
    {"zlib_compress", LORS_LOCI_ZLIB, 0},
    {"des_encrypt", LORS_LOCI_DES, 1},
    {"aes_encrypt", LORS_LOCI_AES, 1},
};

static const char *kind_name(int kind)
{
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (known[i].kind == kind)
            return known[i].name;
    return "?";
}

/* The bytes a fixed-size step writes for a block of in bytes. */
static int64_t step_out(int kind, int64_t in)
{
    return kind == LORS_LOCI_CHECKSUM ? in + CK_HEAD : in;
}

/* One function of the chain: known name, exactly its arguments, at most one sub-function. */
static int read_step(const xnd_func_t *f, lors__loci_step_t *s, char *why, size_t whylen)
{
    size_t k = 0;
    while (k < sizeof known / sizeof known[0] && strcmp(known[k].name, f->name) != 0)
        k++;
    if (k == sizeof known / sizeof known[0])
        return lns_err_set(why, whylen, "function \"%s\": not one lns knows", f->name);
    s->kind = known[k].kind;
    if (f->meta.n || f->extra || f->nsubs > 1)
        return lns_err_set(why, whylen, "function %s: content lns does not know", f->name);
    for (size_t i = 0; i < f->args.n; i++) {
        const char *a = f->args.items[i].name;
        if (strcmp(a, "blocksize") != 0 && !(known[k].keyed && strcmp(a, "KEY") == 0))
            return lns_err_set(why, whylen, "function %s: argument \"%s\" lns does not know",
                               f->name, a);
        for (size_t j = 0; j < i; j++)
            if (strcmp(f->args.items[j].name, a) == 0)
                return lns_err_set(why, whylen, "function %s: argument \"%s\" twice", f->name, a);
    }
    if (xnd_meta_get_int(&f->args, "blocksize", &s->bs) != XND_OK || s->bs <= 0 ||
        s->bs > LORS_LOCI_MAX_BLOCK)
        return lns_err_set(why, whylen, "function %s: blocksize missing or out of range",
                           f->name);
    if (known[k].keyed && (xnd_meta_get_string(&f->args, "KEY", &s->key) != XND_OK ||
                           !s->key[0]))
        return lns_err_set(why, whylen, "function %s: no KEY", f->name);
    return 0;
}

int lors__loci_parse(const xnd_mapping_t *m, lors__loci_t *l, char *why, size_t whylen)
{
    const xnd_func_t *f;
    int n = 0;
    memset(l, 0, sizeof *l);
    for (f = m->func; f; f = f->nsubs ? f->subs[0] : NULL) {
        if (n == LORS_LOCI_MAX_STEPS) {
            lns_err_set(why, whylen, "more than %d nested functions", LORS_LOCI_MAX_STEPS);
            return LORS_E_EXNODE;
        }
        /* outermost first in the exNode: step[] is filled from the end */
        if (read_step(f, &l->step[LORS_LOCI_MAX_STEPS - 1 - n], why, whylen) < 0)
            return LORS_E_EXNODE;
        n++;
    }
    memmove(l->step, l->step + LORS_LOCI_MAX_STEPS - n, (size_t)n * sizeof l->step[0]);
    l->n = n;
    char chain[128];
    lors__func_name(m, chain, sizeof chain);
    for (int i = 0; i < n; i++) {
        /* the original reads neither back on a 64-bit machine (docs/exnode.md): there is no
         * working implementation to hold a decoder to */
        if (l->step[i].kind == LORS_LOCI_DES) {
            lns_err_set(why, whylen, "function %s (LoRS 1.3.1 DES): not decoded: the original "
                        "tools' 64-bit DES is not DES and they cannot read it back either",
                        chain);
            return LORS_E_EXNODE;
        }
        if (l->step[i].kind == LORS_LOCI_AES) {
            lns_err_set(why, whylen, "function %s (LoRS 1.3.1 AES): not decoded: the original "
                        "tools cannot read their own AES files back", chain);
            return LORS_E_EXNODE;
        }
        l->whole |= l->step[i].kind == LORS_LOCI_ZLIB;
    }
    l->len = m->logical_length;
    if (l->len <= 0 || m->alloc_offset != 0) {
        lns_err_set(why, whylen, "function %s on a mapping with logical_length %lld and "
                    "alloc_offset %lld: the original tools write neither", chain,
                    (long long)m->logical_length, (long long)m->alloc_offset);
        return LORS_E_EXNODE;
    }
    if (l->whole) {
        /* one block: the whole mapping, e2e_blocksize its length, the last step's block
         * the whole allocation */
        l->ebs = l->len;
        l->sbs = l->last_sbs = l->step[n - 1].bs;
        l->nblocks = 1;
        if (m->e2e_blocksize != l->len || l->len > LORS_LOCI_MAX_BLOCK ||
            m->alloc_length != l->sbs) {
            lns_err_set(why, whylen, "function %s: e2e_blocksize %lld, logical_length %lld, "
                        "alloc_length %lld and a last blocksize of %lld do not make one "
                        "compressed block (of at most %lld bytes)", chain,
                        (long long)m->e2e_blocksize, (long long)l->len,
                        (long long)m->alloc_length, (long long)l->sbs,
                        (long long)LORS_LOCI_MAX_BLOCK);
            return LORS_E_EXNODE;
        }
        return LORS_OK;
    }
    l->ebs = m->e2e_blocksize;
    if (l->ebs <= 0 || l->ebs > LORS_LOCI_MAX_BLOCK) {
        lns_err_set(why, whylen, "function %s: e2e_blocksize %lld out of range", chain,
                    (long long)m->e2e_blocksize);
        return LORS_E_EXNODE;
    }
    l->nblocks = (l->len + l->ebs - 1) / l->ebs;
    int64_t in = l->ebs, last = l->len - (l->nblocks - 1) * l->ebs;
    for (int i = 0; i < n; i++) {
        int64_t want = step_out(l->step[i].kind, in);
        if (l->step[i].bs != want) {
            lns_err_set(why, whylen, "function %s: %s's blocksize is %lld, the layout makes "
                        "%lld", chain, kind_name(l->step[i].kind), (long long)l->step[i].bs,
                        (long long)want);
            return LORS_E_EXNODE;
        }
        in = want;
        last = step_out(l->step[i].kind, last);
    }
    l->sbs = in;
    l->last_sbs = last;
    int64_t need = (l->nblocks - 1) * l->sbs + l->last_sbs;
    if (m->alloc_length != need) {
        lns_err_set(why, whylen, "function %s: alloc_length %lld, the layout makes %lld", chain,
                    (long long)m->alloc_length, (long long)need);
        return LORS_E_EXNODE;
    }
    return LORS_OK;
}

void lors__loci_stored(const lors__loci_t *l, int64_t b0, int64_t b1, int64_t *off, int64_t *len)
{
    *off = b0 * l->sbs;
    *len = b1 >= l->nblocks ? (l->nblocks - 1 - b0) * l->sbs + l->last_sbs : (b1 - b0) * l->sbs;
}

int64_t lors__loci_plain(const lors__loci_t *l, int64_t b0, int64_t b1)
{
    int64_t end = b1 * l->ebs < l->len ? b1 * l->ebs : l->len;
    return end - b0 * l->ebs;
}

/* ---- MD5, and MD5 as the original computed it on 64-bit machines -------------------------- */

/* The original's MD5 is RFC 1321's reference code with its 32-bit word type defined as
 * unsigned long, which is 64 bits wide on LP64 machines: its sums and rotations are not cut
 * to 32 bits, so carries leak into later rounds and blocks, and only the low 32 bits of each
 * state word come out.  A 64-bit build therefore wrote digests that are not MD5 (a 32-bit
 * build wrote real ones).  One transform serves both: mask is 0xffffffff for MD5, all ones
 * for the 64-bit variant.  The padding and length are the same in both for blocks under
 * 512 MiB. */
static const uint32_t md5_t[64] = { /* floor(2^32 * |sin(i + 1)|), RFC 1321 */
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a,
    0xa8304613, 0xfd469501, 0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be,
    0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821, 0xf61e2562, 0xc040b340,
    0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8,
    0x676f02d9, 0x8d2a4c8a, 0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c,
    0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70, 0x289b7ec6, 0xeaa127fa,
    0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92,
    0xffeff47d, 0x85845dd1, 0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1,
    0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
};

static void md5_transform(uint64_t st[4], const unsigned char *blk, uint64_t mask)
{
    static const int sh[4][4] = {{7, 12, 17, 22}, {5, 9, 14, 20}, {4, 11, 16, 23}, {6, 10, 15, 21}};
    uint64_t x[16], v[4] = {st[0], st[1], st[2], st[3]};
    for (int i = 0; i < 16; i++)
        x[i] = (uint64_t)blk[4 * i] | (uint64_t)blk[4 * i + 1] << 8 |
               (uint64_t)blk[4 * i + 2] << 16 | (uint64_t)blk[4 * i + 3] << 24;
    for (int i = 0; i < 64; i++) {
        int r = i / 16, k;
        uint64_t b = v[1], c = v[2], d = v[3], f;
        switch (r) {
        case 0: f = (b & c) | (~b & d); k = i; break;
        case 1: f = (b & d) | (c & ~d); k = (5 * i + 1) % 16; break;
        case 2: f = b ^ c ^ d; k = (3 * i + 5) % 16; break;
        default: f = c ^ (b | ~d); k = (7 * i) % 16; break;
        }
        int s = sh[r][i % 4];
        uint64_t a = (v[0] + f + x[k] + md5_t[i]) & mask;
        a = ((a << s) | (a >> (32 - s))) & mask;
        a = (a + b) & mask;
        v[0] = d;
        v[3] = c;
        v[2] = b;
        v[1] = a;
    }
    for (int i = 0; i < 4; i++)
        st[i] = (st[i] + v[i]) & mask;
}

/* The digest of p[0..n) in 32 lowercase hex digits into hex[32]. */
static void md5_hex(const unsigned char *p, size_t n, uint64_t mask, char hex[32])
{
    uint64_t st[4] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476};
    unsigned char tail[128];
    size_t full = n / 64 * 64, rest = n - full;
    for (size_t i = 0; i < full; i += 64)
        md5_transform(st, p + i, mask);
    memset(tail, 0, sizeof tail);
    memcpy(tail, p + full, rest);
    tail[rest] = 0x80;
    size_t tl = rest < 56 ? 64 : 128;
    uint64_t bits = (uint64_t)n << 3;
    for (int i = 0; i < 8; i++)
        tail[tl - 8 + i] = (unsigned char)(bits >> (8 * i));
    for (size_t i = 0; i < tl; i += 64)
        md5_transform(st, tail + i, mask);
    unsigned char md[16];
    char s[33];
    for (int i = 0; i < 16; i++)
        md[i] = (unsigned char)(st[i / 4] >> (8 * (i % 4)));
    memcpy(hex, lns_hex(md, sizeof md, s), 32);
}

int lors__loci_md5_hex(const void *p, size_t n, int lp64, char hex[32])
{
    md5_hex(p, n, lp64 ? UINT64_MAX : 0xffffffffu, hex);
    return 0;
}

/* ---- the steps backwards ---------------------------------------------------------------- */

/* checksum: each block of bs bytes (the last shorter) is the MD5 of its data in 32 lowercase
 * hex digits, ':', the data.  In place: the data moves to the front. */
static int undo_checksum(const lors__loci_step_t *s, unsigned char *p, size_t *len, int64_t b0,
                         int verify, char *why, size_t whylen)
{
    size_t in = 0, out = 0;
    for (int64_t blk = b0; in < *len; blk++) {
        size_t n = *len - in < (size_t)s->bs ? *len - in : (size_t)s->bs;
        if (n < CK_HEAD || p[in + CK_HEAD - 1] != ':')
            return lns_err_set(why, whylen, "block %lld: no checksum header", (long long)blk),
                   -EBADMSG;
        if (verify) {
            /* MD5 from a 32-bit build of the original, or its 64-bit variant */
            char h[32];
            md5_hex(p + in + CK_HEAD, n - CK_HEAD, UINT64_MAX, h);
            if (memcmp(h, p + in, 32) != 0) {
                md5_hex(p + in + CK_HEAD, n - CK_HEAD, 0xffffffffu, h);
                if (memcmp(h, p + in, 32) != 0)
                    return lns_err_set(why, whylen, "block %lld: its data does not match its "
                                       "MD5", (long long)blk), -EILSEQ;
            }
        }
        memmove(p + out, p + in + CK_HEAD, n - CK_HEAD);
        out += n - CK_HEAD;
        in += n;
    }
    *len = out;
    return 0;
}

/* xor_encrypt: each block is xored from its first byte with the KEY's bytes and the NUL that
 * ends it, in the original's order: the index starts at 0, is made l - 1 whenever it is 0,
 * and after each byte goes up by one, back to 0 past l (a slip it kept "for
 * compatibility").  So the indexes run l - 1, l, l - 1, l, ...: every other byte is xored
 * with the key's last character and the others with its NUL, left as they are. */
static void undo_xor(const lors__loci_step_t *s, unsigned char *p, size_t len)
{
    size_t l = strlen(s->key);
    for (size_t in = 0; in < len; in += (size_t)s->bs) {
        size_t n = len - in < (size_t)s->bs ? len - in : (size_t)s->bs;
        size_t j = 0;
        for (size_t i = 0; i < n; i++) {
            if (j == 0)
                j = l - 1;
            p[in + i] ^= (unsigned char)s->key[j]; /* key[l] is the NUL */
            if (++j > l)
                j = 0;
        }
    }
}

/* zlib_compress: the length of the bytes it compressed in 12 decimal digits, ':', their
 * zlib stream.  *out is malloc'd. */
static int undo_zlib(const unsigned char *p, size_t len, unsigned char **out, size_t *outlen,
                     char *why, size_t whylen)
{
    int64_t n = 0;
    if (len < ZLIB_HEAD || p[ZLIB_HEAD - 1] != ':')
        return lns_err_set(why, whylen, "no zlib header"), -EBADMSG;
    for (int i = 0; i < ZLIB_HEAD - 1; i++) {
        if (p[i] < '0' || p[i] > '9')
            return lns_err_set(why, whylen, "zlib header: not a length"), -EBADMSG;
        n = n * 10 + (p[i] - '0');
    }
    if (n > 2 * LORS_LOCI_MAX_BLOCK)
        return lns_err_set(why, whylen, "zlib header: %lld bytes, too many", (long long)n),
               -EBADMSG;
    unsigned char *o = malloc(n ? (size_t)n : 1);
    if (!o)
        return -ENOMEM;
    uLongf ol = (uLongf)n;
    int zr = uncompress(o, &ol, p + ZLIB_HEAD, (uLong)(len - ZLIB_HEAD));
    if (zr != Z_OK || ol != (uLongf)n) {
        free(o);
        return lns_err_set(why, whylen, "zlib stream does not decode to its %lld bytes (%s)",
                           (long long)n, zr == Z_OK ? "short" : zError(zr)), -EBADMSG;
    }
    *out = o;
    *outlen = (size_t)n;
    return 0;
}

int lors__loci_decode(const lors__loci_t *l, unsigned char *buf, size_t len, int64_t b0,
                      int64_t b1, int verify, char *why, size_t whylen)
{
    unsigned char *p = buf, *own = NULL; /* own: a stream zlib made, once there is one */
    size_t n = len;
    int rc = 0;
    for (int i = l->n - 1; i >= 0 && rc == 0; i--) {
        const lors__loci_step_t *s = &l->step[i];
        switch (s->kind) {
        case LORS_LOCI_CHECKSUM:
            rc = undo_checksum(s, p, &n, b0, verify, why, whylen);
            break;
        case LORS_LOCI_XOR:
            undo_xor(s, p, n);
            break;
        case LORS_LOCI_ZLIB: {
            unsigned char *o = NULL;
            size_t ol = 0;
            rc = undo_zlib(p, n, &o, &ol, why, whylen);
            if (rc == 0) {
                free(own);
                own = p = o;
                n = ol;
            }
            break;
        }
        default:
            lns_err_set(why, whylen, "function %s: not decoded", kind_name(s->kind));
            rc = -EBADMSG;
        }
    }
    if (rc == 0 && (int64_t)n != lors__loci_plain(l, b0, b1)) {
        lns_err_set(why, whylen, "blocks %lld-%lld decode to %zu bytes, not %lld",
                    (long long)b0, (long long)(b1 - 1), n, (long long)lors__loci_plain(l, b0, b1));
        rc = -EBADMSG;
    }
    if (rc == 0 && own)
        memcpy(buf, own, n);
    free(own);
    return rc;
}
