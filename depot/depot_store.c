/* depot_store.c -- resources and allocations: the in-memory index, space accounting, soft
 * reclaim, expiry, and the MANAGE changes.
 *
 * The index is a hash table from the 64-bit allocation id to its struct, under one mutex
 * (store->mu) that also guards every row field and every resource's accounting; critical
 * sections are a few hundred instructions, never I/O.  An allocation's struct lives while
 * anyone holds a reference: the index holds one, each request one.  When it dies (freed,
 * expired, reclaimed) it leaves the index and gives its space back at once, the delete of
 * its row is queued to the metadata writer, and the writer drops the index's reference once
 * that delete is committed; the last reference gives the bytes back (punches its slab slot
 * and frees it, or unlinks its own file).  So data never goes before its row, and a crash
 * leaves at worst an own file without a row, which startup deletes.
 * (Where the bytes are and how they are written: depot_data.c.)
 *
 * Space: HARD allocations use at most the hard capacity; SOFT ones the soft capacity plus
 * the hard capacity that HARD ones do not use.  Invariants (under store->mu):
 *     hard_used <= hard          hard_used + soft_used <= hard + soft
 */
#include "depot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "lns_err.h"
#include "lns_fail.h"
#include "lns_log.h"
#include "lns_time.h"

/* ---- small helpers --------------------------------------------------------------------- */

int depot_expiry(int64_t now, int64_t duration, int64_t max_duration, int64_t *expires)
{
    if (duration == -1)
        duration = max_duration;
    else if (duration < 1)
        return IBP_E_INV_PAR_ATDR;
    else if (duration > max_duration)
        return IBP_E_LONG_DURATION;
    if (now > 0 && duration > INT64_MAX - now) /* max_duration is bounded; never wrap anyway */
        return IBP_E_LONG_DURATION;
    *expires = now + duration;
    return IBP_OK;
}

int depot_timeout_ms(int t, int max_timeout)
{
    if (t < 1)
        t = 1;
    if (t > max_timeout)
        t = max_timeout;
    return t * 1000;
}

int depot_rid_parse(const depot_store_t *st, const char *rid)
{
    int v = 0;
    if (!rid[0] || (rid[0] == '0' && rid[1]) || strlen(rid) > 4)
        return -1;
    for (const char *p = rid; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        v = v * 10 + (*p - '0');
    }
    return v < st->nres ? v : -1;
}

/* ---- the index (store->mu held) ----------------------------------------------------------- */

static size_t slot(const depot_store_t *st, uint64_t id)
{
    return (size_t)((id ^ (id >> 29)) & (st->nbuckets - 1));
}

static depot_alloc_t *index_find(depot_store_t *st, uint64_t id)
{
    for (depot_alloc_t *a = st->buckets[slot(st, id)]; a; a = a->hnext)
        if (a->r.id == id)
            return a;
    return NULL;
}

static void index_grow(depot_store_t *st)
{
    size_t n = st->nbuckets * 2;
    depot_alloc_t **nb = calloc(n, sizeof *nb);
    if (!nb)
        return; /* longer chains, still correct */
    for (size_t i = 0; i < st->nbuckets; i++) {
        depot_alloc_t *a = st->buckets[i], *next;
        for (; a; a = next) {
            next = a->hnext;
            size_t s = (size_t)((a->r.id ^ (a->r.id >> 29)) & (n - 1));
            a->hnext = nb[s];
            nb[s] = a;
        }
    }
    free(st->buckets);
    st->buckets = nb;
    st->nbuckets = n;
}

static void index_insert(depot_store_t *st, depot_alloc_t *a)
{
    if (st->count >= st->nbuckets)
        index_grow(st);
    size_t s = slot(st, a->r.id);
    a->hnext = st->buckets[s];
    st->buckets[s] = a;
    st->count++;
}

static void index_remove(depot_store_t *st, depot_alloc_t *a)
{
    depot_alloc_t **pp = &st->buckets[slot(st, a->r.id)];
    for (; *pp; pp = &(*pp)->hnext)
        if (*pp == a) {
            *pp = a->hnext;
            st->count--;
            return;
        }
}

static depot_alloc_t *alloc_new(depot_resource_t *res, const depot_row_t *row)
{
    depot_alloc_t *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->r = *row;
    a->res = res;
    a->refcnt = 1; /* the index's */
    a->old_slot = -1;
    a->serial = depot_cks_cache_serial();
    pthread_mutex_init(&a->op_mu, NULL);
    return a;
}

static void account(depot_resource_t *res, int reliability, uint64_t size, int add)
{
    uint64_t *used = reliability == IBP_HARD ? &res->hard_used : &res->soft_used;
    *used = add ? *used + size : *used - size;
}

/* Take a out of the index and give its space back; its row delete is queued and the
 * index's reference goes with it.  waiter: the caller waits for the delete (a->del_op) and
 * calls unfree_locked if it failed. */
static void free_locked(depot_store_t *st, depot_alloc_t *a, int waiter)
{
    if (a->dead)
        return;
    a->dead = 1;
    depot_wait_wake(st, a);
    index_remove(st, a);
    account(a->res, a->r.reliability, a->r.max_size, 0);
    a->res->nallocs--;
    depot_meta_del(a->res->meta, a, waiter);
}

