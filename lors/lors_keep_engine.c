/* lors_keep_engine.c -- the keeper's pass over one network file: refresh, check, repair, prune.
 *
 * A pass probes every mapping once and works from that picture:
 *   1. refresh: each live mapping whose lease ends within the margin is extended to its
 *      depot's maximum (lors_refresh on just those);
 *   2. repair: where a byte (a stripe) has fewer live copies (pieces) than min_live, new ones
 *      are made on the policy's depots: copies by the augment engine (IBP SEND from a
 *      survivor, relayed through this client where SEND fails; distinct: never on a depot
 *      that holds a live copy of the same bytes, at another place than the copies' where
 *      places are known, the depot with fewest of the file's mappings first),
 *      pieces by lors_keep_ec.c (decoded from k survivors, or sent as they are off a
 *      leaving depot);
 *   3. prune: a dead mapping whose bytes all have a live copy elsewhere, and a mapping on a
 *      leaving depot whose bytes all have min_live copies elsewhere, leave the exNode and their
 *      allocations are freed where the depot answers.  A mapping that is the last holder of
 *      any byte stays, dead or not: its depot may come back.  So does every mapping whose
 *      function lns does not understand (lors__func_read: UNKNOWN, an lns_ec column that does
 *      not fit the file): what it holds, and so whether it is replaced, cannot be known; it
 *      is counted in the report instead.
 * Mappings on leaving depots count as copies nowhere, but serve as sources while they answer.
 * Every new allocation is handed to o->on_alloc before anything is stored in it, so a keeper
 * killed mid-repair can free what never reached the exNode (the tool's journal).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lns_time.h"
#include "lors_augment_int.h"
#include "lors_ec_int.h"
#include "lors_func_int.h"
#include "lors_keep_int.h"
#include "lors_manage_int.h"
#include "lors_report.h"

void lors_keep_opts_init(lors_keep_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->copies = 2;
    o->margin_s = 2 * 24 * 3600;
    o->duration_s = -1;
    o->provisional_s = 600;
    o->reliability = IBP_HARD;
    o->threads = 4;
    o->timeout_s = 30;
}

void lors_keep_report_free(lors_keep_report_t *r)
{
    if (!r)
        return;
    free(r->risks);
    r->risks = NULL;
    r->nrisks = 0;
    free(r->fresh);
    r->fresh = NULL;
    r->nfresh = 0;
}

int lors__keep_stopped(const keep_t *k)
{
    return k->o->stop && *k->o->stop;
}

/* ---- the picture: who is alive, who counts --------------------------------------------- */

/* Grow the per-mapping arrays to x->nmaps; mappings added by the repair are alive. */
int lors__keep_grow(keep_t *k)
{
    size_t n = k->x->nmaps, old = k->n;
    if (n <= old)
        return LORS_OK;
    lors_probe_t *pr = realloc(k->pr, n * sizeof *pr);
    if (pr)
        k->pr = pr;
    unsigned char *lv = realloc(k->leaving, n);
    if (lv)
        k->leaving = lv;
    unsigned char *nw = realloc(k->fresh, n);
    if (nw)
        k->fresh = nw;
    if (!pr || !lv || !nw)
        return LORS_E_NOMEM;
    for (size_t i = old; i < n; i++) {
        const xnd_mapping_t *m = k->x->maps[i];
        memset(&pr[i], 0, sizeof pr[i]);
        pr[i].mapping = (int)i;
        lors__map_depot(m, &pr[i].depot);
        pr[i].alive = 1;
        pr[i].expires = m->end.epoch == XND_TIME_UNKNOWN ? 0 : m->end.epoch;
        lv[i] = 0;
        nw[i] = 1;
    }
    k->n = n;
    return LORS_OK;
}

/* Mapping i counts as a live copy: alive and not on a leaving depot. */
int lors__keep_counts(const keep_t *k, size_t i)
{
    return k->pr[i].alive && !k->leaving[i];
}

typedef struct count_arg {
    const keep_t *k;
    lors__mapidx_t mi;
    size_t skip;              /* this mapping never counts ((size_t)-1: none) */
} count_arg_t;

