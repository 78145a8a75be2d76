/* lors_upload_engine.c -- the upload engine: input -> fragments -> copies on depots -> an exNode.
 *
 * Data flow: the calling thread is the reader.  It reads the input once, in chunks of
 * CHUNK bytes, feeds each chunk to the fragment's digests and publishes it; a pool of worker
 * threads runs the copy streams.  A stream is one copy of one fragment on one depot: ALLOCATE,
 * then one STORE (append) per chunk in order, then, if the fragment came out shorter than its
 * allocation, a CHNG to shrink it.  Each chunk is read once and stored by every copy; memory
 * is bounded by the budget (about 2 x threads x CHUNK), not by the file.
 *
 * A depot that fails (ALLOCATE refused, connection lost, STORE error) is marked bad for the
 * rest of the upload; the stream frees what it had there, moves to another depot (one that
 * holds no other copy of the fragment, if any is left) and starts the fragment again.  The
 * bytes are still at hand: a chunk is released only when every copy has stored it, and
 * then only if it can be read again (regular file: pread; memory: the caller's buffer); from a
 * pipe the chunks of a fragment stay until all its copies are complete.  That is why
 * fragments from a pipe are never larger than the block size.
 *
 * Giving up (a failure, or the caller's stop flag: an interrupt) frees every allocation made,
 * in bounded time (lors_discard.c), or with keep_partial keeps the fragments whose copies are
 * all complete in a partial exNode.  With a stop flag every wait is a timed one and a pipe is
 * polled, so that the flag is seen within STOP_POLL_MS plus the depot calls in flight.
 *
 * Locking: one mutex (u->mu) guards all engine state; no depot call, read or event callback
 * runs with it held.  Events are serialized by u->evmu, taken without u->mu.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "lns_io.h"
#include "lns_array.h"
#include "lors_b3tree.h"
#include "lors_checksum.h"
#include "lors_e2e_int.h"
#include "lors_ec_int.h"
#include "lors_io_int.h"
#include "lors_manage_int.h"
#include "lors_report.h"
#include "lors_upload_int.h"

void lors_upload_opts_init(lors_upload_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->blocksize = LORS_DEFAULT_BLOCKSIZE;
    o->copies = 1;
    o->fragments = 4;
    o->duration_s = 24 * 3600;
    o->reliability = IBP_HARD;
    o->threads = 4;
    o->timeout_s = 180;
    o->checksum = LORS_CK_BLAKE3;
    o->checksum_blocksize = LORS_DEFAULT_CHECKSUM_BLOCKSIZE;
    o->outboard = 1;
}

void lors_report_free(lors_report_t *r)
{
    if (!r)
        return;
    free(r->issues);
    r->issues = NULL;
    r->nissues = 0;
}

/* ---- the reader ------------------------------------------------------------------------ */

/* A new fragment at off whose allocations are alloc_len bytes; with u->mu held. */
static frag_t *frag_new(up_t *u, int64_t off, int64_t alloc_len)
{
    if (lns_grow(&u->frags, &u->capfrags, (size_t)u->nfrags + 1, sizeof *u->frags, 16) < 0)
        return NULL;
    frag_t *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->index = u->nfrags;
    f->off = off;
    f->alloc_len = alloc_len + (u->ob_bs ? lors__b3_outboard_len(alloc_len, u->ob_bs) : 0);
    f->nchunks_max = (int)((alloc_len + CHUNK - 1) / CHUNK);
    f->chunks = calloc((size_t)f->nchunks_max, sizeof *f->chunks);
    f->streams = calloc((size_t)u->o->copies, sizeof *f->streams);
    if (!f->chunks || !f->streams) {
        free(f->chunks);
        free(f->streams);
        free(f);
        return NULL;
    }
    /* copy k of fragment i starts on depot (i*copies + k) mod D: the copies of a fragment
     * on consecutive, hence distinct, depots when D >= copies, and every depot as busy */
    for (int k = 0; k < u->o->copies; k++) {
        stream_t *s = &f->streams[k];
        s->f = f;
        s->copy = k;
        s->depot = -1;
    }
    for (int k = 0; k < u->o->copies; k++) {
        stream_t *s = &f->streams[k];
        int d = (int)(((int64_t)f->index * u->o->copies + k) % (int64_t)u->o->ndepots);
        if (u->bad[d])
            d = lors__up_choose_depot(u, s);
        if (d < 0) {
            lors__up_fail_locked(u, LORS_E_PLACE,
                        "fragment %d (bytes %lld-%lld) copy %d: every depot has failed",
                        f->index, (long long)off, (long long)(off + alloc_len - 1), k);
            d = 0;
        }
        s->depot = d;
        u->load[d]++;
    }
    u->frags[u->nfrags++] = f;
    return f;
}

