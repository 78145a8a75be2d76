/* ibp_proto.c -- the IBP request line: a strict parser and its mirror-image formatter.
 *
 * The parser is the first thing every byte from the network meets, so it checks before it
 * uses: the whole line is printable ASCII and spaces, the field count is exact for the
 * command, every number is plain decimal that fits 64 bits, and every text field fits its
 * buffer.  Errors are the IBP codes the depot answers with; the order of the checks
 * (version, command, field count, then field by field) fixes which code a line that is
 * wrong in several ways gets.  docs/ibp-protocol.md, "Parsing rules", is the specification.
 */
#include "ibp_proto.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lns_tls.h"

#define MAX_FIELDS 16

typedef ibp_field_t field_t;

int ibp_parse_i64(const char *s, size_t len, int64_t *out)
{
    size_t i = 0;
    int neg = 0;
    uint64_t v = 0;

    if (len > 0 && s[0] == '-') {
        neg = 1;
        i = 1;
    }
    if (i == len || len - i > 19)
        return -1;
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    /* 19 digits never overflow uint64_t; the sign decides the limit. */
    if (!neg && v > (uint64_t)INT64_MAX)
        return -1;
    if (neg && v > (uint64_t)INT64_MAX + 1)
        return -1;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 0;
}

int ibp_parse_u64(const char *s, size_t len, uint64_t *out)
{
    int64_t v;
    if (len > 0 && s[0] == '-')
        return -1;
    if (ibp_parse_i64(s, len, &v) < 0)
        return -1;
    *out = (uint64_t)v;
    return 0;
}

int ibp_split_fields(char *line, char **fields, int max)
{
    int n = 0;
    char *p = line;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
            p++;
        if (!*p)
            return n;
        if (n == max)
            return -1;
        fields[n++] = p;
        while (*p && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n')
            p++;
        if (*p)
            *p++ = 0;
    }
}

/* More than max fields: the first max are filled, so a vector request's command can still be
 * read. */
int ibp_req_split(const char *line, size_t len, ibp_field_t *f, int max)
{
    int n = 0;
    size_t i = 0;
    while (i < len) {
        while (i < len && line[i] == ' ')
            i++;
        if (i == len)
            break;
        if (n == max)
            return max + 1;
        f[n].p = line + i;
        while (i < len && line[i] != ' ')
            i++;
        f[n].n = (size_t)(line + i - f[n].p);
        n++;
    }
    return n;
}

/* Parse a numeric field, or fail the whole request with BAD_FORMAT. */
#define NUM(fld, var)                                                                        \
    do {                                                                                     \
        if (ibp_parse_i64((fld).p, (fld).n, &(var)) < 0)                                     \
            return IBP_E_BAD_FORMAT;                                                         \
    } while (0)

static int copy_text(const field_t *f, char *dst, size_t size)
{
    if (f->n == 0 || f->n >= size)
        return IBP_E_BAD_FORMAT;
    memcpy(dst, f->p, f->n);
    dst[f->n] = 0;
    return IBP_OK;
}

/* "<rid>#<key>" or "<key>". */
static int parse_key(const field_t *f, ibp_req_t *req)
{
    const char *hash = memchr(f->p, '#', f->n);
    if (hash) {
        field_t rid = {f->p, (size_t)(hash - f->p)};
        field_t key = {hash + 1, f->n - rid.n - 1};
        if (memchr(key.p, '#', key.n))
            return IBP_E_BAD_FORMAT;
        if (copy_text(&rid, req->rid, sizeof req->rid) != IBP_OK)
            return IBP_E_BAD_FORMAT;
        return copy_text(&key, req->key, sizeof req->key);
    }
    req->rid[0] = 0;
    return copy_text(f, req->key, sizeof req->key);
}

static int clamp_timeout(int64_t v)
{
    if (v < 0)
        return 0;
    if (v > INT_MAX)
        return INT_MAX;
    return (int)v;
}

static int check_reliability(int64_t v, int allow_zero)
{
    if (v == IBP_SOFT || v == IBP_HARD || (allow_zero && v == 0))
        return IBP_OK;
    return IBP_E_INV_PAR_ATRL;
}

