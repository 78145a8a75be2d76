/* lors_download_ec.c -- the download engine on an erasure-coded file: any k pieces a stripe.
 *
 * The scheduler is not told about coding.  Its blocks are the data pieces of the stripes in
 * the range (block b: piece b % k of stripe ec_s0 + b / k, one piece a block, so B is the
 * piece size); a block's replicas are its own data piece's mappings first (so data pieces
 * win ties), then the parity pieces, each block starting at a different one, then the
 * stripe's other data pieces.  Those "foreign" replicas are held back
 * (lors_sched_replica_hold) until the block may need them (from the start if the exNode has
 * no mapping of its own piece): its data fetch failed (refused,
 * timed out, bad digests), its data piece's depot failed, or the writer is waiting for its
 * stripe (then the scheduler's redundant fetch of a slow piece may go elsewhere).  Any k
 * distinct pieces decode, so a block may bring whichever piece its stripe does not have yet,
 * and the fetch thread that completes the stripe rebuilds the missing data pieces (ISA-L) and
 * checks them against their digests before the writer may write them.  A piece
 * serves one block only: while a block fetches it ("claims" it) the stripe's other blocks
 * are told to leave it; if it wins, they lose it for good, otherwise they may have it again.
 *
 * The writer takes a stripe at a time: it waits until all k blocks of the stripe are done and
 * decoded (it decodes itself only a stripe whose fetch thread got no buffers), writes the
 * bytes of the range, and releases the k blocks together; the scheduler's buffer is
 * therefore at least two stripes (lors__dl_sched_new).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lors_download_int.h"
#include "lors_ec_int.h"
#include "lors_report.h"
#include "lns_io.h"

/* Checksums of column mappings go in dl->ck like lns_checksum's: one digest per piece. */
static void col_checksum(const lors__ec_t *ec, const lors__ec_col_t *c, ckinfo_t *ck)
{
    memset(ck, 0, sizeof *ck);
    if (!c->ok || !c->alg || !c->digests)
        return;
    ck->alg = c->alg;
    ck->digests = c->digests;
    ck->bs = ec->piece;
    ck->ok = 1;
}

