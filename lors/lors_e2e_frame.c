/* lors_e2e_frame.c -- the frame codec of the end-to-end transforms: zstd, zlib and
 * AES-256-GCM.
 *
 * A frame goes through the chain's steps in order; decoding undoes them in reverse.  A
 * compressor always stores its compressed form, even when it is not smaller: one rule, and
 * the format's own check as a second one.  zstd (the default of -z) writes one zstd frame per
 * lns frame, with its content size and its XXH64 checksum, at level 3 unless told (1..19;
 * the level is not needed to read it); zlib is compress2 at level 6 unless told (1..9),
 * with its Adler-32.  Each lns frame is compressed on its own, so every frame decodes by
 * itself and a read of any range stays a read of the frames it touches.  aes is
 * AES-256-GCM with a 96-bit nonce = the file's 64-bit random salt || the 32-bit big-endian
 * frame index, so no nonce repeats within a file and, with the salt, across files under one
 * key; the additional authenticated data is the frame index (32-bit big-endian) followed by
 * the chain's canonical name, so a frame moved to another position, another file or another
 * chain fails its tag.  The 16-byte tag follows the ciphertext.
 *
 * Only a compressor changes a frame's length unpredictably and a chain has at most one, so the
 * length each decoding step must produce is always known: the plain length, plus 16 when
 * aes came before the compressor.  That is checked exactly: a frame decodes to its own length
 * (and a zstd frame is exactly one zstd frame) or fails.
 */
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "lns_hex.h"
#include "lors_e2e_int.h"
#include "lns_err.h"

static const char *step_name(int step)
{
    return step == LORS_E2E_ZLIB ? "zlib" : step == LORS_E2E_ZSTD ? "zstd" : "aes";
}

int lors__e2e_chain_parse(const char *s, lors__e2e_chain_t *c, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    if (!s)
        return LORS_OK;
    const char *p = s;
    for (;;) {
        while (*p == ',' || *p == ' ' || *p == '\t')
            p++;
        if (!*p)
            break;
        size_t n = strcspn(p, ", \t");
        int step = 0;
        for (int t = LORS_E2E_ZLIB; t <= LORS_E2E_ZSTD; t++)
            if (n == strlen(step_name(t)) && strncasecmp(p, step_name(t), n) == 0)
                step = t;
        if (!step) {
            lns_err_set(err, errlen,
                        "e2e chain \"%s\": unknown transform \"%.*s\" (zstd, zlib or aes)", s,
                        (int)(n < 32 ? n : 32), p);
            return LORS_E_INVAL;
        }
        for (int i = 0; i < c->n; i++)
            if (c->steps[i] == step) {
                lns_err_set(err, errlen, "e2e chain \"%s\": \"%.*s\" named twice", s, (int)n, p);
                return LORS_E_INVAL;
            } else if (LORS__E2E_PACKS(c->steps[i]) && LORS__E2E_PACKS(step)) {
                lns_err_set(err, errlen, "e2e chain \"%s\": two compressors (zstd or zlib, "
                            "not both)", s);
                return LORS_E_INVAL;
            }
        c->steps[c->n++] = step;
        p += n;
    }
    for (int i = 0; i < c->n; i++) {
        if (c->steps[i] == LORS_E2E_AES)
            c->has_aes = 1;
        strcat(c->name, i ? "," : "");
        strcat(c->name, step_name(c->steps[i]));
    }
    return LORS_OK;
}

static size_t step_bound(int step, size_t n)
{
    return step == LORS_E2E_ZLIB   ? (size_t)compressBound((uLong)n)
           : step == LORS_E2E_ZSTD ? ZSTD_compressBound(n)
                                   : n + LORS_E2E_TAG;
}

int64_t lors__e2e_max_stored(const lors__e2e_chain_t *c, int64_t plain_len)
{
    size_t n = (size_t)plain_len;
    for (int i = 0; i < c->n; i++)
        n = step_bound(c->steps[i], n);
    return (int64_t)n;
}

/* The chain's compressor step, or 0. */
static int pack_step(const lors__e2e_chain_t *c)
{
    for (int i = 0; i < c->n; i++)
        if (LORS__E2E_PACKS(c->steps[i]))
            return c->steps[i];
    return 0;
}

int lors__e2e_level_max(const lors__e2e_chain_t *c)
{
    int step = pack_step(c);
    return step == LORS_E2E_ZSTD ? 19 : step == LORS_E2E_ZLIB ? 9 : 0;
}

