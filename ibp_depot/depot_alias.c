/* depot_alias.c -- alias capabilities (ACCRE IBP 1.4's requests 14 and 15).
 *
 * An alias is a row of its own (own keys, counts and expiry; no bytes) that names its
 * master's id and a byte range [off, off + len) of it (len 0: to the master's end).  Its
 * READ and WRITE capabilities reach the master's bytes inside the range only: a LOAD, SEND
 * or WRITE through it is at an offset in the range, and one that goes past the range's end
 * is refused (-19), as ACCRE does.  A STORE (append) through an alias is allowed only when
 * the alias covers the whole allocation (offset 0 and to its end).  Its MANAGE capability
 * PROBEs the master within the range, and INCR/DECRs the alias's own counts: a DECR of its
 * read count to 0 revokes the alias and leaves the master as it is.
 *
 * When the master goes (freed, expired), its aliases stay until their own expiry, answering
 * -4 to everything, as ACCRE's do; an alias is never given an expiry past its master's.
 *
 * The wire (docs/ibp-protocol.md, "Alias capabilities"):
 *   V 14 RID#mkey mtypekey offset length duration timeout          ALIAS_ALLOCATE
 *     -> "1 <read cap> <write cap> <manage cap> \n"
 *   V 15 RID#akey atypekey 41|42 captype RID#mkey mtypekey timeout  ALIAS_MANAGE INCR/DECR
 *   V 15 RID#akey atypekey 40 captype timeout                       ALIAS_MANAGE PROBE
 *     -> "1 <read count> <write count> <offset> <length> <seconds left> \n"
 *   V 15 RID#akey atypekey 43 [captype] offset length duration RID#mkey mtypekey timeout
 *                                                                   ALIAS_MANAGE CHNG
 * INCR/DECR/CHNG name the master's MANAGE capability too (-10 if it is not the master's).
 */
#include "depot.h"

#include <stdio.h>
#include <string.h>

#include "lns_log.h"
#include "lns_time.h"

#define ALIAS_MAX_FIELDS 12

/* ---- the data path ------------------------------------------------------------------------ */

/* The length of an alias's range on master row m. */
static uint64_t range_len(const depot_row_t *alias, const depot_row_t *m)
{
    if (alias->alias_len)
        return alias->alias_len;
    return m->max_size > alias->alias_off ? m->max_size - alias->alias_off : 0;
}

int depot_alias_resolve(depot_alloc_t **ap, uint64_t *base, uint64_t *limit)
{
    depot_alloc_t *a = *ap, *m;
    depot_row_t ar, mr;

    *base = 0;
    *limit = UINT64_MAX;
    if (!a->r.master) /* set once at creation: no lock needed to read it */
        return IBP_OK;
    if (!(m = depot_store_master(a)))
        return IBP_E_CAP_NOT_FOUND;
    depot_alloc_snapshot(a, &ar);
    depot_alloc_snapshot(m, &mr);
    *base = ar.alias_off;
    *limit = range_len(&ar, &mr);
    depot_alloc_release(a);
    *ap = m;
    return IBP_OK;
}

int depot_alias_write_at(depot_alloc_t **ap, uint64_t *offset, uint64_t len)
{
    uint64_t base, limit;
    depot_alloc_t *a = *ap;
    int alias = a->r.master != 0, rc;

    if (!alias)
        return IBP_OK;
    if ((rc = depot_alias_resolve(ap, &base, &limit)) != IBP_OK)
        return rc;
    if (*offset == UINT64_MAX) { /* append: only through an alias of the whole allocation */
        depot_row_t mr;
        depot_alloc_snapshot(*ap, &mr);
        return base == 0 && limit >= mr.max_size ? IBP_OK : IBP_E_WOULD_EXCEED_LIMIT;
    }
    if (*offset > limit || len > limit - *offset)
        return IBP_E_WOULD_EXCEED_LIMIT;
    *offset += base;
    return IBP_OK;
}