int lors__dl_plan_ec(dl_t *dl, int64_t off, int64_t len)
{
    const lors__ec_t *ec = dl->ec;
    const xnd_t *x = dl->x;
    int k = ec->k, m = ec->m;
    int64_t S = (int64_t)k * ec->piece;
    dl->ecol = calloc(x->nmaps ? x->nmaps : 1, sizeof *dl->ecol);
    if (!dl->ecol)
        return LORS_E_NOMEM;
    for (size_t i = 0; i < x->nmaps; i++) {
        lors__ec_col(ec, x->maps[i], &dl->ecol[i]);
        col_checksum(ec, &dl->ecol[i], &dl->ck[i]);
    }
    int64_t s0 = off / S, s1 = (off + len - 1) / S;
    uint64_t nb = (uint64_t)(s1 - s0 + 1) * (uint64_t)k;
    if (nb > LORS_DL_MAX_BLOCKS) {
        if (dl->rep)
            lors__report_error(dl->rep, "bytes %lld-%lld: %llu pieces, more than the %u one "
                               "download plans; use a smaller range", (long long)off,
                               (long long)(off + len - 1), (unsigned long long)nb,
                               LORS_DL_MAX_BLOCKS);
        return LORS_E_INVAL;
    }
    /* every stripe needs k distinct pieces with a usable mapping */
    int n = k + m;
    for (int64_t s = s0; s <= s1; s++) {
        int have = 0;
        for (int j = 0; j < n; j++)
            for (size_t i = 0; i < x->nmaps; i++) {
                const lors__ec_col_t *c = &dl->ecol[i];
                if (c->ok && c->column == j && dl->map_depot[i] >= 0 && c->first <= s &&
                    s < c->first + c->n) {
                    have++;
                    break;
                }
            }
        if (have < k) {
            if (dl->rep) {
                dl->rep->missing_off = s * S;
                dl->rep->missing_len = lors__ec_stripe_bytes(ec, s);
                lors__report_error(dl->rep, "bytes %lld-%lld (stripe %lld): the exNode has %d "
                                   "of its %d pieces with a usable read capability; %d are "
                                   "needed", (long long)(s * S),
                                   (long long)(s * S + lors__ec_stripe_bytes(ec, s) - 1),
                                   (long long)s, have, n, k);
            }
            return LORS_E_NO_REPLICA;
        }
    }
    dl->ec_s0 = s0;
    dl->B = ec->piece;
    dl->nblocks = (uint32_t)nb;
    dl->blocks = calloc(nb, sizeof *dl->blocks);
    dl->claims = calloc((size_t)(s1 - s0 + 1) * (size_t)n, 1);
    dl->claim_owner = calloc((size_t)(s1 - s0 + 1) * (size_t)n, sizeof *dl->claim_owner);
    for (int j = 0; j < m; j++)
        dl->scratch[j] = malloc((size_t)ec->piece);
    if (!dl->blocks || !dl->claims || !dl->claim_owner || !dl->scratch[m - 1])
        return LORS_E_NOMEM;
    for (uint32_t b = 0; b < dl->nblocks; b++) {
        int64_t s = s0 + b / (uint32_t)k, a, l;
        lors__ec_data_range(ec, s, (int)(b % (uint32_t)k), &a, &l);
        /* only the bytes of the range are written */
        int64_t e = a + l;
        if (a < off)
            a = off;
        if (e > off + len)
            e = off + len;
        dl->blocks[b].off = a;
        dl->blocks[b].len = e > a ? e - a : 0;
    }
    dl->bufsz = (size_t)ec->piece;
    dl->open = calloc(nb, 1);
    dl->ec_busy = calloc((size_t)(s1 - s0 + 1), 1);
    dl->data_depot = malloc(nb * sizeof *dl->data_depot);
    dl->ec_dead = calloc((size_t)dl->ndepots + 1, 1);
    if (!dl->open || !dl->data_depot || !dl->ec_dead || !dl->ec_busy)
        return LORS_E_NOMEM;
    int rc = lors__dl_sched_new(dl);
    for (uint32_t b = 0; rc == LORS_OK && b < dl->nblocks; b++) {
        int64_t s = s0 + b / (uint32_t)k;
        int i = (int)(b % (uint32_t)k);
        dl->data_depot[b] = -1;
        /* its own data piece, the parity pieces (each block starting at another), then the
         * stripe's other data pieces (which may stand in once their own block has another) */
        for (int t = -1; t < n - 1 && rc == LORS_OK; t++) {
            int j = t < 0 ? i : t < m ? k + (i + t) % m : (i + 1 + t - m) % k;
            for (size_t q = 0; q < x->nmaps && rc == LORS_OK; q++) {
                const lors__ec_col_t *c = &dl->ecol[q];
                if (!c->ok || c->column != j || dl->map_depot[q] < 0 || s < c->first ||
                    s >= c->first + c->n)
                    continue;
                if (lors_sched_add_replica(dl->s, b, dl->map_depot[q], (int)q, 1) !=
                    LORS_SCHED_OK)
                    rc = LORS_E_NOMEM;
                if (t < 0)
                    dl->data_depot[b] = dl->map_depot[q];
                else if (dl->data_depot[b] >= 0 && lors_sched_replica_hold(dl->s, b, (int)q, 1) < 0)
                    rc = LORS_E_NOMEM;
            }
        }
        /* no mapping of its own data piece: nothing to wait for, it reads others from the
         * start (else it would wait for the writer, stripe after stripe) */
        if (dl->data_depot[b] < 0)
            dl->open[b] = 1;
    }
    return rc;
}

/* The claim slot of column j in the stripe of block b. */
static long claim_at(const dl_t *dl, uint32_t b, int j)
{
    return (long)(b / (uint32_t)dl->ec->k) * (dl->ec->k + dl->ec->m) + j;
}

/* Hold or free (held 1 or 0) every replica of block b but its own data piece, except, when
 * freeing, the pieces another block of the stripe has claimed or won. */
