/* lors_sched_setup.c -- building the scheduler's state (blocks, replicas, depots) and
 * reporting on it.  The decisions themselves are in lors_sched.c; the invariants are stated
 * there. */
#include "lors_sched_int.h"
#include "lns_array.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- setup and reporting ---------------------------------------------------------------- */

void lors_sched_cfg_init(lors_sched_cfg_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->block_size = 5u << 20;
    cfg->ndepots = 1;
    cfg->depot_cap = 4;
    cfg->redundancy = 2;
    cfg->progress = 3;
    cfg->fail_limit = 3;
    cfg->dead_retry_ns = 30ull * 1000000000ull;
    cfg->stall_ns = 10ull * 1000000000ull;
    cfg->silent_ns = 1000000000ull;
    cfg->ewma_alpha = 0.3;
    cfg->endgame = 1;
}

lors_sched_t *lors_sched_new(const lors_sched_cfg_t *cfg)
{
    if (!cfg || cfg->len == 0 || cfg->block_size == 0 || cfg->ndepots <= 0 ||
        cfg->depot_cap <= 0 || cfg->depot_min < 0 || cfg->redundancy < 1 || cfg->redundancy > LORS_SCHED_MAX_R ||
        cfg->progress < 0 || cfg->fail_limit < 0 || !(cfg->ewma_alpha > 0) ||
        cfg->ewma_alpha > 1 || cfg->off + cfg->len < cfg->off ||
        (cfg->len - 1) / cfg->block_size + 1 >= NONE) {
        errno = EINVAL;
        return NULL;
    }
    lors_sched_t *s = calloc(1, sizeof *s);
    if (!s)
        goto oom;
    s->cfg = *cfg;
    s->nblocks = (uint32_t)((cfg->len - 1) / cfg->block_size + 1);
    s->blk = malloc(s->nblocks * sizeof *s->blk);
    s->dep = calloc((size_t)cfg->ndepots, sizeof *s->dep);
    if (!s->blk || !s->dep)
        goto oom;
    if (lors__sched_bits_init(&s->pending, s->nblocks) < 0 ||
        (cfg->any_order && lors__sched_bits_init(&s->done, s->nblocks) < 0))
        goto oom;
    for (uint32_t b = 0; b < s->nblocks; b++) {
        s->blk[b] = (blk_t){NONE, NONE, NONE, ST_PENDING, 1};
        lors__sched_bits_set(&s->pending, b);
    }
    for (int d = 0; d < cfg->ndepots; d++)
        s->dep[d].cap = s->dep[d].cap_max = cfg->depot_cap;
    lors__sched_rates(s, 0);
    s->npending = s->nblocks;
    s->free_fx = NONE;
    s->failed_min = NONE;
    s->prebuffer = cfg->any_order ? 0 : cfg->prebuffer_bytes;
    if (cfg->buffer_bytes) {
        uint64_t whole = cfg->buffer_bytes / cfg->block_size * cfg->block_size;
        if (s->prebuffer > whole)
            s->prebuffer = whole;
    }
    s->tot.blocks = s->nblocks;
    return s;
oom:
    lors_sched_free(s);
    errno = ENOMEM;
    return NULL;
}

void lors_sched_free(lors_sched_t *s)
{
    if (!s)
        return;
    if (s->dep)
        for (int d = 0; d < s->cfg.ndepots; d++)
            free(s->dep[d].pend.v);
    free(s->dep);
    free(s->blk);
    free(s->rep);
    free(s->fx);
    free(s->fly);
    lors__sched_bits_free(&s->pending);
    lors__sched_bits_free(&s->done);
    lors__sched_classes_free(s);
    free(s);
}

uint32_t lors_sched_nblocks(const lors_sched_t *s)
{
    return s->nblocks;
}

int lors_sched_block_range(const lors_sched_t *s, uint32_t b, uint64_t *off, uint64_t *len)
{
    if (b >= s->nblocks)
        return LORS_SCHED_E_INVAL;
    *off = lors__sched_blk_off(s, b);
    *len = lors__sched_blk_len(s, b);
    return 0;
}

int lors_sched_add_replica(lors_sched_t *s, uint32_t b, int depot, int mapping, int usable)
{
    if (s->started || b >= s->nblocks || depot < 0 || depot >= s->cfg.ndepots)
        return LORS_SCHED_E_INVAL;
    if (lns_grow(&s->rep, &s->caprep, s->nrep + 1, sizeof *s->rep, 1024) < 0)
        return LORS_SCHED_E_NOMEM;
    if (s->nrep >= NONE)
        return LORS_SCHED_E_NOMEM;
    uint32_t r = (uint32_t)s->nrep++;
    s->rep[r] = (rep_t){NONE, depot, mapping, usable != 0, 0, 0, 0};
    blk_t *bk = &s->blk[b];
    if (bk->rep_tail == NONE)
        bk->rep_head = r;
    else
        s->rep[bk->rep_tail].next = r;
    bk->rep_tail = r;
    if (usable && lors__sched_heap_push(&s->dep[depot].pend, b) < 0)
        return LORS_SCHED_E_NOMEM;
    return 0;
}

int lors_sched_depot_cap(lors_sched_t *s, int depot, int cap)
{
    if (depot < 0 || depot >= s->cfg.ndepots || cap < 1)
        return LORS_SCHED_E_INVAL;
    s->dep[depot].cap = s->dep[depot].cap_max = cap;
    lors__sched_rates(s, 0);
    return 0;
}

int lors_sched_depot_dead(lors_sched_t *s, int depot, int dead, uint64_t retry_at)
{
    if (depot < 0 || depot >= s->cfg.ndepots)
        return LORS_SCHED_E_INVAL;
    depot_t *dp = &s->dep[depot];
    dp->dead = dead != 0;
    dp->retry_at = dead ? retry_at : 0;
    dp->consec = 0;
    if (lors__sched_perm_dead(dp) && s->started)
        lors__sched_scan_failed(s);
    return 0;
}

int lors_sched_depot_stats(const lors_sched_t *s, int depot, lors_sched_depot_stats_t *st)
{
    if (depot < 0 || depot >= s->cfg.ndepots)
        return LORS_SCHED_E_INVAL;
    *st = s->dep[depot].st;
    st->dead = s->dep[depot].dead;
    st->bps = s->dep[depot].bps;
    return 0;
}

void lors_sched_totals(const lors_sched_t *s, lors_sched_totals_t *t)
{
    *t = s->tot;
}
