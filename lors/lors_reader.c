/* lors_reader.c -- random access to a network file: any (offset, length), through a bounded
 * block cache shared by every reader, with read-ahead that follows sequential streams.
 *
 * The file is cut into cache blocks of r->unit bytes (1 MiB, or the frame of a transformed
 * file, or the stripe piece of an erasure-coded one when larger).  A read waits for the
 * blocks it covers; a block that is neither cached nor on its way is fetched by a job: one
 * run of the download engine (lors__download_to: the multi-depot scheduler with its
 * redundancy, failover and checksums; erasure decoding; frames undone) over a run of blocks,
 * on a thread of its own, whose output goes straight into the blocks' buffers.  Jobs share
 * one ibp_client_t per cache, so their connections are pooled from one job to the next.
 *
 * Streams: each client of a reader (an HTTP request, an open FUSE file) reads through a
 * stream.  A stream whose reads follow each other is sequential: its window grows (2, 4, ...
 * blocks up to o->readahead bytes) and jobs fetch that far ahead of it.  A read elsewhere (a
 * seek) sets the window back and cancels the stream's read-ahead that no one waits for (the
 * job's stop flag: the engine ends within 100 ms; blocks it had not filled are dropped).
 *
 * Memory: the cache's bytes are the buffers of every block in it, loading or loaded; new
 * blocks first evict the least recently used loaded blocks that no read holds.  A demand
 * read waits for room rather than go past the bound; read-ahead is simply not started
 * without room.  Each job is at most a quarter of the cache, so one always fits.  The
 * engine's own buffers for a job are bounded by the job's size.
 *
 * Failure: a job that fails marks its unfilled blocks failed with the engine's line (naming
 * the bytes); the reads waiting on them return that error, and the next read of those
 * blocks tries again.
 *
 * Locking: one mutex per cache (c->mu) guards the table, the LRU list, every block's state
 * and every reader's and stream's fields; c->cv is broadcast on every change of state.  A
 * job fills its blocks' buffers without the lock (a loading block belongs to its job).
 */
#include <errno.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lns_err.h"
#include "lors.h"
#include "lors_e2e_int.h"
#include "lors_out.h"
#include "lors_small.h"

enum { ABSENT, LOADING, READY, FAILED, DROPPED };

typedef struct entry {
    struct entry *hnext;           /* hash chain */
    struct entry *lprev, *lnext;   /* the LRU list of READY blocks (head: most recent) */
    uint64_t rid;                  /* the reader's id */
    int64_t unit;
    int state;
    int linked;                    /* in the table (a failed or dropped one may not be) */
    int pins;                      /* reads waiting on it and the job filling it */
    unsigned char *buf;
    size_t len, filled;
    int rc;                        /* FAILED: the engine's error and line */
    char *err;
} entry_t;

typedef struct job {
    struct job *next;              /* the reader's jobs */
    lors_reader_t *r;
    lors_stream_t *owner;          /* the stream whose read-ahead it is, or NULL */
    int64_t u0, n;                 /* its blocks */
    entry_t **e;
    int64_t cur;                   /* the block being filled */
    volatile sig_atomic_t stop;
} job_t;

struct lors_cache {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    entry_t **tab;
    size_t nbuckets, nentries;
    entry_t *lru_head, *lru_tail;
    int64_t limit, bytes;          /* bytes: every block's buffer and the pool's */
    struct pooled *pool;           /* buffers of dropped blocks, for the next ones */
    int64_t pool_bytes;
    int jobs, max_jobs;
    uint64_t next_rid;
    ibp_client_t *client;
    ibp_client_t *quick;           /* small reads': a depot silent for QUICK_STALL_MS fails */
    int timeout_ms;
    lors_cache_stats_t st;
};

struct lors_reader {
    lors_cache_t *c;
    int own_cache;
    uint64_t rid;
    const xnd_t *x;
    lors_reader_opts_t o;
    int64_t size, unit, nunits;
    job_t *jobs;
    int njobs;
    int closing;
    lors__func_t *fn;              /* each mapping's meaning, when small reads are possible */
    unsigned turn;                 /* the replica a small read tries first (c->mu) */
};