static int counts_cb(const xnd_mapping_t *m, void *arg)
{
    count_arg_t *a = arg;
    size_t i = lors__mapidx_find(&a->mi, m);
    return i != (size_t)-1 && i != a->skip && i < a->k->n && lors__keep_counts(a->k, i);
}

/* The file cut into ranges of constant count of live copies (mappings that count), skip
 * left out.  *out malloc'd. */
static int live_cover(const keep_t *k, size_t skip, xnd_range_t **out, size_t *n)
{
    count_arg_t a = {.k = k, .skip = skip};
    int rc = lors__mapidx_build(k->x, &a.mi);
    if (rc != LORS_OK)
        return rc;
    rc = xnd_coverage(k->x, counts_cb, &a, out, n);
    lors__mapidx_free(&a.mi);
    return rc == XND_OK ? LORS_OK : rc == XND_E_NOMEM ? LORS_E_NOMEM : LORS_E_EXNODE;
}

/* The fewest live copies any byte of [off, off + len) has without mapping skip; -1 on error. */
static long min_copies(const keep_t *k, size_t skip, int64_t off, int64_t len)
{
    xnd_range_t *r = NULL;
    size_t n = 0;
    long least = -1;
    if (live_cover(k, skip, &r, &n) != LORS_OK)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (r[i].offset < off + len && r[i].offset + r[i].length > off &&
            (least < 0 || (long)r[i].count < least))
            least = (long)r[i].count;
    free(r);
    return least < 0 ? 0 : least;
}

static int add_risk(lors_keep_report_t *rep, int64_t off, int64_t len, int live, int need,
                    int lost)
{
    lors_keep_risk_t *last = rep->nrisks ? &rep->risks[rep->nrisks - 1] : NULL;
    if (lost)
        rep->lost = 1;
    if (last && last->offset + last->length == off && last->live == live && last->need == need) {
        last->length += len;
        return LORS_OK;
    }
    lors_keep_risk_t *nr = realloc(rep->risks, (rep->nrisks + 1) * sizeof *nr);
    if (!nr)
        return LORS_E_NOMEM;
    rep->risks = nr;
    nr[rep->nrisks++] = (lors_keep_risk_t){off, len, live, need, lost};
    return LORS_OK;
}

/* ---- 1. refresh -------------------------------------------------------------------------- */

static int refresh(keep_t *k)
{
    const lors_keep_opts_t *o = k->o;
    int64_t now = lns_now_s();
    size_t want = 0;
    unsigned char *sel = calloc(k->n ? k->n : 1, 1);
    if (!sel)
        return LORS_E_NOMEM;
    for (size_t i = 0; i < k->n; i++)
        if (k->pr[i].alive && !k->leaving[i] && k->x->maps[i]->cap[XND_MANAGE] &&
            k->pr[i].expires < now + o->margin_s) {
            sel[i] = 1;
            want++;
        }
    if (o->dry_run || want == 0) {
        k->rep->would_refresh = o->dry_run ? (int)want : 0;
        free(sel);
        return LORS_OK;
    }
    lors_refresh_opts_t ro;
    lors_refresh_report_t rr;
    lors_refresh_opts_init(&ro);
    ro.select = sel;
    ro.threads = o->threads;
    ro.timeout_s = o->timeout_s;
    ro.on_event = o->on_event;
    ro.event_arg = o->event_arg;
    int rc = lors_refresh(&ro, k->x, &rr);
    for (size_t i = 0; i < rr.n && i < k->n; i++) {
        if (!sel[i])
            continue;
        if (rr.items[i].ok) {
            k->rep->refreshed++;
            k->pr[i].expires = rr.items[i].new_end;
            k->rep->changed = 1;
        } else {
            k->rep->refresh_failed++;
        }
    }
    if (rc != LORS_OK && rc != LORS_E_PARTIAL)
        lns_err_set(k->rep->error, sizeof k->rep->error, "%s", rr.error);
    lors_refresh_report_free(&rr);
    free(sel);
    return rc == LORS_E_PARTIAL ? LORS_OK : rc;
}

/* The new mappings' provisional leases extended to the policy's duration, unless the caller
 * does that once x is written (defer_extend). */
