/* lors_ec_upload.c -- the erasure-coded upload: stripes in, k + m columns of pieces out.
 *
 * The calling thread is the reader: it reads a stripe (k pieces, the last stripe's padded),
 * makes its m parity pieces (ISA-L) and puts it in a ring of RING stripes.  One worker per
 * column stores that column's piece of every stripe, in order, into the column's allocation
 * of the current segment (a segment: G consecutive stripes, one allocation per column, on
 * k + m distinct depots, rotated through the depot list from segment to segment).  A stripe's
 * slot in the ring is reused once all k + m columns stored it, so the reader runs at most RING
 * stripes ahead of the slowest depot.
 *
 * A depot that fails (ALLOCATE or STORE) is left for the rest of the upload; the column moves
 * to a depot no other column of the segment uses, and the pieces it had stored there are made
 * again from the input (a regular file or memory: re-read and re-encoded) and stored anew.
 * From a pipe they cannot be made again, and the upload fails.  A failed or stopped upload
 * frees every allocation it made.  No depot call runs under u->mu.
 */
#include <errno.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lors_checksum.h"
#include "lors_ec_int.h"
#include "lors_io_int.h"
#include "lors_lease_int.h"
#include "lors_manage_int.h"
#include "lors_report.h"
#include "lors_upload_int.h"
#include "lns_io.h"

#define RING 4
#define NCOL (LORS_EC_MAX_K + LORS_EC_MAX_M)

typedef struct col {
    int depot;                /* index into o->depots */
    int allocated;
    ibp_caps_t caps;
    int64_t start, end, alloc_len;
    int64_t stored;           /* pieces stored in this allocation */
    char *hex;                /* their own digests, in order (bound to their places only
                               * once the size is known: build_exnode) */
    size_t hexlen, hexcap;
} col_t;

typedef struct seg {
    int64_t first, n;         /* stripes; n final once reading is done */
    col_t cols[NCOL];
} seg_t;

typedef struct ring {
    int64_t stripe;           /* -1: free */
    int64_t plen;             /* bytes of each of its pieces */
    int pending;              /* columns that have not stored it yet */
    unsigned char *p[NCOL];
} ring_t;

typedef struct ecu {
    const lors_upload_opts_t *o;
    lors__ec_t ec;
    lors_report_t *rep;
    ibp_client_t *ibp;
    lors__alive_t *alive;     /* the provisional leases kept alive (NULL: none) */
    int fd;                   /* -1 with mem */
    const unsigned char *mem;
    int64_t base;             /* fd: position of the first byte */
    int again;                /* 1: the input can be read again (regular file, memory) */
    int64_t length;           /* -1: until EOF */
    int64_t G;                /* stripes per segment */
    int use_ck;
    pthread_mutex_t mu, evmu;
    pthread_cond_t cv;
    seg_t **segs;             /* under mu */
    size_t nsegs, capsegs;
    ring_t ring[RING];
    int64_t made;             /* stripes put in the ring */
    int eof;                  /* the reader made its last stripe */
    int64_t size;             /* bytes read */
    int err;                  /* first fatal error */
    int *bad;                 /* per depot: failed during this upload */
    int64_t next[NCOL];       /* per column: the next stripe to store */
} ecu_t;