struct lors_stream {
    lors_reader_t *r;
    int64_t next_off;              /* where a sequential read would start */
    int64_t window;                /* read-ahead, in blocks (0: not sequential) */
    int64_t ahead;                 /* blocks before this are asked for already */
    int64_t end_unit;              /* read-ahead stops before this block (lors_stream_set_end) */
    int64_t end_off;               /* the byte lors_stream_set_end named; -1: none */
};

#define MIN_JOB_AHEAD 2            /* read-ahead jobs are at least this many blocks */
#define MIN_UNIT ((int64_t)4096)   /* the smallest block that follows a checksum block */
#define QUICK_STALL_MS 2000        /* then a small read leaves the depot to the usual path */

/* A buffer kept for reuse, in its own first bytes: a block's buffer freshly mapped costs
 * the kernel a zeroed page (or huge page) at every first touch, more than the block's
 * SHA-256 on a fast machine, so dropped blocks hand their buffers to the next ones. */
typedef struct pooled {
    struct pooled *next;
    size_t len;
} pooled_t;

/* ---- the cache -------------------------------------------------------------------------- */

void lors_cache_opts_init(lors_cache_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->bytes = (int64_t)64 << 20;
    o->max_jobs = 16;
    o->timeout_ms = 30000;
}

lors_cache_t *lors_cache_new(const lors_cache_opts_t *o)
{
    lors_cache_opts_t d;
    if (!o) {
        lors_cache_opts_init(&d);
        o = &d;
    }
    if (o->bytes < 1 || o->max_jobs < 1 || o->timeout_ms < 1) {
        errno = EINVAL;
        return NULL;
    }
    lors_cache_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->nbuckets = 256;
    c->tab = calloc(c->nbuckets, sizeof *c->tab);
    ibp_client_opts_t co;
    ibp_client_opts_init(&co);
    co.io_timeout_ms = o->timeout_ms;
    co.connect_timeout_ms = o->timeout_ms < 5000 ? o->timeout_ms : 5000;
    co.server_timeout_s = o->timeout_ms / 1000 + 1;
    co.max_idle_per_depot = 32;
    c->client = ibp_client_new(&co);
    co.stall_ms = o->timeout_ms < QUICK_STALL_MS ? o->timeout_ms : QUICK_STALL_MS;
    c->quick = ibp_client_new(&co);
    if (!c->tab || !c->client || !c->quick) {
        ibp_client_free(c->client);
        ibp_client_free(c->quick);
        free(c->tab);
        free(c);
        errno = ENOMEM;
        return NULL;
    }
    c->limit = o->bytes;
    c->max_jobs = o->max_jobs;
    c->timeout_ms = o->timeout_ms;
    c->st.limit = o->bytes;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    return c;
}

static void entry_free(entry_t *e)
{
    free(e->buf);
    free(e->err);
    free(e);
}

/* A block's buffer into the pool (its bytes stay counted), or freed when the pool holds a
 * quarter of the cache already. */
static void pool_put_locked(lors_cache_t *c, unsigned char *buf, size_t len)
{
    if (len < sizeof(pooled_t) || c->pool_bytes + (int64_t)len > c->limit / 4) {
        free(buf);
        c->bytes -= (int64_t)len;
        return;
    }
    pooled_t *p = (pooled_t *)(void *)buf;
    p->len = len;
    p->next = c->pool;
    c->pool = p;
    c->pool_bytes += (int64_t)len;
}

/* An unlinked entry nothing holds any more: its buffer to the pool, the rest freed. */
static void entry_drop_locked(lors_cache_t *c, entry_t *e)
{
    pool_put_locked(c, e->buf, e->len);
    e->buf = NULL;
    entry_free(e);
}

/* A buffer of len bytes for a new block, counted: a pooled one of that size, else a new one
 * after freeing pooled ones to stay inside the bound (the caller made room for it). */
