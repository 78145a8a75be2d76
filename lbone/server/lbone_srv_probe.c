/* lbone_srv_probe.c -- STATUS probes of registered depots, and the clock that expires them.
 *
 * A registered depot is handed out only after an IBP STATUS to its host, port and resource
 * answered: a registration can name a host that clients cannot reach, and a depot can keep
 * heartbeating through a firewall that blocks its IBP port.  Probes run on a fixed pool of
 * workers (bounded parallelism: a thousand dead depots cost probe-threads sockets, never a
 * thousand), fed by a queue of depot ids.  A depot is queued on registration, when a failed
 * one heartbeats, and when its periodic probe falls due (interval with +-10% jitter, so
 * depots registered together do not stay in lockstep).  A result is applied only if the
 * depot was not re-registered meanwhile (generation check).  The ticker thread also runs the
 * drop sweep twice a second.
 */
#include "lbone_srv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ibp.h"
#include "lns_err.h"
#include "lns_log.h"
#include "lns_time.h"

#define TICK_MS 500

struct lbone_prober {
    pthread_mutex_t mu;
    pthread_cond_t work, tick;
    char (*q)[LBONE_ID_LEN + 1];
    size_t head, len, cap;
    pthread_t *workers;
    int nworkers;
    pthread_t ticker;
    int ticker_started;
    int stop;
    unsigned rnd;
};

static int64_t jittered_interval_ms(lbone_prober_t *p, int interval_s)
{
    /* rand_r under p->mu keeps this cheap and thread-safe; quality does not matter here. */
    int64_t base = (int64_t)interval_s * 1000;
    int r = rand_r(&p->rnd) % 2001 - 1000; /* -1000..1000 */
    return base + base * r / 10000;
}

void lbone_probe_enqueue(lbone_srv_t *s, lbone_depot_t *d)
{
    lbone_prober_t *p = s->prober;
    if (!p || s->cfg->probe_interval_s == 0 || d->probe_queued)
        return;
    pthread_mutex_lock(&p->mu);
    if (p->len == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 1024;
        char(*q)[LBONE_ID_LEN + 1] = malloc(cap * sizeof *q);
        if (!q) {
            pthread_mutex_unlock(&p->mu);
            return; /* the next tick tries again */
        }
        for (size_t i = 0; i < p->len; i++)
            memcpy(q[i], p->q[(p->head + i) % p->cap], sizeof q[i]);
        free(p->q);
        p->q = q;
        p->cap = cap;
        p->head = 0;
    }
    memcpy(p->q[(p->head + p->len) % p->cap], d->id, sizeof d->id);
    p->len++;
    d->probe_queued = 1;
    pthread_cond_signal(&p->work);
    pthread_mutex_unlock(&p->mu);
}

static void probe_one(lbone_srv_t *s, ibp_client_t *c, const char *id)
{
    char host[LBONE_MAX_HOST], rid[LBONE_MAX_RID];
    int port, was;
    uint64_t gen;
    ibp_depot_status_t st;

    pthread_rwlock_rdlock(&s->reg.lock);
    lbone_depot_t *d = lbone_reg_find_id(&s->reg, id);
    if (!d || !d->probe_queued) {
        pthread_rwlock_unlock(&s->reg.lock);
        return;
    }
    strcpy(host, d->host);
    strcpy(rid, d->rid);
    port = d->port;
    gen = d->gen;
    pthread_rwlock_unlock(&s->reg.lock);

    int rc = ibp_status(c, host, port, rid, NULL, &st);

    pthread_mutex_lock(&s->prober->mu);
    int64_t next = lns_mono_ms() + jittered_interval_ms(s->prober, s->cfg->probe_interval_s);
    pthread_mutex_unlock(&s->prober->mu);
    pthread_rwlock_wrlock(&s->reg.lock);
    d = lbone_reg_find_id(&s->reg, id);
    if (!d || d->gen != gen) {
        pthread_rwlock_unlock(&s->reg.lock);
        return;
    }
    was = d->probe_state;
    d->probe_queued = 0;
    d->probe_last_ms = lns_now_s() * 1000;
    d->probe_next_mono = next;
    if (rc == IBP_OK) {
        d->probe_state = LBONE_PROBE_OK;
        d->probe_error[0] = 0;
        /* STATUS is the depot's own word on its space: fresher than the last heartbeat. */
        d->hard_total = st.hard_total;
        d->hard_free = st.hard_used < st.hard_total ? st.hard_total - st.hard_used : 0;
        d->soft_total = st.soft_total;
        d->soft_free = st.soft_used < st.soft_total ? st.soft_total - st.soft_used : 0;
        if (st.max_duration_s > 0)
            d->max_duration = st.max_duration_s;
    } else {
        d->probe_state = LBONE_PROBE_FAILED;
        snprintf(d->probe_error, sizeof d->probe_error, "%s", ibp_strerror(rc));
    }
    pthread_rwlock_unlock(&s->reg.lock);
    if (was != (rc == IBP_OK ? LBONE_PROBE_OK : LBONE_PROBE_FAILED))
        lns_log(rc == IBP_OK ? LNS_LOG_INFO : LNS_LOG_WARN, "probe %s %s:%d/%s: %s", id, host,
                port, rid, rc == IBP_OK ? "reachable" : ibp_strerror(rc));
}

