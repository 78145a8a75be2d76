/* lors_checksum.h -- liblors internal: end-to-end digests of a byte range, block by block.
 *
 * The digests of a range are those of its consecutive blocks of `blocksize` bytes (the last
 * one may be shorter), as lowercase hex, concatenated.  Bytes may come in pieces of any size;
 * block boundaries are counted from the first byte fed after init or finish. */
#ifndef LNS_LORS_CHECKSUM_H
#define LNS_LORS_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

typedef struct lors_ck {
    const void *md;   /* const EVP_MD *; NULL for "none" */
    void *ctx;        /* EVP_MD_CTX * */
    int64_t blocksize;
    int64_t in_block; /* bytes fed into the current block */
    char *hex;        /* digests so far */
    size_t hexlen, hexcap;
} lors_ck_t;

/* LORS_OK, or LORS_E_DIGEST for an unknown algorithm or a digest of variable length. */
int lors_ck_init(lors_ck_t *c, const char *algorithm, int64_t blocksize);
int lors_ck_update(lors_ck_t *c, const void *data, size_t len);
/* The digests of everything fed since init or the last finish (malloc'd; "" for nothing). */
int lors_ck_finish(lors_ck_t *c, char **hex);
void lors_ck_free(lors_ck_t *c);

#endif
