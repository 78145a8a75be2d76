/* lors_trim_engine.c -- remove mappings from an exNode, and optionally free their allocations.
 *
 * Order matters for safety: select, check that no byte loses its last copy, edit the exNode,
 * and only then DECR the allocations.  A trim that fails its check leaves everything as it
 * was; a DECR that fails afterwards leaves an allocation that expires on its own, which costs
 * the depot space for a while but never costs the user data.
 *
 * "Would lose bytes" counts what a removed mapping held that no kept mapping holds; a removed
 * mapping found dead held nothing any more, so it never counts.  Deadness is probed only when
 * it matters: with -u, or when the check without it fails.
 *
 * Each removed mapping is reported once (LORS_EV_TRIM), when its fate is known: right after
 * the edit, or with -d when its DECR has answered, so a viewer sees the frees as they happen.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lors_manage_int.h"
#include "lors_report.h"

void lors_trim_opts_init(lors_trim_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->threads = 4;
    o->timeout_s = 30;
}

void lors_trim_report_free(lors_trim_report_t *r)
{
    if (!r)
        return;
    free(r->removed);
    free(r->unfreed);
    r->removed = r->unfreed = NULL;
    r->nremoved = r->nunfreed = 0;
}

/* ---- the safety check -------------------------------------------------------------------- */

typedef struct kept_arg {
    lors__mapidx_t mi;
    const unsigned char *sel;
} kept_arg_t;

static int count_kept(const xnd_mapping_t *m, void *arg)
{
    kept_arg_t *a = arg;
    size_t i = lors__mapidx_find(&a->mi, m);
    return i != (size_t)-1 && !a->sel[i];
}

/* The first byte range a live (or unprobed) selected mapping holds and no kept mapping does:
 * 1 with *which, *off, *len set; 0 if none; <0 a lors_err. */
static int find_loss(const xnd_t *x, const unsigned char *sel, const lors_probe_t *probes,
                     size_t *which, int64_t *off, int64_t *len)
{
    kept_arg_t a = {.sel = sel};
    xnd_range_t *cov = NULL;
    size_t ncov = 0;
    int found = 0;

    if (lors__mapidx_build(x, &a.mi) != LORS_OK)
        return LORS_E_NOMEM;
    int rc = xnd_coverage(x, count_kept, &a, &cov, &ncov);
    lors__mapidx_free(&a.mi);
    if (rc != XND_OK)
        return rc == XND_E_NOMEM ? LORS_E_NOMEM : LORS_E_EXNODE;
    for (size_t i = 0; i < x->nmaps && !found; i++) {
        const xnd_mapping_t *m = x->maps[i];
        if (!sel[i] || m->logical_length <= 0 || (probes && !probes[i].alive))
            continue;
        int64_t a0 = m->exnode_offset, a1 = m->exnode_offset + m->logical_length;
        for (size_t r = 0; r < ncov; r++) {
            int64_t b0 = cov[r].offset, b1 = cov[r].offset + cov[r].length;
            if (cov[r].count == 0 && b0 < a1 && a0 < b1) {
                *which = i;
                *off = a0 > b0 ? a0 : b0;
                *len = (a1 < b1 ? a1 : b1) - *off;
                found = 1;
                break;
            }
        }
    }
    free(cov);
    return found;
}

/* An erasure-coded file: the first stripe that has k live (or unprobed) pieces now and
 * would have fewer without the selected mappings: 1 with *which (a selected mapping holding
 * one of its pieces), *off and *len (the stripe's bytes) set; 0 if none or not erasure coded;
 * <0 a lors_err. */
static int find_ec_loss(const xnd_t *x, const unsigned char *sel, const lors_probe_t *probes,
                        size_t *which, int64_t *off, int64_t *len)
{
    lors_ec_info_t info;
    char err[128];
    if (lors_ec_info(x, &info, err, sizeof err) != LORS_OK || !info.present)
        return 0;
    lors_probe_t *now = calloc(x->nmaps ? x->nmaps : 1, sizeof *now);
    lors_probe_t *after = calloc(x->nmaps ? x->nmaps : 1, sizeof *after);
    lors_ec_stripe_t *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    int found = 0;
    if (!now || !after) {
        found = LORS_E_NOMEM;
        goto out;
    }
    for (size_t i = 0; i < x->nmaps; i++) {
        now[i].alive = !probes || probes[i].alive;
        after[i].alive = now[i].alive && !sel[i];
    }
    if ((found = lors_ec_stripes(x, now, &a, &na)) != LORS_OK ||
        (found = lors_ec_stripes(x, after, &b, &nb)) != LORS_OK)
        goto out;
    for (size_t s = 0; s < na && s < nb && !found; s++) {
        if (a[s].margin < 0 || b[s].margin >= 0)
            continue;
        *off = a[s].offset;
        *len = a[s].length;
        for (size_t i = 0; i < x->nmaps; i++) {
            const xnd_mapping_t *m = x->maps[i];
            if (sel[i] && m->exnode_offset <= *off &&
                *off < m->exnode_offset + m->logical_length) {
                *which = i;
                break;
            }
        }
        found = 1;
    }
out:
    free(now);
    free(after);
    free(a);
    free(b);
    return found;
}

