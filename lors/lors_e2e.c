/* lors_e2e.c -- end-to-end transforms (zstd, zlib, AES-256-GCM) around the upload and
 * download engines.
 *
 * The engines move stored bytes and know nothing of frames; this file joins them to the
 * user's plain bytes with a pipe, so each engine keeps its own guarantees.
 *
 * Upload: the encoder (lors_e2e_enc.c) reads the input once, frame by frame, transforms the
 * frames on several threads and writes them in order into a pipe; the plain upload engine
 * reads the pipe as an input of unknown length (so it stripes, checksums and replicates the
 * stored bytes), and the frame table is then added to its exNode.  If the engine stops,
 * closing the pipe's read end stops the encoder (EPIPE); if the input fails, the engine has
 * seen a clean end of the pipe and its allocations are freed here.
 *
 * Download: the frames that cover the asked plain range are found in the frame table; a
 * feeder thread runs the plain download engine on exactly their stored bytes into a pipe;
 * the calling thread decodes frame by frame and writes only the asked plain bytes.  If it
 * stops first (a bad frame, a write error), closing the read end stops the feeder.
 * Memory: the engines' own bounds plus a stored and a plain frame on each side.
 * lors_upload_fd/_buf (lors_upload_engine.c) and lors_download_fd (lors_download_engine.c)
 * call in here only when the file has a chain.
 */
#include <errno.h>
#include <fcntl.h>
#include <openssl/rand.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lns_io.h"
#include "lns_time.h"
#include "lors_e2e_int.h"
#include "lors_feed.h"
#include "lors_io_int.h"
#include "lors_manage_int.h"
#include "lors_report.h"


static double now_s(void)
{
    return (double)lns_mono_ns() / 1e9;
}

/* ---- upload ------------------------------------------------------------------------------ */

static void *encoder(void *arg)
{
    lors__e2e_encoder_run(arg);
    return NULL;
}

/* The original tools read a mapping without an e2e_blocksize as the file's own bytes, which
 * frames are not: every mapping of a transformed file gets one (the frame size), so that they
 * send it through their conditioning functions, and a function with a name they do not know
 * (lns_checksum, or LORS_E2E_FUNC where there are no checksums), which they then refuse
 * ("lorsSetLoad failure", nothing written).  Without a function they would crash.
 * docs/exnode.md, "Older readers". */
static int mark_for_originals(xnd_t *x, int64_t fs)
{
    for (size_t i = 0; i < x->nmaps; i++) {
        xnd_mapping_t *m = x->maps[i];
        m->e2e_blocksize = fs;
        m->has_e2e_blocksize = 1;
        if (!m->func) {
            xnd_func_t *f = xnd_func_new(LORS_E2E_FUNC);
            if (!f)
                return XND_E_NOMEM;
            xnd_mapping_set_func(m, f);
        }
    }
    return XND_OK;
}

/* A failed input after the engine succeeded: what it stored is not the file. */
static void discard(const lors_upload_opts_t *o, xnd_t *x, lors_report_t *rep)
{
    lors_discard(x, o->threads, o->timeout_s, &rep->freed);
    xnd_free(x);
}

