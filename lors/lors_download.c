/* lors_download.c -- the download engine: exNode -> blocks -> worker streams -> reorder buffer -> fd.
 *
 * Data path: plan_blocks() cuts the requested range into blocks that never straddle a mapping
 * boundary and lists, per block, the mappings that hold all of it (its replicas).  N worker
 * threads ask the scheduler (lors_sched) what to fetch, LOAD it with one shared pooled
 * ibp_client_t in PIECE-sized requests (so cancellation, stalls and the stop flag are noticed
 * between pieces), check it against the mapping's lns_checksum and report complete or fail.
 * The calling thread is the writer: it releases blocks strictly in order to out_fd, and is
 * also the watchdog that turns stalled fetches into TIMEOUT failures.
 *
 * The scheduler cuts its range into equal blocks; ours are not equal (they are cut at mapping
 * boundaries too).  So the scheduler sees a virtual file of nblocks x B bytes in which block i
 * is [i*B, (i+1)*B); only block indexes cross the boundary.  Its byte budget therefore counts
 * every block as B >= its real size: the memory bound still holds, and is never exceeded.
 *
 * Memory: a fetch allocates its buffer when it starts; the winner's buffer becomes the block's
 * and is freed by the writer after the write; a loser's or a failed fetch's is freed at once.
 *
 * Locking: one mutex (dl->mu) around every scheduler call and all shared engine state; no
 * depot call, write or event callback runs with it held.  Events are serialized by dl->evmu,
 * taken without dl->mu.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lors.h"
#include "lors_e2e_int.h"
#include "lors_checksum.h"
#include "lors_sched.h"
#include "lns_io.h"
#include "lns_time.h"

#define PIECE ((uint64_t)256 << 10) /* bytes per LOAD request */
#define MAX_THREADS 256
#define TICK_NS 100000000ull        /* the writer's longest sleep: watchdog period */

typedef struct block {
    int64_t off, len;     /* real bytes of the file */
    unsigned char *buf;   /* done: the winner's buffer (NULL otherwise) */
    size_t data_off;      /* where the block's bytes start in buf */
    size_t buf_len;
} block_t;

struct dl;

typedef struct slot {     /* one worker and its fetch in flight */
    struct dl *dl;
    uint64_t id;          /* 0: none */
    int cancelled;        /* lost to another fetch of its block: drop it, never report it */
    int aborted;          /* the watchdog saw it stall: fail it as TIMEOUT */
} slot_t;

typedef struct ckinfo {   /* a mapping's lns_checksum, parsed once */
    const char *alg, *digests;
    int64_t bs;
    int ok;
} ckinfo_t;

typedef struct dl {
    const lors_download_opts_t *o;
    const xnd_t *x;
    lors_dl_report_t *rep;
    ibp_client_t *ibp;
    lors_sched_t *s;
    block_t *blocks;
    uint32_t nblocks;
    int64_t B;            /* block size after rounding */
    int *map_depot;       /* per mapping: depot index, -1 when its read cap is unusable */
    ckinfo_t *ck;         /* per mapping */
    lors_depot_t *depots;
    double *won_seconds;
    uint64_t *won_bytes;
    int ndepots;
    slot_t *slots;
    int nthreads;
    pthread_mutex_t mu, evmu;
    pthread_cond_t cv;
    int stop;             /* failure or write error: workers leave */
    int rc;
    int64_t buffered, peak, max_buf, fetched;
} dl_t;

static uint64_t now_ns(void)
{
    return (uint64_t)lns_mono_ns();
}

void lors_download_opts_init(lors_download_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->threads = 8;
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
    r->depots = NULL;
    r->bad_mappings = NULL;
    r->ndepots = r->nbad = 0;
}