/* The byte span of a LOAD, WRITE or SEND: a negative offset, or a span past INT64_MAX, is
 * refused with the code the depots have always given. */
static int set_span(ibp_req_t *req, int64_t off, int64_t len)
{
    if (off < 0)
        return IBP_E_INVALID_PARAMETER;
    if (len < 0 || (uint64_t)off + (uint64_t)len > (uint64_t)INT64_MAX)
        return IBP_E_INV_PAR_SIZE;
    req->offset = (uint64_t)off;
    req->length = (uint64_t)len;
    return IBP_OK;
}

/* ALLOCATE and STATUS: nf0 fields in version 0, one more (the resource id, after the command)
 * in version 1; *i moves past the resource id. */
static int head_fields(const field_t *f, int nf, ibp_req_t *req, int nf0, int *i)
{
    if (nf != (req->version == 0 ? nf0 : nf0 + 1))
        return IBP_E_BAD_FORMAT;
    if (req->version == 1 && copy_text(&f[(*i)++], req->rid, sizeof req->rid) != IBP_OK)
        return IBP_E_BAD_FORMAT;
    return IBP_OK;
}

static int parse_allocate(const field_t *f, int nf, ibp_req_t *req)
{
    int i = 2;
    int64_t rel, type, dur, size, t;

    if (head_fields(f, nf, req, 7, &i) != IBP_OK)
        return IBP_E_BAD_FORMAT;
    NUM(f[i], rel);
    NUM(f[i + 1], type);
    NUM(f[i + 2], dur);
    NUM(f[i + 3], size);
    NUM(f[i + 4], t);
    if (check_reliability(rel, 0) != IBP_OK)
        return IBP_E_INV_PAR_ATRL;
    if (type >= IBP_BUFFER && type <= IBP_CIRQ)
        return IBP_E_TYPE_NOT_SUPPORTED;
    if (type != IBP_BYTEARRAY)
        return IBP_E_INV_PAR_ATTP;
    if (dur < 1 && dur != -1)
        return IBP_E_INV_PAR_ATDR;
    if (size < 1)
        return IBP_E_INV_PAR_SIZE;
    req->reliability = (int)rel;
    req->type = (int)type;
    req->duration = dur;
    req->size = (uint64_t)size;
    req->timeout = clamp_timeout(t);
    return IBP_OK;
}

/* STORE (no offset) and WRITE / LOAD (offset). */
static int parse_data(const field_t *f, int nf, ibp_req_t *req, int has_offset)
{
    int64_t off = 0, len, t;
    int rc;

    if (nf != (has_offset ? 7 : 6))
        return IBP_E_BAD_FORMAT;
    if (parse_key(&f[2], req) != IBP_OK ||
        copy_text(&f[3], req->typekey, sizeof req->typekey) != IBP_OK)
        return IBP_E_BAD_FORMAT;
    if (has_offset)
        NUM(f[4], off);
    NUM(f[nf - 2], len);
    NUM(f[nf - 1], t);
    if ((rc = set_span(req, off, len)) != IBP_OK)
        return rc;
    req->timeout = clamp_timeout(t);
    return IBP_OK;
}

/* The n "<offset> <length>" pairs at text[0..len) and the timeout after them: each range
 * inside INT64_MAX, the total too.  Fills v (if not NULL), *total, *end (the furthest byte
 * any range reaches) and *t.  IBP_OK or the error to answer. */
