/* lors_sched.c -- the download scheduler's decision core (see lors_sched.h, docs/scheduler.md).
 *
 * Three ideas make every decision cheap:
 *  - Each depot keeps a min-heap of the pending blocks it holds a replica of.  Entries are
 *    removed lazily: the top is checked (block still pending, replica here still eligible)
 *    and dropped if not; a block that becomes pending again is pushed again.  The lowest
 *    startable block is the least top over the depots that are alive and below their cap.
 *  - Blocks in flight live in a small dense array (fly_t, at most one per fetch), so the
 *    redundancy scan, the "completed ahead" bump and stall detection are O(in flight).
 *  - The pending blocks are also kept in a bitmap tree (lors_sched_bits.c), so that lookahead
 *    (lors_sched_ahead.c) finds "the lowest pending block at or after k" in O(log n).
 *
 * Redundancy is the one decision that can waste bandwidth, so it has three gates: a block must
 * be late relative to the fetches in flight (redundancy_step), not on schedule for the writer
 * (on_schedule: a slow lookahead fetch is left alone), and the extra fetch must be expected to
 * save more time than it costs (rescue_pays).  lors_sched_has_work asks the same
 * decision (decide) without acting on it.
 *
 * Invariants: a block is in exactly one state; a block is in flight iff it has a fly_t entry
 * with 1..R fetches; buffered = bytes of blocks in flight or done and not released, and stays
 * within cfg.buffer_bytes except by the writer's own block in one corner case (buffer_full).
 */
#include "lors_sched_int.h"
#include "lns_array.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- small helpers ---------------------------------------------------------------------- */

uint64_t lors__sched_blk_off(const lors_sched_t *s, uint32_t b)
{
    return s->cfg.off + (uint64_t)b * s->cfg.block_size;
}

uint64_t lors__sched_blk_len(const lors_sched_t *s, uint32_t b)
{
    uint64_t o = lors__sched_blk_off(s, b), end = s->cfg.off + s->cfg.len;
    return end - o < s->cfg.block_size ? end - o : s->cfg.block_size;
}

int lors__sched_heap_push(heap_t *h, uint32_t x)
{
    if (lns_grow(&h->v, &h->cap, h->n + 1, sizeof *h->v, 16) < 0)
        return -1;
    size_t i = h->n++;
    while (i > 0 && h->v[(i - 1) / 2] > x) {
        h->v[i] = h->v[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->v[i] = x;
    return 0;
}

static void heap_pop(heap_t *h)
{
    uint32_t x = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && h->v[c + 1] < h->v[c])
            c++;
        if (h->v[c] >= x)
            break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n)
        h->v[i] = x;
}

int lors__sched_perm_dead(const depot_t *d)
{
    return d->dead && d->retry_at == 0;
}

/* Could this replica ever be fetched again? */
static int rep_possible(const lors_sched_t *s, const rep_t *r)
{
    return r->usable && !r->bad && r->tries < MAX_TRIES &&
           !lors__sched_perm_dead(&s->dep[r->depot]);
}

/* Eligible in the block's current round, ignoring the depot's state. */
int lors__sched_rep_in_round(const lors_sched_t *s, const blk_t *bk, const rep_t *r)
{
    return r->usable && !r->bad && !r->held && r->tries < bk->round;
}

static int blk_viable(const lors_sched_t *s, uint32_t b)
{
    for (uint32_t r = s->blk[b].rep_head; r != NONE; r = s->rep[r].next)
        if (rep_possible(s, &s->rep[r]))
            return 1;
    return 0;
}

static void mark_failed(lors_sched_t *s, uint32_t b)
{
    if (s->blk[b].state == ST_PENDING) {
        s->npending--;
        lors__sched_class_pend(s, b, -1);
        lors__sched_bits_clear(&s->pending, b);
    }
    s->blk[b].state = ST_FAILED;
    s->tot.failed++;
    if (s->failed_min == NONE || b < s->failed_min)
        s->failed_min = b;
}

/* Pending blocks that no replica can serve any more.  O(blocks): only at start and when a
 * depot dies for good. */
void lors__sched_scan_failed(lors_sched_t *s)
{
    for (uint32_t b = s->first_hole; b < s->nblocks; b++)
        if (s->blk[b].state == ST_PENDING && !blk_viable(s, b))
            mark_failed(s, b);
}

/* Push b on the heap of every depot holding a replica eligible in its round.  A duplicate
 * entry is harmless: the lazy check drops it. */
static int push_pending(lors_sched_t *s, uint32_t b)
{
    blk_t *bk = &s->blk[b];
    for (uint32_t r = bk->rep_head; r != NONE; r = s->rep[r].next)
        if (lors__sched_rep_in_round(s, bk, &s->rep[r]) &&
            lors__sched_heap_push(&s->dep[s->rep[r].depot].pend, b) < 0)
            return -1;
    return lors__sched_class_push(s, b);
}

/* All replicas on live depots tried in this round: open the next round. */
static void maybe_next_round(lors_sched_t *s, uint32_t b)
{
    blk_t *bk = &s->blk[b];
    if (bk->round >= MAX_TRIES)
        return;
    for (uint32_t r = bk->rep_head; r != NONE; r = s->rep[r].next) {
        const rep_t *rp = &s->rep[r];
        if (lors__sched_rep_in_round(s, bk, rp) && !s->dep[rp->depot].dead)
            return;
    }
    bk->round++;
}

/* Two estimates per depot.  The aggregate rate (one fetch's rate times the fetches sharing
 * the depot now) ranks replicas, as if the depot were the bottleneck.  One fetch's own rate
 * is what a new fetch can expect when the bottleneck is shared by every depot (the client's
 * link or CPU): it keeps redundant fetches honest (rescue_pays).  Decisions read them through
 * lors__sched_rates, which may lower them. */
static void ewma_update(const lors_sched_t *s, depot_t *dp, uint64_t bytes, uint64_t ns)
{
    double a = s->cfg.ewma_alpha, one = (double)bytes / ((double)(ns ? ns : 1) / 1e9);
    double sample = one * dp->st.active;
    dp->ewma_bps = dp->known ? a * sample + (1 - a) * dp->ewma_bps : sample;
    dp->ewma_fetch = dp->known ? a * one + (1 - a) * dp->ewma_fetch : one;
    dp->known = 1;
}

/* Streams per depot, from the depot's latency L and aggregate rate C (block B): if no fetch's
 * data overlapped another's round trip, k streams would keep the link busy a fraction
 * kB/C / (L + kB/C) of the time; for LAT_UTIL of it, k >= LAT_UTIL / (1 - LAT_UTIL) x L C / B.
 * Never fewer than LAT_STREAMS_MIN (one fetch's request overlapping another's data).  On a LAN
 * that is 2; behind 100 ms at 25 Mbit/s with 1 MiB blocks it is 3. */
#define LAT_UTIL 0.9
#define LAT_STREAMS_MIN 2
/* A depot this far away (least reply latency) whose rate is not known yet gets its cap at
 * once: the first completion takes several round trips, and the rule above would keep it at
 * depot_min until then. */
#define LAT_WAN_NS 10000000ull

/* The rates decisions use, and each depot's fetch allowance, as of now.
 *
 * A fetch in flight for `age` has delivered less than its block, so it runs at under
 * block / age: an upper bound that needs no progress report.  The depot's aggregate rate is at
 * most the sum of that bound over its fetches in flight, and one fetch's rate at most their
 * mean.  Young fetches bound nothing; a depot whose link collapsed (a straggler) is caught as
 * soon as its fetches are older than they should be, long before one of them ends and gives
 * the EWMA a sample.  Without it the depot keeps its old, fast estimate and keeps getting
 * blocks it will not deliver.
 *
 * With cfg.depot_min set, a depot with a measured latency (lat_ns: the least time from a
 * fetch's start to the depot's reply, so the round trip without queueing) and rate is allowed
 * the streams that keep its link busy (above), within [depot_min, cap_max]: more where the
 * round trip would leave the link idle between one fetch and the next. */
