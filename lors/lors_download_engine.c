/* lors_download_engine.c -- the download engine: exNode -> blocks -> streams -> reorder -> fd.
 *
 * Data path: lors__dl_plan (lors_download_plan.c) cuts the range into blocks and lists each
 * block's replicas.  N worker threads ask the scheduler (lors_sched) what to fetch and LOAD
 * it in one request through an ibp_loader_t, reading PIECE (64 KiB) at a time: each piece is
 * hashed (lns_checksum) while it is still in cache and reported as progress, and between
 * pieces the stream notices that its fetch lost, stalled or the download stopped.  The
 * calling thread is the writer: it releases blocks strictly in order to out_fd (o->in_place
 * and a file: each block at its place as soon as it is done, in any order), and is also the
 * watchdog that turns stalled fetches into TIMEOUT failures.
 *
 * Interrupts: every fetch's loader is published in its slot before its request goes out, so
 * the thread that cancels a loser, the watchdog and a stop abort it at once (the socket is
 * shut down), even while it waits for a depot that stopped answering; the call never waits
 * for a dead depot's I/O timeout once its blocks came from elsewhere.
 *
 * Memory: fetch buffers, all dl->bufsz bytes, come from a free list and go back to it when
 * their block is written or their fetch ends, so the process holds at most the most buffers
 * in use at once: the reorder buffer (the scheduler's budget counts blocks in flight and
 * done) plus the extra fetches of blocks being fetched twice.
 *
 * Wake-ups: idle workers sleep on dl->cv and are woken one at a time, only when the scheduler
 * has work (kick_locked); the writer sleeps on its own dl->wcv, woken when the next block is
 * done.  Every completion no longer wakes every idle thread.
 *
 * Locking: one mutex (dl->mu) around every scheduler call and all shared engine state; no
 * depot call, write or event callback runs with it held (aborting a loader only shuts its
 * socket down).  Events are serialized by dl->evmu, taken without dl->mu.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lors.h"
#include "lors_io_int.h"
#include "lors_report.h"
#include "lors_e2e_int.h"
#include "lors_ec_int.h"
#include "lors_checksum.h"
#include "lors_download_int.h"
#include "lors_sched.h"
#include "lns_io.h"
#include "lns_time.h"

#define PIECE ((uint64_t)64 << 10) /* bytes read, hashed and reported at a time: small enough
                                     * that a fetch on a slow link shows progress (64 KiB is
                                     * 0.1 s at 5 Mbit/s), large enough that the lock costs nothing */
#define MAX_THREADS 256
#define TICK_NS 100000000ull        /* the writer's longest sleep: watchdog period */

static uint64_t now_ns(void)
{
    return (uint64_t)lns_mono_ns();
}

void lors_download_opts_init(lors_download_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->threads = 0; /* automatic: lors__dl_streams */
    o->depot_cap = 4;
    o->blocksize = 1 << 20;
    o->redundancy = 2;
    o->progress = 3;
    o->buffer_bytes = (int64_t)64 << 20;
    o->length = -1;
    o->timeout_ms = 30000;
    o->stall_ms = 10000;
    o->fail_limit = 3;
    o->verify = 1;
}

void lors_dl_report_free(lors_dl_report_t *r)
{
    if (!r)
        return;
    free(r->depots);
    free(r->bad_mappings);
    free(r->degraded);
    r->depots = NULL;
    r->bad_mappings = NULL;
    r->degraded = NULL;
    r->ndepots = r->nbad = r->ndegraded = 0;
}

/* Interrupt the LOAD of slot sl, whose flags say why: a read blocked on a depot that stopped
 * answering returns at once instead of after the I/O timeout.  With dl->mu held. */
static void kick_locked(dl_t *dl);

static void stop_slot_locked(slot_t *sl)
{
    if (sl->ld)
        ibp_loader_abort(sl->ld);
}

/* The fetches ids[0 .. n) are no longer the scheduler's (losers of a race, withdrawn): their
 * streams drop them without a report. */
static void cancel_ids_locked(dl_t *dl, const uint64_t *ids, int n, int withdrawn)
{
    for (int i = 0; i < n; i++)
        for (int t = 0; t < dl->nthreads; t++)
            if (dl->slots[t].id == ids[i]) {
                dl->slots[t].cancelled = 1;
                dl->slots[t].withdrawn = withdrawn;
                stop_slot_locked(&dl->slots[t]);
            }
}

/* The first failure wins: it is the one the report names. */
void lors__dl_fail_locked(dl_t *dl, int rc, const char *fmt, ...)
{
    lors__report_first(dl->rc, LORS_OK, rc, dl->rep, fmt);
    dl->stop = 1;
    for (int t = 0; dl->slots && t < dl->nthreads; t++)
        stop_slot_locked(&dl->slots[t]);
    pthread_cond_broadcast(&dl->cv);
    pthread_cond_broadcast(&dl->wcv);
}

static void dl_event(dl_t *dl, lors_event_kind kind, int depot, uint32_t block, int mapping,
                     int ierr, const char *op)
{
    if (!dl->o->on_event)
        return;
    lors_event_t ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = kind;
    ev.depot = depot >= 0 ? &dl->depots[depot] : NULL;
    ev.fragment = (int)block;
    ev.copy = mapping;
    ev.offset = dl->blocks[block].off;
    ev.length = dl->blocks[block].len;
    ev.ibp_err = ierr;
    ev.op = op;
    pthread_mutex_lock(&dl->evmu);
    dl->o->on_event(dl->o->event_arg, &ev);
    pthread_mutex_unlock(&dl->evmu);
}

/* ---- the NetLogger fetch events (docs/netlogger.md) ------------------------------------- */

/* One line about fetch f (at: its bytes of the allocation): the fields every fetch event has, the
 * key (alloc, aoff, alen) the depot's IBP_LOAD_* lines also carry, then extra.  Without
 * --netlog, nothing: one test of a NULL pointer. */
static void netlog_fetch(dl_t *dl, const char *ev, const lors_sched_fetch_t *f,
                         const fetch_at_t *at, const char *extra)
{
    if (!dl->netlog)
        return;
    const xnd_mapping_t *m = dl->x->maps[f->mapping];
    const lors_depot_t *d = &dl->depots[f->depot];
    const block_t *bl = &dl->blocks[f->block];
    /* a read capability's key starts with the allocation's 16-hex id, the part depots log */
    const char *cap = m->cap[XND_READ], *h = cap ? strchr(cap, '#') : NULL;
    char alloc[17] = "-";
    if (h && strlen(h + 1) >= 16)
        memcpy(alloc, h + 1, 16), alloc[16] = 0;
    int v6 = strchr(d->host, ':') != NULL;
    lns_evlog_write(dl->netlog, ev,
                    "fetch=%s.%llu block=%u off=%lld len=%lld depot=%s%s%s:%d alloc=%s "
                    "aoff=%lld alen=%zu%s%s",
                    dl->netlog_run, (unsigned long long)f->id, f->block, (long long)bl->off,
                    (long long)bl->len, v6 ? "[" : "", d->host, v6 ? "]" : "", d->port, alloc,
                    (long long)at->aoff, at->len,
                    extra ? " " : "", extra ? extra : "");
}

