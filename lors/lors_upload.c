/* lors_upload.c -- the upload engine: input bytes -> fragments -> copies on depots -> an exNode.
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
 * Locking: one mutex (u->mu) guards all engine state; no depot call, read or event callback
 * runs with it held.  Events are serialized by u->evmu, taken without u->mu.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "lors.h"
#include "lors_checksum.h"

#define CHUNK ((int64_t)1 << 20) /* bytes per STORE */
#define LORS_VERSION_NUMBER 0.82 /* the exNode dialect we write, as LoRS tools read it */

enum source_kind { SRC_MEM, SRC_FILE, SRC_STREAM };

typedef struct chunk {
    unsigned char *data; /* NULL once released */
    int64_t off;         /* in the file */
    int64_t len;
    int pending;         /* copies that have not stored it yet */
} chunk_t;

struct frag;

typedef struct stream {
    struct frag *f;
    int copy;
    int depot;      /* index into the depot list */
    int allocated;
    ibp_caps_t caps;
    int64_t start, end; /* epochs */
    int64_t alloc_len;
    int next;       /* next chunk to store */
    int high;       /* chunks below this have been counted off their pending */
    int busy, done;
} stream_t;

typedef struct frag {
    int index;
    int64_t off;
    int64_t len;       /* bytes read so far; final once all_read */
    int64_t alloc_len; /* what each copy allocates */
    chunk_t *chunks;
    int nchunks_max, nread;
    int all_read;
    int copies_done;
    char *digests;     /* lowercase hex, once all_read ("" without checksums) */
    stream_t *streams;
} frag_t;

typedef struct up {
    const lors_upload_opts_t *o;
    ibp_client_t *ibp;
    lors_report_t *rep;
    pthread_mutex_t mu, evmu;
    pthread_cond_t cv;

    enum source_kind src;
    int fd;
    int64_t base;             /* SRC_FILE: position of the first byte */
    const unsigned char *mem; /* SRC_MEM */

    frag_t **frags;
    int nfrags, capfrags, first_open;
    int reading_done;
    int err;                  /* first fatal error; stops everything */
    int *bad;                 /* per depot: failed during this upload */
    int *load;                /* per depot: streams placed there */
    int64_t live, budget;     /* bytes of chunks held, and the most the reader may hold */
} up_t;

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
    o->checksum = "sha256";
    o->checksum_blocksize = LORS_DEFAULT_CHECKSUM_BLOCKSIZE;
}