int lors_e2e_level_max(const char *chain, const char **compressor)
{
    lors__e2e_chain_t c;
    if (compressor)
        *compressor = NULL;
    if (lors__e2e_chain_parse(chain, &c, NULL, 0) != LORS_OK)
        return -1;
    if (compressor && pack_step(&c))
        *compressor = step_name(pack_step(&c));
    return lors__e2e_level_max(&c);
}

int lors__e2e_codec_init(lors__e2e_codec_t *c, const lors__e2e_chain_t *chain,
                         const unsigned char *key, const unsigned char salt[LORS_E2E_SALT])
{
    memset(c, 0, sizeof *c);
    c->chain = *chain;
    if (key)
        memcpy(c->key, key, LORS_KEY_BYTES);
    if (salt)
        memcpy(c->salt, salt, LORS_E2E_SALT);
    if (chain->has_aes && !(c->cctx = EVP_CIPHER_CTX_new()))
        return LORS_E_NOMEM;
    return LORS_OK;
}

void lors__e2e_codec_free(lors__e2e_codec_t *c)
{
    OPENSSL_cleanse(c->key, sizeof c->key);
    EVP_CIPHER_CTX_free(c->cctx);
    c->cctx = NULL;
    ZSTD_freeCCtx(c->zc);
    ZSTD_freeDCtx(c->zd);
    c->zc = c->zd = NULL;
    if (c->tmp)
        OPENSSL_cleanse(c->tmp, c->tmpcap);
    free(c->tmp);
    c->tmp = NULL;
    c->tmpcap = 0;
}

static int grow_tmp(lors__e2e_codec_t *c, size_t need)
{
    if (need <= c->tmpcap)
        return LORS_OK;
    unsigned char *t = malloc(need);
    if (!t)
        return LORS_E_NOMEM;
    if (c->tmp)
        OPENSSL_cleanse(c->tmp, c->tmpcap);
    free(c->tmp);
    c->tmp = t;
    c->tmpcap = need;
    return LORS_OK;
}

/* The GCM nonce and additional data of frame index; returns the AAD length. */
static size_t nonce_aad(const lors__e2e_codec_t *c, uint32_t index, unsigned char iv[12],
                        unsigned char aad[4 + sizeof c->chain.name])
{
    unsigned char be[4] = {(unsigned char)(index >> 24), (unsigned char)(index >> 16),
                           (unsigned char)(index >> 8), (unsigned char)index};
    size_t nl = strlen(c->chain.name);
    memcpy(iv, c->salt, LORS_E2E_SALT);
    memcpy(iv + LORS_E2E_SALT, be, 4);
    memcpy(aad, be, 4);
    memcpy(aad + 4, c->chain.name, nl);
    return 4 + nl;
}

static int aes_seal(lors__e2e_codec_t *c, uint32_t index, const unsigned char *in, size_t n,
                    unsigned char *out, size_t *outlen)
{
    EVP_CIPHER_CTX *x = c->cctx;
    unsigned char iv[12], aad[4 + sizeof c->chain.name];
    size_t aadlen = nonce_aad(c, index, iv, aad);
    int l1 = 0, l2 = 0, la = 0;
    if (n > (size_t)INT32_MAX - 64)
        return LORS_E_E2E;
    if (EVP_EncryptInit_ex(x, EVP_aes_256_gcm(), NULL, c->key, iv) != 1 ||
        EVP_EncryptUpdate(x, NULL, &la, aad, (int)aadlen) != 1 ||
        EVP_EncryptUpdate(x, out, &l1, in, (int)n) != 1 ||
        EVP_EncryptFinal_ex(x, out + l1, &l2) != 1 || (size_t)(l1 + l2) != n ||
        EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_GET_TAG, LORS_E2E_TAG, out + n) != 1)
        return LORS_E_E2E;
    *outlen = n + LORS_E2E_TAG;
    return LORS_OK;
}

