/* lbone_srv_core.c -- the registry's operations: register, heartbeat, delete, expire.
 *
 * Every change is made first in SQLite and then in memory, both under the db lock, so the
 * durable copy is never behind what a client was told, and the db lock alone orders all
 * writers (a depot cannot vanish or change its key between the two steps).  The registry's
 * write lock is held only for the in-memory step, so queries wait microseconds, never for
 * the disk.  A depot is "up" when it was heard within down-after and its last STATUS probe
 * succeeded (or probing is off).
 */
#include "lbone_srv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lns_err.h"
#include "lns_log.h"
#include "lns_time.h"

/* A failed depot that heartbeats is probed again at most this often. */
#define REPROBE_MIN_MS 5000

static uint64_t next_gen;
static pthread_mutex_t gen_mu = PTHREAD_MUTEX_INITIALIZER;

static uint64_t new_gen(void)
{
    pthread_mutex_lock(&gen_mu);
    uint64_t g = ++next_gen;
    pthread_mutex_unlock(&gen_mu);
    return g;
}

static int64_t now_epoch_ms(void)
{
    int64_t s;
    long ns;
    lns_now_split(&s, &ns);
    return s * 1000 + ns / 1000000;
}

int lbone_srv_down_after_s(const lbone_srv_config_t *cfg)
{
    return cfg->down_after_s > 0 ? cfg->down_after_s : 3 * cfg->heartbeat_s;
}

const char *lbone_status_name(int st)
{
    switch (st) {
    case LBONE_ST_UP: return "up";
    case LBONE_ST_DOWN: return "down";
    case LBONE_ST_UNREACHABLE: return "unreachable";
    case LBONE_ST_LEAVING: return "leaving";
    default: return "probing";
    }
}

int lbone_srv_status(const lbone_srv_t *s, const lbone_depot_t *d, int64_t now_ms)
{
    if (now_ms - d->last_heard_ms > (int64_t)lbone_srv_down_after_s(s->cfg) * 1000)
        return LBONE_ST_DOWN;
    if (d->leaving)
        return LBONE_ST_LEAVING;
    if (s->cfg->probe_interval_s == 0)
        return LBONE_ST_UP;
    if (d->probe_state == LBONE_PROBE_OK)
        return LBONE_ST_UP;
    return d->probe_state == LBONE_PROBE_FAILED ? LBONE_ST_UNREACHABLE : LBONE_ST_PROBING;
}

int lbone_core_register(lbone_srv_t *s, lbone_depot_t *in, char *id, char *secret,
                        char *err, size_t errlen)
{
    lbone_depot_t *d = malloc(sizeof *d);
    if (!d || lbone_random_hex(secret, LBONE_SECRET_LEN / 2) < 0) {
        free(d);
        lns_err_set(err, errlen, "out of memory or no randomness");
        return 500;
    }
    *d = *in;
    lbone_sha256(secret, strlen(secret), d->secret_hash);
    d->registered_ms = d->last_heard_ms = now_epoch_ms();
    d->gen = new_gen();
    d->probe_state = LBONE_PROBE_UNKNOWN;
    d->probe_queued = 0;
    d->probe_last_ms = 0;
    d->probe_next_mono = 0;
    d->probe_error[0] = 0;

    lbone_db_lock(s->db);
    pthread_rwlock_rdlock(&s->reg.lock);
    lbone_depot_t *old = lbone_reg_find_key(&s->reg, d->host, d->port, d->rid);
    if (old) {
        strcpy(d->id, old->id); /* the same depot keeps its id, and so its history */
    } else {
        do {
            if (lbone_random_hex(d->id, LBONE_ID_LEN / 2) < 0) {
                pthread_rwlock_unlock(&s->reg.lock);
                lbone_db_unlock(s->db);
                free(d);
                lns_err_set(err, errlen, "no randomness for an id");
                return 500;
            }
        } while (lbone_reg_find_id(&s->reg, d->id));
    }
    pthread_rwlock_unlock(&s->reg.lock);

    if (lbone_db_put(s->db, d) < 0) {
        lbone_db_unlock(s->db);
        free(d);
        lns_err_set(err, errlen, "the registry database refused the write");
        return 500;
    }
    pthread_rwlock_wrlock(&s->reg.lock);
    if (old)
        lbone_reg_remove(&s->reg, old);
    int ins = lbone_reg_insert(&s->reg, d);
    if (ins == 0)
        lbone_probe_enqueue(s, d);
    pthread_rwlock_unlock(&s->reg.lock);
    if (ins < 0) {
        lbone_db_delete(s->db, d->id);
        lbone_db_unlock(s->db);
        free(d);
        lns_err_set(err, errlen, "out of memory");
        return 500;
    }
    lbone_db_unlock(s->db);
    strcpy(id, d->id);
    lns_log(LNS_LOG_INFO, "%s depot %s %s:%d/%s", old ? "re-registered" : "registered", id,
            in->host, in->port, in->rid);
    return 201;
}