static unsigned char *buf_get_locked(lors_cache_t *c, size_t len)
{
    for (pooled_t **pp = &c->pool; *pp; pp = &(*pp)->next)
        if ((*pp)->len == len) {
            pooled_t *p = *pp;
            *pp = p->next;
            c->pool_bytes -= (int64_t)len;
            return (unsigned char *)p;
        }
    while (c->pool && c->bytes + (int64_t)len > c->limit) {
        pooled_t *p = c->pool;
        c->pool = p->next;
        c->pool_bytes -= (int64_t)p->len;
        c->bytes -= (int64_t)p->len;
        free(p);
    }
    unsigned char *b = malloc(len);
    if (b)
        c->bytes += (int64_t)len;
    return b;
}

void lors_cache_free(lors_cache_t *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->nbuckets; i++)
        for (entry_t *e = c->tab[i], *n; e; e = n) {
            n = e->hnext;
            entry_free(e);
        }
    while (c->pool) {
        pooled_t *p = c->pool;
        c->pool = p->next;
        free(p);
    }
    free(c->tab);
    ibp_client_free(c->client);
    ibp_client_free(c->quick);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

void lors_cache_stats(lors_cache_t *c, lors_cache_stats_t *st)
{
    pthread_mutex_lock(&c->mu);
    *st = c->st;
    st->bytes = c->bytes - c->pool_bytes;
    st->pooled = c->pool_bytes;
    st->jobs = c->jobs;
    pthread_mutex_unlock(&c->mu);
}

static size_t bucket(const lors_cache_t *c, uint64_t rid, int64_t unit)
{
    uint64_t h = rid * 0x9e3779b97f4a7c15ull ^ (uint64_t)unit * 0xc2b2ae3d27d4eb4full;
    return (size_t)(h ^ (h >> 29)) & (c->nbuckets - 1);
}

static entry_t *lookup_locked(lors_cache_t *c, uint64_t rid, int64_t unit)
{
    for (entry_t *e = c->tab[bucket(c, rid, unit)]; e; e = e->hnext)
        if (e->rid == rid && e->unit == unit)
            return e;
    return NULL;
}

static void lru_unlink_locked(lors_cache_t *c, entry_t *e)
{
    if (e->lprev)
        e->lprev->lnext = e->lnext;
    else if (c->lru_head == e)
        c->lru_head = e->lnext;
    if (e->lnext)
        e->lnext->lprev = e->lprev;
    else if (c->lru_tail == e)
        c->lru_tail = e->lprev;
    e->lprev = e->lnext = NULL;
}

static void lru_front_locked(lors_cache_t *c, entry_t *e)
{
    lru_unlink_locked(c, e);
    e->lnext = c->lru_head;
    if (c->lru_head)
        c->lru_head->lprev = e;
    c->lru_head = e;
    if (!c->lru_tail)
        c->lru_tail = e;
}

/* Out of the table (its bytes stay counted until it is freed). */
static void table_unlink_locked(lors_cache_t *c, entry_t *e)
{
    if (!e->linked)
        return;
    entry_t **p = &c->tab[bucket(c, e->rid, e->unit)];
    while (*p != e)
        p = &(*p)->hnext;
    *p = e->hnext;
    e->linked = 0;
    c->nentries--;
    if (e->state == READY)
        lru_unlink_locked(c, e);
}

/* Free an unlinked entry once nothing holds it. */
static void release_locked(lors_cache_t *c, entry_t *e)
{
    if (--e->pins > 0 || e->linked)
        return;
    entry_drop_locked(c, e);
}

static void grow_locked(lors_cache_t *c)
{
    if (c->nentries < c->nbuckets)
        return;
    size_t nb = c->nbuckets * 2;
    entry_t **t = calloc(nb, sizeof *t);
    if (!t)
        return; /* longer chains, still correct */
    entry_t **old = c->tab;
    size_t ob = c->nbuckets;
    c->tab = t;
    c->nbuckets = nb;
    for (size_t i = 0; i < ob; i++)
        for (entry_t *e = old[i], *n; e; e = n) {
            n = e->hnext;
            size_t b = bucket(c, e->rid, e->unit);
            e->hnext = t[b];
            t[b] = e;
        }
    free(old);
}

/* Evict loaded blocks no read holds, least recently used first, until need more bytes fit
 * (the pool's buffers count as room).  1 if they fit. */