static int extend_fresh(keep_t *k)
{
    const lors_keep_opts_t *o = k->o;
    size_t want = 0;
    for (size_t i = 0; i < k->n; i++)
        want += k->fresh[i];
    if (o->dry_run || o->defer_extend || !want)
        return LORS_OK;
    int failed = 0;
    int rc = lors_lease_extend(k->x, k->fresh, o->duration_s, o->provisional_s, o->threads,
                               o->timeout_s, &failed);
    for (size_t i = 0; i < k->n; i++)
        if (k->fresh[i] && k->x->maps[i]->end.epoch != XND_TIME_UNKNOWN)
            k->pr[i].expires = k->x->maps[i]->end.epoch;
    k->rep->refresh_failed += failed;
    return rc == LORS_E_PARTIAL ? LORS_OK : rc;
}

/* ---- 2. repair (replicated) -------------------------------------------------------------- */

/* Ranges with fewer than min_live copies that some live mapping (leaving or not) can be
 * copied from, each handed to the augment engine on its own: one range without survivors
 * must not stop the repair of the others. */
static int repair_copies(keep_t *k)
{
    const lors_keep_opts_t *o = k->o;
    xnd_range_t *r = NULL;
    size_t nr = 0;
    int rc = live_cover(k, (size_t)-1, &r, &nr);
    if (rc != LORS_OK)
        return rc;
    int64_t size = xnd_size(k->x);
    for (size_t i = 0; i < nr && rc == LORS_OK; i++) {
        int64_t off = r[i].offset, len = r[i].length;
        if ((long)r[i].count >= k->min_live || off >= size)
            continue;
        if (len > size - off)
            len = size - off;
        /* merge the following short ranges: one augment per stretch */
        while (i + 1 < nr && (long)r[i + 1].count < k->min_live && r[i + 1].offset < size) {
            i++;
            len = (r[i].offset + r[i].length < size ? r[i].offset + r[i].length : size) - off;
        }
        if (o->dry_run) {
            k->rep->would_add += k->min_live > (int)r[i].count ? o->copies - (int)r[i].count : 0;
            continue;
        }
        if (lors__keep_stopped(k)) {
            rc = LORS_E_STOPPED;
            break;
        }
        if (k->ntargets == 0) {
            lns_err_set(k->rep->error, sizeof k->rep->error,
                        "keep: no depot to place new copies on");
            continue;
        }
        lors_augment_opts_t ao;
        lors_report_t ar;
        lors_augment_opts_init(&ao);
        ao.up.depots = k->targets;
        ao.up.ndepots = k->ntargets;
        ao.up.copies = o->copies;
        ao.up.duration_s = o->duration_s;
        ao.up.provisional_s = o->provisional_s;
        ao.up.reliability = o->reliability;
        ao.up.threads = o->threads;
        ao.up.timeout_s = o->timeout_s;
        ao.up.on_event = o->on_event;
        ao.up.event_arg = o->event_arg;
        ao.up.stop = o->stop;
        ao.balance = 1;
        ao.distinct = 1;
        ao.offset = off;
        ao.length = len;
        ao.probes = k->pr;
        ao.discount = k->leaving;
        ao.on_alloc = o->on_alloc;
        ao.alloc_arg = o->alloc_arg;
        int arc = lors__augment_copies(&ao, k->x, NULL, &ar); /* replicated ranges */
        if (arc == LORS_OK) {
            /* augment kept them alive while it ran; the pass does until it ends */
            for (size_t m = k->n; m < k->x->nmaps; m++)
                lors__alive_add(k->alive, k->x->maps[m]->cap[XND_MANAGE]);
            k->rep->added += ar.mappings;
            k->rep->bytes_sent += ar.bytes_sent + ar.bytes_relayed;
            if (ar.mappings > 0)
                k->rep->changed = 1;
            rc = lors__keep_grow(k);
        } else if (arc == LORS_E_STOPPED || arc == LORS_E_NOMEM || arc == LORS_E_WRITE) {
            rc = arc;
        }
        k->rep->freed.freed += ar.freed.freed;
        k->rep->freed.unfreed += ar.freed.unfreed;
        if (arc != LORS_OK && !k->rep->error[0])
            lns_err_set(k->rep->error, sizeof k->rep->error, "keep: %s", ar.error);
        lors_report_free(&ar);
    }
    free(r);
    return rc;
}