static int64_t read_chunk(up_t *u, unsigned char *buf, int64_t want)
{
    return lors__read_stoppable(u->fd, buf, want, u->src == SRC_STREAM ? u->o->stop : NULL);
}

/* Stop the upload at the caller's request; with u->mu held. */
static void stop_locked(up_t *u)
{
    lors__up_fail_locked(u, LORS_E_STOPPED, "stopped after %lld bytes read",
                         (long long)u->rep->bytes_read);
}

/* Read the input into fragments until EOF or length bytes.  frag_size: each fragment's size
 * (the last may be shorter). */
static void read_input(up_t *u, int64_t length, int64_t frag_size)
{
    lors_ck_t ck;
    int64_t off = 0;
    int rc = lors_ck_init(&ck, u->o->checksum, u->o->checksum_blocksize);
    if (rc == LORS_OK && u->ob_bs)
        rc = lors_ck_want_outboard(&ck);

    if (rc != LORS_OK) {
        pthread_mutex_lock(&u->mu);
        lors__up_fail_locked(u, rc, "checksum algorithm \"%s\": %s", u->o->checksum,
                             lors_strerror(rc));
        pthread_mutex_unlock(&u->mu);
        goto out;
    }
    for (;;) {
        frag_t *f = NULL;
        int64_t flen = length >= 0 ? (length - off < frag_size ? length - off : frag_size)
                                   : frag_size;
        if (flen <= 0)
            break;
        int64_t foff = off, got = 0;
        int eof = 0;
        while (got < flen) {
            int64_t want = flen - got < CHUNK ? flen - got : CHUNK;
            unsigned char *buf;
            int64_t n;

            pthread_mutex_lock(&u->mu);
            while (!u->err && !lors__up_stopped(u) && u->live > 0 && u->live + want > u->budget)
                lors__up_wait(u);
            if (!u->err && lors__up_stopped(u))
                stop_locked(u);
            int stop = u->err != 0;
            pthread_mutex_unlock(&u->mu);
            if (stop)
                goto out;

            if (u->src == SRC_MEM) {
                buf = (unsigned char *)u->mem + off;
                n = want;
            } else {
                buf = malloc((size_t)want);
                if (!buf) {
                    pthread_mutex_lock(&u->mu);
                    lors__up_fail_locked(u, LORS_E_NOMEM, "out of memory reading the input");
                    pthread_mutex_unlock(&u->mu);
                    goto out;
                }
                n = read_chunk(u, buf, want);
                if (n < 0 || (n < want && length >= 0)) {
                    int e = errno;
                    free(buf);
                    pthread_mutex_lock(&u->mu);
                    if (n == -2)
                        stop_locked(u);
                    else if (n < 0)
                        lors__up_fail_locked(u, LORS_E_READ, "reading the input at byte %lld: %s",
                                    (long long)off, strerror(e));
                    else
                        lors__up_fail_locked(u, LORS_E_SHORT,
                                    "the input ended at byte %lld, before its length %lld",
                                    (long long)(off + n), (long long)length);
                    pthread_mutex_unlock(&u->mu);
                    goto out;
                }
                if (n == 0) {
                    free(buf);
                    eof = 1;
                    break;
                }
            }
            if ((rc = lors_ck_update(&ck, buf, (size_t)n)) != LORS_OK) {
                if (u->src != SRC_MEM)
                    free(buf);
                pthread_mutex_lock(&u->mu);
                lors__up_fail_locked(u, rc, "computing checksums: %s", lors_strerror(rc));
                pthread_mutex_unlock(&u->mu);
                goto out;
            }
            pthread_mutex_lock(&u->mu);
            if (!f && !(f = frag_new(u, foff, flen))) {
                if (u->src != SRC_MEM)
                    free(buf);
                lors__up_fail_locked(u, LORS_E_NOMEM, "out of memory");
                pthread_mutex_unlock(&u->mu);
                goto out;
            }
            chunk_t *c = &f->chunks[f->nread];
            c->data = buf;
            c->off = off;
            c->len = n;
            c->pending = u->o->copies;
            if (u->src != SRC_MEM)
                u->live += n;
            f->nread++;
            f->len += n;
            u->rep->bytes_read += n;
            pthread_cond_broadcast(&u->cv);
            pthread_mutex_unlock(&u->mu);
            off += n;
            got += n;
            if (n < want) {
                eof = 1;
                break;
            }
        }
        if (f) {
            char *hex = NULL;
            unsigned char *ob = NULL;
            size_t oblen = 0;
            rc = lors_ck_finish(&ck, &hex);
            if (rc == LORS_OK)
                rc = lors_ck_take_outboard(&ck, &ob, &oblen);
            pthread_mutex_lock(&u->mu);
            if (rc != LORS_OK)
                lors__up_fail_locked(u, rc, "computing checksums: %s", lors_strerror(rc));
            f->digests = hex;
            f->ob = ob;
            f->oblen = oblen;
            f->all_read = 1;
            pthread_cond_broadcast(&u->cv);
            pthread_mutex_unlock(&u->mu);
        }
        if (eof)
            break;
    }
out:
    lors_ck_free(&ck);
    pthread_mutex_lock(&u->mu);
    u->reading_done = 1;
    pthread_cond_broadcast(&u->cv);
    pthread_mutex_unlock(&u->mu);
}

