/* depot_cmd.c -- the request dispatcher, ALLOCATE and STATUS.
 *
 * Each handler answers exactly as docs/ibp-protocol.md says and returns the IBP result for
 * the event line.  A handler never logs a whole key: allocations are named by their 16-hex
 * id only.
 */
#include "depot.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lns_log.h"
#include "lns_time.h"
#include "lns_tls.h"
#include "lns_version.h"

int depot_cmd_run(depot_conn_t *c, const ibp_req_t *req)
{
    switch (req->cmd) {
    case IBP_CMD_ALLOCATE: return depot_cmd_allocate(c, req);
    case IBP_CMD_STORE:
    case IBP_CMD_WRITE: return depot_cmd_store(c, req);
    case IBP_CMD_LOAD: return depot_cmd_load(c, req);
    case IBP_CMD_VEC_WRITE: return depot_cmd_store(c, req);
    case IBP_CMD_VEC_READ: return depot_cmd_vec_read(c, req);
    case IBP_CMD_SEND: return depot_cmd_send(c, req);
    case IBP_CMD_MANAGE: return depot_cmd_manage(c, req);
    case IBP_CMD_STATUS: return depot_cmd_status(c, req);
    default:
        depot_reply_err(c, IBP_E_INVALID_CMD);
        c->close = 1;
        return IBP_E_INVALID_CMD;
    }
}

void depot_cap_format(const depot_conn_t *c, int rid, const depot_newalloc_t *na, int k,
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
    return depot_cmd_allocate_cks(c, req, 0, 0);
}

int depot_cmd_allocate_cks(depot_conn_t *c, const ibp_req_t *req, int cks_type, uint32_t cks_bs)
{
    depot_newalloc_t na;
    char caps[3][IBP_MAX_CAP];
    int rid = 0, rc;

    if (req->version == 1 && (rid = depot_rid_parse(c->srv->store, req->rid)) < 0)
        return depot_reply_err(c, IBP_E_INVALID_RID);
    rc = depot_store_allocate_cks(c->srv->store, rid, req->reliability, req->type,
                                  req->duration, req->size, cks_type, cks_bs, &na);
    if (rc != IBP_OK)
        return depot_reply_err(c, rc);
    c->ev_alloc = na.id;
    for (int k = 0; k < 3; k++)
        depot_cap_format(c, rid, &na, k, caps[k], sizeof caps[k]);
    lns_log(LNS_LOG_DEBUG, "%s: allocated %016llx on resource %d, %llu bytes", c->peer,
            (unsigned long long)na.id, rid, (unsigned long long)req->size);
    depot_reply(c, 0, "1 %s %s %s \n", caps[0], caps[1], caps[2]);
    return IBP_OK;
}

/* ---- STATUS ------------------------------------------------------------------------------- */

/* Version 0's answer to INQUIRE and CHANGE: no status code, MB figures, a NUL after the line
 * (as LoCI 1.3.1 sends it); then close. */
static int status_line_v0(depot_conn_t *c, const ibp_req_t *req, int rid)
{
    depot_res_status_t s;
    char buf[256];
    depot_store_status(c->srv->store, rid, &s);
    int n = snprintf(buf, sizeof buf, "%llu %llu %llu %llu %lld 1 4 \n",
                     (unsigned long long)(s.hard >> 20), (unsigned long long)(s.hard_used >> 20),
                     (unsigned long long)(s.soft >> 20), (unsigned long long)(s.soft_used >> 20),
                     (long long)s.max_duration);
    buf[n++] = 0;
    lns_write_full(c->fd, buf, (size_t)n, 0, depot_conn_timeout_ms(c, req->timeout), INT64_MAX);
    c->close = 1;
    return IBP_OK;
}

/* Version 1, as ACCRE 1.4 answers: "1 <n> \n", then n bytes of KEY:value fields ending in
 * "RE \n".  CT/ST are the whole capacity, UT what is allocated, SH/CH and UH the hard part,
 * AT/AH what can still be allocated; SS, SU, NA and VR are ours (soft capacity and use, the
 * allocation count, the lns version, and PN the hex of the TLS pin when TLS is on), before RE
 * so that a reader stopping there sees them. */