int lbone_core_heartbeat(lbone_srv_t *s, const char *id, const char *bearer,
                         const lbone_depot_t *upd, int mask, char *err, size_t errlen)
{
    lbone_depot_t tmp;
    lbone_db_lock(s->db);
    pthread_rwlock_rdlock(&s->reg.lock);
    lbone_depot_t *d = lbone_reg_find_id(&s->reg, id);
    if (d)
        tmp = *d;
    pthread_rwlock_unlock(&s->reg.lock);
    if (!d) {
        lbone_db_unlock(s->db);
        lns_err_set(err, errlen, "unknown depot id (register again)");
        return 404;
    }
    if (!lbone_secret_matches(bearer, tmp.secret_hash)) {
        lbone_db_unlock(s->db);
        lns_err_set(err, errlen, "wrong secret for this depot");
        return 403;
    }
    if (mask & LBONE_HB_HARD_TOTAL)
        tmp.hard_total = upd->hard_total;
    if (mask & LBONE_HB_HARD_FREE)
        tmp.hard_free = upd->hard_free;
    if (mask & LBONE_HB_SOFT_TOTAL)
        tmp.soft_total = upd->soft_total;
    if (mask & LBONE_HB_SOFT_FREE)
        tmp.soft_free = upd->soft_free;
    if (mask & LBONE_HB_MAX_DURATION)
        tmp.max_duration = upd->max_duration;
    if (tmp.hard_free > tmp.hard_total || tmp.soft_free > tmp.soft_total) {
        lbone_db_unlock(s->db);
        lns_err_set(err, errlen, "free space above the total");
        return 400;
    }
    tmp.last_heard_ms = now_epoch_ms();
    if (lbone_db_heartbeat(s->db, &tmp) < 0) {
        lbone_db_unlock(s->db);
        lns_err_set(err, errlen, "the registry database refused the write");
        return 500;
    }
    pthread_rwlock_wrlock(&s->reg.lock);
    d->hard_total = tmp.hard_total;
    d->hard_free = tmp.hard_free;
    d->soft_total = tmp.soft_total;
    d->soft_free = tmp.soft_free;
    d->max_duration = tmp.max_duration;
    d->last_heard_ms = tmp.last_heard_ms;
    d->leaving = (mask & LBONE_HB_LEAVING) && upd->leaving; /* each heartbeat says it again */
    /* A depot that speaks again may be reachable again: do not make it wait a whole
     * probe interval (but do not let heartbeats drive a probe storm either). */
    if (!d->probe_queued &&
        (d->probe_state == LBONE_PROBE_UNKNOWN ||
         (d->probe_state == LBONE_PROBE_FAILED &&
          tmp.last_heard_ms - d->probe_last_ms >= REPROBE_MIN_MS)))
        lbone_probe_enqueue(s, d);
    pthread_rwlock_unlock(&s->reg.lock);
    lbone_db_unlock(s->db);
    return 200;
}

/* With the db lock held. */
static int drop(lbone_srv_t *s, lbone_depot_t *d)
{
    char id[LBONE_ID_LEN + 1];
    strcpy(id, d->id);
    if (lbone_db_delete(s->db, id) < 0)
        return -1;
    pthread_rwlock_wrlock(&s->reg.lock);
    lbone_reg_remove(&s->reg, d);
    pthread_rwlock_unlock(&s->reg.lock);
    lbone_hist_forget_depot(s->hist, id);
    return 0;
}

int lbone_core_delete(lbone_srv_t *s, const char *id, const char *bearer, char *err,
                      size_t errlen)
{
    uint8_t hash[LBONE_HASH_LEN];
    lbone_db_lock(s->db);
    pthread_rwlock_rdlock(&s->reg.lock);
    lbone_depot_t *d = lbone_reg_find_id(&s->reg, id);
    if (d)
        memcpy(hash, d->secret_hash, sizeof hash);
    pthread_rwlock_unlock(&s->reg.lock);
    if (!d) {
        lbone_db_unlock(s->db);
        lns_err_set(err, errlen, "unknown depot id");
        return 404;
    }
    if (!lbone_secret_matches(bearer, hash) && !lbone_secret_matches(bearer, s->token_hash)) {
        lbone_db_unlock(s->db);
        lns_err_set(err, errlen, "neither this depot's secret nor the registry token");
        return 403;
    }
    int rc = drop(s, d);
    lbone_db_unlock(s->db);
    if (rc < 0) {
        lns_err_set(err, errlen, "the registry database refused the delete");
        return 500;
    }
    lns_log(LNS_LOG_INFO, "deleted depot %s", id);
    return 204;
}

int lbone_core_sweep(lbone_srv_t *s, int64_t now_ms)
{
    int64_t limit = (int64_t)s->cfg->drop_after_s * 1000;
    int dropped = 0;
    lbone_db_lock(s->db);
    /* Under the db lock nothing else adds or removes depots or moves last_heard, so the
     * scan and the drops see one state. */
    for (size_t i = 0; i < s->reg.n;) {
        lbone_depot_t *d = s->reg.v[i];
        if (now_ms - d->last_heard_ms > limit) {
            lns_log(LNS_LOG_INFO, "dropping depot %s %s:%d/%s: not heard from for %llds", d->id,
                    d->host, d->port, d->rid, (long long)((now_ms - d->last_heard_ms) / 1000));
            if (drop(s, d) < 0)
                break;
            dropped++;
            continue; /* the last depot moved into slot i */
        }
        i++;
    }
    lbone_db_unlock(s->db);
    return dropped;
}