static int scan_vec(const char *text, size_t len, int n, ibp_vec_t *v, uint64_t *total,
                    uint64_t *end, int64_t *t)
{
    field_t f[2];
    size_t i = 0;
    *total = 0;
    *end = 0;
    for (int k = 0; k <= n; k++) {
        int want = k < n ? 2 : 1;
        for (int j = 0; j < want; j++) {
            while (i < len && text[i] == ' ')
                i++;
            if (i == len)
                return IBP_E_BAD_FORMAT;
            f[j].p = text + i;
            while (i < len && text[i] != ' ')
                i++;
            f[j].n = (size_t)(text + i - f[j].p);
        }
        if (k == n) {
            NUM(f[0], *t);
            break;
        }
        int64_t off, l;
        NUM(f[0], off);
        NUM(f[1], l);
        if (off < 0)
            return IBP_E_INVALID_PARAMETER;
        if (l < 0 || (uint64_t)off + (uint64_t)l > (uint64_t)INT64_MAX ||
            *total + (uint64_t)l > (uint64_t)INT64_MAX)
            return IBP_E_INV_PAR_SIZE;
        if (v)
            v[k] = (ibp_vec_t){(uint64_t)off, (uint64_t)l};
        *total += (uint64_t)l;
        if ((uint64_t)off + (uint64_t)l > *end)
            *end = (uint64_t)off + (uint64_t)l;
    }
    while (i < len && text[i] == ' ')
        i++;
    return i == len ? IBP_OK : IBP_E_BAD_FORMAT;
}

/* "1 33|35 <key> <typekey> <n> <off> <len> ... <timeout>" (ACCRE 1.4; version 1 only).
 * line[0..len): the whole line; f: its first fields. */
static int parse_vec(const char *line, size_t len, const field_t *f, int nf, ibp_req_t *req)
{
    int64_t n, t;
    uint64_t total, end;
    int rc;

    if (req->version == 0)
        return IBP_E_INVALID_CMD;
    if (nf < 6)
        return IBP_E_BAD_FORMAT;
    if (parse_key(&f[2], req) != IBP_OK ||
        copy_text(&f[3], req->typekey, sizeof req->typekey) != IBP_OK)
        return IBP_E_BAD_FORMAT;
    NUM(f[4], n);
    if (n < 1 || n > IBP_MAX_VEC)
        return IBP_E_INVALID_PARAMETER;
    const char *rest = f[4].p + f[4].n;
    size_t rlen = len - (size_t)(rest - line);
    if ((rc = scan_vec(rest, rlen, (int)n, NULL, &total, &end, &t)) != IBP_OK)
        return rc;
    req->nvec = (int)n;
    req->vec = rest;
    req->vec_len = rlen;
    req->length = total;
    req->offset = end;
    req->timeout = clamp_timeout(t);
    return IBP_OK;
}

int ibp_req_vec(const ibp_req_t *req, ibp_vec_t *v)
{
    uint64_t total, end;
    int64_t t;
    return scan_vec(req->vec, req->vec_len, req->nvec, v, &total, &end, &t);
}

static int is_cap(const field_t *f)
{
    return f->n > 6 && memcmp(f->p, "ibp://", 6) == 0;
}

static int parse_send(const field_t *f, int nf, ibp_req_t *req)
{
    int64_t off, len, t1, t2, t3;
    const field_t *tk, *target;
    int rc;

    /* lns names the pin the target must have as an 11th field (only to a depot with a pin of
     * its own: older depots know ten) */
    if (nf != 10 && (nf != 11 || req->version != 1))
        return IBP_E_BAD_FORMAT;
    if (nf == 11) {
        if (f[10].n >= sizeof req->target_pin)
            return IBP_E_BAD_FORMAT;
        memcpy(req->target_pin, f[10].p, f[10].n);
        req->target_pin[f[10].n] = 0;
        if (!lns_tls_pin_valid(req->target_pin))
            return IBP_E_BAD_FORMAT;
    }
    /* Version 0 and ACCRE 1.4 put the target capability before the type key ("1 5 <path>
     * <key> <cap> <typekey> ...", the path empty: two spaces); lns before 0.2 sent version 1
     * with the type key first.  A type key is a number, a capability starts "ibp://", so
     * the two orders cannot be mistaken for each other. */
    if (req->version == 1 && is_cap(&f[4]) && !is_cap(&f[3])) {
        tk = &f[3];
        target = &f[4];
    } else {
        tk = &f[4];
        target = &f[3];
    }
    if (parse_key(&f[2], req) != IBP_OK ||
        copy_text(tk, req->typekey, sizeof req->typekey) != IBP_OK ||
        copy_text(target, req->target_cap, sizeof req->target_cap) != IBP_OK)
        return IBP_E_BAD_FORMAT;
    NUM(f[5], off);
    NUM(f[6], len);
    NUM(f[7], t1);
    NUM(f[8], t2);
    NUM(f[9], t3);
    if ((rc = set_span(req, off, len)) != IBP_OK)
        return rc;
    req->timeout = req->src_timeout = clamp_timeout(t1);
    req->dst_timeout = clamp_timeout(t2);
    req->dst_client_timeout = clamp_timeout(t3);
    return IBP_OK;
}