void lors__sched_rates(lors_sched_t *s, uint64_t now)
{
    int D = s->cfg.ndepots;
    double bs = (double)s->cfg.block_size;
    for (int d = 0; d < D; d++) {
        depot_t *dp = &s->dep[d];
        dp->bps = dp->ewma_bps;
        dp->fetch_bps = dp->ewma_fetch;
        dp->cut = 0;
        dp->cut_n = 0;
        dp->shown = 0;
        dp->owed = 0;
    }
    for (uint32_t i = 0; i < s->nfly; i++)
        for (int k = 0; k < s->fly[i].n; k++) {
            const fetch_t *f = &s->fx[s->fly[i].f[k]];
            depot_t *dp = &s->dep[f->depot];
            dp->owed += (double)(lors__sched_blk_len(s, f->block) - f->bytes);
            if (f->bytes > f->base && now > f->start + dp->lat_ns)
                dp->shown += (double)(f->bytes - f->base) /
                             ((double)(now - f->start - dp->lat_ns) / 1e9);
            if (dp->cut_n < 0)
                continue;
            if (now <= f->start) {
                dp->cut_n = -1; /* just started: bounds nothing */
                continue;
            }
            dp->cut += (double)(lors__sched_blk_len(s, f->block) - f->base) /
                       ((double)(now - f->start) / 1e9);
            dp->cut_n++;
        }
    for (int d = 0; d < D; d++) {
        depot_t *dp = &s->dep[d];
        if (dp->known && dp->cut_n > 0) {
            if (dp->cut < dp->bps)
                dp->bps = dp->cut;
            if (dp->cut / dp->cut_n < dp->fetch_bps)
                dp->fetch_bps = dp->cut / dp->cut_n;
        }
        int want = dp->cap_max, lo = s->cfg.depot_min;
        if (lo > 0 && lo < dp->cap_max) {
            want = lo;
            if (dp->lat_ns >= LAT_WAN_NS && !dp->known)
                want = dp->cap_max; /* far, rate unknown: assumed fast, as in choose_replica */
            else if (dp->lat_ns && dp->known) {
                double k = ceil(LAT_UTIL / (1 - LAT_UTIL) * (double)dp->lat_ns / 1e9 *
                                dp->ewma_bps / bs);
                if (k < LAT_STREAMS_MIN)
                    k = LAT_STREAMS_MIN;
                if (k > want)
                    want = k < dp->cap_max ? (int)k : dp->cap_max;
            }
        }
        dp->cap = want;
    }
}

/* A fetch on dp of a block of len bytes ends after ns, having received bytes of it (all, if it
 * won).  Normally a sample for the EWMAs.  But a fetch that ends overdue (older than twice what
 * the depot's per-fetch estimate expects) says the depot's rate has fallen, and a blend would
 * keep most of the old figure: each rescue of a straggler's fetch would shave only alpha off
 * its estimate, and it would keep getting blocks.  So then the bound the fetch proves, len/ns
 * (exact for a winner; for a loser it had not finished), caps the estimates instead.
 * "Overdue" is OVERDUE times the expected duration: more fetches sharing a depot, or jitter,
 * stretch a fetch by less; a link that collapsed, by far more. */
#define OVERDUE 4.0
static void rate_sample(const lors_sched_t *s, depot_t *dp, uint64_t bytes, uint64_t len,
                        uint64_t ns)
{
    if (!len) /* a resumed fetch that had all its bytes: nothing of the depot's */
        return;
    double secs = (double)(ns ? ns : 1) / 1e9, bound = (double)len / secs;
    if (dp->known && dp->ewma_fetch > 0 && secs > OVERDUE * (double)len / dp->ewma_fetch) {
        if (bound < dp->ewma_fetch)
            dp->ewma_fetch = bound;
        if (bound * dp->st.active < dp->ewma_bps)
            dp->ewma_bps = bound * dp->st.active;
    } else if (bytes) {
        ewma_update(s, dp, bytes, ns);
    }
}

/* ---- silent depots ---------------------------------------------------------------------- */

/* A link that went down without a word (a crashed host, a cut cable) leaves its fetches
 * waiting for bytes that will not come, until stall_ns.  How long a silence is suspicious
 * depends on the depot: its fetches report bytes every gap_ns or so (a piece at the pace the
 * depot has shown), and a fetch waits about its latency for the depot's reply.  A fetch that
 * has heard nothing for SILENT_GAPS of its depot's gaps, or before the reply SILENT_LATS of
 * its latencies more (never less than cfg.silent_ns, never more than stall_ns), is silent:
 * its block gets a redundant fetch elsewhere at once, and its depot goes mute (no new fetches
 * but an occasional probe) until it is heard from again.  A depot that only slowed down is
 * heard from again with its next piece, and its gaps then stretch the limit to its new pace. */
#define SILENT_GAPS 8
#define SILENT_LATS 4
#define PROBE_FIRST_NS 2000000000ull /* a mute depot's first probe after this, then doubled */
#define PROBE_MAX_NS 60000000000ull

static uint64_t silence_limit(const lors_sched_t *s, const fetch_t *f)
{
    const depot_t *dp = &s->dep[f->depot];
    uint64_t t = SILENT_GAPS * dp->gap_ns;
    if (t < s->cfg.silent_ns)
        t = s->cfg.silent_ns;
    if (!f->replied)
        t += dp->lat_ns ? SILENT_LATS * dp->lat_ns : s->cfg.silent_ns;
    if (s->cfg.stall_ns && t > s->cfg.stall_ns)
        t = s->cfg.stall_ns;
    return t;
}

/* Only a depot that has shown its pace (a reply or bytes) can be judged by it; until then
 * only stall_ns counts. */
static int judged(const lors_sched_t *s, const fetch_t *f)
{
    const depot_t *dp = &s->dep[f->depot];
    return s->cfg.silent_ns && s->cfg.stall_ns && (dp->gap_ns || dp->lat_ns);
}

/* When f counts as silent if it hears nothing more: stall_ns after its last word, or sooner
 * by its depot's pace; 0: never (no stall detection). */
static uint64_t silent_at(const lors_sched_t *s, const fetch_t *f)
{
    if (!s->cfg.stall_ns)
        return 0;
    return f->last + (judged(s, f) ? silence_limit(s, f) : s->cfg.stall_ns);
}

static int fetch_silent(const lors_sched_t *s, const fetch_t *f, uint64_t now)
{
    uint64_t t = silent_at(s, f);
    return t && now > f->last && now >= t;
}

static int fly_stalled(const lors_sched_t *s, const fly_t *e, uint64_t now)
{
    int n = 0;
    for (int i = 0; i < e->n; i++)
        n += fetch_silent(s, &s->fx[e->f[i]], now);
    return n;
}

/* The mute depot's next probe after its current wait, and the wait doubled for the one after. */
static void next_probe(depot_t *dp, uint64_t now)
{
    dp->probe_at = now + dp->backoff;
    if (dp->backoff < PROBE_MAX_NS)
        dp->backoff *= 2;
}

/* Mute the depots of silent fetches, and say which mute ones may take a probe now.  A probe
 * that stays silent too, or ends without a word, doubles the wait for the next. */
