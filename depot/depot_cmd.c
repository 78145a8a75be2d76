/* depot_cmd.c -- the request dispatcher, ALLOCATE and STATUS.
 *
 * Each handler answers exactly as docs/ibp-protocol.md says and returns the IBP result for
 * the event line.  A handler never logs a whole key: allocations are named by their 16-hex
 * id only.
 */
#include "depot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lns_log.h"
#include "lns_time.h"
#include "lns_version.h"

int depot_cmd_run(depot_conn_t *c, const ibp_req_t *req)
{
    switch (req->cmd) {
    case IBP_CMD_ALLOCATE: return depot_cmd_allocate(c, req);
    case IBP_CMD_STORE:
    case IBP_CMD_WRITE: return depot_cmd_store(c, req);
    case IBP_CMD_LOAD: return depot_cmd_load(c, req);
    case IBP_CMD_SEND: return depot_cmd_send(c, req);
    case IBP_CMD_MANAGE: return depot_cmd_manage(c, req);
    case IBP_CMD_STATUS: return depot_cmd_status(c, req);
    default:
        depot_reply_err(c, IBP_E_INVALID_CMD);
        c->close = 1;
        return IBP_E_INVALID_CMD;
    }
}

static void format_cap(const depot_conn_t *c, int rid, const depot_newalloc_t *na, int k,
                       char *buf, size_t size)
{
    static const char *kinds[3] = {"READ", "WRITE", "MANAGE"};
    char key[DEPOT_KEY_HEX + 1];
    depot_key_format(na->id, na->secret[k], key);
    snprintf(buf, size, "ibp://%s:%d/%d#%s/%u/%s", c->srv->cfg->public_host, c->srv->port, rid,
             key, (unsigned)na->typekey[k], kinds[k]);
}

int depot_cmd_allocate(depot_conn_t *c, const ibp_req_t *req)
{
    depot_newalloc_t na;
    char caps[3][IBP_MAX_CAP];
    int rid = 0, rc;

    if (req->version == 1 && (rid = depot_rid_parse(c->srv->store, req->rid)) < 0)
        return depot_reply_err(c, IBP_E_INVALID_RID);
    rc = depot_store_allocate(c->srv->store, rid, req->reliability, req->type, req->duration,
                              req->size, &na);
    if (rc != IBP_OK)
        return depot_reply_err(c, rc);
    c->ev_alloc = na.id;
    for (int k = 0; k < 3; k++)
        format_cap(c, rid, &na, k, caps[k], sizeof caps[k]);
    lns_log(LNS_LOG_DEBUG, "%s: allocated %016llx on resource %d, %llu bytes", c->peer,
            (unsigned long long)na.id, rid, (unsigned long long)req->size);
    depot_reply(c, 0, "1 %s %s %s \n", caps[0], caps[1], caps[2]);
    return IBP_OK;
}

/* ---- STATUS ------------------------------------------------------------------------------- */

static int status_inquire(depot_conn_t *c, const ibp_req_t *req, int rid)
{
    depot_res_status_t s;
    depot_store_status(c->srv->store, rid, &s);
    if (req->version == 0) {
        /* LoCI's answer: no status code, MB figures, a NUL after the line; then close. */
        char buf[256];
        int n = snprintf(buf, sizeof buf, "%llu %llu %llu %llu %lld 1 4 \n",
                         (unsigned long long)(s.hard >> 20), (unsigned long long)(s.hard_used >> 20),
                         (unsigned long long)(s.soft >> 20), (unsigned long long)(s.soft_used >> 20),
                         (long long)s.max_duration);
        buf[n++] = 0;
        lns_write_full(c->fd, buf, (size_t)n, 0, depot_conn_timeout_ms(c, req->timeout),
                       INT64_MAX);
        c->close = 1;
        return IBP_OK;
    }
    depot_reply(c, 0,
                "1 VS:1.4 RID:%d RT:lns ST:%llu UT:%llu SS:%llu SU:%llu DR:%lld NA:%llu VR:%s\n",
                rid, (unsigned long long)s.hard, (unsigned long long)s.hard_used,
                (unsigned long long)s.soft, (unsigned long long)s.soft_used,
                (long long)s.max_duration, (unsigned long long)s.nallocs, LNS_VERSION);
    return IBP_OK;
}

/* CHANGE: the second line "<hard> <soft> <max_duration>" (MB and days in version 0, as LoCI
 * 1.3.1 reads them; bytes and seconds in 1)
 * follows the request line at once; it is read before the password is checked, so the
 * connection stays in step either way. */
static int status_change(depot_conn_t *c, const ibp_req_t *req, int rid)
{
    char *line, copy[256], *f[4];
    size_t len;
    uint64_t hard, soft;
    int64_t dur;
    int ms = c->srv->cfg->header_timeout * 1000;

    if (lns_rbuf_readline(&c->rb, &line, &len, sizeof copy, ms, ms, lns_deadline_ms(ms)) <= 0) {
        c->close = 1;
        return IBP_E_SOCK_READ;
    }
    if (len >= sizeof copy) {
        c->close = 1;
        return depot_reply_err(c, IBP_E_BAD_FORMAT);
    }
    memcpy(copy, line, len);
    copy[len] = 0;
    if (ibp_split_fields(copy, f, 4) != 3 || ibp_parse_u64(f[0], strlen(f[0]), &hard) < 0 ||
        ibp_parse_u64(f[1], strlen(f[1]), &soft) < 0 ||
        ibp_parse_i64(f[2], strlen(f[2]), &dur) < 0) {
        c->close = 1;
        return depot_reply_err(c, IBP_E_BAD_FORMAT);
    }
    if (!depot_password_ok(c->srv->cfg->admin_password, req->password)) {
        lns_log(LNS_LOG_WARN, "%s: STATUS CHANGE with a wrong password", c->peer);
        return depot_reply_err(c, IBP_E_WRONG_PASSWD);
    }
    if (req->version == 0) {
        if (hard > (UINT64_MAX >> 20) || soft > (UINT64_MAX >> 20))
            return depot_reply_err(c, IBP_E_INVALID_PARAMETER);
        hard <<= 20;
        soft <<= 20;
        if (dur > INT64_MAX / 86400)
            return depot_reply_err(c, IBP_E_INV_PAR_ATDR);
        dur *= 86400;
    }
    if (dur < 0)
        return depot_reply_err(c, IBP_E_INV_PAR_ATDR);
    int rc = depot_store_set_limits(c->srv->store, rid, hard, soft, dur);
    if (rc != IBP_OK)
        return depot_reply_err(c, rc);
    lns_log(LNS_LOG_INFO, "%s: resource %d limits changed (hard %llu, soft %llu, max-duration %lld)",
            c->peer, rid, (unsigned long long)hard, (unsigned long long)soft, (long long)dur);
    if (req->version == 0) {
        depot_reply(c, 0, "1 \n");
        return IBP_OK;
    }
    return status_inquire(c, req, rid);
}

int depot_cmd_status(depot_conn_t *c, const ibp_req_t *req)
{
    int rid = 0;
    if (req->version == 1 && (rid = depot_rid_parse(c->srv->store, req->rid)) < 0) {
        if (req->subcmd == IBP_ST_CHANGE)
            c->close = 1; /* its second line is still to come */
        return depot_reply_err(c, IBP_E_INVALID_RID);
    }
    if (req->subcmd == IBP_ST_CHANGE)
        return status_change(c, req, rid);
    return status_inquire(c, req, rid);
}
