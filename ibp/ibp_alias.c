/* ibp_alias.c -- alias capabilities: ACCRE IBP 1.4's ALIAS_ALLOCATE (14) and ALIAS_MANAGE (15).
 *
 * ibp_req_format knows the classic commands only, so the lines are written here, in the
 * form ACCRE's depot reads (and lns's takes):
 *   1 14 RID#mkey mtk offset length duration T
 *   1 15 RID#akey atk 40 3 T                                   PROBE
 *   1 15 RID#akey atk 41|42 captype RID#mkey mtk T             INCR / DECR
 *   1 15 RID#akey atk 43 3 offset length duration RID#mkey mtk T   CHNG
 * ACCRE's own client leaves the captype out of CHNG, which its server then reads shifted;
 * we send it.  There is no version 0 form: a depot that speaks only version 0 (LoCI 1.3),
 * or that answers -25 (no aliases), gets IBP_E_INVALID_CMD back to the caller, and the
 * version learned for that depot is not touched by the attempt.
 */
#include "ibp_client_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* One version-1 exchange of a request line on cap's depot. */
static int alias_call(ibp_client_t *c, const ibp_cap_t *cap, const char *line, int n,
                      ibp_reply_parser parse, void *out)
{
    ibp_reply_t rep;
    ibp_conn_t *conn;
    ibp_vsel_t vs;
    int rc;
    if (n < 0 || n >= IBP_MAX_LINE)
        return IBP_E_INVALID_PARAMETER;
    ibp_version_for(c, cap->host, cap->port, &vs);
    if (vs.version == 0)
        return IBP_E_INVALID_CMD;
    rc = ibp_call_begin(c, cap->host, cap->port, &vs, line, (size_t)n, IBP_CALL_KEEP_ON_ERROR,
                        -1, &conn, &rep);
    if (rc == IBP_CALL_AGAIN_V0) /* dropped unanswered, or -25/-27: no aliases there */
        return IBP_E_INVALID_CMD;
    return ibp_call_finish(c, rc, conn, &rep, parse, out);
}

/* Both capabilities parsed, as manage capabilities, and their wire keys. */
static int two_caps(const char *alias_mcap, const char *master_mcap, ibp_cap_t *a, ibp_cap_t *m,
                    char *akey, char *mkey)
{
    int rc;
    if ((rc = ibp_call_cap(alias_mcap, IBP_MANAGECAP, a)) != IBP_OK ||
        (rc = ibp_call_cap(master_mcap, IBP_MANAGECAP, m)) != IBP_OK)
        return rc;
    if (ibp_cap_wire_key(a, akey, IBP_MAX_CAP) != IBP_OK ||
        ibp_cap_wire_key(m, mkey, IBP_MAX_CAP) != IBP_OK)
        return IBP_E_WRONG_CAP_FORMAT;
    return IBP_OK;
}

int ibp_alias_allocate(ibp_client_t *c, const char *mcap, uint64_t offset, uint64_t length,
                       int64_t duration_s, ibp_caps_t *caps)
{
    char line[IBP_MAX_LINE], key[IBP_MAX_CAP];
    ibp_cap_t m;
    int rc;
    if (!c || !caps)
        return IBP_E_INV_PAR_PTR;
    if ((rc = ibp_call_cap(mcap, IBP_MANAGECAP, &m)) != IBP_OK)
        return rc;
    if (offset > INT64_MAX || length > INT64_MAX || offset + length > INT64_MAX)
        return IBP_E_INV_PAR_SIZE;
    if (duration_s < 0)
        return IBP_E_INV_PAR_ATDR;
    if (ibp_cap_wire_key(&m, key, sizeof key) != IBP_OK)
        return IBP_E_WRONG_CAP_FORMAT;
    int n = snprintf(line, sizeof line, "1 14 %s %s %" PRIu64 " %" PRIu64 " %" PRId64 " %d\n",
                     key, m.typekey, offset, length, duration_s, c->o.server_timeout_s);
    return alias_call(c, &m, line, n, ibp_reply_caps, caps);
}

/* "1 <read_refs> <write_refs> <offset> <length> <seconds_left>" */
static int parse_alias_probe(const ibp_reply_t *rep, void *arg)
{
    ibp_alias_probe_t *out = arg;
    int64_t v[5];
    if (rep->nf != 6)
        return IBP_E_BAD_FORMAT;
    for (int i = 0; i < 5; i++)
        if (ibp_parse_i64(rep->f[i + 1], strlen(rep->f[i + 1]), &v[i]) < 0)
            return IBP_E_BAD_FORMAT;
    if (v[0] < 0 || v[0] > INT32_MAX || v[1] < 0 || v[1] > INT32_MAX || v[2] < 0 || v[3] < 0)
        return IBP_E_BAD_FORMAT;
    out->read_refs = (int)v[0];
    out->write_refs = (int)v[1];
    out->offset = (uint64_t)v[2];
    out->length = (uint64_t)v[3];
    out->seconds_left = v[4];
    return IBP_OK;
}

