/* lors_keep_ec.c -- the keeper's repair of an erasure-coded file: new columns for lost ones.
 *
 * A column mapping that is dead, or on a leaving depot, is replaced by a new one holding the
 * same pieces (same column, same stripes) on a policy depot that no other live column of
 * those stripes uses.  Off a leaving depot that still answers, the allocation is copied as it
 * is (IBP SEND: the bytes need no transforming).  Otherwise each piece is made again: any k
 * live pieces of its stripe are loaded (data columns first), checked against their digests,
 * and decoded (ISA-L); the new piece must match the replaced column's own digest, so a
 * rebuild never stores bytes the exNode would call wrong.  A piece that cannot be read or
 * fails its digest is replaced by another column's; a target depot that fails is left for
 * another.  Each job is one column of one stripe group; the jobs run on o->threads threads
 * and each new mapping is appended by the calling thread after the join.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lns_time.h"
#include "lors_keep_int.h"
#include "lors_manage_int.h"
#include "lors_report.h"

typedef struct job {
    size_t tmpl;              /* the mapping replaced */
    int column;
    int64_t first, n;         /* stripes */
    int64_t len;              /* bytes of the allocation */
    int depot;                /* index into k->targets; -1 none yet */
    int done;
    ibp_caps_t caps;
    int64_t start, end;
    int allocated;
    int sent;                 /* 1: copied by SEND */
} job_t;

typedef struct ecr {
    keep_t *k;
    lors__ec_col_t *cols;     /* per mapping (k->n at the start) */
    size_t ncols;
    job_t *jobs;
    size_t njobs;
    ibp_client_t *ibp;
    pthread_mutex_t mu, evmu;
    unsigned char *bad;       /* per target: failed in this pass (under mu) */
    int err;                  /* a fatal error: stop every job (under mu) */
    int64_t rebuilt, sent;    /* under mu */
} ecr_t;

static void emit(ecr_t *r, lors_event_kind kind, const job_t *j, const char *op, int ierr)
{
    const lors_keep_opts_t *o = r->k->o;
    if (!o->on_event)
        return;
    const xnd_mapping_t *m = r->k->x->maps[j->tmpl];
    lors_event_t ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = kind;
    ev.depot = r->k->pr[j->tmpl].depot.host[0] ? &r->k->pr[j->tmpl].depot : NULL;
    ev.moved_to = j->depot >= 0 ? &r->k->targets[j->depot] : NULL;
    ev.fragment = j->column;
    ev.copy = (int)j->tmpl;
    ev.offset = m->exnode_offset;
    ev.length = m->logical_length;
    ev.op = op;
    ev.ibp_err = ierr;
    pthread_mutex_lock(&r->evmu);
    o->on_event(o->event_arg, &ev);
    pthread_mutex_unlock(&r->evmu);
}

static int overlaps(int64_t a, int64_t an, int64_t b, int64_t bn)
{
    return a < b + bn && b < a + an;
}

/* A target for j: not failed, not the depot of a live column of its stripes, not taken by
 * another job on its stripes; the least used of those.  -1: none. */
static int choose_locked(ecr_t *r, const job_t *j)
{
    keep_t *k = r->k;
    int best = -1, best_use = 0;
    for (size_t d = 0; d < k->ntargets; d++) {
        if (r->bad[d])
            continue;
        int taken = 0, use = 0;
        for (size_t i = 0; i < r->ncols && !taken; i++)
            if (r->cols[i].ok && lors__keep_counts(k, i) &&
                lors__same_depot(&k->pr[i].depot, &k->targets[d])) {
                use++;
                taken = overlaps(r->cols[i].first, r->cols[i].n, j->first, j->n);
            }
        for (size_t o = 0; o < r->njobs && !taken; o++) {
            const job_t *q = &r->jobs[o];
            if (q != j && q->depot >= 0 &&
                lors__same_depot(&k->targets[q->depot], &k->targets[d])) {
                use++;
                taken = overlaps(q->first, q->n, j->first, j->n);
            }
        }
        if (!taken && (best < 0 || use < best_use)) {
            best = (int)d;
            best_use = use;
        }
    }
    return best;
}