/* ---- a fetch -------------------------------------------------------------------------- */

/* The digests a fetch of mapping k (on its checksum grid) must match: the
 * fetch hashes its bytes as they arrive, piece by piece, while they are still in cache. */
static int verify_begin(const dl_t *dl, int k, lors_ck_t *ck)
{
    const ckinfo_t *c = &dl->ck[k];
    return lors_ck_init(ck, c->alg, c->bs) == LORS_OK;
}

/* 1 if the digests of the len bytes fed to ck match the mapping's from digest `first` on
 * (a column's piece: its digest bound to its place, lors__ec_bind). */
static int verify_end(const dl_t *dl, int k, size_t first, size_t len, lors_ck_t *ck)
{
    const ckinfo_t *c = &dl->ck[k];
    char *got = NULL;
    int ok = 0;
    if (lors_ck_finish(ck, &got) == LORS_OK && dl->ec) {
        char *own = got;
        const lors__ec_col_t *col = &dl->ecol[k];
        if (lors__ec_bind(dl->ec, col->first + (int64_t)first, col->column, c->alg, own,
                          &got) != LORS_OK)
            got = NULL;
        free(own);
    }
    if (got) {
        size_t nck = (len + (size_t)c->bs - 1) / (size_t)c->bs;
        size_t gl = strlen(got), hd = nck ? gl / nck : 0;
        if (hd > 0 && strlen(c->digests) >= (first + nck) * hd &&
            memcmp(c->digests + first * hd, got, gl) == 0)
            ok = 1;
    }
    free(got);
    return ok;
}

/* ---- block buffers ----------------------------------------------------------------------- */

/* Every fetch buffer has the same size, dl->bufsz (the longest fetch the plan can make), and
 * goes back to a free list when its block is written or its fetch ends: the process touches
 * each buffer's pages once, not once per block, and holds no more memory than the most
 * buffers ever in use at once (the reorder buffer plus the fetches in flight).
 *
 * Buffers of HUGE_PAGE / 8 bytes or more are carved from chunks aligned on HUGE_PAGE and
 * marked for transparent huge pages: the socket copy into them and the hash over them then
 * take a TLB entry per 2 MiB instead of per 4 KiB, which measured 15-25 % less client CPU per
 * byte on loopback.  A chunk holds HUGE_PAGE / bufsz buffers (1 MiB blocks: two), or one
 * buffer when bufsz is larger, so nothing is rounded up but the last chunk's spare room. */
#define HUGE_PAGE ((size_t)2 << 20)

/* Chunks of exactly HUGE_PAGE kept from one run to the next (at most SPARE_CHUNKS, for the
 * whole process): the first touch of a fresh one costs the kernel a zeroed 2 MiB page, which
 * the random-access reader's many short runs (often one block each) paid at every run. */
#define SPARE_CHUNKS 8
static pthread_mutex_t spare_mu = PTHREAD_MUTEX_INITIALIZER;
static void *spare[SPARE_CHUNKS];
static int nspare;

/* The size of dl's chunks, and how many buffers of which stride each holds. */
static size_t chunk_size(const dl_t *dl, size_t *per, size_t *stride)
{
    *per = 1;
    *stride = dl->bufsz;
    if (dl->bufsz >= HUGE_PAGE / 8) {
        *stride = (dl->bufsz + 63) & ~(size_t)63;
        *per = *stride < HUGE_PAGE ? HUGE_PAGE / *stride : 1;
    }
    return *per * *stride;
}

/* Add one chunk of buffers to the free list.  Called without dl->mu; 0 or -1. */
static int buf_grow(dl_t *dl)
{
    size_t per, stride, size = chunk_size(dl, &per, &stride);
    void *p = NULL;
    if (size == HUGE_PAGE) {
        pthread_mutex_lock(&spare_mu);
        if (nspare > 0)
            p = spare[--nspare];
        pthread_mutex_unlock(&spare_mu);
    }
    if (p) {
        /* a spare chunk, already aligned and advised */
    } else if (dl->bufsz >= HUGE_PAGE / 8) {
        if (posix_memalign(&p, HUGE_PAGE, size) != 0)
            return -1;
        madvise(p, size, MADV_HUGEPAGE); /* a hint: without it the buffers still work */
    } else if (!(p = malloc(size))) {
        return -1;
    }
    pthread_mutex_lock(&dl->mu);
    if (dl->nchunks == dl->capchunks) {
        size_t nc = dl->capchunks ? dl->capchunks * 2 : 16;
        void **np = realloc(dl->chunks, nc * sizeof *np);
        if (np) {
            dl->chunks = np;
            dl->capchunks = nc;
        }
    }
    if (dl->ncarved + per > dl->capfree) {
        size_t nc = (dl->ncarved + per) * 2;
        unsigned char **nf = realloc(dl->freebufs, nc * sizeof *nf);
        if (nf) {
            dl->freebufs = nf;
            dl->capfree = nc;
        }
    }
    int ok = dl->nchunks < dl->capchunks && dl->ncarved + per <= dl->capfree;
    if (ok) {
        dl->chunks[dl->nchunks++] = p;
        for (size_t i = 0; i < per; i++)
            dl->freebufs[dl->nfree++] = (unsigned char *)p + i * stride;
        dl->ncarved += per;
    }
    pthread_mutex_unlock(&dl->mu);
    if (!ok)
        free(p);
    return ok ? 0 : -1;
}

/* A buffer for a fetch, counted in use (dl->buffered); NULL when out of memory. */
static unsigned char *buf_get(dl_t *dl)
{
    pthread_mutex_lock(&dl->mu);
    while (dl->nfree == 0) {
        pthread_mutex_unlock(&dl->mu);
        if (buf_grow(dl) < 0)
            return NULL;
        pthread_mutex_lock(&dl->mu);
    }
    unsigned char *b = dl->freebufs[--dl->nfree];
    dl->buffered += (int64_t)dl->bufsz;
    if (dl->buffered > dl->peak)
        dl->peak = dl->buffered;
    pthread_mutex_unlock(&dl->mu);
    return b;
}

/* Back to the free list, no longer in use.  With dl->mu held.  The list has room for every
 * buffer ever carved, so this cannot fail. */
static void buf_put_locked(dl_t *dl, unsigned char *b)
{
    if (!b)
        return;
    dl->buffered -= (int64_t)dl->bufsz;
    dl->freebufs[dl->nfree++] = b;
}

static void note_bad_mapping_locked(dl_t *dl, int k)
{
    lors_dl_report_t *r = dl->rep;
    if (!r)
        return;
    for (size_t i = 0; i < r->nbad; i++)
        if (r->bad_mappings[i] == k)
            return;
    int *nb = realloc(r->bad_mappings, (r->nbad + 1) * sizeof *nb);
    if (!nb)
        return;
    r->bad_mappings = nb;
    r->bad_mappings[r->nbad++] = k;
}

/* What fetch f's end says of its mapping and its depot (kind 0: it completed, won or not).
 * A failure of this client's own (no memory) says nothing; bad data blames the mapping, not
 * its depot.  With dl->mu held. */