/* ---- freeing ------------------------------------------------------------------------------ */

typedef struct victim {
    int mapping;   /* number before removal */
    char *mcap;    /* NULL: none */
    lors_depot_t depot;         /* for the event, taken before the mapping leaves x */
    int has_depot;
    int64_t off, len;
    int gone;      /* known freed already (expired, or the depot said it has no such allocation) */
    int freed;
    int rc;        /* the DECR's answer */
} victim_t;

/* The LORS_EV_TRIM of v; freed: 1, 0 or -1 (not asked). */
static void trim_event(const lors_trim_opts_t *o, const victim_t *v, int freed)
{
    lors_event_t ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = LORS_EV_TRIM;
    ev.depot = v->has_depot ? &v->depot : NULL;
    ev.fragment = ev.copy = v->mapping;
    ev.offset = v->off;
    ev.length = v->len;
    ev.freed = freed;
    if (freed == 0) {
        ev.op = v->mcap ? "DECR" : "NOCAP";
        ev.ibp_err = v->rc;
    }
    o->on_event(o->event_arg, &ev);
}

typedef struct decr_run {
    victim_t *v;
    ibp_client_t *ibp;
    const lors_trim_opts_t *o;
    pthread_mutex_t evmu;       /* one event at a time, as lors_event_fn promises */
} decr_run_t;

static void decr_one(void *arg, size_t i)
{
    decr_run_t *r = arg;
    victim_t *v = &r->v[i];
    if (v->gone) {
        v->freed = 1;
    } else if (v->mcap) {
        v->rc = ibp_decr(r->ibp, v->mcap, IBP_READCAP);
        /* an allocation the depot no longer knows is as freed as it gets */
        v->freed = v->rc == IBP_OK || v->rc == IBP_E_CAP_NOT_FOUND;
    }
    if (r->o->on_event) {
        pthread_mutex_lock(&r->evmu);
        trim_event(r->o, v, v->freed);
        pthread_mutex_unlock(&r->evmu);
    }
}

/* ---- trim ------------------------------------------------------------------------------- */

static int select_mappings(const lors_trim_opts_t *o, const xnd_t *x, unsigned char *sel,
                           char *err, size_t errlen)
{
    for (size_t k = 0; k < o->nmappings; k++) {
        int n = o->mappings[k];
        if (n < 0 || (size_t)n >= x->nmaps) {
            lns_err_set(err, errlen, "trim: mapping %d: no such mapping (the exNode has %zu, "
                        "numbered from 0)", n, x->nmaps);
            return LORS_E_INVAL;
        }
        sel[n] = 1;
    }
    for (size_t i = 0; i < x->nmaps && o->ndepots > 0; i++) {
        lors_depot_t d;
        if (lors__map_depot(x->maps[i], &d) < 0)
            continue;
        for (size_t k = 0; k < o->ndepots && !sel[i]; k++)
            sel[i] = (unsigned char)lors__same_depot(&o->depots[k], &d);
    }
    return LORS_OK;
}