/* The delete free_locked queued failed: a is back, as it was, with the index's reference. */
static void unfree_locked(depot_store_t *st, depot_alloc_t *a)
{
    a->dead = 0; /* the failed delete left the index's reference with a */
    index_insert(st, a);
    account(a->res, a->r.reliability, a->r.max_size, 1);
    a->res->nallocs++;
    if (a->r.expires < a->res->earliest_expiry)
        a->res->earliest_expiry = a->r.expires;
}

/* No one refers to a any more: give back its bytes and the struct. */
static void alloc_destroy(depot_alloc_t *a)
{
    if (a->keep_data) { /* its row is still on disk */
        pthread_mutex_destroy(&a->op_mu);
        free(a);
        return;
    }
    if (a->old_slot >= 0)
        depot_slab_put(a->res, a->old_slab, a->old_slot);
    if (a->r.slab)
        depot_slab_put(a->res, a->r.slab, a->r.slot);
    else
        depot_data_unlink(a->res, a->r.id);
    if (a->r.cks_type)
        depot_cks_unlink(a->res, a->r.id);
    pthread_mutex_destroy(&a->op_mu);
    free(a);
}

void depot_alloc_release(depot_alloc_t *a)
{
    depot_store_t *st = a->res->store;
    uint32_t old_slab = 0;
    int64_t old_slot = -1;
    int last;
    pthread_mutex_lock(&st->mu);
    last = --a->refcnt == 0;
    /* Only the index left: no request can still be reading the slot a CHNG moved out of. */
    if (!last && a->refcnt == 1 && !a->dead && a->old_slot >= 0) {
        old_slab = a->old_slab;
        old_slot = a->old_slot;
        a->old_slot = -1;
    }
    pthread_mutex_unlock(&st->mu);
    if (old_slot >= 0)
        depot_slab_put(a->res, old_slab, old_slot);
    if (last)
        alloc_destroy(a);
}

void depot_alloc_forget(depot_alloc_t *a)
{
    depot_store_t *st = a->res->store;
    pthread_mutex_lock(&st->mu);
    a->keep_data = 1;
    int last = --a->refcnt == 0;
    pthread_mutex_unlock(&st->mu);
    if (last) {
        pthread_mutex_destroy(&a->op_mu);
        free(a);
    }
}

void depot_alloc_deleted(depot_alloc_t *a)
{
    depot_store_t *st = a->res->store;
    int last;
    /* The post is made under the lock: no other holder can drop the last reference, and
     * free a with its del_op, before it. */
    pthread_mutex_lock(&st->mu);
    last = --a->refcnt == 0;
    if (!last)
        sem_post(&a->del_op.done);
    pthread_mutex_unlock(&st->mu);
    if (last)
        alloc_destroy(a);
}

void depot_alloc_snapshot(depot_alloc_t *a, depot_row_t *row)
{
    pthread_mutex_lock(&a->res->store->mu);
    *row = a->r;
    pthread_mutex_unlock(&a->res->store->mu);
}

int depot_alloc_gone(const depot_alloc_t *a, int64_t now)
{
    return a->dead || now >= a->r.expires;
}

/* ---- expiry and reclaim (store->mu held) --------------------------------------------------- */

/* Free every expired allocation of res (NULL = all resources) and recompute the earliest
 * expiry of what is left. */
static void reap_locked(depot_store_t *st, depot_resource_t *only, int64_t now)
{
    int any = 0;
    for (int i = 0; i < st->nres; i++) {
        depot_resource_t *res = &st->res[i];
        if ((!only || only == res) && now >= res->earliest_expiry) {
            any = 1;
            res->earliest_expiry = INT64_MAX;
        }
    }
    if (!any)
        return;
    for (size_t b = 0; b < st->nbuckets; b++) {
        depot_alloc_t *a = st->buckets[b], *next;
        for (; a; a = next) {
            next = a->hnext;
            depot_resource_t *res = a->res;
            if (only && only != res)
                continue;
            if (now >= a->r.expires) {
                lns_log(LNS_LOG_DEBUG, "resource %d: %016llx expired", res->id,
                        (unsigned long long)a->r.id);
                free_locked(st, a, 0);
            } else if (a->r.expires < res->earliest_expiry) {
                res->earliest_expiry = a->r.expires;
            }
        }
    }
}

void depot_store_reap(depot_store_t *st)
{
    pthread_mutex_lock(&st->mu);
    reap_locked(st, NULL, lns_now_s());
    pthread_mutex_unlock(&st->mu);
}

static int fits(const depot_resource_t *res, int reliability, uint64_t size)
{
    uint64_t total = res->cfg.hard + res->cfg.soft, used = res->hard_used + res->soft_used;
    if (reliability == IBP_HARD && size > res->cfg.hard - res->hard_used)
        return 0;
    return size <= total - used;
}

static int by_expiry(const void *x, const void *y)
{
    const depot_alloc_t *a = *(depot_alloc_t *const *)x, *b = *(depot_alloc_t *const *)y;
    return a->r.expires < b->r.expires ? -1 : a->r.expires > b->r.expires;
}

/* A HARD request of size fits the hard capacity but soft allocations borrowed the hard
 * space it needs: free soft ones, those expiring soonest first, until it fits. */