static void note_fate_locked(dl_t *dl, const lors_sched_fetch_t *f, int kind, int ierr,
                             const char *op)
{
    if (kind && strcmp(op, "MEMORY") == 0)
        return;
    fate_t v = {kind != 0, ierr, op};
    dl->map_fate[f->mapping] = v;
    if (kind != LORS_SCHED_FAIL_BAD_DATA)
        dl->dep_fate[f->depot] = v;
}

/* Run fetch f in slot sl: load, verify, report.  Called and returns without dl->mu. */
/* The download fails on the stripe whose first block is b: werr from
 * lors__dl_ec_decode_stripe (-EBADMSG, -EILSEQ) or a write's -errno. */
static void stripe_failed_locked(dl_t *dl, uint32_t b, int werr)
{
    const block_t *a = &dl->blocks[b], *e = &dl->blocks[b + (uint32_t)dl->ec->k - 1];
    int bad = werr == -EBADMSG || werr == -EILSEQ;
    lors__dl_fail_locked(dl, bad ? LORS_E_E2E : LORS_E_WRITE, "%s bytes %lld-%lld: %s",
                         bad ? "rebuilding" : "writing", (long long)a->off,
                         (long long)(e->off + e->len - 1),
                         werr == -EBADMSG ? "the pieces at hand do not decode"
                         : werr == -EILSEQ ? "the decoded data does not match its digests "
                                             "(a parity piece is wrong); nothing of it was "
                                             "written"
                                           : strerror(-werr));
}

/* Decode the stripe of block b, which lacks nw data pieces, on this fetch thread (marked busy
 * by lors__dl_ec_take_decode_locked); then its blocks hold their own data pieces and the
 * writer only writes them.  Without dl->mu. */
static void predecode(dl_t *dl, uint32_t b, int nw)
{
    uint32_t k = (uint32_t)dl->ec->k, first = b / k * k;
    unsigned char *fresh[LORS_EC_MAX_M] = {0}, *piece[LORS_EC_MAX_K];
    int got = 0, rc = 0;
    while (got < nw && (fresh[got] = buf_get(dl)) != NULL)
        got++;
    if (got == nw)
        rc = lors__dl_ec_decode_stripe(dl, b, fresh, piece);
    pthread_mutex_lock(&dl->mu);
    if (got < nw || rc < 0) {
        for (int i = 0; i < got; i++)
            buf_put_locked(dl, fresh[i]);
        if (rc < 0) {
            stripe_failed_locked(dl, first, rc); /* it stays busy: the writer never writes it */
        } else {
            dl->ec_busy[first / k] = 0; /* no buffers: the writer decodes it in its scratch */
        }
        pthread_cond_signal(&dl->wcv);
        pthread_mutex_unlock(&dl->mu);
        return;
    }
    /* each block gets its own data piece; the pieces no longer needed (parity, or a block's
     * that was rebuilt elsewhere) go back to the pool */
    unsigned char *old[LORS_EC_MAX_K];
    for (uint32_t i = 0; i < k; i++) {
        block_t *bl = &dl->blocks[first + i];
        old[i] = bl->buf;
        bl->buf = piece[i];
        bl->won_col = (int)i;
    }
    for (uint32_t i = 0; i < k; i++) {
        int kept = 0;
        for (uint32_t j = 0; j < k && !kept; j++)
            kept = old[i] == piece[j];
        if (!kept)
            buf_put_locked(dl, old[i]);
    }
    dl->ec_busy[first / k] = 0;
    pthread_cond_signal(&dl->wcv);
    pthread_mutex_unlock(&dl->mu);
}

/* ---- the rest of a block --------------------------------------------------------------- */

/* A fetch that fails (its depot died, its link went silent, it was cut short) or is withdrawn
 * keeps the bytes it received: its block's next fetch, from any replica, loads only the rest,
 * and the block's digests are checked over both parts.  A redundant fetch likewise starts with
 * a copy of what the block's fetch in flight has received, and the two race over the rest.
 * If the digests do not match, the fetch loads its whole range again from its own replica;
 * if that matches, the bytes it started with were the bad ones and their mapping is reported
 * (docs/lors.md, "The rest of a block").  Kept parts are buffers held outside any fetch: at
 * most MAX_PARTS of them (a killed depot's fetches). */
#define MAX_PARTS 8

/* The fetch of block b with layout at takes the bytes kept of b, if they start at or before
 * its range: their buffer (NULL: none), moved to the fetch's layout, with *kept the bytes of
 * its range they hold (fewer than at->len: a fetch always loads something) and *map their
 * mapping.  With dl->mu. */
static unsigned char *take_part_locked(dl_t *dl, uint32_t b, const fetch_at_t *at, size_t *kept,
                                       int *map)
{
    block_t *bl = &dl->blocks[b];
    unsigned char *p = bl->part;
    *kept = 0;
    if (!p)
        return NULL;
    bl->part = NULL;
    dl->nparts--;
    if (bl->part_fa > at->fa || bl->part_fa + (int64_t)bl->part_n <= at->fa) {
        buf_put_locked(dl, p);
        return NULL;
    }
    size_t skip = (size_t)(at->fa - bl->part_fa), n = bl->part_n - skip;
    if (n >= at->len)
        n = at->len - 1;
    if (skip)
        memmove(p, p + skip, n);
    *kept = n;
    *map = bl->part_map;
    return p;
}

/* The fetch in slot me of block b (layout at), whose buffer buf holds *kept bytes of its
 * range, starts with more if another fetch of b in flight has them: they are copied (their
 * prefix does not change while that fetch loads after it), *kept and *map updated.  With
 * dl->mu (a copy of at most a block, for redundant fetches only). */
static void copy_flight_locked(dl_t *dl, const slot_t *me, uint32_t b, const fetch_at_t *at,
                               unsigned char *buf, size_t *kept, int *map)
{
    int64_t fa = at->fa;
    for (int t = 0; t < dl->nthreads; t++) {
        const slot_t *o = &dl->slots[t];
        if (o == me || !o->id || !o->buf || o->block != b || o->cancelled || o->fa > fa ||
            o->fa + (int64_t)o->got <= fa)
            continue;
        size_t n = (size_t)(o->fa + (int64_t)o->got - fa);
        if (n >= at->len)
            n = at->len - 1;
        if (n <= *kept)
            continue;
        memcpy(buf, o->buf + (fa - o->fa), n);
        *kept = n;
        *map = o->map;
    }
}

/* Block bl's kept bytes are no longer needed: their buffer goes back.  With dl->mu. */
static void drop_part_locked(dl_t *dl, block_t *bl)
{
    if (!bl->part)
        return;
    buf_put_locked(dl, bl->part);
    bl->part = NULL;
    dl->nparts--;
}

/* Fetch f of its block (layout at) ended without the block, with got bytes of its range in
 * buf, from mapping map: keep them for the block's next fetch, unless the block is done, a
 * longer part is kept already or MAX_PARTS are.  1: buf is the block's now.  With dl->mu. */