static int make_room_locked(lors_cache_t *c, int64_t need)
{
    for (entry_t *e = c->lru_tail, *p; e && c->bytes - c->pool_bytes + need > c->limit;
         e = p) {
        p = e->lprev;
        if (e->pins)
            continue;
        table_unlink_locked(c, e);
        c->st.evictions++;
        entry_drop_locked(c, e);
    }
    return c->bytes - c->pool_bytes + need <= c->limit;
}

/* ---- jobs ------------------------------------------------------------------------------- */

/* The bytes of block u (the last one may be short). */
static int64_t unit_len(const lors_reader_t *r, int64_t u)
{
    int64_t off = u * r->unit;
    return off + r->unit <= r->size ? r->unit : r->size - off;
}

/* The engine's output: bytes in order from the job's first block on. */
static int job_put(void *arg, const void *buf, size_t len)
{
    job_t *j = arg;
    lors_cache_t *c = j->r->c;
    const unsigned char *p = buf;
    while (len > 0) {
        if (j->cur >= j->n)
            return -EFBIG; /* more than asked for: cannot happen */
        entry_t *e = j->e[j->cur];
        size_t n = e->len - e->filled < len ? e->len - e->filled : len;
        memcpy(e->buf + e->filled, p, n);
        e->filled += n;
        p += n;
        len -= n;
        if (e->filled == e->len) {
            pthread_mutex_lock(&c->mu);
            e->state = READY;
            if (e->linked)
                lru_front_locked(c, e);
            release_locked(c, e);
            j->e[j->cur++] = NULL;
            pthread_cond_broadcast(&c->cv);
            pthread_mutex_unlock(&c->mu);
        }
        if (j->stop)
            return -ECANCELED;
    }
    return 0;
}

static void *job_run(void *arg)
{
    job_t *j = arg;
    lors_reader_t *r = j->r;
    lors_cache_t *c = r->c;
    lors_download_opts_t o = r->o.dl;
    lors_dl_report_t rep;
    o.offset = j->u0 * r->unit;
    o.length = (j->u0 + j->n) * r->unit < r->size ? j->n * r->unit : r->size - o.offset;
    o.prebuffer_bytes = 0;
    o.buffer_bytes = o.length + o.blocksize; /* nothing waits for the output but the job */
    o.stop = &j->stop;
    o.client = c->client;
    int64_t blocks = (o.length + o.blocksize - 1) / o.blocksize;
    if (o.threads == 0 && blocks * o.redundancy < 16)
        o.threads = (int)(blocks * o.redundancy); /* a small job needs no more streams */
    lors__out_t out = {.fd = -1, .put = job_put, .arg = j};
    int rc = lors__download_to(&o, r->x, &out, &rep);
    /* this detached thread's OpenSSL state goes now: once it says it is done (below), the
     * program may exit before its exit handlers have run */
    OPENSSL_thread_stop();

    pthread_mutex_lock(&c->mu);
    int stopped = j->stop || rc == LORS_E_STOPPED;
    for (int64_t i = j->cur; i < j->n; i++) {
        entry_t *e = j->e[i];
        if (!e)
            continue;
        table_unlink_locked(c, e); /* the next read of it tries again */
        if (stopped || rc == LORS_OK) {
            e->state = DROPPED;
        } else {
            e->state = FAILED;
            e->rc = rc;
            e->err = strdup(rep.error[0] ? rep.error : lors_strerror(rc));
        }
        release_locked(c, e);
    }
    if (stopped)
        c->st.cancelled++;
    else if (rc != LORS_OK)
        c->st.failed++;
    c->st.fetched_bytes += (uint64_t)rep.bytes_fetched;
    job_t **p = &r->jobs;
    while (*p != j)
        p = &(*p)->next;
    *p = j->next;
    r->njobs--;
    c->jobs--;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    lors_dl_report_free(&rep);
    free(j->e);
    free(j);
    return NULL;
}

/* A job for the absent blocks from u on (at most n, stopping at one that is present): their
 * entries made (pinned by the job) and the thread started.  demand: wait for a job slot and
 * for room; else give up at once if either is lacking.  The number of blocks it covers, 0 if
 * none (read-ahead without room, or u is present), -1 with errno on failure. */
