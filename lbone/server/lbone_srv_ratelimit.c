/* lbone_srv_ratelimit.c -- a token bucket per client address for the open report endpoint.
 *
 * Each address may make per_minute requests a minute, in bursts of up to per_minute.  The
 * table is bounded: when it reaches its size it first forgets addresses whose buckets have
 * refilled (they would be allowed anyway, so forgetting them changes nothing); if every entry
 * is still active, a new address is refused until some refill -- under a flood from many
 * addresses the endpoint degrades to refusing, never to unbounded memory.
 */
#include "lbone_srv.h"

#include <stdlib.h>
#include <string.h>

#define RL_MAX_ENTRIES 65536

typedef struct entry {
    char addr[64];
    double tokens;
    int64_t last_ms;
    struct entry *next;
} entry_t;

struct lbone_rl {
    pthread_mutex_t mu;
    double rate_per_ms, burst;
    entry_t *b[4096];
    size_t n;
};

lbone_rl_t *lbone_rl_new(int per_minute)
{
    lbone_rl_t *rl = calloc(1, sizeof *rl);
    if (!rl)
        return NULL;
    pthread_mutex_init(&rl->mu, NULL);
    rl->burst = per_minute > 0 ? per_minute : 1;
    rl->rate_per_ms = rl->burst / 60000.0;
    return rl;
}

void lbone_rl_free(lbone_rl_t *rl)
{
    if (!rl)
        return;
    for (size_t i = 0; i < sizeof rl->b / sizeof rl->b[0]; i++)
        for (entry_t *e = rl->b[i], *nx; e; e = nx) {
            nx = e->next;
            free(e);
        }
    pthread_mutex_destroy(&rl->mu);
    free(rl);
}

static void refill(const lbone_rl_t *rl, entry_t *e, int64_t now_ms)
{
    if (now_ms > e->last_ms) {
        e->tokens += (double)(now_ms - e->last_ms) * rl->rate_per_ms;
        if (e->tokens > rl->burst)
            e->tokens = rl->burst;
    }
    e->last_ms = now_ms;
}

static void purge_full(lbone_rl_t *rl, int64_t now_ms)
{
    for (size_t i = 0; i < sizeof rl->b / sizeof rl->b[0]; i++)
        for (entry_t **pp = &rl->b[i]; *pp;) {
            refill(rl, *pp, now_ms);
            if ((*pp)->tokens >= rl->burst) {
                entry_t *dead = *pp;
                *pp = dead->next;
                free(dead);
                rl->n--;
            } else {
                pp = &(*pp)->next;
            }
        }
}

int lbone_rl_allow(lbone_rl_t *rl, const char *addr, int64_t now_ms)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    int ok = 0;
    if (strlen(addr) >= sizeof ((entry_t *)0)->addr)
        return 0;
    for (const char *s = addr; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    size_t bi = (size_t)(h % (sizeof rl->b / sizeof rl->b[0]));

    pthread_mutex_lock(&rl->mu);
    entry_t *e = rl->b[bi];
    while (e && strcmp(e->addr, addr) != 0)
        e = e->next;
    if (!e) {
        if (rl->n >= RL_MAX_ENTRIES)
            purge_full(rl, now_ms);
        if (rl->n >= RL_MAX_ENTRIES || !(e = calloc(1, sizeof *e)))
            goto out;
        strcpy(e->addr, addr);
        e->tokens = rl->burst;
        e->last_ms = now_ms;
        e->next = rl->b[bi];
        rl->b[bi] = e;
        rl->n++;
    }
    refill(rl, e, now_ms);
    if (e->tokens >= 1.0) {
        e->tokens -= 1.0;
        ok = 1;
    }
out:
    pthread_mutex_unlock(&rl->mu);
    return ok;
}