static int parse_manage(const field_t *f, int nf, ibp_req_t *req)
{
    int64_t sub, captype, size, dur, rel, t;

    if (nf < 5)
        return IBP_E_BAD_FORMAT;
    NUM(f[4], sub);
    switch (sub) {
    case IBP_PROBE:
    case IBP_INCR:
    case IBP_DECR:
    case IBP_CHNG:
        break;
    case IBP_TRUNCATE:
        if (req->version == 1)
            break;
        return IBP_E_INVALID_CMD;
    default:
        return IBP_E_INVALID_CMD;
    }
    req->subcmd = (int)sub;
    if (parse_key(&f[2], req) != IBP_OK ||
        copy_text(&f[3], req->typekey, sizeof req->typekey) != IBP_OK)
        return IBP_E_BAD_FORMAT;

    if (sub == IBP_INCR || sub == IBP_DECR) {
        if (nf != 7)
            return IBP_E_BAD_FORMAT;
        NUM(f[5], captype);
        NUM(f[6], t);
        if (captype != IBP_READCAP && captype != IBP_WRITECAP)
            return IBP_E_INVALID_PARAMETER;
        req->captype = (int)captype;
    } else if (sub == IBP_TRUNCATE) {
        if (nf != 7)
            return IBP_E_BAD_FORMAT;
        NUM(f[5], size);
        NUM(f[6], t);
        if (size < 0)
            return IBP_E_INV_PAR_SIZE;
        req->size = (uint64_t)size;
    } else {
        if (nf != 10)
            return IBP_E_BAD_FORMAT;
        NUM(f[5], captype);
        NUM(f[6], size);
        NUM(f[7], dur);
        NUM(f[8], rel);
        NUM(f[9], t);
        req->captype = (int)(captype < INT_MIN ? INT_MIN : captype > INT_MAX ? INT_MAX : captype);
        if (sub == IBP_CHNG) {
            /* Version 1 (ACCRE 1.4): -1 leaves a field unchanged, as 0 does. */
            if (req->version == 1) {
                if (size == -1)
                    size = 0;
                if (rel == -1)
                    rel = 0;
                if (dur == -1)
                    dur = 0;
                else if (dur == IBP_DUR_MAX)
                    dur = -1;
            }
            if (size < 0)
                return IBP_E_INV_PAR_SIZE;
            if (dur < -1)
                return IBP_E_INV_PAR_ATDR;
            if (check_reliability(rel, 1) != IBP_OK)
                return IBP_E_INV_PAR_ATRL;
            req->size = (uint64_t)size;
            req->duration = dur;
            req->reliability = (int)rel;
        }
    }
    req->timeout = clamp_timeout(t);
    return IBP_OK;
}

static int parse_status(const field_t *f, int nf, ibp_req_t *req)
{
    int i = 2;
    int64_t sub, t;

    if (nf == 4 && req->version == 1) {
        /* ACCRE: "1 4 3 T" (resource list), "1 4 5 T" (version) */
        NUM(f[2], sub);
        if (sub != IBP_ST_RES && sub != IBP_ST_VERSION)
            return IBP_E_BAD_FORMAT;
        NUM(f[3], t);
        req->subcmd = (int)sub;
        req->timeout = clamp_timeout(t);
        return IBP_OK;
    }
    if (nf == 4 && req->version == 0) {
        /* LoCI 1.3.1's default password is "ibp\n": the line ends after the password and
         * the timeout comes on a line of its own. */
        NUM(f[2], sub);
        if (sub != IBP_ST_INQ && sub != IBP_ST_CHANGE)
            return IBP_E_INVALID_CMD;
        req->subcmd = (int)sub;
        req->timeout_next_line = 1;
        return copy_text(&f[3], req->password, sizeof req->password);
    }
    if (head_fields(f, nf, req, 5, &i) != IBP_OK)
        return IBP_E_BAD_FORMAT;
    NUM(f[i], sub);
    if (sub != IBP_ST_INQ && sub != IBP_ST_CHANGE)
        return IBP_E_INVALID_CMD;
    req->subcmd = (int)sub;
    if (copy_text(&f[i + 1], req->password, sizeof req->password) != IBP_OK)
        return IBP_E_BAD_FORMAT;
    NUM(f[i + 2], t);
    req->timeout = clamp_timeout(t);
    return IBP_OK;
}