static int keep_part_locked(dl_t *dl, const lors_sched_fetch_t *f, const fetch_at_t *at,
                            unsigned char *buf, size_t got, int map)
{
    block_t *bl = &dl->blocks[f->block];
    if (dl->ec || !buf || !got || bl->won_fetch || dl->stop)
        return 0;
    if (bl->part && bl->part_fa + (int64_t)bl->part_n >= at->fa + (int64_t)got)
        return 0;
    drop_part_locked(dl, bl);
    if (dl->nparts >= MAX_PARTS)
        return 0;
    bl->part = buf;
    bl->part_fa = at->fa;
    bl->part_n = got;
    bl->part_map = map;
    dl->nparts++;
    return 1;
}

/* ---- a fetch, continued --------------------------------------------------------------------- */

/* What a LOAD of fetch range at from byte `from` on asks for: the netlog's correlation key. */
static fetch_at_t asked_from(const fetch_at_t *at, uint64_t from)
{
    fetch_at_t a = *at;
    a.aoff += (int64_t)from;
    a.fa += (int64_t)from;
    a.len -= (size_t)from;
    return a;
}

/* Load bytes [*got, at->len) of fetch f's range into buf with one LOAD, PIECE at a time, each
 * fed to ck (unless NULL) and reported as progress; *got counts the bytes in buf.  The
 * loader is published in the slot before the request goes out, so that a cancel, a stall or
 * a stop interrupts it even while it waits for the depot's reply.  again: a second LOAD of
 * the fetch (no latency sample).  0, or the failure's kind with *ierr and *op; *gone: it was
 * cancelled or the download stopped (drop it without a report). */
static int load_rest(dl_t *dl, slot_t *sl, const lors_sched_fetch_t *f, const fetch_at_t *at,
                     unsigned char *buf, lors_ck_t *ck, int again, uint64_t *got, int *ierr,
                     const char **op, int *gone)
{
    const xnd_mapping_t *m = dl->x->maps[f->mapping];
    uint64_t len = at->len, from = *got;
    fetch_at_t asked = asked_from(at, from);
    int kind = 0;
    ibp_loader_t *ld = ibp_loader_new(dl->ibp);
    pthread_mutex_lock(&dl->mu);
    sl->ld = ld;
    if (ld && (sl->cancelled || sl->aborted || dl->stop))
        stop_slot_locked(sl);
    pthread_mutex_unlock(&dl->mu);
    char extra[64];
    if (from)
        snprintf(extra, sizeof extra, "redundant=%d kept=%llu", f->redundant ? 1 : 0,
                 (unsigned long long)from);
    else
        snprintf(extra, sizeof extra, "redundant=%d", f->redundant ? 1 : 0);
    if (f->redundant && !again)
        netlog_fetch(dl, "LORS_REDUNDANT", f, &asked, NULL);
    netlog_fetch(dl, "LORS_REQ_SENT", f, &asked, extra);
    *ierr = ld ? ibp_loader_start(ld, m->cap[XND_READ], (uint64_t)at->aoff + from, len - from)
               : IBP_E_ALLOC_FAILED;
    if (*ierr == IBP_OK && !again) { /* the reply header: a latency sample for the stream count */
        netlog_fetch(dl, "LORS_REPLY", f, &asked, extra);
        pthread_mutex_lock(&dl->mu);
        if (!sl->cancelled && !dl->stop) {
            lors_sched_replied(dl->s, f->id, now_ns());
            kick_locked(dl); /* the depot may be allowed more streams now */
        }
        pthread_mutex_unlock(&dl->mu);
    }
    while (!kind && !*gone && *got < len) {
        uint64_t n = len - *got < PIECE ? len - *got : PIECE;
        if (*ierr == IBP_OK)
            *ierr = ibp_loader_read(ld, buf + *got, n);
        if (*ierr == IBP_OK && ck && lors_ck_update(ck, buf + *got, n) != LORS_OK) {
            kind = LORS_SCHED_FAIL_BAD_DATA;
            *op = "CHECKSUM";
        }
        pthread_mutex_lock(&dl->mu);
        if (*ierr == IBP_OK) {
            *got += n;
            dl->fetched += (int64_t)n;
            if (sl->buf)
                sl->got = *got;
        }
        if (sl->cancelled || dl->stop) {
            *gone = 1;
        } else if (kind) {
            /* the digest library failed: counted as bad data */
        } else if (sl->aborted) {
            kind = LORS_SCHED_FAIL_TIMEOUT;
            *op = "TIMEOUT";
        } else if (*ierr != IBP_OK) {
            if ((*ierr == IBP_E_TLS_PIN || *ierr == IBP_E_TLS) && !dl->tls_why[0])
                snprintf(dl->tls_why, sizeof dl->tls_why, "%s", ibp_tls_error());
            kind = *ierr == IBP_E_CLIENT_TIMEOUT ? LORS_SCHED_FAIL_TIMEOUT : LORS_SCHED_FAIL_DEPOT;
            *op = *ierr == IBP_E_CLIENT_TIMEOUT ? "TIMEOUT" : "LOAD";
        } else {
            /* in the scheduler's units: every block of its virtual file is B bytes */
            lors_sched_progress(dl->s, f->id, *got * (uint64_t)dl->B / len, now_ns());
        }
        pthread_mutex_unlock(&dl->mu);
    }
    if (ld) {
        pthread_mutex_lock(&dl->mu);
        sl->ld = NULL;
        pthread_mutex_unlock(&dl->mu);
        ibp_loader_free(ld);
    }
    return kind;
}

/* One fetch as do_fetch runs it: where it reads, what it received and how it ended. */
typedef struct fetch_run {
    fetch_at_t at, asked;   /* the range; what the LOAD asked for (the netlog's key) */
    size_t len, kept;       /* the range's length; bytes it started with (kept or copied) */
    uint64_t got;
    unsigned char *buf;
    lors_ck_t ck;
    const char *op;
    int ierr, kind, kept_map, bad_kept, checking, loci;
    int gone;               /* cancelled or stopped: dropped without a report */
    int won, lost, decode;  /* the block is this fetch's; lost to another fetch; to decode */
} run_t;

/* The fetch's buffer, with what the block's earlier or parallel fetches already received. */
static void fetch_start(dl_t *dl, slot_t *sl, const lors_sched_fetch_t *f, run_t *r)
{
    lors__dl_fetch_at(dl, f->block, f->mapping, &r->at);
    r->len = r->at.len;
    r->ierr = IBP_OK;
    r->kept_map = r->bad_kept = -1;
    r->op = "LOAD";
    r->checking = dl->o->verify && dl->ck[f->mapping].ok;

    dl_event(dl, LORS_EV_FETCH_START, f->depot, f->block, f->mapping, 0, NULL);

    /* a 1.3.1 chain's stored bytes are not the file's: none of them is kept for the block's
     * next fetch or copied into another, and it starts with none */
    r->loci = r->at.loci != NULL;
    pthread_mutex_lock(&dl->mu);
    r->buf = r->loci ? NULL : take_part_locked(dl, f->block, &r->at, &r->kept, &r->kept_map);
    pthread_mutex_unlock(&dl->mu);
    if (!r->buf)
        r->buf = buf_get(dl);
    pthread_mutex_lock(&dl->mu);
    if (r->buf && !dl->ec && !r->loci) {
        copy_flight_locked(dl, sl, f->block, &r->at, r->buf, &r->kept, &r->kept_map);
        sl->block = f->block;
        sl->buf = r->buf;
        sl->fa = r->at.fa;
        sl->got = r->kept;
        sl->map = r->kept && r->kept_map != f->mapping ? -1 : f->mapping;
    }
    if (r->kept && !sl->cancelled && !dl->stop)
        lors_sched_resumed(dl->s, f->id, r->kept * (uint64_t)dl->B / r->len);
    pthread_mutex_unlock(&dl->mu);
    r->got = r->kept;
}

