/* lors_discard.c -- giving allocations back: the undo of an upload or augment that cannot keep
 * its exNode, so that nothing stays stored that no exNode points to.
 *
 * Each allocation is freed by a DECR of its read count with its manage capability, in
 * parallel.  The time is bounded: each call waits at most FREE_TIMEOUT_S, and once a depot
 * has failed to answer (refused, broken, timed out) its remaining allocations are counted
 * unfreed without asking it again -- they expire on their own.  An allocation the depot no
 * longer knows is as freed as it gets.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lors_manage_int.h"

#define FREE_TIMEOUT_S 10

typedef struct item {
    const char *mcap;
    int depot;       /* index into rel.dep; -1: the capability does not parse */
    int freed;
} item_t;

typedef struct rel {
    item_t *it;
    lors_depot_t *dep; /* the distinct depots */
    int *dead;         /* per depot: failed to answer; with mu */
    ibp_client_t *ibp;
    pthread_mutex_t mu;
} rel_t;

/* A failure of the depot or the path to it, not an answer about the allocation. */
static int unreachable(int rc)
{
    return rc == IBP_E_CONNECTION || rc == IBP_E_CLIENT_TIMEOUT || rc == IBP_E_SOCK_READ ||
           rc == IBP_E_SOCK_WRITE || rc == IBP_E_SERVER_TIMEOUT || rc == IBP_E_SERVER_RECOVERING;
}

static void release_one(void *arg, size_t i)
{
    rel_t *r = arg;
    item_t *it = &r->it[i];
    if (it->depot < 0)
        return;
    pthread_mutex_lock(&r->mu);
    int dead = r->dead[it->depot];
    pthread_mutex_unlock(&r->mu);
    if (dead)
        return;
    int rc = ibp_decr(r->ibp, it->mcap, IBP_READCAP);
    it->freed = rc == IBP_OK || rc == IBP_E_CAP_NOT_FOUND;
    if (!it->freed && unreachable(rc)) {
        pthread_mutex_lock(&r->mu);
        r->dead[it->depot] = 1;
        pthread_mutex_unlock(&r->mu);
    }
}

int lors__release(const char *const *mcaps, size_t n, int threads, int timeout_s,
                  lors_freed_t *out)
{
    rel_t r;
    size_t nd = 0;
    memset(out, 0, sizeof *out);
    if (n == 0)
        return LORS_OK;
    memset(&r, 0, sizeof r);
    r.it = calloc(n, sizeof *r.it);
    r.dep = calloc(n, sizeof *r.dep);
    r.dead = calloc(n, sizeof *r.dead);
    if (timeout_s < 1 || timeout_s > FREE_TIMEOUT_S)
        timeout_s = FREE_TIMEOUT_S;
    r.ibp = r.it && r.dep && r.dead ? lors__client(timeout_s, threads) : NULL;
    if (!r.ibp) {
        out->unfreed = (int)n;
        free(r.it);
        free(r.dep);
        free(r.dead);
        return LORS_E_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        ibp_cap_t c;
        r.it[i].mcap = mcaps[i];
        r.it[i].depot = -1;
        if (!mcaps[i] || ibp_cap_parse(mcaps[i], &c) != IBP_OK)
            continue;
        lors_depot_t d;
        memset(&d, 0, sizeof d);
        snprintf(d.host, sizeof d.host, "%s", c.host);
        d.port = c.port;
        size_t k = 0;
        while (k < nd && !(strcmp(r.dep[k].host, d.host) == 0 && r.dep[k].port == d.port))
            k++;
        if (k == nd)
            r.dep[nd++] = d;
        r.it[i].depot = (int)k;
    }
    pthread_mutex_init(&r.mu, NULL);
    lors__parallel(n, threads, release_one, &r);
    pthread_mutex_destroy(&r.mu);
    int *used = r.dead; /* reused: per depot, 1 if something was freed there */
    memset(used, 0, n * sizeof *used);
    for (size_t i = 0; i < n; i++) {
        if (!r.it[i].freed) {
            out->unfreed++;
            continue;
        }
        out->freed++;
        if (!used[r.it[i].depot]++)
            out->depots++;
    }
    ibp_client_free(r.ibp);
    free(r.it);
    free(r.dep);
    free(r.dead);
    return out->unfreed ? LORS_E_PARTIAL : LORS_OK;
}

int lors_discard(const xnd_t *x, int threads, int timeout_s, lors_freed_t *out)
{
    lors_freed_t none;
    if (!out)
        out = &none;
    memset(out, 0, sizeof *out);
    if (!x)
        return LORS_E_INVAL;
    const char **caps = malloc((x->nmaps ? x->nmaps : 1) * sizeof *caps);
    if (!caps) {
        out->unfreed = (int)x->nmaps;
        return LORS_E_NOMEM;
    }
    for (size_t i = 0; i < x->nmaps; i++)
        caps[i] = x->maps[i]->cap[XND_MANAGE];
    int rc = lors__release(caps, x->nmaps, threads, timeout_s, out);
    free(caps);
    return rc;
}
