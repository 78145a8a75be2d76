/* lors_e2e_int.h -- internal to liblors: end-to-end transforms and the engines under them.
 *
 * A transformed network file is a sequence of frames: the plain bytes cut into frames of
 * frame_size bytes (the last shorter), each put through the chain in order ("zlib,aes":
 * compress, then encrypt), the results concatenated.  The upload and download engines move
 * those stored bytes as they are (lors__upload_plain_*, lors__download_plain); lors_e2e.c
 * puts the frame codec (lors_e2e_frame.c) between them and the user's bytes, and the
 * frame table (lors_e2e_meta.c) in the exNode's lns_e2e metadata.  The public entry points
 * (lors_upload_fd/_buf in lors_upload_engine.c, lors_download_fd in lors_download_engine.c)
 * take the plain engine, or lors__upload_e2e / lors__download_e2e when the file has a
 * chain.  docs/lors.md, "End-to-end transforms", has the format.
 */
#ifndef LNS_LORS_E2E_INT_H
#define LNS_LORS_E2E_INT_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "lors.h"
#include "lors_out.h"

#define LORS_E2E_DEFAULT_FRAME ((int64_t)1 << 20)
#define LORS_E2E_MAX_FRAME ((int64_t)256 << 20) /* bounds what a hostile exNode makes us allocate */
#define LORS_E2E_MAX_FRAMES ((int64_t)1 << 32)  /* the frame index is 32 bits of the GCM nonce */
#define LORS_E2E_TAG 16                         /* GCM tag bytes after each encrypted frame */
#define LORS_E2E_SALT 8                         /* random per-file half of the nonce */
#define LORS_E2E_VERSION 1                      /* the lns_e2e layout we write and read */
#define LORS_E2E_FUNC "lns_e2e"  /* on a mapping of frames without lns_checksum: for the
                                    original tools, which then refuse it (lors_e2e.c) */

/* ---- the engines on stored bytes --------------------------------------------------------- */

/* lors_download_fd's contract, on the stored bytes: no transforms undone. */
int lors__download_plain(const lors_download_opts_t *o, const xnd_t *x, int out_fd,
                         lors_dl_report_t *report);
/* ... and the same to an output of lors_out.h */
int lors__download_plain_to(const lors_download_opts_t *o, const xnd_t *x,
                            const lors__out_t *out, lors_dl_report_t *report);
/* ... and with the erasure codec of an lns_ec file (lors_ec_int.h). */
struct lors__ec;
int lors__download_ec_to(const lors_download_opts_t *o, const xnd_t *x, const struct lors__ec *ec,
                         const lors__out_t *out, lors_dl_report_t *report);
/* lors_download_fd to an output of lors_out.h: plain, erasure coded or transformed
 * (lors_entry.c). */
int lors__download_to(const lors_download_opts_t *o, const xnd_t *x, const lors__out_t *out,
                      lors_dl_report_t *report);
/* lors_upload_fd / lors_upload_buf without transforms (o->e2e is ignored). */
int lors__upload_plain_fd(const lors_upload_opts_t *o, int fd, int64_t length,
                          const char *filename, xnd_t **out, lors_report_t *report);
int lors__upload_plain_buf(const lors_upload_opts_t *o, const void *buf, size_t len,
                           const char *filename, xnd_t **out, lors_report_t *report);

/* ---- the chain and the frame codec (lors_e2e_frame.c) ------------------------------------ */

enum { LORS_E2E_ZLIB = 1, LORS_E2E_AES = 2, LORS_E2E_ZSTD = 3 };
/* The compressors: a chain has at most one, and only it changes a frame's length freely. */
#define LORS__E2E_PACKS(step) ((step) == LORS_E2E_ZLIB || (step) == LORS_E2E_ZSTD)
#define LORS_E2E_ZSTD_LEVEL 3 /* zstd's level when none is given (docs/PERFORMANCE.md) */
#define LORS_E2E_ZLIB_LEVEL 6

typedef struct lors__e2e_chain {
    int steps[2];   /* in encoding order; each step at most once */
    int n;          /* 0: no transforms */
    int has_aes;
    int level;      /* the compressor's level when encoding; 0: its default (not stored) */
    char name[16];  /* canonical: "zstd", "zlib", "aes", "zstd,aes", "aes,zstd", ... */
} lors__e2e_chain_t;

/* Parse "zstd", "zlib", "aes", "zstd,aes", "aes,zlib"... (commas and/or spaces between names,
 * at most one compressor); NULL or "" is the empty chain.  LORS_OK or LORS_E_INVAL with a
 * line in err. */
int lors__e2e_chain_parse(const char *s, lors__e2e_chain_t *c, char *err, size_t errlen);
/* The most stored bytes a frame of plain_len bytes can take (a compressor may grow it a
 * little). */
int64_t lors__e2e_max_stored(const lors__e2e_chain_t *c, int64_t plain_len);
/* The levels a compressor takes: zstd 1..19, zlib 1..9; 0 when the chain has none. */
int lors__e2e_level_max(const lors__e2e_chain_t *c);

/* One direction's state for a file: chain, key, salt, cipher context, scratch. */
typedef struct lors__e2e_codec {
    lors__e2e_chain_t chain;
    unsigned char key[LORS_KEY_BYTES];
    unsigned char salt[LORS_E2E_SALT];
    void *cctx;              /* EVP_CIPHER_CTX *, when the chain has aes */
    void *zc, *zd;           /* ZSTD_CCtx *, ZSTD_DCtx *: made on first use, reused */
    unsigned char *tmp;      /* between the two steps of a chain */
    size_t tmpcap;
} lors__e2e_codec_t;