/* 1 ok, 0 the tag does not match, -1 the library failed. */
static int aes_open(lors__e2e_codec_t *c, uint32_t index, const unsigned char *in, size_t n,
                    unsigned char *out)
{
    EVP_CIPHER_CTX *x = c->cctx;
    unsigned char iv[12], aad[4 + sizeof c->chain.name], tag[LORS_E2E_TAG];
    size_t aadlen = nonce_aad(c, index, iv, aad);
    size_t clen = n - LORS_E2E_TAG;
    int l1 = 0, l2 = 0, la = 0;
    memcpy(tag, in + clen, LORS_E2E_TAG);
    if (clen > (size_t)INT32_MAX - 64 ||
        EVP_DecryptInit_ex(x, EVP_aes_256_gcm(), NULL, c->key, iv) != 1 ||
        EVP_DecryptUpdate(x, NULL, &la, aad, (int)aadlen) != 1 ||
        EVP_DecryptUpdate(x, out, &l1, in, (int)clen) != 1 ||
        EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_SET_TAG, LORS_E2E_TAG, tag) != 1)
        return -1;
    return EVP_DecryptFinal_ex(x, out + l1, &l2) > 0 ? 1 : 0;
}

/* One zstd frame of in[0..n) at the chain's level, with its content size and checksum. */
static int zstd_pack(lors__e2e_codec_t *c, const unsigned char *in, size_t n,
                     unsigned char *out, size_t *outlen, char *err, size_t errlen)
{
    ZSTD_CCtx *z = c->zc;
    if (!z) {
        if (!(z = c->zc = ZSTD_createCCtx()))
            return LORS_E_NOMEM;
        size_t r = ZSTD_CCtx_setParameter(z, ZSTD_c_compressionLevel,
                                          c->chain.level ? c->chain.level : LORS_E2E_ZSTD_LEVEL);
        if (!ZSTD_isError(r))
            r = ZSTD_CCtx_setParameter(z, ZSTD_c_checksumFlag, 1);
        if (ZSTD_isError(r)) {
            lns_err_set(err, errlen, "zstd: %s", ZSTD_getErrorName(r));
            return LORS_E_E2E;
        }
    }
    size_t r = ZSTD_compress2(z, out, ZSTD_compressBound(n), in, n);
    if (ZSTD_isError(r)) {
        lns_err_set(err, errlen, "zstd compress: %s", ZSTD_getErrorName(r));
        return ZSTD_getErrorCode(r) == ZSTD_error_memory_allocation ? LORS_E_NOMEM : LORS_E_E2E;
    }
    *outlen = r;
    return LORS_OK;
}

/* Exactly one zstd frame of in[0..n) that decodes, its checksum right, to exactly want bytes. */
static int zstd_unpack(lors__e2e_codec_t *c, const unsigned char *in, size_t n,
                       unsigned char *out, size_t want, char *err, size_t errlen)
{
    if (!c->zd && !(c->zd = ZSTD_createDCtx()))
        return LORS_E_NOMEM;
    if (ZSTD_findFrameCompressedSize(in, n) != n ||
        ZSTD_getFrameContentSize(in, n) != (unsigned long long)want) {
        lns_err_set(err, errlen, "zstd: the frame is not one zstd frame of %zu bytes", want);
        return LORS_E_E2E;
    }
    size_t r = ZSTD_decompressDCtx(c->zd, out, want, in, n);
    if (ZSTD_isError(r) || r != want) {
        if (ZSTD_isError(r))
            lns_err_set(err, errlen, "zstd: %s", ZSTD_getErrorName(r));
        else
            lns_err_set(err, errlen, "zstd: the frame does not decompress to %zu bytes", want);
        return ZSTD_isError(r) && ZSTD_getErrorCode(r) == ZSTD_error_memory_allocation
                   ? LORS_E_NOMEM
                   : LORS_E_E2E;
    }
    return LORS_OK;
}

int lors__e2e_encode(lors__e2e_codec_t *c, uint32_t index, const unsigned char *in,
                     size_t inlen, unsigned char *out, size_t *outlen, char *err, size_t errlen)
{
    const unsigned char *src = in;
    size_t srclen = inlen;
    int rc = LORS_OK;

    /* with two steps the first writes to tmp, the last always to out */
    if (c->chain.n == 2) {
        if ((rc = grow_tmp(c, step_bound(c->chain.steps[0], inlen))) != LORS_OK)
            return rc;
    }
    for (int i = 0; i < c->chain.n; i++) {
        unsigned char *dst = i == c->chain.n - 1 ? out : c->tmp;
        size_t dstlen = 0;
        if (c->chain.steps[i] == LORS_E2E_ZSTD) {
            if ((rc = zstd_pack(c, src, srclen, dst, &dstlen, err, errlen)) != LORS_OK)
                return rc;
        } else if (c->chain.steps[i] == LORS_E2E_ZLIB) {
            uLongf zl = compressBound((uLong)srclen);
            int zr = compress2(dst, &zl, src, (uLong)srclen,
                               c->chain.level ? c->chain.level : LORS_E2E_ZLIB_LEVEL);
            if (zr != Z_OK) {
                lns_err_set(err, errlen, "zlib compress: %s", zError(zr));
                return zr == Z_MEM_ERROR ? LORS_E_NOMEM : LORS_E_E2E;
            }
            dstlen = zl;
        } else if (aes_seal(c, index, src, srclen, dst, &dstlen) != LORS_OK) {
            lns_err_set(err, errlen, "AES-256-GCM encryption failed in OpenSSL");
            return LORS_E_E2E;
        }
        src = dst;
        srclen = dstlen;
    }
    *outlen = srclen;
    if (c->chain.n == 0 && inlen)
        memcpy(out, in, inlen);
    return LORS_OK;
}

