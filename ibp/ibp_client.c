/* ibp_client.c -- the client object and the IBP calls that move no bulk data.
 *
 * Each call checks its arguments locally (capability syntax and kind, pointers, commands
 * the chosen protocol version lacks) so that a mistake costs no round trip, builds its
 * request line with ibp_req_format(), and runs one exchange through ibp_call.c.  The version
 * comes per depot from ibp_version.c: version 1 unless the depot turns out to be an old one
 * (or a program pinned it, or opts.version fixes it); each call builds its line again in
 * version 0 when the call layer says so.
 */
#include "ibp_client_int.h"

#include "lns_tls.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ibp_client_opts_init(ibp_client_opts_t *o)
{
    o->version = -1;
    o->connect_timeout_ms = 5000;
    o->io_timeout_ms = 60000;
    o->stall_ms = 0;
    o->server_timeout_s = 60;
    o->max_idle_per_depot = 8;
    o->max_idle_s = 30;
}

ibp_client_t *ibp_client_new(const ibp_client_opts_t *opts)
{
    ibp_client_opts_t d;
    ibp_client_t *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    ibp_client_opts_init(&d);
    c->o = opts ? *opts : d;
    /* Out-of-range settings fall back to the defaults rather than failing. */
    if (c->o.version < -1 || c->o.version > 1)
        c->o.version = -1;
    if (c->o.connect_timeout_ms <= 0)
        c->o.connect_timeout_ms = d.connect_timeout_ms;
    if (c->o.io_timeout_ms <= 0)
        c->o.io_timeout_ms = d.io_timeout_ms;
    if (c->o.server_timeout_s <= 0)
        c->o.server_timeout_s = d.server_timeout_s;
    c->idle_ms = c->o.stall_ms > 0 && c->o.stall_ms < c->o.io_timeout_ms ? c->o.stall_ms
                                                                        : c->o.io_timeout_ms;
    if (c->o.max_idle_per_depot < 0)
        c->o.max_idle_per_depot = 0;
    if (c->o.max_idle_s < 0)
        c->o.max_idle_s = d.max_idle_s;
    if (c->o.tls < IBP_TLS_AUTO || c->o.tls > IBP_TLS_OFF)
        c->o.tls = IBP_TLS_AUTO;
    if (c->o.tls == IBP_TLS_AUTO)
        c->o.tls = ibp_tls_mode_default();
    pthread_mutex_init(&c->tls_mu, NULL);
    c->pool = ibp_pool_new(c->o.max_idle_per_depot, c->o.max_idle_s);
    c->versions = c->o.version < 0 ? ibp_vtab_new() : NULL;
    if (!c->pool || (c->o.version < 0 && !c->versions)) {
        ibp_pool_free(c->pool);
        ibp_vtab_free(c->versions);
        pthread_mutex_destroy(&c->tls_mu);
        free(c);
        return NULL;
    }
    return c;
}

void ibp_client_free(ibp_client_t *c)
{
    if (!c)
        return;
    ibp_pool_free(c->pool);
    ibp_vtab_free(c->versions);
    lns_tls_ctx_free(c->tls);
    pthread_mutex_destroy(&c->tls_mu);
    free(c);
}

static void req_init(ibp_client_t *c, ibp_req_t *req, int cmd)
{
    memset(req, 0, sizeof *req);
    req->version = 1; /* set per depot by the call */
    req->cmd = cmd;
    req->timeout = c->o.server_timeout_s;
}

/* A resource id, password or similar text field: printable ASCII, non-empty, < size. */
static int text_ok(const char *s, size_t size)
{
    size_t n = 0;
    for (; s[n]; n++)
        if ((unsigned char)s[n] < 0x21 || (unsigned char)s[n] > 0x7e)
            return 0;
    return n > 0 && n < size;
}

static int host_ok(const char *host, int port)
{
    if (!host || !host[0] || strlen(host) >= IBP_MAX_HOST)
        return IBP_E_INV_PAR_HOST;
    if (port < 1 || port > 65535)
        return IBP_E_INV_PAR_PORT;
    return IBP_OK;
}

/* One exchange whose whole answer is a single line starting with status 1.  The reply is
 * parsed before the connection goes back to the pool: a peer whose answer we cannot read
 * may not be speaking our protocol, so its connection is not trusted again. */
