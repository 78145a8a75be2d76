/* lors_augment_copy.c -- one new copy of a piece: a depot, an allocation, a depot-to-depot copy.
 *
 * The copy is an IBP SEND: the source depot STOREs the bytes into the new allocation itself,
 * so they never pass through this client.  When SEND fails, someone is to blame:
 *   - with relay on, the bytes are LOADed from the source and STOREd into the target here,
 *     from what the target already holds on (a STORE is all or nothing on our depots, and a
 *     prefix elsewhere); a failed LOAD blames the source, a failed STORE the target;
 *   - with relay off, a 1-byte LOAD from the source tells: answered, the target (or the path
 *     to it) is at fault; not answered, the source is.
 * A target at fault is marked bad for the rest of the call and the copy moves to another
 * depot, as in the upload engine; a source at fault gives way to the next live mapping that
 * holds the same bytes.  When neither is left the whole augment fails.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lns_time.h"
#include "lors_augment_int.h"
#include "lors_report.h"
#include "lors_manage_int.h"

enum blame { OK_DONE = 0, BLAME_TARGET, BLAME_SOURCE, STOPPED };

int lors__aug_stopped_locked(aug_t *a)
{
    const volatile sig_atomic_t *stop = a->o->up.stop;
    if (!a->err && stop && *stop) {
        a->err = LORS_E_STOPPED;
        lors__report_error(a->rep, "augment: stopped");
    }
    return a->err == LORS_E_STOPPED;
}

static void emit(aug_t *a, const lors_event_t *ev)
{
    if (!a->o->up.on_event)
        return;
    pthread_mutex_lock(&a->evmu);
    a->o->up.on_event(a->o->up.event_arg, ev);
    pthread_mutex_unlock(&a->evmu);
}

static void event_of(const aug_job_t *j, lors_event_kind kind, const lors_depot_t *depot,
                     const lors_depot_t *to, lors_event_t *ev)
{
    memset(ev, 0, sizeof *ev);
    ev->kind = kind;
    ev->depot = depot;
    ev->moved_to = to;
    ev->fragment = j->p->index;
    ev->copy = j->copy;
    ev->offset = j->p->off;
    ev->length = j->p->len;
}

static const lors_depot_t *target_of(const aug_t *a, const aug_job_t *j)
{
    return &a->o->up.depots[j->depot];
}

static int source_of(const aug_job_t *j)
{
    return j->p->alts[j->alt];
}

/* Fail the whole augment (first error wins).  With a->mu held. */
static void fatal_locked(aug_t *a, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fatal_locked(aug_t *a, int err, const char *fmt, ...)
{
    lors__report_first(a->err, 0, err, a->rep, fmt);
}

static void add_issue_locked(aug_t *a, const aug_job_t *j, const lors_depot_t *failed,
                             const char *op, int ibp_rc, const lors_depot_t *to, int relayed)
{
    lors_report_t *r = a->rep;
    lors_issue_t *ni = realloc(r->issues, (r->nissues + 1) * sizeof *ni);
    if (!ni)
        return; /* the report loses a line; the augment goes on */
    r->issues = ni;
    lors_issue_t *is = &ni[r->nissues++];
    memset(is, 0, sizeof *is);
    is->depot = *failed;
    is->ibp_err = ibp_rc;
    lors__issue_why(is);
    snprintf(is->op, sizeof is->op, "%s", op);
    is->fragment = j->p->index;
    is->copy = j->copy;
    is->offset = j->p->off;
    is->length = j->p->len;
    is->moved = to != NULL;
    if (to)
        is->moved_to = *to;
    is->relayed = relayed;
}

/* ---- placement --------------------------------------------------------------------------- */

/* How many copies of j's piece depot d would hold: live ones and this call's other jobs. */
static int holders(const aug_t *a, const aug_job_t *j, int d)
{
    int n = j->p->held[d];
    for (const aug_job_t *s = j - j->copy; s < j - j->copy + j->p->copies; s++)
        n += s != j && s->depot == d;
    return n;
}

/* How many other depots of the list at depot d's place hold a copy of j's piece (live, or
 * this call's); 0 when d's place is not known. */
static int neighbours(const aug_t *a, const aug_job_t *j, int d)
{
    const lors_depot_t *dd = a->o->up.depots;
    int n = 0;
    if (!dd[d].place[0])
        return 0;
    for (int e = 0; e < (int)a->o->up.ndepots; e++)
        if (e != d && strcmp(dd[e].place, dd[d].place) == 0 && holders(a, j, e) > 0)
            n++;
    return n;
}

/* A target for j: not bad; fewest copies of the piece (distinct: none); fewest at its place;
 * least loaded; then round-robin from the job's number.  -1 if no depot is left.  With a->mu
 * held. */
static int choose_locked(const aug_t *a, const aug_job_t *j)
{
    int D = (int)a->o->up.ndepots, best = -1, best_h = 0, best_pl = 0, best_load = 0;
    for (int i = 0; i < D; i++) {
        int d = (j->seq + i) % D;
        if (a->bad[d])
            continue;
        int h = holders(a, j, d);
        if (h > 0 && a->o->distinct)
            continue;
        int pl = neighbours(a, j, d);
        if (best < 0 || h < best_h || (h == best_h && pl < best_pl) ||
            (h == best_h && pl == best_pl && a->load[d] < best_load)) {
            best = d;
            best_h = h;
            best_pl = pl;
            best_load = a->load[d];
        }
    }
    return best;
}

/* The target failed at op: mark it bad, move j.  With a->mu held; fills ev for the caller
 * to emit after unlocking.  0 moved, -1 nowhere left (the augment fails). */
static int target_failed_locked(aug_t *a, aug_job_t *j, const char *op, int ibp_rc,
                                lors_event_t *ev)
{
    int from = j->depot;
    a->bad[from] = 1;
    a->load[from]--;
    j->depot = -1;
    int to = choose_locked(a, j);
    const lors_depot_t *tod = to >= 0 ? &a->o->up.depots[to] : NULL;
    add_issue_locked(a, j, &a->o->up.depots[from], op, ibp_rc, tod, 0);
    event_of(j, LORS_EV_FAILURE, &a->o->up.depots[from], tod, ev);
    ev->ibp_err = ibp_rc;
    ev->op = op;
    if (to < 0 && a->o->distinct) {
        j->dropped = 1; /* the piece stays short; the caller counts what was made */
        return -1;
    }
    if (to < 0) {
        char b[64], dn[IBP_MAX_HOST + 80];
        lors__bytes(j->p->off, j->p->len, b, sizeof b);
        lors_depot_format(&a->o->up.depots[from], dn, sizeof dn);
        fatal_locked(a, LORS_E_PLACE,
                     "piece %d (%s) copy %d: no depot left to copy it to; last failure: %s %s: %s",
                     j->p->index, b, j->copy, op, dn, lors__why(ibp_rc));
        return -1;
    }
    j->depot = to;
    a->load[to]++;
    return 0;
}

/* The source failed at op: go on with the next live mapping of the same bytes.  With a->mu
 * held; fills ev.  0 or -1 (no source left: the augment fails). */
static int source_failed_locked(aug_t *a, aug_job_t *j, const char *op, int ibp_rc,
                                lors_event_t *ev)
{
    const lors_depot_t *from = &a->mapdep[source_of(j)];
    j->alt++;
    const lors_depot_t *next = j->alt < j->p->nalts ? &a->mapdep[source_of(j)] : NULL;
    add_issue_locked(a, j, from, op, ibp_rc, next, 0);
    event_of(j, LORS_EV_FAILURE, from, next, ev);
    ev->ibp_err = ibp_rc;
    ev->op = op;
    if (!next) {
        char b[64], dn[IBP_MAX_HOST + 80];
        lors__bytes(j->p->off, j->p->len, b, sizeof b);
        lors_depot_format(from, dn, sizeof dn);
        fatal_locked(a, LORS_E_NO_REPLICA,
                     "piece %d (%s): no live copy left to copy from; last failure: %s %s: %s",
                     j->p->index, b, op, dn, lors__why(ibp_rc));
        return -1;
    }
    return 0;
}

/* ---- the copy ---------------------------------------------------------------------------- */

/* Where the piece's bytes start in the current source's allocation. */
static uint64_t source_offset(const aug_t *a, const aug_job_t *j)
{
    const xnd_mapping_t *m = a->x->maps[source_of(j)];
    if (j->p->whole)
        return 0;
    return (uint64_t)(m->alloc_offset + (j->p->off - m->exnode_offset));
}

/* Load and store through this client, from what the target holds already.  On failure op
 * and rc say what failed. */
static enum blame relay(aug_t *a, aug_job_t *j, const char **op, int *rc, int64_t *moved)
{
    const char *rcap = a->x->maps[source_of(j)]->cap[XND_READ];
    uint64_t soff = source_offset(a, j), have = 0, len = (uint64_t)j->p->slen;
    ibp_probe_t p;

    *moved = 0;
    *op = "STORE";
    if ((*rc = ibp_probe(a->ibp, j->caps.manage, &p)) != IBP_OK)
        return BLAME_TARGET;
    have = p.cur_size;
    if (have > len) {
        *rc = IBP_E_WOULD_DAMAGE_DATA; /* the target holds more than we asked for */
        return BLAME_TARGET;
    }
    size_t cap = len - have < (uint64_t)AUG_RELAY_CHUNK ? (size_t)(len - have)
                                                        : (size_t)AUG_RELAY_CHUNK;
    unsigned char *buf = malloc(cap ? cap : 1);
    if (!buf) {
        *op = "LOAD";
        *rc = IBP_E_ALLOC_FAILED;
        return BLAME_SOURCE;
    }
    enum blame b = OK_DONE;
    while (have < len) {
        pthread_mutex_lock(&a->mu);
        int stop = a->err != 0 || lors__aug_stopped_locked(a);
        pthread_mutex_unlock(&a->mu);
        if (stop) {
            b = STOPPED;
            break;
        }
        size_t n = len - have < cap ? (size_t)(len - have) : cap;
        uint64_t stored = 0;
        if ((*rc = ibp_load(a->ibp, rcap, soff + have, n, buf)) != IBP_OK) {
            *op = "LOAD";
            b = BLAME_SOURCE;
            break;
        }
        *rc = ibp_store(a->ibp, j->caps.write, buf, n, &stored);
        if (*rc == IBP_OK && stored != n)
            *rc = IBP_E_SOCK_WRITE;
        if (*rc != IBP_OK) {
            *op = "STORE";
            b = BLAME_TARGET;
            break;
        }
        have += n;
        *moved += (int64_t)n;
    }
    free(buf);
    return b;
}

/* Fill the new allocation from the current source. */
static enum blame copy_piece(aug_t *a, aug_job_t *j, const char **op, int *rc)
{
    const xnd_mapping_t *src = a->x->maps[source_of(j)];
    const lors_depot_t *sd = &a->mapdep[source_of(j)], *td = target_of(a, j);
    uint64_t soff = source_offset(a, j), len = (uint64_t)j->p->slen, copied = 0;
    lors_event_t ev;

    event_of(j, LORS_EV_SEND_START, sd, td, &ev);
    emit(a, &ev);
    *rc = ibp_send(a->ibp, src->cap[XND_READ], j->caps.write, soff, len, &copied);
    if (*rc == IBP_OK) {
        event_of(j, LORS_EV_SEND_END, sd, td, &ev);
        emit(a, &ev);
        pthread_mutex_lock(&a->mu);
        a->rep->bytes_sent += j->p->len; /* file bytes: not the outboard after them */
        pthread_mutex_unlock(&a->mu);
        return OK_DONE;
    }
    int send_rc = *rc;
    *op = "SEND";
    if (!a->o->relay) {
        unsigned char b;
        int lrc = ibp_load(a->ibp, src->cap[XND_READ], soff + len - 1, 1, &b);
        return lrc == IBP_OK ? BLAME_TARGET : BLAME_SOURCE;
    }
    event_of(j, LORS_EV_RELAY, sd, td, &ev);
    ev.ibp_err = send_rc;
    emit(a, &ev);
    int64_t moved = 0;
    enum blame bl = relay(a, j, op, rc, &moved);
    pthread_mutex_lock(&a->mu);
    a->rep->bytes_relayed += moved < j->p->len ? moved : j->p->len;
    if (bl == OK_DONE)
        add_issue_locked(a, j, sd, "SEND", send_rc, td, 1);
    pthread_mutex_unlock(&a->mu);
    return bl;
}

/* allocate(): the allocation was made but the caller's on_alloc refused it */
#define LORS_AUG_JOURNAL 2 /* IBP_OK is 1, its errors negative */

/* ALLOCATE for j on its target. */
static int allocate(aug_t *a, aug_job_t *j)
{
    const lors_upload_opts_t *up = &a->o->up;
    const lors_depot_t *d = target_of(a, j);
    int64_t lease = lors__first_lease(up->duration_s, up->provisional_s);
    ibp_attr_t at = {(uint64_t)j->p->slen, lease, up->reliability, IBP_BYTEARRAY};
    int rc = ibp_allocate(a->ibp, d->host, d->port, d->rid[0] ? d->rid : NULL, &at, &j->caps);
    if (rc != IBP_OK)
        return rc;
    j->allocated = 1;
    lors__alive_add(a->alive, j->caps.manage);
    if (a->o->on_alloc && a->o->on_alloc(a->o->alloc_arg, &j->caps) != 0)
        return LORS_AUG_JOURNAL;
    j->start = lns_now_s();
    j->end = lease > 0 ? j->start + lease : XND_TIME_UNKNOWN;
    return IBP_OK;
}

/* The copy is complete: learn its end if the depot chose it.  Not needed for the data, so
 * it does not fail the copy. */
static void finish(aug_t *a, aug_job_t *j)
{
    ibp_probe_t p;
    if (j->end == XND_TIME_UNKNOWN && ibp_probe(a->ibp, j->caps.manage, &p) == IBP_OK &&
        p.seconds_left >= 0)
        j->end = lns_now_s() + p.seconds_left;
}

void lors__aug_run_job(void *arg, size_t i)
{
    aug_t *a = arg;
    aug_job_t *j = &a->jobs[i];
    lors_event_t ev;

    pthread_mutex_lock(&a->mu);
    j->depot = choose_locked(a, j);
    if (j->depot >= 0)
        a->load[j->depot]++;
    else if (a->o->distinct)
        j->dropped = 1;
    else
        fatal_locked(a, LORS_E_PLACE, "piece %d copy %d: every depot has failed", j->p->index,
                     j->copy);
    for (;;) {
        if (a->err || j->dropped || lors__aug_stopped_locked(a))
            break;
        pthread_mutex_unlock(&a->mu);

        int rc = allocate(a, j);
        const char *op = "ALLOCATE";
        if (rc == LORS_AUG_JOURNAL) {
            ibp_decr(a->ibp, j->caps.manage, IBP_READCAP);
            j->allocated = 0;
            pthread_mutex_lock(&a->mu);
            fatal_locked(a, LORS_E_WRITE, "piece %d copy %d: the new allocation could not be "
                         "recorded (journal)", j->p->index, j->copy);
            break;
        }
        enum blame bl = BLAME_TARGET;
        if (rc == IBP_OK) {
            event_of(j, LORS_EV_ALLOCATE, target_of(a, j), NULL, &ev);
            emit(a, &ev);
            bl = copy_piece(a, j, &op, &rc);
        }
        if (bl == OK_DONE) {
            finish(a, j);
            pthread_mutex_lock(&a->mu);
            j->done = 1;
            break;
        }
        /* free what the failed attempt left, then move on (or stop) */
        if (j->allocated && bl != STOPPED) {
            ibp_decr(a->ibp, j->caps.manage, IBP_READCAP);
            j->allocated = 0;
        }
        pthread_mutex_lock(&a->mu);
        if (bl == STOPPED)
            break;
        int left = bl == BLAME_TARGET ? target_failed_locked(a, j, op, rc, &ev)
                                      : source_failed_locked(a, j, op, rc, &ev);
        pthread_mutex_unlock(&a->mu);
        emit(a, &ev);
        pthread_mutex_lock(&a->mu);
        if (left < 0)
            break;
    }
    pthread_mutex_unlock(&a->mu);
}
