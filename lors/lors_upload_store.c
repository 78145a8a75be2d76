/* lors_upload_store.c -- where the copies of a fragment go and the workers that store them.
 *
 * A stream (one copy of one fragment) is placed on a depot holding no other copy of that
 * fragment; when its depot fails, the stream frees what it stored there, moves, and starts the
 * fragment again.  Workers take runnable streams, ALLOCATE, STORE chunk after chunk and finish
 * with a CHNG when the fragment came out shorter.  No depot call runs under u->mu.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "lors_checksum.h"
#include "lors_io_int.h"
#include "lors_upload_int.h"
#include "lors_report.h"
#include "lns_time.h"

double lors__up_now_s(void)
{
    return (double)lns_mono_ns() / 1e9;
}

int lors__up_stopped(const up_t *u)
{
    return u->o->stop && *u->o->stop;
}

void lors__up_wait(up_t *u)
{
    lors__cond_wait(&u->cv, &u->mu, u->o->stop != NULL);
}

static void emit(up_t *u, lors_event_t *ev)
{
    if (!u->o->on_event)
        return;
    pthread_mutex_lock(&u->evmu);
    u->o->on_event(u->o->event_arg, ev);
    pthread_mutex_unlock(&u->evmu);
}

static void emit_simple(up_t *u, lors_event_kind kind, const stream_t *s, int64_t off,
                        int64_t len)
{
    lors_event_t ev = {0};
    ev.kind = kind;
    ev.depot = &u->o->depots[s->depot];
    ev.fragment = s->f->index;
    ev.copy = s->copy;
    ev.offset = off;
    ev.length = len;
    emit(u, &ev);
}

/* Fail the whole upload (first error wins).  Called with u->mu held. */
void lors__up_fail_locked(up_t *u, int err, const char *fmt, ...)
{
    if (u->err)
        return;
    lors__report_first(u->err, 0, err, u->rep, fmt);
    pthread_cond_broadcast(&u->cv);
}

/* ---- placement ------------------------------------------------------------------------- */

static int used_by_sibling(const up_t *u, const stream_t *s, int d)
{
    for (int k = 0; k < u->o->copies; k++)
        if (k != s->copy && s->f->streams[k].depot == d)
            return 1;
    return 0;
}

/* A depot for s: not bad; if possible holding no other copy of the fragment; then the least
 * loaded, ties broken by the round-robin position.  -1 if every depot is bad. */
int lors__up_choose_depot(const up_t *u, const stream_t *s)
{
    int D = (int)u->o->ndepots, best = -1, best_sib = 1, best_load = 0;
    int first = (int)(((int64_t)s->f->index * u->o->copies + s->copy) % D);

    for (int i = 0; i < D; i++) {
        int d = (first + i) % D;
        if (u->bad[d])
            continue;
        int sib = used_by_sibling(u, s, d);
        if (best < 0 || sib < best_sib || (sib == best_sib && u->load[d] < best_load)) {
            best = d;
            best_sib = sib;
            best_load = u->load[d];
        }
    }
    return best;
}

/* Record a failed depot call of s and move s elsewhere, from the fragment's start.  With
 * u->mu held; *freecaps gets the manage capability to DECR (after unlocking), if any. */
static void stream_failed(up_t *u, stream_t *s, const char *op, int ibp_rc, char *freecaps,
                          lors_event_t *ev)
{
    lors_report_t *r = u->rep;
    frag_t *f = s->f;
    int from = s->depot;

    freecaps[0] = '\0';
    if (s->allocated)
        snprintf(freecaps, IBP_MAX_CAP, "%s", s->caps.manage);
    s->allocated = 0;
    s->next = 0;
    s->ob_stored = 0;
    u->bad[from] = 1;
    int to = lors__up_choose_depot(u, s);

    lors_issue_t *ni = realloc(r->issues, (r->nissues + 1) * sizeof *ni);
    if (ni) {
        r->issues = ni;
        lors_issue_t *is = &ni[r->nissues++];
        memset(is, 0, sizeof *is);
        is->depot = u->o->depots[from];
        is->ibp_err = ibp_rc;
        lors__issue_why(is);
        snprintf(is->op, sizeof is->op, "%s", op);
        is->fragment = f->index;
        is->copy = s->copy;
        is->offset = f->off;
        is->length = f->all_read ? f->len : f->alloc_len;
        is->moved = to >= 0;
        if (to >= 0)
            is->moved_to = u->o->depots[to];
    }
    memset(ev, 0, sizeof *ev);
    ev->kind = LORS_EV_FAILURE;
    ev->depot = &u->o->depots[from];
    ev->moved_to = to >= 0 ? &u->o->depots[to] : NULL;
    ev->fragment = f->index;
    ev->copy = s->copy;
    ev->offset = f->off;
    ev->length = f->all_read ? f->len : f->alloc_len;
    ev->ibp_err = ibp_rc;
    ev->op = op;

    if (to < 0) {
        char dn[IBP_MAX_HOST + 80];
        lors_depot_format(&u->o->depots[from], dn, sizeof dn);
        lors__up_fail_locked(u, LORS_E_PLACE,
                    "fragment %d (bytes %lld-%lld) copy %d: no depot left to store it; last "
                    "failure: %s %s: %s",
                    f->index, (long long)f->off, (long long)(f->off + ev->length - 1), s->copy,
                    op, dn, ibp_strerror(ibp_rc));
        return;
    }
    s->depot = to;
    u->load[to]++;
}

