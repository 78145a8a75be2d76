/* lors_download_report.c -- what a download reports at its end: the numbers, and lost copies.
 *
 * Lost redundancy is silent in the data (every block came from some good replica) but not in
 * the report: the engine remembers, for every mapping and every depot, whether its latest
 * fetch failed (lors_download_engine.c, note_fate_locked), and here the range is swept once
 * over the mappings' starts and ends to list the bytes with fewer working copies than mappings.  A
 * mapping counts as lost when its own latest fetch failed, when it ever returned bad data, or
 * when its depot's latest fetch failed: a depot that refused its last connection is not asked
 * again for its other mappings, so they are known only through it.  Bytes with no copy left
 * because their leases ended are said to have expired, and when, not that copies failed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lors_download_int.h"
#include "lors_manage_int.h"
#include "lors_report.h"
#include "lns_array.h"
#include "lns_time.h"

/* Words for a failed fetch. */
static const char *fate_why(const fate_t *f)
{
    if (strcmp(f->op, "CHECKSUM") == 0)
        return "bad data";
    if (strcmp(f->op, "TIMEOUT") == 0)
        return "no answer in time";
    return lors__why(f->ierr);
}

/* How mapping k failed, or NULL: its latest fetch's failure, else bad data if it ever returned
 * any.  Bad data stays even when a later fetch from the mapping passed: one that loaded only
 * the rest of a block (docs/lors.md, "The rest of a block") can miss the bad bytes. */
static const fate_t *map_failed(const dl_t *dl, size_t k)
{
    static const fate_t bad_data = {1, IBP_OK, "CHECKSUM"};
    if (dl->map_fate[k].failed)
        return &dl->map_fate[k];
    for (size_t i = 0; i < dl->rep->nbad; i++) /* dl->rep: lors__dl_fill_report's */
        if (dl->rep->bad_mappings[i] == (int)k)
            return &bad_data;
    return NULL;
}

static int lost(const dl_t *dl, size_t k)
{
    return map_failed(dl, k) || dl->dep_fate[dl->map_depot[k]].failed;
}

typedef struct edge {
    int64_t at;
    int dcopies, dleft;
} edge_t;

static int cmp_edge(const void *a, const void *b)
{
    int64_t x = ((const edge_t *)a)->at, y = ((const edge_t *)b)->at;
    return (x > y) - (x < y);
}

/* Append [a, b) with copies/left to the report, merged with the previous range when it
 * continues it.  0, or -1 when out of memory (the report then lists fewer ranges). */
static int add_degraded(lors_dl_report_t *r, size_t *cap, int64_t a, int64_t b, int copies,
                        int left)
{
    lors_dl_degraded_t *last = r->ndegraded ? &r->degraded[r->ndegraded - 1] : NULL;
    if (last && last->offset + last->length == a && last->copies == copies && last->left == left) {
        last->length += b - a;
        return 0;
    }
    if (lns_grow(&r->degraded, cap, r->ndegraded + 1, sizeof *r->degraded, 8) < 0)
        return -1;
    r->degraded[r->ndegraded++] = (lors_dl_degraded_t){a, b - a, copies, left};
    return 0;
}

/* The bytes of [off, end) where fewer usable mappings work than hold them. */
static void degraded(dl_t *dl, int64_t off, int64_t end)
{
    const xnd_t *x = dl->x;
    size_t n = 0, cap = 0;
    int any = 0;
    for (size_t k = 0; k < x->nmaps && !any; k++)
        any = dl->map_depot[k] >= 0 && lost(dl, k);
    if (!any || end <= off)
        return;
    edge_t *e = malloc(2 * x->nmaps * sizeof *e);
    if (!e)
        return;
    for (size_t k = 0; k < x->nmaps; k++) {
        const xnd_mapping_t *m = x->maps[k];
        if (dl->map_depot[k] < 0)
            continue;
        int64_t a = m->exnode_offset, b = a + m->logical_length;
        a = a > off ? a : off;
        b = b < end ? b : end;
        if (a >= b)
            continue;
        int left = !lost(dl, k);
        e[n++] = (edge_t){a, 1, left};
        e[n++] = (edge_t){b, -1, -left};
    }
    qsort(e, n, sizeof *e, cmp_edge);
    int copies = 0, left = 0;
    for (size_t i = 0; i < n;) {
        int64_t at = e[i].at;
        for (; i < n && e[i].at == at; i++) {
            copies += e[i].dcopies;
            left += e[i].dleft;
        }
        if (i < n && left < copies && add_degraded(dl->rep, &cap, at, e[i].at, copies, left) < 0)
            break;
    }
    free(e);
}

/* Each depot's words when the download stopped counting on it: its own latest failure, else
 * that of the first of its mappings found failing (map_failed). */
static void depot_failed(const dl_t *dl, int d, char *buf, size_t size)
{
    const fate_t *f = dl->dep_fate[d].failed ? &dl->dep_fate[d] : NULL;
    for (size_t k = 0; !f && k < dl->x->nmaps; k++)
        if (dl->map_depot[k] == d)
            f = map_failed(dl, k);
    snprintf(buf, size, "%s", f ? fate_why(f) : "");
}

void lors__dl_fill_report(dl_t *dl, uint64_t t0)
{
    lors_dl_report_t *r = dl->rep;
    if (!r)
        return;
    r->seconds = (double)((uint64_t)lns_mono_ns() - t0) / 1e9;
    r->blocks = dl->nblocks;
    r->blocksize = dl->B;
    r->erasure_coded = dl->ec != NULL;
    r->peak_buffered = dl->peak;
    r->max_fetch_buffer = (int64_t)dl->bufsz;
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
            o->wasted = st.cancelled + st.withdrawn;
        }
        depot_failed(dl, d, o->failed, sizeof o->failed);
    }
    degraded(dl, r->offset, r->offset + r->length);
}

void lors__dl_note_expired(const xnd_t *x, int ec, lors_dl_report_t *rep)
{
    int64_t last, now = lns_now_s();
    char when[32];
    if (lors_leases_expired(x, 0, -1, now, &last)) {
        xnd_time_format(last, when, sizeof when);
        lors__report_error(rep, "the file's leases expired at %s UTC", when);
    } else if (!ec && rep->missing_len > 0 &&
               lors_leases_expired(x, rep->missing_off, rep->missing_len, now, &last)) {
        xnd_time_format(last, when, sizeof when);
        lors__report_error(rep, "bytes %lld-%lld: the leases of all their copies expired, the "
                           "last at %s UTC", (long long)rep->missing_off,
                           (long long)(rep->missing_off + rep->missing_len - 1), when);
    }
}