/* The checksum failed with kept bytes: the kept bytes or these are bad, so the whole range
 * again from this mapping; if it then matches, the kept bytes' mapping was the bad one. */
static void fetch_again_whole(dl_t *dl, slot_t *sl, const lors_sched_fetch_t *f, run_t *r)
{
    lors_ck_free(&r->ck);
    pthread_mutex_lock(&dl->mu);
    sl->got = 0; /* no one copies what is loaded over again */
    sl->map = f->mapping;
    pthread_mutex_unlock(&dl->mu);
    int kept_map = r->kept_map;
    r->got = 0;
    r->kept = 0; /* what buf holds is this mapping's alone */
    r->asked = r->at;
    if (!verify_begin(dl, f->mapping, &r->ck)) {
        r->checking = 0;
    } else if (!(r->kind = load_rest(dl, sl, f, &r->at, r->buf, &r->ck, 1, &r->got, &r->ierr,
                                     &r->op, &r->gone)) &&
               !r->gone) {
        if (verify_end(dl, f->mapping, r->at.ck_first, r->len, &r->ck))
            r->bad_kept = kept_map; /* these match: the kept bytes did not */
        else
            r->kind = LORS_SCHED_FAIL_BAD_DATA;
    }
}

/* The rest of the range from the depot, checked (a mapping's checksum, a 1.3.1 chain's
 * decoding) as it arrives: r->kind 0, or how it failed. */
static void fetch_load(dl_t *dl, slot_t *sl, const lors_sched_fetch_t *f, run_t *r)
{
    if (!r->buf) {
        r->ierr = IBP_E_GENERIC;
        r->kind = LORS_SCHED_FAIL_DEPOT;
        r->op = "MEMORY";
    } else if (r->checking && !verify_begin(dl, f->mapping, &r->ck)) {
        r->checking = 0;
        r->kind = LORS_SCHED_FAIL_BAD_DATA;
        r->op = "CHECKSUM";
    } else if (r->checking && r->kept && lors_ck_update(&r->ck, r->buf, r->kept) != LORS_OK) {
        r->kind = LORS_SCHED_FAIL_BAD_DATA;
        r->op = "CHECKSUM";
    }
    if (!r->kind)
        r->kind = load_rest(dl, sl, f, &r->at, r->buf, r->checking ? &r->ck : NULL, 0, &r->got,
                            &r->ierr, &r->op, &r->gone);
    r->asked = asked_from(&r->at, r->kept);
    if (!r->gone && !r->kind && r->got == r->len)
        netlog_fetch(dl, "LORS_RECV_END", f, &r->asked, NULL);
    if (r->loci && !r->gone && !r->kind) { /* bad data like a digest's: the report names it */
        int dr = lors__loci_decode(r->at.loci, r->buf, r->len, r->at.b0, r->at.b1,
                                   dl->o->verify, NULL, 0);
        if (dr < 0) {
            r->kind = LORS_SCHED_FAIL_BAD_DATA;
            r->op = dr == -EILSEQ ? "CHECKSUM" : "DECODE";
        }
    }
    if (r->checking) {
        if (!r->gone && !r->kind && !verify_end(dl, f->mapping, r->at.ck_first, r->len, &r->ck)) {
            r->kind = LORS_SCHED_FAIL_BAD_DATA;
            r->op = "CHECKSUM";
            if (r->kept)
                fetch_again_whole(dl, sl, f, r);
        }
        if (r->checking)
            lors_ck_free(&r->ck);
    }
}

/* With dl->mu held: the block is this fetch's (the scheduler says whether it was first), or
 * the failure is the scheduler's and the report's; the buffer goes to the block, is kept for
 * the block's next fetch, or goes back. */
static void fetch_settle_locked(dl_t *dl, slot_t *sl, const lors_sched_fetch_t *f, run_t *r,
                                uint64_t t0)
{
    sl->buf = NULL;
    sl->got = 0;
    r->lost = sl->cancelled; /* to another fetch of the block */
    int withdrawn = sl->withdrawn;
    uint64_t now = now_ns();
    if (!r->gone && (sl->cancelled || dl->stop))
        r->gone = 1;
    if (!r->gone)
        note_fate_locked(dl, f, r->kind, r->ierr, r->op);
    if (r->bad_kept >= 0) {
        fate_t v = {1, IBP_OK, "CHECKSUM"};
        note_bad_mapping_locked(dl, r->bad_kept);
        dl->map_fate[r->bad_kept] = v;
    }
    if (!r->gone && !r->kind) {
        uint64_t cancel[LORS_SCHED_MAX_R];
        int nc = lors_sched_complete(dl->s, f->id, now, cancel);
        if (nc >= 0) {
            r->won = 1;
            cancel_ids_locked(dl, cancel, nc, 0);
            block_t *bl = &dl->blocks[f->block];
            bl->buf = r->buf;
            bl->data_off = r->at.data_off;
            bl->won_col = dl->ecol ? dl->ecol[f->mapping].column : -1;
            dl->won_bytes[f->depot] += (uint64_t)bl->len;
            dl->won_seconds[f->depot] += (double)(now - t0) / 1e9;
            bl->won_fetch = f->id;
            bl->won_depot = f->depot;
            r->buf = NULL;
            drop_part_locked(dl, bl); /* kept by a fetch that failed meanwhile */
        } else {
            r->lost = 1; /* complete, but the block was already someone else's */
        }
    } else if (!r->gone) {
        if (r->kind == LORS_SCHED_FAIL_BAD_DATA)
            note_bad_mapping_locked(dl, f->mapping);
        lors__dl_ec_fetch_failed_locked(dl, f, r->kind);
        lors_sched_fail(dl->s, f->id, now, (lors_sched_fail_kind_t)r->kind);
    }
    /* what a failed or withdrawn fetch received serves the block's next one */
    if (!r->won && !r->loci &&
        (r->gone ? withdrawn : r->kind && r->kind != LORS_SCHED_FAIL_BAD_DATA) &&
        keep_part_locked(dl, f, &r->at, r->buf, r->got, sl->map))
        r->buf = NULL;
    lors__dl_ec_unclaim_locked(dl, sl, r->won);
    r->decode = r->won && dl->ec ? lors__dl_ec_take_decode_locked(dl, f->block) : 0;
    buf_put_locked(dl, r->buf);
    r->buf = NULL;
    sl->id = 0;
    sl->cancelled = sl->aborted = sl->withdrawn = 0;
    /* COMMIT is stamped before the writer can see the block, so it precedes its RELEASE */
    if (dl->netlog && r->won)
        netlog_fetch(dl, "LORS_COMMIT", f, &r->asked,
                     r->checking ? "verified=1" : "verified=0");
    uint32_t nb;
    if (r->won && lors_sched_releasable(dl->s, &nb))
        pthread_cond_signal(&dl->wcv);
}

