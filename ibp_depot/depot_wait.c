/* depot_wait.c -- the LOAD that waits for bytes not stored yet (version 0, as LoCI 1.3.1).
 *
 * A LoCI 1.3.1 depot answers a LOAD that reaches past the current size by waiting, up to the
 * request's server timeout, for STOREs to bring the size there, then sends what it has
 * (docs/interop.md, "Depot-side differences").  That lets a reader follow a writer.
 *
 * The waiter holds a reference to the allocation and no lock while it waits: it sleeps on one
 * of DEPOT_WAIT_SLOTS condition variables (chosen by allocation id) under store->mu, which
 * pthread_cond_timedwait releases.  Whoever makes the allocation's current size visible
 * (depot_write_commit), cuts its maximum (a TRUNCATE) or frees it wakes that slot, only if someone
 * waits on it.  The depot's drain wakes every slot and refuses new waits, so a waiting LOAD
 * never holds up a shutdown.
 */
#include "depot.h"

#include <errno.h>
#include <time.h>

#include "lns_fail.h"
#include "lns_time.h"

void depot_wait_init(depot_store_t *st)
{
    pthread_condattr_t at;
    pthread_condattr_init(&at);
    pthread_condattr_setclock(&at, CLOCK_MONOTONIC);
    for (int i = 0; i < DEPOT_WAIT_SLOTS; i++) {
        pthread_cond_init(&st->wait_cv[i], &at);
        st->wait_n[i] = 0;
    }
    pthread_condattr_destroy(&at);
    st->wait_closed = 0;
}

void depot_wait_destroy(depot_store_t *st)
{
    for (int i = 0; i < DEPOT_WAIT_SLOTS; i++)
        pthread_cond_destroy(&st->wait_cv[i]);
}

static int slot_of(const depot_alloc_t *a)
{
    return (int)(a->r.id % DEPOT_WAIT_SLOTS);
}

void depot_wait_wake(depot_store_t *st, const depot_alloc_t *a)
{
    int s = slot_of(a);
    if (st->wait_n[s] > 0)
        pthread_cond_broadcast(&st->wait_cv[s]);
}

void depot_wait_close(depot_store_t *st)
{
    pthread_mutex_lock(&st->mu);
    st->wait_closed = 1;
    for (int i = 0; i < DEPOT_WAIT_SLOTS; i++)
        pthread_cond_broadcast(&st->wait_cv[i]);
    pthread_mutex_unlock(&st->mu);
}

int depot_wait_size(depot_alloc_t *a, uint64_t end, int timeout_ms, depot_row_t *row)
{
    depot_store_t *st = a->res->store;
    int s = slot_of(a);
    /* failed, the wait ends at once, as at its timeout; its hit log tells a test it waits */
    if (lns_fail("load.wait") < 0)
        timeout_ms = 0;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += timeout_ms / 1000;
    ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&st->mu);
    st->wait_n[s]++;
    while (timeout_ms > 0 && a->r.cur_size < end && a->r.max_size >= end && !a->dead &&
           !st->wait_closed && pthread_cond_timedwait(&st->wait_cv[s], &st->mu, &ts) != ETIMEDOUT)
        ;
    st->wait_n[s]--;
    *row = a->r;
    int dead = a->dead;
    pthread_mutex_unlock(&st->mu);
    return dead ? -1 : 0;
}