int lors__upload_e2e(const lors_upload_opts_t *o, const lors__e2e_chain_t *chain, int fd,
                     const unsigned char *mem, int64_t length, const char *filename,
                     xnd_t **out, lors_report_t *rep)
{
    double t0 = now_s();
    int64_t fs = o->e2e_blocksize ? o->e2e_blocksize
                 : lors__e2e_level_max(chain) ? LORS_E2E_PACK_FRAME
                                             : LORS_E2E_DEFAULT_FRAME;
    lors__e2e_desc_t d;
    lors__e2e_enc_t e;
    int p[2], rc;
    pthread_t tid;

    if (fs < 1 || fs > LORS_E2E_MAX_FRAME) {
        lors__report_error(rep, "upload options: e2e frame size out of range (1..%lld)",
                           (long long)LORS_E2E_MAX_FRAME);
        return LORS_E_INVAL;
    }
    if (chain->has_aes && !o->key) {
        lors__report_error(rep, "e2e chain \"%s\": aes needs a key, none given",
                           chain->name);
        return LORS_E_KEY;
    }
    memset(&d, 0, sizeof d);
    memset(&e, 0, sizeof e);
    d.chain = *chain;
    d.frame_size = fs;
    if (chain->has_aes) {
        if (RAND_bytes(d.salt, sizeof d.salt) != 1) {
            lors__report_error(rep, "no random salt: OpenSSL's RAND_bytes failed");
            return LORS_E_E2E;
        }
        lors__e2e_keyid(o->key, d.keyid);
    }
    if (lors__pipe(p) != 0) {
        lors__report_error(rep, "upload: no pipe for the transformed bytes: %s",
                           strerror(errno));
        return LORS_E_READ;
    }
    e.d = &d;
    e.key = o->key;
    e.in_fd = fd;
    e.mem = mem;
    e.length = length;
    e.out_fd = p[1];
    if (pthread_create(&tid, NULL, encoder, &e) != 0) {
        close(p[0]);
        close(p[1]);
        lors__report_error(rep, "upload: cannot start the encoder thread");
        return LORS_E_THREAD;
    }

    lors_upload_opts_t po = *o;
    po.e2e = NULL;
    po.outboard = 0; /* frames are read whole: no small read to check */
    po.key = NULL;
    po.keep_partial = 0; /* frames cut short do not decode: nothing partial is kept */
    rc = lors__upload_plain_fd(&po, p[0], -1, filename, out, rep);
    close(p[0]); /* an encoder still writing gets EPIPE and stops */
    pthread_join(tid, NULL);

    if (e.rc != LORS_OK && !e.engine_gone) {
        if (rc == LORS_OK) {
            discard(o, *out, rep);
            *out = NULL;
            rep->mappings = 0;
        }
        rc = e.rc;
        lors__report_error(rep, "%s", e.err);
    } else if (rc == LORS_OK && d.stored_size != rep->size) {
        rc = LORS_E_E2E;
        lors__report_error(rep, "the engine stored %lld bytes, the encoder made "
                           "%lld", (long long)rep->size, (long long)d.stored_size);
    } else if (rc == LORS_OK && ((rc = lors__e2e_desc_write(&d, *out)) != XND_OK ||
                                 (rc = mark_for_originals(*out, fs)) != XND_OK)) {
        lors__report_error(rep, "building the exNode: %s", xnd_strerror(rc));
        rc = rc == XND_E_NOMEM ? LORS_E_NOMEM : LORS_E_EXNODE;
    }
    if (rc != LORS_OK && *out) {
        discard(o, *out, rep);
        *out = NULL;
        rep->mappings = 0;
    }
    rep->bytes_read = e.plain_read;
    rep->plain_size = d.plain_size;
    rep->frame_size = fs;
    rep->seconds = now_s() - t0;
    lors__e2e_desc_free(&d);
    return rc;
}

/* ---- download ---------------------------------------------------------------------------- */

/* Decode frames f0..f1 from in_fd and write the plain bytes of [off, end) to out_fd.
 * LORS_OK; 1 if the stored bytes ended early (the feeder failed); or an error in rep. */