/* The netlog's and the caller's events of how it ended. */
static void fetch_said(dl_t *dl, const lors_sched_fetch_t *f, const run_t *r)
{
    if (dl->netlog && !r->won) {
        char why[64];
        if (r->kind) {
            snprintf(why, sizeof why, "op=%s ibp_err=%d", r->op, r->ierr);
            netlog_fetch(dl, "LORS_FAIL", f, &r->asked, why);
        } else if (r->lost) {
            snprintf(why, sizeof why, "got=%llu", (unsigned long long)(r->got - r->kept));
            netlog_fetch(dl, "LORS_CANCEL", f, &r->asked, why);
        }
    }
    if (r->won)
        dl_event(dl, LORS_EV_FETCH_END, f->depot, f->block, f->mapping, 0, NULL);
    else if (r->kind) {
        dl_event(dl, LORS_EV_FETCH_FAIL, f->depot, f->block, f->mapping, r->ierr, r->op);
        if (r->kind == LORS_SCHED_FAIL_BAD_DATA)
            dl_event(dl, LORS_EV_BAD_MAPPING, f->depot, f->block, f->mapping, 0, r->op);
    }
    if (r->bad_kept >= 0 && dl->map_depot[r->bad_kept] >= 0)
        dl_event(dl, LORS_EV_BAD_MAPPING, dl->map_depot[r->bad_kept], f->block, r->bad_kept, 0,
                 "CHECKSUM");
}

static void do_fetch(dl_t *dl, slot_t *sl, const lors_sched_fetch_t *f, uint64_t t0)
{
    run_t r = {0};
    fetch_start(dl, sl, f, &r);
    fetch_load(dl, sl, f, &r);
    pthread_mutex_lock(&dl->mu);
    fetch_settle_locked(dl, sl, f, &r, t0);
    pthread_mutex_unlock(&dl->mu);
    fetch_said(dl, f, &r);
    if (r.decode > 0)
        predecode(dl, f->block, r.decode);
}

static void timed_wait_locked(dl_t *dl, pthread_cond_t *cv, uint64_t until)
{
    struct timespec ts;
    uint64_t now = now_ns();
    if (until == 0 || until > now + TICK_NS)
        until = now + TICK_NS;
    /* the condition variable waits on CLOCK_REALTIME: convert the delay */
    lns_cond_deadline(&ts, until > now ? (int64_t)(until - now) : 0);
    pthread_cond_timedwait(cv, &dl->mu, &ts);
}

/* Wake one idle worker if the scheduler has work for it.  Called after every event that can
 * make work (a fetch started, so maybe there is more; a block written, so there is room):
 * a woken worker that gets work calls it again, so exactly as many wake as there is work
 * for, instead of every idle worker at every completion. */
static void kick_locked(dl_t *dl)
{
    if (dl->idle > 0 && lors_sched_has_work(dl->s, now_ns()))
        pthread_cond_signal(&dl->cv);
}

static void *worker(void *arg)
{
    slot_t *sl = arg;
    dl_t *dl = sl->dl;
    lors_sched_fetch_t f;

    pthread_mutex_lock(&dl->mu);
    while (!dl->stop) {
        uint64_t now = now_ns();
        lors_sched_action_t a = lors_sched_next(dl->s, now, &f);
        if (a == LORS_SCHED_FETCH && !lors__dl_ec_claim_locked(dl, sl, &f)) {
            /* a parity piece another block of the stripe has: not for this block */
            lors_sched_fail(dl->s, f.id, now, LORS_SCHED_FAIL_BAD_DATA);
            continue;
        }
        if (a == LORS_SCHED_FETCH) {
            sl->id = f.id;
            sl->cancelled = sl->aborted = 0;
            kick_locked(dl);
            pthread_mutex_unlock(&dl->mu);
            do_fetch(dl, sl, &f, now);
            pthread_mutex_lock(&dl->mu);
        } else if (a == LORS_SCHED_WAIT) {
            dl->idle++;
            timed_wait_locked(dl, &dl->cv, f.wait_until);
            dl->idle--;
        } else if (a == LORS_SCHED_FAILED) {
            uint32_t b = (uint32_t)(f.failed_off / (uint64_t)dl->B);
            if (b >= dl->nblocks)
                b = dl->nblocks - 1;
            const block_t *bl = &dl->blocks[b];
            if (dl->ec) {
                lors__dl_ec_fail_locked(dl, b);
                continue;
            }
            if (dl->rep && dl->rc == LORS_OK) {
                dl->rep->missing_off = bl->off;
                dl->rep->missing_len = bl->len;
            }
            if (dl->tls_why[0])
                lors__dl_fail_locked(dl, LORS_E_NO_REPLICA, "bytes %lld-%lld: no live replica "
                                     "left: %s", (long long)bl->off,
                                     (long long)(bl->off + bl->len - 1), dl->tls_why);
            else
                lors__dl_fail_locked(dl, LORS_E_NO_REPLICA,
                               "bytes %lld-%lld: no live replica left (every mapping holding them "
                               "failed or is on a dead depot)",
                               (long long)bl->off, (long long)(bl->off + bl->len - 1));
        } else {
            break; /* DONE */
        }
    }
    pthread_cond_broadcast(&dl->cv); /* DONE or stopped: the idle ones leave too */
    pthread_mutex_unlock(&dl->mu);
    return NULL;
}

/* ---- the writer ------------------------------------------------------------------------ */

/* Erasure coded: the stripe whose first block is b, all of its blocks done, decoded if some
 * came from parity, written and released.  With dl->mu held (dropped while writing); -1 if
 * the download failed. */
static int write_stripe_locked(dl_t *dl, uint32_t b, const lors__out_t *out)
{
    uint32_t k = (uint32_t)dl->ec->k;
    pthread_mutex_unlock(&dl->mu);
    int werr = lors__dl_ec_write_stripe(dl, b, out);
    pthread_mutex_lock(&dl->mu);
    if (werr < 0) {
        stripe_failed_locked(dl, b, werr);
        return -1;
    }
    int64_t bytes = 0;
    for (uint32_t i = 0; i < k; i++) {
        block_t *bl = &dl->blocks[b + i];
        lors_sched_released(dl->s, b + i);
        buf_put_locked(dl, bl->buf);
        bl->buf = NULL;
        bytes += bl->len;
    }
    if (dl->rep)
        dl->rep->bytes_written += bytes;
    kick_locked(dl);
    pthread_mutex_unlock(&dl->mu);
    for (uint32_t i = 0; i < k; i++)
        dl_event(dl, LORS_EV_WRITE, -1, b + i, -1, 0, NULL);
    pthread_mutex_lock(&dl->mu);
    return 0;
}

/* Release blocks in order until all are written or the download stopped; also the watchdog.
 * Returns with dl->mu held. */
