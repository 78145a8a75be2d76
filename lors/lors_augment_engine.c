/* lors_augment_engine.c -- more copies of a network file, made depot to depot: plan and result.
 *
 * Plan: probe every mapping, then cover the asked range greedily with live mappings (at each
 * uncovered byte, the live mapping that starts at or before it and reaches farthest).  Each
 * chosen mapping is a piece, copied whole, so the new mapping repeats its range and its
 * lns_checksum function (digests and all) and needs no reading by this client.  A piece gets
 * up.copies new copies, or with balance only what it lacks of up.copies live ones.  A byte
 * that some mapping holds but no live one does stops the augment before anything is
 * allocated: there is nothing to copy it from.  Bytes no mapping holds (gaps) are skipped.
 *
 * The copies run as independent jobs on up.threads threads (lors_augment_copy.c).  Only when
 * every job is complete are the new mappings appended to the exNode; if any job fails, or the
 * caller's stop flag is set (an interrupt: each job looks before its next depot call), every
 * allocation this call made is freed (lors_discard.c) and the exNode is left as it was.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lns_time.h"
#include "lors_augment_int.h"
#include "lors_report.h"
#include "lors_manage_int.h"

void lors_augment_opts_init(lors_augment_opts_t *o)
{
    memset(o, 0, sizeof *o);
    lors_upload_opts_init(&o->up);
    o->offset = 0;
    o->length = -1;
    o->relay = 1;
}

int lors__augment_check(const lors_augment_opts_t *o, char *err, size_t errlen)
{
    const lors_upload_opts_t *u = &o->up;
    const char *what = NULL;
    int rc = LORS_E_INVAL;
    if (!u->depots || u->ndepots == 0) {
        what = "no depots to copy to";
        rc = LORS_E_NODEPOTS;
    } else if (u->ndepots > 1000000)
        what = "too many depots";
    else if (u->copies < 1 || u->copies > 1000)
        what = "copies out of range (1..1000)";
    else if (!(what = lors__store_opts_problem(u)) && (o->offset < 0 || o->length < -1))
        what = "offset must be >= 0 and length >= 0 (or -1: to the end)";
    if (what)
        lns_err_set(err, errlen, "augment: %s", what);
    return what ? rc : LORS_OK;
}

/* ---- the plan ---------------------------------------------------------------------------- */

static int64_t map_end(const xnd_mapping_t *m)
{
    return m->exnode_offset + m->logical_length;
}

/* A mapping bytes can be copied from: alive, readable, not empty, and with a function lns
 * reads (one it does not is never copied: lns could not say which of its bytes to copy). */
static int usable(const aug_t *a, const lors_probe_t *pr, size_t i)
{
    const xnd_mapping_t *m = a->x->maps[i];
    lors_func_kind k = a->fn[i].kind;
    return pr[i].alive && m->cap[XND_READ] && m->logical_length > 0 &&
           (k == LORS_FUNC_NONE || k == LORS_FUNC_CHECKSUM || k == LORS_FUNC_LORS131);
}

/* 1 if mapping i holds the same stored bytes as mapping src of a piece, so that either may
 * be its source: both the bytes as they are, or both the same 1.3.1 chain of one range. */
static int same_layout(const aug_t *a, int src, size_t i)
{
    const xnd_mapping_t *m = a->x->maps[src], *n = a->x->maps[i];
    int raw_m = a->fn[src].kind != LORS_FUNC_LORS131, raw_n = a->fn[i].kind != LORS_FUNC_LORS131;
    if (raw_m || raw_n)
        return raw_m && raw_n;
    return m->exnode_offset == n->exnode_offset && m->logical_length == n->logical_length &&
           m->alloc_length == n->alloc_length && m->e2e_blocksize == n->e2e_blocksize &&
           lors__func_same(m->func, n->func);
}

