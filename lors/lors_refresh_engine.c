/* lors_refresh_engine.c -- extend the lifetime of every mapping of an exNode.
 *
 * Per mapping: CHNG with a duration counted from now (whatever the mode, the wire speaks
 * "seconds from now", or -1 for the depot's maximum), then PROBE, because the end the depot
 * actually keeps is what the exNode must say: a depot may round, and with -1 only it knows.
 * Not every depot has -1 (LoCI 1.3.1 refuses it, ACCRE 1.4 keeps the end): then the
 * maximum its STATUS tells, or a failed item that says so.
 * The workers fill one item each; the calling thread writes the new ends into the exNode
 * after the join (an xnd_t is not thread-safe).  Events go out from the workers as each
 * depot answers, so a viewer sees a slow depot as slow, not a silence until the end.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lns_time.h"
#include "lors_manage_int.h"
#include "lors_report.h"

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
    pthread_mutex_t evmu;       /* one event at a time, as lors_event_fn promises */
} refresh_run_t;

/* Mark it failed; returns op, the step that failed, for the event. */
static const char *item_failed(lors_refresh_item_t *it, const char *op, int err, const char *why)
{
    it->ok = 0;
    it->ibp_err = err;
    lns_err_set(it->why, sizeof it->why, "%s", why);
    return op;
}

/* -m where the depot has no "as long as allowed": LoCI 1.3.1 answers -28 to a CHNG of -1,
 * ACCRE 1.4 reads every negative duration as "unchanged" (docs/interop.md).  Their maximum is
 * what a STATUS inquiry tells (LoCI: to anyone; ACCRE: only with the password, which a refresh
 * does not hold): CHNG to it, else say that nothing was extended and why. */
static const char *refresh_to_status_max(refresh_run_t *r, const xnd_mapping_t *m,
                                         lors_refresh_item_t *it)
{
    const char *mcap = m->cap[XND_MANAGE];
    lors_depot_t d;
    ibp_depot_status_t st;
    ibp_probe_t p;
    int rc = lors__map_depot(m, &d) == 0
                 ? ibp_status(r->ibp, d.host, d.port, d.rid[0] ? d.rid : NULL, NULL, &st)
                 : IBP_E_WRONG_CAP_FORMAT;
    if (rc != IBP_OK || st.max_duration_s <= 0) {
        char why[sizeof it->why];
        snprintf(why, sizeof why, "the depot kept its end: it has no 'as long as allowed' and "
                 "did not tell its maximum (STATUS: %s); give -d",
                 rc != IBP_OK ? lors__why(rc) : "no maximum duration");
        return item_failed(it, "CHANGE", rc, why);
    }
    if ((rc = ibp_change(r->ibp, mcap, 0, st.max_duration_s, 0)) != IBP_OK)
        return item_failed(it, "CHANGE", rc, lors__why(rc));
    if ((rc = ibp_probe(r->ibp, mcap, &p)) != IBP_OK)
        return item_failed(it, "PROBE", rc, lors__why(rc));
    it->new_end = lns_now_s() + p.seconds_left;
    it->ok = 1;
    return NULL;
}

/* Refresh mapping i: NULL when done, else the step that failed ("CHANGE", "PROBE", "NOCAP",
 * "PAST"), it saying why. */
