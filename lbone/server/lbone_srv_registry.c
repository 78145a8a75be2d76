/* lbone_srv_registry.c -- the in-memory registry: every depot, findable by id and by
 * host:port/rid.
 *
 * Depots sit in a dense array (queries scan it) and in two intrusive chained hash tables
 * (heartbeats and re-registrations find one in O(1)).  Removal swaps the last depot into the
 * hole, so each depot remembers its array index.  The table doubles when the load passes 1,
 * which keeps chains short at 10,000+ depots.  Locking is the caller's (reg->lock).
 */
#include "lbone_srv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lns_array.h"

static uint64_t fnv(const char *s, uint64_t h)
{
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ULL;
    }
    return h;
}

static size_t id_bucket(const lbone_reg_t *r, const char *id)
{
    return (size_t)(fnv(id, 0xcbf29ce484222325ULL) % r->nbuckets);
}

static size_t key_bucket(const lbone_reg_t *r, const char *host, int port, const char *rid)
{
    char p[16];
    uint64_t h = 0xcbf29ce484222325ULL;
    snprintf(p, sizeof p, ":%d/", port);
    /* Host names are case-insensitive: hash them folded. */
    for (const char *c = host; *c; c++) {
        char lc = (char)(*c >= 'A' && *c <= 'Z' ? *c + 32 : *c);
        h ^= (unsigned char)lc;
        h *= 0x100000001b3ULL;
    }
    return (size_t)(fnv(rid, fnv(p, h)) % r->nbuckets);
}

int lbone_reg_init(lbone_reg_t *r)
{
    memset(r, 0, sizeof *r);
    r->nbuckets = 1024;
    r->by_id = calloc(r->nbuckets, sizeof *r->by_id);
    r->by_key = calloc(r->nbuckets, sizeof *r->by_key);
    if (!r->by_id || !r->by_key || pthread_rwlock_init(&r->lock, NULL) != 0) {
        free(r->by_id);
        free(r->by_key);
        return -1;
    }
    return 0;
}

void lbone_reg_free(lbone_reg_t *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->v[i]);
    free(r->v);
    free(r->by_id);
    free(r->by_key);
    pthread_rwlock_destroy(&r->lock);
    memset(r, 0, sizeof *r);
}

lbone_depot_t *lbone_reg_find_id(const lbone_reg_t *r, const char *id)
{
    for (lbone_depot_t *d = r->by_id[id_bucket(r, id)]; d; d = d->next_id)
        if (strcmp(d->id, id) == 0)
            return d;
    return NULL;
}

lbone_depot_t *lbone_reg_find_key(const lbone_reg_t *r, const char *host, int port,
                                  const char *rid)
{
    for (lbone_depot_t *d = r->by_key[key_bucket(r, host, port, rid)]; d; d = d->next_key)
        if (d->port == port && strcasecmp(d->host, host) == 0 && strcmp(d->rid, rid) == 0)
            return d;
    return NULL;
}

static void link_hashes(lbone_reg_t *r, lbone_depot_t *d)
{
    size_t bi = id_bucket(r, d->id), bk = key_bucket(r, d->host, d->port, d->rid);
    d->next_id = r->by_id[bi];
    r->by_id[bi] = d;
    d->next_key = r->by_key[bk];
    r->by_key[bk] = d;
}

static int grow_buckets(lbone_reg_t *r)
{
    size_t nb = r->nbuckets * 2;
    lbone_depot_t **bi = calloc(nb, sizeof *bi), **bk = calloc(nb, sizeof *bk);
    if (!bi || !bk) {
        free(bi);
        free(bk);
        return -1;
    }
    free(r->by_id);
    free(r->by_key);
    r->by_id = bi;
    r->by_key = bk;
    r->nbuckets = nb;
    for (size_t i = 0; i < r->n; i++)
        link_hashes(r, r->v[i]);
    return 0;
}

int lbone_reg_insert(lbone_reg_t *r, lbone_depot_t *d)
{
    if (lns_grow(&r->v, &r->cap, r->n + 1, sizeof *r->v, 256) < 0)
        return -1;
    /* A failed growth only lengthens the chains; the depot is still found. */
    if (r->n + 1 > r->nbuckets)
        grow_buckets(r);
    d->idx = r->n;
    r->v[r->n++] = d;
    link_hashes(r, d);
    return 0;
}

static void unlink_chain(lbone_depot_t **head, lbone_depot_t *d, int by_id)
{
    for (lbone_depot_t **pp = head; *pp; pp = by_id ? &(*pp)->next_id : &(*pp)->next_key)
        if (*pp == d) {
            *pp = by_id ? d->next_id : d->next_key;
            return;
        }
}

void lbone_reg_remove(lbone_reg_t *r, lbone_depot_t *d)
{
    unlink_chain(&r->by_id[id_bucket(r, d->id)], d, 1);
    unlink_chain(&r->by_key[key_bucket(r, d->host, d->port, d->rid)], d, 0);
    size_t i = d->idx;
    r->v[i] = r->v[--r->n];
    r->v[i]->idx = i;
    free(d);
}