/* key may be NULL when the chain has no aes.  LORS_OK or LORS_E_NOMEM. */
int lors__e2e_codec_init(lors__e2e_codec_t *c, const lors__e2e_chain_t *chain,
                         const unsigned char *key, const unsigned char salt[LORS_E2E_SALT]);
void lors__e2e_codec_free(lors__e2e_codec_t *c); /* wipes the key */
/* Transform frame `index` (in[0..inlen), inlen >= 1) into out, which holds at least
 * lors__e2e_max_stored(inlen) bytes.  LORS_OK, LORS_E_NOMEM or LORS_E_E2E (a library
 * failure, with err). */
int lors__e2e_encode(lors__e2e_codec_t *c, uint32_t index, const unsigned char *in,
                     size_t inlen, unsigned char *out, size_t *outlen, char *err, size_t errlen);
/* Undo it: out receives exactly plain_len bytes or the call fails with LORS_E_E2E and err
 * ("authentication failed: ...", "zlib: ...", "zstd: ..."). */
int lors__e2e_decode(lors__e2e_codec_t *c, uint32_t index, const unsigned char *in,
                     size_t inlen, unsigned char *out, size_t plain_len, char *err,
                     size_t errlen);

/* The key's public name: the first 16 hex digits of SHA-256("lns-e2e-keyid" || key). */
void lors__e2e_keyid(const unsigned char key[LORS_KEY_BYTES], char out[17]);

/* ---- the upload side's encoder (lors_e2e_enc.c) ------------------------------------------ */

typedef struct lors__e2e_desc lors__e2e_desc_t;

typedef struct lors__e2e_enc {
    lors__e2e_desc_t *d;        /* chain, frame size, salt in; the frame table filled in order */
    const unsigned char *key;   /* when the chain has aes */
    int in_fd;                  /* the input: a descriptor ... */
    const unsigned char *mem;   /* ... or memory */
    int64_t length;             /* -1: until the end of the input */
    int out_fd;                 /* the pipe's write end; closed when the encoder returns */
    int64_t plain_read;         /* out: plain bytes read */
    int rc;                     /* out: LORS_OK, or why it stopped */
    int engine_gone;            /* out: it stopped because the pipe's reader left */
    char err[512];
} lors__e2e_enc_t;

/* Read e's input once, transform its frames on several threads, write them in frame order
 * to e->out_fd, append each to e->d, close e->out_fd. */
void lors__e2e_encoder_run(lors__e2e_enc_t *e);

/* ---- the frame table in the exNode (lors_e2e_meta.c) --------------------------------------- */

/* `count` consecutive frames of `len` stored bytes, from frame frame0 at stored byte off0. */
typedef struct lors__e2e_run {
    int64_t len, count, frame0, off0;
} lors__e2e_run_t;

struct lors__e2e_desc {
    lors__e2e_chain_t chain;
    int64_t frame_size;          /* plain bytes per frame */
    int64_t plain_size;
    int64_t frames;
    int64_t stored_size;         /* sum of the frames' stored lengths */
    unsigned char salt[LORS_E2E_SALT];
    char keyid[17];              /* "" without aes */
    lors__e2e_run_t *runs;       /* the stored lengths, run-length coded, in frame order */
    size_t nruns, capruns;
};

/* Append the next frame: plain_len plain bytes stored as stored_len.  LORS_OK or NOMEM. */
int lors__e2e_desc_add(lors__e2e_desc_t *d, int64_t plain_len, int64_t stored_len);
/* Where frame f (< d->frames) lies in the stored bytes. */
void lors__e2e_frame_loc(const lors__e2e_desc_t *d, int64_t f, int64_t *off, int64_t *len);
/* The frame holding stored byte off (< d->stored_size). */
int64_t lors__e2e_frame_at(const lors__e2e_desc_t *d, int64_t off);
/* The plain length of frame f. */
int64_t lors__e2e_frame_plain(const lors__e2e_desc_t *d, int64_t f);
/* Read x's lns_e2e metadata.  LORS_OK with *present 0 (no metadata: d zeroed) or 1 (d filled,
 * every length checked against the chain's bounds and the file's size); LORS_E_EXNODE
 * (malformed, err says how) or LORS_E_NOMEM. */
int lors__e2e_desc_read(const xnd_t *x, lors__e2e_desc_t *d, int *present, char *err,
                        size_t errlen);
/* Write it as x's lns_e2e metadata (replacing any).  An xnd_err. */
int lors__e2e_desc_write(const lors__e2e_desc_t *d, xnd_t *x);
void lors__e2e_desc_free(lors__e2e_desc_t *d);
/* Exactly len == 2n hex digits (either case) into out[n]; 0, or -1 if they are not. */
int lors__e2e_from_hex(const char *s, size_t len, unsigned char *out, size_t n);

/* ---- the engines joined to the codec (lors_e2e.c) ---------------------------------------- */

/* lors_upload_fd / lors_upload_buf through the chain: the input is fd, or mem[length] when
 * fd < 0; *out gets the exNode with its frame table. */
int lors__upload_e2e(const lors_upload_opts_t *o, const lors__e2e_chain_t *chain, int fd,
                     const unsigned char *mem, int64_t length, const char *filename,
                     xnd_t **out, lors_report_t *rep);
/* lors_download_fd on a transformed file described by d: the asked plain bytes to out. */
int lors__download_e2e(const lors_download_opts_t *o, const xnd_t *x, const lors__e2e_desc_t *d,
                       const lors__out_t *out, lors_dl_report_t *rep);

#endif