static int reclaim_soft(depot_store_t *st, depot_resource_t *res, uint64_t size,
                        depot_alloc_t *exclude)
{
    size_t n = 0, cap = 64;
    depot_alloc_t **v = malloc(cap * sizeof *v);
    if (!v)
        return IBP_E_INTERNAL;
    for (size_t b = 0; b < st->nbuckets; b++)
        for (depot_alloc_t *a = st->buckets[b]; a; a = a->hnext) {
            if (a->res != res || a == exclude || a->r.reliability != IBP_SOFT || a->r.master)
                continue; /* an alias holds no space */
            if (n == cap) {
                depot_alloc_t **nv = realloc(v, 2 * cap * sizeof *v);
                if (!nv) {
                    free(v);
                    return IBP_E_INTERNAL;
                }
                v = nv;
                cap *= 2;
            }
            v[n++] = a;
        }
    qsort(v, n, sizeof *v, by_expiry);
    for (size_t i = 0; i < n && !fits(res, IBP_HARD, size); i++) {
        lns_log(LNS_LOG_INFO, "resource %d: soft allocation %016llx reclaimed for hard space",
                res->id, (unsigned long long)v[i]->r.id);
        free_locked(st, v[i], 0);
    }
    free(v);
    return fits(res, IBP_HARD, size) ? IBP_OK : IBP_E_WOULD_EXCEED_LIMIT;
}

/* Make room for size bytes of reliability and account them. */
static int reserve(depot_store_t *st, depot_resource_t *res, int reliability, uint64_t size,
                   depot_alloc_t *exclude, int64_t now)
{
    if (!fits(res, reliability, size))
        reap_locked(st, res, now);
    if (!fits(res, reliability, size)) {
        if (reliability != IBP_HARD || size > res->cfg.hard - res->hard_used)
            return IBP_E_WOULD_EXCEED_LIMIT;
        int rc = reclaim_soft(st, res, size, exclude);
        if (rc != IBP_OK)
            return rc;
    }
    account(res, reliability, size, 1);
    return IBP_OK;
}

/* ---- allocations ------------------------------------------------------------------------ */

/* Three fresh secrets and type keys: the secrets into out, their digests into row. */
static int new_keys(depot_row_t *row, depot_newalloc_t *out)
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
static uint64_t new_id(depot_store_t *st, uint64_t id)
{
    while (id == 0 || index_find(st, id))
        if (depot_random(&id, sizeof id) < 0)
            id = ((uint64_t)lns_mono_ns() << 20) ^ (uint64_t)st->count;
    return id;
}

/* A new allocation a (store->mu held, its slot taken if it has one) into the index under a
 * fresh id, its row committed before the caller hears of it; releases store->mu.  IBP_OK, or
 * IBP_E_INTERNAL when the row does not commit (the slot then waits for its delete). */