static const char *refresh_do(refresh_run_t *r, const xnd_mapping_t *m, lors_refresh_item_t *it)
{
    const char *mcap = m->cap[XND_MANAGE];
    ibp_probe_t p;
    int64_t now = lns_now_s(), duration = -1;
    int rc;

    it->old_end = it->new_end = m->end.epoch;
    if (!mcap)
        return item_failed(it, "NOCAP", 0, "no manage capability");
    switch (r->o->mode) {
    case LORS_REFRESH_ADD:
        if (it->old_end == XND_TIME_UNKNOWN) {
            /* the exNode does not say when it ends: the depot does */
            if ((rc = ibp_probe(r->ibp, mcap, &p)) != IBP_OK)
                return item_failed(it, "PROBE", rc, lors__why(rc));
            it->old_end = now + p.seconds_left;
        }
        duration = it->old_end + r->o->value - now;
        break;
    case LORS_REFRESH_FROM_NOW: duration = r->o->value; break;
    case LORS_REFRESH_AT: duration = r->o->value - now; break;
    case LORS_REFRESH_MAX: duration = -1; break;
    }
    if (duration == 0 || duration < -1 || (duration == -1 && r->o->mode != LORS_REFRESH_MAX))
        return item_failed(it, "PAST", 0, "the new end is in the past");
    if (r->o->mode == LORS_REFRESH_MAX) {
        /* the end before, from the depot: whether -1 extended anything is told by comparing */
        if ((rc = ibp_probe(r->ibp, mcap, &p)) != IBP_OK)
            return item_failed(it, "PROBE", rc, lors__why(rc));
        it->old_end = lns_now_s() + p.seconds_left;
    }
    rc = ibp_change(r->ibp, mcap, 0, duration, 0);
    if (rc != IBP_OK && !(r->o->mode == LORS_REFRESH_MAX && rc == IBP_E_LONG_DURATION))
        return item_failed(it, "CHANGE", rc, lors__why(rc));
    if (rc == IBP_OK && (rc = ibp_probe(r->ibp, mcap, &p)) != IBP_OK) {
        char why[sizeof it->why];
        snprintf(why, sizeof why, "changed, but the PROBE that reads the new end failed: %s",
                 lors__why(rc));
        return item_failed(it, "PROBE", rc, why);
    }
    if (r->o->mode == LORS_REFRESH_MAX &&
        (rc != IBP_OK || lns_now_s() + p.seconds_left <= it->old_end))
        return refresh_to_status_max(r, m, it);
    it->new_end = lns_now_s() + p.seconds_left;
    it->ok = 1;
    return NULL;
}

static void refresh_one(void *arg, size_t i)
{
    refresh_run_t *r = arg;
    const xnd_mapping_t *m = r->x->maps[i];
    lors_refresh_item_t *it = &r->items[i];
    lors_depot_t d;
    lors_event_t ev;

    it->mapping = (int)i;
    if (r->o->select && !r->o->select[i]) {
        it->ok = 1;
        it->old_end = it->new_end = m->end.epoch;
        return;
    }
    const char *op = refresh_do(r, m, it);
    if (!r->o->on_event)
        return;
    memset(&ev, 0, sizeof ev);
    ev.kind = op ? LORS_EV_FAILURE : LORS_EV_REFRESH;
    ev.depot = lors__map_depot(m, &d) == 0 ? &d : NULL;
    ev.fragment = ev.copy = (int)i;
    ev.offset = m->exnode_offset;
    ev.length = m->logical_length;
    ev.op = op;
    ev.ibp_err = it->ibp_err;
    ev.old_end = it->old_end;
    ev.new_end = it->new_end;
    pthread_mutex_lock(&r->evmu);
    r->o->on_event(r->o->event_arg, &ev);
    pthread_mutex_unlock(&r->evmu);
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
        lors__report_error(rep, "refresh: %s", bad);
        return LORS_E_INVAL;
    }
    rep->items = calloc(x->nmaps ? x->nmaps : 1, sizeof *rep->items);
    refresh_run_t r = {.o = o, .x = x, .ibp = lors__client(o->timeout_s, o->threads),
                       .items = rep->items};
    if (!rep->items || !r.ibp) {
        if (r.ibp)
            ibp_client_free(r.ibp);
        lors_refresh_report_free(rep);
        lors__report_error(rep, "refresh: out of memory");
        return LORS_E_NOMEM;
    }
    rep->n = x->nmaps;
    pthread_mutex_init(&r.evmu, NULL);
    lors__parallel(x->nmaps, o->threads, refresh_one, &r);
    pthread_mutex_destroy(&r.evmu);
    ibp_client_free(r.ibp);

    int rc = LORS_OK;
    size_t first = 0;
    for (size_t i = 0; i < rep->n; i++) {
        lors_refresh_item_t *it = &rep->items[i];
        if (it->ok && !(o->select && !o->select[i]) &&
            xnd_mapping_set_time(x->maps[i], 1, it->new_end) != XND_OK) {
            item_failed(it, NULL, 0, "out of memory writing the new end into the exNode");
            rc = LORS_E_NOMEM;
        }
        if (!it->ok && rep->failed++ == 0)
            first = i;
    }
    if (rep->failed > 0) {
        lors__report_error(rep, "refresh: %zu of %zu mappings not refreshed; mapping %zu: %s",
                           rep->failed,
                           rep->n, first, rep->items[first].why);
        if (rc == LORS_OK)
            rc = LORS_E_PARTIAL;
    }
    if (!report)
        lors_refresh_report_free(&local);
    return rc;
}