static int allocate(ecr_t *r, job_t *j)
{
    const lors_keep_opts_t *o = r->k->o;
    const lors_depot_t *d = &r->k->targets[j->depot];
    ibp_attr_t a = {(uint64_t)j->len, lors__first_lease(o->duration_s, o->provisional_s),
                    o->reliability, IBP_BYTEARRAY};
    int rc = ibp_allocate(r->ibp, d->host, d->port, d->rid[0] ? d->rid : NULL, &a, &j->caps);
    if (rc != IBP_OK)
        return rc;
    j->allocated = 1;
    lors__alive_add(r->k->alive, j->caps.manage);
    j->start = lns_now_s();
    j->end = a.duration_s > 0 ? j->start + a.duration_s : XND_TIME_UNKNOWN;
    return IBP_OK;
}

/* Does piece s of column c (its bytes p) match its digest?  1 also when it has none. */
static int piece_ok(const lors__ec_t *ec, const lors__ec_col_t *c, int64_t s,
                    const unsigned char *p, int64_t len)
{
    int r = lors__ec_piece_check(ec, c, s, p, len);
    return r == 1 || r == -1;
}

/* Load k good pieces of stripe s (other columns than j's), data columns first; have[] gets
 * their columns.  Mappings that failed are marked in skip.  0, or -1 (too few). */
static int load_sources(ecr_t *r, const job_t *j, int64_t s, int64_t plen, unsigned char **src,
                        int *have, unsigned char *skip)
{
    keep_t *k = r->k;
    int got = 0;
    unsigned char used[LORS_EC_MAX_K + LORS_EC_MAX_M] = {0};
    /* pass 0: live columns not leaving; pass 1: leaving ones that still answer */
    for (int pass = 0; pass < 2 && got < k->ec.k; pass++)
        for (int col = 0; col < k->ec.k + k->ec.m && got < k->ec.k; col++) {
            if (col == j->column || used[col])
                continue;
            for (size_t i = 0; i < r->ncols && got < k->ec.k; i++) {
                const lors__ec_col_t *c = &r->cols[i];
                if (!c->ok || c->column != col || skip[i] || !k->pr[i].alive ||
                    (pass == 0) != !k->leaving[i] || s < c->first || s >= c->first + c->n ||
                    !k->x->maps[i]->cap[XND_READ])
                    continue;
                int64_t off = lors__ec_alloc_off(&k->ec, k->x->maps[i], c, s);
                if (ibp_load(r->ibp, k->x->maps[i]->cap[XND_READ], (uint64_t)off,
                             (uint64_t)plen, src[got]) != IBP_OK ||
                    !piece_ok(&k->ec, c, s, src[got], plen)) {
                    skip[i] = 1;
                    continue;
                }
                have[got++] = col;
                used[col] = 1;
                break;
            }
        }
    return got == k->ec.k ? 0 : -1;
}

enum { ST_OK, ST_TARGET, ST_SOURCE, ST_FATAL };

/* Make and store every piece of j into its allocation. */
static int rebuild(ecr_t *r, job_t *j, unsigned char **src, unsigned char *dst,
                   unsigned char *skip, int *ierr)
{
    keep_t *k = r->k;
    const lors__ec_col_t *tc = &r->cols[j->tmpl];
    int have[LORS_EC_MAX_K];
    for (int64_t s = j->first; s < j->first + j->n; s++) {
        if (lors__keep_stopped(k))
            return ST_FATAL;
        int64_t plen = lors__ec_piece_len(&k->ec, s);
        if (load_sources(r, j, s, plen, src, have, skip) < 0)
            return ST_SOURCE;
        if (lors__ec_decode(&k->ec, plen, have, src, &j->column, 1, &dst) != LORS_OK)
            return ST_FATAL;
        if (!piece_ok(&k->ec, tc, s, dst, plen))
            return ST_SOURCE; /* sources without digests gave a wrong piece */
        uint64_t stored = 0;
        int rc = ibp_store(r->ibp, j->caps.write, dst, (uint64_t)plen, &stored);
        if (rc == IBP_OK && stored != (uint64_t)plen)
            rc = IBP_E_GENERIC;
        if (rc != IBP_OK) {
            *ierr = rc;
            return ST_TARGET;
        }
        pthread_mutex_lock(&r->mu);
        r->rebuilt += plen;
        pthread_mutex_unlock(&r->mu);
    }
    return ST_OK;
}

/* The column still answers on its leaving depot: copy the allocation as it is. */
static int send_whole(ecr_t *r, job_t *j)
{
    const xnd_mapping_t *m = r->k->x->maps[j->tmpl];
    uint64_t copied = 0;
    if (!r->k->pr[j->tmpl].alive || !m->cap[XND_READ])
        return -1;
    int rc = ibp_send(r->ibp, m->cap[XND_READ], j->caps.write, (uint64_t)m->alloc_offset,
                      (uint64_t)j->len, &copied);
    if (rc != IBP_OK || copied != (uint64_t)j->len)
        return -1;
    pthread_mutex_lock(&r->mu);
    r->sent += j->len;
    pthread_mutex_unlock(&r->mu);
    return 0;
}