static void find_silent(lors_sched_t *s, uint64_t now)
{
    for (uint32_t i = 0; i < s->nfly; i++)
        for (int k = 0; k < s->fly[i].n; k++) {
            const fetch_t *f = &s->fx[s->fly[i].f[k]];
            depot_t *dp = &s->dep[f->depot];
            if (!fetch_silent(s, f, now) || (dp->mute && dp->probe_at != UINT64_MAX))
                continue;
            if (!dp->mute) {
                dp->mute = 1;
                dp->backoff = PROBE_FIRST_NS;
                dp->st.silences++;
            }
            next_probe(dp, now);
        }
    for (int d = 0; d < s->cfg.ndepots; d++) {
        depot_t *dp = &s->dep[d];
        if (dp->mute && dp->st.active == 0 && dp->probe_at == UINT64_MAX)
            next_probe(dp, now); /* the probe ended without a word (failed, or lost) */
        dp->probe_ok = dp->mute && dp->st.active == 0 && now >= dp->probe_at;
    }
}

/* Any reply or bytes from a depot: it is not silent. */
static void heard(depot_t *dp)
{
    dp->mute = 0;
    dp->probe_ok = 0;
}

/* May a new fetch (not a redundant one) start on the depot now? */
static int depot_open(const depot_t *dp)
{
    if (dp->dead)
        return 0;
    return dp->mute ? dp->probe_ok : dp->st.active < dp->cap;
}

static double depot_score(const lors_sched_t *s, int d, double unknown)
{
    const depot_t *dp = &s->dep[d];
    return (dp->known ? dp->bps : unknown) / (dp->st.active + 1);
}

/* What a depot not measured yet counts as: twice the best known rate (optimistic: every depot
 * gets tried), or 1 when none is known. */
static double unknown_bps(const lors_sched_t *s)
{
    double best_known = lors__sched_best_known_bps(s);
    return best_known > 0 ? 2 * best_known : 1.0;
}

static int has_pending(const lors_sched_t *s, int d, const double *need);
static int scarcest_class(const lors_sched_t *s, int d, const double *need);

/* Which depots choose_replica passes over, with the classes' needs (class_needs). */
enum { PASS_NONE, PASS_BUSY, PASS_NEEDED };

/* The best eligible replica of b on a live depot below its cap and not in excl[].  pass
 * (in any order, with need): PASS_BUSY passes over a depot that still has pending blocks of its
 * own (has_pending); PASS_NEEDED, for a hand-over, one whose own scarcest class needs as long
 * as needed or longer (taking the block would move its time to a class less scarce than the
 * one it frees the block's depots for). */
static uint32_t choose_replica(const lors_sched_t *s, uint32_t b, const int *excl, int nexcl,
                               const double *need, int pass, double needed)
{
    double unknown = unknown_bps(s);

    const blk_t *bk = &s->blk[b];
    uint32_t best = NONE;
    double bscore = 0;
    for (uint32_t r = bk->rep_head; r != NONE; r = s->rep[r].next) {
        const rep_t *rp = &s->rep[r];
        const depot_t *dp = &s->dep[rp->depot];
        if (!lors__sched_rep_in_round(s, bk, rp) || !depot_open(dp) || (dp->mute && nexcl))
            continue;
        int skip = 0;
        for (int i = 0; i < nexcl; i++)
            skip |= excl[i] == rp->depot;
        int dc = pass == PASS_NEEDED ? scarcest_class(s, rp->depot, need) : -1;
        if (skip || (pass == PASS_BUSY && has_pending(s, rp->depot, need)) ||
            (dc >= 0 && need[dc] >= needed))
            continue;
        double sc = depot_score(s, rp->depot, unknown);
        if (best != NONE) {
            const rep_t *bp = &s->rep[best];
            int ba = s->dep[bp->depot].st.active, bm = s->dep[bp->depot].mute;
            if (dp->mute != bm) { /* a probe only where no other depot can take the block */
                if (dp->mute)
                    continue;
            } else if (sc < bscore || (sc == bscore && (dp->st.active > ba ||
                                                 (dp->st.active == ba && rp->depot >= bp->depot))))
                continue;
        }
        best = r;
        bscore = sc;
    }
    return best;
}

/* ---- fetch bookkeeping ------------------------------------------------------------------ */

static uint64_t fetch_id(const lors_sched_t *s, uint32_t slot)
{
    return (uint64_t)s->fx[slot].gen << 32 | slot;
}

static fetch_t *fetch_get(lors_sched_t *s, uint64_t id)
{
    uint32_t slot = (uint32_t)id, gen = (uint32_t)(id >> 32);
    if (slot >= s->nfx || !s->fx[slot].live || s->fx[slot].gen != gen)
        return NULL;
    return &s->fx[slot];
}

/* Remove fetch slot from its block's fly entry, its depot, and free the slot. */
static void fetch_end(lors_sched_t *s, uint32_t slot)
{
    fetch_t *f = &s->fx[slot];
    fly_t *e = &s->fly[s->blk[f->block].fly];
    for (int i = 0; i < e->n; i++)
        if (e->f[i] == slot) {
            e->f[i] = e->f[--e->n];
            break;
        }
    s->dep[f->depot].st.active--;
    s->tot.in_flight--;
    f->live = 0;
    f->gen++;
    if (f->gen == 0)
        f->gen = 1;
    f->next_free = s->free_fx;
    s->free_fx = slot;
}

static void fly_remove(lors_sched_t *s, uint32_t b)
{
    uint32_t i = s->blk[b].fly;
    s->fly[i] = s->fly[--s->nfly];
    if (i < s->nfly)
        s->blk[s->fly[i].block].fly = i;
    s->blk[b].fly = NONE;
}

static int fetch_start(lors_sched_t *s, uint32_t b, uint32_t r, uint64_t now, int redundant,
                       lors_sched_fetch_t *out)
{
    uint32_t slot;
    if (lns_grow(&s->fly, &s->capfly, (size_t)s->nfly + 1, sizeof *s->fly, 64) < 0)
        return -1;
    if (s->free_fx != NONE) {
        slot = s->free_fx;
        s->free_fx = s->fx[slot].next_free;
    } else {
        if (lns_grow(&s->fx, &s->capfx, (size_t)s->nfx + 1, sizeof *s->fx, 64) < 0)
            return -1;
        slot = s->nfx++;
        s->fx[slot].gen = 1;
    }
    blk_t *bk = &s->blk[b];
    rep_t *rp = &s->rep[r];
    depot_t *dp = &s->dep[rp->depot];
    if (bk->state == ST_PENDING) {
        bk->state = ST_FLIGHT;
        s->npending--;
        lors__sched_class_pend(s, b, -1);
        lors__sched_bits_clear(&s->pending, b);
        s->tot.buffered += lors__sched_blk_len(s, b);
        bk->fly = s->nfly++;
        fly_t *e = &s->fly[bk->fly];
        e->block = b;
        e->ahead = 0;
        e->n = 0;
    }
    fly_t *e = &s->fly[bk->fly];
    e->f[e->n++] = slot;

    fetch_t *f = &s->fx[slot];
    f->block = b;
    f->rep = r;
    f->depot = rp->depot;
    f->live = 1;
    f->redundant = (uint8_t)redundant;
    f->blind = !dp->known && !(dp->shown > 0);
    f->start = f->last = now;
    f->bytes = f->base = 0;
    f->replied = 0;
    rp->tries++;
    if (dp->mute) /* a probe: no other until it is heard from or falls silent too */
        dp->probe_at = UINT64_MAX;
    dp->st.active++;
    dp->st.started++;
    s->tot.started++;
    s->tot.in_flight++;
    if (redundant) {
        dp->st.redundant_started++;
        s->tot.redundant_started++;
    }

    memset(out, 0, sizeof *out);
    out->id = fetch_id(s, slot);
    out->block = b;
    out->off = lors__sched_blk_off(s, b);
    out->len = lors__sched_blk_len(s, b);
    out->depot = rp->depot;
    out->mapping = rp->mapping;
    out->redundant = redundant;
    return 0;
}

