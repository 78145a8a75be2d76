/* depot_store_accre.c -- ACCRE 1.4's RENAME, SPLIT and MERGE (requests 16, 18, 19) on the
 * store: new capabilities for an allocation, a new allocation carved from one's maximum size,
 * and one folded back into another, each one metadata commit (docs/ibp-protocol.md; the wire
 * side is depot_cmd_accre.c).  The index and accounting they use are depot_store.c's
 * (depot_store_int.h).
 */
#include "depot_store_int.h"

#include <stdlib.h>
#include <string.h>

#include "lns_time.h"

/* ---- ACCRE 1.4's RENAME, SPLIT and MERGE ---------------------------------------------------- */

int depot_store_rename(depot_alloc_t *a, depot_newalloc_t *out)
{
    depot_store_t *st = a->res->store;
    depot_meta_op_t op;
    depot_row_t row, keys;
    int rc = IBP_OK;

    memset(&keys, 0, sizeof keys);
    if (store_new_keys(&keys, out) < 0)
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
    depot_row_t mrow;
    depot_alloc_t *c;
    int64_t now = lns_now_s();
    int rc = IBP_OK;

    if ((rc = store_alloc_prepare(res, reliability, type, size, cks_type, cks_bs, out, &c)) !=
        IBP_OK)
        return rc;

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
        store_account(res, mrel, size, 0);
        rc = store_reserve(st, res, reliability, size, m, now);
        if (rc != IBP_OK)
            store_account(res, mrel, size, 1);
    }
    if (rc != IBP_OK) {
        pthread_mutex_unlock(&st->mu);
        pthread_mutex_unlock(&m->op_mu);
        pthread_mutex_destroy(&c->op_mu);
        free(c);
        return rc;
    }
    c->r.id = store_new_id(st, c->r.id);
    if (c->r.slab)
        c->r.slot = depot_slab_take(res, c->r.slab);
    store_index_insert(st, c); /* nobody knows its keys before the answer */
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
        store_free_locked(st, c, 0); /* no row: the delete is for the slot */
        store_account(res, mrel, size, 1);
    } else if (m->dead) {
        store_account(res, mrel, size, 1); /* its free gave back its old maximum, ours included */
    } else {
        m->r.max_size = mrow.max_size;
        m->r.cur_size = mrow.cur_size;
        depot_wait_wake(st, m); /* a LOAD waiting past the new maximum stops waiting */
    }
    int cut = rc == IBP_OK && !m->dead && mrow.cur_size < old_cur;
    pthread_mutex_unlock(&st->mu);
    if (cut)
        store_cut_own_file(m, &mrow, mrow.cur_size);
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
        store_index_remove(st, c);
        store_account(res, c->r.reliability, csize, 0);
        res->nallocs--;
        rc = store_reserve(st, res, mrel, csize, m, now);
        if (rc != IBP_OK) {
            store_unfree_locked(st, c);
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
        store_unfree_locked(st, c); /* the failed delete left the index's reference with c */
        store_account(res, mrel, csize, 0);
    } else if (reserved && m->dead) {
        store_account(res, mrel, csize, 0); /* its free gave back its old maximum only */
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
