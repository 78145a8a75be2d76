/* lors_refresh.c -- extend the lifetime of every mapping of an exNode.
 *
 * Per mapping: CHNG with a duration counted from now (whatever the mode, the wire speaks
 * "seconds from now", or -1 for the depot's maximum), then PROBE, because the end the depot
 * actually keeps is what the exNode must say: a depot may round, and with -1 only it knows.
 * The workers fill one item each; the calling thread writes the new ends into the exNode
 * after the join (an xnd_t is not thread-safe).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lns_time.h"
#include "lors_manage_int.h"

void lors_refresh_opts_init(lors_refresh_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->mode = LORS_REFRESH_MAX;
    o->threads = 4;
    o->timeout_s = 30;
}

void lors_refresh_report_free(lors_refresh_report_t *r)
{
    if (!r)
        return;
    free(r->items);
    r->items = NULL;
    r->n = r->failed = 0;
}

typedef struct refresh_run {
    const lors_refresh_opts_t *o;
    const xnd_t *x;
    ibp_client_t *ibp;
    lors_refresh_item_t *items;
} refresh_run_t;

static void fail(lors_refresh_item_t *it, int err, const char *why)
{
    it->ok = 0;
    it->ibp_err = err;
    snprintf(it->why, sizeof it->why, "%s", why);
}

static void refresh_one(void *arg, size_t i)
{
    refresh_run_t *r = arg;
    const xnd_mapping_t *m = r->x->maps[i];
    lors_refresh_item_t *it = &r->items[i];
    const char *mcap = m->cap[XND_MANAGE];
    ibp_probe_t p;
    int64_t now = lns_now_s(), duration = -1;
    int rc;

    it->mapping = (int)i;
    it->old_end = it->new_end = m->end.epoch;
    if (!mcap) {
        fail(it, 0, "no manage capability");
        return;
    }
    switch (r->o->mode) {
    case LORS_REFRESH_ADD:
        if (it->old_end == XND_TIME_UNKNOWN) {
            /* the exNode does not say when it ends: the depot does */
            if ((rc = ibp_probe(r->ibp, mcap, &p)) != IBP_OK) {
                fail(it, rc, lors__why(rc));
                return;
            }
            it->old_end = now + p.seconds_left;
        }
        duration = it->old_end + r->o->value - now;
        break;
    case LORS_REFRESH_FROM_NOW: duration = r->o->value; break;
    case LORS_REFRESH_AT: duration = r->o->value - now; break;
    case LORS_REFRESH_MAX: duration = -1; break;
    }
    if (duration == 0 || duration < -1 || (duration == -1 && r->o->mode != LORS_REFRESH_MAX)) {
        fail(it, 0, "the new end is in the past");
        return;
    }
    if ((rc = ibp_change(r->ibp, mcap, 0, duration, 0)) != IBP_OK) {
        fail(it, rc, lors__why(rc));
        return;
    }
    if ((rc = ibp_probe(r->ibp, mcap, &p)) != IBP_OK) {
        char why[sizeof it->why];
        snprintf(why, sizeof why, "changed, but the PROBE that reads the new end failed: %s",
                 lors__why(rc));
        fail(it, rc, why);
        return;
    }
    it->new_end = lns_now_s() + p.seconds_left;
    it->ok = 1;
}

int lors_refresh(const lors_refresh_opts_t *o, xnd_t *x, lors_refresh_report_t *report)
{
    lors_refresh_report_t local;
    lors_refresh_report_t *rep = report ? report : &local;
    const char *bad = NULL;

    memset(rep, 0, sizeof *rep);
    if (!o || !x)
        bad = "missing options or exNode";
    else if (o->mode < LORS_REFRESH_ADD || o->mode > LORS_REFRESH_MAX)
        bad = "unknown mode";
    else if ((o->mode == LORS_REFRESH_ADD || o->mode == LORS_REFRESH_FROM_NOW) && o->value <= 0)
        bad = "the time to add must be positive";
    if (bad) {
        snprintf(rep->error, sizeof rep->error, "refresh: %s", bad);
        return LORS_E_INVAL;
    }
    rep->items = calloc(x->nmaps ? x->nmaps : 1, sizeof *rep->items);
    refresh_run_t r = {o, x, lors__client(o->timeout_s, o->threads), rep->items};
    if (!rep->items || !r.ibp) {
        if (r.ibp)
            ibp_client_free(r.ibp);
        lors_refresh_report_free(rep);
        snprintf(rep->error, sizeof rep->error, "refresh: out of memory");
        return LORS_E_NOMEM;
    }
    rep->n = x->nmaps;
    lors__parallel(x->nmaps, o->threads, refresh_one, &r);
    ibp_client_free(r.ibp);

    int rc = LORS_OK;
    size_t first = 0;
    for (size_t i = 0; i < rep->n; i++) {
        lors_refresh_item_t *it = &rep->items[i];
        if (it->ok && xnd_mapping_set_time(x->maps[i], 1, it->new_end) != XND_OK) {
            fail(it, 0, "out of memory writing the new end into the exNode");
            rc = LORS_E_NOMEM;
        }
        if (!it->ok && rep->failed++ == 0)
            first = i;
    }
    if (rep->failed > 0) {
        snprintf(rep->error, sizeof rep->error,
                 "refresh: %zu of %zu mappings not refreshed; mapping %zu: %s", rep->failed,
                 rep->n, first, rep->items[first].why);
        if (rc == LORS_OK)
            rc = LORS_E_PARTIAL;
    }
    if (!report)
        lors_refresh_report_free(&local);
    return rc;
}
