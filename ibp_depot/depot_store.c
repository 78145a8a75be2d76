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
 * (Where the bytes are and how they are written: depot_data.c; new allocations, aliases and
 * lookups: depot_store_alloc.c; ACCRE's RENAME, SPLIT and MERGE: depot_store_accre.c.)
 *
 * Space: HARD allocations use at most the hard capacity; SOFT ones the soft capacity plus
 * the hard capacity that HARD ones do not use.  Invariants (under store->mu):
 *     hard_used <= hard          hard_used + soft_used <= hard + soft
 */
#include "depot_store_int.h"

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

depot_alloc_t *store_index_find(depot_store_t *st, uint64_t id)
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

void store_index_insert(depot_store_t *st, depot_alloc_t *a)
{
    if (st->count >= st->nbuckets)
        index_grow(st);
    size_t s = slot(st, a->r.id);
    a->hnext = st->buckets[s];
    st->buckets[s] = a;
    st->count++;
}

void store_index_remove(depot_store_t *st, depot_alloc_t *a)
{
    depot_alloc_t **pp = &st->buckets[slot(st, a->r.id)];
    for (; *pp; pp = &(*pp)->hnext)
        if (*pp == a) {
            *pp = a->hnext;
            st->count--;
            return;
        }
}

depot_alloc_t *store_alloc_new(depot_resource_t *res, const depot_row_t *row)
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

void store_account(depot_resource_t *res, int reliability, uint64_t size, int add)
{
    uint64_t *used = reliability == IBP_HARD ? &res->hard_used : &res->soft_used;
    *used = add ? *used + size : *used - size;
}

/* Take a out of the index and give its space back; its row delete is queued and the
 * index's reference goes with it.  waiter: the caller waits for the delete (a->del_op) and
 * calls unfree_locked if it failed. */
void store_free_locked(depot_store_t *st, depot_alloc_t *a, int waiter)
{
    if (a->dead)
        return;
    a->dead = 1;
    depot_wait_wake(st, a);
    store_index_remove(st, a);
    store_account(a->res, a->r.reliability, a->r.max_size, 0);
    a->res->nallocs--;
    depot_meta_del(a->res->meta, a, waiter);
}

/* The delete free_locked queued failed: a is back, as it was, with the index's reference. */
void store_unfree_locked(depot_store_t *st, depot_alloc_t *a)
{
    a->dead = 0; /* the failed delete left the index's reference with a */
    store_index_insert(st, a);
    store_account(a->res, a->r.reliability, a->r.max_size, 1);
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
                store_free_locked(st, a, 0);
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
        store_free_locked(st, v[i], 0);
    }
    free(v);
    return fits(res, IBP_HARD, size) ? IBP_OK : IBP_E_WOULD_EXCEED_LIMIT;
}

/* Make room for size bytes of reliability and account them. */
int store_reserve(depot_store_t *st, depot_resource_t *res, int reliability, uint64_t size,
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
    store_account(res, reliability, size, 1);
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
        store_free_locked(st, a, 1); /* our caller's reference keeps a and del_op alive */
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
        store_unfree_locked(st, a); /* the row is still there: so is the allocation */
    }
    pthread_mutex_unlock(&st->mu);
    pthread_mutex_unlock(&a->op_mu);
    return rc;
}

/* The tail of an own file past size goes (op_mu held; row: the committed row).  A failure
 * leaves bytes nothing reads; a slab slot keeps them (never read past the size, zeroed
 * before an extension). */
void store_cut_own_file(depot_alloc_t *a, const depot_row_t *row, uint64_t size)
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
        store_account(res, old_rel, old_max, 0);
        rc = store_reserve(st, res, new_rel, new_max, a, now);
        if (rc != IBP_OK) {
            store_account(res, old_rel, old_max, 1);
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
        store_account(res, new_rel, new_max, 0);
        store_account(res, old_rel, old_max, 1);
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
        store_cut_own_file(a, &row, new_cur);
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

    if (store_index_find(st, row->id)) {
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
    if (!(a = store_alloc_new(res, row)))
        return -1;
    res->stored += row->cur_size;
    store_index_insert(st, a);
    store_account(res, row->reliability, row->max_size, 1);
    res->nallocs++;
    if (row->expires < res->earliest_expiry)
        res->earliest_expiry = row->expires;
    return 0;
}

int depot_store_owns_file(depot_resource_t *res, uint64_t id)
{
    depot_alloc_t *a = store_index_find(res->store, id);
    return a && a->res == res && !a->r.slab;
}

int depot_store_owns_cks(depot_resource_t *res, uint64_t id)
{
    depot_alloc_t *a = store_index_find(res->store, id);
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