/* Cover [from, to) with live mappings; a->pieces gets one piece per chosen mapping. */
static int cover(aug_t *a, const xnd_t *x, const lors_probe_t *pr, int64_t from, int64_t to)
{
    int cap = 0;
    for (int64_t pos = from; pos < to;) {
        int best = -1;
        int64_t reach = pos;
        for (size_t i = 0; i < x->nmaps; i++) {
            const xnd_mapping_t *m = x->maps[i];
            if (usable(a, pr, i) && m->exnode_offset <= pos && map_end(m) > reach) {
                best = (int)i;
                reach = map_end(m);
            }
        }
        if (best < 0) {
            /* no live copy of byte pos: lost if a dead mapping held it, else a gap */
            int64_t next = INT64_MAX, lost_end = -1;
            size_t dead = 0;
            for (size_t i = 0; i < x->nmaps; i++) {
                const xnd_mapping_t *m = x->maps[i];
                if (m->logical_length <= 0)
                    continue;
                if (m->exnode_offset > pos && m->exnode_offset < next)
                    next = m->exnode_offset;
                if (m->exnode_offset <= pos && map_end(m) > pos && map_end(m) > lost_end) {
                    lost_end = map_end(m);
                    dead = i;
                }
            }
            if (lost_end > pos) {
                char b[64], why[256];
                int64_t end = lost_end < next ? lost_end : next;
                lors__bytes(pos, (end < to ? end : to) - pos, b, sizeof b);
                for (size_t i = 0; i < x->nmaps; i++) {
                    const xnd_mapping_t *m = x->maps[i];
                    if (a->fn[i].kind == LORS_FUNC_UNKNOWN && m->logical_length > 0 &&
                        m->exnode_offset <= pos && map_end(m) > pos) {
                        lors__func_read(x, NULL, m, &(lors__func_t){0}, why, sizeof why);
                        lors__report_error(a->rep, "augment: %s: mapping %zu: %s", b, i, why);
                        return LORS_E_EXNODE;
                    }
                }
                lors__report_error(a->rep,
                                   "augment: %s have no live copy to copy from (mapping %zu: %s)",
                                   b, dead, pr[dead].alive ? "no read capability" : pr[dead].why);
                return LORS_E_NO_REPLICA;
            }
            pos = next;
            continue;
        }
        if (a->npieces == cap) {
            cap = cap ? 2 * cap : 16;
            aug_piece_t *np = realloc(a->pieces, (size_t)cap * sizeof *np);
            if (!np)
                return LORS_E_NOMEM;
            a->pieces = np;
        }
        aug_piece_t *p = &a->pieces[a->npieces];
        memset(p, 0, sizeof *p);
        p->index = a->npieces++;
        p->src = best;
        p->off = x->maps[best]->exnode_offset;
        p->len = x->maps[best]->logical_length;
        p->whole = a->fn[best].kind == LORS_FUNC_LORS131;
        p->slen = p->whole ? x->maps[best]->alloc_length : p->len;
        if (a->fn[best].ob_off >= 0) /* the outboard that follows the data goes with it */
            p->slen = p->len + a->fn[best].ob_len;
        pos = reach;
    }
    return LORS_OK;
}

/* For each piece: its sources, the target depots that hold it, how many copies to add. */
static int piece_details(aug_t *a, const xnd_t *x, const lors_probe_t *pr)
{
    size_t D = a->o->up.ndepots, N = x->nmaps;
    /* on[i * D + d]: mapping i lives on target depot d */
    unsigned char *on = calloc(N > 0 ? N * D : 1, 1);
    if (!on)
        return LORS_E_NOMEM;
    for (size_t i = 0; i < N; i++)
        for (size_t d = 0; d < D; d++)
            on[i * D + d] = (unsigned char)lors__same_depot(&a->o->up.depots[d], &a->mapdep[i]);

    for (int k = 0; k < a->npieces; k++) {
        aug_piece_t *p = &a->pieces[k];
        p->alts = malloc((N ? N : 1) * sizeof *p->alts);
        p->held = calloc(D, 1);
        if (!p->alts || !p->held) {
            free(on);
            return LORS_E_NOMEM;
        }
        p->alts[p->nalts++] = p->src;
        int live = 0; /* live mappings holding the whole piece, readable or not */
        for (size_t i = 0; i < N; i++) {
            const xnd_mapping_t *m = x->maps[i];
            if (k == 0 && pr[i].alive && !(a->o->discount && a->o->discount[i]))
                for (size_t d = 0; d < D; d++)
                    a->load[d] += on[i * D + d];
            if (!pr[i].alive || m->logical_length <= 0)
                continue;
            int whole = m->exnode_offset <= p->off && map_end(m) >= p->off + p->len;
            live += whole && !(a->o->discount && a->o->discount[i]);
            if ((int)i != p->src && whole && usable(a, pr, i) && same_layout(a, p->src, i))
                p->alts[p->nalts++] = (int)i;
            if (m->exnode_offset < p->off + p->len && map_end(m) > p->off)
                for (size_t d = 0; d < D; d++)
                    p->held[d] |= on[i * D + d];
        }
        p->copies = a->o->up.copies;
        if (a->o->balance)
            p->copies = live >= p->copies ? 0 : p->copies - live;
        if (a->o->distinct) {
            int free_depots = 0;
            for (size_t d = 0; d < D; d++)
                free_depots += !p->held[d];
            if (p->copies > free_depots)
                p->copies = free_depots;
        }
        a->njobs += p->copies;
    }
    free(on);

    a->jobs = calloc(a->njobs ? (size_t)a->njobs : 1, sizeof *a->jobs);
    if (!a->jobs)
        return LORS_E_NOMEM;
    int seq = 0;
    for (int k = 0; k < a->npieces; k++)
        for (int c = 0; c < a->pieces[k].copies; c++, seq++) {
            aug_job_t *j = &a->jobs[seq];
            j->p = &a->pieces[k];
            j->copy = c;
            j->seq = seq;
            j->depot = -1;
        }
    return LORS_OK;
}

