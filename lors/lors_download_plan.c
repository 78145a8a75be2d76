/* lors_download_plan.c -- planning a download: depots, checksums, blocks and replicas.
 *
 * Blocks never straddle a mapping boundary: the range is cut at every mapping start and end,
 * and each segment on the grid of B from the start of a mapping covering it, so that blocks
 * line up with that mapping's checksum blocks (B is rounded up to the checksum block size).
 * Each block's replicas are the usable mappings that hold all of it; the longest fetch any of
 * them needs (checksum padding included) is the size of every fetch buffer (dl->bufsz).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lors_download_int.h"
#include "lors_ec_int.h"
#include "lors_report.h"
#include "lns_array.h"

static void parse_checksum(const xnd_mapping_t *m, const lors__func_t *fn, ckinfo_t *c)
{
    memset(c, 0, sizeof *c);
    if (fn->kind != LORS_FUNC_CHECKSUM)
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
    dl->fn = calloc(x->nmaps ? x->nmaps : 1, sizeof *dl->fn);
    dl->depots = calloc(x->nmaps ? x->nmaps : 1, sizeof *dl->depots);
    if (!dl->map_depot || !dl->ck || !dl->fn || !dl->depots)
        return LORS_E_NOMEM;
    for (size_t i = 0; i < x->nmaps; i++) {
        const xnd_mapping_t *m = x->maps[i];
        ibp_cap_t cap;
        dl->map_depot[i] = -1;
        lors__func_read(x, dl->ec, m, &dl->fn[i], NULL, 0);
        parse_checksum(m, &dl->fn[i], &dl->ck[i]);
        /* a mapping whose function lns does not read is never fetched (lors_func.c) */
        if (m->logical_length <= 0 || !m->cap[XND_READ] ||
            ibp_cap_parse(m->cap[XND_READ], &cap) != IBP_OK ||
            dl->fn[i].kind == LORS_FUNC_UNKNOWN || (!dl->ec && dl->fn[i].kind == LORS_FUNC_EC))
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
    dl->map_fate = calloc(x->nmaps ? x->nmaps : 1, sizeof *dl->map_fate);
    dl->dep_fate = calloc((size_t)dl->ndepots + 1, sizeof *dl->dep_fate);
    if (!dl->won_seconds || !dl->won_bytes || !dl->map_fate || !dl->dep_fate) {
        dl->ndepots = 0; /* the report then gives no depot's figures from these */
        return LORS_E_NOMEM;
    }
    return LORS_OK;
}

typedef struct span {
    int64_t a, b;
} span_t;

static int cmp_span(const void *p, const void *q)
{
    int64_t x = ((const span_t *)p)->a, y = ((const span_t *)q)->a;
    return (x > y) - (x < y);
}

/* The first bytes of [off, end) that no usable mapping holds, as [*ga, *gb): 1, or 0 when
 * every byte is held (-1: out of memory).  Checked before a single block is planned, so an
 * exNode that claims a size of 8 EiB with one small mapping fails at once instead of
 * planning 2^43 blocks. */
static int first_gap(const dl_t *dl, int64_t off, int64_t end, int64_t *ga, int64_t *gb)
{
    const xnd_t *x = dl->x;
    span_t *v = malloc((x->nmaps ? x->nmaps : 1) * sizeof *v);
    size_t n = 0;
    if (!v)
        return -1;
    for (size_t k = 0; k < x->nmaps; k++) {
        int64_t a = x->maps[k]->exnode_offset, b = a + x->maps[k]->logical_length;
        if (dl->map_depot[k] >= 0 && b > off && a < end)
            v[n++] = (span_t){a, b};
    }
    qsort(v, n, sizeof *v, cmp_span);
    int64_t pos = off;
    int gap = 0;
    for (size_t i = 0; i < n && !gap; i++) {
        if (v[i].a > pos) {
            *ga = pos;
            *gb = v[i].a < end ? v[i].a : end;
            gap = 1;
        } else if (v[i].b > pos) {
            pos = v[i].b;
        }
    }
    if (!gap && pos < end) {
        *ga = pos;
        *gb = end;
        gap = 1;
    }
    free(v);
    return gap;
}

/* 1 if some mapping of x, usable or not, holds a byte of [a, b). */
static int held_at_all(const xnd_t *x, int64_t a, int64_t b)
{
    for (size_t k = 0; k < x->nmaps; k++) {
        const xnd_mapping_t *m = x->maps[k];
        if (m->logical_length > 0 && m->exnode_offset < b &&
            m->exnode_offset + m->logical_length > a)
            return 1;
    }
    return 0;
}

/* The first mapping holding a byte of [a, b) whose function lns does not read, with why;
 * -1 if none does. */
static long refused_in(const dl_t *dl, int64_t a, int64_t b, char *why, size_t whylen)
{
    const xnd_t *x = dl->x;
    for (size_t k = 0; k < x->nmaps; k++) {
        const xnd_mapping_t *m = x->maps[k];
        if (m->logical_length > 0 && m->exnode_offset < b &&
            m->exnode_offset + m->logical_length > a && dl->fn[k].kind == LORS_FUNC_UNKNOWN) {
            lors__func_t f;
            lors__func_read(x, dl->ec, m, &f, why, whylen);
            return (long)k;
        }
    }
    return -1;
}