/* ---- 3. prune ---------------------------------------------------------------------------- */

static int ec_replaced(const keep_t *k, size_t i);

/* 1 if lns does not understand mapping i's function. */
static int unread(const keep_t *k, size_t i)
{
    lors__func_t f;
    lors__func_read(k->x, k->ec_present ? &k->ec : NULL, k->x->maps[i], &f, NULL, 0);
    return f.kind == LORS_FUNC_UNKNOWN;
}

/* May mapping i leave the exNode: dead with its bytes alive elsewhere, or on a leaving depot
 * with min_live copies elsewhere (an erasure-coded column: a live copy of the column); never
 * one lns cannot interpret. */
static int removable(const keep_t *k, size_t i)
{
    const xnd_mapping_t *m = k->x->maps[i];
    if (k->fresh[i] || (k->pr[i].alive && !k->leaving[i]) || unread(k, i))
        return 0;
    if (k->ec_present)
        return ec_replaced(k, i);
    if (m->logical_length <= 0)
        return !k->pr[i].alive;
    long least = min_copies(k, i, m->exnode_offset, m->logical_length);
    return k->pr[i].alive ? least >= k->min_live : least >= 1;
}

static int ec_replaced(const keep_t *k, size_t i)
{
    lors__ec_col_t c, d;
    lors__ec_col(&k->ec, k->x->maps[i], &c);
    if (!c.ok)
        return !k->pr[i].alive && min_copies(k, i, k->x->maps[i]->exnode_offset,
                                              k->x->maps[i]->logical_length) >= 1;
    for (size_t j = 0; j < k->n; j++) {
        if (j == i || !lors__keep_counts(k, j))
            continue;
        lors__ec_col(&k->ec, k->x->maps[j], &d);
        if (d.ok && d.column == c.column && d.first <= c.first && d.first + d.n >= c.first + c.n)
            return 1;
    }
    return 0;
}

static int prune(keep_t *k)
{
    size_t *gone = malloc((k->n ? k->n : 1) * sizeof *gone);
    const char **caps = malloc((k->n ? k->n : 1) * sizeof *caps);
    size_t ng = 0, nc = 0;
    if (!gone || !caps) {
        free(gone);
        free(caps);
        return LORS_E_NOMEM;
    }
    /* one at a time: each removal changes what the others' bytes have left */
    for (size_t i = 0; i < k->n; i++) {
        if (!removable(k, i))
            continue;
        gone[ng++] = i;
        k->pr[i].alive = 0; /* from now on it counts for nothing */
        k->leaving[i] = 1;
    }
    if (k->o->dry_run) {
        k->rep->would_remove = (int)ng;
        goto out;
    }
    for (size_t g = 0; g < ng; g++)
        if (k->x->maps[gone[g]]->cap[XND_MANAGE])
            caps[nc++] = k->x->maps[gone[g]]->cap[XND_MANAGE];
    /* events first: the mappings still hold their numbers and ranges */
    for (size_t g = 0; g < ng && k->o->on_event; g++) {
        const xnd_mapping_t *m = k->x->maps[gone[g]];
        lors_event_t ev;
        memset(&ev, 0, sizeof ev);
        ev.kind = LORS_EV_TRIM;
        ev.depot = k->pr[gone[g]].depot.host[0] ? &k->pr[gone[g]].depot : NULL;
        ev.fragment = ev.copy = (int)gone[g];
        ev.offset = m->exnode_offset;
        ev.length = m->logical_length;
        ev.freed = -1;
        k->o->on_event(k->o->event_arg, &ev);
    }
    /* free before editing x: the capabilities are x's strings */
    lors_freed_t fr;
    memset(&fr, 0, sizeof fr);
    if (nc > 0)
        lors__release(caps, nc, k->o->threads, k->o->timeout_s > 5 ? 5 : k->o->timeout_s, &fr);
    k->rep->unfreed += fr.unfreed + (int)(ng - nc);
    for (size_t g = ng; g-- > 0;) {
        size_t i = gone[g];
        xnd_remove(k->x, i);
        memmove(&k->pr[i], &k->pr[i + 1], (k->n - i - 1) * sizeof *k->pr);
        memmove(&k->leaving[i], &k->leaving[i + 1], k->n - i - 1);
        memmove(&k->fresh[i], &k->fresh[i + 1], k->n - i - 1);
        k->n--;
    }
    k->rep->removed += (int)ng;
    if (ng)
        k->rep->changed = 1;
out:
    free(gone);
    free(caps);
    return LORS_OK;
}