static int64_t start_job_locked(lors_reader_t *r, lors_stream_t *owner, int64_t u, int64_t n,
                                int demand)
{
    lors_cache_t *c = r->c;
    int64_t cap = c->limit / 4 / r->unit;
    if (cap < 1)
        cap = 1;
    if (n > cap)
        n = cap;
    if (u + n > r->nunits)
        n = r->nunits - u;
    int64_t k;
    for (;;) { /* counted again after a wait: others may have started some of them */
        int64_t bytes = 0;
        for (k = 0; k < n && !lookup_locked(c, r->rid, u + k); k++)
            bytes += unit_len(r, u + k);
        if (k == 0)
            return 0;
        if (c->jobs < c->max_jobs && make_room_locked(c, bytes))
            break;
        if (!demand || r->closing)
            return 0;
        pthread_cond_wait(&c->cv, &c->mu);
    }
    job_t *j = calloc(1, sizeof *j);
    entry_t **es = j ? calloc((size_t)k, sizeof *es) : NULL;
    if (!es) {
        free(j);
        errno = ENOMEM;
        return -1;
    }
    int64_t made = 0;
    for (; made < k; made++) {
        size_t l = (size_t)unit_len(r, u + made);
        entry_t *e = calloc(1, sizeof *e);
        unsigned char *b = e ? buf_get_locked(c, l) : NULL;
        if (!b) {
            free(e);
            break;
        }
        e->buf = b;
        e->len = l;
        e->rid = r->rid;
        e->unit = u + made;
        e->state = LOADING;
        e->pins = 1;
        e->linked = 1;
        grow_locked(c);
        size_t bk = bucket(c, e->rid, e->unit);
        e->hnext = c->tab[bk];
        c->tab[bk] = e;
        c->nentries++;
        es[made] = e;
    }
    if (made == 0) {
        free(es);
        free(j);
        errno = ENOMEM;
        return -1;
    }
    j->r = r;
    j->owner = owner;
    j->u0 = u;
    j->n = made;
    j->e = es;
    pthread_attr_t at;
    pthread_t tid;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    int err = pthread_create(&tid, &at, job_run, j);
    pthread_attr_destroy(&at);
    if (err != 0) {
        for (int64_t i = 0; i < made; i++) {
            table_unlink_locked(c, es[i]);
            es[i]->state = DROPPED;
            release_locked(c, es[i]);
        }
        free(es);
        free(j);
        errno = err;
        return -1;
    }
    j->next = r->jobs;
    r->jobs = j;
    r->njobs++;
    c->jobs++;
    c->st.fetches++;
    if (c->bytes > c->st.peak)
        c->st.peak = c->bytes;
    return made;
}

/* A seek: the stream's read-ahead that no read waits for is stopped. */
static void cancel_ahead_locked(lors_stream_t *s)
{
    for (job_t *j = s->r->jobs; j; j = j->next) {
        if (j->owner != s || j->stop)
            continue;
        int waited = 0;
        for (int64_t i = j->cur; i < j->n && !waited; i++)
            waited = j->e[i] && j->e[i]->pins > 1;
        if (!waited)
            j->stop = 1;
    }
}

/* ---- the reader ------------------------------------------------------------------------- */

void lors_reader_opts_init(lors_reader_opts_t *o)
{
    memset(o, 0, sizeof *o);
    lors_download_opts_init(&o->dl);
    o->readahead = (int64_t)16 << 20;
}

/* The checksum block of the first mapping that has lns_checksum digests, or 0. */
static int64_t checksum_block(const xnd_t *x)
{
    for (size_t i = 0; i < x->nmaps; i++) {
        const xnd_mapping_t *m = x->maps[i];
        int64_t bs;
        if (m->func && strcmp(m->func->name, LORS_CHECKSUM_FUNC) == 0 &&
            xnd_meta_get_int(&m->func->args, "blocksize", &bs) == XND_OK && bs > 0)
            return bs;
    }
    return 0;
}