void lors_report_free(lors_report_t *r)
{
    if (!r)
        return;
    free(r->issues);
    r->issues = NULL;
    r->nissues = 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void emit(up_t *u, lors_event_t *ev)
{
    if (!u->o->on_event)
        return;
    pthread_mutex_lock(&u->evmu);
    u->o->on_event(u->o->event_arg, ev);
    pthread_mutex_unlock(&u->evmu);
}

static void emit_simple(up_t *u, lors_event_kind kind, const stream_t *s, int64_t off,
                        int64_t len)
{
    lors_event_t ev = {0};
    ev.kind = kind;
    ev.depot = &u->o->depots[s->depot];
    ev.fragment = s->f->index;
    ev.copy = s->copy;
    ev.offset = off;
    ev.length = len;
    emit(u, &ev);
}

/* Fail the whole upload (first error wins).  Called with u->mu held. */
static void fail_locked(up_t *u, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fail_locked(up_t *u, int err, const char *fmt, ...)
{
    if (u->err)
        return;
    u->err = err;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(u->rep->error, sizeof u->rep->error, fmt, ap);
    va_end(ap);
    pthread_cond_broadcast(&u->cv);
}


/* ---- placement ------------------------------------------------------------------------- */

static int used_by_sibling(const up_t *u, const stream_t *s, int d)
{
    for (int k = 0; k < u->o->copies; k++)
        if (k != s->copy && s->f->streams[k].depot == d)
            return 1;
    return 0;
}

/* A depot for s: not bad; if possible holding no other copy of the fragment; then the least
 * loaded, ties broken by the round-robin position.  -1 if every depot is bad. */
static int choose_depot(const up_t *u, const stream_t *s)
{
    int D = (int)u->o->ndepots, best = -1, best_sib = 1, best_load = 0;
    int first = (int)(((int64_t)s->f->index * u->o->copies + s->copy) % D);

    for (int i = 0; i < D; i++) {
        int d = (first + i) % D;
        if (u->bad[d])
            continue;
        int sib = used_by_sibling(u, s, d);
        if (best < 0 || sib < best_sib || (sib == best_sib && u->load[d] < best_load)) {
            best = d;
            best_sib = sib;
            best_load = u->load[d];
        }
    }
    return best;
}

/* Record a failed depot call of s and move s elsewhere, from the fragment's start.  With
 * u->mu held; *freecaps gets the manage capability to DECR (after unlocking), if any. */
static void stream_failed(up_t *u, stream_t *s, const char *op, int ibp_rc, char *freecaps,
                          lors_event_t *ev)
{
    lors_report_t *r = u->rep;
    frag_t *f = s->f;
    int from = s->depot;

    freecaps[0] = '\0';
    if (s->allocated)
        snprintf(freecaps, IBP_MAX_CAP, "%s", s->caps.manage);
    s->allocated = 0;
    s->next = 0;
    u->bad[from] = 1;
    int to = choose_depot(u, s);

    lors_issue_t *ni = realloc(r->issues, (r->nissues + 1) * sizeof *ni);
    if (ni) {
        r->issues = ni;
        lors_issue_t *is = &ni[r->nissues++];
        memset(is, 0, sizeof *is);
        is->depot = u->o->depots[from];
        is->ibp_err = ibp_rc;
        snprintf(is->op, sizeof is->op, "%s", op);
        is->fragment = f->index;
        is->copy = s->copy;
        is->offset = f->off;
        is->length = f->all_read ? f->len : f->alloc_len;
        is->moved = to >= 0;
        if (to >= 0)
            is->moved_to = u->o->depots[to];
    }
    memset(ev, 0, sizeof *ev);
    ev->kind = LORS_EV_FAILURE;
    ev->depot = &u->o->depots[from];
    ev->moved_to = to >= 0 ? &u->o->depots[to] : NULL;
    ev->fragment = f->index;
    ev->copy = s->copy;
    ev->offset = f->off;
    ev->length = f->all_read ? f->len : f->alloc_len;
    ev->ibp_err = ibp_rc;
    ev->op = op;

    if (to < 0) {
        char dn[IBP_MAX_HOST + 80];
        lors_depot_format(&u->o->depots[from], dn, sizeof dn);
        fail_locked(u, LORS_E_PLACE,
                    "fragment %d (bytes %lld-%lld) copy %d: no depot left to store it; last "
                    "failure: %s %s: %s",
                    f->index, (long long)f->off, (long long)(f->off + ev->length - 1), s->copy,
                    op, dn, ibp_strerror(ibp_rc));
        return;
    }
    s->depot = to;
    u->load[to]++;
}

/* ---- the workers ----------------------------------------------------------------------- */

static int runnable(const stream_t *s)
{
    const frag_t *f = s->f;
    return !s->busy && !s->done &&
           (!s->allocated || s->next < f->nread || (f->all_read && s->next == f->nread));
}

static stream_t *pick(up_t *u)
{
    for (int i = u->first_open; i < u->nfrags; i++) {
        frag_t *f = u->frags[i];
        if (f->copies_done == u->o->copies) {
            if (i == u->first_open)
                u->first_open++;
            continue;
        }
        for (int k = 0; k < u->o->copies; k++)
            if (runnable(&f->streams[k]))
                return &f->streams[k];
    }
    return NULL;
}

static int all_done(const up_t *u)
{
    if (!u->reading_done)
        return 0;
    for (int i = u->first_open; i < u->nfrags; i++)
        if (u->frags[i]->copies_done < u->o->copies)
            return 0;
    return 1;
}

static void release_chunk(up_t *u, chunk_t *c)
{
    if (u->src != SRC_MEM && c->data) {
        free(c->data);
        u->live -= c->len;
        pthread_cond_broadcast(&u->cv);
    }
    c->data = NULL;
}

/* ALLOCATE for s on its depot.  Without u->mu. */
static int do_allocate(up_t *u, stream_t *s, int64_t alloc_len)
{
    const lors_depot_t *d = &u->o->depots[s->depot];
    ibp_attr_t a = {(uint64_t)alloc_len, u->o->duration_s, u->o->reliability, IBP_BYTEARRAY};
    int rc = ibp_allocate(u->ibp, d->host, d->port, d->rid[0] ? d->rid : NULL, &a, &s->caps);
    if (rc != IBP_OK)
        return rc;
    s->start = time(NULL);
    s->end = u->o->duration_s > 0 ? s->start + u->o->duration_s : XND_TIME_UNKNOWN;
    s->alloc_len = alloc_len;
    return IBP_OK;
}

/* STORE chunk c for s: from memory, or read again from the file if it was released. */
static int do_store(up_t *u, stream_t *s, const chunk_t *c, unsigned char *data)
{
    uint64_t stored = 0;
    unsigned char *tmp = NULL;
    if (!data) {
        tmp = malloc((size_t)c->len);
        if (!tmp)
            return IBP_E_INTERNAL;
        ssize_t n = pread(u->fd, tmp, (size_t)c->len, (off_t)(u->base + c->off));
        if (n != (ssize_t)c->len) {
            free(tmp);
            return IBP_E_FILE_READ;
        }
        pthread_mutex_lock(&u->mu);
        u->rep->bytes_reread += c->len;
        pthread_mutex_unlock(&u->mu);
        data = tmp;
    }
    int rc = ibp_store(u->ibp, s->caps.write, data, (uint64_t)c->len, &stored);
    if (rc == IBP_OK && stored != (uint64_t)c->len)
        rc = IBP_E_SOCK_WRITE;
    free(tmp);
    return rc;
}

/* The fragment is all stored: shrink the allocation to it, learn the expiry if the depot
 * chose it.  Neither is needed for the data, so neither fails the copy. */
static void do_finish(up_t *u, stream_t *s, int64_t len)
{
    if (s->alloc_len > len &&
        ibp_change(u->ibp, s->caps.manage, (uint64_t)len, 0, 0) == IBP_OK)
        s->alloc_len = len;
    if (s->end == XND_TIME_UNKNOWN) {
        ibp_probe_t p;
        if (ibp_probe(u->ibp, s->caps.manage, &p) == IBP_OK && p.seconds_left >= 0)
            s->end = time(NULL) + p.seconds_left;
    }
}

static void *worker(void *arg)
{
    up_t *u = arg;
    char freecaps[IBP_MAX_CAP];
    lors_event_t fev;

    pthread_mutex_lock(&u->mu);
    for (;;) {
        if (u->err)
            break;
        stream_t *s = pick(u);
        if (!s) {
            if (all_done(u))
                break;
            pthread_cond_wait(&u->cv, &u->mu);
            continue;
        }
        frag_t *f = s->f;
        s->busy = 1;
        if (!s->allocated) {
            int64_t alen = f->alloc_len;
            pthread_mutex_unlock(&u->mu);
            int rc = do_allocate(u, s, alen);
            if (rc == IBP_OK)
                emit_simple(u, LORS_EV_ALLOCATE, s, f->off, alen);
            pthread_mutex_lock(&u->mu);
            s->busy = 0;
            if (rc == IBP_OK) {
                s->allocated = 1;
                continue;
            }
            stream_failed(u, s, "ALLOCATE", rc, freecaps, &fev);
        } else if (s->next < f->nread) {
            int j = s->next;
            chunk_t c = f->chunks[j];
            pthread_mutex_unlock(&u->mu);
            emit_simple(u, LORS_EV_STORE_START, s, c.off, c.len);
            /* a restarted copy may not rely on a file chunk's memory: the other copies can
             * release it at any moment */
            int rc = do_store(u, s, &c, u->src == SRC_FILE && j < s->high ? NULL : c.data);
            if (rc == IBP_OK)
                emit_simple(u, LORS_EV_STORE_END, s, c.off, c.len);
            pthread_mutex_lock(&u->mu);
            s->busy = 0;
            if (rc == IBP_OK) {
                u->rep->bytes_stored += c.len;
                s->next++;
                if (j >= s->high) {
                    s->high = j + 1;
                    if (--f->chunks[j].pending == 0 && u->src == SRC_FILE)
                        release_chunk(u, &f->chunks[j]);
                }
                continue;
            }
            stream_failed(u, s, "STORE", rc, freecaps, &fev);
        } else {
            int64_t len = f->len;
            pthread_mutex_unlock(&u->mu);
            do_finish(u, s, len);
            emit_simple(u, LORS_EV_COPY_DONE, s, f->off, len);
            pthread_mutex_lock(&u->mu);
            s->busy = 0;
            s->done = 1;
            if (++f->copies_done == u->o->copies) {
                for (int j = 0; j < f->nread; j++)
                    release_chunk(u, &f->chunks[j]);
                pthread_cond_broadcast(&u->cv);
            }
            continue;
        }
        /* a failure: free what was left on the failed depot, tell, go on (or stop) */
        pthread_cond_broadcast(&u->cv);
        pthread_mutex_unlock(&u->mu);
        if (freecaps[0])
            ibp_decr(u->ibp, freecaps, IBP_READCAP);
        emit(u, &fev);
        pthread_mutex_lock(&u->mu);
    }
    pthread_cond_broadcast(&u->cv);
    pthread_mutex_unlock(&u->mu);
    return NULL;
}

/* ---- the reader ------------------------------------------------------------------------ */

/* Read up to n bytes (fewer only at EOF). */
static int64_t read_full(int fd, unsigned char *buf, int64_t n)
{
    int64_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, (size_t)(n - got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        got += r;
    }
    return got;
}

/* A new fragment at off whose allocations are alloc_len bytes; with u->mu held. */
static frag_t *frag_new(up_t *u, int64_t off, int64_t alloc_len)
{
    if (u->nfrags == u->capfrags) {
        int nc = u->capfrags ? u->capfrags * 2 : 16;
        frag_t **nf = realloc(u->frags, (size_t)nc * sizeof *nf);
        if (!nf)
            return NULL;
        u->frags = nf;
        u->capfrags = nc;
    }
    frag_t *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->index = u->nfrags;
    f->off = off;
    f->alloc_len = alloc_len;
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
            d = choose_depot(u, s);
        if (d < 0) {
            fail_locked(u, LORS_E_PLACE,
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

/* Read the input into fragments until EOF or length bytes.  frag_size: each fragment's size
 * (the last may be shorter). */
static void read_input(up_t *u, int64_t length, int64_t frag_size)
{
    lors_ck_t ck;
    int64_t off = 0;
    int rc = lors_ck_init(&ck, u->o->checksum, u->o->checksum_blocksize);

    if (rc != LORS_OK) {
        pthread_mutex_lock(&u->mu);
        fail_locked(u, rc, "checksum algorithm \"%s\": %s", u->o->checksum, lors_strerror(rc));
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
            while (!u->err && u->live > 0 && u->live + want > u->budget)
                pthread_cond_wait(&u->cv, &u->mu);
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
                    fail_locked(u, LORS_E_NOMEM, "out of memory reading the input");
                    pthread_mutex_unlock(&u->mu);
                    goto out;
                }
                n = read_full(u->fd, buf, want);
                if (n < 0 || (n < want && length >= 0)) {
                    int e = errno;
                    free(buf);
                    pthread_mutex_lock(&u->mu);
                    if (n < 0)
                        fail_locked(u, LORS_E_READ, "reading the input at byte %lld: %s",
                                    (long long)off, strerror(e));
                    else
                        fail_locked(u, LORS_E_SHORT,
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
                fail_locked(u, rc, "computing checksums: %s", lors_strerror(rc));
                pthread_mutex_unlock(&u->mu);
                goto out;
            }
            pthread_mutex_lock(&u->mu);
            if (!f && !(f = frag_new(u, foff, flen))) {
                if (u->src != SRC_MEM)
                    free(buf);
                fail_locked(u, LORS_E_NOMEM, "out of memory");
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
            rc = lors_ck_finish(&ck, &hex);
            pthread_mutex_lock(&u->mu);
            if (rc != LORS_OK)
                fail_locked(u, rc, "computing checksums: %s", lors_strerror(rc));
            f->digests = hex;
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

static int build_exnode(up_t *u, const char *filename, int64_t size, xnd_t **out)
{
    xnd_t *x = xnd_new();
    int rc = x ? XND_OK : XND_E_NOMEM;
    int use_ck = u->o->checksum && strcmp(u->o->checksum, "none") != 0;

    if (rc == XND_OK && filename)
        rc = xnd_meta_set_string(&x->meta, "filename", filename);
    if (rc == XND_OK)
        rc = xnd_set_size(x, size);
    if (rc == XND_OK)
        rc = xnd_meta_set_double(&x->meta, "lorsversion", LORS_VERSION_NUMBER);
    for (int i = 0; rc == XND_OK && i < u->nfrags; i++) {
        frag_t *f = u->frags[i];
        for (int k = 0; rc == XND_OK && k < u->o->copies; k++) {
            stream_t *s = &f->streams[k];
            xnd_mapping_t *m = xnd_mapping_new();
            if (!m) {
                rc = XND_E_NOMEM;
                break;
            }
            m->exnode_offset = f->off;
            m->logical_length = f->len;
            m->alloc_offset = 0;
            m->alloc_length = s->alloc_len;
            rc = xnd_mapping_set_time(m, 0, s->start);
            if (rc == XND_OK && s->end != XND_TIME_UNKNOWN)
                rc = xnd_mapping_set_time(m, 1, s->end);
            if (rc == XND_OK)
                rc = xnd_mapping_set_cap(m, XND_READ, s->caps.read);
            if (rc == XND_OK)
                rc = xnd_mapping_set_cap(m, XND_WRITE, s->caps.write);
            if (rc == XND_OK)
                rc = xnd_mapping_set_cap(m, XND_MANAGE, s->caps.manage);
            if (rc == XND_OK && use_ck) {
                xnd_func_t *fn = xnd_func_new(LORS_CHECKSUM_FUNC);
                rc = fn ? XND_OK : XND_E_NOMEM;
                if (rc == XND_OK)
                    rc = xnd_meta_set_string(&fn->args, "algorithm", u->o->checksum);
                if (rc == XND_OK)
                    rc = xnd_meta_set_int(&fn->args, "blocksize", u->o->checksum_blocksize);
                if (rc == XND_OK)
                    rc = xnd_meta_set_string(&fn->args, "digests", f->digests);
                if (fn)
                    xnd_mapping_set_func(m, fn);
            }
            if (rc == XND_OK)
                rc = xnd_append(x, m);
            else
                xnd_mapping_free(m);
        }
    }
    if (rc != XND_OK) {
        xnd_free(x);
        snprintf(u->rep->error, sizeof u->rep->error, "building the exNode: %s",
                 xnd_strerror(rc));
        return rc == XND_E_NOMEM ? LORS_E_NOMEM : LORS_E_EXNODE;
    }
    *out = x;
    return LORS_OK;
}

/* Free every allocation the upload made (a failed upload leaves nothing behind). */
static void free_allocations(up_t *u)
{
    for (int i = 0; i < u->nfrags; i++)
        for (int k = 0; k < u->o->copies; k++) {
            stream_t *s = &u->frags[i]->streams[k];
            if (s->allocated)
                ibp_decr(u->ibp, s->caps.manage, IBP_READCAP);
        }
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
    else if (o->duration_s == 0 || o->duration_s < -1)
        what = "duration must be positive or -1";
    else if (o->reliability != IBP_HARD && o->reliability != IBP_SOFT)
        what = "reliability must be IBP_HARD or IBP_SOFT";
    else if (o->threads < 1 || o->threads > 1024)
        what = "threads out of range (1..1024)";
    else if (o->timeout_s < 1)
        what = "timeout must be positive";
    else if (o->checksum && strcmp(o->checksum, "none") != 0 && o->checksum_blocksize <= 0)
        what = "checksum block size must be positive";
    if (what)
        snprintf(err, errlen, "upload options: %s", what);
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
    double t0 = now_s();

    memset(rep, 0, sizeof *rep);
    if (out)
        *out = NULL;
    if (!out) {
        snprintf(rep->error, sizeof rep->error, "upload: no place for the exNode");
        return LORS_E_INVAL;
    }
    if ((rc = check_opts(o, rep->error, sizeof rep->error)) != LORS_OK)
        return rc;
    {
        lors_ck_t ck;
        rc = lors_ck_init(&ck, o->checksum, o->checksum_blocksize);
        lors_ck_free(&ck);
        if (rc != LORS_OK) {
            snprintf(rep->error, sizeof rep->error, "checksum algorithm \"%s\": %s",
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
    u.budget = 2 * (int64_t)o->threads * CHUNK;
    if (u.src == SRC_STREAM && u.budget < 2 * frag_size + CHUNK)
        u.budget = 2 * frag_size + CHUNK;

    ibp_client_opts_t co;
    ibp_client_opts_init(&co);
    co.io_timeout_ms = o->timeout_s * 1000;
    co.server_timeout_s = o->timeout_s;
    if (co.connect_timeout_ms > o->timeout_s * 1000)
        co.connect_timeout_ms = o->timeout_s * 1000;
    if (co.max_idle_per_depot < o->threads)
        co.max_idle_per_depot = o->threads;
    u.ibp = ibp_client_new(&co);
    u.bad = calloc(o->ndepots, sizeof *u.bad);
    u.load = calloc(o->ndepots, sizeof *u.load);
    tids = calloc((size_t)o->threads, sizeof *tids);
    if (!u.ibp || !u.bad || !u.load || !tids) {
        snprintf(rep->error, sizeof rep->error, "upload: out of memory");
        rc = LORS_E_NOMEM;
        goto done;
    }
    pthread_mutex_init(&u.mu, NULL);
    pthread_mutex_init(&u.evmu, NULL);
    pthread_cond_init(&u.cv, NULL);
    for (nt = 0; nt < o->threads; nt++)
        if (pthread_create(&tids[nt], NULL, worker, &u) != 0)
            break;
    if (nt == 0) {
        pthread_mutex_lock(&u.mu);
        fail_locked(&u, LORS_E_THREAD, "upload: cannot start a worker thread");
        pthread_mutex_unlock(&u.mu);
    } else {
        read_input(&u, length, frag_size);
    }
    for (int i = 0; i < nt; i++)
        pthread_join(tids[i], NULL);

    rc = u.err;
    if (rc == LORS_OK)
        rc = build_exnode(&u, filename, rep->bytes_read, out);
    if (rc != LORS_OK)
        free_allocations(&u);
    rep->size = rep->bytes_read;
    rep->fragments = u.nfrags;
    rep->mappings = rc == LORS_OK ? u.nfrags * o->copies : 0;
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
        free(f);
    }
    free(u.frags);
    free(u.bad);
    free(u.load);
    free(tids);
    if (u.ibp)
        ibp_client_free(u.ibp);
    rep->seconds = now_s() - t0;
    if (!report)
        lors_report_free(&localrep);
    return rc;
}

int lors_upload_fd(const lors_upload_opts_t *o, int fd, int64_t length, const char *filename,
                   xnd_t **out, lors_report_t *report)
{
    if (fd < 0 || length < -1) {
        if (out)
            *out = NULL;
        if (report) {
            memset(report, 0, sizeof *report);
            snprintf(report->error, sizeof report->error, "upload: bad file descriptor or length");
        }
        return LORS_E_INVAL;
    }
    return upload(o, SRC_STREAM, fd, NULL, length, filename, out, report);
}

int lors_upload_buf(const lors_upload_opts_t *o, const void *buf, size_t len,
                    const char *filename, xnd_t **out, lors_report_t *report)
{
    if (!buf && len > 0) {
        if (out)
            *out = NULL;
        if (report) {
            memset(report, 0, sizeof *report);
            snprintf(report->error, sizeof report->error, "upload: no buffer");
        }
        return LORS_E_INVAL;
    }
    return upload(o, SRC_MEM, -1, buf, (int64_t)len, filename, out, report);
}
