/* lors_func_int.h -- internal to liblors: what a mapping's function means, and the LoRS 1.3.1
 * end-to-end functions that lns decodes.
 *
 * Every reader asks lors__func_read before it touches a mapping's bytes, and reads only the
 * kinds it is told: raw bytes (no function, or lns_checksum over raw bytes), a column of an
 * erasure-coded file (lns_ec), or a chain of the original LoRS tools' functions that
 * lors_func_loci.c decodes.  Anything else is LORS_FUNC_UNKNOWN, with a line saying why, and
 * is never read: a replica that decodes serves its bytes instead, or the read fails naming the
 * function (LORS_E_EXNODE).  docs/exnode.md, "Functions", has the rules; "The LoRS 1.3.1
 * functions" has the layouts.
 */
#ifndef LNS_LORS_FUNC_INT_H
#define LNS_LORS_FUNC_INT_H

#include <stddef.h>
#include <stdint.h>

#include "lors.h"

struct lors__ec;

#define LORS_LOCI_MAX_STEPS 8
#define LORS_LOCI_MAX_BLOCK ((int64_t)256 << 20) /* bounds what a hostile exNode makes us hold */

/* One step of a 1.3.1 chain, in the order it was applied on upload. */
enum { LORS_LOCI_CHECKSUM = 1, LORS_LOCI_XOR, LORS_LOCI_ZLIB, LORS_LOCI_DES, LORS_LOCI_AES };

typedef struct lors__loci_step {
    int kind;
    int64_t bs;             /* its blocksize argument: bytes of each block it wrote */
    const char *key;        /* KEY argument (ciphers), as written in the exNode */
} lors__loci_step_t;

/* A mapping's 1.3.1 chain.  Plain block i of the mapping's range (ebs bytes from
 * exnode_offset, the last one shorter) is stored block i of the allocation (sbs bytes from 0,
 * the last one shorter), so any run of whole blocks decodes on its own.  A chain with zlib
 * compresses the whole mapping: one block (ebs = logical_length, sbs = alloc_length). */
typedef struct lors__loci {
    lors__loci_step_t step[LORS_LOCI_MAX_STEPS];
    int n;
    int whole;              /* zlib in the chain: the mapping is one block */
    int64_t len;            /* logical_length */
    int64_t ebs, sbs;       /* plain and stored bytes of a full block */
    int64_t nblocks;
    int64_t last_sbs;       /* stored bytes of the last block */
} lors__loci_t;

typedef struct lors__func {
    lors_func_kind kind;
    lors__loci_t loci;      /* LORS_FUNC_LORS131 */
    int64_t ob_off;         /* LORS_FUNC_CHECKSUM with an outboard (lors_b3tree.h): where it
                             * starts in the allocation; -1: none */
    int64_t ob_len;         /* and its bytes */
} lors__func_t;

/* What mapping m of x means (ec: the file's coding, NULL if it has none; an lns_ec mapping of
 * a file without it, or that does not fit it, is UNKNOWN).  Fills f and, for UNKNOWN, why
 * (one line naming the function and what lns does not understand of it).  Never fails. */
void lors__func_read(const xnd_t *x, const struct lors__ec *ec, const xnd_mapping_t *m,
                     lors__func_t *f, char *why, size_t whylen);

/* 1 if the two functions are the same (names, arguments and their text, sub-functions). */
int lors__func_same(const xnd_func_t *a, const xnd_func_t *b);

/* The words for a mapping's function as lors_ls shows them ("" for none), into buf. */
void lors__func_name(const xnd_mapping_t *m, char *buf, size_t size);

/* ---- the 1.3.1 chains (lors_func_loci.c) ------------------------------------------------- */

/* Parse m's function as a 1.3.1 chain lns decodes.  LORS_OK, or LORS_E_EXNODE with why
 * naming what is not understood or not decoded (DES and AES: see docs/exnode.md). */
int lors__loci_parse(const xnd_mapping_t *m, lors__loci_t *l, char *why, size_t whylen);
/* Stored bytes of plain blocks [b0, b1): *off and *len in the allocation. */
void lors__loci_stored(const lors__loci_t *l, int64_t b0, int64_t b1, int64_t *off, int64_t *len);
/* Plain bytes of blocks [b0, b1). */
int64_t lors__loci_plain(const lors__loci_t *l, int64_t b0, int64_t b1);
/* Decode the stored bytes of blocks [b0, b1) in buf (len bytes, as lors__loci_stored gives)
 * into their plain bytes at buf[0..), which must have room for the larger of the two; verify:
 * check the checksum step's digests.  0, or -EILSEQ (a digest does not match: corrupt data),
 * -EBADMSG (the bytes do not decode as the chain says), -ENOMEM; why says which block. */
int lors__loci_decode(const lors__loci_t *l, unsigned char *buf, size_t len, int64_t b0,
                      int64_t b1, int verify, char *why, size_t whylen);

/* MD5 of p[0..n) as 32 lowercase hex digits into hex: real MD5 (lp64 0), or as the
 * original's code computed it on 64-bit machines (lp64 1: docs/exnode.md).  Returns 0. */
int lors__loci_md5_hex(const void *p, size_t n, int lp64, char hex[32]);

#endif