lors_reader_t *lors_reader_open(const lors_reader_opts_t *o, const xnd_t *x, lors_cache_t *cache,
                                char *err, size_t errlen)
{
    lors_e2e_info_t ei;
    lors_ec_info_t ec;
    lors_reader_opts_t d;
    if (!o) {
        lors_reader_opts_init(&d);
        o = &d;
    }
    if (!x || o->block < 0 || o->dl.blocksize < 1 || o->dl.redundancy < 1 ||
        o->dl.threads < 0) {
        lns_err_set(err, errlen, "no exNode, or a bad block size, redundancy or thread count");
        return NULL;
    }
    if (lors_e2e_info(x, &ei, err, errlen) != LORS_OK ||
        lors_ec_info(x, &ec, err, errlen) != LORS_OK)
        return NULL;
    if (ei.present && ei.chain[0] && strstr(ei.chain, "aes") && !o->dl.key) {
        lns_err_set(err, errlen, "the file is encrypted (e2e chain \"%s\") and no key was given",
                 ei.chain);
        return NULL;
    }
    lors_reader_t *r = calloc(1, sizeof *r);
    if (!r) {
        lns_err_set(err, errlen, "out of memory");
        return NULL;
    }
    r->o = *o;
    r->x = x;
    if (ei.present)
        r->size = ei.plain_size;
    else if (ec.present)
        r->size = ec.size;
    else
        r->size = xnd_extent(x);
    /* whole frames and pieces per block: a block never fetches a unit twice */
    int64_t u = o->block ? o->block : LORS_DEFAULT_CHECKSUM_BLOCKSIZE;
    /* a plain file's blocks follow a smaller checksum block (lors_upload -E 64K): a small
     * read then fetches and checks one checksum block, not a whole MiB */
    int64_t ck = checksum_block(x);
    if (!o->block && !ei.present && !ec.present && o->dl.verify && ck >= MIN_UNIT && ck < u)
        u = ck;
    if (ei.present && ei.frame_size > u)
        u = ei.frame_size;
    if (ec.present && ec.piece_size > u)
        u = ec.piece_size;
    r->unit = u;
    r->nunits = (r->size + u - 1) / u;
    if (!ei.present && !ec.present && o->dl.verify && x->nmaps) {
        if (!(r->fn = calloc(x->nmaps, sizeof *r->fn))) {
            lns_err_set(err, errlen, "out of memory");
            free(r);
            return NULL;
        }
        for (size_t i = 0; i < x->nmaps; i++)
            lors__func_read(x, NULL, x->maps[i], &r->fn[i], NULL, 0);
        if (!lors__small_possible(x, r->fn)) {
            free(r->fn);
            r->fn = NULL;
        }
    }
    if (cache) {
        r->c = cache;
    } else {
        lors_cache_opts_t co;
        lors_cache_opts_init(&co);
        co.timeout_ms = o->dl.timeout_ms;
        if (!(r->c = lors_cache_new(&co))) {
            lns_err_set(err, errlen, "out of memory");
            free(r->fn);
            free(r);
            return NULL;
        }
        r->own_cache = 1;
    }
    if (r->unit * 4 > r->c->limit) {
        lns_err_set(err, errlen, "the cache (%lld bytes) holds fewer than 4 blocks of %lld",
                 (long long)r->c->limit, (long long)r->unit);
        if (r->own_cache)
            lors_cache_free(r->c);
        free(r->fn);
        free(r);
        return NULL;
    }
    pthread_mutex_lock(&r->c->mu);
    r->rid = ++r->c->next_rid;
    pthread_mutex_unlock(&r->c->mu);
    return r;
}

int64_t lors_reader_size(const lors_reader_t *r)
{
    return r->size;
}

void lors_reader_close(lors_reader_t *r)
{
    if (!r)
        return;
    lors_cache_t *c = r->c;
    pthread_mutex_lock(&c->mu);
    r->closing = 1;
    for (job_t *j = r->jobs; j; j = j->next)
        j->stop = 1;
    pthread_cond_broadcast(&c->cv);
    while (r->njobs > 0)
        pthread_cond_wait(&c->cv, &c->mu);
    /* its blocks leave the cache */
    for (size_t i = 0; i < c->nbuckets; i++)
        for (entry_t *e = c->tab[i], *n; e; e = n) {
            n = e->hnext;
            if (e->rid == r->rid && !e->pins) {
                table_unlink_locked(c, e);
                entry_drop_locked(c, e);
            }
        }
    pthread_mutex_unlock(&c->mu);
    if (r->own_cache)
        lors_cache_free(c);
    free(r->fn);
    free(r);
}