static void hold_foreign_locked(dl_t *dl, uint32_t b, int held)
{
    uint32_t k = (uint32_t)dl->ec->k;
    int64_t s = dl->ec_s0 + b / k;
    for (size_t q = 0; q < dl->x->nmaps; q++) {
        const lors__ec_col_t *c = &dl->ecol[q];
        if (!c->ok || c->column == (int)(b % k) || s < c->first || s >= c->first + c->n)
            continue;
        long at = claim_at(dl, b, c->column);
        if (held == 0 && dl->claims[at] && dl->claim_owner[at] != b)
            continue;
        lors_sched_replica_hold(dl->s, b, (int)q, held);
    }
}

void lors__dl_ec_open_locked(dl_t *dl, uint32_t b)
{
    if (!dl->ec || b >= dl->nblocks || dl->open[b])
        return;
    dl->open[b] = 1;
    hold_foreign_locked(dl, b, 0);
}

void lors__dl_ec_fetch_failed_locked(dl_t *dl, const lors_sched_fetch_t *f, int kind)
{
    if (!dl->ec)
        return;
    lors__dl_ec_open_locked(dl, f->block);
    if (kind == LORS_SCHED_FAIL_BAD_DATA || dl->ec_dead[f->depot])
        return;
    /* the depot failed: every block whose data piece is there may use others from now on */
    dl->ec_dead[f->depot] = 1;
    for (uint32_t b = 0; b < dl->nblocks; b++)
        if (!dl->open[b] && dl->data_depot[b] == f->depot)
            lors__dl_ec_open_locked(dl, b);
}

/* Column j of the stripe of block b, for the stripe's other blocks: held (1) while b fetches
 * it, free again (0: for those that may use other pieces), or gone for good (-1). */
static void hold_others_locked(dl_t *dl, uint32_t b, int j, int held)
{
    uint32_t k = (uint32_t)dl->ec->k, first = b / k * k;
    int64_t s = dl->ec_s0 + b / k;
    for (size_t q = 0; q < dl->x->nmaps; q++) {
        const lors__ec_col_t *c = &dl->ecol[q];
        if (!c->ok || c->column != j || s < c->first || s >= c->first + c->n)
            continue;
        for (uint32_t o = first; o < first + k; o++)
            if (o != b && (held != 0 || dl->open[o] || (uint32_t)j == o - first))
                lors_sched_replica_hold(dl->s, o, (int)q, held);
    }
}

int lors__dl_ec_claim_locked(dl_t *dl, slot_t *sl, const lors_sched_fetch_t *f)
{
    sl->claim = -1;
    if (!dl->ec)
        return 1;
    int j = dl->ecol[f->mapping].column;
    long at = claim_at(dl, f->block, j);
    if (dl->claims[at] && dl->claim_owner[at] != f->block)
        return 0; /* cannot happen: the others' replicas of it are held */
    if (dl->claims[at]++ == 0) {
        dl->claim_owner[at] = f->block;
        hold_others_locked(dl, f->block, j, 1);
    }
    sl->claim = at;
    return 1;
}

void lors__dl_ec_unclaim_locked(dl_t *dl, slot_t *sl, int won)
{
    long at = sl->claim;
    sl->claim = -1;
    if (at < 0)
        return;
    int j = (int)(at % (dl->ec->k + dl->ec->m));
    uint32_t b = dl->claim_owner[at];
    if (won) {
        hold_others_locked(dl, b, j, -1); /* this piece is the block's for good */
        return;
    }
    if (dl->claims[at] > 0 && --dl->claims[at] == 0)
        hold_others_locked(dl, b, j, 0);
}

int lors__dl_ec_late_locked(dl_t *dl, uint32_t b)
{
    int done = 0, opened = 0;
    for (int i = 0; i < dl->ec->k; i++)
        done += dl->blocks[b + (uint32_t)i].buf != NULL;
    if (done == 0 || done == dl->ec->k)
        return 0;
    for (uint32_t i = 0; i < (uint32_t)dl->ec->k; i++)
        if (!dl->blocks[b + i].buf && !dl->open[b + i]) {
            lors__dl_ec_open_locked(dl, b + i);
            opened = 1;
        }
    return opened;
}