/* ---- requests 14 and 15 ------------------------------------------------------------------ */

int depot_alias_request(const char *line, size_t len)
{
    int cmd = depot_line_command(line, len);
    return cmd == DEPOT_CMD_ALIAS_ALLOCATE || cmd == DEPOT_CMD_ALIAS_MANAGE;
}

static int alias_allocate(depot_conn_t *c, const depot_field_t *f, int n, ibp_req_t *req)
{
    char rid[IBP_MAX_RID], key[IBP_MAX_KEY], tk[IBP_MAX_KEY], caps[3][IBP_MAX_CAP];
    int64_t off, len, dur, tmo;
    depot_newalloc_t na;
    depot_alloc_t *m;
    int kind, rc;

    if (n != 8 || depot_line_cap(&f[2], &f[3], rid, key, tk) < 0 ||
        depot_line_num(&f[7], &tmo) < 0)
        return IBP_E_BAD_FORMAT;
    if (depot_line_num(&f[4], &off) < 0 || depot_line_num(&f[5], &len) < 0 ||
        depot_line_num(&f[6], &dur) < 0 || off < 0 || len < 0)
        return IBP_E_INVALID_PARAMETER;
    req->offset = (uint64_t)off;
    req->length = (uint64_t)len;
    req->duration = dur;
    rc = depot_store_lookup(c->srv->store, rid, key, tk, &m, &kind);
    if (rc != IBP_OK)
        return rc;
    c->ev_alloc = m->r.id;
    if (kind != DEPOT_MANAGE || m->r.master)
        rc = kind != DEPOT_MANAGE ? IBP_E_CAP_NOT_MANAGE : IBP_E_INVALID_CMD;
    else
        rc = depot_store_alias_allocate(c->srv->store, m, (uint64_t)off, (uint64_t)len, dur, &na);
    int res = m->res->id;
    depot_alloc_release(m);
    if (rc != IBP_OK)
        return rc;
    for (int k = 0; k < 3; k++)
        depot_cap_format(c, res, &na, k, caps[k], sizeof caps[k]);
    lns_log(LNS_LOG_DEBUG, "%s: alias %016llx of %016llx [%lld, +%lld)", c->peer,
            (unsigned long long)na.id, (unsigned long long)c->ev_alloc, (long long)off,
            (long long)len);
    depot_reply(c, 0, "1 %s %s %s \n", caps[0], caps[1], caps[2]);
    return IBP_OK;
}

/* The master's MANAGE capability in f[0] (RID#key), f[1] (type key): IBP_OK if it is
 * alias a's master's, else -10 (or -4 if the master is gone). */
static int check_master(depot_conn_t *c, depot_alloc_t *a, const depot_field_t *f)
{
    char rid[IBP_MAX_RID], key[IBP_MAX_KEY], tk[IBP_MAX_KEY];
    depot_alloc_t *m;
    int kind, rc;
    if (depot_line_cap(&f[0], &f[1], rid, key, tk) < 0)
        return IBP_E_INVALID_MANAGE_CAP;
    if (!(m = depot_store_master(a)))
        return IBP_E_CAP_NOT_FOUND;
    depot_alloc_release(m);
    rc = depot_store_lookup(c->srv->store, rid, key, tk, &m, &kind);
    if (rc != IBP_OK)
        return IBP_E_INVALID_MANAGE_CAP;
    rc = kind == DEPOT_MANAGE && m->r.id == a->r.master ? IBP_OK : IBP_E_INVALID_MANAGE_CAP;
    depot_alloc_release(m);
    return rc;
}