/* ---- decisions -------------------------------------------------------------------------- */

double lors__sched_best_known_bps(const lors_sched_t *s)
{
    double best = 0;
    for (int k = 0; k < s->cfg.ndepots; k++)
        if (s->dep[k].bps > best)
            best = s->dep[k].bps;
    return best;
}

/* The rate a new fetch on d can expect: the lower of the depot's score (its aggregate rate
 * shared by one more stream) and the rate its fetches have had (when the client's link or CPU
 * is what all depots share, that is the honest figure). */
double lors__sched_new_fetch_bps(const lors_sched_t *s, int d, double best_known)
{
    const depot_t *dp = &s->dep[d];
    double rate = depot_score(s, d, 2 * best_known);
    if (dp->known && dp->fetch_bps < rate)
        rate = dp->fetch_bps;
    return rate;
}

/* The download's rate: the sum of the live depots' aggregate estimates (0: none known). */
double lors__sched_aggregate_bps(const lors_sched_t *s)
{
    double a = 0;
    for (int d = 0; d < s->cfg.ndepots; d++)
        if (!s->dep[d].dead && s->dep[d].known)
            a += s->dep[d].bps;
    return a;
}

/* In order: the blocks past the first hole already done (they wait in the buffer; the writer
 * passes them at once when the hole is filled).  0 in any order. */
uint32_t lors__sched_done_ahead(const lors_sched_t *s)
{
    if (s->cfg.any_order || s->tot.done <= s->first_hole)
        return 0;
    return (uint32_t)(s->tot.done - s->first_hole);
}

/* When the writer will need block b, ns from now: the blocks between the first hole and b at
 * the download's rate.  The first hole is needed now.  In any order, every block is needed
 * only at the end: when the other blocks not yet done have come at that rate.  (Counting only
 * the blocks not yet done, as lookahead does, made on_schedule call more fetches late: 2% more
 * fetches and 4% more time in test_lors_sched's 200,000-block run.) */
double lors__sched_need_ns(const lors_sched_t *s, uint32_t b, double agg)
{
    if (s->cfg.any_order && agg > 0) {
        uint32_t left = s->nblocks - s->tot.done;
        return left > 1 ? (double)(left - 1) * (double)s->cfg.block_size / agg * 1e9 : 0;
    }
    if (b <= s->first_hole || agg <= 0)
        return 0;
    return (double)(b - s->first_hole) * (double)s->cfg.block_size / agg * 1e9;
}

/* The time fetch f needs for the rest of its block (len bytes) at the pace it has shown: its
 * own bytes (not those it started with, lors_sched_resumed) over its age.  -1 before it has
 * loaded anything (never otherwise: progress never passes the block). */
static double left_at_shown_pace(const fetch_t *f, double len, uint64_t now)
{
    if (f->bytes <= f->base)
        return -1;
    return (double)(now - f->start) * (len - (double)f->bytes) /
           ((double)f->bytes - (double)f->base);
}

/* Does a new fetch of e's block from depot d pay?  It must be expected to end earlier than
 * every fetch of the block in flight by at least its own duration t_new: the time it saves
 * the writer must be worth the stream time it costs.  A fetch in flight is projected at the
 * rate it has shown since it started (bytes so far over its age, so a silence slows it
 * down); one that has shown no bytes yet is written off only once it is older than 2 t_new.
 * t_new is the block over the rate a new stream can expect on d: the lower of the depot's
 * score (its aggregate rate shared by one more stream) and the rate its fetches have had
 * (when the client's link or CPU is what all depots share, that is the honest figure).
 * When all replicas are healthy the fetch in flight stays ahead, so redundancy costs
 * nothing.  Nothing measured yet: yes, as optimistic as the replica choice. */
static int rescue_pays(const lors_sched_t *s, const fly_t *e, int d, uint64_t now)
{
    double best_known = lors__sched_best_known_bps(s);
    if (best_known <= 0)
        return 1;
    double len = (double)lors__sched_blk_len(s, e->block);
    double rate = lors__sched_new_fetch_bps(s, d, best_known);
    double t_new = rate > 0 ? len / rate * 1e9 : HUGE_VAL;
    for (int i = 0; i < e->n; i++) {
        const fetch_t *f = &s->fx[e->f[i]];
        double age = (double)(now - f->start), rem = left_at_shown_pace(f, len, now);
        if ((double)f->bytes >= len)
            return 0;
        if (rem < 0)
            rem = age >= 2 * t_new ? HUGE_VAL : 0;
        if (rem <= 2 * t_new)
            return 0;
    }
    return 1;
}

/* Will e's block arrive before the writer needs it?  Its best fetch is projected at the rate it
 * has shown (bytes over age) or, before its first bytes, at its depot's per-fetch rate; the
 * writer needs the block once the blocks below it have arrived at the download's rate
 * (need_ns).  Such a fetch is slow but on schedule (a lookahead fetch on a slow depot): a
 * second copy would only waste a stream.  The first hole is always needed now. */
static int on_schedule(const lors_sched_t *s, const fly_t *e, uint64_t now, double agg)
{
    double need = lors__sched_need_ns(s, e->block, agg);
    double len = (double)lors__sched_blk_len(s, e->block);
    if (need <= 0)
        return 0;
    for (int i = 0; i < e->n; i++) {
        const fetch_t *f = &s->fx[e->f[i]];
        const depot_t *dp = &s->dep[f->depot];
        double age = (double)(now - f->start), rem = left_at_shown_pace(f, len, now);
        if (rem < 0) { /* no bytes yet: at its depot's per-fetch rate, if that is known */
            if (!dp->known || !(dp->fetch_bps > 0) || age > 2 * len / dp->fetch_bps * 1e9)
                continue;
            rem = len / dp->fetch_bps * 1e9 - age;
        }
        if (rem <= need)
            return 1;
    }
    return 0;
}

/* The "completed ahead" count at which a block with n fetches is due its next one: n x T,
 * T = max(P, fetches in flight).  With F fetches in flight, a block of normal speed sees
 * about (its lateness / a fetch's duration) x F later blocks complete first, so jitter alone
 * reaches P = 3 with a dozen streams.  Scaled with F, the count means "late by about a whole
 * fetch", whatever the number of streams; P stays the floor for few streams, as in LoRS. */
static uint64_t redundancy_step(const lors_sched_t *s)
{
    uint64_t P = (uint64_t)s->cfg.progress, F = (uint64_t)s->tot.in_flight;
    return F > P ? F : P;
}

/* What a holder adds to its classes' rate: nothing dead or mute; measured, its rate; else what
 * its fetches have shown, at most unknown (class_needs). */
static double holder_bps(const depot_t *dp, double unknown)
{
    if (dp->dead || dp->mute)
        return 0;
    return dp->known                              ? dp->bps
           : dp->shown > 0 && dp->shown < unknown ? dp->shown
                                                  : unknown;
}

/* With holder classes: each class's need, the time its pending blocks and the rest of its blocks
 * in flight take at the summed rates of its live holders (-1: none pending).  A holder not
 * measured yet counts at the rate its fetches have shown, if they have, and at most at unknown
 * (the optimistic guess): a slow depot's first block takes long to measure it, and counted
 * fast meanwhile it hides its class's scarcity.  Returns what is left of the download, in
 * blocks: the pending ones and the rest of those in flight, over all classes. */