static void *worker(void *arg)
{
    lbone_srv_t *s = arg;
    lbone_prober_t *p = s->prober;
    ibp_client_opts_t o;
    ibp_client_opts_init(&o);
    o.connect_timeout_ms = s->cfg->probe_timeout_s * 1000;
    o.io_timeout_ms = s->cfg->probe_timeout_s * 1000;
    o.server_timeout_s = s->cfg->probe_timeout_s;
    o.max_idle_per_depot = 0; /* each probe tests a fresh connection */
    ibp_client_t *c = ibp_client_new(&o);
    if (!c) {
        lns_log(LNS_LOG_ERROR, "probe worker: out of memory");
        return NULL;
    }
    for (;;) {
        char id[LBONE_ID_LEN + 1];
        pthread_mutex_lock(&p->mu);
        while (!p->stop && p->len == 0)
            pthread_cond_wait(&p->work, &p->mu);
        if (p->stop) {
            pthread_mutex_unlock(&p->mu);
            break;
        }
        memcpy(id, p->q[p->head], sizeof id);
        p->head = (p->head + 1) % p->cap;
        p->len--;
        pthread_mutex_unlock(&p->mu);
        probe_one(s, c, id);
    }
    ibp_client_free(c);
    return NULL;
}

static void *ticker(void *arg)
{
    lbone_srv_t *s = arg;
    lbone_prober_t *p = s->prober;
    for (;;) {
        struct timespec ts;
        pthread_mutex_lock(&p->mu);
        lns_cond_deadline(&ts, (int64_t)TICK_MS * 1000000);
        if (!p->stop)
            pthread_cond_timedwait(&p->tick, &p->mu, &ts);
        int stop = p->stop;
        pthread_mutex_unlock(&p->mu);
        if (stop)
            break;
        int64_t s_now, ms_now;
        long ns;
        lns_now_split(&s_now, &ns);
        ms_now = s_now * 1000 + ns / 1000000;
        lbone_core_sweep(s, ms_now);
        if (s->cfg->probe_interval_s == 0)
            continue;
        int64_t mono = lns_mono_ms();
        pthread_rwlock_wrlock(&s->reg.lock);
        for (size_t i = 0; i < s->reg.n; i++) {
            lbone_depot_t *d = s->reg.v[i];
            if (!d->probe_queued && mono >= d->probe_next_mono)
                lbone_probe_enqueue(s, d);
        }
        pthread_rwlock_unlock(&s->reg.lock);
    }
    return NULL;
}

int lbone_probe_start(lbone_srv_t *s, char *err, size_t errlen)
{
    lbone_prober_t *p = calloc(1, sizeof *p);
    int n = s->cfg->probe_interval_s > 0 ? s->cfg->probe_threads : 0;
    if (!p || (n > 0 && !(p->workers = calloc((size_t)n, sizeof *p->workers)))) {
        free(p);
        lns_err_set(err, errlen, "probes: out of memory");
        return -1;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->tick, NULL);
    p->rnd = (unsigned)lns_mono_ns();
    s->prober = p;
    for (int i = 0; i < n; i++) {
        if ((errno = pthread_create(&p->workers[i], NULL, worker, s)) != 0) {
            lns_err_set(err, errlen, "probes: cannot start a worker thread: %s", strerror(errno));
            lbone_probe_stop(s);
            return -1;
        }
        p->nworkers++;
    }
    if ((errno = pthread_create(&p->ticker, NULL, ticker, s)) != 0) {
        lns_err_set(err, errlen, "probes: cannot start the ticker thread: %s", strerror(errno));
        lbone_probe_stop(s);
        return -1;
    }
    p->ticker_started = 1;
    /* Depots loaded from the database are probed before they are handed out again. */
    pthread_rwlock_wrlock(&s->reg.lock);
    for (size_t i = 0; i < s->reg.n; i++)
        lbone_probe_enqueue(s, s->reg.v[i]);
    pthread_rwlock_unlock(&s->reg.lock);
    return 0;
}

void lbone_probe_stop(lbone_srv_t *s)
{
    lbone_prober_t *p = s->prober;
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->work);
    pthread_cond_broadcast(&p->tick);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nworkers; i++)
        pthread_join(p->workers[i], NULL);
    if (p->ticker_started)
        pthread_join(p->ticker, NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->tick);
    free(p->workers);
    free(p->q);
    free(p);
    s->prober = NULL;
}