static int alias_manage(depot_conn_t *c, const depot_field_t *f, int n, ibp_req_t *req)
{
    char rid[IBP_MAX_RID], key[IBP_MAX_KEY], tk[IBP_MAX_KEY];
    int64_t sub, captype = 0, off = 0, len = 0, dur = 0, tmo;
    const depot_field_t *mf = NULL;
    depot_alloc_t *a;
    int kind, rc;

    if (n < 6 || depot_line_cap(&f[2], &f[3], rid, key, tk) < 0 ||
        depot_line_num(&f[4], &sub) < 0 || depot_line_num(&f[n - 1], &tmo) < 0)
        return IBP_E_BAD_FORMAT;
    req->subcmd = (int)sub;
    switch (sub) {
    case IBP_PROBE: /* captype timeout */
        if (n != 7 || depot_line_num(&f[5], &captype) < 0)
            return IBP_E_BAD_FORMAT;
        break;
    case IBP_INCR:
    case IBP_DECR: /* captype RID#mkey mtk timeout */
        if (n != 9 || depot_line_num(&f[5], &captype) < 0)
            return IBP_E_BAD_FORMAT;
        if (captype != IBP_READCAP && captype != IBP_WRITECAP)
            return IBP_E_BAD_FORMAT;
        mf = &f[6];
        break;
    case IBP_CHNG: /* [captype] offset length duration RID#mkey mtk timeout */
        if (n != 11 && n != 12)
            return IBP_E_BAD_FORMAT;
        if (depot_line_num(&f[n - 6], &off) < 0 || depot_line_num(&f[n - 5], &len) < 0 ||
            depot_line_num(&f[n - 4], &dur) < 0 || off < 0 || len < 0)
            return IBP_E_INVALID_PARAMETER;
        mf = &f[n - 3];
        break;
    default:
        return IBP_E_INVALID_CMD;
    }
    rc = depot_store_lookup(c->srv->store, rid, key, tk, &a, &kind);
    if (rc != IBP_OK)
        return rc;
    c->ev_alloc = a->r.id;
    if (kind != DEPOT_MANAGE)
        rc = IBP_E_CAP_NOT_MANAGE;
    else if (!a->r.master)
        rc = IBP_E_INVALID_CMD; /* request 15 is for aliases; 9 manages allocations */
    else if (mf)
        rc = check_master(c, a, mf);
    if (rc == IBP_OK) {
        depot_alloc_t *m;
        depot_row_t ar;
        switch (sub) {
        case IBP_PROBE:
            if (!(m = depot_store_master(a))) {
                rc = IBP_E_CAP_NOT_FOUND;
                break;
            }
            depot_alloc_release(m);
            depot_alloc_snapshot(a, &ar);
            int64_t left = ar.expires - lns_now_s();
            depot_reply(c, 0, "1 %d %d %llu %llu %lld \n", ar.read_refs, ar.write_refs,
                        (unsigned long long)ar.alias_off, (unsigned long long)ar.alias_len,
                        (long long)(left > 0 ? left : 0));
            break;
        case IBP_INCR:
        case IBP_DECR:
            rc = depot_store_refs(a, (int)captype, sub == IBP_INCR ? 1 : -1);
            break;
        case IBP_CHNG:
            rc = depot_store_alias_change(a, (uint64_t)off, (uint64_t)len, dur);
            break;
        }
    }
    depot_alloc_release(a);
    if (rc == IBP_OK && sub != IBP_PROBE)
        depot_reply(c, 0, "1 \n");
    return rc;
}

int depot_cmd_alias(depot_conn_t *c, const char *line, size_t len, ibp_req_t *req)
{
    depot_field_t f[ALIAS_MAX_FIELDS];
    int n = depot_line_request(line, len, f, ALIAS_MAX_FIELDS, req), rc;

    if (n < 0)
        rc = IBP_E_BAD_FORMAT;
    else if (req->cmd == DEPOT_CMD_ALIAS_ALLOCATE)
        rc = alias_allocate(c, f, n, req);
    else
        rc = alias_manage(c, f, n, req);
    if (rc != IBP_OK) {
        depot_reply_err(c, rc);
        if (rc == IBP_E_BAD_FORMAT || rc == IBP_E_INVALID_CMD)
            c->close = 1;
    }
    return rc;
}