static void fatal_locked(ecr_t *r, int err)
{
    if (!r->err)
        r->err = err;
}

static void run_job(void *arg, size_t idx)
{
    ecr_t *r = arg;
    keep_t *k = r->k;
    job_t *j = &r->jobs[idx];
    int64_t piece = k->ec.piece;
    unsigned char *buf = malloc((size_t)(k->ec.k + 1) * (size_t)piece);
    unsigned char *skip = calloc(r->ncols ? r->ncols : 1, 1);
    unsigned char *src[LORS_EC_MAX_K];
    if (!buf || !skip) {
        pthread_mutex_lock(&r->mu);
        fatal_locked(r, LORS_E_NOMEM);
        pthread_mutex_unlock(&r->mu);
        goto out;
    }
    for (int i = 0; i < k->ec.k; i++)
        src[i] = buf + (size_t)i * (size_t)piece;
    unsigned char *dst = buf + (size_t)k->ec.k * (size_t)piece;

    pthread_mutex_lock(&r->mu);
    for (;;) {
        if (r->err || lors__keep_stopped(k))
            break;
        j->depot = choose_locked(r, j);
        if (j->depot < 0)
            break;
        pthread_mutex_unlock(&r->mu);

        int ierr = allocate(r, j), st = ST_TARGET;
        const char *op = ierr == IBP_OK ? "STORE" : "ALLOCATE";
        if (ierr == IBP_OK && k->o->on_alloc && k->o->on_alloc(k->o->alloc_arg, &j->caps)) {
            ibp_decr(r->ibp, j->caps.manage, IBP_READCAP);
            j->allocated = 0;
            pthread_mutex_lock(&r->mu);
            fatal_locked(r, LORS_E_WRITE);
            break;
        }
        if (ierr == IBP_OK) {
            j->sent = k->leaving[j->tmpl] && send_whole(r, j) == 0;
            st = j->sent ? ST_OK : rebuild(r, j, src, dst, skip, &ierr);
        }
        if (st == ST_OK) {
            ibp_probe_t p;
            if (j->end == XND_TIME_UNKNOWN && ibp_probe(r->ibp, j->caps.manage, &p) == IBP_OK)
                j->end = lns_now_s() + p.seconds_left;
            emit(r, LORS_EV_REBUILD, j, j->sent ? "SEND" : "DECODE", 0);
            pthread_mutex_lock(&r->mu);
            j->done = 1;
            break;
        }
        if (j->allocated) {
            ibp_decr(r->ibp, j->caps.manage, IBP_READCAP);
            j->allocated = 0;
        }
        if (st != ST_FATAL)
            emit(r, LORS_EV_FAILURE, j, st == ST_SOURCE ? "REBUILD" : op, ierr);
        pthread_mutex_lock(&r->mu);
        if (st != ST_TARGET)
            break; /* too few good pieces (or stopped): no other depot helps */
        r->bad[j->depot] = 1;
    }
    if (!j->done)
        j->depot = -1;
    pthread_mutex_unlock(&r->mu);
out:
    free(buf);
    free(skip);
}

/* The new mapping of a finished job: the replaced column's mapping (range, function and
 * digests: the pieces are the same bytes) with the new allocation. */
static int append_job(ecr_t *r, const job_t *j)
{
    xnd_mapping_t *m = xnd_mapping_copy(r->k->x->maps[j->tmpl]);
    if (!m)
        return LORS_E_NOMEM;
    m->alloc_offset = 0;
    m->alloc_length = j->len;
    int rc = lors__map_set_alloc(m, j->start, j->end, &j->caps);
    if (rc == XND_OK)
        rc = xnd_append(r->k->x, m);
    if (rc != XND_OK) {
        xnd_mapping_free(m);
        return LORS_E_NOMEM;
    }
    return LORS_OK;
}

/* The jobs: each column mapping that does not count, whose stripes are below min_live and
 * that no live mapping of the same column replaces yet (once per column and stripe group). */
