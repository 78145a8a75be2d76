/* lors_lease.c -- provisional leases: the first lease of a new allocation, the keep-alive of
 * a call's allocations while it runs, and their extension to the duration asked once the
 * exNode that names them is safe (lors_lease_int.h has the idea); and whether a file's
 * leases are over.
 *
 * The keep-alive is one thread per call with its own client: every third of the provisional
 * lease it CHNGes each allocation to the provisional lease from now, so an allocation made at
 * the start of an upload of hours still has at least two thirds of a lease when the exNode is
 * written.  An allocation the depot no longer knows (freed when its copy moved) is dropped;
 * one whose depot does not answer is tried again next time (its copy has failed or will).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lns_array.h"
#include "lns_time.h"
#include "lors_lease_int.h"
#include "lors_manage_int.h"

int64_t lors__first_lease(int64_t duration_s, int64_t provisional_s)
{
    if (provisional_s <= 0 || (duration_s > 0 && duration_s <= provisional_s))
        return duration_s;
    return provisional_s;
}

struct lors__alive {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char **caps;              /* with mu */
    size_t n, cap;
    int quit;                 /* with mu */
    int64_t lease_s;
    ibp_client_t *ibp;
};

static void *alive_main(void *arg)
{
    lors__alive_t *a = arg;
    int64_t every_ms = a->lease_s * 1000 / 3 > 1000 ? a->lease_s * 1000 / 3 : 1000;
    pthread_mutex_lock(&a->mu);
    for (;;) {
        int64_t until = lns_mono_ms() + every_ms;
        while (!a->quit && lns_mono_ms() < until) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += 1;
            pthread_cond_timedwait(&a->cv, &a->mu, &ts);
        }
        if (a->quit)
            break;
        /* one at a time, without the lock: a slow depot must not hold up add() */
        for (size_t i = 0; i < a->n && !a->quit; i++) {
            char *c = strdup(a->caps[i]);
            pthread_mutex_unlock(&a->mu);
            int rc = c ? ibp_change(a->ibp, c, 0, a->lease_s, 0) : IBP_OK;
            free(c);
            pthread_mutex_lock(&a->mu);
            if (rc == IBP_E_CAP_NOT_FOUND) {
                free(a->caps[i]);
                a->caps[i--] = a->caps[--a->n];
            }
        }
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

lors__alive_t *lors__alive_start(int64_t duration_s, int64_t provisional_s, int timeout_s)
{
    if (lors__first_lease(duration_s, provisional_s) == duration_s)
        return NULL;
    lors__alive_t *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->lease_s = provisional_s;
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cv, NULL);
    if (!(a->ibp = lors__client(timeout_s, 1)) || pthread_create(&a->th, NULL, alive_main, a)) {
        if (a->ibp)
            ibp_client_free(a->ibp);
        pthread_mutex_destroy(&a->mu);
        pthread_cond_destroy(&a->cv);
        free(a);
        return NULL;
    }
    return a;
}

void lors__alive_add(lors__alive_t *a, const char *mcap)
{
    if (!a || !mcap)
        return;
    pthread_mutex_lock(&a->mu);
    lns_grow(&a->caps, &a->cap, a->n + 1, sizeof *a->caps, 64);
    if (a->n < a->cap && (a->caps[a->n] = strdup(mcap)))
        a->n++;
    pthread_mutex_unlock(&a->mu);
}

void lors__alive_stop(lors__alive_t *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->mu);
    a->quit = 1;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    pthread_join(a->th, NULL);
    for (size_t i = 0; i < a->n; i++)
        free(a->caps[i]);
    free(a->caps);
    ibp_client_free(a->ibp);
    pthread_mutex_destroy(&a->mu);
    pthread_cond_destroy(&a->cv);
    free(a);
}

int lors_lease_extend(xnd_t *x, const unsigned char *select, int64_t duration_s,
                      int64_t provisional_s, int threads, int timeout_s, int *failed)
{
    int nf = 0;
    if (failed)
        *failed = 0;
    if (!x)
        return LORS_E_INVAL;
    if (lors__first_lease(duration_s, provisional_s) == duration_s || x->nmaps == 0)
        return LORS_OK;
    lors_refresh_opts_t ro;
    lors_refresh_report_t rr;
    lors_refresh_opts_init(&ro);
    ro.select = select;
    ro.mode = duration_s < 0 ? LORS_REFRESH_MAX : LORS_REFRESH_FROM_NOW;
    ro.value = duration_s;
    ro.threads = threads;
    ro.timeout_s = timeout_s;
    int rc = lors_refresh(&ro, x, &rr);
    for (size_t i = 0; i < rr.n && i < x->nmaps; i++)
        nf += (!select || select[i]) && !rr.items[i].ok;
    lors_refresh_report_free(&rr);
    if (failed)
        *failed = nf;
    return rc;
}

int lors_leases_expired(const xnd_t *x, int64_t off, int64_t len, int64_t now, int64_t *last)
{
    int64_t end = len < 0 ? INT64_MAX : off + len, latest = INT64_MIN;
    if (!x)
        return 0;
    for (size_t i = 0; i < x->nmaps; i++) {
        const xnd_mapping_t *m = x->maps[i];
        if (m->logical_length <= 0 || m->exnode_offset >= end ||
            m->exnode_offset + m->logical_length <= off)
            continue;
        if (m->end.epoch == XND_TIME_UNKNOWN || m->end.epoch > now)
            return 0;
        if (m->end.epoch > latest)
            latest = m->end.epoch;
    }
    if (latest == INT64_MIN)
        return 0;
    if (last)
        *last = latest;
    return 1;
}