/* ---- the result ------------------------------------------------------------------------- */

/* The new mapping of job j: its source's range and function, the new capabilities. */
static xnd_mapping_t *new_mapping(const xnd_t *x, const aug_job_t *j)
{
    const xnd_mapping_t *src = x->maps[j->p->src];
    xnd_mapping_t *m = xnd_mapping_new();
    int rc = m ? XND_OK : XND_E_NOMEM;
    if (rc == XND_OK && src->func) {
        /* libexnode copies functions only with their mapping: borrow the copy's */
        xnd_mapping_t *tmp = xnd_mapping_copy(src);
        if (tmp) {
            xnd_mapping_set_func(m, tmp->func);
            tmp->func = NULL;
            xnd_mapping_free(tmp);
        } else {
            rc = XND_E_NOMEM;
        }
    }
    if (rc == XND_OK) {
        m->exnode_offset = j->p->off;
        m->logical_length = j->p->len;
        m->alloc_offset = 0;
        m->alloc_length = j->p->slen;
        m->e2e_blocksize = src->e2e_blocksize;
        m->has_e2e_blocksize = src->has_e2e_blocksize;
        rc = lors__map_set_alloc(m, j->start, j->end, &j->caps);
    }
    if (rc != XND_OK) {
        xnd_mapping_free(m);
        return NULL;
    }
    return m;
}

/* Append the new mappings to x, and to a new exNode *added if asked.  All or nothing. */
static int build_result(aug_t *a, xnd_t *x, xnd_t **added)
{
    xnd_t *ad = NULL;
    size_t n0 = x->nmaps;
    int rc = XND_OK;

    if (added) {
        ad = xnd_new();
        rc = ad ? xnd_meta_list_copy(&ad->meta, &x->meta) : XND_E_NOMEM;
    }
    /* the sources are read from x while mappings are appended to it: the array may move,
     * the mappings do not */
    for (int k = 0; rc == XND_OK && k < a->njobs; k++) {
        if (a->jobs[k].dropped)
            continue;
        xnd_mapping_t *m = new_mapping(x, &a->jobs[k]);
        xnd_mapping_t *m2 = m && ad ? xnd_mapping_copy(m) : NULL;
        if (!m || (ad && !m2)) {
            xnd_mapping_free(m);
            rc = XND_E_NOMEM;
            break;
        }
        if ((rc = xnd_append(x, m)) == XND_OK && ad)
            rc = xnd_append(ad, m2);
        else
            xnd_mapping_free(m2);
    }
    if (rc != XND_OK) {
        while (x->nmaps > n0)
            xnd_remove(x, x->nmaps - 1);
        xnd_free(ad);
        lors__report_error(a->rep, "augment: building the exNode: %s",
                           xnd_strerror(rc));
        return rc == XND_E_NOMEM ? LORS_E_NOMEM : LORS_E_EXNODE;
    }
    if (added)
        *added = ad;
    return LORS_OK;
}

/* Free the allocations of every job (a failed augment leaves nothing behind). */
static void free_jobs(aug_t *a)
{
    const char **caps = malloc(((size_t)a->njobs + 1) * sizeof *caps);
    size_t n = 0;
    if (!caps) {
        a->rep->freed.unfreed = a->njobs;
        return;
    }
    for (int k = 0; k < a->njobs; k++)
        if (a->jobs[k].allocated)
            caps[n++] = a->jobs[k].caps.manage;
    lors__release(caps, n, a->o->up.threads, a->o->up.timeout_s, &a->rep->freed);
    free(caps);
}