/* ---- the result ------------------------------------------------------------------------ */

/* A fragment whose every copy is stored. */
static int complete(const up_t *u, const frag_t *f)
{
    return f->all_read && f->copies_done == u->o->copies;
}

/* The exNode of the upload (only_complete: of its complete fragments, for keep_partial, and
 * without touching the report's error line). */
static int build_exnode(up_t *u, const char *filename, int64_t size, int only_complete,
                        xnd_t **out)
{
    xnd_t *x;
    int rc = lors__xnd_begin(filename, size, &x);
    int use_ck = u->o->checksum && strcmp(u->o->checksum, "none") != 0;

    for (int i = 0; rc == XND_OK && i < u->nfrags; i++) {
        frag_t *f = u->frags[i];
        if (only_complete && !complete(u, f))
            continue;
        for (int k = 0; rc == XND_OK && k < u->o->copies; k++) {
            stream_t *s = &f->streams[k];
            xnd_mapping_t *m;
            rc = lors__map_new_alloc(f->off, f->len, s->alloc_len, s->start, s->end, &s->caps,
                                     &m);
            if (rc != XND_OK)
                break;
            if (use_ck) {
                xnd_func_t *fn = xnd_func_new(LORS_CHECKSUM_FUNC);
                rc = fn ? XND_OK : XND_E_NOMEM;
                if (rc == XND_OK)
                    rc = xnd_meta_set_string(&fn->args, "algorithm", u->o->checksum);
                if (rc == XND_OK)
                    rc = xnd_meta_set_int(&fn->args, "blocksize", u->o->checksum_blocksize);
                if (rc == XND_OK)
                    rc = xnd_meta_set_string(&fn->args, "digests", f->digests);
                if (rc == XND_OK && f->oblen)
                    rc = xnd_meta_set_int(&fn->args, LORS_CK_OUTBOARD, LORS_B3_GROUP);
                if (fn)
                    xnd_mapping_set_func(m, fn);
            }
            if (rc == XND_OK)
                rc = xnd_append(x, m);
            else
                xnd_mapping_free(m);
        }
    }
    return lors__xnd_built(x, rc, only_complete ? NULL : u->rep, out);
}

