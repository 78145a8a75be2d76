/* lors_checksum.c -- end-to-end checksums: the lns_checksum function of a mapping.
 *
 * A mapping's digests are those of consecutive checksum blocks of its logical range, so every
 * replica of a range carries the same string and a reader can check any block it loads
 * without loading the rest.  The algorithm is "blake3", any fixed-size OpenSSL EVP digest by
 * name, or "crc64" (lors_checksum.h).
 */
#include <blake3.h>
#include <isa-l/crc64.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "lns_hex.h"
#include "lors.h"
#include "lns_array.h"
#include "lors_b3tree.h"
#include "lors_checksum.h"

static const EVP_MD *digest_by_name(const char *name)
{
    const EVP_MD *md = EVP_get_digestbyname(name);
    if (!md || (EVP_MD_flags(md) & EVP_MD_FLAG_XOF) || EVP_MD_size(md) <= 0)
        return NULL;
    return md;
}

int lors_ck_hexlen(const char *algorithm)
{
    if (!algorithm)
        return -1;
    if (strcmp(algorithm, LORS_CK_CRC64) == 0)
        return 16;
    if (strcmp(algorithm, LORS_CK_BLAKE3) == 0)
        return 2 * BLAKE3_OUT_LEN;
    const EVP_MD *md = digest_by_name(algorithm);
    return md ? 2 * EVP_MD_size(md) : -1;
}

int lors_ck_init(lors_ck_t *c, const char *algorithm, int64_t blocksize)
{
    memset(c, 0, sizeof *c);
    if (!algorithm || strcmp(algorithm, "none") == 0)
        return LORS_OK;
    if (blocksize <= 0)
        return LORS_E_INVAL;
    if (strcmp(algorithm, LORS_CK_CRC64) == 0) {
        c->crc = 1;
        c->blocksize = blocksize;
        return LORS_OK;
    }
    if (strcmp(algorithm, LORS_CK_BLAKE3) == 0) {
        if (!(c->b3 = malloc(sizeof(blake3_hasher))))
            return LORS_E_NOMEM;
        c->blocksize = blocksize;
        return LORS_OK;
    }
    c->md = digest_by_name(algorithm);
    if (!c->md)
        return LORS_E_DIGEST;
    c->ctx = EVP_MD_CTX_new();
    if (!c->ctx)
        return LORS_E_NOMEM;
    c->blocksize = blocksize;
    return LORS_OK;
}

static int add_hex(lors_ck_t *c, const unsigned char *d, unsigned int dl)
{
    if (lns_grow(&c->hex, &c->hexcap, c->hexlen + 2 * dl + 1, 1, 256) < 0)
        return LORS_E_NOMEM;
    lns_hex(d, dl, c->hex + c->hexlen);
    c->hexlen += 2 * dl;
    return LORS_OK;
}

static int tree_digest(void *arg, const unsigned char d[LORS_B3_CV])
{
    return add_hex(arg, d, LORS_B3_CV) == LORS_OK ? 0 : -1;
}

int lors_ck_want_outboard(lors_ck_t *c)
{
    if (!c->b3 || c->blocksize <= LORS_B3_GROUP || c->in_block)
        return LORS_OK;
    lors_b3s_t *t = malloc(sizeof *t);
    if (!t)
        return LORS_E_NOMEM;
    lors__b3s_init(t, c->blocksize);
    free(c->b3);
    c->b3 = NULL;
    c->tree = t;
    return LORS_OK;
}

int lors_ck_take_outboard(lors_ck_t *c, unsigned char **ob, size_t *len)
{
    lors_b3s_t *t = c->tree;
    *ob = t ? t->ob : NULL;
    *len = t ? t->oblen : 0;
    if (t) {
        t->ob = NULL;
        t->oblen = t->obcap = 0;
    }
    return LORS_OK;
}