int lors__dl_ec_stripe_done_locked(const dl_t *dl, uint32_t b)
{
    if (dl->ec_busy[b / (uint32_t)dl->ec->k])
        return 0;
    for (int i = 0; i < dl->ec->k; i++)
        if (!dl->blocks[b + (uint32_t)i].buf)
            return 0;
    return 1;
}

/* 1 if piece (s, column i) of len bytes matches the digest that some mapping of its column
 * lists, or no mapping lists one (nothing to check against); 0 if it does not match. */
static int decoded_ok(const dl_t *dl, int64_t s, int i, const unsigned char *p, int64_t len)
{
    for (size_t q = 0; q < dl->x->nmaps; q++) {
        const lors__ec_col_t *c = &dl->ecol[q];
        if (!c->ok || c->column != i || s < c->first || s >= c->first + c->n)
            continue;
        int r = lors__ec_piece_check(dl->ec, c, s, p, len);
        if (r >= 0)
            return r;
        /* no digest, or one this build cannot compute: let another mapping vouch */
    }
    return 1;
}

int lors__dl_ec_take_decode_locked(dl_t *dl, uint32_t b)
{
    uint32_t k = (uint32_t)dl->ec->k, first = b / k * k;
    int have[LORS_EC_MAX_K] = {0}, missing = (int)k;
    if (dl->ec_busy[b / k])
        return 0;
    for (uint32_t i = 0; i < k; i++) {
        const block_t *bl = &dl->blocks[first + i];
        if (!bl->buf)
            return 0;
        if (bl->won_col >= 0 && bl->won_col < (int)k && !have[bl->won_col]) {
            have[bl->won_col] = 1;
            missing--;
        }
    }
    if (missing > 0)
        dl->ec_busy[b / k] = 1;
    return missing;
}

/* piece[i]: the buffer of data piece i among the blocks of the stripe at first, else NULL. */
static void data_pieces(const dl_t *dl, uint32_t first, int *have, unsigned char **src,
                        unsigned char **piece)
{
    int k = dl->ec->k;
    for (int i = 0; i < k; i++)
        piece[i] = NULL;
    for (int i = 0; i < k; i++) {
        const block_t *bl = &dl->blocks[first + (uint32_t)i];
        have[i] = bl->won_col;
        src[i] = bl->buf;
        if (bl->won_col >= 0 && bl->won_col < k)
            piece[bl->won_col] = bl->buf; /* a data piece, whichever block brought it */
    }
}

int lors__dl_ec_decode_stripe(dl_t *dl, uint32_t b, unsigned char **fresh, unsigned char **piece)
{
    const lors__ec_t *ec = dl->ec;
    int k = ec->k, have[LORS_EC_MAX_K], want[LORS_EC_MAX_M], nw = 0;
    uint32_t first = b / (uint32_t)k * (uint32_t)k;
    int64_t s = dl->ec_s0 + first / (uint32_t)k, plen = lors__ec_piece_len(ec, s);
    unsigned char *src[LORS_EC_MAX_K], *dst[LORS_EC_MAX_M];
    data_pieces(dl, first, have, src, piece);
    for (int i = 0; i < k; i++)
        if (!piece[i]) {
            if (nw >= ec->m)
                return -EBADMSG;
            want[nw] = i;
            dst[nw] = fresh[nw];
            piece[i] = dst[nw++];
        }
    if (nw > 0 && lors__ec_decode(ec, plen, have, src, want, nw, dst) != LORS_OK)
        return -EBADMSG;
    /* the parity pieces carry only a CRC: a decoded data piece must match its own digest */
    for (int w = 0; dl->o->verify && w < nw; w++)
        if (!decoded_ok(dl, s, want[w], dst[w], plen))
            return -EILSEQ;
    return 0;
}

