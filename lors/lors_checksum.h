/* lors_checksum.h -- liblors internal: end-to-end digests of a byte range, block by block.
 *
 * The digests of a range are those of its consecutive blocks of `blocksize` bytes (the last
 * one may be shorter), as lowercase hex, concatenated.  Bytes may come in pieces of any size;
 * block boundaries are counted from the first byte fed after init or finish. */
#ifndef LNS_LORS_CHECKSUM_H
#define LNS_LORS_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

/* Besides the OpenSSL digests: "crc64", CRC-64/XZ (ECMA-182 polynomial, reflected, initial
 * value and final xor all ones; ISA-L crc64_ecma_refl with seed 0; check value of "123456789":
 * 995dc9bbdf1939fa), 16 hex digits, most significant first.  Not cryptographic: used for the
 * parity pieces of erasure-coded files, whose decoded data is checked against the data
 * pieces' own digests (docs/lors.md, "Erasure coding"). */
#define LORS_CK_CRC64 "crc64"
/* And "blake3": BLAKE3 (the reference C implementation), 32 bytes, 64 hex digits; the
 * default of uploads (lors_upload_opts_init).  An lns without it, and any reader that checks
 * digests by name, refuses such a mapping as an unknown digest rather than misreading it. */
#define LORS_CK_BLAKE3 "blake3"
/* The lns_checksum argument of a "blake3" mapping whose allocation holds, right after its
 * logical_length bytes of data, the outboard of its blocks: its value is the bytes under
 * one chaining value, LORS_B3_GROUP (lors_b3tree.h).  alloc_length counts it. */
#define LORS_CK_OUTBOARD "outboard"

typedef struct lors_ck {
    int crc;          /* 1: "crc64" (md NULL) */
    uint64_t crc_state;
    void *b3;         /* blake3_hasher * for "blake3" (md NULL) */
    void *tree;       /* lors_b3s_t * for "blake3" with the outboard (b3 NULL) */
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
/* "blake3" in blocks of more than 16 KiB: also the outboard of every block (its 16 KiB
 * groups' chaining values, lors_b3tree.h), taken with lors_ck_take_outboard after finish.
 * Any other algorithm or block size has none: a no-op.  LORS_OK or LORS_E_NOMEM. */
int lors_ck_want_outboard(lors_ck_t *c);
/* The outboard bytes of the blocks ended so far (malloc'd, NULL when none), and how many. */
int lors_ck_take_outboard(lors_ck_t *c, unsigned char **ob, size_t *len);
/* Hex digits of one digest of algorithm ("crc64" or a fixed-size OpenSSL digest), or -1. */
int lors_ck_hexlen(const char *algorithm);

#endif