/* ---- what is left at risk ---------------------------------------------------------------- */

static int risks(keep_t *k)
{
    int rc = LORS_OK;
    if (k->ec_present) {
        lors_probe_t *cp = malloc((k->n ? k->n : 1) * sizeof *cp);
        lors_ec_stripe_t *st = NULL;
        size_t ns = 0;
        if (!cp)
            return LORS_E_NOMEM;
        memcpy(cp, k->pr, k->n * sizeof *cp);
        for (size_t i = 0; i < k->n; i++)
            cp[i].alive = lors__keep_counts(k, i);
        rc = lors_ec_stripes(k->x, cp, &st, &ns);
        for (size_t s = 0; rc == LORS_OK && s < ns; s++)
            if (st[s].alive < k->min_live) {
                rc = add_risk(k->rep, st[s].offset, st[s].length, st[s].alive,
                              k->ec.k + k->ec.m, st[s].alive < k->ec.k);
            }
        free(st);
        free(cp);
        return rc;
    }
    xnd_range_t *r = NULL;
    size_t nr = 0;
    int64_t size = xnd_size(k->x);
    if ((rc = live_cover(k, (size_t)-1, &r, &nr)) != LORS_OK)
        return rc;
    for (size_t i = 0; rc == LORS_OK && i < nr; i++) {
        if (r[i].offset >= size || (long)r[i].count >= k->min_live)
            continue;
        int64_t len = r[i].offset + r[i].length > size ? size - r[i].offset : r[i].length;
        rc = add_risk(k->rep, r[i].offset, len, (int)r[i].count, k->o->copies, r[i].count == 0);
    }
    free(r);
    return rc;
}

/* ---- the pass ---------------------------------------------------------------------------- */

static const char *check_opts(const lors_keep_opts_t *o)
{
    if (o->copies < 1 || o->copies > 1000)
        return "copies out of range (1..1000)";
    if (o->min_live < 0)
        return "min_live must be >= 0";
    if (o->margin_s < 0)
        return "the margin must be >= 0";
    if (o->duration_s == 0 || o->duration_s < -1)
        return "duration must be positive or -1";
    if (o->provisional_s < 0)
        return "the provisional lease must be >= 0";
    if (o->threads < 1 || o->timeout_s < 1)
        return "threads and timeout must be positive";
    return NULL;
}

/* The policy's depots that are not leaving. */
static int targets(keep_t *k)
{
    const lors_keep_opts_t *o = k->o;
    k->targets = malloc((o->ndepots ? o->ndepots : 1) * sizeof *k->targets);
    if (!k->targets)
        return LORS_E_NOMEM;
    for (size_t d = 0; d < o->ndepots; d++) {
        int out = 0;
        for (size_t l = 0; l < o->nleaving && !out; l++)
            out = lors__same_depot(&o->depots[d], &o->leaving[l]);
        if (!out)
            k->targets[k->ntargets++] = o->depots[d];
    }
    return LORS_OK;
}