lors_stream_t *lors_stream_open(lors_reader_t *r)
{
    lors_stream_t *s = calloc(1, sizeof *s);
    if (s) {
        s->r = r;
        s->next_off = -1;
        s->end_unit = r->nunits;
        s->end_off = -1;
    }
    return s;
}

void lors_stream_set_end(lors_stream_t *s, int64_t end)
{
    lors_reader_t *r = s->r;
    pthread_mutex_lock(&r->c->mu);
    s->end_unit = end <= 0 ? 0 : end >= r->size ? r->nunits : (end + r->unit - 1) / r->unit;
    s->end_off = end;
    pthread_mutex_unlock(&r->c->mu);
}

void lors_stream_close(lors_stream_t *s)
{
    if (!s)
        return;
    lors_cache_t *c = s->r->c;
    pthread_mutex_lock(&c->mu);
    cancel_ahead_locked(s);
    for (job_t *j = s->r->jobs; j; j = j->next)
        if (j->owner == s)
            j->owner = NULL;
    pthread_mutex_unlock(&c->mu);
    free(s);
}

/* Follow a sequential stream: start read-ahead up to its window past block u. */
static void read_ahead_locked(lors_stream_t *s, int64_t u)
{
    lors_reader_t *r = s->r;
    if (s->window <= 0)
        return;
    int64_t want = u + 1 + s->window;
    if (want > s->end_unit)
        want = s->end_unit;
    if (s->ahead < u + 1)
        s->ahead = u + 1;
    /* in runs of at least half the window, so that each job spreads over the depots */
    int64_t min = s->window / 2 > MIN_JOB_AHEAD ? s->window / 2 : MIN_JOB_AHEAD;
    while (s->ahead < want && (want - s->ahead >= min || want == s->end_unit)) {
        entry_t *e = lookup_locked(r->c, r->rid, s->ahead);
        if (e) {
            s->ahead++;
            continue;
        }
        int64_t got = start_job_locked(r, s, s->ahead, want - s->ahead, 0);
        if (got <= 0)
            break; /* no room or no slot: later */
        s->ahead += got;
    }
}

/* A small read through an outboard (lors_small.h), for a stream that is not sequential and
 * does not mean to read far: the bytes loaded and checked without the cache's blocks, when
 * none of them is in the cache already.  1 when buf holds them; 0: the usual path.  Called
 * and returns with c->mu held, which it drops while it loads. */
static int small_read_locked(lors_stream_t *s, void *buf, size_t len, int64_t off)
{
    lors_reader_t *r = s->r;
    lors_cache_t *c = r->c;
    int64_t end = off + (int64_t)len, small = r->unit / 4;
    if (!r->fn || s->window || (int64_t)len > small ||
        (s->end_off >= 0 && s->end_off - off > small))
        return 0;
    for (int64_t u = off / r->unit; u * r->unit < end; u++)
        if (lookup_locked(c, r->rid, u))
            return 0; /* loaded or on its way: the cache is quicker */
    unsigned turn = r->turn++;
    pthread_mutex_unlock(&c->mu);
    int ok = lors__small_read(c->quick, r->x, r->fn, &turn, buf, off, len);
    pthread_mutex_lock(&c->mu);
    if (ok)
        c->st.small++;
    return ok;
}