int ibp_alias_probe(ibp_client_t *c, const char *alias_mcap, ibp_alias_probe_t *out)
{
    char line[IBP_MAX_LINE], key[IBP_MAX_CAP];
    ibp_cap_t a;
    int rc;
    if (!c || !out)
        return IBP_E_INV_PAR_PTR;
    if ((rc = ibp_call_cap(alias_mcap, IBP_MANAGECAP, &a)) != IBP_OK)
        return rc;
    if (ibp_cap_wire_key(&a, key, sizeof key) != IBP_OK)
        return IBP_E_WRONG_CAP_FORMAT;
    int n = snprintf(line, sizeof line, "1 15 %s %s %d %d %d\n", key, a.typekey, IBP_PROBE,
                     IBP_MANAGECAP, c->o.server_timeout_s);
    return alias_call(c, &a, line, n, parse_alias_probe, out);
}

static int alias_refcount(ibp_client_t *c, const char *alias_mcap, const char *master_mcap,
                          int subcmd, ibp_captype which)
{
    char line[IBP_MAX_LINE], akey[IBP_MAX_CAP], mkey[IBP_MAX_CAP];
    ibp_cap_t a, m;
    int rc;
    if (!c)
        return IBP_E_INV_PAR_PTR;
    if (which != IBP_READCAP && which != IBP_WRITECAP)
        return IBP_E_INVALID_PARAMETER;
    if ((rc = two_caps(alias_mcap, master_mcap, &a, &m, akey, mkey)) != IBP_OK)
        return rc;
    int n = snprintf(line, sizeof line, "1 15 %s %s %d %d %s %s %d\n", akey, a.typekey, subcmd,
                     (int)which, mkey, m.typekey, c->o.server_timeout_s);
    return alias_call(c, &a, line, n, ibp_reply_ack, NULL);
}

int ibp_alias_incr(ibp_client_t *c, const char *alias_mcap, const char *master_mcap,
                   ibp_captype which)
{
    return alias_refcount(c, alias_mcap, master_mcap, IBP_INCR, which);
}

int ibp_alias_decr(ibp_client_t *c, const char *alias_mcap, const char *master_mcap,
                   ibp_captype which)
{
    return alias_refcount(c, alias_mcap, master_mcap, IBP_DECR, which);
}

int ibp_alias_change(ibp_client_t *c, const char *alias_mcap, const char *master_mcap,
                     uint64_t offset, uint64_t length, int64_t duration_s)
{
    char line[IBP_MAX_LINE], akey[IBP_MAX_CAP], mkey[IBP_MAX_CAP];
    ibp_cap_t a, m;
    int rc;
    if (!c)
        return IBP_E_INV_PAR_PTR;
    if (offset > INT64_MAX || length > INT64_MAX || offset + length > INT64_MAX)
        return IBP_E_INV_PAR_SIZE;
    if ((rc = two_caps(alias_mcap, master_mcap, &a, &m, akey, mkey)) != IBP_OK)
        return rc;
    if (duration_s < 0)
        duration_s = -1;
    int n = snprintf(line, sizeof line,
                     "1 15 %s %s %d %d %" PRIu64 " %" PRIu64 " %" PRId64 " %s %s %d\n", akey,
                     a.typekey, IBP_CHNG, IBP_MANAGECAP, offset, length, duration_s, mkey,
                     m.typekey, c->o.server_timeout_s);
    return alias_call(c, &a, line, n, ibp_reply_ack, NULL);
}

/* At most this many DECRs: an alias someone INCRed more often than that is left (an error). */
#define REVOKE_MAX_DECR 64

int ibp_alias_revoke(ibp_client_t *c, const char *alias_mcap, const char *master_mcap)
{
    ibp_alias_probe_t p;
    int rc;
    for (int i = 0; i < REVOKE_MAX_DECR; i++) {
        /* lns removes at a read count of 0; ACCRE once both counts are 0 (a fresh alias has
         * read 1, write 0), and answers a DECR of a zero count without complaint */
        ibp_captype which = IBP_READCAP;
        if (i > 0) {
            if ((rc = ibp_alias_probe(c, alias_mcap, &p)) != IBP_OK)
                return rc == IBP_E_CAP_NOT_FOUND ? IBP_OK : rc;
            which = p.read_refs > 0 ? IBP_READCAP : IBP_WRITECAP;
        }
        if ((rc = ibp_alias_decr(c, alias_mcap, master_mcap, which)) != IBP_OK)
            return rc;
    }
    return IBP_E_WOULD_EXCEED_LIMIT;
}