int lors__keep_pass(const lors_keep_opts_t *o, xnd_t *x, lors_keep_report_t *report, int prune_dead)
{
    lors_keep_report_t local;
    lors_keep_report_t *rep = report ? report : &local;
    keep_t k;
    const char *bad;
    char err[256];
    int rc;

    memset(rep, 0, sizeof *rep);
    memset(&k, 0, sizeof k);
    if (!o || !x) {
        lors__report_error(rep, "keep: missing options or exNode");
        return LORS_E_INVAL;
    }
    if ((bad = check_opts(o))) {
        lors__report_error(rep, "keep: %s", bad);
        return LORS_E_INVAL;
    }
    k.o = o;
    k.x = x;
    k.rep = rep;
    if ((rc = lors__ec_read(x, &k.ec, &k.ec_present, err, sizeof err)) != LORS_OK) {
        lors__report_error(rep, "keep: %s", err);
        return rc;
    }
    int target = k.ec_present ? k.ec.k + k.ec.m : o->copies;
    k.min_live = o->min_live > 0 && o->min_live < target ? o->min_live : target;
    if (k.ec_present && k.min_live < k.ec.k)
        k.min_live = k.ec.k;

    rep->mappings = (int)x->nmaps;
    rep->erasure_coded = k.ec_present;
    if ((rc = targets(&k)) != LORS_OK)
        goto out;
    if (!o->dry_run)
        k.alive = lors__alive_start(o->duration_s, o->provisional_s, o->timeout_s);
    if ((rc = lors_probe_all(x, o->threads, o->timeout_s, &k.pr)) != LORS_OK)
        goto out;
    k.n = x->nmaps;
    k.leaving = calloc(k.n ? k.n : 1, 1);
    k.fresh = calloc(k.n ? k.n : 1, 1);
    if (!k.leaving || !k.fresh) {
        rc = LORS_E_NOMEM;
        goto out;
    }
    for (size_t i = 0; i < k.n; i++) {
        for (size_t l = 0; l < o->nleaving && !k.leaving[i]; l++)
            k.leaving[i] = (unsigned char)lors__same_depot(&k.pr[i].depot, &o->leaving[l]);
        rep->dead += !lors__keep_counts(&k, i);
        rep->unread += unread(&k, i);
    }

    if ((rc = refresh(&k)) != LORS_OK)
        goto out;
    if (lors__keep_stopped(&k)) {
        rc = LORS_E_STOPPED;
        goto out;
    }
    rc = k.ec_present ? lors__keep_ec(&k) : repair_copies(&k);
    if (rc != LORS_OK)
        goto out;
    if ((rc = lors__keep_grow(&k)) != LORS_OK || (rc = extend_fresh(&k)) != LORS_OK ||
        (prune_dead && (rc = prune(&k)) != LORS_OK) ||
        (rc = risks(&k)) != LORS_OK)
        goto out;
    for (size_t i = 0; i < k.n; i++)
        if (lors__keep_counts(&k, i) && k.pr[i].expires > 0 &&
            (rep->next_end == 0 || k.pr[i].expires < rep->next_end))
            rep->next_end = k.pr[i].expires;
    if (rep->nrisks > 0 || rep->refresh_failed > 0) {
        if (rep->nrisks > 0 && !rep->error[0]) {
            char b[64];
            lors__bytes(rep->risks[0].offset, rep->risks[0].length, b, sizeof b);
            lors__report_error(rep, "keep: %s %s (%d of %d %s)", b,
                               rep->lost ? "are lost" : "are at risk", rep->risks[0].live,
                               rep->risks[0].need, k.ec_present ? "pieces" : "copies");
        } else if (!rep->error[0]) {
            lors__report_error(rep, "keep: %d leases could not be extended",
                               rep->refresh_failed);
        }
        rc = LORS_E_PARTIAL;
    } else {
        rep->error[0] = '\0'; /* a failed try that a later one made good */
    }

    if (o->defer_extend && (rep->fresh = malloc(k.n ? k.n : 1))) {
        memcpy(rep->fresh, k.fresh, k.n);
        rep->nfresh = k.n;
    } else if (o->defer_extend) {
        rc = LORS_E_NOMEM;
    }

out:
    lors__alive_stop(k.alive);
    if (rc != LORS_OK && rc != LORS_E_PARTIAL && !rep->error[0])
        lors__report_error(rep, "keep: %s", lors_strerror(rc));
    if (k.ec_present)
        lors__ec_free(&k.ec);
    free(k.pr);
    free(k.leaving);
    free(k.fresh);
    free(k.targets);
    if (!report)
        lors_keep_report_free(&local);
    return rc;
}

int lors_keep(const lors_keep_opts_t *o, xnd_t *x, lors_keep_report_t *report)
{
    return lors__keep_pass(o, x, report, 1);
}