static int status_inquire(depot_conn_t *c, const ibp_req_t *req, int rid)
{
    depot_res_status_t s;
    char body[512];
    if (req->version == 0)
        return status_line_v0(c, req, rid);
    depot_store_status(c->srv->store, rid, &s);
    uint64_t total = s.hard + s.soft, used = s.hard_used + s.soft_used;
    uint64_t free_all = total > used ? total - used : 0;
    uint64_t free_hard = s.hard > s.hard_used ? s.hard - s.hard_used : 0;
    char pn[80] = "";
    if (c->srv->tls_id) /* the pin's hex, without "sha256:" (old parsers split on ':') */
        snprintf(pn, sizeof pn, "PN:%s ", lns_tls_id_pin(c->srv->tls_id) + 7);
    int n = snprintf(body, sizeof body,
                     "VS:1.4:1.0 DT:1 RID:%d RT:1 CT:%llu ST:%llu UT:%llu UH:%llu SH:%llu CH:%llu "
                     "AT:%llu AH:%llu DR:%lld SS:%llu SU:%llu NA:%llu VR:%s %sRE \n",
                     rid, (unsigned long long)total, (unsigned long long)total,
                     (unsigned long long)used, (unsigned long long)s.hard_used,
                     (unsigned long long)s.hard, (unsigned long long)s.hard,
                     (unsigned long long)free_all, (unsigned long long)free_hard,
                     (long long)s.max_duration, (unsigned long long)s.soft,
                     (unsigned long long)s.soft_used, (unsigned long long)s.nallocs, LNS_VERSION,
                     pn);
    depot_reply(c, 0, "1 %d \n%s", n, body);
    return IBP_OK;
}

/* ACCRE's "1 4 5 T": "1\n", lines of text, "END\n"; no password. */
static int status_version(depot_conn_t *c)
{
    const depot_store_t *st = c->srv->store;
    depot_reply(c, 0, "1\nlns ibp_depot %s\nInterfaces(1): %s:%d; \nTotal resources: %d\nEND\n",
                LNS_VERSION, c->srv->cfg->public_host, c->srv->port, st->nres);
    return IBP_OK;
}