static int end_block(lors_ck_t *c)
{
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned int dl = 0;

    if (c->crc) {
        for (dl = 0; dl < 8; dl++)
            d[dl] = (unsigned char)(c->crc_state >> (56 - 8 * dl));
        c->crc_state = 0;
    } else if (c->b3) {
        blake3_hasher_finalize(c->b3, d, BLAKE3_OUT_LEN);
        dl = BLAKE3_OUT_LEN;
    } else if (!EVP_DigestFinal_ex(c->ctx, d, &dl)) {
        return LORS_E_DIGEST;
    }
    c->in_block = 0;
    return add_hex(c, d, dl);
}

int lors_ck_update(lors_ck_t *c, const void *data, size_t len)
{
    const unsigned char *p = data;
    if (c->tree)
        return lors__b3s_update(c->tree, data, len, tree_digest, c) < 0 ? LORS_E_NOMEM
                                                                        : LORS_OK;
    if (!c->md && !c->crc && !c->b3)
        return LORS_OK;
    while (len > 0) {
        if (c->in_block == 0 && c->md && !EVP_DigestInit_ex(c->ctx, c->md, NULL))
            return LORS_E_DIGEST;
        if (c->in_block == 0 && c->b3)
            blake3_hasher_init(c->b3);
        size_t n = (size_t)(c->blocksize - c->in_block);
        if (n > len)
            n = len;
        if (c->crc)
            c->crc_state = crc64_ecma_refl(c->crc_state, p, n);
        else if (c->b3)
            blake3_hasher_update(c->b3, p, n);
        else if (!EVP_DigestUpdate(c->ctx, p, n))
            return LORS_E_DIGEST;
        c->in_block += (int64_t)n;
        p += n;
        len -= n;
        if (c->in_block == c->blocksize) {
            int rc = end_block(c);
            if (rc != LORS_OK)
                return rc;
        }
    }
    return LORS_OK;
}

int lors_ck_finish(lors_ck_t *c, char **hex)
{
    *hex = NULL;
    if (c->tree && lors__b3s_end(c->tree, tree_digest, c) < 0)
        return LORS_E_NOMEM;
    if ((c->md || c->crc || c->b3) && c->in_block > 0) {
        int rc = end_block(c);
        if (rc != LORS_OK)
            return rc;
    }
    *hex = c->hex ? c->hex : strdup("");
    c->hex = NULL;
    c->hexlen = c->hexcap = 0;
    return *hex ? LORS_OK : LORS_E_NOMEM;
}

void lors_ck_free(lors_ck_t *c)
{
    if (c->ctx)
        EVP_MD_CTX_free(c->ctx);
    free(c->b3);
    if (c->tree)
        lors__b3s_free(c->tree);
    free(c->tree);
    free(c->hex);
    memset(c, 0, sizeof *c);
}

int lors_checksum_verify(const xnd_mapping_t *m, const void *data, size_t len)
{
    const char *alg = NULL, *want = NULL;
    int64_t bs = 0;
    char *got = NULL;
    lors_ck_t c;

    if (!m || !m->func || strcmp(m->func->name, LORS_CHECKSUM_FUNC) != 0)
        return LORS_E_INVAL;
    if (xnd_meta_get_string(&m->func->args, "algorithm", &alg) != XND_OK ||
        xnd_meta_get_int(&m->func->args, "blocksize", &bs) != XND_OK || bs <= 0 ||
        xnd_meta_get_string(&m->func->args, "digests", &want) != XND_OK)
        return LORS_E_DIGEST;
    if ((int64_t)len != m->logical_length ||
        (!digest_by_name(alg) && strcmp(alg, LORS_CK_BLAKE3) != 0))
        return LORS_E_DIGEST;
    int rc = lors_ck_init(&c, alg, bs);
    if (rc == LORS_OK)
        rc = lors_ck_update(&c, data, len);
    if (rc == LORS_OK)
        rc = lors_ck_finish(&c, &got);
    lors_ck_free(&c);
    if (rc == LORS_OK && strcmp(got, want) != 0)
        rc = LORS_E_DIGEST;
    free(got);
    return rc;
}