/* ---- the workers ----------------------------------------------------------------------- */

static int runnable(const stream_t *s)
{
    const frag_t *f = s->f;
    return !s->busy && !s->done &&
           (!s->allocated || s->next < f->nread || (f->all_read && s->next == f->nread));
}

static stream_t *pick(up_t *u)
{
    for (int i = u->first_open; i < u->nfrags; i++) {
        frag_t *f = u->frags[i];
        if (f->copies_done == u->o->copies) {
            if (i == u->first_open)
                u->first_open++;
            continue;
        }
        for (int k = 0; k < u->o->copies; k++)
            if (runnable(&f->streams[k]))
                return &f->streams[k];
    }
    return NULL;
}

static int all_done(const up_t *u)
{
    if (!u->reading_done)
        return 0;
    for (int i = u->first_open; i < u->nfrags; i++)
        if (u->frags[i]->copies_done < u->o->copies)
            return 0;
    return 1;
}

static void release_chunk(up_t *u, chunk_t *c)
{
    if (u->src != SRC_MEM && c->data) {
        free(c->data);
        u->live -= c->len;
        pthread_cond_broadcast(&u->cv);
    }
    c->data = NULL;
}

/* ALLOCATE for s on its depot.  Without u->mu. */
static int do_allocate(up_t *u, stream_t *s, int64_t alloc_len)
{
    const lors_depot_t *d = &u->o->depots[s->depot];
    int64_t lease = lors__first_lease(u->o->duration_s, u->o->provisional_s);
    ibp_attr_t a = {(uint64_t)alloc_len, lease, u->o->reliability, IBP_BYTEARRAY};
    int rc = ibp_allocate(u->ibp, d->host, d->port, d->rid[0] ? d->rid : NULL, &a, &s->caps);
    if (rc != IBP_OK)
        return rc;
    lors__alive_add(u->alive, s->caps.manage);
    s->start = time(NULL);
    s->end = lease > 0 ? s->start + lease : XND_TIME_UNKNOWN;
    s->alloc_len = alloc_len;
    return IBP_OK;
}

/* STORE chunk c for s: from memory, or read again from the file if it was released. */
static int do_store(up_t *u, stream_t *s, const chunk_t *c, unsigned char *data)
{
    uint64_t stored = 0;
    unsigned char *tmp = NULL;
    if (!data) {
        tmp = malloc((size_t)c->len);
        if (!tmp)
            return IBP_E_INTERNAL;
        ssize_t n = pread(u->fd, tmp, (size_t)c->len, (off_t)(u->base + c->off));
        if (n != (ssize_t)c->len) {
            free(tmp);
            return IBP_E_FILE_READ;
        }
        pthread_mutex_lock(&u->mu);
        u->rep->bytes_reread += c->len;
        pthread_mutex_unlock(&u->mu);
        data = tmp;
    }
    int rc = ibp_store(u->ibp, s->caps.write, data, (uint64_t)c->len, &stored);
    if (rc == IBP_OK && stored != (uint64_t)c->len)
        rc = IBP_E_SOCK_WRITE;
    free(tmp);
    return rc;
}

/* The fragment is all stored: shrink the allocation to it, learn the expiry if the depot
 * chose it.  Neither is needed for the data, so neither fails the copy. */