static int publish_locked(depot_store_t *st, depot_alloc_t *a, depot_newalloc_t *out)
{
    depot_resource_t *res = a->res;
    depot_meta_op_t op;

    a->r.id = new_id(st, a->r.id);
    index_insert(st, a);
    res->nallocs++;
    if (a->r.expires < res->earliest_expiry)
        res->earliest_expiry = a->r.expires;
    out->id = a->r.id;
    depot_meta_put(res->meta, &op, &a->r);
    pthread_mutex_unlock(&st->mu);

    if (depot_meta_wait(res->meta, &op) < 0) {
        /* No row: the delete is for the slot, which waits until one commits. */
        pthread_mutex_lock(&st->mu);
        free_locked(st, a, 0);
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
    depot_row_t row;
    depot_resource_t *res;
    depot_alloc_t *a;
    int64_t now = lns_now_s();
    int rc;

    if (rid < 0 || rid >= st->nres)
        return IBP_E_INVALID_RID;
    if (type != IBP_BYTEARRAY)
        return IBP_E_TYPE_NOT_SUPPORTED;
    if (reliability != IBP_SOFT && reliability != IBP_HARD)
        return IBP_E_INV_PAR_ATRL;
    if (size == 0 || size > (uint64_t)INT64_MAX)
        return IBP_E_INV_PAR_SIZE;
    res = &st->res[rid];

    memset(&row, 0, sizeof row);
    if (new_keys(&row, out) < 0)
        return IBP_E_INTERNAL;
    row.reliability = reliability;
    row.type = type;
    row.max_size = size;
    row.read_refs = row.write_refs = 1;
    row.slab = depot_slot_size(size);
    row.slot = -1;
    row.cks_type = cks_type;
    row.cks_bs = cks_type ? cks_bs : 0;
    if (!(a = alloc_new(res, &row)))
        return IBP_E_INTERNAL;
    /* The id is drawn outside the lock; a collision (never seen) draws again inside. */
    if (depot_random(&a->r.id, sizeof a->r.id) < 0)
        a->r.id = 0;

    pthread_mutex_lock(&st->mu);
    rc = depot_expiry(now, duration, res->cfg.max_duration, &a->r.expires);
    if (rc == IBP_OK)
        rc = reserve(st, res, reliability, size, NULL, now);
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
    if (new_keys(&row, out) < 0)
        return IBP_E_INTERNAL;
    row.read_refs = row.write_refs = 1;
    row.slot = -1;
    row.alias_off = off;
    row.alias_len = len;
    if (!(a = alloc_new(res, &row)))
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
    m = index_find(st, alias->r.master);
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
    a = index_find(st, id);
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

/* ---- MANAGE -------------------------------------------------------------------------------- */

/* INCR and DECR: under op_mu, the new row is committed first and applied after. */
int depot_store_incr(depot_alloc_t *a, int captype)
{
    return depot_store_refs(a, captype, +1);
}

int depot_store_decr(depot_alloc_t *a, int captype)
{
    return depot_store_refs(a, captype, -1);
}

int depot_store_refs(depot_alloc_t *a, int captype, int delta)
{
    depot_store_t *st = a->res->store;
    depot_meta_op_t op, *wait = &op;
    depot_row_t row;
    int rc = IBP_OK, frees = 0;

    if (captype != IBP_READCAP && captype != IBP_WRITECAP)
        return IBP_E_INVALID_PARAMETER;
    pthread_mutex_lock(&a->op_mu);
    pthread_mutex_lock(&st->mu);
    row = a->r;
    int *refs = captype == IBP_READCAP ? &row.read_refs : &row.write_refs;
    if (depot_alloc_gone(a, lns_now_s())) {
        rc = IBP_E_CAP_NOT_FOUND;
    } else if (delta < 0 && captype == IBP_WRITECAP && *refs <= 0) {
        rc = IBP_E_INVALID_PARAMETER;
    } else if (delta < 0 && captype == IBP_READCAP && *refs <= 1) {
        lns_log(LNS_LOG_DEBUG, "resource %d: %016llx freed (read count 0)", a->res->id,
                (unsigned long long)a->r.id);
        free_locked(st, a, 1); /* our caller's reference keeps a and del_op alive */
        wait = &a->del_op;
        frees = 1;
    } else {
        *refs += delta;
        depot_meta_put(a->res->meta, &op, &row);
    }
    pthread_mutex_unlock(&st->mu);
    if (rc == IBP_OK && depot_meta_wait(a->res->meta, wait) < 0)
        rc = IBP_E_INTERNAL;
    pthread_mutex_lock(&st->mu);
    if (rc == IBP_OK && !frees && !a->dead) {
        a->r.read_refs = row.read_refs;
        a->r.write_refs = row.write_refs;
    } else if (rc == IBP_E_INTERNAL && frees) {
        unfree_locked(st, a); /* the row is still there: so is the allocation */
    }
    pthread_mutex_unlock(&st->mu);
    pthread_mutex_unlock(&a->op_mu);
    return rc;
}

/* The tail of an own file past size goes (op_mu held; row: the committed row).  A failure
 * leaves bytes nothing reads; a slab slot keeps them (never read past the size, zeroed
 * before an extension). */
static void cut_own_file(depot_alloc_t *a, const depot_row_t *row, uint64_t size)
{
    if (!row->slab && depot_data_cut(a->res, row->id, size) < 0)
        lns_log(LNS_LOG_WARN, "resource %d: truncate of %016llx: cannot cut its file: %s",
                a->res->id, (unsigned long long)row->id, strerror(errno));
}

/* CHNG (truncate 0: max_size 0 = unchanged, never below the current size) and ACCRE's
 * TRUNCATE (truncate 1: the maximum size becomes max_size, the current size is cut to it if
 * larger).  One row commit carries both sizes: a cut size is committed before the own file's
 * tail goes (a crash in between leaves bytes past the size, which nothing reads). */
static int change(depot_alloc_t *a, uint64_t max_size, int truncate, int64_t duration,
                  int reliability)
{
    depot_store_t *st = a->res->store;
    depot_resource_t *res = a->res;
    depot_meta_op_t op;
    depot_row_t row;
    int64_t now = lns_now_s(), expires;
    int rc = IBP_OK;

    if (reliability != 0 && reliability != IBP_SOFT && reliability != IBP_HARD)
        return IBP_E_INV_PAR_ATRL;
    if (max_size > (uint64_t)INT64_MAX)
        return IBP_E_INV_PAR_SIZE;
    pthread_mutex_lock(&a->op_mu);
    depot_alloc_snapshot(a, &row);
    /* Past its slot the allocation moves to an own file: copied first, while nothing has
     * changed yet, so that a refusal below only has to delete the copy. */
    int move = row.slab && max_size > row.slab;
    if (move && depot_data_move(a, &row) < 0) {
        pthread_mutex_unlock(&a->op_mu);
        return IBP_E_FILE_WRITE;
    }
    pthread_mutex_lock(&st->mu);
    uint64_t old_max = a->r.max_size, new_max = max_size || truncate ? max_size : old_max;
    uint64_t old_cur = a->r.cur_size, new_cur = old_cur;
    int old_rel = a->r.reliability, new_rel = reliability ? reliability : old_rel;
    int reserved = 0;
    expires = a->r.expires;
    if (depot_alloc_gone(a, now))
        rc = IBP_E_CAP_NOT_FOUND;
    else if (new_max < old_cur && truncate)
        new_cur = new_max;
    else if (new_max < old_cur)
        rc = IBP_E_WOULD_DAMAGE_DATA;
    else if (duration != 0)
        rc = depot_expiry(now, duration, res->cfg.max_duration, &expires);
    if (rc == IBP_OK) {
        /* The space is taken now (so no one else gets it) and given back if the commit
         * fails; the row changes once committed. */
        account(res, old_rel, old_max, 0);
        rc = reserve(st, res, new_rel, new_max, a, now);
        if (rc != IBP_OK) {
            account(res, old_rel, old_max, 1);
        } else {
            reserved = 1;
            row = a->r;
            row.max_size = new_max;
            row.cur_size = new_cur;
            row.reliability = new_rel;
            row.expires = expires;
            if (move) {
                row.slab = 0;
                row.slot = -1;
            }
            depot_meta_put(res->meta, &op, &row);
        }
    }
    pthread_mutex_unlock(&st->mu);
    if (rc == IBP_OK && depot_meta_wait(res->meta, &op) < 0)
        rc = IBP_E_INTERNAL; /* the row on disk is the old one: so is the allocation */
    pthread_mutex_lock(&st->mu);
    if (reserved && (rc != IBP_OK || a->dead)) {
        /* Refused, or freed meanwhile (which gave back the old size): undo the reservation. */
        account(res, new_rel, new_max, 0);
        account(res, old_rel, old_max, 1);
    } else if (reserved) {
        uint32_t old_slab = a->r.slab;
        int64_t old_slot = a->r.slot;
        a->r.max_size = new_max;
        a->r.cur_size = new_cur;
        a->r.reliability = new_rel;
        a->r.expires = expires;
        if (truncate) /* a LOAD waiting past the new maximum stops waiting */
            depot_wait_wake(st, a);
        if (expires < res->earliest_expiry)
            res->earliest_expiry = expires;
        if (move) {
            a->r.slab = 0;
            a->r.slot = -1;
            /* Freed once no request still reads it (depot_alloc_release). */
            a->old_slab = old_slab;
            a->old_slot = old_slot;
        }
    }
    int cut = rc == IBP_OK && !a->dead && new_cur < old_cur;
    pthread_mutex_unlock(&st->mu);
    if (move && (rc != IBP_OK || a->dead))
        depot_data_unlink(res, row.id);
    if (cut)
        cut_own_file(a, &row, new_cur);
    pthread_mutex_unlock(&a->op_mu);
    return rc;
}

int depot_store_change(depot_alloc_t *a, uint64_t max_size, int64_t duration, int reliability)
{
    return change(a, max_size, 0, duration, reliability);
}

int depot_store_truncate(depot_alloc_t *a, uint64_t new_size)
{
    return change(a, new_size, 1, 0, 0);
}

/* ---- ACCRE 1.4's RENAME, SPLIT and MERGE ---------------------------------------------------- */

int depot_store_rename(depot_alloc_t *a, depot_newalloc_t *out)
{
    depot_store_t *st = a->res->store;
    depot_meta_op_t op;
    depot_row_t row, keys;
    int rc = IBP_OK;

    memset(&keys, 0, sizeof keys);
    if (new_keys(&keys, out) < 0)
        return IBP_E_INTERNAL;
    pthread_mutex_lock(&a->op_mu);
    pthread_mutex_lock(&st->mu);
    if (depot_alloc_gone(a, lns_now_s())) {
        rc = IBP_E_CAP_NOT_FOUND;
    } else {
        row = a->r;
        memcpy(row.digest, keys.digest, sizeof row.digest);
        memcpy(row.typekey, keys.typekey, sizeof row.typekey);
        out->id = row.id;
        depot_meta_put(a->res->meta, &op, &row);
    }
    pthread_mutex_unlock(&st->mu);
    if (rc == IBP_OK && depot_meta_wait(a->res->meta, &op) < 0)
        rc = IBP_E_INTERNAL; /* the old keys are on disk: they stay */
    pthread_mutex_lock(&st->mu);
    if (rc == IBP_OK && !a->dead) {
        memcpy(a->r.digest, row.digest, sizeof row.digest);
        memcpy(a->r.typekey, row.typekey, sizeof row.typekey);
    }
    pthread_mutex_unlock(&st->mu);
    pthread_mutex_unlock(&a->op_mu);
    return rc;
}

/* SPLIT, as ACCRE 1.4 does it: the new allocation's maximum size is taken from the master's
 * (which may cut the master's bytes, as a TRUNCATE would).  Both rows commit in one
 * transaction; the space moves from the master to the child, so the resource's use does not
 * change (unless their reliabilities differ: then the child's must fit). */
int depot_store_split(depot_alloc_t *m, int reliability, int type, int64_t duration,
                      uint64_t size, int cks_type, uint32_t cks_bs, depot_newalloc_t *out)
{
    depot_store_t *st = m->res->store;
    depot_resource_t *res = m->res;
    depot_meta_op_t mop, cop;
    depot_row_t row, mrow;
    depot_alloc_t *c;
    int64_t now = lns_now_s();
    int rc = IBP_OK;

    if (type != IBP_BYTEARRAY)
        return IBP_E_TYPE_NOT_SUPPORTED;
    if (reliability != IBP_SOFT && reliability != IBP_HARD)
        return IBP_E_INV_PAR_ATRL;
    if (size == 0 || size > (uint64_t)INT64_MAX)
        return IBP_E_INV_PAR_SIZE;
    memset(&row, 0, sizeof row);
    if (new_keys(&row, out) < 0)
        return IBP_E_INTERNAL;
    row.reliability = reliability;
    row.type = type;
    row.max_size = size;
    row.read_refs = row.write_refs = 1;
    row.slab = depot_slot_size(size);
    row.slot = -1;
    row.cks_type = cks_type;
    row.cks_bs = cks_type ? cks_bs : 0;
    if (!(c = alloc_new(res, &row)))
        return IBP_E_INTERNAL;
    if (depot_random(&c->r.id, sizeof c->r.id) < 0)
        c->r.id = 0;

    pthread_mutex_lock(&m->op_mu);
    pthread_mutex_lock(&st->mu);
    int mrel = m->r.reliability;
    if (depot_alloc_gone(m, now))
        rc = IBP_E_CAP_NOT_FOUND;
    else if (m->r.master)
        rc = IBP_E_INVALID_CMD; /* an alias has no space to give */
    else if (size > m->r.max_size)
        rc = IBP_E_WOULD_EXCEED_LIMIT;
    else
        rc = depot_expiry(now, duration, res->cfg.max_duration, &c->r.expires);
    if (rc == IBP_OK) {
        account(res, mrel, size, 0);
        rc = reserve(st, res, reliability, size, m, now);
        if (rc != IBP_OK)
            account(res, mrel, size, 1);
    }
    if (rc != IBP_OK) {
        pthread_mutex_unlock(&st->mu);
        pthread_mutex_unlock(&m->op_mu);
        pthread_mutex_destroy(&c->op_mu);
        free(c);
        return rc;
    }
    c->r.id = new_id(st, c->r.id);
    if (c->r.slab)
        c->r.slot = depot_slab_take(res, c->r.slab);
    index_insert(st, c); /* nobody knows its keys before the answer */
    res->nallocs++;
    if (c->r.expires < res->earliest_expiry)
        res->earliest_expiry = c->r.expires;
    out->id = c->r.id;
    mrow = m->r;
    mrow.max_size -= size;
    if (mrow.cur_size > mrow.max_size)
        mrow.cur_size = mrow.max_size;
    depot_meta_put2(res->meta, &mop, &mrow, &cop, &c->r);
    pthread_mutex_unlock(&st->mu);

    int r1 = depot_meta_wait(res->meta, &mop), r2 = depot_meta_wait(res->meta, &cop);
    if (r1 < 0 || r2 < 0)
        rc = IBP_E_INTERNAL; /* neither row committed: the master is as it was */
    pthread_mutex_lock(&st->mu);
    uint64_t old_cur = m->r.cur_size;
    if (rc != IBP_OK) {
        free_locked(st, c, 0); /* no row: the delete is for the slot */
        account(res, mrel, size, 1);
    } else if (m->dead) {
        account(res, mrel, size, 1); /* its free gave back its old maximum, ours included */
    } else {
        m->r.max_size = mrow.max_size;
        m->r.cur_size = mrow.cur_size;
        depot_wait_wake(st, m); /* a LOAD waiting past the new maximum stops waiting */
    }
    int cut = rc == IBP_OK && !m->dead && mrow.cur_size < old_cur;
    pthread_mutex_unlock(&st->mu);
    if (cut)
        cut_own_file(m, &mrow, mrow.cur_size);
    pthread_mutex_unlock(&m->op_mu);
    return rc;
}

/* MERGE, as ACCRE 1.4 does it: the child's maximum size is added to the master's and the
 * child is freed, its bytes lost.  Only a child nobody else holds a count on (read count 1,
 * write count at most 1: ACCRE's new allocations count 1 and 0, lns's 1 and 1); -1 else, as
 * ACCRE.  The master's row and the child's delete commit in one transaction.  A slab master
 * grown past its slot moves to an own file first, as a CHNG does. */
int depot_store_merge(depot_alloc_t *m, depot_alloc_t *c)
{
    depot_store_t *st = m->res->store;
    depot_resource_t *res = m->res;
    depot_meta_op_t op;
    depot_row_t mrow, crow;
    int64_t now = lns_now_s();
    int rc = IBP_OK;

    if (m == c)
        return IBP_E_INVALID_PARAMETER;
    if (m->res != c->res)
        return IBP_E_INVALID_RID;
    /* Two op_mu: the lower id first, so two merges of a pair cannot deadlock. */
    depot_alloc_t *first = m->r.id < c->r.id ? m : c, *second = first == m ? c : m;
    pthread_mutex_lock(&first->op_mu);
    pthread_mutex_lock(&second->op_mu);
    depot_alloc_snapshot(m, &mrow);
    depot_alloc_snapshot(c, &crow);
    uint64_t new_max = mrow.max_size + crow.max_size;
    int move = !mrow.master && !crow.master && mrow.slab && new_max > mrow.slab &&
               new_max >= mrow.max_size;
    if (move && depot_data_move(m, &mrow) < 0) {
        pthread_mutex_unlock(&second->op_mu);
        pthread_mutex_unlock(&first->op_mu);
        return IBP_E_FILE_WRITE;
    }
    pthread_mutex_lock(&st->mu);
    int mrel = m->r.reliability, reserved = 0;
    uint64_t csize = c->r.max_size;
    if (depot_alloc_gone(m, now) || depot_alloc_gone(c, now))
        rc = IBP_E_CAP_NOT_FOUND;
    else if (m->r.master || c->r.master)
        rc = IBP_E_INVALID_CMD;
    else if (c->r.read_refs != 1 || c->r.write_refs > 1)
        rc = IBP_E_GENERIC;
    else if (m->r.max_size + csize < m->r.max_size || m->r.max_size + csize > (uint64_t)INT64_MAX)
        rc = IBP_E_WOULD_EXCEED_LIMIT;
    if (rc == IBP_OK) {
        /* The child leaves the index now (so no one reaches it while its delete commits; the
         * delete takes over the index's reference, as free_locked's does) and its space goes
         * to the master's reliability. */
        c->dead = 1;
        depot_wait_wake(st, c);
        index_remove(st, c);
        account(res, c->r.reliability, csize, 0);
        res->nallocs--;
        rc = reserve(st, res, mrel, csize, m, now);
        if (rc != IBP_OK) {
            unfree_locked(st, c);
        } else {
            reserved = 1;
            mrow = m->r;
            mrow.max_size += csize;
            if (move) {
                mrow.slab = 0;
                mrow.slot = -1;
            }
            depot_meta_put_del(res->meta, &op, &mrow, c);
        }
    }
    pthread_mutex_unlock(&st->mu);
    if (reserved) {
        int r1 = depot_meta_wait(res->meta, &op), r2 = depot_meta_wait(res->meta, &c->del_op);
        if (r1 < 0 || r2 < 0)
            rc = IBP_E_INTERNAL; /* neither committed: both as they were */
    }
    pthread_mutex_lock(&st->mu);
    if (reserved && rc != IBP_OK) {
        unfree_locked(st, c); /* the failed delete left the index's reference with c */
        account(res, mrel, csize, 0);
    } else if (reserved && m->dead) {
        account(res, mrel, csize, 0); /* its free gave back its old maximum only */
    } else if (reserved) {
        uint32_t old_slab = m->r.slab;
        int64_t old_slot = m->r.slot;
        m->r.max_size = mrow.max_size;
        if (move) {
            m->r.slab = 0;
            m->r.slot = -1;
            m->old_slab = old_slab; /* freed once no request still reads it */
            m->old_slot = old_slot;
        }
    }
    pthread_mutex_unlock(&st->mu);
    if (move && (rc != IBP_OK || m->dead))
        depot_data_unlink(res, mrow.id);
    pthread_mutex_unlock(&second->op_mu);
    pthread_mutex_unlock(&first->op_mu);
    return rc;
}

/* ---- STATUS ------------------------------------------------------------------------------- */

static double gib(uint64_t n)
{
    return (double)n / (1 << 30);
}

/* The bytes res's allocations hold (store->mu held; a walk of the index: STATUS CHANGE is
 * rare). */
static uint64_t stored_locked(depot_store_t *st, const depot_resource_t *res)
{
    uint64_t n = 0;
    for (size_t b = 0; b < st->nbuckets; b++)
        for (const depot_alloc_t *a = st->buckets[b]; a; a = a->hnext)
            if (a->res == res)
                n += a->r.cur_size;
    return n;
}

int depot_store_status(depot_store_t *st, int rid, depot_res_status_t *out)
{
    if (rid < 0 || rid >= st->nres)
        return IBP_E_INVALID_RID;
    pthread_mutex_lock(&st->mu);
    reap_locked(st, &st->res[rid], lns_now_s());
    const depot_resource_t *res = &st->res[rid];
    out->hard = res->cfg.hard;
    out->soft = res->cfg.soft;
    out->hard_used = res->hard_used;
    out->soft_used = res->soft_used;
    out->nallocs = res->nallocs;
    out->max_duration = res->cfg.max_duration;
    pthread_mutex_unlock(&st->mu);
    return IBP_OK;
}

int depot_store_set_limits(depot_store_t *st, int rid, uint64_t hard, uint64_t soft,
                           int64_t max_duration)
{
    int rc = IBP_OK;
    if (rid < 0 || rid >= st->nres)
        return IBP_E_INVALID_RID;
    if (hard > (uint64_t)INT64_MAX || soft > (uint64_t)INT64_MAX)
        return IBP_E_INVALID_PARAMETER;
    if (max_duration < 0 || max_duration > DEPOT_MAX_DURATION_LIMIT)
        return IBP_E_INV_PAR_ATDR;
    depot_resource_t *res = &st->res[rid];
    struct statvfs vs;
    uint64_t avail = statvfs(res->cfg.dir, &vs) == 0 ? (uint64_t)vs.f_bavail * vs.f_frsize
                                                     : UINT64_MAX;
    pthread_mutex_lock(&st->mu);
    uint64_t nh = hard ? hard : res->cfg.hard, ns = soft ? soft : res->cfg.soft;
    if (nh < res->hard_used || nh + ns < res->hard_used + res->soft_used) {
        rc = IBP_E_WOULD_DAMAGE_DATA;
    } else if (nh + ns > res->cfg.hard + res->cfg.soft && avail != UINT64_MAX &&
               nh + ns > avail + stored_locked(st, res)) {
        /* More than the filesystem can hold (as at start): refused, nothing changed. */
        lns_log(LNS_LOG_WARN, "resource %d: STATUS CHANGE to hard %.2f GiB + soft %.2f GiB "
                "refused: %s can hold %.2f GiB", res->id, gib(nh), gib(ns), res->cfg.dir,
                gib(avail + stored_locked(st, res)));
        rc = IBP_E_WOULD_EXCEED_LIMIT;
    } else {
        res->cfg.hard = nh;
        res->cfg.soft = ns;
        if (max_duration)
            res->cfg.max_duration = max_duration;
    }
    pthread_mutex_unlock(&st->mu);
    return rc;
}

/* ---- open, reaper, close ------------------------------------------------------------------- */

int depot_store_adopt(depot_resource_t *res, const depot_row_t *row)
{
    depot_store_t *st = res->store;
    depot_alloc_t *a;

    if (index_find(st, row->id)) {
        lns_log(LNS_LOG_WARN, "resource %d: allocation %016llx is on two resources; kept once",
                res->id, (unsigned long long)row->id);
        return 0;
    }
    if (row->slab && depot_slab_claim(res, row->slab, row->slot) < 0) {
        lns_log(LNS_LOG_ERROR, "resource %d: allocation %016llx names slot %lld of slab %u, "
                "which another row holds; ignored", res->id, (unsigned long long)row->id,
                (long long)row->slot, row->slab);
        return 0;
    }
    if (!(a = alloc_new(res, row)))
        return -1;
    res->stored += row->cur_size;
    index_insert(st, a);
    account(res, row->reliability, row->max_size, 1);
    res->nallocs++;
    if (row->expires < res->earliest_expiry)
        res->earliest_expiry = row->expires;
    return 0;
}

int depot_store_owns_file(depot_resource_t *res, uint64_t id)
{
    depot_alloc_t *a = index_find(res->store, id);
    return a && a->res == res && !a->r.slab;
}

int depot_store_owns_cks(depot_resource_t *res, uint64_t id)
{
    depot_alloc_t *a = index_find(res->store, id);
    return a && a->res == res && a->r.cks_type;
}

void depot_store_fit_capacity(depot_store_t *st)
{
    dev_t dev[DEPOT_MAX_RESOURCES];
    uint64_t claim[DEPOT_MAX_RESOURCES]; /* what resource j may still write */
    for (int i = 0; i < st->nres; i++) {
        depot_resource_t *res = &st->res[i];
        struct statvfs vs;
        struct stat sb;
        claim[i] = 0;
        dev[i] = 0;
        if (statvfs(res->cfg.dir, &vs) < 0 || stat(res->cfg.dir, &sb) < 0)
            continue;
        dev[i] = sb.st_dev;
        uint64_t room = (uint64_t)vs.f_bavail * vs.f_frsize + res->stored;
        for (int j = 0; j < i; j++)
            if (dev[j] == dev[i])
                room = room > claim[j] ? room - claim[j] : 0;
        uint64_t want = res->cfg.hard + res->cfg.soft;
        if (want > room) {
            uint64_t hard = res->cfg.hard < room ? res->cfg.hard : room;
            uint64_t soft = res->cfg.soft < room - hard ? res->cfg.soft : room - hard;
            lns_log(LNS_LOG_WARN, "resource %d: %s can hold %.2f GiB, but hard %.2f GiB + soft "
                    "%.2f GiB are declared; capped to hard %.2f GiB, soft %.2f GiB", res->id,
                    res->cfg.dir, gib(room), gib(res->cfg.hard), gib(res->cfg.soft), gib(hard),
                    gib(soft));
            res->cfg.hard = hard;
            res->cfg.soft = soft;
            want = hard + soft;
        }
        claim[i] = want > res->stored ? want - res->stored : 0;
    }
}

static void *reaper_main(void *arg)
{
    depot_store_t *st = arg;
    pthread_mutex_lock(&st->mu);
    while (!st->stopping) {
        struct timespec ts;
        lns_cond_deadline(&ts, 500 * 1000000LL);
        pthread_cond_timedwait(&st->reaper_cv, &st->mu, &ts);
        if (!st->stopping) {
            lns_fail("reap"); /* kill only */
            reap_locked(st, NULL, lns_now_s());
        }
    }
    pthread_mutex_unlock(&st->mu);
    return NULL;
}

int depot_store_open(depot_store_t *st, const depot_config_t *cfg, char *err, size_t errlen)
{
    memset(st, 0, sizeof *st);
    pthread_mutex_init(&st->mu, NULL);
    pthread_cond_init(&st->reaper_cv, NULL);
    depot_wait_init(st);
    st->durability = cfg->durability;
    st->nbuckets = 1024;
    st->buckets = calloc(st->nbuckets, sizeof *st->buckets);
    if (!st->buckets || depot_cks_cache_open(st, cfg->chksum_cache) < 0) {
        lns_err_set(err, errlen, "out of memory");
        return -1;
    }
    for (int i = 0; i < cfg->nres; i++) {
        depot_resource_t *res = &st->res[i];
        res->id = i;
        res->cfg = cfg->res[i];
        res->store = st;
        res->data_fd = -1;
        for (int c = 0; c < DEPOT_SLAB_CLASSES; c++)
            res->slab[c].fd = -1;
        res->earliest_expiry = INT64_MAX;
        st->nres = i + 1;
        if (depot_resource_open(res, err, errlen) < 0) {
            depot_store_close(st);
            return -1;
        }
    }
    depot_store_fit_capacity(st);
    if (pthread_create(&st->reaper, NULL, reaper_main, st) != 0) {
        lns_err_set(err, errlen, "cannot start the reaper thread");
        depot_store_close(st);
        return -1;
    }
    st->reaper_running = 1;
    return 0;
}

void depot_store_close(depot_store_t *st)
{
    if (st->reaper_running) {
        pthread_mutex_lock(&st->mu);
        st->stopping = 1;
        pthread_cond_signal(&st->reaper_cv);
        pthread_mutex_unlock(&st->mu);
        pthread_join(st->reaper, NULL);
        st->reaper_running = 0;
    }
    /* The writers commit what is queued and drop the references of deleted rows. */
    for (int i = 0; i < st->nres; i++)
        if (st->res[i].meta)
            depot_meta_close(st->res[i].meta);
    for (size_t b = 0; b < st->nbuckets && st->buckets; b++) {
        depot_alloc_t *a = st->buckets[b], *next;
        for (; a; a = next) {
            next = a->hnext;
            pthread_mutex_destroy(&a->op_mu);
            free(a);
        }
    }
    for (int i = 0; i < st->nres; i++)
        if (st->res[i].data_fd >= 0)
            close(st->res[i].data_fd);
    for (int i = 0; i < st->nres; i++)
        depot_slab_close(&st->res[i]);
    free(st->buckets);
    st->buckets = NULL;
    depot_cks_cache_close(st);
    st->nres = 0;
    pthread_cond_destroy(&st->reaper_cv);
    depot_wait_destroy(st);
    pthread_mutex_destroy(&st->mu);
}