static int simple_call(ibp_client_t *c, const char *host, int port, ibp_req_t *req,
                       int reply_wait_ms, ibp_reply_parser parse, void *out)
{
    char line[IBP_MAX_LINE];
    ibp_reply_t rep;
    ibp_conn_t *conn;
    ibp_vsel_t vs;
    int n, rc;
    ibp_version_for(c, host, port, &vs);
    do {
        req->version = vs.version;
        if ((n = ibp_req_format(req, line, sizeof line)) < 0)
            return req->version == 0 ? IBP_E_INVALID_CMD : IBP_E_INVALID_PARAMETER;
        rc = ibp_call_begin(c, host, port, &vs, line, (size_t)n, IBP_CALL_KEEP_ON_ERROR,
                            reply_wait_ms, &conn, &rep);
    } while (rc == IBP_CALL_AGAIN_V0);
    return ibp_call_finish(c, rc, conn, &rep, parse, out);
}

static int copy_cap(char *dst, const char *src)
{
    ibp_cap_t cap;
    size_t n = strlen(src);
    if (n >= IBP_MAX_CAP || ibp_cap_parse(src, &cap) != IBP_OK)
        return -1;
    memcpy(dst, src, n + 1);
    return (int)cap.type;
}

int ibp_reply_caps(const ibp_reply_t *rep, void *out)
{
    ibp_caps_t *caps = out;
    if (rep->nf != 4 || copy_cap(caps->read, rep->f[1]) != IBP_READCAP ||
        copy_cap(caps->write, rep->f[2]) != IBP_WRITECAP ||
        copy_cap(caps->manage, rep->f[3]) != IBP_MANAGECAP)
        return IBP_E_BAD_FORMAT;
    return IBP_OK;
}

int ibp_allocate(ibp_client_t *c, const char *host, int port, const char *rid,
                 const ibp_attr_t *attr, ibp_caps_t *caps)
{
    ibp_req_t req;
    int rc;

    if (!c || !attr || !caps)
        return IBP_E_INV_PAR_PTR;
    if ((rc = host_ok(host, port)) != IBP_OK)
        return rc;
    if (rid && rid[0] && !text_ok(rid, IBP_MAX_RID))
        return IBP_E_INVALID_RID;
    req_init(c, &req, IBP_CMD_ALLOCATE);
    snprintf(req.rid, sizeof req.rid, "%s", rid && rid[0] ? rid : "0");
    req.reliability = attr->reliability;
    req.type = attr->type;
    req.duration = attr->duration_s;
    req.size = attr->size;
    return simple_call(c, host, port, &req, -1, ibp_reply_caps, caps);
}

/* "1 <count>" */
static int parse_count(const ibp_reply_t *rep, void *out)
{
    if (rep->nf != 2 || ibp_parse_u64(rep->f[1], strlen(rep->f[1]), out) < 0)
        return IBP_E_BAD_FORMAT;
    return IBP_OK;
}

int ibp_send(ibp_client_t *c, const char *rcap, const char *dst_wcap, uint64_t offset,
             uint64_t len, uint64_t *copied)
{
    ibp_cap_t src, dst;
    ibp_req_t req;
    uint64_t n = 0;
    int64_t wait;
    int rc;

    if (copied)
        *copied = 0;
    if (!c)
        return IBP_E_INV_PAR_PTR;
    if ((rc = ibp_call_cap(rcap, IBP_READCAP, &src)) != IBP_OK)
        return rc;
    if ((rc = ibp_call_cap(dst_wcap, IBP_WRITECAP, &dst)) != IBP_OK)
        return rc;
    if (offset + len < offset)
        return IBP_E_INV_PAR_SIZE;
    req_init(c, &req, IBP_CMD_SEND);
    ibp_call_req_cap(&req, &src);
    snprintf(req.target_cap, sizeof req.target_cap, "%s", dst_wcap);
    req.offset = offset;
    req.length = len;
    req.src_timeout = c->o.server_timeout_s;
    req.dst_timeout = c->o.server_timeout_s;
    req.dst_client_timeout = c->o.server_timeout_s;
    /* To a depot that seals (an lns depot: it has a pin), the pin the target must have, so
     * the copy goes sealed to the depot we know and not to whoever answers its address
     * (docs/ibp-protocol.md, "SEND"). */
    char spin[IBP_PIN_LEN];
    if (ibp_tls_pin_of(c, src.host, src.port, spin, sizeof spin))
        ibp_tls_pin_of(c, dst.host, dst.port, req.target_pin, sizeof req.target_pin);
    /* The source depot is silent until the whole copy is done; allow for a copy at 1 MB/s
     * on top of the usual wait, so a long healthy copy is not taken for a stalled one. */
    wait = (int64_t)c->o.io_timeout_ms + (int64_t)(len / 1000);
    if (wait > INT32_MAX)
        wait = INT32_MAX;
    rc = simple_call(c, src.host, src.port, &req, (int)wait, parse_count, &n);
    if (rc != IBP_OK)
        return rc;
    if (copied)
        *copied = n;
    return n == len ? IBP_OK : IBP_E_BAD_FORMAT;
}