/* ACCRE's "1 4 3 T": "1 <rid> <rid>... \n". */
static int status_resources(depot_conn_t *c)
{
    char buf[DEPOT_MAX_RESOURCES * 4 + 8];
    size_t n = (size_t)snprintf(buf, sizeof buf, "1 ");
    for (int i = 0; i < c->srv->store->nres; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%d ", i);
    depot_reply(c, 0, "%s\n", buf);
    return IBP_OK;
}

/* Read the next line (the header timeout bounds it) into buf as a string.  0, or -1 with
 * the connection marked for closing and, for a bad line, -21 answered. */
static int read_line(depot_conn_t *c, char *buf, size_t size)
{
    char *line;
    size_t len;
    int ms = c->srv->cfg->header_timeout * 1000;

    c->close = 1; /* until the line is read, the conversation may be out of step */
    if (lns_rbuf_readline(&c->rb, &line, &len, size, ms, ms, lns_deadline_ms(ms)) <= 0) {
        if (errno == EMSGSIZE)
            depot_reply_err(c, IBP_E_BAD_FORMAT);
        return -1;
    }
    c->close = 0;
    if (len > 0 && line[len - 1] == '\r')
        len--;
    memcpy(buf, line, len);
    buf[len] = 0;
    return 0;
}

/* CHANGE's values line: "<hard> <soft> <max_duration>".  IBP_OK or IBP_E_BAD_FORMAT. */
static int change_values(const char *line, uint64_t *hard, uint64_t *soft, int64_t *dur)
{
    char copy[256], *f[4];
    snprintf(copy, sizeof copy, "%s", line);
    if (ibp_split_fields(copy, f, 4) != 3 || ibp_parse_u64(f[0], strlen(f[0]), hard) < 0 ||
        ibp_parse_u64(f[1], strlen(f[1]), soft) < 0 || ibp_parse_i64(f[2], strlen(f[2]), dur) < 0)
        return IBP_E_BAD_FORMAT;
    return IBP_OK;
}

static int apply_change(depot_conn_t *c, int rid, uint64_t hard, uint64_t soft, int64_t dur)
{
    if (dur < 0)
        return IBP_E_INV_PAR_ATDR;
    int rc = depot_store_set_limits(c->srv->store, rid, hard, soft, dur);
    if (rc == IBP_OK)
        lns_log(LNS_LOG_INFO, "%s: resource %d limits changed (hard %llu, soft %llu, "
                "max-duration %lld)", c->peer, rid, (unsigned long long)hard,
                (unsigned long long)soft, (long long)dur);
    return rc;
}

/* Version 1 CHANGE: the values line follows the request line at once (the client does not
 * wait); it is read before the password is checked, so the connection stays in step either
 * way.  Bytes; the answer is INQUIRE's. */
static int status_change_v1(depot_conn_t *c, const ibp_req_t *req, int rid)
{
    char line[256];
    uint64_t hard, soft;
    int64_t dur;
    int rc;

    if (read_line(c, line, sizeof line) < 0)
        return IBP_E_SOCK_READ;
    if (change_values(line, &hard, &soft, &dur) != IBP_OK) {
        c->close = 1;
        return depot_reply_err(c, IBP_E_BAD_FORMAT);
    }
    if (!depot_password_ok(c->srv->cfg->admin_password, req->password)) {
        lns_log(LNS_LOG_WARN, "%s: STATUS CHANGE with a wrong password", c->peer);
        return depot_reply_err(c, IBP_E_WRONG_PASSWD);
    }
    if ((rc = apply_change(c, rid, hard, soft, dur)) != IBP_OK)
        return depot_reply_err(c, rc);
    return status_inquire(c, req, rid);
}

/* Version 0 CHANGE, as LoCI 1.3.1 does it: the password is checked first; then "1 \n" asks
 * for the values line "<hard_MB> <soft_MB> <max_duration_days>", and the answer is INQUIRE's
 * (or an error code line); then the depot closes.  A client that sent the values right
 * behind the request line reads "1 \n" and then that answer. */
static int status_change_v0(depot_conn_t *c, const ibp_req_t *req)
{
    char line[256];
    uint64_t hard, soft;
    int64_t days;
    int rc;

    c->close = 1;
    if (!depot_password_ok(c->srv->cfg->admin_password, req->password)) {
        lns_log(LNS_LOG_WARN, "%s: STATUS CHANGE with a wrong password", c->peer);
        return depot_reply_err(c, IBP_E_WRONG_PASSWD);
    }
    if (depot_reply(c, 0, "1 \n") < 0 || read_line(c, line, sizeof line) < 0)
        return IBP_E_SOCK_READ;
    c->close = 1;
    if ((rc = change_values(line, &hard, &soft, &days)) != IBP_OK)
        return depot_reply_err(c, rc);
    if (hard > (UINT64_MAX >> 20) || soft > (UINT64_MAX >> 20))
        return depot_reply_err(c, IBP_E_INVALID_PARAMETER);
    if (days > DEPOT_MAX_DURATION_LIMIT / 86400 + 1)
        return depot_reply_err(c, IBP_E_INV_PAR_ATDR);
    if ((rc = apply_change(c, 0, hard << 20, soft << 20, days * 86400)) != IBP_OK)
        return depot_reply_err(c, rc);
    return status_line_v0(c, req, 0);
}

int depot_cmd_status(depot_conn_t *c, const ibp_req_t *req)
{
    int rid = 0;
    if (req->timeout_next_line) {
        /* LoCI 1.3.1's "ibp\n" password: the timeout is the next line */
        char line[64], *f[2];
        int64_t t;
        ibp_req_t r = *req;
        if (read_line(c, line, sizeof line) < 0)
            return IBP_E_SOCK_READ;
        if (ibp_split_fields(line, f, 2) != 1 || ibp_parse_i64(f[0], strlen(f[0]), &t) < 0) {
            c->close = 1;
            return depot_reply_err(c, IBP_E_BAD_FORMAT);
        }
        r.timeout = t < 0 ? 0 : t > INT_MAX ? INT_MAX : (int)t;
        r.timeout_next_line = 0;
        return depot_cmd_status(c, &r);
    }
    if (req->subcmd == IBP_ST_VERSION)
        return status_version(c);
    if (req->subcmd == IBP_ST_RES)
        return status_resources(c);
    if (req->version == 0)
        return req->subcmd == IBP_ST_CHANGE ? status_change_v0(c, req) : status_inquire(c, req, 0);
    if ((rid = depot_rid_parse(c->srv->store, req->rid)) < 0) {
        if (req->subcmd == IBP_ST_CHANGE)
            c->close = 1; /* its second line is still to come */
        return depot_reply_err(c, IBP_E_INVALID_RID);
    }
    if (req->subcmd == IBP_ST_CHANGE)
        return status_change_v1(c, req, rid);
    return status_inquire(c, req, rid);
}
