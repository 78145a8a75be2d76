/* lors_ec_int.h -- internal to liblors: erasure-coded network files.
 *
 * An erasure-coded file is cut into stripes of k x piece bytes; each stripe's k data pieces
 * (its bytes, the last stripe's zero-padded) and m parity pieces (ISA-L Reed-Solomon over
 * GF(2^8), Cauchy matrix) are stored on k + m distinct depots, so that any k of the k + m
 * pieces give the stripe back.  Pieces of one column (piece index j) of consecutive stripes
 * share one allocation: a "column mapping" holding stripes [first, first + n) of column j,
 * piece after piece.  The layout (lors_ec.c) is arithmetic on (stripe, column); the upload
 * engine is lors_ec_upload.c; the download engine decodes in its writer
 * (lors_download_ec.c).  docs/lors.md, "Erasure coding", and docs/exnode.md have the format.
 */
#ifndef LNS_LORS_EC_INT_H
#define LNS_LORS_EC_INT_H

#include <stddef.h>
#include <stdint.h>

#include "lors.h"

#define LORS_EC_FUNC "lns_ec"     /* the function on every column mapping */
/* Version 2 binds each piece's digest to its place (lors__ec_bind); version 1, still read,
 * listed the pieces' own digests, so a piece relabelled as another passed its check. */
#define LORS_EC_VERSION 2
#define LORS_EC_VERSION_UNBOUND 1
#define LORS_EC_CODE "rs-cauchy"  /* ISA-L gf_gen_cauchy1_matrix, GF(2^8) */
#define LORS_EC_MAX_K 32
#define LORS_EC_MAX_M 16
#define LORS_EC_MIN_PIECE ((int64_t)4096)
#define LORS_EC_MAX_PIECE ((int64_t)64 << 20)
/* The most stripes a file may have: every per-stripe table (lors_ec_stripes, the keeper's
 * plan) stays within a few hundred MB, and every offset within the file or an allocation,
 * at most 2^24 x 32 x 64 MiB = 2^55, is far from overflowing int64.  With 1 MiB pieces and
 * k = 4 that is 64 TiB a file. */
#define LORS_EC_MAX_STRIPES ((int64_t)1 << 24)

/* A file's coding, from its lns_ec metadata, and the codec for it. */
typedef struct lors__ec {
    int version;              /* of the file's lns_ec: LORS_EC_VERSION for a new one */
    int k, m;
    int64_t piece;            /* bytes of a piece of a full stripe */
    int64_t size;             /* the file's size */
    int64_t stripes;          /* ceil(size / (k * piece)) */
    unsigned char *matrix;    /* (k + m) x k: identity on top, Cauchy rows below */
    unsigned char *tables;    /* ISA-L expanded tables of the m parity rows */
} lors__ec_t;

/* A column mapping's place in the layout, from its lns_ec function. */
typedef struct lors__ec_col {
    int ok;                   /* 0: not a column mapping, or a malformed one */
    int column;               /* 0 .. k + m - 1; < k: data */
    int64_t first, n;         /* stripes [first, first + n) */
    const char *alg;          /* digests of each piece, or NULL */
    const char *digests;
    size_t hexlen;            /* hex digits per digest (0 without) */
} lors__ec_col_t;

/* The codec for k + m (1 <= k <= 32, 1 <= m <= 16) of a file of size bytes, at most
 * LORS_EC_MAX_STRIPES stripes.  LORS_OK, LORS_E_INVAL, LORS_E_NOMEM. */
int lors__ec_init(lors__ec_t *ec, int k, int m, int64_t piece, int64_t size);
void lors__ec_free(lors__ec_t *ec);

/* ceil(bytes / unit) for bytes >= 0 and unit >= 1, without overflowing. */
int64_t lors__ec_count(int64_t bytes, int64_t unit);
/* Bytes of the file in stripe s, and the length of each of its pieces: piece for a full
 * stripe, ceil(bytes / k) for a short last one; 0 for an s outside the file. */
