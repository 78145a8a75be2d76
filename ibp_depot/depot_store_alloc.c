/* depot_store_alloc.c -- new allocations and aliases in the store, and the lookup of a
 * capability: fresh keys and ids, the space reserved, the row committed before the caller
 * hears of it (publish_locked).  The index and accounting are depot_store.c's
 * (depot_store_int.h).
 */
#include "depot_store_int.h"

#include <stdlib.h>
#include <string.h>

#include "lns_time.h"

/* ---- allocations ------------------------------------------------------------------------ */

/* Three fresh secrets and type keys: the secrets into out, their digests into row. */
int store_new_keys(depot_row_t *row, depot_newalloc_t *out)
{
    for (int k = 0; k < 3; k++) {
        if (depot_random(out->secret[k], DEPOT_SECRET_LEN) < 0 ||
            depot_typekey_new(&out->typekey[k]) < 0)
            return -1;
        depot_digest(out->secret[k], row->digest[k]);
        row->typekey[k] = out->typekey[k];
    }
    return 0;
}

/* A new id no allocation has (store->mu held). */
uint64_t store_new_id(depot_store_t *st, uint64_t id)
{
    while (id == 0 || store_index_find(st, id))
        if (depot_random(&id, sizeof id) < 0)
            id = ((uint64_t)lns_mono_ns() << 20) ^ (uint64_t)st->count;
    return id;
}

int store_alloc_prepare(depot_resource_t *res, int reliability, int type, uint64_t size,
                        int cks_type, uint32_t cks_bs, depot_newalloc_t *out, depot_alloc_t **ap)
{
    depot_row_t row;
    if (type != IBP_BYTEARRAY)
        return IBP_E_TYPE_NOT_SUPPORTED;
    if (reliability != IBP_SOFT && reliability != IBP_HARD)
        return IBP_E_INV_PAR_ATRL;
    if (size == 0 || size > (uint64_t)INT64_MAX)
        return IBP_E_INV_PAR_SIZE;
    memset(&row, 0, sizeof row);
    if (store_new_keys(&row, out) < 0)
        return IBP_E_INTERNAL;
    row.reliability = reliability;
    row.type = type;
    row.max_size = size;
    row.read_refs = row.write_refs = 1;
    row.slab = depot_slot_size(size);
    row.slot = -1;
    row.cks_type = cks_type;
    row.cks_bs = cks_type ? cks_bs : 0;
    if (!(*ap = store_alloc_new(res, &row)))
        return IBP_E_INTERNAL;
    /* The id is drawn outside the lock; a collision (never seen) draws again inside. */
    if (depot_random(&(*ap)->r.id, sizeof (*ap)->r.id) < 0)
        (*ap)->r.id = 0;
    return IBP_OK;
}

/* A new allocation a (store->mu held, its slot taken if it has one) into the index under a
 * fresh id, its row committed before the caller hears of it; releases store->mu.  IBP_OK, or
 * IBP_E_INTERNAL when the row does not commit (the slot then waits for its delete). */
static int publish_locked(depot_store_t *st, depot_alloc_t *a, depot_newalloc_t *out)
{
    depot_resource_t *res = a->res;
    depot_meta_op_t op;

    a->r.id = store_new_id(st, a->r.id);
    store_index_insert(st, a);
    res->nallocs++;
    if (a->r.expires < res->earliest_expiry)
        res->earliest_expiry = a->r.expires;
    out->id = a->r.id;
    depot_meta_put(res->meta, &op, &a->r);
    pthread_mutex_unlock(&st->mu);

    if (depot_meta_wait(res->meta, &op) < 0) {
        /* No row: the delete is for the slot, which waits until one commits. */
        pthread_mutex_lock(&st->mu);
        store_free_locked(st, a, 0);
        pthread_mutex_unlock(&st->mu);
        return IBP_E_INTERNAL;
    }
    return IBP_OK;
}

int depot_store_allocate(depot_store_t *st, int rid, int reliability, int type, int64_t duration,
                         uint64_t size, depot_newalloc_t *out)
{
    return depot_store_allocate_cks(st, rid, reliability, type, duration, size, 0, 0, out);
}

int depot_store_allocate_cks(depot_store_t *st, int rid, int reliability, int type,
                             int64_t duration, uint64_t size, int cks_type, uint32_t cks_bs,
                             depot_newalloc_t *out)
{
    depot_resource_t *res;
    depot_alloc_t *a;
    int64_t now = lns_now_s();
    int rc;

    if (rid < 0 || rid >= st->nres)
        return IBP_E_INVALID_RID;
    res = &st->res[rid];
    if ((rc = store_alloc_prepare(res, reliability, type, size, cks_type, cks_bs, out, &a)) !=
        IBP_OK)
        return rc;

    pthread_mutex_lock(&st->mu);
    rc = depot_expiry(now, duration, res->cfg.max_duration, &a->r.expires);
    if (rc == IBP_OK)
        rc = store_reserve(st, res, reliability, size, NULL, now);
    if (rc != IBP_OK) {
        pthread_mutex_unlock(&st->mu);
        pthread_mutex_destroy(&a->op_mu);
        free(a);
        return rc;
    }
    if (a->r.slab)
        a->r.slot = depot_slab_take(res, a->r.slab);
    return publish_locked(st, a, out);
}