static int manage_call(ibp_client_t *c, const char *capstr, ibp_captype kind, int subcmd,
                       int captype, uint64_t size, int64_t duration, int reliability,
                       ibp_reply_parser parse, void *out)
{
    ibp_cap_t cap;
    ibp_req_t req;
    int rc;
    if (!c)
        return IBP_E_INV_PAR_PTR;
    if ((rc = ibp_call_cap(capstr, kind, &cap)) != IBP_OK)
        return rc;
    req_init(c, &req, IBP_CMD_MANAGE);
    ibp_call_req_cap(&req, &cap);
    req.subcmd = subcmd;
    req.captype = captype ? captype : (int)cap.type;
    req.size = size;
    req.duration = duration;
    req.reliability = reliability;
    return simple_call(c, cap.host, cap.port, &req, -1, parse, out);
}

/* "1 <read_refs> <write_refs> <cur_size> <max_size> <seconds_left> <reliability> <type>" */
static int parse_probe(const ibp_reply_t *rep, void *arg)
{
    ibp_probe_t *out = arg;
    int64_t v[7];
    if (rep->nf != 8)
        return IBP_E_BAD_FORMAT;
    for (int i = 0; i < 7; i++)
        if (ibp_parse_i64(rep->f[i + 1], strlen(rep->f[i + 1]), &v[i]) < 0)
            return IBP_E_BAD_FORMAT;
    if (v[0] < 0 || v[0] > INT32_MAX || v[1] < 0 || v[1] > INT32_MAX || v[2] < 0 || v[3] < 0 ||
        v[5] < 0 || v[5] > INT32_MAX || v[6] < 0 || v[6] > INT32_MAX)
        return IBP_E_BAD_FORMAT;
    out->read_refs = (int)v[0];
    out->write_refs = (int)v[1];
    out->cur_size = (uint64_t)v[2];
    out->max_size = (uint64_t)v[3];
    out->seconds_left = v[4];
    out->reliability = (int)v[5];
    out->type = (int)v[6];
    return IBP_OK;
}

int ibp_probe(ibp_client_t *c, const char *cap, ibp_probe_t *out)
{
    if (!out)
        return IBP_E_INV_PAR_PTR;
    return manage_call(c, cap, 0, IBP_PROBE, 0, 0, 0, 0, parse_probe, out);
}

static int refcount(ibp_client_t *c, const char *mcap, int subcmd, ibp_captype which)
{
    if (which != IBP_READCAP && which != IBP_WRITECAP)
        return IBP_E_INVALID_PARAMETER;
    return manage_call(c, mcap, IBP_MANAGECAP, subcmd, (int)which, 0, 0, 0, ibp_reply_ack, NULL);
}

int ibp_incr(ibp_client_t *c, const char *mcap, ibp_captype which)
{
    return refcount(c, mcap, IBP_INCR, which);
}

int ibp_decr(ibp_client_t *c, const char *mcap, ibp_captype which)
{
    return refcount(c, mcap, IBP_DECR, which);
}

int ibp_change(ibp_client_t *c, const char *mcap, uint64_t max_size, int64_t duration_s,
               int reliability)
{
    ibp_probe_t p;
    int rc;
    /* "Unchanged" has no spelling all depots read alike: lns takes 0, ACCRE 1.4 -1 (0 is a
     * size of 0, a duration of 0, an invalid reliability), LoCI 1.3.1 neither (0 sets the
     * size to 0; -1 and a reliability of 0 are -30).  So a field left unchanged is sent as
     * its current value, from a PROBE with the same manage capability. */
    if (max_size == 0 || duration_s == 0 || reliability == 0) {
        if ((rc = ibp_probe(c, mcap, &p)) != IBP_OK)
            return rc;
        if (max_size == 0)
            max_size = p.max_size;
        if (duration_s == 0)
            duration_s = p.seconds_left > 0 ? p.seconds_left : 1;
        if (reliability == 0)
            reliability = p.reliability;
    }
    return manage_call(c, mcap, IBP_MANAGECAP, IBP_CHNG, 0, max_size, duration_s, reliability,
                       ibp_reply_ack, NULL);
}

