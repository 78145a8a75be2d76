/* depot_cmd_accre.c -- ACCRE IBP 1.4's RENAME (16), SPLIT (18), MERGE (19), PUSH (20) and
 * PULL (21): their request lines, checks and answers.
 *
 * The wire, as ACCRE's client sends it (src/ibp/op_cmd.c) and its server reads it
 * (src/ibp-server/parse_commands.c); docs/ibp-protocol.md:
 *   V 16 RID#mkey mtypekey timeout                                    RENAME
 *     -> "1 <read cap> <write cap> <manage cap> \n" (new keys, same allocation)
 *   V 18 RID#mkey mtypekey reliability type duration size timeout     SPLIT
 *     -> the new allocation's three capabilities, as ALLOCATE
 *   V 19 RID#mkey mtypekey RID#ckey ctypekey timeout                  MERGE -> "1 \n"
 *   V 20 ctype [path] RID#key cap typekey off remote_off len timeout dst_timeout dst_client_timeout
 *   V 21 (the same fields)                                            PUSH, PULL
 *     -> "1 <len> \n"
 * ctype 1 is TCP (its path field is empty: two spaces), 2 Phoebus (a path follows; refused
 * here, -22, as an ACCRE depot built without Phoebus refuses it).  PUSH's key is a READ
 * capability's and cap the remote WRITE capability (remote_off -1: append, else write
 * there); PULL's key is a WRITE capability's (off -1: append, else write there) and cap the
 * remote READ capability (remote_off: where to read; -1 reads from 0).  RENAME, SPLIT and
 * MERGE need MANAGE capabilities.  The store changes are in depot_store.c, the copies in
 * depot_cmd_data.c (SEND's clients).  Their checksummed forms, SPLIT_ALLOCATE_CHKSUM (30),
 * PUSH_CHKSUM (22) and PULL_CHKSUM (23), come here from depot_chksum.c as the plain line.
 */
#include "depot.h"

#include <stdio.h>
#include <string.h>

#include "lns_log.h"

#define ACCRE_MAX_FIELDS 16

int depot_accre_request(const char *line, size_t len)
{
    int cmd = depot_line_command(line, len);
    return cmd == DEPOT_CMD_RENAME || cmd == DEPOT_CMD_SPLIT || cmd == DEPOT_CMD_MERGE ||
           cmd == DEPOT_CMD_PUSH || cmd == DEPOT_CMD_PULL;
}

/* The allocation a MANAGE capability in f[0] (RID#key), f[1] (type key) names, with a
 * reference.  IBP_OK, -4, -7 (another kind), -21 (malformed). */
static int manage_cap(depot_conn_t *c, const depot_field_t *f, depot_alloc_t **ap)
{
    char rid[IBP_MAX_RID], key[IBP_MAX_KEY], tk[IBP_MAX_KEY];
    int kind, rc;
    if (depot_line_cap(&f[0], &f[1], rid, key, tk) < 0)
        return IBP_E_BAD_FORMAT;
    rc = depot_store_lookup(c->srv->store, rid, key, tk, ap, &kind);
    if (rc == IBP_OK && kind != DEPOT_MANAGE) {
        depot_alloc_release(*ap);
        rc = IBP_E_CAP_NOT_MANAGE;
    }
    return rc;
}

static void reply_caps(depot_conn_t *c, int res, const depot_newalloc_t *na)
{
    char caps[3][IBP_MAX_CAP];
    for (int k = 0; k < 3; k++)
        depot_cap_format(c, res, na, k, caps[k], sizeof caps[k]);
    depot_reply(c, 0, "1 %s %s %s \n", caps[0], caps[1], caps[2]);
}

static int cmd_rename(depot_conn_t *c, const depot_field_t *f, int n)
{
    depot_newalloc_t na;
    depot_alloc_t *a;
    int64_t tmo;
    int rc;

    if (n != 5 || depot_line_num(&f[4], &tmo) < 0)
        return IBP_E_BAD_FORMAT;
    if ((rc = manage_cap(c, &f[2], &a)) != IBP_OK)
        return rc;
    c->ev_alloc = a->r.id;
    int res = a->res->id;
    rc = depot_store_rename(a, &na);
    depot_alloc_release(a);
    if (rc != IBP_OK)
        return rc;
    lns_log(LNS_LOG_DEBUG, "%s: %016llx renamed", c->peer, (unsigned long long)na.id);
    reply_caps(c, res, &na);
    return IBP_OK;
}

static int cmd_split(depot_conn_t *c, const depot_field_t *f, int n, int cks_type,
                     uint32_t cks_bs)
{
    int64_t rel, type, dur, size, tmo;
    depot_newalloc_t na;
    depot_alloc_t *m;
    int rc;

    if (n != 9 || depot_line_num(&f[4], &rel) < 0 || depot_line_num(&f[5], &type) < 0 ||
        depot_line_num(&f[6], &dur) < 0 || depot_line_num(&f[7], &size) < 0 ||
        depot_line_num(&f[8], &tmo) < 0)
        return IBP_E_BAD_FORMAT;
    if (size <= 0)
        return IBP_E_INV_PAR_SIZE;
    if (rel != IBP_SOFT && rel != IBP_HARD)
        return IBP_E_INV_PAR_ATRL;
    if ((rc = manage_cap(c, &f[2], &m)) != IBP_OK)
        return rc;
    c->ev_alloc = m->r.id;
    int res = m->res->id;
    rc = depot_store_split(m, (int)rel, type == IBP_BYTEARRAY ? IBP_BYTEARRAY : -1, dur,
                           (uint64_t)size, cks_type, cks_bs, &na);
    depot_alloc_release(m);
    if (rc != IBP_OK)
        return rc;
    lns_log(LNS_LOG_DEBUG, "%s: %016llx split from %016llx, %lld bytes", c->peer,
            (unsigned long long)na.id, (unsigned long long)c->ev_alloc, (long long)size);
    reply_caps(c, res, &na);
    return IBP_OK;
}