static void writer(dl_t *dl, const lors__out_t *out)
{
    uint64_t ids[64]; /* fetches to stop: stalled, then withdrawn */
    pthread_mutex_lock(&dl->mu);
    for (;;) {
        uint32_t b;
        if (dl->ec && lors_sched_releasable(dl->s, &b) == 1 &&
            lors__dl_ec_stripe_done_locked(dl, b)) {
            if (write_stripe_locked(dl, b, out) < 0)
                break;
            dl->ec_head = b + (uint32_t)dl->ec->k;
            continue;
        }
        if (dl->ec && dl->ec_head < dl->nblocks && lors__dl_ec_late_locked(dl, dl->ec_head))
            kick_locked(dl); /* the output waits for late pieces: they may come from parity */
        if (!dl->ec && lors_sched_releasable(dl->s, &b) == 1) {
            block_t *bl = &dl->blocks[b];
            unsigned char *buf = bl->buf;
            pthread_mutex_unlock(&dl->mu);
            int werr;
            if (!dl->in_place)
                werr = lors__out_write(out, buf + bl->data_off, (size_t)bl->len);
            else if (lns_pwrite_all(out->fd, buf + bl->data_off, (size_t)bl->len,
                                    (uint64_t)(dl->base + bl->off - dl->range_off)) < 0)
                werr = -errno;
            else
                werr = 0;
            if (werr == 0 && dl->in_place && dl->o->on_placed)
                dl->o->on_placed(dl->o->placed_arg, bl->off, bl->len);
            pthread_mutex_lock(&dl->mu);
            if (werr < 0) {
                lors__dl_fail_locked(dl, LORS_E_WRITE, "writing bytes %lld-%lld to the output: %s",
                               (long long)bl->off, (long long)(bl->off + bl->len - 1),
                               strerror(-werr));
                break;
            }
            lors_sched_released(dl->s, b);
            if (dl->netlog) {
                const lors_depot_t *d = &dl->depots[bl->won_depot];
                int v6 = strchr(d->host, ':') != NULL;
                lns_evlog_write(dl->netlog, "LORS_RELEASE",
                                "fetch=%s.%llu block=%u off=%lld len=%lld depot=%s%s%s:%d",
                                dl->netlog_run, (unsigned long long)bl->won_fetch, b,
                                (long long)bl->off, (long long)bl->len, v6 ? "[" : "", d->host,
                                v6 ? "]" : "", d->port);
            }
            bl->buf = NULL;
            buf_put_locked(dl, buf);
            if (dl->rep)
                dl->rep->bytes_written += bl->len;
            kick_locked(dl);
            /* WRITE events follow the output's prefix, in order (docs/events.md), also when
             * blocks are written in place in any order */
            uint32_t from = dl->in_place ? dl->write_events : b;
            uint32_t to = dl->in_place ? lors_sched_prefix(dl->s) : b + 1;
            dl->write_events = to;
            pthread_mutex_unlock(&dl->mu);
            for (uint32_t k = from; k < to; k++)
                dl_event(dl, LORS_EV_WRITE, -1, k, -1, 0, NULL);
            pthread_mutex_lock(&dl->mu);
            continue;
        }
        lors_sched_totals_t t;
        lors_sched_totals(dl->s, &t);
        if (t.released == dl->nblocks || dl->stop)
            break;
        if (dl->o->stop && *dl->o->stop) {
            lors__dl_fail_locked(dl, LORS_E_STOPPED, "stopped");
            break;
        }
        if (dl->in_place && dl->o->on_placed) { /* a tick: the caller may save its record */
            pthread_mutex_unlock(&dl->mu);
            dl->o->on_placed(dl->o->placed_arg, 0, 0);
            pthread_mutex_lock(&dl->mu);
        }
        int n = lors_sched_stalled(dl->s, now_ns(), ids, 64);
        for (int i = 0; i < n; i++)
            for (int k = 0; k < dl->nthreads; k++)
                if (dl->slots[k].id == ids[i] && !dl->slots[k].aborted) {
                    dl->slots[k].aborted = 1;
                    stop_slot_locked(&dl->slots[k]);
                }
        /* first fetches a scarcer class needs more: ended by the scheduler, dropped here as
         * a cancelled loser is (docs/scheduler.md, "Scarce blocks first") */
        n = lors_sched_withdraw(dl->s, now_ns(), ids, 64);
        cancel_ids_locked(dl, ids, n, 1);
        if (n)
            kick_locked(dl);
        timed_wait_locked(dl, &dl->wcv, 0);
    }
}

/* ---- the call -------------------------------------------------------------------------- */

static int check_opts(const lors_download_opts_t *o, const xnd_t *x, lors_dl_report_t *r,
                      int64_t *off, int64_t *len)
{
    int64_t size = xnd_extent(x);
    const char *bad = NULL;
    *off = o->offset;
    *len = o->length < 0 ? size - o->offset : o->length;
    if (o->threads < 0 || o->threads > MAX_THREADS)
        bad = "threads must be 1..256, or 0 for automatic";
    else if (o->depot_cap < 1)
        bad = "the per-depot cap must be >= 1";
    else if (o->blocksize < 1)
        bad = "the block size must be >= 1";
    else if (o->redundancy < 1 || o->redundancy > LORS_SCHED_MAX_R)
        bad = "redundancy must be 1..8";
    else if (o->progress < 0 || o->buffer_bytes < 0 || o->prebuffer_bytes < 0 ||
             o->timeout_ms < 1 || o->stall_ms < 0 || o->fail_limit < 0)
        bad = "a negative count, size or time";
    else if (o->offset < 0 || o->offset > size || *len < 0 || *len > size - o->offset)
        bad = "the range runs past the end of the file";
    if (bad && r)
        lors__report_error(r, "%s", bad);
    return bad ? LORS_E_INVAL : LORS_OK;
}

/* In place: an output that takes writes at any offset is written at each block's offset,
 * from its position on. */
static void set_in_place(dl_t *dl, const lors__out_t *out, int64_t off)
{
    struct stat st;
    if (!dl->o->in_place || dl->ec || out->fd < 0)
        return;
    int fl = fcntl(out->fd, F_GETFL);
    off_t pos = lseek(out->fd, 0, SEEK_CUR);
    if (fstat(out->fd, &st) == 0 && (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)) && fl >= 0 &&
        !(fl & O_APPEND) && pos >= 0) {
        dl->in_place = 1;
        dl->base = pos;
        dl->range_off = off;
    }
}

/* The IBP client (the caller's, or one whose pool keeps a connection per stream) and the
 * streams' slots. */
static int streams_open(dl_t *dl)
{
    const lors_download_opts_t *o = dl->o;
    ibp_client_opts_t co;
    ibp_client_opts_init(&co);
    co.io_timeout_ms = o->timeout_ms;
    co.connect_timeout_ms = o->timeout_ms < 5000 ? o->timeout_ms : 5000;
    co.server_timeout_s = o->timeout_ms / 1000 + 1;
    dl->nthreads = lors__dl_streams(o, dl->ndepots);
    co.max_idle_per_depot = dl->nthreads; /* every stream keeps its connection */
    dl->ibp = o->client ? o->client : ibp_client_new(&co);
    dl->slots = calloc((size_t)dl->nthreads, sizeof *dl->slots);
    for (int i = 0; dl->slots && i < dl->nthreads; i++)
        dl->slots[i].claim = -1;
    if (!dl->ibp || !dl->slots) {
        if (dl->rep)
            lors__report_error(dl->rep, "out of memory");
        return LORS_E_NOMEM;
    }
    return LORS_OK;
}