/* Free every allocation the upload made but the complete fragments if keep (a failed upload
 * leaves nothing behind that no exNode points to); the counts into the report. */
static void free_allocations(up_t *u, int keep)
{
    const char **caps = malloc(((size_t)u->nfrags * (size_t)u->o->copies + 1) * sizeof *caps);
    size_t n = 0;
    if (!caps) {
        u->rep->freed.unfreed = u->nfrags * u->o->copies;
        return;
    }
    for (int i = 0; i < u->nfrags; i++)
        for (int k = 0; k < u->o->copies; k++) {
            stream_t *s = &u->frags[i]->streams[k];
            if (s->allocated && !(keep && complete(u, u->frags[i])))
                caps[n++] = s->caps.manage;
        }
    lors__release(caps, n, u->o->threads, u->o->timeout_s, &u->rep->freed);
    free(caps);
}

int lors__xnd_begin(const char *filename, int64_t size, xnd_t **out)
{
    xnd_t *x = *out = xnd_new();
    int rc = x ? XND_OK : XND_E_NOMEM;
    if (rc == XND_OK && filename)
        rc = xnd_meta_set_string(&x->meta, "filename", filename);
    if (rc == XND_OK)
        rc = xnd_set_size(x, size);
    if (rc == XND_OK)
        rc = xnd_meta_set_double(&x->meta, "lorsversion", LORS_VERSION_NUMBER);
    return rc;
}

int lors__map_new_alloc(int64_t off, int64_t len, int64_t alloc_len, int64_t start,
                        int64_t end, const ibp_caps_t *caps, xnd_mapping_t **out)
{
    xnd_mapping_t *m = xnd_mapping_new();
    *out = NULL;
    if (!m)
        return XND_E_NOMEM;
    m->exnode_offset = off;
    m->logical_length = len;
    m->alloc_offset = 0;
    m->alloc_length = alloc_len;
    int rc = lors__map_set_alloc(m, start, end, caps);
    if (rc != XND_OK)
        xnd_mapping_free(m);
    else
        *out = m;
    return rc;
}

int lors__xnd_built(xnd_t *x, int rc, lors_report_t *rep, xnd_t **out)
{
    if (rc == XND_OK) {
        *out = x;
        return LORS_OK;
    }
    xnd_free(x);
    if (rep)
        lors__report_error(rep, "building the exNode: %s", xnd_strerror(rc));
    return rc == XND_E_NOMEM ? LORS_E_NOMEM : LORS_E_EXNODE;
}

int lors__map_set_alloc(xnd_mapping_t *m, int64_t start, int64_t end, const ibp_caps_t *caps)
{
    int rc = xnd_mapping_set_time(m, 0, start);
    if (rc == XND_OK && end != XND_TIME_UNKNOWN)
        rc = xnd_mapping_set_time(m, 1, end);
    if (rc == XND_OK)
        rc = xnd_mapping_set_cap(m, XND_READ, caps->read);
    if (rc == XND_OK)
        rc = xnd_mapping_set_cap(m, XND_WRITE, caps->write);
    if (rc == XND_OK)
        rc = xnd_mapping_set_cap(m, XND_MANAGE, caps->manage);
    if (rc == XND_OK)
        rc = lors__pin_record(m);
    return rc;
}