static void dl_fail_locked(dl_t *dl, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The first failure wins: it is the one the report names. */
static void dl_fail_locked(dl_t *dl, int rc, const char *fmt, ...)
{
    if (dl->rc == LORS_OK) {
        dl->rc = rc;
        if (dl->rep) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(dl->rep->error, sizeof dl->rep->error, fmt, ap);
            va_end(ap);
        }
    }
    dl->stop = 1;
    pthread_cond_broadcast(&dl->cv);
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

/* ---- planning: depots, checksums, blocks, replicas ---------------------------------------- */

static void parse_checksum(const xnd_mapping_t *m, ckinfo_t *c)
{
    memset(c, 0, sizeof *c);
    if (!m->func || strcmp(m->func->name, LORS_CHECKSUM_FUNC) != 0)
        return;
    if (xnd_meta_get_string(&m->func->args, "algorithm", &c->alg) != XND_OK ||
        xnd_meta_get_int(&m->func->args, "blocksize", &c->bs) != XND_OK || c->bs <= 0 ||
        xnd_meta_get_string(&m->func->args, "digests", &c->digests) != XND_OK)
        return;
    c->ok = 1;
}

static int plan_depots(dl_t *dl)
{
    const xnd_t *x = dl->x;
    dl->map_depot = malloc((x->nmaps ? x->nmaps : 1) * sizeof *dl->map_depot);
    dl->ck = calloc(x->nmaps ? x->nmaps : 1, sizeof *dl->ck);
    dl->depots = calloc(x->nmaps ? x->nmaps : 1, sizeof *dl->depots);
    if (!dl->map_depot || !dl->ck || !dl->depots)
        return LORS_E_NOMEM;
    for (size_t i = 0; i < x->nmaps; i++) {
        const xnd_mapping_t *m = x->maps[i];
        ibp_cap_t cap;
        dl->map_depot[i] = -1;
        parse_checksum(m, &dl->ck[i]);
        if (m->logical_length <= 0 || !m->cap[XND_READ] ||
            ibp_cap_parse(m->cap[XND_READ], &cap) != IBP_OK)
            continue;
        int d;
        for (d = 0; d < dl->ndepots; d++)
            if (dl->depots[d].port == cap.port && strcmp(dl->depots[d].host, cap.host) == 0)
                break;
        if (d == dl->ndepots) {
            snprintf(dl->depots[d].host, sizeof dl->depots[d].host, "%s", cap.host);
            dl->depots[d].port = cap.port;
            dl->ndepots++;
        }
        dl->map_depot[i] = d;
    }
    dl->won_seconds = calloc((size_t)dl->ndepots + 1, sizeof *dl->won_seconds);
    dl->won_bytes = calloc((size_t)dl->ndepots + 1, sizeof *dl->won_bytes);
    return dl->won_seconds && dl->won_bytes ? LORS_OK : LORS_E_NOMEM;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Append [a, b) cut at base + k*B. */
static int cut_segment(dl_t *dl, int64_t a, int64_t b, int64_t base, size_t *cap)
{
    while (a < b) {
        int64_t e = base + ((a - base) / dl->B + 1) * dl->B;
        if (e > b)
            e = b;
        if (dl->nblocks == *cap) {
            size_t nc = *cap ? *cap * 2 : 64;
            block_t *nb = realloc(dl->blocks, nc * sizeof *nb);
            if (!nb)
                return LORS_E_NOMEM;
            dl->blocks = nb;
            *cap = nc;
        }
        memset(&dl->blocks[dl->nblocks], 0, sizeof dl->blocks[0]);
        dl->blocks[dl->nblocks].off = a;
        dl->blocks[dl->nblocks].len = e - a;
        dl->nblocks++;
        a = e;
    }
    return LORS_OK;
}

/* Blocks of [off, end): cut at every mapping start and end inside the range, and within each
 * segment on the grid of B from the start of a mapping covering it, so that blocks line up
 * with that mapping's checksum blocks. */
static int plan_blocks(dl_t *dl, int64_t off, int64_t end)
{
    const xnd_t *x = dl->x;
    int64_t *pts = malloc((2 * x->nmaps + 2) * sizeof *pts);
    size_t np = 0, cap = 0;
    if (!pts)
        return LORS_E_NOMEM;
    pts[np++] = off;
    pts[np++] = end;
    for (size_t i = 0; i < x->nmaps; i++) {
        int64_t a = x->maps[i]->exnode_offset, b = a + x->maps[i]->logical_length;
        if (a > off && a < end)
            pts[np++] = a;
        if (b > off && b < end)
            pts[np++] = b;
    }
    qsort(pts, np, sizeof *pts, cmp_i64);
    int rc = LORS_OK;
    for (size_t i = 0; i + 1 < np && rc == LORS_OK; i++) {
        int64_t a = pts[i], b = pts[i + 1];
        if (a == b)
            continue;
        int64_t base = a;
        for (size_t k = 0; k < x->nmaps; k++) {
            const xnd_mapping_t *m = x->maps[k];
            if (dl->map_depot[k] >= 0 && m->exnode_offset <= a &&
                m->exnode_offset + m->logical_length >= b) {
                base = m->exnode_offset;
                break;
            }
        }
        rc = cut_segment(dl, a, b, base, &cap);
    }
    free(pts);
    return rc;
}

static int plan_sched(dl_t *dl)
{
    const lors_download_opts_t *o = dl->o;
    lors_sched_cfg_t cfg;
    lors_sched_cfg_init(&cfg);
    cfg.off = 0;
    cfg.len = (uint64_t)dl->nblocks * (uint64_t)dl->B;
    cfg.block_size = (uint64_t)dl->B;
    cfg.ndepots = dl->ndepots > 0 ? dl->ndepots : 1;
    cfg.depot_cap = o->depot_cap;
    cfg.redundancy = o->redundancy;
    cfg.progress = o->progress;
    cfg.buffer_bytes = (uint64_t)o->buffer_bytes;
    /* pre-buffer in whole virtual blocks, rounded up */
    cfg.prebuffer_bytes = (uint64_t)((o->prebuffer_bytes + dl->B - 1) / dl->B) * (uint64_t)dl->B;
    cfg.fail_limit = o->fail_limit;
    cfg.dead_retry_ns = 0;
    cfg.stall_ns = (uint64_t)o->stall_ms * 1000000ull;
    dl->s = lors_sched_new(&cfg);
    if (!dl->s)
        return errno == ENOMEM ? LORS_E_NOMEM : LORS_E_INVAL;
    const xnd_t *x = dl->x;
    for (uint32_t b = 0; b < dl->nblocks; b++) {
        int64_t a = dl->blocks[b].off, e = a + dl->blocks[b].len;
        for (size_t k = 0; k < x->nmaps; k++) {
            const xnd_mapping_t *m = x->maps[k];
            if (dl->map_depot[k] < 0 || m->exnode_offset > a ||
                m->exnode_offset + m->logical_length < e)
                continue;
            if (lors_sched_add_replica(dl->s, b, dl->map_depot[k], (int)k, 1) != LORS_SCHED_OK)
                return LORS_E_NOMEM;
        }
    }
    return LORS_OK;
}

/* ---- a fetch -------------------------------------------------------------------------- */

/* The bytes a fetch of block b from mapping k loads: the block, widened to whole checksum
 * blocks of the mapping when it is verified. */
static void fetch_range(const dl_t *dl, uint32_t b, int k, int64_t *fa, int64_t *fb)
{
    const xnd_mapping_t *m = dl->x->maps[k];
    const ckinfo_t *c = &dl->ck[k];
    int64_t a = dl->blocks[b].off, e = a + dl->blocks[b].len;
    *fa = a;
    *fb = e;
    if (!dl->o->verify || !c->ok)
        return;
    int64_t mo = m->exnode_offset, me = mo + m->logical_length;
    *fa = mo + (a - mo) / c->bs * c->bs;
    *fb = mo + (e - mo + c->bs - 1) / c->bs * c->bs;
    if (*fb > me)
        *fb = me;
}

/* 1 if buf (the mapping's bytes [fa, fb), fa on its checksum grid) matches its digests. */
static int verify_range(const dl_t *dl, int k, int64_t fa, const unsigned char *buf, size_t len)
{
    const xnd_mapping_t *m = dl->x->maps[k];
    const ckinfo_t *c = &dl->ck[k];
    lors_ck_t ck;
    char *got = NULL;
    int ok = 0;
    if (lors_ck_init(&ck, c->alg, c->bs) == LORS_OK && lors_ck_update(&ck, buf, len) == LORS_OK &&
        lors_ck_finish(&ck, &got) == LORS_OK) {
        size_t nck = (len + (size_t)c->bs - 1) / (size_t)c->bs;
        size_t gl = strlen(got), hd = nck ? gl / nck : 0;
        size_t first = (size_t)((fa - m->exnode_offset) / c->bs);
        if (hd > 0 && strlen(c->digests) >= (first + nck) * hd &&
            memcmp(c->digests + first * hd, got, gl) == 0)
            ok = 1;
    }
    lors_ck_free(&ck);
    free(got);
    return ok;
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

/* Run fetch f in slot sl: load, verify, report.  Called and returns without dl->mu. */
static void do_fetch(dl_t *dl, slot_t *sl, const lors_sched_fetch_t *f, uint64_t t0)
{
    const xnd_mapping_t *m = dl->x->maps[f->mapping];
    int64_t fa, fb;
    fetch_range(dl, f->block, f->mapping, &fa, &fb);
    size_t len = (size_t)(fb - fa);
    unsigned char *buf = malloc(len);
    int ierr = IBP_OK, kind = 0;
    const char *op = "LOAD";

    pthread_mutex_lock(&dl->mu);
    if (buf) {
        dl->buffered += (int64_t)len;
        if (dl->buffered > dl->peak)
            dl->peak = dl->buffered;
        if ((int64_t)len > dl->max_buf)
            dl->max_buf = (int64_t)len;
    }
    pthread_mutex_unlock(&dl->mu);
    dl_event(dl, LORS_EV_FETCH_START, f->depot, f->block, f->mapping, 0, NULL);

    uint64_t got = 0;
    int gone = 0; /* cancelled or stopped: drop without reporting */
    if (!buf) {
        ierr = IBP_E_GENERIC;
        kind = LORS_SCHED_FAIL_DEPOT;
        op = "MEMORY";
    }
    while (!kind && got < len) {
        uint64_t n = len - got < PIECE ? len - got : PIECE;
        uint64_t at = (uint64_t)(m->alloc_offset + (fa - m->exnode_offset)) + got;
        ierr = ibp_load(dl->ibp, m->cap[XND_READ], at, n, buf + got);
        pthread_mutex_lock(&dl->mu);
        if (ierr == IBP_OK) {
            got += n;
            dl->fetched += (int64_t)n;
        }
        if (sl->cancelled || dl->stop) {
            gone = 1;
        } else if (sl->aborted) {
            kind = LORS_SCHED_FAIL_TIMEOUT;
            op = "TIMEOUT";
        } else if (ierr != IBP_OK) {
            kind = ierr == IBP_E_CLIENT_TIMEOUT ? LORS_SCHED_FAIL_TIMEOUT : LORS_SCHED_FAIL_DEPOT;
            op = ierr == IBP_E_CLIENT_TIMEOUT ? "TIMEOUT" : "LOAD";
        } else {
            lors_sched_progress(dl->s, f->id, got * (uint64_t)dl->blocks[f->block].len / len,
                                now_ns());
        }
        pthread_mutex_unlock(&dl->mu);
        if (gone)
            break;
    }
    if (!gone && !kind && dl->o->verify && dl->ck[f->mapping].ok &&
        !verify_range(dl, f->mapping, fa, buf, len)) {
        kind = LORS_SCHED_FAIL_BAD_DATA;
        op = "CHECKSUM";
    }

    pthread_mutex_lock(&dl->mu);
    int won = 0;
    uint64_t now = now_ns();
    if (!gone && (sl->cancelled || dl->stop))
        gone = 1;
    if (!gone && !kind) {
        uint64_t cancel[LORS_SCHED_MAX_R];
        int nc = lors_sched_complete(dl->s, f->id, now, cancel);
        if (nc >= 0) {
            won = 1;
            for (int i = 0; i < nc; i++)
                for (int t = 0; t < dl->nthreads; t++)
                    if (dl->slots[t].id == cancel[i])
                        dl->slots[t].cancelled = 1;
            block_t *bl = &dl->blocks[f->block];
            bl->buf = buf;
            bl->buf_len = len;
            bl->data_off = (size_t)(bl->off - fa);
            dl->won_bytes[f->depot] += (uint64_t)bl->len;
            dl->won_seconds[f->depot] += (double)(now - t0) / 1e9;
            buf = NULL;
        }
    } else if (!gone) {
        if (kind == LORS_SCHED_FAIL_BAD_DATA)
            note_bad_mapping_locked(dl, f->mapping);
        lors_sched_fail(dl->s, f->id, now, (lors_sched_fail_kind_t)kind);
    }
    if (buf)
        dl->buffered -= (int64_t)len;
    sl->id = 0;
    sl->cancelled = sl->aborted = 0;
    pthread_cond_broadcast(&dl->cv);
    pthread_mutex_unlock(&dl->mu);
    free(buf);

    if (won)
        dl_event(dl, LORS_EV_FETCH_END, f->depot, f->block, f->mapping, 0, NULL);
    else if (kind) {
        dl_event(dl, LORS_EV_FETCH_FAIL, f->depot, f->block, f->mapping, ierr, op);
        if (kind == LORS_SCHED_FAIL_BAD_DATA)
            dl_event(dl, LORS_EV_BAD_MAPPING, f->depot, f->block, f->mapping, 0, op);
    }
}

static void timed_wait_locked(dl_t *dl, uint64_t until)
{
    struct timespec ts;
    uint64_t now = now_ns();
    if (until == 0 || until > now + TICK_NS)
        until = now + TICK_NS;
    /* the condition variable waits on CLOCK_REALTIME: convert the delay */
    lns_cond_deadline(&ts, until > now ? (int64_t)(until - now) : 0);
    pthread_cond_timedwait(&dl->cv, &dl->mu, &ts);
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
        if (a == LORS_SCHED_FETCH) {
            sl->id = f.id;
            sl->cancelled = sl->aborted = 0;
            pthread_mutex_unlock(&dl->mu);
            do_fetch(dl, sl, &f, now);
            pthread_mutex_lock(&dl->mu);
        } else if (a == LORS_SCHED_WAIT) {
            timed_wait_locked(dl, f.wait_until);
        } else if (a == LORS_SCHED_FAILED) {
            uint32_t b = (uint32_t)(f.failed_off / (uint64_t)dl->B);
            if (b >= dl->nblocks)
                b = dl->nblocks - 1;
            const block_t *bl = &dl->blocks[b];
            if (dl->rep && dl->rc == LORS_OK) {
                dl->rep->missing_off = bl->off;
                dl->rep->missing_len = bl->len;
            }
            dl_fail_locked(dl, LORS_E_NO_REPLICA,
                           "bytes %lld-%lld: no live replica left (every mapping holding them "
                           "failed or is on a dead depot)",
                           (long long)bl->off, (long long)(bl->off + bl->len - 1));
        } else {
            break; /* DONE */
        }
    }
    pthread_cond_broadcast(&dl->cv);
    pthread_mutex_unlock(&dl->mu);
    return NULL;
}

/* ---- the writer ------------------------------------------------------------------------ */

/* Release blocks in order until all are written or the download stopped; also the watchdog.
 * Returns with dl->mu held. */
static void writer(dl_t *dl, int out_fd)
{
    uint64_t stalled[64];
    pthread_mutex_lock(&dl->mu);
    for (;;) {
        uint32_t b;
        if (lors_sched_releasable(dl->s, &b) == 1) {
            block_t *bl = &dl->blocks[b];
            unsigned char *buf = bl->buf;
            size_t buf_len = bl->buf_len;
            pthread_mutex_unlock(&dl->mu);
            int werr = 0;
            if (lns_fd_write_all(out_fd, buf + bl->data_off, (size_t)bl->len, -1) < 0)
                werr = -errno;
            pthread_mutex_lock(&dl->mu);
            if (werr < 0) {
                dl_fail_locked(dl, LORS_E_WRITE, "writing bytes %lld-%lld to the output: %s",
                               (long long)bl->off, (long long)(bl->off + bl->len - 1),
                               strerror(-werr));
                break;
            }
            lors_sched_released(dl->s, b);
            bl->buf = NULL;
            dl->buffered -= (int64_t)buf_len;
            if (dl->rep)
                dl->rep->bytes_written += bl->len;
            pthread_cond_broadcast(&dl->cv);
            pthread_mutex_unlock(&dl->mu);
            free(buf);
            dl_event(dl, LORS_EV_WRITE, -1, b, -1, 0, NULL);
            pthread_mutex_lock(&dl->mu);
            continue;
        }
        lors_sched_totals_t t;
        lors_sched_totals(dl->s, &t);
        if (t.released == dl->nblocks || dl->stop)
            break;
        int n = lors_sched_stalled(dl->s, now_ns(), stalled, 64);
        for (int i = 0; i < n; i++)
            for (int k = 0; k < dl->nthreads; k++)
                if (dl->slots[k].id == stalled[i])
                    dl->slots[k].aborted = 1;
        timed_wait_locked(dl, 0);
    }
}

/* ---- the call -------------------------------------------------------------------------- */

static void fill_report(dl_t *dl, uint64_t t0)
{
    lors_dl_report_t *r = dl->rep;
    if (!r)
        return;
    r->seconds = (double)(now_ns() - t0) / 1e9;
    r->blocks = dl->nblocks;
    r->blocksize = dl->B;
    r->peak_buffered = dl->peak;
    r->max_fetch_buffer = dl->max_buf;
    r->bytes_fetched = dl->fetched;
    if (dl->ndepots == 0)
        return;
    r->depots = calloc((size_t)dl->ndepots, sizeof *r->depots);
    if (!r->depots)
        return;
    r->ndepots = (size_t)dl->ndepots;
    for (int d = 0; d < dl->ndepots; d++) {
        lors_dl_depot_t *o = &r->depots[d];
        lors_sched_depot_stats_t st;
        o->depot = dl->depots[d];
        o->bytes = dl->won_bytes[d];
        o->seconds = dl->won_seconds[d];
        o->mbps = o->seconds > 0 ? (double)o->bytes / o->seconds / 1e6 : 0;
        if (dl->s && lors_sched_depot_stats(dl->s, d, &st) == LORS_SCHED_OK) {
            o->fetches = st.started;
            o->blocks = st.blocks_won;
            o->failures = st.failures;
            o->bad_data = st.bad_data;
            o->redundant_started = st.redundant_started;
            o->redundant_won = st.redundant_won;
            o->wasted = st.cancelled;
        }
    }
}

static int check_opts(const lors_download_opts_t *o, const xnd_t *x, lors_dl_report_t *r,
                      int64_t *off, int64_t *len)
{
    int64_t size = xnd_size(x);
    const char *bad = NULL;
    if (size < 0) {
        size = 0;
        for (size_t i = 0; i < x->nmaps; i++)
            if (x->maps[i]->exnode_offset + x->maps[i]->logical_length > size)
                size = x->maps[i]->exnode_offset + x->maps[i]->logical_length;
    }
    *off = o->offset;
    *len = o->length < 0 ? size - o->offset : o->length;
    if (o->threads < 1 || o->threads > MAX_THREADS)
        bad = "threads must be 1..256";
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
        snprintf(r->error, sizeof r->error, "%s", bad);
    return bad ? LORS_E_INVAL : LORS_OK;
}

/* The block size: the asked one rounded up to a multiple of the checksum block size (of the
 * first mapping that has one), so that blocks line up with checksum blocks. */
static int64_t round_blocksize(const dl_t *dl)
{
    int64_t B = dl->o->blocksize;
    for (size_t i = 0; dl->o->verify && i < dl->x->nmaps; i++)
        if (dl->ck[i].ok) {
            int64_t c = dl->ck[i].bs;
            return (B + c - 1) / c * c;
        }
    return B;
}

int lors__download_plain(const lors_download_opts_t *o, const xnd_t *x, int out_fd,
                         lors_dl_report_t *report)
{
    dl_t dl;
    int64_t off = 0, len = 0;
    uint64_t t0 = now_ns();
    pthread_t tids[MAX_THREADS];
    int nt = 0;

    if (report)
        memset(report, 0, sizeof *report);
    if (!o || !x || out_fd < 0) {
        if (report)
            snprintf(report->error, sizeof report->error, "no options, exNode or output");
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
    dl.rep = report;
    pthread_mutex_init(&dl.mu, NULL);
    pthread_mutex_init(&dl.evmu, NULL);
    pthread_cond_init(&dl.cv, NULL);

    /* SIGPIPE held back for this thread; a write to a closed pipe gives EPIPE instead */
    sigset_t pipe_set, old_set;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
    sigset_t pending;
    sigpending(&pending);
    int pipe_was_pending = sigismember(&pending, SIGPIPE);

    rc = plan_depots(&dl);
    if (rc == LORS_OK && len > 0) {
        dl.B = round_blocksize(&dl);
        rc = plan_blocks(&dl, off, off + len);
        if (rc == LORS_OK)
            rc = plan_sched(&dl);
        if (rc != LORS_OK && report)
            snprintf(report->error, sizeof report->error, "planning %u blocks: %s", dl.nblocks,
                     lors_strerror(rc));
    }
    if (rc == LORS_OK && len > 0) {
        ibp_client_opts_t co;
        ibp_client_opts_init(&co);
        co.io_timeout_ms = o->timeout_ms;
        co.connect_timeout_ms = o->timeout_ms < 5000 ? o->timeout_ms : 5000;
        co.server_timeout_s = o->timeout_ms / 1000 + 1;
        dl.nthreads = o->threads;
        dl.ibp = ibp_client_new(&co);
        dl.slots = calloc((size_t)dl.nthreads, sizeof *dl.slots);
        if (!dl.ibp || !dl.slots) {
            rc = LORS_E_NOMEM;
            if (report)
                snprintf(report->error, sizeof report->error, "out of memory");
        }
    }
    if (rc == LORS_OK && len > 0) {
        for (int i = 0; i < dl.nthreads; i++) {
            dl.slots[i].dl = &dl;
            if (pthread_create(&tids[nt], NULL, worker, &dl.slots[i]) != 0)
                break;
            nt++;
        }
        if (nt == 0) {
            rc = LORS_E_THREAD;
            if (report)
                snprintf(report->error, sizeof report->error, "cannot start a worker thread");
        } else {
            writer(&dl, out_fd);
            dl.stop = 1; /* workers still waiting (e.g. after a write error) leave */
            pthread_cond_broadcast(&dl.cv);
            pthread_mutex_unlock(&dl.mu);
            for (int i = 0; i < nt; i++)
                pthread_join(tids[i], NULL);
            rc = dl.rc;
        }
    }

    if (!pipe_was_pending) {
        struct timespec zero = {0, 0};
        sigpending(&pending);
        if (sigismember(&pending, SIGPIPE))
            sigtimedwait(&pipe_set, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old_set, NULL);

    fill_report(&dl, t0);
    for (uint32_t b = 0; b < dl.nblocks; b++)
        free(dl.blocks[b].buf);
    lors_sched_free(dl.s);
    ibp_client_free(dl.ibp);
    free(dl.slots);
    free(dl.blocks);
    free(dl.map_depot);
    free(dl.ck);
    free(dl.depots);
    free(dl.won_bytes);
    free(dl.won_seconds);
    pthread_cond_destroy(&dl.cv);
    pthread_mutex_destroy(&dl.mu);
    pthread_mutex_destroy(&dl.evmu);
    return rc;
}