static double class_needs(const lors_sched_t *s, double unknown, double *need)
{
    double bs = (double)s->cfg.block_size, left[CLS_MAX] = {0}, total = 0;
    for (uint32_t i = 0; i < s->nfly; i++) {
        const fly_t *e = &s->fly[i];
        double len = (double)lors__sched_blk_len(s, e->block), most = 0;
        for (int k = 0; k < e->n; k++)
            if ((double)s->fx[e->f[k]].bytes > most)
                most = (double)s->fx[e->f[k]].bytes;
        if (most < len)
            left[s->bcls[e->block]] += (len - most) / bs;
    }
    for (int c = 0; c < s->ncls; c++) {
        const cls_t *cl = &s->cls[c];
        double rate = 0;
        for (int i = 0; i < cl->n; i++)
            rate += holder_bps(&s->dep[cl->holder[i]], unknown);
        need[c] = !cl->npend ? -1 : rate > 0 ? ((double)cl->npend + left[c]) / rate : HUGE_VAL;
        total += (double)cl->npend + left[c];
    }
    return total;
}

static int cls_holds(const cls_t *cl, int d)
{
    for (int i = 0; i < cl->n; i++)
        if (cl->holder[i] == d)
            return 1;
    return 0;
}

/* Of the classes depot d holds with blocks pending, the one that needs the longest; -1. */
static int scarcest_class(const lors_sched_t *s, int d, const double *need)
{
    int dc = -1;
    for (int c = 0; c < s->ncls; c++)
        if (need[c] >= 0 && cls_holds(&s->cls[c], d) && (dc < 0 || need[c] > need[dc]))
            dc = c;
    return dc;
}

/* The class a new fetch on depot d serves: its scarcest (scarcest_class), except while d has
 * shown nothing yet (no sample, no bytes): then every need is a guess about d's own rate, and
 * its first fetches (all sent at once, before any is measured) go one to each class it holds,
 * the one with the fewest of its fetches first, the scarcest among those.  Whichever class
 * turns out scarce has some of d's time from the start (docs/scheduler.md, "Scarce blocks
 * first"); d's fetches on the others are handed over if a faster holder has time (misplaced). */
static int next_class(const lors_sched_t *s, int d, const double *need)
{
    const depot_t *dp = &s->dep[d];
    if (dp->known || dp->shown > 0 || !dp->st.active)
        return scarcest_class(s, d, need);
    int mine[CLS_MAX] = {0};
    for (uint32_t i = 0; i < s->nfly; i++)
        for (int k = 0; k < s->fly[i].n; k++)
            mine[s->bcls[s->fly[i].block]] += s->fx[s->fly[i].f[k]].depot == d;
    int dc = -1;
    for (int c = 0; c < s->ncls; c++)
        if (need[c] >= 0 && cls_holds(&s->cls[c], d) &&
            (dc < 0 || mine[c] < mine[dc] || (mine[c] == mine[dc] && need[c] > need[dc])))
            dc = c;
    return dc;
}

/* Has depot d pending blocks it can fetch?  With holder classes, a class it holds has some
 * (need from class_needs); without, any block is pending (every depot holds them all, or the
 * plain order finds one). */
static int has_pending(const lors_sched_t *s, int d, const double *need)
{
    return s->ncls ? scarcest_class(s, d, need) >= 0 : s->npending > 0;
}

/* In any order with holder classes: is every fetch of e on a depot whose time a scarcer class
 * needs (HANDOVER times the need of e's class)?  Such fetches were started before the depots
 * were measured, when every class looked alike; a faster holder that fetches the block again
 * frees the depot (its fetch loses and is cancelled) for the class only it and few others can
 * serve (docs/scheduler.md, "Scarce blocks first"). */
#define HANDOVER 2.0
static int misplaced(const lors_sched_t *s, const fly_t *e, const double *need)
{
    if (!s->ncls || !e->n)
        return 0;
    int c = s->bcls[e->block];
    double nc = need[c] > 0 ? need[c] : 0;
    for (int i = 0; i < e->n; i++) {
        int dc = scarcest_class(s, s->fx[e->f[i]].depot, need);
        if (dc < 0 || dc == c || need[dc] <= HANDOVER * nc)
            return 0;
    }
    return 1;
}

/* (a) The lowest in-flight block due a redundant fetch, and the replica for it.  The k-th
 * extra fetch is due after k x redundancy_step later completions (a stalled fetch counts as
 * a whole step), and only if the new fetch is expected to end first (rescue_pays; a stalled
 * block needs no such proof).  In the endgame the count is not needed.  A silent fetch does
 * not count against the redundancy: a block whose rescue fell silent too (two links down in
 * turn) would otherwise wait for the stall to abort one of them. */
static int pick_redundant(const lors_sched_t *s, uint64_t now, int endgame, uint32_t *ob,
                          uint32_t *orep)
{
    int P = s->cfg.progress, R = s->cfg.redundancy;
    uint64_t step = redundancy_step(s);
    uint32_t best = NONE, brep = NONE;
    if (R <= 1 || (!endgame && P <= 0))
        return 0;
    double agg = lors__sched_aggregate_bps(s);
    double need[CLS_MAX];
    if (s->ncls)
        class_needs(s, unknown_bps(s), need);
    for (uint32_t i = 0; i < s->nfly; i++) {
        const fly_t *e = &s->fly[i];
        if (e->n >= LORS_SCHED_MAX_R || e->block >= best)
            continue;
        int stalled = fly_stalled(s, e, now);
        if (e->n - stalled >= R)
            continue;
        int head = !s->cfg.any_order && e->block == s->first_hole && agg > 0;
        int hand = !endgame && agg > 0 && misplaced(s, e, need);
        if (!endgame && !head && !hand &&
            (uint64_t)e->ahead + step * (uint64_t)stalled < step * (uint64_t)e->n)
            continue;
        if (!endgame && !stalled && !hand && on_schedule(s, e, now, agg))
            continue;
        int excl[LORS_SCHED_MAX_R];
        double freed = HUGE_VAL; /* a hand-over frees the block's depots for their classes */
        for (int k = 0; k < e->n; k++) {
            excl[k] = s->fx[e->f[k]].depot;
            int dc = hand ? scarcest_class(s, excl[k], need) : -1;
            if (dc >= 0 && need[dc] < freed)
                freed = need[dc];
        }
        /* In any order no block is needed before another: a depot with pending blocks of its
         * own starts one of them rather than a second copy (which would only move its time
         * from a block nobody fetches to one that is coming), unless the copy is a hand-over
         * or a stalled block's, or the endgame's. */
        int busy = s->cfg.any_order && !endgame && !stalled && !hand;
        uint32_t r = choose_replica(s, e->block, excl, e->n, need,
                                    hand ? PASS_NEEDED : busy ? PASS_BUSY : PASS_NONE, freed);
        if (r != NONE && (stalled || rescue_pays(s, e, s->rep[r].depot, now))) {
            best = e->block;
            brep = r;
        }
    }
    if (best == NONE)
        return 0;
    *ob = best;
    *orep = brep;
    return 1;
}

/* (c, d) The lowest pending block with an eligible replica on a live depot below its cap:
 * never-started blocks and failed ones back for a retry alike, lowest offset first. */
static uint32_t lowest_pending(lors_sched_t *s)
{
    uint32_t best = NONE;
    for (int d = 0; d < s->cfg.ndepots; d++) {
        depot_t *dp = &s->dep[d];
        if (!depot_open(dp))
            continue;
        while (dp->pend.n) {
            uint32_t b = dp->pend.v[0];
            const blk_t *bk = &s->blk[b];
            int ok = 0;
            if (bk->state == ST_PENDING)
                for (uint32_t r = bk->rep_head; r != NONE && !ok; r = s->rep[r].next)
                    ok = s->rep[r].depot == d && lors__sched_rep_in_round(s, bk, &s->rep[r]);
            if (ok)
                break;
            heap_pop(&dp->pend);
        }
        if (dp->pend.n && dp->pend.v[0] < best)
            best = dp->pend.v[0];
    }
    return best;
}