static void free_plan(aug_t *a)
{
    for (int k = 0; k < a->npieces; k++) {
        free(a->pieces[k].alts);
        free(a->pieces[k].held);
    }
    free(a->pieces);
    free(a->jobs);
    free(a->mapdep);
    free(a->fn);
    free(a->bad);
    free(a->load);
}

int lors__augment_copies(const lors_augment_opts_t *o, xnd_t *x, xnd_t **added,
                         lors_report_t *report)
{
    lors_report_t local;
    lors_report_t *rep = report ? report : &local;
    lors_probe_t *pr = NULL;
    aug_t a;
    int rc;
    int64_t t0 = lns_mono_ns();

    memset(rep, 0, sizeof *rep);
    memset(&a, 0, sizeof a);
    if (added)
        *added = NULL;
    if (!o || !x) {
        lors__report_error(rep, "augment: missing options or exNode");
        return LORS_E_INVAL;
    }
    if ((rc = lors__augment_check(o, rep->error, sizeof rep->error)) != LORS_OK)
        return rc;
    a.o = o;
    a.x = x;
    a.rep = rep;
    pthread_mutex_init(&a.mu, NULL);
    pthread_mutex_init(&a.evmu, NULL);

    /* the whole file: to the size, or to the end of the last mapping if that is further */
    int64_t end = xnd_size(x);
    for (size_t i = 0; i < x->nmaps; i++)
        if (map_end(x->maps[i]) > end)
            end = map_end(x->maps[i]);
    int64_t to = o->length < 0 || o->length > end - o->offset ? end : o->offset + o->length;
    rep->size = xnd_size(x);

    a.mapdep = calloc(x->nmaps ? x->nmaps : 1, sizeof *a.mapdep);
    a.bad = calloc(o->up.ndepots, sizeof *a.bad);
    a.load = calloc(o->up.ndepots, sizeof *a.load);
    if (!a.mapdep || !a.bad || !a.load) {
        rc = LORS_E_NOMEM;
        goto out;
    }
    a.fn = calloc(x->nmaps ? x->nmaps : 1, sizeof *a.fn);
    if (!a.fn) {
        rc = LORS_E_NOMEM;
        goto out;
    }
    for (size_t i = 0; i < x->nmaps; i++) {
        lors__map_depot(x->maps[i], &a.mapdep[i]);
        lors__func_read(x, NULL, x->maps[i], &a.fn[i], NULL, 0);
    }
    if (o->probes) {
        if (!(pr = malloc((x->nmaps ? x->nmaps : 1) * sizeof *pr))) {
            rc = LORS_E_NOMEM;
            goto out;
        }
        memcpy(pr, o->probes, x->nmaps * sizeof *pr);
    } else if ((rc = lors_probe_all(x, o->up.threads, o->up.timeout_s, &pr)) != LORS_OK) {
        goto out;
    }
    if ((rc = cover(&a, x, pr, o->offset, to)) != LORS_OK ||
        (rc = piece_details(&a, x, pr)) != LORS_OK)
        goto out;
    rep->fragments = a.npieces;
    pthread_mutex_lock(&a.mu);
    if (lors__aug_stopped_locked(&a))
        rc = LORS_E_STOPPED;
    pthread_mutex_unlock(&a.mu);
    if (rc != LORS_OK)
        goto out;

    if (a.njobs > 0) {
        a.ibp = lors__client(o->up.timeout_s, o->up.threads);
        a.alive = lors__alive_start(o->up.duration_s, o->up.provisional_s, o->up.timeout_s);
        if (!a.ibp) {
            rc = LORS_E_NOMEM;
            goto out;
        }
        lors__parallel((size_t)a.njobs, o->up.threads, lors__aug_run_job, &a);
    }
    rc = a.err;
    if (rc == LORS_OK)
        rc = build_result(&a, x, added);
    if (rc != LORS_OK)
        free_jobs(&a);
    for (int k = 0; rc == LORS_OK && k < a.njobs; k++)
        rep->mappings += !a.jobs[k].dropped;

out:
    if (rc != LORS_OK && !rep->error[0])
        lors__report_error(rep, "augment: %s", lors_strerror(rc));
    lors__alive_stop(a.alive);
    if (a.ibp)
        ibp_client_free(a.ibp);
    free(pr);
    free_plan(&a);
    pthread_mutex_destroy(&a.evmu);
    pthread_mutex_destroy(&a.mu);
    rep->seconds = (double)(lns_mono_ns() - t0) / 1e9;
    if (!report)
        lors_report_free(&local);
    return rc;
}