int ibp_req_parse(const char *line, size_t len, ibp_req_t *req)
{
    field_t f[MAX_FIELDS];
    int64_t cmd;
    int nf;

    memset(req, 0, sizeof *req);
    req->version = -1;
    req->cmd = -1;

    if (len > 0 && line[len - 1] == '\r')
        len--;
    if (len >= IBP_MAX_REQ_LINE)
        return IBP_E_BAD_FORMAT;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)line[i];
        if (c != ' ' && (c < 0x21 || c > 0x7e))
            return IBP_E_BAD_FORMAT;
    }
    nf = ibp_req_split(line, len, f, MAX_FIELDS);
    if (nf == 0)
        return IBP_E_BAD_FORMAT;
    if (f[0].n != 1 || (f[0].p[0] != '0' && f[0].p[0] != '1'))
        return IBP_E_PROT_VERS;
    req->version = f[0].p[0] - '0';
    if (nf < 2)
        return IBP_E_BAD_FORMAT;
    if (ibp_parse_i64(f[1].p, f[1].n, &cmd) < 0)
        return IBP_E_BAD_FORMAT;
    if (cmd < 0 || cmd > INT_MAX)
        return IBP_E_INVALID_CMD;
    req->cmd = (int)cmd;

    switch (cmd) {
    case IBP_CMD_ALLOCATE:
        return parse_allocate(f, nf, req);
    case IBP_CMD_STORE:
        return parse_data(f, nf, req, 0);
    case IBP_CMD_WRITE:
        if (req->version == 0)
            return IBP_E_INVALID_CMD;
        return parse_data(f, nf, req, 1);
    case IBP_CMD_LOAD:
        return parse_data(f, nf, req, 1);
    case IBP_CMD_SEND:
        return parse_send(f, nf, req);
    case IBP_CMD_MANAGE:
        return parse_manage(f, nf, req);
    case IBP_CMD_STATUS:
        return parse_status(f, nf, req);
    case IBP_CMD_VEC_WRITE:
    case IBP_CMD_VEC_READ:
        return parse_vec(line, len, f, nf, req);
    default:
        return IBP_E_INVALID_CMD;
    }
}

/* ---- formatting ---------------------------------------------------------------------- */

typedef struct out {
    char *buf;
    size_t size;
    size_t n;
    int bad;
} out_t;