/* Refuse, before any block is planned, a range that cannot be served or planned: bytes that
 * only mappings lns cannot read hold are LORS_E_EXNODE, naming the first such mapping and its
 * function. */
static int plan_check(dl_t *dl, int64_t off, int64_t len)
{
    int64_t ga, gb;
    int gap = first_gap(dl, off, off + len, &ga, &gb);
    if (gap < 0)
        return LORS_E_NOMEM;
    char why[256];
    long refused = gap ? refused_in(dl, ga, gb, why, sizeof why) : -1;
    if (refused >= 0) {
        if (dl->rep) {
            dl->rep->missing_off = ga;
            dl->rep->missing_len = gb - ga;
            lors__report_error(dl->rep, "bytes %lld-%lld: mapping %ld: %s", (long long)ga,
                               (long long)(gb - 1), refused, why);
        }
        return LORS_E_EXNODE;
    }
    if (gap) {
        if (dl->rep) {
            dl->rep->missing_off = ga;
            dl->rep->missing_len = gb - ga;
            lors__report_error(dl->rep, "bytes %lld-%lld: %s", (long long)ga, (long long)(gb - 1),
                               held_at_all(dl->x, ga, gb)
                                   ? "no mapping holds them with a usable read capability"
                                   : "no mapping holds them");
        }
        return LORS_E_NO_REPLICA;
    }
    /* blocks: at most one per B bytes of each segment between mapping boundaries */
    uint64_t most = (uint64_t)(len / dl->B) + 2 * (uint64_t)dl->x->nmaps + 1;
    if (most > LORS_DL_MAX_BLOCKS) {
        if (dl->rep)
            lors__report_error(dl->rep, "bytes %lld-%lld: about %llu blocks of %lld bytes, more "
                               "than the %u one download plans; use a larger block size or a "
                               "smaller range", (long long)off, (long long)(off + len - 1),
                               (unsigned long long)most, (long long)dl->B,
                               LORS_DL_MAX_BLOCKS);
        return LORS_E_INVAL;
    }
    return LORS_OK;
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
        if (lns_grow(&dl->blocks, cap, dl->nblocks + 1, sizeof *dl->blocks, 64) < 0)
            return LORS_E_NOMEM;
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

/* The bytes of the file a fetch of block b from mapping k loads: the block, widened to whole
 * checksum blocks of the mapping when it is verified, or to whole blocks of its 1.3.1 chain,
 * which decode only as a whole. */
static void fetch_range(const dl_t *dl, uint32_t b, int k, int64_t *fa, int64_t *fb)
{
    const xnd_mapping_t *m = dl->x->maps[k];
    const ckinfo_t *c = &dl->ck[k];
    int64_t a = dl->blocks[b].off, e = a + dl->blocks[b].len, bs;
    *fa = a;
    *fb = e;
    if (dl->fn[k].kind == LORS_FUNC_LORS131)
        bs = dl->fn[k].loci.ebs;
    else if (dl->o->verify && c->ok)
        bs = c->bs;
    else
        return;
    int64_t mo = m->exnode_offset, me = mo + m->logical_length;
    *fa = mo + (a - mo) / bs * bs;
    *fb = mo + (e - mo + bs - 1) / bs * bs;
    if (*fb > me)
        *fb = me;
}

void lors__dl_fetch_at(const dl_t *dl, uint32_t b, int k, fetch_at_t *at)
{
    const xnd_mapping_t *m = dl->x->maps[k];
    memset(at, 0, sizeof *at);
    if (dl->ec) {
        const lors__ec_col_t *c = &dl->ecol[k];
        int64_t s = dl->ec_s0 + b / (uint32_t)dl->ec->k;
        at->aoff = lors__ec_alloc_off(dl->ec, m, c, s);
        at->len = (size_t)lors__ec_piece_len(dl->ec, s);
        at->ck_first = (size_t)(s - c->first);
        at->data_off = 0;
        at->fa = dl->blocks[b].off;
        at->plain = at->len;
        return;
    }
    int64_t fa, fb;
    fetch_range(dl, b, k, &fa, &fb);
    at->aoff = m->alloc_offset + (fa - m->exnode_offset);
    at->len = (size_t)(fb - fa);
    at->ck_first = dl->ck[k].ok ? (size_t)((fa - m->exnode_offset) / dl->ck[k].bs) : 0;
    at->data_off = (size_t)(dl->blocks[b].off - fa);
    at->fa = fa;
    at->plain = at->len;
    if (dl->fn[k].kind == LORS_FUNC_LORS131) {
        const lors__loci_t *l = &dl->fn[k].loci;
        int64_t sl;
        at->loci = l;
        at->b0 = (fa - m->exnode_offset) / l->ebs;
        at->b1 = (fb - m->exnode_offset + l->ebs - 1) / l->ebs;
        lors__loci_stored(l, at->b0, at->b1, &at->aoff, &sl);
        at->len = (size_t)sl;
        at->plain = (size_t)(fb - fa);
    }
}

/* Automatic stream count (-t 0, the default): a depot starts with its share of AUTO_BASE
 * streams, at least 2, and may grow to its cap where its latency leaves the link idle between fetches
 * (lors_sched: depot_min; docs/scheduler.md, "Streams per depot"), so every depot's cap must
 * have a stream: ndepots x cap of them, at most AUTO_MAX.  Idle streams cost a sleeping
 * thread.  A -t given by the user is used as it is, with the cap fixed. */
#define AUTO_BASE 8
#define AUTO_MAX 64

int lors__dl_streams(const lors_download_opts_t *o, int ndepots)
{
    if (o->threads > 0)
        return o->threads;
    int64_t n = (int64_t)(ndepots > 0 ? ndepots : 1) * o->depot_cap;
    return n < AUTO_MAX ? (int)n : AUTO_MAX;
}

static int auto_depot_min(const lors_download_opts_t *o, int ndepots)
{
    if (o->threads > 0)
        return 0;
    int n = ndepots > 0 ? ndepots : 1, k = (AUTO_BASE + n - 1) / n;
    return k > 2 ? k : 2; /* no depot is ever given fewer than 2 (lors_sched: LAT_STREAMS_MIN) */
}

int lors__dl_sched_new(dl_t *dl)
{
    const lors_download_opts_t *o = dl->o;
    lors_sched_cfg_t cfg;
    lors_sched_cfg_init(&cfg);
    cfg.off = 0;
    cfg.len = (uint64_t)dl->nblocks * (uint64_t)dl->B;
    cfg.block_size = (uint64_t)dl->B;
    cfg.ndepots = dl->ndepots > 0 ? dl->ndepots : 1;
    cfg.depot_cap = o->depot_cap;
    cfg.depot_min = auto_depot_min(o, cfg.ndepots);
    cfg.redundancy = o->redundancy;
    cfg.progress = o->progress;
    cfg.buffer_bytes = (uint64_t)o->buffer_bytes;
    /* pre-buffer in whole virtual blocks, rounded up */
    cfg.prebuffer_bytes = (uint64_t)((o->prebuffer_bytes + dl->B - 1) / dl->B) * (uint64_t)dl->B;
    cfg.fail_limit = o->fail_limit;
    cfg.dead_retry_ns = 0;
    cfg.stall_ns = (uint64_t)o->stall_ms * 1000000ull;
    cfg.any_order = dl->in_place;
    if (dl->ec && cfg.buffer_bytes) {
        /* the writer holds a stripe's k blocks until all are done: room for two stripes */
        uint64_t least = 2 * (uint64_t)dl->ec->k * (uint64_t)dl->B;
        if (cfg.buffer_bytes < least)
            cfg.buffer_bytes = least;
    }
    dl->s = lors_sched_new(&cfg);
    if (!dl->s)
        return errno == ENOMEM ? LORS_E_NOMEM : LORS_E_INVAL;
    return LORS_OK;
}

static int plan_sched(dl_t *dl)
{
    int rc = lors__dl_sched_new(dl);
    if (rc != LORS_OK)
        return rc;
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
            fetch_at_t at;
            lors__dl_fetch_at(dl, b, (int)k, &at);
            if (at.len > dl->bufsz)
                dl->bufsz = at.len;
            if (at.plain > dl->bufsz) /* a 1.3.1 chain decodes in its buffer */
                dl->bufsz = at.plain;
        }
    }
    return LORS_OK;
}