int ibp_truncate(ibp_client_t *c, const char *mcap, uint64_t new_size)
{
    return manage_call(c, mcap, IBP_MANAGECAP, IBP_TRUNCATE, 0, new_size, 0, 0, ibp_reply_ack, NULL);
}

/* ---- STATUS ---- */

#define MB (1024ull * 1024ull)

/* Version 1: KEY:value fields, unknown keys skipped, a closing "RE" (ACCRE) allowed.  ACCRE
 * 1.4 has one pool per resource: "ST"/"UT" for all of it and "SH"/"UH" for its hard part.  The
 * lns depot answers in ACCRE's keys too and adds "SS"/"SU", its soft capacity and use; an lns
 * depot before 0.2 said "ST"/"UT" for hard storage, "SS"/"SU" for soft, and no "SH". */
static int parse_status_fields(char **f, int nf, ibp_depot_status_t *out)
{
    int seen_st = 0, seen_sh = 0, seen_ss = 0;
    uint64_t st = 0, ut = 0, sh = 0, uh = 0;
    memset(out, 0, sizeof *out);
    out->allocations = -1;
    for (int i = 0; i < nf; i++) {
        const char *colon = strchr(f[i], ':');
        const char *v = colon ? colon + 1 : NULL;
        size_t klen = colon ? (size_t)(colon - f[i]) : 0, vlen = v ? strlen(v) : 0;
        uint64_t u;
        int64_t sv;
        if (!colon) {
            if (strcmp(f[i], "RE") == 0 && i == nf - 1)
                break;
            return IBP_E_BAD_FORMAT;
        }
#define KEY(k) (klen == sizeof(k) - 1 && memcmp(f[i], k, klen) == 0)
        if (KEY("PN")) { /* lns: the hex of the TLS pin */
            if (vlen != 64)
                return IBP_E_BAD_FORMAT;
            snprintf(out->pin, sizeof out->pin, "sha256:%s", v);
            if (!lns_tls_pin_valid(out->pin)) {
                out->pin[0] = 0;
                return IBP_E_BAD_FORMAT;
            }
        } else if (KEY("VS") || KEY("RID")) {
            char *dst = KEY("VS") ? out->version : out->rid;
            size_t size = KEY("VS") ? sizeof out->version : sizeof out->rid;
            if (vlen >= size)
                return IBP_E_BAD_FORMAT;
            memcpy(dst, v, vlen + 1);
        } else if (KEY("ST") || KEY("UT") || KEY("SS") || KEY("SU") || KEY("SH") || KEY("UH")) {
            if (ibp_parse_u64(v, vlen, &u) < 0)
                return IBP_E_BAD_FORMAT;
            if (KEY("ST")) {
                st = u;
                seen_st = 1;
            } else if (KEY("UT")) {
                ut = u;
            } else if (KEY("SS")) {
                out->soft_total = u;
                seen_ss = 1;
            } else if (KEY("SU")) {
                out->soft_used = u;
            } else if (KEY("SH")) {
                sh = u;
                seen_sh = 1;
            } else {
                uh = u;
            }
        } else if (KEY("DR") || KEY("NA")) {
            if (ibp_parse_i64(v, vlen, &sv) < 0)
                return IBP_E_BAD_FORMAT;
            if (KEY("DR"))
                out->max_duration_s = sv;
            else
                out->allocations = sv < 0 || sv > INT32_MAX ? -1 : (int)sv;
        }
#undef KEY
    }
    if (!seen_st)
        return IBP_E_BAD_FORMAT;
    if (seen_sh) {
        out->hard_total = sh;
        out->hard_used = uh;
        if (!seen_ss) { /* ACCRE: the whole pool may hold soft allocations */
            out->soft_total = st;
            out->soft_used = ut;
        }
    } else {
        out->hard_total = st;
        out->hard_used = ut;
    }
    return IBP_OK;
}