const char *lors__store_opts_problem(const lors_upload_opts_t *o)
{
    if (o->duration_s == 0 || o->duration_s < -1)
        return "duration must be positive or -1";
    if (o->reliability != IBP_HARD && o->reliability != IBP_SOFT)
        return "reliability must be IBP_HARD or IBP_SOFT";
    if (o->threads < 1 || o->threads > 1024)
        return "threads out of range (1..1024)";
    if (o->timeout_s < 1)
        return "timeout must be positive";
    if (o->provisional_s < 0)
        return "the provisional lease must be >= 0";
    return NULL;
}

static int check_opts(const lors_upload_opts_t *o, char *err, size_t errlen)
{
    const char *what = NULL;
    if (!o)
        what = "no options";
    else if (!o->depots || o->ndepots == 0)
        what = "no depots";
    else if (o->ndepots > 1000000)
        what = "too many depots";
    else if (o->blocksize <= 0 || o->blocksize > ((int64_t)1 << 40))
        what = "block size out of range";
    else if (o->copies < 1 || o->copies > 1000)
        what = "copies out of range (1..1000)";
    else if (o->fragments < 1 || o->fragments > 1000000)
        what = "fragments out of range";
    else if (!(what = lors__store_opts_problem(o)) && o->checksum &&
             strcmp(o->checksum, "none") != 0 && o->checksum_blocksize <= 0)
        what = "checksum block size must be positive";
    if (what)
        lns_err_set(err, errlen, "upload options: %s", what);
    return what ? LORS_E_INVAL : LORS_OK;
}

static int upload(const lors_upload_opts_t *o, enum source_kind src, int fd,
                  const unsigned char *mem, int64_t length, const char *filename, xnd_t **out,
                  lors_report_t *report)
{
    lors_report_t localrep;
    lors_report_t *rep = report ? report : &localrep;
    up_t u;
    pthread_t *tids = NULL;
    int nt = 0, rc;
    double t0 = lors__up_now_s();

    memset(rep, 0, sizeof *rep);
    if (out)
        *out = NULL;
    if (!out) {
        lors__report_error(rep, "upload: no place for the exNode");
        return LORS_E_INVAL;
    }
    if ((rc = check_opts(o, rep->error, sizeof rep->error)) != LORS_OK)
        return rc;
    {
        lors_ck_t ck;
        rc = lors_ck_init(&ck, o->checksum, o->checksum_blocksize);
        lors_ck_free(&ck);
        if (rc != LORS_OK) {
            lors__report_error(rep, "checksum algorithm \"%s\": %s",
                               o->checksum, lors_strerror(rc));
            return rc;
        }
    }

    memset(&u, 0, sizeof u);
    u.o = o;
    u.rep = rep;
    u.src = src;
    u.fd = fd;
    u.mem = mem;
    if (src != SRC_MEM) {
        struct stat st;
        off_t pos = lseek(fd, 0, SEEK_CUR);
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && pos >= 0) {
            u.src = SRC_FILE;
            u.base = pos;
        }
    }

    /* Fragments: F of them when the length is known, else block-size ones.  From a pipe a
     * fragment is kept whole in memory until its copies are done, so it stays <= blocksize. */
    int64_t frag_size = o->blocksize;
    if (length >= 0) {
        frag_size = length / o->fragments + (length % o->fragments != 0);
        if (frag_size < 1)
            frag_size = 1;
        if (u.src == SRC_STREAM && frag_size > o->blocksize)
            frag_size = o->blocksize;
    }
    if (o->outboard && o->checksum && strcmp(o->checksum, LORS_CK_BLAKE3) == 0 &&
        o->checksum_blocksize > LORS_B3_GROUP)
        u.ob_bs = o->checksum_blocksize;
    u.budget = 2 * (int64_t)o->threads * CHUNK;
    if (u.src == SRC_STREAM && u.budget < 2 * frag_size + CHUNK)
        u.budget = 2 * frag_size + CHUNK;

    u.ibp = lors__client(o->timeout_s, o->threads);
    u.alive = lors__alive_start(o->duration_s, o->provisional_s, o->timeout_s);
    u.bad = calloc(o->ndepots, sizeof *u.bad);
    u.load = calloc(o->ndepots, sizeof *u.load);
    tids = calloc((size_t)o->threads, sizeof *tids);
    if (!u.ibp || !u.bad || !u.load || !tids) {
        lors__report_error(rep, "upload: out of memory");
        rc = LORS_E_NOMEM;
        goto done;
    }
    pthread_mutex_init(&u.mu, NULL);
    pthread_mutex_init(&u.evmu, NULL);
    pthread_cond_init(&u.cv, NULL);
    for (nt = 0; nt < o->threads; nt++)
        if (pthread_create(&tids[nt], NULL, lors__up_worker, &u) != 0)
            break;
    if (nt == 0) {
        pthread_mutex_lock(&u.mu);
        lors__up_fail_locked(&u, LORS_E_THREAD, "upload: cannot start a worker thread");
        pthread_mutex_unlock(&u.mu);
    } else {
        read_input(&u, length, frag_size);
    }
    for (int i = 0; i < nt; i++)
        pthread_join(tids[i], NULL);

    rc = u.err;
    if (rc != LORS_OK && lors__up_stopped(&u))
        rc = LORS_E_STOPPED; /* a call in flight failed while the stop waited for it */
    if (rc == LORS_OK)
        rc = build_exnode(&u, filename, rep->bytes_read, 0, out);
    int kept = 0;
    if (rc != LORS_OK && o->keep_partial) {
        for (int i = 0; i < u.nfrags; i++)
            kept += complete(&u, u.frags[i]);
        if (kept && build_exnode(&u, filename, length >= 0 ? length : rep->bytes_read, 1,
                                 out) != LORS_OK)
            kept = 0;
    }
    if (rc != LORS_OK)
        free_allocations(&u, kept > 0);
    rep->size = rep->bytes_read;
    rep->fragments = u.nfrags;
    rep->mappings = (rc == LORS_OK ? u.nfrags : kept) * o->copies;
    pthread_cond_destroy(&u.cv);
    pthread_mutex_destroy(&u.evmu);
    pthread_mutex_destroy(&u.mu);
