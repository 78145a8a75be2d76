/* depot_cmd_manage.c -- MANAGE: PROBE, INCR, DECR, CHNG and TRUNCATE.
 *
 * PROBE works with any capability of the allocation; everything else needs the MANAGE one.
 * The changes themselves (and their all-or-nothing rules) live in depot_store.c; this file
 * only checks the capability kind and formats the answers.
 */
#include "depot.h"

#include "lns_log.h"
#include "lns_time.h"

int depot_cmd_manage(depot_conn_t *c, const ibp_req_t *req)
{
    depot_alloc_t *a;
    depot_row_t row;
    int kind, rc;

    rc = depot_store_lookup(c->srv->store, req->rid, req->key, req->typekey, &a, &kind);
    if (rc != IBP_OK)
        return depot_reply_err(c, rc);
    c->ev_alloc = a->r.id;
    if (req->subcmd == IBP_PROBE) {
        /* An alias's: its master's, seen through the range (as ACCRE answers). */
        uint64_t base, limit;
        if ((rc = depot_alias_resolve(&a, &base, &limit)) != IBP_OK) {
            depot_alloc_release(a);
            return depot_reply_err(c, rc);
        }
        depot_alloc_snapshot(a, &row);
        depot_alloc_release(a);
        uint64_t size = row.cur_size > base ? row.cur_size - base : 0;
        uint64_t max = row.max_size > base ? row.max_size - base : 0;
        int64_t left = row.expires - lns_now_s();
        depot_reply(c, 0, "1 %d %d %llu %llu %lld %d %d\n", row.read_refs, row.write_refs,
                    (unsigned long long)(size < limit ? size : limit),
                    (unsigned long long)(max < limit ? max : limit),
                    (long long)(left > 0 ? left : 0), row.reliability, row.type);
        return IBP_OK;
    }
    if (kind != DEPOT_MANAGE) {
        depot_alloc_release(a);
        return depot_reply_err(c, IBP_E_CAP_NOT_MANAGE);
    }
    /* An alias's MANAGE capability changes its own counts (a DECR of the read count to 0
     * revokes it); its range and expiry change through request 15 only. */
    if (a->r.master && req->subcmd != IBP_INCR && req->subcmd != IBP_DECR) {
        depot_alloc_release(a);
        return depot_reply_err(c, IBP_E_INVALID_CMD);
    }
    switch (req->subcmd) {
    case IBP_INCR: rc = depot_store_incr(a, req->captype); break;
    case IBP_DECR: rc = depot_store_decr(a, req->captype); break;
    case IBP_CHNG: rc = depot_store_change(a, req->size, req->duration, req->reliability); break;
    case IBP_TRUNCATE: rc = depot_store_truncate(a, req->size); break;
    default: rc = IBP_E_INVALID_CMD; break;
    }
    depot_alloc_release(a);
    if (rc != IBP_OK)
        return depot_reply_err(c, rc);
    lns_log(LNS_LOG_DEBUG, "%s: %016llx: MANAGE %d done", c->peer,
            (unsigned long long)c->ev_alloc, req->subcmd);
    depot_reply(c, 0, "1 \n");
    return IBP_OK;
}