static int cmd_merge(depot_conn_t *c, const depot_field_t *f, int n)
{
    depot_alloc_t *m, *ch;
    int64_t tmo;
    int rc;

    if (n != 7 || depot_line_num(&f[6], &tmo) < 0)
        return IBP_E_BAD_FORMAT;
    if ((rc = manage_cap(c, &f[2], &m)) != IBP_OK)
        return rc;
    c->ev_alloc = m->r.id;
    if ((rc = manage_cap(c, &f[4], &ch)) == IBP_OK) {
        rc = depot_store_merge(m, ch);
        if (rc == IBP_OK)
            lns_log(LNS_LOG_DEBUG, "%s: %016llx merged into %016llx", c->peer,
                    (unsigned long long)ch->r.id, (unsigned long long)m->r.id);
        depot_alloc_release(ch);
    }
    depot_alloc_release(m);
    if (rc != IBP_OK)
        return rc;
    depot_reply(c, 0, "1 \n");
    return IBP_OK;
}

/* A field that must be a number >= lo into *v (IBP_E_BAD_FORMAT if it is not a number). */
static int num_at_least(const depot_field_t *f, int64_t lo, int64_t *v, int err)
{
    if (depot_line_num(f, v) < 0)
        return IBP_E_BAD_FORMAT;
    return *v < lo ? err : IBP_OK;
}

/* The fields of a PUSH or PULL into req (as a SEND's) and *roff. */
static int parse_copy(int cmd, const depot_field_t *f, int n, ibp_req_t *req, int64_t *roff)
{
    int64_t ctype, off, len, t, dt, dct;
    int rc;

    if (n < 3 || depot_line_num(&f[2], &ctype) < 0)
        return IBP_E_BAD_FORMAT;
    if (ctype != 1) /* TCP only: no Phoebus gateway */
        return IBP_E_TYPE_NOT_SUPPORTED;
    if (n != 12 || depot_line_cap(&f[3], &f[5], req->rid, req->key, req->typekey) < 0 ||
        f[4].n >= sizeof req->target_cap)
        return IBP_E_BAD_FORMAT;
    memcpy(req->target_cap, f[4].p, f[4].n);
    req->target_cap[f[4].n] = '\0';
    if ((rc = num_at_least(&f[6], INT64_MIN, &off, 0)) != IBP_OK ||
        (rc = num_at_least(&f[7], INT64_MIN, roff, 0)) != IBP_OK ||
        (rc = num_at_least(&f[8], 1, &len, IBP_E_INV_PAR_SIZE)) != IBP_OK ||
        (rc = num_at_least(&f[9], INT64_MIN, &t, 0)) != IBP_OK ||
        (rc = num_at_least(&f[10], 1, &dt, IBP_E_INVALID_PARAMETER)) != IBP_OK ||
        (rc = num_at_least(&f[11], 1, &dct, IBP_E_INVALID_PARAMETER)) != IBP_OK)
        return rc;
    req->length = (uint64_t)len;
    req->timeout = t < 0 ? 0 : t > INT32_MAX ? INT32_MAX : (int)t;
    req->dst_timeout = dt > INT32_MAX ? INT32_MAX : (int)dt;
    req->dst_client_timeout = dct > INT32_MAX ? INT32_MAX : (int)dct;
    if (cmd == DEPOT_CMD_PUSH && off < 0)
        return IBP_E_INVALID_PARAMETER;
    req->offset = off < 0 ? UINT64_MAX : (uint64_t)off; /* PULL: -1 appends */
    return IBP_OK;
}

static int cmd_copy(depot_conn_t *c, int cmd, const depot_field_t *f, int n, ibp_req_t *req)
{
    int64_t roff = 0;
    int rc = parse_copy(cmd, f, n, req, &roff);
    if (rc != IBP_OK) {
        depot_reply_err(c, rc);
        if (rc == IBP_E_BAD_FORMAT)
            c->close = 1;
        return rc;
    }
    if (cmd == DEPOT_CMD_PUSH)
        return depot_cmd_push(c, req, roff < 0 ? -1 : roff);
    return depot_cmd_pull(c, req, roff < 0 ? 0 : (uint64_t)roff);
}

int depot_cmd_accre(depot_conn_t *c, const char *line, size_t len, ibp_req_t *req)
{
    return depot_cmd_accre_cks(c, line, len, req, 0, 0);
}

int depot_cmd_accre_cks(depot_conn_t *c, const char *line, size_t len, ibp_req_t *req,
                        int cks_type, uint32_t cks_bs)
{
    depot_field_t f[ACCRE_MAX_FIELDS];
    int n = depot_line_request(line, len, f, ACCRE_MAX_FIELDS, req), rc;

    if (n < 0)
        rc = IBP_E_BAD_FORMAT;
    else if (req->cmd == DEPOT_CMD_RENAME)
        rc = cmd_rename(c, f, n);
    else if (req->cmd == DEPOT_CMD_SPLIT)
        rc = cmd_split(c, f, n, cks_type, cks_bs);
    else if (req->cmd == DEPOT_CMD_MERGE)
        rc = cmd_merge(c, f, n);
    else
        return cmd_copy(c, req->cmd, f, n, req); /* answers itself, errors included */
    if (rc != IBP_OK) {
        depot_reply_err(c, rc);
        if (rc == IBP_E_BAD_FORMAT)
            c->close = 1;
    }
    return rc;
}