int64_t lors_stream_pread(lors_stream_t *s, void *buf, size_t len, int64_t off, int *rcp,
                          char *err, size_t errlen)
{
    lors_reader_t *r = s->r;
    lors_cache_t *c = r->c;
    int rc = LORS_OK;
    if (rcp)
        *rcp = LORS_OK;
    if (off < 0) {
        lns_err_set(err, errlen, "a negative offset");
        if (rcp)
            *rcp = LORS_E_INVAL;
        return -1;
    }
    if (off >= r->size || len == 0)
        return 0;
    if ((int64_t)len > r->size - off)
        len = (size_t)(r->size - off);
    int64_t end = off + (int64_t)len, done = 0;

    pthread_mutex_lock(&c->mu);
    int64_t maxw = r->o.readahead > 0 ? (r->o.readahead + r->unit - 1) / r->unit : 0;
    int near = s->next_off >= 0 && off >= s->next_off - r->unit && off <= s->next_off + r->unit;
    if (near) {
        /* the window grows as the stream goes on into new blocks, not with its reads: the
         * many small reads of one block (a 1 MiB random read cut into 128 KiB by FUSE, an
         * HTTP body in 256 KiB) are no sign of more to come */
        if ((end - 1) / r->unit > (s->next_off - 1) / r->unit) {
            s->window = s->window ? s->window * 2 : 2;
            if (s->window > maxw)
                s->window = maxw;
        }
    } else if (s->next_off >= 0 || s->window) {
        cancel_ahead_locked(s);
        s->window = 0;
        s->ahead = 0;
    }
    s->next_off = end;
    if (!near && small_read_locked(s, buf, len, off)) {
        pthread_mutex_unlock(&c->mu);
        return (int64_t)len;
    }

    for (int64_t u = off / r->unit; u * r->unit < end && rc == LORS_OK; u++) {
        entry_t *e;
        int64_t uoff = u * r->unit;
        int missed = 0;
        for (;;) {
            e = lookup_locked(c, r->rid, u);
            if (e && e->state == READY)
                break;
            missed = 1;
            if (e) { /* loading: wait for it */
                e->pins++;
                while (e->state == LOADING)
                    pthread_cond_wait(&c->cv, &c->mu);
                if (e->state == FAILED) {
                    rc = e->rc;
                    lns_err_set(err, errlen, "%s", e->err ? e->err : lors_strerror(rc));
                    release_locked(c, e);
                    e = NULL;
                    break;
                }
                int ready = e->state == READY && e->linked;
                if (ready) {
                    e->pins--; /* still held by the table; stays through the copy below */
                    break;
                }
                release_locked(c, e); /* dropped (a cancelled read-ahead): fetch it anew */
                continue;
            }
            /* absent: fetch it, with what the read needs after it and, for a sequential
             * stream, its window */
            int64_t n = (end - uoff + r->unit - 1) / r->unit + s->window;
            if (u + n > s->end_unit && s->end_unit > u)
                n = s->end_unit - u;
            if (start_job_locked(r, s->window ? s : NULL, u, n, 1) < 0) {
                rc = LORS_E_NOMEM;
                lns_err_set(err, errlen, "starting a fetch: %s", strerror(errno));
                break;
            }
            if (s->window && s->ahead < u + n)
                s->ahead = u + n;
        }
        if (rc != LORS_OK || !e)
            break;
        if (missed)
            c->st.misses++;
        else
            c->st.hits++;
        lru_front_locked(c, e);
        int64_t a = off > uoff ? off : uoff;
        int64_t b = end < uoff + (int64_t)e->len ? end : uoff + (int64_t)e->len;
        e->pins++;
        pthread_mutex_unlock(&c->mu);
        memcpy((unsigned char *)buf + (a - off), e->buf + (a - uoff), (size_t)(b - a));
        pthread_mutex_lock(&c->mu);
        release_locked(c, e);
        done = b - off;
        read_ahead_locked(s, u);
    }
    pthread_mutex_unlock(&c->mu);
    if (rc != LORS_OK) {
        if (rcp)
            *rcp = rc;
        return done > 0 ? done : -1;
    }
    return done;
}

int64_t lors_reader_pread(lors_reader_t *r, void *buf, size_t len, int64_t off, int *rc,
                          char *err, size_t errlen)
{
    lors_stream_t *s = lors_stream_open(r);
    if (!s) {
        lns_err_set(err, errlen, "out of memory");
        if (rc)
            *rc = LORS_E_NOMEM;
        return -1;
    }
    int64_t n = lors_stream_pread(s, buf, len, off, rc, err, errlen);
    lors_stream_close(s);
    return n;
}