/* A version-1 status reply: lns's "1 KEY:value ..." on one line, or ACCRE's "1 <n>" followed
 * by n bytes of KEY:value fields.  The connection is pooled when all was read and made
 * sense, else closed. */
static int finish_status_v1(ibp_client_t *c, ibp_conn_t *conn, ibp_reply_t *rep,
                            ibp_depot_status_t *out)
{
    uint64_t n;
    int rc;
    if (rep->nf == 2 && ibp_parse_u64(rep->f[1], strlen(rep->f[1]), &n) == 0) {
        char *f[64];
        int nf;
        if (n >= sizeof rep->line ||
            lns_rbuf_read(&conn->rb, rep->line, (size_t)n, c->idle_ms, INT64_MAX) < 0) {
            ibp_conn_close(conn);
            return n >= sizeof rep->line ? IBP_E_BAD_FORMAT : ibp_sock_err(errno, 0);
        }
        rep->line[n] = 0;
        nf = memchr(rep->line, 0, (size_t)n) ? -1 : ibp_split_fields(rep->line, f, 64);
        rc = nf < 0 ? IBP_E_BAD_FORMAT : parse_status_fields(f, nf, out);
    } else {
        rc = parse_status_fields(rep->f + 1, rep->nf - 1, out);
    }
    if (rc == IBP_OK)
        ibp_call_end(c, conn);
    else
        ibp_conn_close(conn);
    return rc;
}

/* Version 0: "<hard_MB> <hard_used_MB> <soft_MB> <soft_used_MB> <max_duration> [version]",
 * the version as "major minor" or, from LoCI 1.3.1, "1.3.1"; or a lone negative error code. */
static int parse_status_v0(const ibp_reply_t *rep, ibp_depot_status_t *out)
{
    int64_t v[5];
    if (rep->nf >= 1 && rep->nf < 5 && ibp_parse_i64(rep->f[0], strlen(rep->f[0]), &v[0]) == 0 &&
        v[0] < 0 && v[0] > -1000)
        return (int)v[0];
    if (rep->nf < 5)
        return IBP_E_BAD_FORMAT;
    for (int i = 0; i < 5; i++)
        if (ibp_parse_i64(rep->f[i], strlen(rep->f[i]), &v[i]) < 0 || (i < 4 && v[i] < 0) ||
            (i < 4 && (uint64_t)v[i] > UINT64_MAX / MB))
            return IBP_E_BAD_FORMAT;
    memset(out, 0, sizeof *out);
    out->hard_total = (uint64_t)v[0] * MB;
    out->hard_used = (uint64_t)v[1] * MB;
    out->soft_total = (uint64_t)v[2] * MB;
    out->soft_used = (uint64_t)v[3] * MB;
    out->max_duration_s = v[4];
    out->allocations = -1;
    if (rep->nf >= 7)
        snprintf(out->version, sizeof out->version, "%.15s.%.15s", rep->f[5], rep->f[6]);
    else if (rep->nf == 6)
        snprintf(out->version, sizeof out->version, "%.31s", rep->f[5]);
    snprintf(out->rid, sizeof out->rid, "0");
    return IBP_OK;
}

/* Build the STATUS request line in version v; its length or an IBP error. */
static int status_request(ibp_client_t *c, int v, int subcmd, const char *rid,
                          const char *password, char *line, size_t size)
{
    ibp_req_t req;
    int n;
    if (rid && rid[0] && !text_ok(rid, IBP_MAX_RID))
        return IBP_E_INVALID_RID;
    if (password && !text_ok(password, IBP_MAX_PASSWORD))
        return IBP_E_INVALID_PARAMETER;
    req_init(c, &req, IBP_CMD_STATUS);
    req.version = v;
    req.subcmd = subcmd;
    snprintf(req.rid, sizeof req.rid, "%s", rid && rid[0] ? rid : "0");
    /* INQUIRE needs no password on lns and LoCI (ACCRE wants it), but the field must be there. */
    snprintf(req.password, sizeof req.password, "%s", password ? password : "x");
    n = ibp_req_format(&req, line, size);
    return n < 0 ? IBP_E_INVALID_PARAMETER : n;
}