int lors__dl_ec_write_stripe(dl_t *dl, uint32_t b, const lors__out_t *out)
{
    const lors__ec_t *ec = dl->ec;
    int k = ec->k;
    int64_t s = dl->ec_s0 + b / (uint32_t)k;
    unsigned char *piece[LORS_EC_MAX_K];
    /* a fetch thread has decoded it already, unless it could not get buffers: then here */
    int rc = lors__dl_ec_decode_stripe(dl, b, dl->scratch, piece);
    if (rc < 0)
        return rc;
    for (int i = 0; i < k; i++) {
        const block_t *bl = &dl->blocks[b + (uint32_t)i];
        int64_t a, l;
        lors__ec_data_range(ec, s, i, &a, &l);
        if (bl->len > 0 && (rc = lors__out_write(out, piece[i] + (bl->off - a),
                                                 (size_t)bl->len)) < 0)
            return rc;
    }
    return 0;
}

/* 1 if mapping q can no longer serve: its last fetch, or its depot's, failed. */
static int lost(const dl_t *dl, size_t q)
{
    return dl->map_depot[q] < 0 || dl->map_fate[q].failed ||
           dl->dep_fate[dl->map_depot[q]].failed;
}

void lors__dl_ec_fail_locked(dl_t *dl, uint32_t b)
{
    const lors__ec_t *ec = dl->ec;
    int k = ec->k, n = ec->k + ec->m;
    int64_t S = (int64_t)k * ec->piece;
    int64_t last = dl->ec_s0 + (int64_t)(dl->nblocks / (uint32_t)k) - 1;
    /* the stripes of the range with fewer than k pieces left: runs of them, by byte range */
    char list[400] = "";
    size_t used = 0;
    int64_t run = -1, fa = -1, fl = 0;
    int left_at_run = 0, nruns = 0;
    for (int64_t s = dl->ec_s0; s <= last + 1; s++) {
        int alive = 0;
        for (int j = 0; s <= last && j < n; j++)
            for (size_t q = 0; q < dl->x->nmaps; q++) {
                const lors__ec_col_t *c = &dl->ecol[q];
                if (c->ok && c->column == j && c->first <= s && s < c->first + c->n &&
                    !lost(dl, q)) {
                    alive++;
                    break;
                }
            }
        int bad = s <= last && alive < k;
        if (bad && run < 0) {
            run = s;
            left_at_run = alive;
        }
        if (!bad && run >= 0) {
            int64_t a = run * S, e = (s - 1) * S + lors__ec_stripe_bytes(ec, s - 1);
            if (fa < 0) {
                fa = a;
                fl = e - a;
            }
            if (used < sizeof list - 64)
                used += (size_t)snprintf(list + used, sizeof list - used, "%sbytes %lld-%lld",
                                         nruns ? ", " : "", (long long)a, (long long)(e - 1));
            nruns++;
            run = -1;
        }
    }
    if (fa < 0) { /* no stripe is short of pieces: the failed block's stripe, as it is */
        int64_t s = dl->ec_s0 + b / (uint32_t)k;
        fa = s * S;
        fl = lors__ec_stripe_bytes(ec, s);
        snprintf(list, sizeof list, "bytes %lld-%lld", (long long)fa, (long long)(fa + fl - 1));
        left_at_run = -1;
    }
    if (dl->rep && dl->rc == LORS_OK) {
        dl->rep->missing_off = fa;
        dl->rep->missing_len = fl;
    }
    if (left_at_run >= 0)
        lors__dl_fail_locked(dl, LORS_E_NO_REPLICA, "%s: fewer than %d of the %d pieces of each stripe can be read "
                          "(%d left in the first); the file cannot be rebuilt there", list, k,
                          n, left_at_run);
    else
        lors__dl_fail_locked(dl, LORS_E_NO_REPLICA, "%s: no set of %d distinct pieces of the stripe could be read",
                          list, k);
}

void lors__dl_ec_free(dl_t *dl)
{
    free(dl->ecol);
    free(dl->claims);
    free(dl->claim_owner);
    free(dl->open);
    free(dl->data_depot);
    free(dl->ec_dead);
    free(dl->ec_busy);
    for (int j = 0; j < 16; j++)
        free(dl->scratch[j]);
}