static int decode_frames(const lors__e2e_desc_t *d, lors__e2e_codec_t *codec, int in_fd,
                         const lors__out_t *out, int64_t off, int64_t end, lors_dl_report_t *rep)
{
    int64_t fs = d->frame_size;
    int64_t f0 = off / fs, f1 = (end - 1) / fs;
    unsigned char *sbuf = malloc((size_t)lors__e2e_max_stored(&d->chain, fs));
    unsigned char *pbuf = malloc((size_t)fs);
    char why[256];
    int rc = LORS_OK;

    if (!sbuf || !pbuf) {
        lors__report_error(rep, "out of memory for a frame of %lld bytes",
                           (long long)fs);
        rc = LORS_E_NOMEM;
    }
    for (int64_t f = f0; rc == LORS_OK && f <= f1; f++) {
        int64_t so, sl, pl = lors__e2e_frame_plain(d, f), fstart = f * fs;
        lors__e2e_frame_loc(d, f, &so, &sl);
        int64_t n = lns_fd_read_full(in_fd, sbuf, (size_t)sl, -1);
        if (n != sl) {
            rc = 1;
            break;
        }
        rc = lors__e2e_decode(codec, (uint32_t)f, sbuf, (size_t)sl, pbuf, (size_t)pl, why,
                              sizeof why);
        if (rc != LORS_OK) {
            lors__report_error(rep, "frame %lld (plain bytes %lld-%lld): %s",
                               (long long)f, (long long)fstart, (long long)(fstart + pl - 1), why);
            break;
        }
        int64_t a = off > fstart ? off : fstart;
        int64_t b = end < fstart + pl ? end : fstart + pl;
        int werr = lors__out_write(out, pbuf + (a - fstart), (size_t)(b - a));
        if (werr < 0) {
            lors__report_error(rep, "writing bytes %lld-%lld to the output: %s",
                               (long long)a, (long long)(b - 1), strerror(-werr));
            rc = LORS_E_WRITE;
            break;
        }
        rep->bytes_written += b - a;
    }
    free(sbuf);
    free(pbuf);
    return rc;
}

/* The feeder failed: its report, with the missing stored bytes as plain bytes. */
static void feeder_failed(const lors__e2e_desc_t *d, const lors__feed_t *fd, int64_t off, int64_t end,
                          lors_dl_report_t *rep)
{
    if (fd->rc == LORS_E_NO_REPLICA && fd->rep.missing_len > 0) {
        int64_t fa = lors__e2e_frame_at(d, fd->rep.missing_off);
        int64_t fb = lors__e2e_frame_at(d, fd->rep.missing_off + fd->rep.missing_len - 1);
        int64_t a = fa * d->frame_size, b = fb * d->frame_size + lors__e2e_frame_plain(d, fb);
        rep->missing_off = a > off ? a : off;
        rep->missing_len = (b < end ? b : end) - rep->missing_off;
        lors__report_error(rep, "plain bytes %lld-%lld (frames %lld-%lld): %.400s",
                           (long long)rep->missing_off,
                           (long long)(rep->missing_off + rep->missing_len - 1), (long long)fa,
                           (long long)fb, fd->rep.error);
    } else {
        lors__report_error(rep, "%s", fd->rep.error);
    }
}

/* The feeder's degraded ranges, in stored bytes, as plain bytes of [off, end): the whole
 * frames they touch, cut to the range; a frame two of them touch goes with the first. */
static void degraded_plain(const lors__e2e_desc_t *d, int64_t off, int64_t end,
                           lors_dl_report_t *rep)
{
    size_t k = 0;
    int64_t done = off; /* plain bytes before this are listed already */
    for (size_t i = 0; i < rep->ndegraded; i++) {
        lors_dl_degraded_t g = rep->degraded[i];
        int64_t fa = lors__e2e_frame_at(d, g.offset);
        int64_t fb = lors__e2e_frame_at(d, g.offset + g.length - 1);
        int64_t a = fa * d->frame_size, b = fb * d->frame_size + lors__e2e_frame_plain(d, fb);
        a = a > done ? a : done;
        b = b < end ? b : end;
        if (a >= b)
            continue;
        lors_dl_degraded_t *prev = k ? &rep->degraded[k - 1] : NULL;
        if (prev && prev->offset + prev->length == a && prev->copies == g.copies &&
            prev->left == g.left)
            prev->length += b - a;
        else
            rep->degraded[k++] = (lors_dl_degraded_t){a, b - a, g.copies, g.left};
        done = b;
    }
    rep->ndegraded = k;
}