static void do_finish(up_t *u, stream_t *s, int64_t len)
{
    if (s->alloc_len > len &&
        ibp_change(u->ibp, s->caps.manage, (uint64_t)len, 0, 0) == IBP_OK)
        s->alloc_len = len;
    if (s->end == XND_TIME_UNKNOWN) {
        ibp_probe_t p;
        if (ibp_probe(u->ibp, s->caps.manage, &p) == IBP_OK && p.seconds_left >= 0)
            s->end = time(NULL) + p.seconds_left;
    }
}

void *lors__up_worker(void *arg)
{
    up_t *u = arg;
    char freecaps[IBP_MAX_CAP];
    lors_event_t fev;

    pthread_mutex_lock(&u->mu);
    for (;;) {
        if (!u->err && lors__up_stopped(u))
            lors__up_fail_locked(u, LORS_E_STOPPED, "stopped after %lld bytes read",
                                 (long long)u->rep->bytes_read);
        if (u->err)
            break;
        stream_t *s = pick(u);
        if (!s) {
            if (all_done(u))
                break;
            lors__up_wait(u);
            continue;
        }
        frag_t *f = s->f;
        if (!s->allocated && u->bad[s->depot]) {
            /* placed before its depot failed another copy: no need to wait for it again */
            int d = lors__up_choose_depot(u, s);
            if (d >= 0) {
                s->depot = d;
                u->load[d]++;
            }
        }
        s->busy = 1;
        if (!s->allocated) {
            int64_t alen = f->alloc_len;
            pthread_mutex_unlock(&u->mu);
            int rc = do_allocate(u, s, alen);
            if (rc == IBP_OK)
                emit_simple(u, LORS_EV_ALLOCATE, s, f->off, alen);
            pthread_mutex_lock(&u->mu);
            s->busy = 0;
            if (rc == IBP_OK) {
                s->allocated = 1;
                continue;
            }
            stream_failed(u, s, "ALLOCATE", rc, freecaps, &fev);
        } else if (s->next < f->nread) {
            int j = s->next;
            chunk_t c = f->chunks[j];
            pthread_mutex_unlock(&u->mu);
            emit_simple(u, LORS_EV_STORE_START, s, c.off, c.len);
            /* a restarted copy may not rely on a file chunk's memory: the other copies can
             * release it at any moment */
            int rc = do_store(u, s, &c, u->src == SRC_FILE && j < s->high ? NULL : c.data);
            if (rc == IBP_OK)
                emit_simple(u, LORS_EV_STORE_END, s, c.off, c.len);
            pthread_mutex_lock(&u->mu);
            s->busy = 0;
            if (rc == IBP_OK) {
                u->rep->bytes_stored += c.len;
                s->next++;
                if (j >= s->high) {
                    s->high = j + 1;
                    if (--f->chunks[j].pending == 0 && u->src == SRC_FILE)
                        release_chunk(u, &f->chunks[j]);
                }
                continue;
            }
            stream_failed(u, s, "STORE", rc, freecaps, &fev);
        } else if (f->oblen && !s->ob_stored) {
            /* the outboard after the data: the last STORE of the copy */
            chunk_t c = {.off = f->off + f->len, .len = (int64_t)f->oblen};
            pthread_mutex_unlock(&u->mu);
            int rc = do_store(u, s, &c, f->ob);
            pthread_mutex_lock(&u->mu);
            s->busy = 0;
            if (rc == IBP_OK) {
                s->ob_stored = 1;
                continue;
            }
            stream_failed(u, s, "STORE", rc, freecaps, &fev);
        } else {
            int64_t len = f->len, alen = f->len + (int64_t)f->oblen;
            pthread_mutex_unlock(&u->mu);
            do_finish(u, s, alen);
            emit_simple(u, LORS_EV_COPY_DONE, s, f->off, len);
            pthread_mutex_lock(&u->mu);
            s->busy = 0;
            s->done = 1;
            if (++f->copies_done == u->o->copies) {
                for (int j = 0; j < f->nread; j++)
                    release_chunk(u, &f->chunks[j]);
                pthread_cond_broadcast(&u->cv);
            }
            continue;
        }
        /* a failure: free what was left on the failed depot, tell, go on (or stop) */
        pthread_cond_broadcast(&u->cv);
        pthread_mutex_unlock(&u->mu);
        if (freecaps[0])
            ibp_decr(u->ibp, freecaps, IBP_READCAP);
        emit(u, &fev);
        pthread_mutex_lock(&u->mu);
    }
    pthread_cond_broadcast(&u->cv);
    pthread_mutex_unlock(&u->mu);
    return NULL;
}