static void fail_locked(ecu_t *u, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fail_locked(ecu_t *u, int err, const char *fmt, ...)
{
    lors__report_first(u->err, 0, err, u->rep, fmt);
    pthread_cond_broadcast(&u->cv);
}

static int stopped(const ecu_t *u)
{
    return u->o->stop && *u->o->stop;
}

static void wait_locked(ecu_t *u)
{
    lors__cond_wait(&u->cv, &u->mu, 1); /* polled: the stop flag and the first error */
}

static void emit(ecu_t *u, lors_event_kind kind, const seg_t *sg, int j, int from, int to,
                 int64_t off, int64_t len, const char *op, int ierr)
{
    if (!u->o->on_event)
        return;
    lors_event_t ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = kind;
    ev.depot = from >= 0 ? &u->o->depots[from] : NULL;
    ev.moved_to = to >= 0 ? &u->o->depots[to] : NULL;
    ev.fragment = (int)(sg->first / u->G);
    ev.copy = j;
    ev.offset = off;
    ev.length = len;
    ev.op = op;
    ev.ibp_err = ierr;
    pthread_mutex_lock(&u->evmu);
    u->o->on_event(u->o->event_arg, &ev);
    pthread_mutex_unlock(&u->evmu);
}

/* A depot for column j of sg: its place in the rotation if that one is fine, else the next
 * one that has not failed and that no other column of the segment uses; -1 if none.  With
 * u->mu held. */
static int choose_depot_locked(const ecu_t *u, const seg_t *sg, int j)
{
    int n = u->ec.k + u->ec.m;
    size_t nd = u->o->ndepots, g = (size_t)(sg->first / u->G);
    for (size_t t = 0; t < nd; t++) {
        size_t d = (g * (size_t)(n + 1) + (size_t)j + t) % nd; /* rotated by segment */
        int used = u->bad[d];
        for (int c = 0; c < n && !used; c++) {
            if (c == j || sg->cols[c].depot < 0)
                continue;
            const lors_depot_t *a = &u->o->depots[d], *b = &u->o->depots[sg->cols[c].depot];
            used = a->port == b->port && strcmp(a->host, b->host) == 0;
        }
        if (!used)
            return (int)d;
    }
    return -1;
}

/* The bytes of the file in stripe s read into data[0..k) (each piece zero-padded to plen);
 * from memory or with pread.  0, or -1 with errno. */
static int read_again(const ecu_t *u, int64_t s, int64_t plen, unsigned char **data)
{
    int k = u->ec.k;
    int64_t S = (int64_t)k * u->ec.piece, a = s * S, n = u->size - a < S ? u->size - a : S;
    for (int i = 0; i < k; i++) {
        int64_t o = (int64_t)i * plen, l = n - o < plen ? n - o : plen;
        if (l < 0)
            l = 0;
        if (l > 0) {
            if (u->mem) {
                memcpy(data[i], u->mem + a + o, (size_t)l);
            } else {
                int64_t got = 0;
                while (got < l) {
                    ssize_t r = pread(u->fd, data[i] + got, (size_t)(l - got),
                                      (off_t)(u->base + a + o + got));
                    if (r < 0 && errno == EINTR)
                        continue;
                    if (r <= 0) {
                        if (r == 0)
                            errno = EIO; /* the file shrank under us */
                        return -1;
                    }
                    got += r;
                }
            }
        }
        memset(data[i] + l, 0, (size_t)(plen - l));
    }
    return 0;
}

static int add_hex(col_t *c, const char *h)
{
    size_t l = strlen(h);
    if (c->hexlen + l + 1 > c->hexcap) {
        size_t nc = (c->hexlen + l + 1) * 2;
        char *p = realloc(c->hex, nc);
        if (!p)
            return -1;
        c->hex = p;
        c->hexcap = nc;
    }
    memcpy(c->hex + c->hexlen, h, l + 1);
    c->hexlen += l;
    return 0;
}

/* The digest of column j's pieces: the upload's for data, CRC-64 for parity (the data a
 * decode gives is checked against the data pieces' digests, so parity needs no
 * cryptographic digest of its own, and hashing it cost a third of a 6+3 upload's CPU). */
static const char *col_alg(const ecu_t *u, int j)
{
    return !u->use_ck ? NULL : j < u->ec.k ? u->o->checksum : LORS_CK_CRC64;
}

/* Store column j's piece and add its digest. */
static int store_piece(ecu_t *u, col_t *c, int j, const unsigned char *p, int64_t plen)
{
    uint64_t stored = 0;
    int rc = ibp_store(u->ibp, c->caps.write, p, (uint64_t)plen, &stored);
    if (rc == IBP_OK && stored != (uint64_t)plen)
        rc = IBP_E_GENERIC;
    if (rc != IBP_OK)
        return rc;
    if (u->use_ck) {
        lors_ck_t ck;
        char *h = NULL;
        int ok = lors_ck_init(&ck, col_alg(u, j), plen) == LORS_OK &&
                 lors_ck_update(&ck, p, (size_t)plen) == LORS_OK &&
                 lors_ck_finish(&ck, &h) == LORS_OK;
        lors_ck_free(&ck);
        if (!ok || add_hex(c, h) < 0) {
            free(h);
            return IBP_E_ALLOC_FAILED; /* this client's own failure: not the depot's */
        }
        free(h);
    }
    c->stored++;
    return IBP_OK;
}

static int allocate(ecu_t *u, seg_t *sg, col_t *c)
{
    const lors_depot_t *d = &u->o->depots[c->depot];
    int64_t len = u->length >= 0 && sg->first + u->G >= u->ec.stripes
                      ? (u->ec.stripes - 1 - sg->first) * u->ec.piece +
                            lors__ec_piece_len(&u->ec, u->ec.stripes - 1)
                      : u->G * u->ec.piece;
    int64_t lease = lors__first_lease(u->o->duration_s, u->o->provisional_s);
    ibp_attr_t a = {(uint64_t)len, lease, u->o->reliability, IBP_BYTEARRAY};
    int rc = ibp_allocate(u->ibp, d->host, d->port, d->rid[0] ? d->rid : NULL, &a, &c->caps);
    if (rc != IBP_OK)
        return rc;
    lors__alive_add(u->alive, c->caps.manage);
    c->allocated = 1;
    c->alloc_len = len;
    c->stored = 0;
    c->hexlen = 0;
    c->start = time(NULL);
    c->end = lease > 0 ? c->start + lease : XND_TIME_UNKNOWN;
    if (c->end == XND_TIME_UNKNOWN) {
        ibp_probe_t p;
        if (ibp_probe(u->ibp, c->caps.manage, &p) == IBP_OK)
            c->end = time(NULL) + p.seconds_left;
    }
    return IBP_OK;
}

static void note_issue_locked(ecu_t *u, const seg_t *sg, int j, int from, int to,
                              const char *op, int ierr)
{
    lors_report_t *r = u->rep;
    lors_issue_t *ni = realloc(r->issues, (r->nissues + 1) * sizeof *ni);
    if (!ni)
        return;
    r->issues = ni;
    lors_issue_t *is = &ni[r->nissues++];
    memset(is, 0, sizeof *is);
    is->depot = u->o->depots[from];
    is->ibp_err = ierr;
    lors__issue_why(is);
    snprintf(is->op, sizeof is->op, "%s", op);
    is->fragment = (int)(sg->first / u->G);
    is->copy = j;
    is->offset = sg->first * u->ec.k * u->ec.piece;
    is->length = sg->n * u->ec.k * u->ec.piece;
    is->moved = to >= 0;
    if (to >= 0)
        is->moved_to = u->o->depots[to];
}

/* Column j's depot failed: move it and store again, on the new depot, the pieces of sg
 * before stripe s.  IBP_OK, or the last failure (the upload then fails). */
static int move_column(ecu_t *u, seg_t *sg, int j, int64_t s, const char *op, int ierr,
                       unsigned char **tmp)
{
    col_t *c = &sg->cols[j];
    for (;;) {
        char old[IBP_MAX_CAP] = "";
        pthread_mutex_lock(&u->mu);
        int from = c->depot;
        if (c->allocated)
            snprintf(old, sizeof old, "%s", c->caps.manage);
        c->allocated = 0;
        u->bad[from] = 1;
        int to = choose_depot_locked(u, sg, j);
        note_issue_locked(u, sg, j, from, to, op, ierr);
        if (to < 0) {
            char dn[IBP_MAX_HOST + 16];
            lors_depot_format(&u->o->depots[from], dn, sizeof dn);
            fail_locked(u, LORS_E_PLACE,
                        "piece %d of stripes %lld-%lld: %s on %s failed (%s), and no other "
                        "depot is left for it", j, (long long)sg->first,
                        (long long)(sg->first + sg->n - 1), op, dn, ibp_strerror(ierr));
        } else if (!u->again && s > sg->first) {
            fail_locked(u, LORS_E_PLACE,
                        "piece %d of stripes %lld-%lld: %s failed (%s) after pieces were "
                        "stored, and input from a pipe cannot be read again", j,
                        (long long)sg->first, (long long)(sg->first + sg->n - 1), op,
                        ibp_strerror(ierr));
            to = -1;
        }
        c->depot = to >= 0 ? to : from;
        pthread_mutex_unlock(&u->mu);
        emit(u, LORS_EV_FAILURE, sg, j, from, to, sg->first * u->ec.k * u->ec.piece, 0, op,
             ierr);
        if (old[0]) {
            lors_freed_t fr;
            const char *caps[1] = {old};
            lors__release(caps, 1, 1, u->o->timeout_s, &fr);
        }
        if (to < 0)
            return ierr;
        op = "ALLOCATE";
        if ((ierr = allocate(u, sg, c)) != IBP_OK)
            continue;
        emit(u, LORS_EV_ALLOCATE, sg, j, c->depot, -1, 0, 0, NULL, 0);
        op = "STORE";
        for (int64_t t = sg->first; t < s && ierr == IBP_OK; t++) {
            int64_t plen = lors__ec_piece_len(&u->ec, t);
            if (read_again(u, t, plen, tmp) < 0) {
                pthread_mutex_lock(&u->mu);
                fail_locked(u, LORS_E_READ, "reading stripe %lld again: %s", (long long)t,
                            strerror(errno));
                pthread_mutex_unlock(&u->mu);
                return IBP_E_GENERIC;
            }
            if (j >= u->ec.k)
                lors__ec_encode(&u->ec, plen, tmp, tmp + u->ec.k);
            ierr = store_piece(u, c, j, tmp[j], plen);
        }
        if (ierr == IBP_OK)
            return IBP_OK;
    }
}

typedef struct worker_arg {
    ecu_t *u;
    int j;
} worker_arg_t;

static void *column_worker(void *arg)
{
    ecu_t *u = ((worker_arg_t *)arg)->u;
    int j = ((worker_arg_t *)arg)->j, n = u->ec.k + u->ec.m;
    unsigned char *tmp[NCOL] = {0};
    for (int i = 0; i < n && u->again; i++)
        tmp[i] = malloc((size_t)u->ec.piece);

    pthread_mutex_lock(&u->mu);
    for (;;) {
        int64_t s = u->next[j];
        ring_t *r = &u->ring[s % RING];
        while (!u->err && !stopped(u) && r->stripe != s && !(u->eof && s >= u->made))
            wait_locked(u);
        if (u->err || stopped(u) || r->stripe != s)
            break;
        seg_t *sg = u->segs[s / u->G];
        col_t *c = &sg->cols[j];
        pthread_mutex_unlock(&u->mu);

        int ierr = IBP_OK;
        const char *op = "ALLOCATE";
        if (!c->allocated) {
            ierr = allocate(u, sg, c);
            if (ierr == IBP_OK)
                emit(u, LORS_EV_ALLOCATE, sg, j, c->depot, -1, 0, 0, NULL, 0);
        }
        if (ierr == IBP_OK) {
            op = "STORE";
            ierr = store_piece(u, c, j, r->p[j], r->plen);
        }
        if (ierr != IBP_OK) {
            if (u->again && !tmp[n - 1])
                ierr = IBP_E_ALLOC_FAILED;
            else if ((ierr = move_column(u, sg, j, s, op, ierr, tmp)) == IBP_OK)
                ierr = store_piece(u, c, j, r->p[j], r->plen);
        }
        int64_t so = s * u->ec.k * u->ec.piece;
        if (ierr == IBP_OK)
            emit(u, LORS_EV_STORE_END, sg, j, c->depot, -1, so, r->plen, NULL, 0);
        pthread_mutex_lock(&u->mu);
        if (ierr != IBP_OK) {
            fail_locked(u, LORS_E_PLACE, "piece %d of stripe %lld: could not be stored (%s)", j,
                        (long long)s, ibp_strerror(ierr));
            break;
        }
        u->rep->bytes_stored += r->plen;
        u->next[j] = s + 1;
        if (--r->pending == 0) {
            r->stripe = -1;
            pthread_cond_broadcast(&u->cv);
        }
    }
    pthread_cond_broadcast(&u->cv);
    pthread_mutex_unlock(&u->mu);
    for (int i = 0; i < n; i++)
        free(tmp[i]);
    return NULL;
}

/* Read up to want bytes; the count, or -1 with errno. */
static int64_t read_input(ecu_t *u, unsigned char *buf, int64_t want)
{
    if (u->mem) {
        int64_t left = u->length - u->size, n = want < left ? want : left;
        memcpy(buf, u->mem + u->size, (size_t)n);
        return n;
    }
    int64_t n = lors__read_stoppable(u->fd, buf, want, u->again ? NULL : u->o->stop);
    return n == -2 ? 0 : n; /* stopped: the caller sees the flag */
}

/* A new segment starting at stripe s, its columns placed on distinct depots.  With u->mu. */
static int new_segment_locked(ecu_t *u, int64_t s)
{
    int n = u->ec.k + u->ec.m;
    if (u->nsegs == u->capsegs) {
        size_t nc = u->capsegs ? u->capsegs * 2 : 16;
        seg_t **p = realloc(u->segs, nc * sizeof *p);
        if (!p)
            return LORS_E_NOMEM;
        u->segs = p;
        u->capsegs = nc;
    }
    seg_t *sg = calloc(1, sizeof *sg);
    if (!sg)
        return LORS_E_NOMEM;
    sg->first = s;
    sg->n = u->G;
    if (u->length >= 0 && s + sg->n > u->ec.stripes)
        sg->n = u->ec.stripes - s;
    for (int j = 0; j < NCOL; j++)
        sg->cols[j].depot = -1;
    u->segs[u->nsegs++] = sg;
    for (int j = 0; j < n; j++)
        if ((sg->cols[j].depot = choose_depot_locked(u, sg, j)) < 0)
            return LORS_E_NODEPOTS;
    return LORS_OK;
}

/* The reader: stripes into the ring until the input ends. */
static void read_stripes(ecu_t *u)
{
    int k = u->ec.k;
    int64_t S = (int64_t)k * u->ec.piece;
    for (int64_t s = 0;; s++) {
        ring_t *r = &u->ring[s % RING];
        pthread_mutex_lock(&u->mu);
        while (!u->err && !stopped(u) && r->stripe >= 0)
            wait_locked(u);
        int quit = u->err || stopped(u);
        pthread_mutex_unlock(&u->mu);
        if (quit)
            break;
        int64_t want = S;
        if (u->length >= 0 && u->length - u->size < want)
            want = u->length - u->size;
        int64_t got = want > 0 ? read_input(u, r->p[0], want) : 0;
        if (got < 0) {
            pthread_mutex_lock(&u->mu);
            fail_locked(u, LORS_E_READ, "reading the input at byte %lld: %s",
                        (long long)u->size, strerror(errno));
            pthread_mutex_unlock(&u->mu);
            break;
        }
        if (got < want && u->length >= 0) {
            pthread_mutex_lock(&u->mu);
            fail_locked(u, LORS_E_SHORT, "the input ended at byte %lld of %lld",
                        (long long)(u->size + got), (long long)u->length);
            pthread_mutex_unlock(&u->mu);
            break;
        }
        if (got == 0)
            break;
        if (s >= LORS_EC_MAX_STRIPES) {
            pthread_mutex_lock(&u->mu);
            fail_locked(u, LORS_E_INVAL, "the input has more than %lld stripes of %lld bytes, "
                        "the most an erasure-coded file may have: use larger pieces",
                        (long long)LORS_EC_MAX_STRIPES, (long long)S);
            pthread_mutex_unlock(&u->mu);
            break;
        }
        int64_t plen = got == S ? u->ec.piece : (got + k - 1) / k;
        /* a short stripe's pieces are plen bytes: move piece i from i x plen to its place at
         * i x piece, last first (the places only move up), and zero the padding */
        for (int i = plen == u->ec.piece ? -1 : k - 1; i >= 0; i--) {
            int64_t o = (int64_t)i * plen, l = got - o < plen ? got - o : plen;
            if (l < 0)
                l = 0;
            memmove(r->p[i], r->p[0] + o, (size_t)l);
            memset(r->p[i] + l, 0, (size_t)(plen - l));
        }
        lors__ec_encode(&u->ec, plen, r->p, r->p + k);
        pthread_mutex_lock(&u->mu);
        u->size += got;
        u->rep->bytes_read += got;
        int rc = s % u->G == 0 ? new_segment_locked(u, s) : LORS_OK;
        if (rc != LORS_OK) {
            fail_locked(u, rc, rc == LORS_E_NODEPOTS
                                   ? "stripe %lld: fewer than %d depots left that have not failed"
                                   : "stripe %lld: out of memory (%d)",
                        (long long)s, k + u->ec.m);
            pthread_mutex_unlock(&u->mu);
            break;
        }
        r->plen = plen;
        r->pending = k + u->ec.m;
        r->stripe = s;
        u->made = s + 1;
        pthread_cond_broadcast(&u->cv);
        pthread_mutex_unlock(&u->mu);
        if (got < S)
            break;
    }
    pthread_mutex_lock(&u->mu);
    u->eof = 1;
    pthread_cond_broadcast(&u->cv);
    pthread_mutex_unlock(&u->mu);
}

static int build_exnode(ecu_t *u, const char *filename, xnd_t **out)
{
    xnd_t *x;
    int rc = lors__xnd_begin(filename, u->size, &x);
    int n = u->ec.k + u->ec.m;
    int64_t S = (int64_t)u->ec.k * u->ec.piece;
    if (rc == XND_OK)
        rc = lors__ec_write(x, &u->ec);
    for (size_t g = 0; rc == XND_OK && g < u->nsegs; g++) {
        seg_t *sg = u->segs[g];
        for (int j = 0; rc == XND_OK && j < n; j++) {
            col_t *c = &sg->cols[j];
            int64_t off = sg->first * S, end = (sg->first + sg->n) * S;
            xnd_mapping_t *m;
            rc = lors__map_new_alloc(off, (end < u->size ? end : u->size) - off, c->alloc_len,
                                     c->start, c->end, &c->caps, &m);
            if (rc != XND_OK)
                break;
            /* LoRS 0.82 takes a mapping with an e2e_blocksize through its conditioning, which
             * has no lns_ec: it refuses these mappings instead of reading pieces as bytes */
            m->e2e_blocksize = u->ec.piece;
            m->has_e2e_blocksize = 1;
            /* the pieces' digests bound to their places, now that the size is known */
            char *bound = NULL;
            if (rc == XND_OK && c->hex && *c->hex &&
                lors__ec_bind_all(&u->ec, sg->first, j, col_alg(u, j), c->hex, &bound) !=
                    LORS_OK)
                rc = XND_E_NOMEM;
            xnd_func_t *f = rc == XND_OK ? lors__ec_func(&u->ec, j, col_alg(u, j), bound)
                                         : NULL;
            free(bound);
            if (rc == XND_OK && !f)
                rc = XND_E_NOMEM;
            if (f)
                xnd_mapping_set_func(m, f);
            if (rc == XND_OK)
                rc = xnd_append(x, m);
            else
                xnd_mapping_free(m);
        }
    }
    rc = lors__xnd_built(x, rc, u->rep, out);
    if (rc == LORS_OK)
        u->rep->mappings = (int)(*out)->nmaps;
    return rc;
}

static void free_all(ecu_t *u)
{
    int n = u->ec.k + u->ec.m;
    const char **caps = malloc((u->nsegs * (size_t)n + 1) * sizeof *caps);
    size_t nc = 0;
    if (!caps) {
        u->rep->freed.unfreed = (int)(u->nsegs * (size_t)n);
        return;
    }
    for (size_t g = 0; g < u->nsegs; g++)
        for (int j = 0; j < n; j++)
            if (u->segs[g]->cols[j].allocated)
                caps[nc++] = u->segs[g]->cols[j].caps.manage;
    lors__release(caps, nc, u->o->threads, u->o->timeout_s, &u->rep->freed);
    free(caps);
}

/* Distinct depots (host:port) in the list. */
static size_t distinct_depots(const lors_upload_opts_t *o)
{
    size_t n = 0;
    for (size_t i = 0; i < o->ndepots; i++) {
        size_t j;
        for (j = 0; j < i; j++)
            if (o->depots[j].port == o->depots[i].port &&
                strcmp(o->depots[j].host, o->depots[i].host) == 0)
                break;
        n += j == i;
    }
    return n;
}

static const char *check_opts(const lors_upload_opts_t *o)
{
    if (o->ec_k < 1 || o->ec_k > LORS_EC_MAX_K || o->ec_m < 1 || o->ec_m > LORS_EC_MAX_M)
        return "erasure coding K+M: K must be 1..32 and M 1..16";
    if (o->ec_piece && (o->ec_piece < LORS_EC_MIN_PIECE || o->ec_piece > LORS_EC_MAX_PIECE ||
                        o->ec_piece % 4096 != 0))
        return "the piece size must be a multiple of 4 KiB from 4 KiB to 64 MiB";
    if (o->copies != 1)
        return "erasure coding replaces copies: leave copies at 1";
    if (o->e2e && *o->e2e)
        return "erasure coding does not combine with end-to-end transforms yet";
    if (o->keep_partial)
        return "keep_partial is not available with erasure coding";
    if (o->checksum && strcmp(o->checksum, "none") != 0) {
        lors_ck_t ck;
        int ok = lors_ck_init(&ck, o->checksum, 1) == LORS_OK;
        lors_ck_free(&ck);
        if (!ok)
            return "unknown checksum algorithm";
    }
    return lors__store_opts_problem(o);
}

int lors__upload_ec(const lors_upload_opts_t *o, int fd, const void *mem, int64_t length,
                    const char *filename, xnd_t **out, lors_report_t *rep)
{
    ecu_t u;
    double t0 = lors__up_now_s();
    memset(&u, 0, sizeof u);
    *out = NULL;
    const char *bad = check_opts(o);
    if (bad) {
        lors__report_error(rep, "upload options: %s", bad);
        return LORS_E_INVAL;
    }
    size_t nd = distinct_depots(o);
    if (nd < (size_t)(o->ec_k + o->ec_m)) {
        lors__report_error(rep, "erasure coding %d+%d needs %d distinct depots; %zu given",
                           o->ec_k, o->ec_m, o->ec_k + o->ec_m, nd);
        return LORS_E_NODEPOTS;
    }
    u.o = o;
    u.rep = rep;
    u.fd = mem ? -1 : fd;
    u.mem = mem;
    u.length = length;
    struct stat st;
    if (!mem) {
        off_t pos = lseek(fd, 0, SEEK_CUR);
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && pos >= 0) {
            u.base = pos;
            if (length < 0)
                u.length = st.st_size > pos ? st.st_size - pos : 0;
            u.again = 1;
        }
    } else {
        u.again = 1;
    }
    int64_t piece = o->ec_piece ? o->ec_piece : LORS_EC_DEFAULT_PIECE;
    int rc = lors__ec_init(&u.ec, o->ec_k, o->ec_m, piece, u.length >= 0 ? u.length : 0);
    if (rc != LORS_OK) {
        if (u.length >= 0 && lors__ec_count(u.length, o->ec_k * piece) > LORS_EC_MAX_STRIPES)
            lors__report_error(rep, "erasure coding: %lld bytes make more than %lld stripes of "
                               "%lld bytes, the most a file may have: use larger pieces",
                               (long long)u.length, (long long)LORS_EC_MAX_STRIPES,
                               (long long)(o->ec_k * piece));
        else
            lors__report_error(rep, "erasure coding: %s", lors_strerror(rc));
        return rc;
    }
    if (u.length >= 0) {
        int64_t F = o->fragments > 0 ? o->fragments : 1;
        u.G = (u.ec.stripes + F - 1) / F;
    } else {
        u.G = o->blocksize / piece;
    }
    if (u.G < 1)
        u.G = 1;
    u.use_ck = o->checksum && strcmp(o->checksum, "none") != 0;
    u.bad = calloc(o->ndepots, sizeof *u.bad);
    u.ibp = lors__client(o->timeout_s, o->ec_k + o->ec_m);
    u.alive = lors__alive_start(o->duration_s, o->provisional_s, o->timeout_s);
    rc = u.bad && u.ibp ? LORS_OK : LORS_E_NOMEM;
    int n = o->ec_k + o->ec_m;
    for (int i = 0; i < RING; i++) {
        /* one block a stripe, the pieces one after another: a full stripe is read straight
         * into its k data pieces */
        u.ring[i].stripe = -1;
        unsigned char *b = rc == LORS_OK ? malloc((size_t)n * (size_t)piece) : NULL;
        if (!b)
            rc = LORS_E_NOMEM;
        for (int j = 0; j < n && b; j++)
            u.ring[i].p[j] = b + (size_t)j * (size_t)piece;
    }
    pthread_mutex_init(&u.mu, NULL);
    pthread_mutex_init(&u.evmu, NULL);
    pthread_cond_init(&u.cv, NULL);
    pthread_t tids[NCOL];
    worker_arg_t args[NCOL];
    int nt = 0;
    for (int j = 0; j < n && rc == LORS_OK; j++) {
        args[j] = (worker_arg_t){&u, j};
        if (pthread_create(&tids[j], NULL, column_worker, &args[j]) != 0) {
            rc = LORS_E_THREAD;
            pthread_mutex_lock(&u.mu);
            fail_locked(&u, rc, "cannot start a worker thread");
            pthread_mutex_unlock(&u.mu);
        } else {
            nt++;
        }
    }
    if (rc == LORS_OK)
        read_stripes(&u);
    else if (rc == LORS_E_NOMEM)
        lors__report_error(rep, "out of memory");
    pthread_mutex_lock(&u.mu);
    u.eof = 1;
    pthread_cond_broadcast(&u.cv);
    pthread_mutex_unlock(&u.mu);
    for (int j = 0; j < nt; j++)
        pthread_join(tids[j], NULL);
    if (rc == LORS_OK && u.err)
        rc = u.err;
    if (rc == LORS_OK && stopped(&u)) {
        rc = LORS_E_STOPPED;
        lors__report_error(rep, "stopped after %lld bytes", (long long)u.size);
    } else if (rc != LORS_OK && stopped(&u)) {
        rc = LORS_E_STOPPED; /* a call in flight failed while the stop waited for it */
    }
    if (rc == LORS_OK) {
        /* the real size and stripe count; the last segment ends with the last stripe */
        u.ec.size = u.size;
        u.ec.stripes = u.made;
        if (u.nsegs > 0)
            u.segs[u.nsegs - 1]->n = u.made - u.segs[u.nsegs - 1]->first;
        rc = build_exnode(&u, filename, out);
    }
    if (rc != LORS_OK)
        free_all(&u);
    rep->size = u.size;
    rep->plain_size = u.size;
    rep->fragments = (int)u.nsegs;
    rep->seconds = lors__up_now_s() - t0;
    for (int i = 0; i < RING; i++)
        free(u.ring[i].p[0]);
    for (size_t g = 0; g < u.nsegs; g++) {
        for (int j = 0; j < n; j++)
            free(u.segs[g]->cols[j].hex);
        free(u.segs[g]);
    }
    free(u.segs);
    free(u.bad);
    lors__alive_stop(u.alive);
    ibp_client_free(u.ibp);
    lors__ec_free(&u.ec);
    pthread_cond_destroy(&u.cv);
    pthread_mutex_destroy(&u.mu);
    pthread_mutex_destroy(&u.evmu);
    return rc;
}