/* In any order, with holder classes: would one more fetch on depot d, of a block of class c,
 * end after the class and the whole download could be done without d?  That block would be
 * the download's last: its time is the bytes d still has to send (owed) and the block, at d's
 * rate, against the larger of the class's need at the rates of its other live holders and
 * the download's left bytes at agg, the rate of all depots, less d's.  (Random seed 1 of the
 * WAN testbed: a block sent 2 s before the end to a host that had dropped to 1 Mbit/s, beside
 * the one it already had, took 4 s more than the rest; its class's other holders were free
 * 1 s after it started.)  Such a block is left to the faster holders.  A depot with nothing
 * in flight may always start one, so that its rate stays measured (a slow host may recover),
 * and one not yet measured, or the class's only live holder, is never held. */
static int ends_last(const lors_sched_t *s, int d, int c, const double *need, double unknown,
                     double left, double agg)
{
    const depot_t *dp = &s->dep[d];
    if (!dp->st.active || !dp->known || !(dp->bps > 0) || need[c] < 0)
        return 0;
    const cls_t *cl = &s->cls[c];
    double with = 0, without = 0;
    for (int i = 0; i < cl->n; i++) {
        double r = holder_bps(&s->dep[cl->holder[i]], unknown);
        with += r;
        without += cl->holder[i] == d ? 0 : r;
    }
    double others = agg - dp->bps;
    if (!(without > 0) || !(others > 0))
        return 0;
    double bs = (double)s->cfg.block_size;
    double t_class = need[c] * with * bs / without, t_rest = left / others;
    return (dp->owed + bs) / dp->bps > (t_class > t_rest ? t_class : t_rest);
}

/* In any order, with holder classes: the open depot a new fetch would go to anyway (the best
 * score, as choose_replica ranks them), and of the classes it holds the one whose pending
 * blocks need the longest (class_needs);
 * the lowest pending block of that class.  Lowest block first spends every depot on whatever
 * comes first in the file, and a class whose holders are few and slow then finishes long
 * after the rest: its holders' time went early to blocks that faster depots also hold.  Each
 * depot on its scarcest class is the order of the max-flow limit (docs/scheduler.md, "Scarce
 * blocks first").  NONE: the plain order decides (no open depot holds a pending class, or the
 * block has no replica there in its round). */
static uint32_t scarce_pending(lors_sched_t *s, uint32_t *orep, int *held)
{
    double unknown = unknown_bps(s);
    double need[CLS_MAX];
    double left = class_needs(s, unknown, need) * (double)s->cfg.block_size;
    double agg = lors__sched_aggregate_bps(s);
    int bd = -1, bc = -1;
    double bscore = 0;
    *held = 0;
    for (int d = 0; d < s->cfg.ndepots; d++) {
        const depot_t *dp = &s->dep[d];
        if (!depot_open(dp))
            continue;
        int dc = next_class(s, d, need);
        if (dc < 0)
            continue;
        if (ends_last(s, d, dc, need, unknown, left, agg)) {
            *held = 1;
            continue;
        }
        double sc = depot_score(s, d, unknown);
        if (bd >= 0 && (sc < bscore || (sc == bscore && dp->st.active >= s->dep[bd].st.active)))
            continue;
        bd = d;
        bc = dc;
        bscore = sc;
    }
    if (bd < 0)
        return NONE;
    heap_t *h = &s->cls[bc].pend;
    while (h->n && s->blk[h->v[0]].state != ST_PENDING)
        heap_pop(h);
    if (!h->n)
        return NONE;
    const blk_t *bk = &s->blk[h->v[0]];
    for (uint32_t r = bk->rep_head; r != NONE; r = s->rep[r].next)
        if (s->rep[r].depot == bd && lors__sched_rep_in_round(s, bk, &s->rep[r])) {
            *orep = r;
            return h->v[0];
        }
    return NONE;
}

static int prebuffer_met(const lors_sched_t *s)
{
    if (s->releasing || s->first_hole >= s->nblocks)
        return 1;
    return lors__sched_blk_off(s, s->first_hole) - s->cfg.off >= s->prebuffer;
}

/* Would starting block b overrun the reorder buffer?  The first hole is always allowed when
 * the writer is waiting for it (it has nothing else to release, or is still pre-buffering),
 * and its bytes are kept in reserve while it is pending, so that later blocks cannot shut it
 * out: the buffer can never fill up with blocks that cannot leave. */
int lors__sched_buffer_full(const lors_sched_t *s, uint32_t b)
{
    if (!s->cfg.buffer_bytes)
        return 0;
    /* in any order, a done block leaves at once: no block can wait behind another, so the
     * buffer bounds only what is in flight (and the one block being written) */
    if (s->cfg.any_order)
        return s->tot.buffered > 0 &&
               s->tot.buffered + lors__sched_blk_len(s, b) > s->cfg.buffer_bytes;
    if (b == s->first_hole && (s->next_release == s->first_hole || !prebuffer_met(s)))
        return 0;
    /* every pending block below b keeps its room: the writer needs them first.  Only the
     * first hole's used to, and when the depots of a block were busy (at their cap), later
     * blocks took the whole buffer; the skipped block was then fetched alone, just in time
     * (a streaming player starved: test_streaming) */
    uint64_t need = s->tot.buffered + lors__sched_blk_len(s, b);
    for (uint32_t k = lors__sched_bits_next(&s->pending, s->first_hole);
         k != NONE && k < b && need <= s->cfg.buffer_bytes;
         k = k + 1 < s->nblocks ? lors__sched_bits_next(&s->pending, k + 1) : NONE)
        need += lors__sched_blk_len(s, k);
    return need > s->cfg.buffer_bytes;
}

static uint64_t wait_hint(const lors_sched_t *s, uint64_t now)
{
    uint64_t t = 0;
    for (int d = 0; d < s->cfg.ndepots; d++) {
        const depot_t *dp = &s->dep[d];
        if (dp->dead && dp->retry_at > now && (!t || dp->retry_at < t))
            t = dp->retry_at;
    }
    for (int d = 0; d < s->cfg.ndepots; d++) {
        const depot_t *dp = &s->dep[d];
        if (dp->mute && dp->st.active == 0 && dp->probe_at > now && (!t || dp->probe_at < t))
            t = dp->probe_at;
    }
    if (s->cfg.stall_ns)
        for (uint32_t i = 0; i < s->nfly; i++)
            for (int k = 0; k < s->fly[i].n; k++) {
                uint64_t due = silent_at(s, &s->fx[s->fly[i].f[k]]);
                if (due > now && (!t || due < t))
                    t = due;
            }
    return t;
}

static lors_sched_action_t failed_action(const lors_sched_t *s, lors_sched_fetch_t *f)
{
    f->failed_off = lors__sched_blk_off(s, s->failed_min);
    f->failed_len = lors__sched_blk_len(s, s->failed_min);
    return LORS_SCHED_FAILED;
}

/* The decision of lors_sched_next without acting on it: FETCH with *b, *r and *redundant
 * set, or WAIT (f->wait_until set), DONE or FAILED (f filled).  Reviving depots whose retry
 * time has come and dropping stale heap entries are the only changes it makes; both would
 * happen on any later call anyway. */