int lors_trim(const lors_trim_opts_t *o, xnd_t *x, lors_trim_report_t *report)
{
    lors_trim_report_t local;
    lors_trim_report_t *rep = report ? report : &local;
    unsigned char *sel = NULL;
    lors_probe_t *probes = NULL;
    victim_t *v = NULL;
    size_t nv = 0;
    int rc;

    memset(rep, 0, sizeof *rep);
    if (!o || !x || (o->nmappings && !o->mappings) || (o->ndepots && !o->depots)) {
        lors__report_error(rep, "trim: missing options or exNode");
        return LORS_E_INVAL;
    }
    sel = calloc(x->nmaps ? x->nmaps : 1, 1);
    if (!sel) {
        rc = LORS_E_NOMEM;
        goto nomem;
    }
    if ((rc = select_mappings(o, x, sel, rep->error, sizeof rep->error)) != LORS_OK)
        goto out;
    int chosen = o->nmappings > 0 || o->ndepots > 0;
    if (o->dead) {
        if ((rc = lors_probe_all(x, o->threads, o->timeout_s, &probes)) != LORS_OK)
            goto nomem;
        for (size_t i = 0; i < x->nmaps; i++)
            sel[i] = (unsigned char)((chosen ? sel[i] : 1) && !probes[i].alive);
    }

    if (!o->force) {
        size_t which = 0;
        int64_t off = 0, len = 0;
        int ec = 0, lost = find_loss(x, sel, probes, &which, &off, &len);
        if (lost == 0)
            ec = lost = find_ec_loss(x, sel, probes, &which, &off, &len);
        if (lost == 1 && !probes) {
            /* maybe what it held is gone already: ask before refusing */
            if ((rc = lors_probe_all(x, o->threads, o->timeout_s, &probes)) != LORS_OK)
                goto nomem;
            ec = 0;
            lost = find_loss(x, sel, probes, &which, &off, &len);
            if (lost == 0)
                ec = lost = find_ec_loss(x, sel, probes, &which, &off, &len);
        }
        if (lost < 0) {
            rc = lost;
            goto nomem;
        }
        if (lost) {
            char b[64];
            lors__bytes(off, len, b, sizeof b);
            lors__report_error(rep,
                               ec ? "trim: removing mapping %zu would leave %s with fewer "
                                    "pieces than it takes to rebuild them (force to remove "
                                    "anyway)"
                                  : "trim: removing mapping %zu would leave %s with no copy "
                                    "(force to remove anyway)", which, b);
            rc = LORS_E_UNSAFE;
            goto out;
        }
    }

    for (size_t i = 0; i < x->nmaps; i++)
        nv += sel[i];
    v = calloc(nv ? nv : 1, sizeof *v);
    rep->removed = malloc((nv ? nv : 1) * sizeof *rep->removed);
    if (!v || !rep->removed) {
        rc = LORS_E_NOMEM;
        goto nomem;
    }
    for (size_t i = 0, k = 0; i < x->nmaps; i++) {
        if (!sel[i])
            continue;
        const xnd_mapping_t *m = x->maps[i];
        v[k].mapping = (int)i;
        v[k].has_depot = lors__map_depot(m, &v[k].depot) == 0;
        v[k].off = m->exnode_offset;
        v[k].len = m->logical_length;
        if (m->cap[XND_MANAGE] && !(v[k].mcap = strdup(m->cap[XND_MANAGE]))) {
            rc = LORS_E_NOMEM;
            goto nomem;
        }
        v[k].gone = probes && !probes[i].alive &&
                    (probes[i].ibp_err == IBP_E_CAP_NOT_FOUND ||
                     strcmp(probes[i].why, "expired") == 0);
        rep->removed[k++] = (int)i;
    }
    for (size_t k = nv; k-- > 0;)
        xnd_remove(x, (size_t)v[k].mapping);
    rep->nremoved = nv;
    if (!o->free_allocs && o->on_event)
        for (size_t k = 0; k < nv; k++)
            trim_event(o, &v[k], -1);

    if (o->free_allocs && nv > 0) {
        decr_run_t r = {.v = v, .ibp = lors__client(o->timeout_s, o->threads), .o = o};
        if (!r.ibp) {
            rc = LORS_E_NOMEM;
            goto nomem;
        }
        pthread_mutex_init(&r.evmu, NULL);
        lors__parallel(nv, o->threads, decr_one, &r);
        pthread_mutex_destroy(&r.evmu);
        ibp_client_free(r.ibp);
        rep->unfreed = malloc(nv * sizeof *rep->unfreed);
        if (!rep->unfreed) {
            rc = LORS_E_NOMEM;
            goto nomem;
        }
        const victim_t *first = NULL;
        for (size_t k = 0; k < nv; k++)
            if (!v[k].freed) {
                rep->unfreed[rep->nunfreed++] = v[k].mapping;
                first = first ? first : &v[k];
            }
        if (first) {
            lors__report_error(rep,
                               "trim: %zu of %zu removed allocations could not be freed "
                               "(first: mapping %d: %s); they expire on their own",
                               rep->nunfreed, nv, first->mapping,
                               first->mcap ? lors__why(first->rc) : "no manage capability");
            rc = LORS_E_PARTIAL;
        }
    }
    goto out;

nomem:
    if (!rep->error[0])
        lors__report_error(rep, "trim: %s", lors_strerror(rc));
out:
    for (size_t k = 0; v && k < nv; k++)
        free(v[k].mcap);
    free(v);
    free(probes);
    free(sel);
    if (!report)
        lors_trim_report_free(&local);
    return rc;
}