done:
    for (int i = 0; i < u.nfrags; i++) {
        frag_t *f = u.frags[i];
        for (int j = 0; j < f->nread; j++)
            if (u.src != SRC_MEM)
                free(f->chunks[j].data);
        free(f->chunks);
        free(f->streams);
        free(f->digests);
        free(f->ob);
        free(f);
    }
    free(u.frags);
    free(u.bad);
    free(u.load);
    free(tids);
    lors__alive_stop(u.alive);
    if (u.ibp)
        ibp_client_free(u.ibp);
    rep->seconds = lors__up_now_s() - t0;
    if (!report)
        lors_report_free(&localrep);
    return rc;
}

int lors__upload_plain_fd(const lors_upload_opts_t *o, int fd, int64_t length,
                          const char *filename, xnd_t **out, lors_report_t *report)
{
    if (fd < 0 || length < -1) {
        if (out)
            *out = NULL;
        if (report) {
            memset(report, 0, sizeof *report);
            lors__report_error(report, "upload: bad file descriptor or length");
        }
        return LORS_E_INVAL;
    }
    return upload(o, SRC_STREAM, fd, NULL, length, filename, out, report);
}

int lors__upload_plain_buf(const lors_upload_opts_t *o, const void *buf, size_t len,
                           const char *filename, xnd_t **out, lors_report_t *report)
{
    if (!buf && len > 0) {
        if (out)
            *out = NULL;
        if (report) {
            memset(report, 0, sizeof *report);
            lors__report_error(report, "upload: no buffer");
        }
        return LORS_E_INVAL;
    }
    return upload(o, SRC_MEM, -1, buf, (int64_t)len, filename, out, report);
}

