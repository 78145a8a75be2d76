/* lors_manage.c -- what probe, augment, trim and refresh share: a mapping's depot, the client,
 * a tiny thread pool and the mapping index used by coverage callbacks.
 *
 * The thread pool is a shared counter: each thread (the caller's too) takes the next item
 * until none is left, so a slow depot holds one thread, not a share of the items.
 */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lors_manage_int.h"

int lors__map_depot(const xnd_mapping_t *m, lors_depot_t *d)
{
    memset(d, 0, sizeof *d);
    for (int k = XND_READ; k <= XND_MANAGE; k++) {
        ibp_cap_t cap;
        if (m->cap[k] && ibp_cap_parse(m->cap[k], &cap) == IBP_OK) {
            snprintf(d->host, sizeof d->host, "%s", cap.host);
            d->port = cap.port;
            snprintf(d->rid, sizeof d->rid, "%s", cap.rid);
            return 0;
        }
    }
    return -1;
}

int lors__same_depot(const lors_depot_t *a, const lors_depot_t *b)
{
    if (!a->host[0] || strcasecmp(a->host, b->host) != 0 || a->port != b->port)
        return 0;
    return !a->rid[0] || !b->rid[0] || strcmp(a->rid, b->rid) == 0;
}

ibp_client_t *lors__client(int timeout_s, int threads)
{
    ibp_client_opts_t co;
    ibp_client_opts_init(&co);
    if (timeout_s < 1)
        timeout_s = 30;
    /* libibp counts milliseconds in an int: a longer timeout (over 24.8 days, which only a
     * program can ask for) is as long as it can wait, never an overflow */
    int ms = timeout_s > INT_MAX / 1000 ? INT_MAX : timeout_s * 1000;
    co.io_timeout_ms = ms;
    co.stall_ms = LORS_STALL_MS < ms ? LORS_STALL_MS : ms;
    co.server_timeout_s = timeout_s;
    if (co.connect_timeout_ms > co.stall_ms)
        co.connect_timeout_ms = co.stall_ms;
    if (co.max_idle_per_depot < threads)
        co.max_idle_per_depot = threads;
    return ibp_client_new(&co);
}

/* ---- the thread pool --------------------------------------------------------------------- */

typedef struct par {
    atomic_size_t next;
    size_t n;
    void (*fn)(void *arg, size_t i);
    void *arg;
} par_t;

static void *par_main(void *arg)
{
    par_t *p = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&p->next, 1);
        if (i >= p->n)
            break;
        p->fn(p->arg, i);
    }
    return NULL;
}

void lors__parallel(size_t n, int threads, void (*fn)(void *arg, size_t i), void *arg)
{
    par_t p;
    atomic_init(&p.next, 0);
    p.n = n;
    p.fn = fn;
    p.arg = arg;
    if (threads < 1)
        threads = 1;
    size_t extra = n < (size_t)threads ? (n > 0 ? n - 1 : 0) : (size_t)threads - 1;
    pthread_t *t = extra ? calloc(extra, sizeof *t) : NULL;
    size_t started = 0;
    for (; t && started < extra; started++)
        if (pthread_create(&t[started], NULL, par_main, &p) != 0)
            break;
    par_main(&p);
    for (size_t i = 0; i < started; i++)
        pthread_join(t[i], NULL);
    free(t);
}

/* ---- pointer -> index ------------------------------------------------------------------- */

static int cmp_ptr(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t) * (const xnd_mapping_t *const *)a;
    uintptr_t y = (uintptr_t) * (const xnd_mapping_t *const *)b;
    return x < y ? -1 : x > y;
}

int lors__mapidx_build(const xnd_t *x, lors__mapidx_t *mi)
{
    size_t n = x->nmaps;
    memset(mi, 0, sizeof *mi);
    /* ptr and idx in one array of pairs, sorted by pointer, then split */
    struct pair {
        const xnd_mapping_t *p;
        size_t i;
    } *pairs = malloc((n ? n : 1) * sizeof *pairs);
    mi->ptr = malloc((n ? n : 1) * sizeof *mi->ptr);
    mi->idx = malloc((n ? n : 1) * sizeof *mi->idx);
    if (!pairs || !mi->ptr || !mi->idx) {
        free(pairs);
        lors__mapidx_free(mi);
        return LORS_E_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        pairs[i].p = x->maps[i];
        pairs[i].i = i;
    }
    qsort(pairs, n, sizeof *pairs, cmp_ptr); /* the pointer is the first member */
    for (size_t i = 0; i < n; i++) {
        mi->ptr[i] = pairs[i].p;
        mi->idx[i] = pairs[i].i;
    }
    mi->n = n;
    free(pairs);
    return LORS_OK;
}

size_t lors__mapidx_find(const lors__mapidx_t *mi, const xnd_mapping_t *m)
{
    size_t lo = 0, hi = mi->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)mi->ptr[mid] < (uintptr_t)m)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < mi->n && mi->ptr[lo] == m ? mi->idx[lo] : (size_t)-1;
}

void lors__mapidx_free(lors__mapidx_t *mi)
{
    free(mi->ptr);
    free(mi->idx);
    memset(mi, 0, sizeof *mi);
}

/* ---- words ----------------------------------------------------------------------------- */

const char *lors__why(int err)
{
    switch (err) {
    case IBP_E_CONNECTION: return "cannot connect to the depot";
    case IBP_E_CAP_NOT_FOUND: return "no such allocation (expired or freed)";
    case IBP_E_CLIENT_TIMEOUT: return "no answer in time";
    case IBP_E_SOCK_READ:
    case IBP_E_SOCK_WRITE: return "connection lost";
    default: return ibp_strerror(err);
    }
}

void lors__bytes(int64_t off, int64_t len, char *buf, size_t size)
{
    if (len > 0)
        snprintf(buf, size, "bytes %lld-%lld", (long long)off, (long long)(off + len - 1));
    else
        snprintf(buf, size, "no bytes at %lld", (long long)off);
}