static lors_sched_action_t decide(lors_sched_t *s, uint64_t now, lors_sched_fetch_t *f,
                                  uint32_t *b, uint32_t *r, int *redundant)
{
    memset(f, 0, sizeof *f);
    if (!s->started) {
        s->started = 1;
        lors__sched_scan_failed(s);
        if (s->cfg.any_order)
            lors__sched_classes_build(s);
    }
    if (s->failed_min != NONE)
        return failed_action(s, f);
    if (s->tot.done == s->nblocks)
        return LORS_SCHED_DONE;

    for (int d = 0; d < s->cfg.ndepots; d++) {
        depot_t *dp = &s->dep[d];
        if (dp->dead && dp->retry_at && dp->retry_at <= now) {
            dp->dead = 0;
            dp->consec = 0;
        }
    }
    find_silent(s, now);
    lors__sched_rates(s, now);

    *redundant = 1;
    if (pick_redundant(s, now, 0, b, r))
        return LORS_SCHED_FETCH;

    *redundant = 0;
    int held = 0;
    if (s->ncls && (*b = scarce_pending(s, r, &held)) != NONE) {
        if (lors__sched_buffer_full(s, *b)) {
            f->wait_until = wait_hint(s, now);
            return LORS_SCHED_WAIT;
        }
        return LORS_SCHED_FETCH;
    }
    /* the open depots with pending classes would each end last: none starts one */
    *b = held ? NONE : lowest_pending(s);
    if (*b != NONE) {
        if (lors__sched_buffer_full(s, *b)) {
            f->wait_until = wait_hint(s, now); /* or when the writer releases */
            return LORS_SCHED_WAIT;
        }
        *r = choose_replica(s, *b, NULL, 0, NULL, PASS_NONE, 0);
        assert(*r != NONE); /* lowest_pending found b on a live depot below its cap */
        lors__sched_lookahead(s, b, r);
        return LORS_SCHED_FETCH;
    }

    *redundant = 1;
    if (s->cfg.endgame && s->npending == 0 && pick_redundant(s, now, 1, b, r))
        return LORS_SCHED_FETCH;

    f->wait_until = wait_hint(s, now);
    return LORS_SCHED_WAIT;
}

lors_sched_action_t lors_sched_next(lors_sched_t *s, uint64_t now, lors_sched_fetch_t *f)
{
    uint32_t b = NONE, r = NONE;
    int redundant = 0;
    lors_sched_action_t a = decide(s, now, f, &b, &r, &redundant);
    if (a == LORS_SCHED_FETCH && fetch_start(s, b, r, now, redundant, f) < 0) {
        memset(f, 0, sizeof *f);
        return LORS_SCHED_WAIT;
    }
    return a;
}

int lors_sched_has_work(lors_sched_t *s, uint64_t now)
{
    lors_sched_fetch_t f;
    uint32_t b = NONE, r = NONE;
    int redundant = 0;
    return decide(s, now, &f, &b, &r, &redundant) == LORS_SCHED_FETCH;
}

/* first_hole past the blocks done or written, next_release past the blocks written (every
 * block before it is: the output's whole prefix).  Both only move forward. */
static void advance_marks(lors_sched_t *s)
{
    while (s->first_hole < s->nblocks && s->blk[s->first_hole].state >= ST_DONE &&
           s->blk[s->first_hole].state != ST_FAILED)
        s->first_hole++;
    while (s->next_release < s->nblocks && s->blk[s->next_release].state == ST_RELEASED)
        s->next_release++;
}

/* ---- reports from the streams ----------------------------------------------------------- */

int lors_sched_replied(lors_sched_t *s, uint64_t id, uint64_t now)
{
    fetch_t *f = fetch_get(s, id);
    if (!f)
        return LORS_SCHED_E_STALE;
    if (!f->replied && now >= f->start) {
        depot_t *dp = &s->dep[f->depot];
        uint64_t lat = now - f->start;
        f->replied = 1;
        if (now > f->last)
            f->last = now;
        if (!dp->lat_ns || lat < dp->lat_ns)
            dp->lat_ns = lat ? lat : 1;
        heard(dp);
    }
    return 0;
}

int lors_sched_progress(lors_sched_t *s, uint64_t id, uint64_t bytes, uint64_t now)
{
    fetch_t *f = fetch_get(s, id);
    if (!f)
        return LORS_SCHED_E_STALE;
    if (bytes > f->bytes) {
        depot_t *dp = &s->dep[f->depot];
        if (f->replied && now > f->last) { /* the pace of the depot's bytes */
            uint64_t gap = now - f->last;
            dp->gap_ns = dp->gap_ns ? (gap + 3 * dp->gap_ns) / 4 : gap;
        }
        f->bytes = bytes;
        f->last = now;
        heard(dp);
    }
    return 0;
}

int lors_sched_resumed(lors_sched_t *s, uint64_t id, uint64_t bytes)
{
    fetch_t *f = fetch_get(s, id);
    if (!f)
        return LORS_SCHED_E_STALE;
    uint64_t len = lors__sched_blk_len(s, f->block);
    f->bytes = f->base = bytes < len ? bytes : len;
    return 0;
}

int lors_sched_complete(lors_sched_t *s, uint64_t id, uint64_t now, uint64_t *cancel)
{
    fetch_t *f = fetch_get(s, id);
    if (!f)
        return LORS_SCHED_E_STALE;
    uint32_t slot = (uint32_t)id, b = f->block;
    uint64_t len = lors__sched_blk_len(s, b);
    depot_t *dp = &s->dep[f->depot];

    rate_sample(s, dp, len - f->base, len - f->base, now - f->start);
    heard(dp);
    dp->consec = 0;
    dp->st.blocks_won++;
    dp->st.bytes_won += len;
    if (f->redundant)
        dp->st.redundant_won++;
    fetch_end(s, slot);

    fly_t *e = &s->fly[s->blk[b].fly];
    int nc = 0;
    while (e->n) {
        uint32_t lo = e->f[0];
        cancel[nc++] = fetch_id(s, lo);
        /* a loser's rate is at most what it has shown so far: without that sample, a depot
         * that always loses would keep its optimistic "unknown" score for ever.  But a loser
         * that has reported nothing yet (bytes come in pieces) shows no rate at all: a zero
         * sample would rank its depot last for good, and lookahead would never use it.
         * Unless it is overdue: then it ran at under block / age, and the estimates must
         * hear it, or the depot is fast again once its fetches are gone (rate_sample) */
        const fetch_t *lf = &s->fx[lo];
        rate_sample(s, &s->dep[lf->depot], lf->bytes - lf->base, len - lf->base,
                    now - lf->start);
        s->dep[s->fx[lo].depot].st.cancelled++;
        s->tot.cancelled++;
        fetch_end(s, lo);
    }
    fly_remove(s, b);
    for (uint32_t i = 0; i < s->nfly; i++)
        if (s->fly[i].block < b)
            s->fly[i].ahead++;

    s->blk[b].state = ST_DONE;
    if (s->cfg.any_order)
        lors__sched_bits_set(&s->done, b);
    s->tot.done++;
    s->tot.bytes_done += len;
    advance_marks(s);
    return nc;
}

/* Block b, whose last fetch has ended, is pending again (its bytes leave the buffer); the
 * caller pushes it on the heaps. */
static void back_to_pending(lors_sched_t *s, uint32_t b)
{
    fly_remove(s, b);
    s->blk[b].state = ST_PENDING;
    s->npending++;
    lors__sched_class_pend(s, b, 1);
    lors__sched_bits_set(&s->pending, b);
    s->tot.buffered -= lors__sched_blk_len(s, b);
}