/* The streams' threads fetch while this one writes; once the writer is done (or failed),
 * every stream is stopped and joined.  The engine's result. */
static int streams_run(dl_t *dl, const lors__out_t *out)
{
    pthread_t tids[MAX_THREADS];
    int nt = 0;
    for (int i = 0; i < dl->nthreads; i++) {
        dl->slots[i].dl = dl;
        if (pthread_create(&tids[nt], NULL, worker, &dl->slots[i]) != 0)
            break;
        nt++;
    }
    if (nt == 0) {
        if (dl->rep)
            lors__report_error(dl->rep, "cannot start a worker thread");
        return LORS_E_THREAD;
    }
    writer(dl, out);
    dl->stop = 1; /* workers still waiting or loading (e.g. after a write error) leave */
    for (int i = 0; i < nt; i++)
        stop_slot_locked(&dl->slots[i]);
    pthread_cond_broadcast(&dl->cv);
    pthread_mutex_unlock(&dl->mu);
    for (int i = 0; i < nt; i++)
        pthread_join(tids[i], NULL);
    return dl->rc;
}

/* Everything the run held; its buffers' chunks are kept for the next run where they are
 * huge pages. */
static void dl_free(dl_t *dl)
{
    size_t per, stride, csize = chunk_size(dl, &per, &stride);
    pthread_mutex_lock(&spare_mu);
    for (size_t i = 0; i < dl->nchunks; i++) {
        if (csize == HUGE_PAGE && nspare < SPARE_CHUNKS)
            spare[nspare++] = dl->chunks[i];
        else
            free(dl->chunks[i]);
    }
    pthread_mutex_unlock(&spare_mu);
    free(dl->chunks);
    free(dl->freebufs);
    lors_sched_free(dl->s);
    if (dl->ibp != dl->o->client)
        ibp_client_free(dl->ibp);
    free(dl->slots);
    free(dl->blocks);
    free(dl->map_depot);
    free(dl->map_fate);
    free(dl->dep_fate);
    free(dl->ck);
    free(dl->fn);
    free(dl->depots);
    free(dl->won_bytes);
    free(dl->won_seconds);
    lors__dl_ec_free(dl);
    pthread_cond_destroy(&dl->cv);
    pthread_cond_destroy(&dl->wcv);
    pthread_mutex_destroy(&dl->mu);
    pthread_mutex_destroy(&dl->evmu);
    lns_evlog_close(dl->netlog);
}

static int download(const lors_download_opts_t *o, const xnd_t *x, const lors__ec_t *ec,
                    const lors__out_t *out, lors_dl_report_t *report)
{
    dl_t dl;
    int64_t off = 0, len = 0;
    uint64_t t0 = now_ns();
    if (report)
        memset(report, 0, sizeof *report);
    if (!o || !x || !out || (!out->put && out->fd < 0)) {
        if (report)
            lors__report_error(report, "no options, exNode or output");
        return LORS_E_INVAL;
    }
    int rc = check_opts(o, x, report, &off, &len);
    if (rc != LORS_OK)
        return rc;
    if (report) {
        report->offset = off;
        report->length = len;
    }
    memset(&dl, 0, sizeof dl);
    dl.o = o;
    dl.x = x;
    dl.ec = ec;
    dl.rep = report;
    pthread_mutex_init(&dl.mu, NULL);
    pthread_mutex_init(&dl.evmu, NULL);
    pthread_cond_init(&dl.cv, NULL);
    pthread_cond_init(&dl.wcv, NULL);
    if (o->netlog_path && len > 0) {
        static atomic_uint runs;
        snprintf(dl.netlog_run, sizeof dl.netlog_run, "%ld.%u", (long)getpid(),
                 atomic_fetch_add(&runs, 1) + 1);
        if (!(dl.netlog = lns_evlog_open(o->netlog_path, NULL))) {
            if (report)
                lors__report_error(report, "opening the netlog %s: %s",
                                   o->netlog_path, strerror(errno));
            pthread_cond_destroy(&dl.cv);
            pthread_cond_destroy(&dl.wcv);
            pthread_mutex_destroy(&dl.mu);
            pthread_mutex_destroy(&dl.evmu);
            return LORS_E_WRITE;
        }
    }

    /* SIGPIPE held back for this thread; a write to a closed pipe gives EPIPE instead */
    sigset_t old_set;
    int pipe_was_pending;
    lors__sigpipe_hold(&old_set, &pipe_was_pending);

    set_in_place(&dl, out, off);
    rc = lors__dl_plan(&dl, off, len);
    /* in place: the blocks an earlier run wrote are not fetched again */
    for (uint32_t b = 0; rc == LORS_OK && dl.in_place && o->nhave && b < dl.nblocks; b++)
        for (size_t i = 0; i < o->nhave; i++)
            if (o->have[i].off <= dl.blocks[b].off &&
                dl.blocks[b].off + dl.blocks[b].len <= o->have[i].off + o->have[i].len) {
                lors_sched_skip(dl.s, b);
                break;
            }
    if (rc != LORS_OK && report && !report->error[0])
        lors__report_error(report, "planning %u blocks: %s", dl.nblocks,
                           lors_strerror(rc));
    if (rc == LORS_OK && len > 0)
        rc = streams_open(&dl);
    if (rc == LORS_OK && len > 0)
        rc = streams_run(&dl, out);

    lors__sigpipe_release(&old_set, pipe_was_pending);

    lors__dl_fill_report(&dl, t0);
    if (rc == LORS_E_NO_REPLICA && report)
        lors__dl_note_expired(x, ec != NULL, report);
    int64_t prefix = 0; /* in place: the bytes from the range's start all written */
    if (dl.s) {
        uint32_t p = lors_sched_prefix(dl.s);
        prefix = p >= dl.nblocks ? len : dl.blocks[p].off - off;
    }
    if (report)
        report->bytes_prefix = dl.in_place ? prefix : report->bytes_written;
    if (dl.in_place && lseek(out->fd, dl.base + prefix, SEEK_SET) < 0 && rc == LORS_OK) {
        rc = LORS_E_WRITE;
        if (report)
            lors__report_error(report, "positioning the output after its bytes: %s",
                               strerror(errno));
    }
    dl_free(&dl);
    return rc;
}

int lors__download_plain(const lors_download_opts_t *o, const xnd_t *x, int out_fd,
                         lors_dl_report_t *report)
{
    lors__out_t out = {.fd = out_fd};
    return download(o, x, NULL, &out, report);
}

int lors__download_plain_to(const lors_download_opts_t *o, const xnd_t *x,
                            const lors__out_t *out, lors_dl_report_t *report)
{
    return download(o, x, NULL, out, report);
}

int lors__download_ec_to(const lors_download_opts_t *o, const xnd_t *x, const lors__ec_t *ec,
                         const lors__out_t *out, lors_dl_report_t *report)
{
    return download(o, x, ec, out, report);
}