/* The block size: the asked one rounded up to a multiple of the checksum block size (of the
 * first mapping that has one, or the first 1.3.1 chain's block), so that blocks line up with
 * checksum blocks; and at least every 1.3.1 mapping that decodes only whole (zlib), so that
 * it is fetched once, not once per block. */
static int64_t round_blocksize(const dl_t *dl)
{
    int64_t B = dl->o->blocksize, c = 0;
    for (size_t i = 0; i < dl->x->nmaps; i++) {
        const lors__func_t *f = &dl->fn[i];
        if (f->kind == LORS_FUNC_LORS131 && f->loci.whole && f->loci.ebs > B)
            B = f->loci.ebs;
        if (!c && dl->o->verify && dl->ck[i].ok)
            c = dl->ck[i].bs;
        if (!c && f->kind == LORS_FUNC_LORS131 && !f->loci.whole)
            c = f->loci.ebs;
    }
    return c ? (B + c - 1) / c * c : B;
}

int lors__dl_plan(dl_t *dl, int64_t off, int64_t len)
{
    int rc = plan_depots(dl);
    if (rc != LORS_OK || len <= 0)
        return rc;
    if (dl->ec)
        return lors__dl_plan_ec(dl, off, len);
    dl->B = round_blocksize(dl);
    if ((rc = plan_check(dl, off, len)) != LORS_OK)
        return rc;
    rc = plan_blocks(dl, off, off + len);
    if (rc == LORS_OK)
        rc = plan_sched(dl);
    return rc;
}