int64_t lors__ec_stripe_bytes(const lors__ec_t *ec, int64_t s);
int64_t lors__ec_piece_len(const lors__ec_t *ec, int64_t s);
/* The file bytes data piece i of stripe s holds: [*off, *off + *len) (len may be 0 in a
 * short last stripe). */
void lors__ec_data_range(const lors__ec_t *ec, int64_t s, int i, int64_t *off, int64_t *len);

/* m parity pieces of len bytes from k data pieces. */
void lors__ec_encode(const lors__ec_t *ec, int64_t len, unsigned char **data,
                     unsigned char **parity);
/* Rebuild pieces: have[0..k) are distinct columns whose len bytes are src[0..k); each of
 * want[0..nwant) (any columns, data or parity) is computed into dst[..].  LORS_OK, or
 * LORS_E_INVAL (a column twice or out of range), LORS_E_NOMEM. */
int lors__ec_decode(const lors__ec_t *ec, int64_t len, const int *have, unsigned char **src,
                    const int *want, int nwant, unsigned char **dst);

/* ---- the exNode ------------------------------------------------------------------------- */

/* Read x's lns_ec metadata: *present 0 for a file without it; else the codec in *ec (free it
 * with lors__ec_free).  LORS_OK, or LORS_E_EXNODE with err naming the field. */
int lors__ec_read(const xnd_t *x, lors__ec_t *ec, int *present, char *err, size_t errlen);
/* 1 if x has a well-formed lns_ec description, with its codec in *ec (free it with
 * lors__ec_free); 0 if it has none or a malformed one (a caller that must tell those apart,
 * to refuse the file, uses lors__ec_read). */
int lors__ec_read_valid(const xnd_t *x, lors__ec_t *ec);
/* Write the lns_ec metadata of ec into x (replacing any). */
int lors__ec_write(xnd_t *x, const lors__ec_t *ec);
/* A mapping's column (ok 0 if it has none or it does not fit ec). */
void lors__ec_col(const lors__ec_t *ec, const xnd_mapping_t *m, lors__ec_col_t *c);
/* The lns_ec function of a column mapping: column j, its piece digests ("" or NULL: none). */
xnd_func_t *lors__ec_func(const lors__ec_t *ec, int column, const char *alg, const char *digests);
/* Where piece (s, c->column) starts in the mapping's allocation. */
int64_t lors__ec_alloc_off(const lors__ec_t *ec, const xnd_mapping_t *m, const lors__ec_col_t *c,
                           int64_t s);
/* The digest an exNode lists for piece (s, column) whose own digest (alg over its bytes, hex)
 * is own: in a version-2 file alg over the line "lns_ec-piece 2 CODE K M PIECE_SIZE SIZE S
 * COLUMN OWN" (docs/exnode.md), so that the same bytes anywhere else fail; in a version-1
 * file own itself.  *out malloc'd.  LORS_OK, LORS_E_DIGEST, LORS_E_NOMEM. */
int lors__ec_bind(const lors__ec_t *ec, int64_t s, int column, const char *alg, const char *own,
                  char **out);
/* The same for the own digests of pieces first, first + 1, ... of column, concatenated. */
int lors__ec_bind_all(const lors__ec_t *ec, int64_t first, int column, const char *alg,
                      const char *own, char **out);
/* Does piece (stripe s) of column c, len bytes at p, match the digest c lists for it?
 * 1 yes, 0 no, -1 c lists none, -2 its algorithm cannot be computed here. */
int lors__ec_piece_check(const lors__ec_t *ec, const lors__ec_col_t *c, int64_t s,
                         const unsigned char *p, int64_t len);

/* ---- the engines ------------------------------------------------------------------------ */

int lors__upload_ec(const lors_upload_opts_t *o, int fd, const void *mem, int64_t length,
                    const char *filename, xnd_t **out, lors_report_t *rep);

#endif