int lors__e2e_decode(lors__e2e_codec_t *c, uint32_t index, const unsigned char *in,
                     size_t inlen, unsigned char *out, size_t plain_len, char *err,
                     size_t errlen)
{
    const unsigned char *src = in;
    size_t srclen = inlen;
    int rc;

    if (c->chain.n == 2) {
        /* the middle form: at most the stored length, or the plain length + 16 */
        size_t mid = inlen > plain_len + LORS_E2E_TAG ? inlen : plain_len + LORS_E2E_TAG;
        if ((rc = grow_tmp(c, mid)) != LORS_OK)
            return rc;
    }
    for (int i = c->chain.n - 1; i >= 0; i--) {
        unsigned char *dst = i == 0 ? out : c->tmp;
        /* the length before step i: plain, +16 if aes precedes the compressor at i */
        size_t want = plain_len + (i == 1 && c->chain.steps[0] == LORS_E2E_AES ? LORS_E2E_TAG : 0);
        if (c->chain.steps[i] == LORS_E2E_ZSTD) {
            if ((rc = zstd_unpack(c, src, srclen, dst, want, err, errlen)) != LORS_OK)
                return rc;
            srclen = want;
        } else if (c->chain.steps[i] == LORS_E2E_ZLIB) {
            uLongf dl = (uLongf)want;
            uLong sl = (uLong)srclen;
            int zr = uncompress2(dst, &dl, src, &sl);
            if (zr != Z_OK || dl != want || sl != srclen) {
                if (zr == Z_OK || zr == Z_BUF_ERROR)
                    lns_err_set(err, errlen, "zlib: the frame does not decompress to %zu bytes",
                                want);
                else
                    lns_err_set(err, errlen, "zlib: %s", zError(zr));
                return zr == Z_MEM_ERROR ? LORS_E_NOMEM : LORS_E_E2E;
            }
            srclen = dl;
        } else {
            if (srclen < LORS_E2E_TAG || (i == 0 && srclen - LORS_E2E_TAG != plain_len)) {
                lns_err_set(err, errlen,
                            "aes: %zu bytes are not the plain bytes plus the %d-byte tag",
                            srclen, LORS_E2E_TAG);
                return LORS_E_E2E;
            }
            int ok = aes_open(c, index, src, srclen, dst);
            if (ok != 1) {
                lns_err_set(err, errlen, ok == 0 ? "authentication failed: the data or its place "
                            "was altered (AES-GCM tag mismatch)"
                            : "AES-256-GCM decryption failed in OpenSSL");
                return LORS_E_E2E;
            }
            srclen -= LORS_E2E_TAG;
        }
        src = dst;
    }
    if (c->chain.n == 0) {
        if (inlen != plain_len) {
            lns_err_set(err, errlen, "%zu bytes where %zu were expected", inlen, plain_len);
            return LORS_E_E2E;
        }
        memcpy(out, in, inlen);
    }
    return LORS_OK;
}

void lors__e2e_keyid(const unsigned char key[LORS_KEY_BYTES], char out[17])
{
    static const char label[] = "lns-e2e-keyid";
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    EVP_MD_CTX *x = EVP_MD_CTX_new();
    out[0] = 0;
    if (!x)
        return;
    if (EVP_DigestInit_ex(x, EVP_sha256(), NULL) == 1 &&
        EVP_DigestUpdate(x, label, sizeof label - 1) == 1 &&
        EVP_DigestUpdate(x, key, LORS_KEY_BYTES) == 1 &&
        EVP_DigestFinal_ex(x, md, &mdlen) == 1 && mdlen >= 8) {
        lns_hex(md, 8, out);
    }
    EVP_MD_CTX_free(x);
}