static int plan(ecr_t *r)
{
    keep_t *k = r->k;
    lors_ec_stripe_t *st = NULL;
    size_t ns = 0;
    lors_probe_t *cp = malloc((k->n ? k->n : 1) * sizeof *cp);
    if (!cp)
        return LORS_E_NOMEM;
    memcpy(cp, k->pr, k->n * sizeof *cp);
    for (size_t i = 0; i < k->n; i++)
        cp[i].alive = lors__keep_counts(k, i);
    int rc = lors_ec_stripes(k->x, cp, &st, &ns);
    free(cp);
    if (rc != LORS_OK)
        return rc;
    r->jobs = calloc(r->ncols ? r->ncols : 1, sizeof *r->jobs);
    if (!r->jobs) {
        free(st);
        return LORS_E_NOMEM;
    }
    for (size_t i = 0; i < r->ncols; i++) {
        const lors__ec_col_t *c = &r->cols[i];
        if (!c->ok || lors__keep_counts(k, i))
            continue;
        int below = 0, covered = 0, twice = 0;
        for (int64_t s = c->first; s < c->first + c->n && (size_t)s < ns; s++)
            below |= st[s].alive < k->min_live;
        for (size_t q = 0; q < r->ncols && !covered; q++)
            covered = r->cols[q].ok && lors__keep_counts(k, q) &&
                      r->cols[q].column == c->column && r->cols[q].first <= c->first &&
                      r->cols[q].first + r->cols[q].n >= c->first + c->n;
        for (size_t o = 0; o < r->njobs && !twice; o++)
            twice = r->jobs[o].column == c->column && r->jobs[o].first == c->first &&
                    r->jobs[o].n == c->n;
        if (!below || covered || twice)
            continue;
        job_t *j = &r->jobs[r->njobs++];
        j->tmpl = i;
        j->column = c->column;
        j->first = c->first;
        j->n = c->n;
        j->len = (c->n - 1) * k->ec.piece + lors__ec_piece_len(&k->ec, c->first + c->n - 1);
        j->depot = -1;
    }
    free(st);
    return LORS_OK;
}

int lors__keep_ec(keep_t *k)
{
    ecr_t r;
    int rc;
    memset(&r, 0, sizeof r);
    r.k = k;
    r.ncols = k->n;
    r.cols = calloc(r.ncols ? r.ncols : 1, sizeof *r.cols);
    r.bad = calloc(k->ntargets ? k->ntargets : 1, 1);
    if (!r.cols || !r.bad) {
        rc = LORS_E_NOMEM;
        goto out;
    }
    for (size_t i = 0; i < r.ncols; i++)
        lors__ec_col(&k->ec, k->x->maps[i], &r.cols[i]);
    if ((rc = plan(&r)) != LORS_OK || r.njobs == 0)
        goto out;
    if (k->o->dry_run) {
        k->rep->would_add += (int)r.njobs;
        goto out;
    }
    if (k->ntargets == 0) {
        lns_err_set(k->rep->error, sizeof k->rep->error,
                    "keep: no depot to place rebuilt pieces on");
        goto out;
    }
    if (!(r.ibp = lors__client(k->o->timeout_s, k->o->threads))) {
        rc = LORS_E_NOMEM;
        goto out;
    }
    pthread_mutex_init(&r.mu, NULL);
    pthread_mutex_init(&r.evmu, NULL);
    lors__parallel(r.njobs, k->o->threads, run_job, &r);
    pthread_mutex_destroy(&r.mu);
    pthread_mutex_destroy(&r.evmu);

    /* keep what was made, even if other jobs failed: each new column stands alone */
    size_t failed = 0;
    for (size_t o = 0; o < r.njobs; o++) {
        job_t *j = &r.jobs[o];
        if (!j->done) {
            failed++;
            continue;
        }
        if (r.err || append_job(&r, j) != LORS_OK) {
            ibp_decr(r.ibp, j->caps.manage, IBP_READCAP);
            if (!r.err)
                r.err = LORS_E_NOMEM;
            continue;
        }
        k->rep->added++;
        k->rep->changed = 1;
    }
    k->rep->bytes_rebuilt += r.rebuilt;
    k->rep->bytes_sent += r.sent;
    if (failed && !k->rep->error[0])
        lns_err_set(k->rep->error, sizeof k->rep->error,
                    "keep: %zu of %zu columns could not be rebuilt", failed, r.njobs);
    rc = r.err ? r.err : lors__keep_stopped(k) ? LORS_E_STOPPED : LORS_OK;
out:
    if (r.ibp)
        ibp_client_free(r.ibp);
    free(r.cols);
    free(r.jobs);
    free(r.bad);
    if (rc == LORS_OK)
        rc = lors__keep_grow(k);
    return rc;
}