static void put(out_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(out_t *o, const char *fmt, ...)
{
    va_list ap;
    int k;
    if (o->bad)
        return;
    va_start(ap, fmt);
    k = vsnprintf(o->buf + o->n, o->size - o->n, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= o->size - o->n)
        o->bad = 1;
    else
        o->n += (size_t)k;
}

/* A text field must be non-empty printable ASCII, or the line would not parse back. */
static int text_ok(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if ((unsigned char)*s < 0x21 || (unsigned char)*s > 0x7e)
            return 0;
    return 1;
}

static void put_key(out_t *o, const ibp_req_t *r)
{
    if (!text_ok(r->key) || !text_ok(r->typekey) || (r->rid[0] && !text_ok(r->rid))) {
        o->bad = 1;
        return;
    }
    if (r->rid[0])
        put(o, " %s#%s %s", r->rid, r->key, r->typekey);
    else
        put(o, " %s %s", r->key, r->typekey);
}

int ibp_req_format(const ibp_req_t *r, char *buf, size_t size)
{
    out_t o = {buf, size, 0, 0};
    const char *rid = r->rid[0] ? r->rid : "0";

    if (size == 0 || (r->version != 0 && r->version != 1))
        return -1;
    put(&o, "%d %d", r->version, r->cmd);
    switch (r->cmd) {
    case IBP_CMD_ALLOCATE:
        if (r->version == 1) {
            if (!text_ok(rid))
                return -1;
            put(&o, " %s", rid);
        }
        put(&o, " %d %d %" PRId64 " %" PRIu64, r->reliability, r->type, r->duration, r->size);
        break;
    case IBP_CMD_STORE:
        put_key(&o, r);
        put(&o, " %" PRIu64, r->length);
        break;
    case IBP_CMD_WRITE:
        if (r->version == 0)
            return -1;
        /* fall through */
    case IBP_CMD_LOAD:
        put_key(&o, r);
        put(&o, " %" PRIu64 " %" PRIu64, r->offset, r->length);
        break;
    case IBP_CMD_VEC_READ:
        if (r->version == 0 || r->nvec < 1 || r->nvec > IBP_MAX_VEC || !r->ranges)
            return -1;
        put_key(&o, r);
        put(&o, " %d", r->nvec);
        for (int i = 0; i < r->nvec; i++)
            put(&o, " %" PRIu64 " %" PRIu64, r->ranges[i].off, r->ranges[i].len);
        break;
    case IBP_CMD_SEND:
        if (!text_ok(r->target_cap) || !text_ok(r->key) || !text_ok(r->typekey))
            return -1;
        /* version 1: an empty path first (ACCRE's order; docs/ibp-protocol.md) */
        put(&o, "%s %s%s%s %s %s", r->version == 1 ? " " : "", r->rid, r->rid[0] ? "#" : "",
            r->key, r->target_cap, r->typekey);
        put(&o, " %" PRIu64 " %" PRIu64 " %d %d %d", r->offset, r->length, r->src_timeout,
            r->dst_timeout, r->dst_client_timeout);
        /* the target's pin is lns's, on version 1 only (a version-0 SEND has ten fields) */
        if (r->target_pin[0] && r->version == 1) {
            if (!lns_tls_pin_valid(r->target_pin))
                return -1;
            put(&o, " %s", r->target_pin);
        }
        put(&o, "\n");
        return o.bad ? -1 : (int)o.n;
    case IBP_CMD_MANAGE:
        put_key(&o, r);
        if (r->subcmd == IBP_INCR || r->subcmd == IBP_DECR)
            put(&o, " %d %d", r->subcmd, r->captype);
        else if (r->subcmd == IBP_TRUNCATE && r->version == 1)
            put(&o, " %d %" PRIu64, r->subcmd, r->size);
        else if (r->subcmd == IBP_PROBE || r->subcmd == IBP_CHNG)
            /* the depot's maximum: -1 in version 0, IBP_DUR_MAX in 1 (where -1 is ACCRE's
             * "unchanged") */
            put(&o, " %d %d %" PRIu64 " %" PRId64 " %d", r->subcmd, r->captype, r->size,
                r->version == 1 && r->subcmd == IBP_CHNG && r->duration == -1 ? IBP_DUR_MAX
                                                                               : r->duration,
                r->reliability);
        else
            return -1;
        break;
    case IBP_CMD_STATUS: {
        if (r->version == 1 && (r->subcmd == IBP_ST_RES || r->subcmd == IBP_ST_VERSION)) {
            put(&o, " %d", r->subcmd); /* ACCRE's short form: no resource, no password */
            break;
        }
        const char *pw = r->password[0] ? r->password : "x";
        if (!text_ok(pw) || !text_ok(rid))
            return -1;
        if (r->version == 1)
            put(&o, " %s", rid);
        put(&o, " %d %s", r->subcmd, pw);
        break;
    }
    default:
        return -1;
    }
    put(&o, " %d\n", r->timeout);
    return o.bad ? -1 : (int)o.n;
}