int ibp_status(ibp_client_t *c, const char *host, int port, const char *rid, const char *password,
               ibp_depot_status_t *out)
{
    char line[IBP_MAX_LINE];
    ibp_reply_t rep;
    ibp_conn_t *conn;
    ibp_vsel_t vs;
    int n, rc;

    if (!c || !out)
        return IBP_E_INV_PAR_PTR;
    if ((rc = host_ok(host, port)) != IBP_OK)
        return rc;
    ibp_version_for(c, host, port, &vs);
    do {
        if ((n = status_request(c, vs.version, IBP_ST_INQ, rid, password, line, sizeof line)) < 0)
            return n;
        /* Version 0 has no status field: a line (ACCRE, which keeps the connection) or bytes
         * up to a NUL (LoCI, which closes it). */
        rc = ibp_call_begin(c, host, port, &vs, line, (size_t)n,
                            vs.version == 0 ? IBP_CALL_UNTIL_NUL : IBP_CALL_KEEP_ON_ERROR, -1,
                            &conn, &rep);
    } while (rc == IBP_CALL_AGAIN_V0);
    if (rc != IBP_OK)
        return rc;
    if (vs.version == 0) {
        ibp_conn_close(conn);
        return parse_status_v0(&rep, out);
    }
    return finish_status_v1(c, conn, &rep, out);
}

static uint64_t bytes_to_mb_up(uint64_t b)
{
    return b / MB + (b % MB != 0);
}

int ibp_status_change(ibp_client_t *c, const char *host, int port, const char *rid,
                      const char *password, uint64_t hard_total, uint64_t soft_total,
                      int64_t max_duration_s, ibp_depot_status_t *out)
{
    char line[IBP_MAX_LINE];
    ibp_reply_t rep;
    ibp_conn_t *conn;
    ibp_vsel_t vs;
    int n, m, rc;

    if (!c)
        return IBP_E_INV_PAR_PTR;
    if ((rc = host_ok(host, port)) != IBP_OK)
        return rc;
    if (!password)
        return IBP_E_INVALID_PARAMETER;
    if (max_duration_s < 0)
        return IBP_E_INV_PAR_ATDR;
    /* LoCI 1.3.1 takes a 0 as 0 (a soft capacity of 0 bytes), so a field left unchanged is
     * sent as the depot's current value. */
    if (hard_total == 0 || soft_total == 0 || max_duration_s == 0) {
        ibp_depot_status_t cur;
        if ((rc = ibp_status(c, host, port, rid, password, &cur)) != IBP_OK)
            return rc;
        if (hard_total == 0)
            hard_total = cur.hard_total;
        if (soft_total == 0)
            soft_total = cur.soft_total;
        if (max_duration_s == 0)
            max_duration_s = cur.max_duration_s;
    }
    ibp_version_for(c, host, port, &vs);
    do {
        n = status_request(c, vs.version, IBP_ST_CHANGE, rid, password, line, sizeof line);
        if (n < 0)
            return n;
        /* The values line goes right behind the request line; version 0 counts in MB and
         * days (LoCI 1.3.1), rounded up so a limit is never lowered by the rounding. */
        if (vs.version == 0)
            m = snprintf(line + n, sizeof line - (size_t)n,
                         "%" PRIu64 " %" PRIu64 " %" PRId64 "\n", bytes_to_mb_up(hard_total),
                         bytes_to_mb_up(soft_total),
                         max_duration_s / 86400 + (max_duration_s % 86400 != 0));
        else
            m = snprintf(line + n, sizeof line - (size_t)n,
                         "%" PRIu64 " %" PRIu64 " %" PRId64 "\n", hard_total, soft_total,
                         max_duration_s);
        if (m < 0 || (size_t)m >= sizeof line - (size_t)n)
            return IBP_E_INVALID_PARAMETER;
        rc = ibp_call_begin(c, host, port, &vs, line, (size_t)(n + m), IBP_CALL_LINE, -1, &conn,
                            &rep);
    } while (rc == IBP_CALL_AGAIN_V0);
    if (rc != IBP_OK)
        return rc;
    if (vs.version == 1 && rep.nf > 1)
        return finish_status_v1(c, conn, &rep, out ? out : &(ibp_depot_status_t){0});
    /* version 0 and ACCRE answer "1 \n"; the figures need an INQUIRE */
    if (ibp_reply_ack(&rep, NULL) != IBP_OK) {
        ibp_conn_close(conn);
        return IBP_E_BAD_FORMAT;
    }
    ibp_call_end(c, conn);
    return out ? ibp_status(c, host, port, rid, NULL, out) : IBP_OK;
}