int depot_store_alias_allocate(depot_store_t *st, depot_alloc_t *m, uint64_t off, uint64_t len,
                               int64_t duration, depot_newalloc_t *out)
{
    depot_resource_t *res = m->res;
    depot_row_t row;
    depot_alloc_t *a;
    int64_t now = lns_now_s();
    int rc = IBP_OK;

    if (off > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX - off)
        return IBP_E_WOULD_EXCEED_LIMIT;
    memset(&row, 0, sizeof row);
    if (store_new_keys(&row, out) < 0)
        return IBP_E_INTERNAL;
    row.read_refs = row.write_refs = 1;
    row.slot = -1;
    row.alias_off = off;
    row.alias_len = len;
    if (!(a = store_alloc_new(res, &row)))
        return IBP_E_INTERNAL;
    if (depot_random(&a->r.id, sizeof a->r.id) < 0)
        a->r.id = 0;

    pthread_mutex_lock(&st->mu);
    if (depot_alloc_gone(m, now) || m->r.master)
        rc = IBP_E_CAP_NOT_FOUND;
    else if (off + len > m->r.max_size)
        rc = IBP_E_WOULD_EXCEED_LIMIT;
    else if (duration == 0 || duration == -1)
        a->r.expires = m->r.expires; /* the master's */
    else if (duration < 0 || duration >= m->r.expires - now)
        rc = duration < 0 ? IBP_E_INV_PAR_ATDR : IBP_E_LONG_DURATION;
    else
        a->r.expires = now + duration;
    if (rc != IBP_OK) {
        pthread_mutex_unlock(&st->mu);
        pthread_mutex_destroy(&a->op_mu);
        free(a);
        return rc;
    }
    a->r.master = m->r.id;
    a->r.reliability = m->r.reliability;
    a->r.type = m->r.type;
    return publish_locked(st, a, out);
}

int depot_store_alias_change(depot_alloc_t *a, uint64_t off, uint64_t len, int64_t duration)
{
    depot_store_t *st = a->res->store;
    depot_meta_op_t op;
    depot_row_t row;
    depot_alloc_t *m;
    int64_t now = lns_now_s();
    int rc = IBP_OK;

    if (!(m = depot_store_master(a)))
        return IBP_E_CAP_NOT_FOUND;
    pthread_mutex_lock(&a->op_mu);
    pthread_mutex_lock(&st->mu);
    row = a->r;
    if (depot_alloc_gone(a, now) || depot_alloc_gone(m, now))
        rc = IBP_E_CAP_NOT_FOUND;
    else if (len > 0 && (off > (uint64_t)INT64_MAX || len > m->r.max_size ||
                         off > m->r.max_size - len))
        rc = IBP_E_WOULD_EXCEED_POLICY;
    else if (duration > 0 && duration > m->r.expires - now)
        rc = IBP_E_LONG_DURATION;
    if (rc == IBP_OK) {
        if (len > 0) {
            row.alias_off = off;
            row.alias_len = len;
        }
        if (duration > 0)
            row.expires = now + duration;
        else if (duration == 0)
            row.expires = m->r.expires;
        depot_meta_put(a->res->meta, &op, &row);
    }
    pthread_mutex_unlock(&st->mu);
    if (rc == IBP_OK && depot_meta_wait(a->res->meta, &op) < 0)
        rc = IBP_E_INTERNAL;
    pthread_mutex_lock(&st->mu);
    if (rc == IBP_OK && !a->dead) {
        a->r.alias_off = row.alias_off;
        a->r.alias_len = row.alias_len;
        a->r.expires = row.expires;
        if (row.expires < a->res->earliest_expiry)
            a->res->earliest_expiry = row.expires;
    }
    pthread_mutex_unlock(&st->mu);
    pthread_mutex_unlock(&a->op_mu);
    depot_alloc_release(m);
    return rc;
}

depot_alloc_t *depot_store_master(depot_alloc_t *alias)
{
    depot_store_t *st = alias->res->store;
    depot_alloc_t *m;
    pthread_mutex_lock(&st->mu);
    m = store_index_find(st, alias->r.master);
    if (!alias->r.master || !m || m->r.master || m->res != alias->res ||
        depot_alloc_gone(m, lns_now_s()))
        m = NULL;
    else
        m->refcnt++;
    pthread_mutex_unlock(&st->mu);
    return m;
}

int depot_store_lookup(depot_store_t *st, const char *rid, const char *key, const char *typekey,
                       depot_alloc_t **ap, int *kind)
{
    uint8_t secret[DEPOT_SECRET_LEN], digest[3][DEPOT_DIGEST_LEN];
    uint32_t tks[3];
    uint64_t id;
    depot_alloc_t *a;
    int want = -1;

    if (depot_key_parse(key, &id, secret) < 0)
        return IBP_E_CAP_NOT_FOUND;
    if (rid && rid[0] && (want = depot_rid_parse(st, rid)) < 0)
        return IBP_E_CAP_NOT_FOUND;
    pthread_mutex_lock(&st->mu);
    a = store_index_find(st, id);
    if (!a || depot_alloc_gone(a, lns_now_s()) || (want >= 0 && a->res->id != want)) {
        pthread_mutex_unlock(&st->mu);
        return IBP_E_CAP_NOT_FOUND;
    }
    a->refcnt++;
    memcpy(digest, a->r.digest, sizeof digest);
    memcpy(tks, a->r.typekey, sizeof tks);
    pthread_mutex_unlock(&st->mu);

    *kind = depot_key_match((const uint8_t(*)[DEPOT_DIGEST_LEN])digest, tks, secret, typekey);
    if (*kind < 0) {
        depot_alloc_release(a);
        return IBP_E_CAP_NOT_FOUND;
    }
    *ap = a;
    return IBP_OK;
}