int lors__download_e2e(const lors_download_opts_t *o, const xnd_t *x, const lors__e2e_desc_t *d,
                       const lors__out_t *out, lors_dl_report_t *rep)
{
    double t0 = now_s();
    int64_t off = o->offset, len = o->length < 0 ? d->plain_size - o->offset : o->length;
    char kid[17];
    lors__feed_t fd;
    lors__e2e_codec_t codec;
    int in, rc;

    if (!out || (!out->put && out->fd < 0)) {
        lors__report_error(rep, "no options, exNode or output");
        return LORS_E_INVAL;
    }
    if (d->chain.has_aes && !o->key) {
        lors__report_error(rep, "the file is encrypted (e2e chain \"%s\") and no key was given",
                           d->chain.name);
        return LORS_E_KEY;
    }
    if (d->chain.has_aes) {
        lors__e2e_keyid(o->key, kid);
        if (strcmp(kid, d->keyid) != 0) {
            lors__report_error(rep, "the key does not match the one this file was encrypted with");
            return LORS_E_KEY;
        }
    }
    if (off < 0 || off > d->plain_size || len < 0 || len > d->plain_size - off) {
        lors__report_error(rep, "the range runs past the end of the file");
        return LORS_E_INVAL;
    }

    memset(&fd, 0, sizeof fd);
    fd.o = *o;
    fd.o.key = NULL;
    fd.x = x;
    fd.run = lors__download_plain;
    if (len == 0) {
        /* nothing to decode; the engine still checks the options */
        fd.o.offset = fd.o.length = 0;
        rc = lors__download_plain_to(&fd.o, x, out, rep);
        rep->offset = off;
        rep->length = 0;
        return rc;
    }
    int64_t f0 = off / d->frame_size, f1 = (off + len - 1) / d->frame_size, so, sl, lo, ll;
    lors__e2e_frame_loc(d, f0, &so, &sl);
    lors__e2e_frame_loc(d, f1, &lo, &ll);
    fd.o.offset = so;
    fd.o.length = lo + ll - so;
    if ((rc = lors__e2e_codec_init(&codec, &d->chain, o->key, d->salt)) != LORS_OK) {
        lors__e2e_codec_free(&codec);
        lors__report_error(rep, "out of memory");
        return rc;
    }
    if ((rc = lors__feed_start(&fd, &in, rep->error, sizeof rep->error)) != LORS_OK) {
        lors__e2e_codec_free(&codec);
        return rc;
    }
    sigset_t old;
    int was_pending;
    lors__sigpipe_hold(&old, &was_pending);
    lors_dl_report_t mine;
    memset(&mine, 0, sizeof mine);
    rc = decode_frames(d, &codec, in, out, off, off + len, &mine);
    close(in); /* a feeder still writing gets EPIPE and stops */
    lors__feed_join(&fd);
    lors__sigpipe_release(&old, was_pending);
    lors__e2e_codec_free(&codec);

    /* the engine's report (per-depot statistics, bad mappings, ...), in plain bytes */
    *rep = fd.rep;
    rep->offset = off;
    rep->length = len;
    rep->bytes_written = mine.bytes_written;
    rep->missing_off = rep->missing_len = 0;
    degraded_plain(d, off, off + len, rep);
    if (rc == 1 && fd.rc != LORS_OK) {
        rc = fd.rc;
        feeder_failed(d, &fd, off, off + len, rep);
    } else if (rc == 1) {
        rc = LORS_E_E2E;
        lors__report_error(rep, "the stored bytes of frames %lld-%lld ended "
                           "early (%.400s)", (long long)f0, (long long)f1, fd.rep.error);
    } else {
        lors__report_error(rep, "%s", mine.error);
    }
    rep->seconds = now_s() - t0;
    return rc;
}
