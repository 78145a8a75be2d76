/* depot_store_int.h -- what the store's files share and nothing else calls: the index and
 * the space accounting of depot_store.c, for depot_store_alloc.c (new allocations, aliases,
 * lookups) and depot_store_accre.c (RENAME, SPLIT, MERGE).
 * All but store_new_keys and store_cut_own_file want store->mu held.
 */
#ifndef DEPOT_STORE_INT_H
#define DEPOT_STORE_INT_H

#include "depot.h"

/* The hash index from allocation id to its struct. */
depot_alloc_t *store_index_find(depot_store_t *st, uint64_t id);
void store_index_insert(depot_store_t *st, depot_alloc_t *a);
void store_index_remove(depot_store_t *st, depot_alloc_t *a);
/* A new struct for row on res (one reference, the index's), or NULL. */
depot_alloc_t *store_alloc_new(depot_resource_t *res, const depot_row_t *row);
/* Add (add 1) or take back (add 0) size bytes of reliability in res's accounting. */
void store_account(depot_resource_t *res, int reliability, uint64_t size, int add);
/* Take a out of the index and give its space back; its row delete is queued and the
 * index's reference goes with it.  waiter: the caller waits for the delete (a->del_op) and
 * calls store_unfree_locked if it failed. */
void store_free_locked(depot_store_t *st, depot_alloc_t *a, int waiter);
/* The delete store_free_locked queued failed: a is back, as it was. */
void store_unfree_locked(depot_store_t *st, depot_alloc_t *a);
/* Make room for size bytes of reliability (soft reclaim; exclude: never reclaimed) and
 * account them: IBP_OK, or IBP_E_WOULD_EXCEED_LIMIT. */
int store_reserve(depot_store_t *st, depot_resource_t *res, int reliability, uint64_t size,
                  depot_alloc_t *exclude, int64_t now);
/* (depot_store_alloc.c) Three fresh secrets and type keys: the secrets into out, their
 * digests into row (0/-1). */
int store_new_keys(depot_row_t *row, depot_newalloc_t *out);
/* A new allocation's struct (not in the index, no space reserved yet) and its keys in out:
 * IBP_OK and *ap, or the refusal of a bad type, reliability or size (no lock needed). */
int store_alloc_prepare(depot_resource_t *res, int reliability, int type, uint64_t size,
                        int cks_type, uint32_t cks_bs, depot_newalloc_t *out, depot_alloc_t **ap);
/* A new id no allocation has (id: a first guess, 0 for none). */
uint64_t store_new_id(depot_store_t *st, uint64_t id);
/* The tail of an own file past size goes (op_mu held; row: the committed row); a failure
 * is logged and leaves bytes nothing reads. */
void store_cut_own_file(depot_alloc_t *a, const depot_row_t *row, uint64_t size);

#endif