int lors_sched_fail(lors_sched_t *s, uint64_t id, uint64_t now, lors_sched_fail_kind_t kind)
{
    fetch_t *f = fetch_get(s, id);
    if (!f)
        return LORS_SCHED_E_STALE;
    uint32_t slot = (uint32_t)id, b = f->block;
    depot_t *dp = &s->dep[f->depot];
    int died = 0;

    dp->st.failures++;
    s->tot.failures++;
    if (kind == LORS_SCHED_FAIL_BAD_DATA) {
        s->rep[f->rep].bad = 1;
        dp->st.bad_data++;
    } else if (++dp->consec >= s->cfg.fail_limit && s->cfg.fail_limit > 0 && !dp->dead) {
        dp->dead = 1;
        dp->retry_at = s->cfg.dead_retry_ns ? now + s->cfg.dead_retry_ns : 0;
        died = dp->retry_at == 0;
    }
    fetch_end(s, slot);

    if (s->fly[s->blk[b].fly].n == 0) {
        back_to_pending(s, b);
        maybe_next_round(s, b);
        if (!blk_viable(s, b))
            mark_failed(s, b);
        else if (push_pending(s, b) < 0)
            return LORS_SCHED_E_NOMEM;
    }
    if (died)
        lors__sched_scan_failed(s);
    return s->blk[b].state == ST_FAILED;
}

int lors_sched_replica_hold(lors_sched_t *s, uint32_t b, int mapping, int held)
{
    if (b >= s->nblocks || held < -1 || held > 1)
        return LORS_SCHED_E_INVAL;
    blk_t *bk = &s->blk[b];
    for (uint32_t r = bk->rep_head; r != NONE; r = s->rep[r].next) {
        rep_t *rp = &s->rep[r];
        if (rp->mapping != mapping)
            continue;
        rp->held = held == 1;
        if (held < 0)
            rp->usable = 0;
    }
    if (bk->state != ST_PENDING)
        return 0;
    if (held < 0 && !blk_viable(s, b)) {
        mark_failed(s, b);
        return 1;
    }
    if (held == 0 && push_pending(s, b) < 0)
        return LORS_SCHED_E_NOMEM;
    return 0;
}

int lors_sched_stalled(const lors_sched_t *s, uint64_t now, uint64_t *out, int max)
{
    int n = 0;
    if (!s->cfg.stall_ns)
        return 0;
    for (uint32_t i = 0; i < s->nfly && n < max; i++)
        for (int k = 0; k < s->fly[i].n && n < max; k++) {
            uint32_t slot = s->fly[i].f[k];
            if (now > s->fx[slot].last && now - s->fx[slot].last >= s->cfg.stall_ns)
                out[n++] = fetch_id(s, slot);
        }
    return n;
}

/* A blind fetch (started before its depot had shown anything: its first fetches, which go
 * out together at the start) on the wrong class: its depot shows its pace now, its scarcest
 * class needs more than HANDOVER times what the block's does (as for a hand-over, misplaced;
 * the first estimates are rough, and a small difference moved depots back and forth), the
 * block's class has another live holder, and the depot's time on the rest of the block is
 * worth more on its scarcest class than the bytes it has fetched of it, whose share d of the
 * block is thrown away: (1 - d) x (1 - need of the block's class / need of the scarcest) > d.
 * And the fetch, at the rate it has shown, still has more than WITHDRAW_NS to go: less saves
 * nothing worth a new request (on a LAN a block takes milliseconds, and the first estimates
 * are noise).  A hand-over (pick_redundant) needs a faster holder with time, and the blind
 * fetch runs on until that one wins; withdrawn, the depot's stream is free for its scarce
 * class at once. */
#define WITHDRAW_NS 200e6
static int withdrawable(const lors_sched_t *s, const fly_t *e, const double *need, uint64_t now)
{
    if (e->n != 1)
        return 0;
    const fetch_t *f = &s->fx[e->f[0]];
    const depot_t *dp = &s->dep[f->depot];
    int c = s->bcls[e->block], dc = scarcest_class(s, f->depot, need);
    if (!f->blind || !(dp->known || dp->shown > 0) || dc < 0 || dc == c || !(need[dc] > 0))
        return 0;
    double len = (double)lors__sched_blk_len(s, e->block);
    if (left_at_shown_pace(f, len, now) < WITHDRAW_NS) /* -1: nothing loaded yet */
        return 0;
    double done = (double)f->bytes / len, nc = need[c] > 0 ? need[c] : 0;
    if (need[dc] <= HANDOVER * nc || (1 - done) * (1 - nc / need[dc]) <= done)
        return 0;
    const cls_t *cl = &s->cls[c];
    for (int i = 0; i < cl->n; i++) {
        const depot_t *o = &s->dep[cl->holder[i]];
        if (cl->holder[i] != f->depot && !o->dead && !o->mute)
            return 1;
    }
    return 0;
}

int lors_sched_withdraw(lors_sched_t *s, uint64_t now, uint64_t *out, int max)
{
    if (!s->ncls || !s->started)
        return 0;
    lors__sched_rates(s, now);
    double need[CLS_MAX];
    class_needs(s, unknown_bps(s), need);
    int n = 0;
    for (uint32_t i = 0; i < s->nfly && n < max; i++) {
        fly_t *e = &s->fly[i];
        if (!withdrawable(s, e, need, now))
            continue;
        uint32_t slot = e->f[0], b = e->block;
        const fetch_t *f = &s->fx[slot];
        /* as if never started: the try is not counted, the block is pending on every holder
         * (pushed first: harmless while it is in flight, the heaps check lazily) */
        s->rep[f->rep].tries--;
        if (push_pending(s, b) < 0) {
            s->rep[f->rep].tries++;
            break;
        }
        out[n++] = fetch_id(s, slot);
        rate_sample(s, &s->dep[f->depot], f->bytes - f->base,
                    lors__sched_blk_len(s, b) - f->base, now - f->start);
        s->dep[f->depot].st.withdrawn++;
        s->tot.withdrawn++;
        fetch_end(s, slot);
        back_to_pending(s, b);
        i--; /* fly_remove moved the last entry here */
    }
    return n;
}

/* ---- the writer ------------------------------------------------------------------------- */

int lors_sched_releasable(const lors_sched_t *s, uint32_t *b)
{
    if (s->cfg.any_order) {
        uint32_t d = lors__sched_bits_next(&s->done, 0);
        if (d == NONE)
            return 0;
        *b = d;
        return 1;
    }
    uint32_t nr = s->next_release;
    if (nr >= s->nblocks || s->blk[nr].state != ST_DONE)
        return 0;
    if (!prebuffer_met(s))
        return 0;
    *b = nr;
    return 1;
}

uint32_t lors_sched_prefix(const lors_sched_t *s)
{
    return s->next_release;
}

int lors_sched_skip(lors_sched_t *s, uint32_t b)
{
    if (!s->cfg.any_order || s->started || b >= s->nblocks || s->blk[b].state != ST_PENDING)
        return LORS_SCHED_E_INVAL;
    s->blk[b].state = ST_RELEASED;
    s->npending--;
    lors__sched_bits_clear(&s->pending, b);
    uint64_t len = lors__sched_blk_len(s, b);
    s->tot.done++;
    s->tot.bytes_done += len;
    s->tot.released++;
    s->tot.bytes_released += len;
    advance_marks(s);
    return 0;
}

int lors_sched_released(lors_sched_t *s, uint32_t b)
{
    uint32_t nb;
    if (s->cfg.any_order) {
        if (b >= s->nblocks || s->blk[b].state != ST_DONE)
            return LORS_SCHED_E_INVAL;
        lors__sched_bits_clear(&s->done, b);
    } else if (!lors_sched_releasable(s, &nb) || nb != b) {
        return LORS_SCHED_E_INVAL;
    }
    s->releasing = 1;
    s->blk[b].state = ST_RELEASED;
    advance_marks(s);
    s->tot.released++;
    s->tot.bytes_released += lors__sched_blk_len(s, b);
    s->tot.buffered -= lors__sched_blk_len(s, b);
    return 0;
}

