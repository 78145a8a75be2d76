/* lors_sched_ahead.c -- lookahead: which block a stream on a slow or idle depot fetches.
 *
 * The decision core (lors_sched.c) finds the lowest pending block and its best replica; this
 * file decides whether the stream should rather go to an idle depot, and whether a slow depot
 * should fetch a block the writer needs later, so that it arrives in time instead of being
 * fetched again from a fast depot (docs/scheduler.md, "Lookahead").  Pure and deterministic
 * like the rest: the rates are the scheduler's estimates, no clock is read.  Internal to liblors.
 */
#include "lors_sched_int.h"

#include <math.h>

/* Lookahead: how far past the point the writer will have reached a slow fetch's block goes
 * (its expected duration x this), so that normal jitter does not make it late; and how many
 * pending blocks past that point are examined for one the depot holds. */
#define LOOKAHEAD_SAFETY 1.5
#define LOOKAHEAD_TRIES 64

/* d's replica of b eligible in b's round, or NONE. */
static uint32_t rep_on(const lors_sched_t *s, uint32_t b, int d)
{
    const blk_t *bk = &s->blk[b];
    for (uint32_t r = bk->rep_head; r != NONE; r = s->rep[r].next)
        if (s->rep[r].depot == d && lors__sched_rep_in_round(s, bk, &s->rep[r]))
            return r;
    return NONE;
}

/* A block for a fetch of t_ns on depot d that arrives about when the writer needs it: the
 * lowest pending block d holds at or after first hole + (the blocks the download fetches in
 * t_ns x LOOKAHEAD_SAFETY) + the blocks past the hole already done (the writer passes those at
 * once), and after `from`.  That distance is at most 3/4 of the reorder buffer (the blocks
 * below it must fit too) and is clamped there; if it exceeds twice that, the depot is too
 * slow to be of use (a straggler): NONE, unless clamp.  O(log n) per block examined, at most
 * LOOKAHEAD_TRIES of them. */
static uint32_t lookahead_block(const lors_sched_t *s, int d, double t_ns, double agg,
                                uint32_t from, int clamp, uint32_t *orep)
{
    double bs = (double)s->cfg.block_size;
    double k = ceil(agg * t_ns / 1e9 * LOOKAHEAD_SAFETY / bs) + lors__sched_done_ahead(s);
    double maxk = s->cfg.buffer_bytes ? (double)(s->cfg.buffer_bytes / s->cfg.block_size * 3 / 4)
                                      : (double)s->nblocks;
    if (k > 2 * maxk && !clamp)
        return NONE;
    if (k > maxk)
        k = maxk;
    uint64_t target = (uint64_t)s->first_hole + (uint64_t)k;
    if (target < from)
        target = from;
    if (target >= s->nblocks)
        return NONE;
    uint32_t b = lors__sched_bits_next(&s->pending, (uint32_t)target);
    for (int i = 0; b != NONE && i < LOOKAHEAD_TRIES; i++) {
        uint32_t r = rep_on(s, b, d);
        if (r != NONE && !lors__sched_buffer_full(s, b)) {
            *orep = r;
            return b;
        }
        b = b + 1 < s->nblocks ? lors__sched_bits_next(&s->pending, b + 1) : NONE;
    }
    return NONE;
}

/* Given the lowest pending block *b and the best replica *r for it, decide whether the stream
 * should rather fetch a later block (lookahead).  Adding a stream to a depot whose link is
 * already busy adds little; adding one to an idle depot adds its whole rate, but if that depot
 * is slow, its block arrives late and is fetched again elsewhere (wasted).  So:
 *  (1) an idle depot with a known rate takes the stream: the lowest pending block if it can
 *      deliver it about as soon as the best replica would, else a block far enough ahead that
 *      its fetch ends about when the writer needs it (lookahead_block);
 *  (2) if the chosen depot is slow (chosen because the fast ones are at their cap: its fetch
 *      would end later than a fast depot could fetch the block after its current one), it
 *      fetches a block ahead instead, and the lowest block waits for a fast depot.
 * The lowest block stays pending, so it is the next stream's; nothing happens before a rate
 * is known. */
void lors__sched_lookahead(const lors_sched_t *s, uint32_t *b, uint32_t *r)
{
    double agg = lors__sched_aggregate_bps(s), best = lors__sched_best_known_bps(s);
    if (agg <= 0)
        return;
    double len = (double)s->cfg.block_size;
    uint32_t b0 = *b, ri, lb;
    int d0 = s->rep[*r].depot, di = -1;
    double t0 = len / lors__sched_new_fetch_bps(s, d0, best) * 1e9;
    double need0 = lors__sched_need_ns(s, b0, agg);

    for (int d = 0; d < s->cfg.ndepots; d++) {
        const depot_t *dp = &s->dep[d];
        if (d != d0 && !dp->dead && !dp->mute && dp->known && dp->st.active == 0 && dp->cap > 0 &&
            dp->bps > 0 && (di < 0 || dp->bps > s->dep[di].bps))
            di = d;
    }
    if (di >= 0) {
        double ti = len / lors__sched_new_fetch_bps(s, di, best) * 1e9;
        if (ti <= need0 + t0 && (ri = rep_on(s, b0, di)) != NONE) {
            *r = ri;
            return;
        }
        if ((lb = lookahead_block(s, di, ti, agg, b0 + 1, 0, &ri)) != NONE) {
            *b = lb;
            *r = ri;
            return;
        }
    }
    double tf = HUGE_VAL;
    for (int d = 0; d < s->cfg.ndepots; d++) {
        const depot_t *dp = &s->dep[d];
        if (!dp->dead && !dp->mute && dp->known && dp->fetch_bps > 0 &&
            len / dp->fetch_bps * 1e9 < tf)
            tf = len / dp->fetch_bps * 1e9;
    }
    if (t0 > need0 + 2 * tf && (lb = lookahead_block(s, d0, t0, agg, b0 + 1, 1, &ri)) != NONE) {
        *b = lb;
        *r = ri;
    }
}
