/* tool_lbone.c -- the LoRS tools and the L-Bone: depots near a place with room enough, and
 * throughput reports after a transfer.
 *
 * The query asks each depot for what it must hold: the tools spread the copies of the
 * fragments round-robin over the depots, so with D depots one holds ceil(fragments x copies
 * / D) fragments at most.  Reports measure each depot from the transfer's own events (its
 * bytes over the time from its first chunk's start to its last chunk's end), so they cost
 * no extra traffic; they are sent once, after the transfer, with short timeouts, and a
 * report that fails never fails the tool.
 */
#include "tool_lbone.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbone.h"
#include "lns_time.h"

#define LORS_LBONE_DEFAULT_COUNT 6 /* LoRS's -m default */

void tool_lbone_servers_free(char **servers, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(servers[i]);
    free(servers);
}

/* name, with ":port" added when it has neither a port nor a scheme and port is set. */
static char *with_port(const char *name, int port)
{
    size_t len = strlen(name) + 8;
    char *s = malloc(len);
    if (!s)
        return NULL;
    if (port > 0 && !strstr(name, "://") && !strchr(name, ':'))
        snprintf(s, len, "%s:%d", name, port);
    else
        snprintf(s, len, "%s", name);
    return s;
}

int tool_lbone_servers(const tool_lbone_opts_t *lb, const tool_rc_t *rc, char ***out, size_t *n)
{
    size_t want = lb->server ? 1 : rc->nlbone;
    *out = NULL;
    *n = 0;
    if (!want)
        return 0;
    char **v = calloc(want, sizeof *v);
    if (!v)
        return -1;
    for (size_t i = 0; i < want; i++) {
        if (!(v[i] = with_port(lb->server ? lb->server : rc->lbone_servers[i], lb->port))) {
            tool_lbone_servers_free(v, i);
            return -1;
        }
    }
    *out = v;
    *n = want;
    return 0;
}

static int from_lbone(const char *tool, const tool_rc_t *rc, const tool_lbone_opts_t *lb,
                      const tool_lbone_need_t *need, int copies, int verbose,
                      lors_depot_t **out, size_t *n)
{
    char **servers;
    size_t nservers;
    lbone_request_t req;
    lbone_result_t res;
    char err[1600];

    if (tool_lbone_servers(lb, rc, &servers, &nservers) < 0) {
        tool_error(tool, "out of memory");
        return TOOL_EXIT_INTERNAL;
    }
    if (!nservers) {
        tool_error(tool, "no L-Bone to ask: give -H/--lbone, or LBONE_SERVER in the rc "
                             "file");
        return TOOL_EXIT_USAGE;
    }
    lbone_request_init(&req);
    req.count = lb->count > 0 ? lb->count : rc->maxdepots > 0 ? rc->maxdepots
                                                              : LORS_LBONE_DEFAULT_COUNT;
    if (req.count < copies && lb->count <= 0)
        req.count = copies;
    req.location = lb->location ? lb->location : rc->location;
    /* Each depot holds its round-robin share of the pieces, at least one. */
    int64_t units = need->units > 0 ? need->units : 1, bytes_each = 0;
    int64_t share = units / req.count + (units % req.count != 0);
    if (need->unit > 0 && __builtin_mul_overflow(need->unit, share, &bytes_each))
        bytes_each = INT64_MAX; /* saturated: no depot has that room, the query says so */
    if (need->reliability == IBP_SOFT)
        req.soft = (uint64_t)bytes_each;
    else
        req.hard = (uint64_t)bytes_each;
    req.duration = need->duration_s > 0 ? need->duration_s : 0;
    int rc_q = lbone_query_depots((const char *const *)servers, nservers, &req, &res, err,
                                  sizeof err);
    tool_lbone_servers_free(servers, nservers);
    if (rc_q != LBONE_OK) {
        tool_error(tool, "L-Bone: %s", err);
        lbone_result_free(&res);
        return rc_q == LBONE_E_REFUSED || rc_q == LBONE_E_ARG ? TOOL_EXIT_USAGE
             : rc_q == LBONE_E_NOMEM                          ? TOOL_EXIT_INTERNAL
                                                              : TOOL_EXIT_DEPOTS;
    }
    if (!res.n) {
        tool_error(tool, "L-Bone %s: no depot up with %lld bytes of %s storage free for %s",
                       res.server, (long long)bytes_each,
                       need->reliability == IBP_SOFT ? "soft" : "hard",
                       need->duration_s > 0 ? "the duration asked" : "any duration");
        lbone_result_free(&res);
        return TOOL_EXIT_DEPOTS;
    }
    lors_depot_t *d = calloc(res.n, sizeof *d);
    if (!d) {
        lbone_result_free(&res);
        tool_error(tool, "out of memory");
        return TOOL_EXIT_INTERNAL;
    }
    size_t k = 0;
    for (size_t i = 0; i < res.n; i++) {
        const lbone_depot_info_t *in = &res.depots[i];
        char spec[512];
        /* Through the tools' own parser: the L-Bone's answer is input like any other, its
         * pin as the depot registered it written as in a depot list */
        snprintf(spec, sizeof spec, strchr(in->host, ':') ? "[%s]:%d%s%s%s%s" : "%s:%d%s%s%s%s",
                 in->host, in->port, in->rid[0] ? "/" : "", in->rid, in->pin[0] ? "#" : "",
                 in->pin);
        if (lors_depot_parse(spec, &d[k]) != LORS_OK) {
            tool_error(tool, "L-Bone %s: depot '%s' is not usable; skipped", res.server, spec);
            continue;
        }
        /* where it is, for placement: its place, else its cell of 0.1 degree (some 10 km) */
        if (in->place[0])
            snprintf(d[k].place, sizeof d[k].place, "%.*s", (int)sizeof d[k].place - 1,
                     in->place);
        else if (!isnan(in->lat) && !isnan(in->lon))
            snprintf(d[k].place, sizeof d[k].place, "%.1f,%.1f", in->lat, in->lon);
        k++;
    }
    if (verbose && k) {
        fprintf(stderr, "%s: L-Bone %s: %zu depot%s", tool, res.server, k, k == 1 ? "" : "s");
        if (res.resolved)
            fprintf(stderr, " near %s", res.place);
        fprintf(stderr, ":");
        for (size_t i = 0; i < res.n; i++) {
            fprintf(stderr, " %s:%d", res.depots[i].host, res.depots[i].port);
            if (!isnan(res.depots[i].distance_km))
                fprintf(stderr, " (%.0f km)", res.depots[i].distance_km);
        }
        fputc('\n', stderr);
    }
    lbone_result_free(&res);
    if (!k) {
        free(d);
        return TOOL_EXIT_DEPOTS;
    }
    lors_depot_pins_use(d, k); /* the first connection is sealed and checked too */
    *out = d;
    *n = k;
    return TOOL_EXIT_OK;
}

int tool_lbone_in_use(const char *list, const tool_rc_t *rc, const tool_lbone_opts_t *lb)
{
    return !list && (lb->asked || (!rc->depots && rc->nlbone));
}

int tool_lbone_depots(const char *tool, const char *list, const tool_rc_t *rc,
                      const tool_lbone_opts_t *lb, const tool_lbone_need_t *need, int copies,
                      int verbose, lors_depot_t **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (tool_lbone_in_use(list, rc, lb))
        return from_lbone(tool, rc, lb, need, copies, verbose, out, n);
    return tool_depots(tool, list, rc, out, n);
}

size_t tool_lbone_cap(const tool_lbone_opts_t *lb, const tool_rc_t *rc, size_t n)
{
    int maxd = lb->count > 0 ? lb->count : rc->maxdepots > 0 ? rc->maxdepots : 0;
    return maxd > 0 && (size_t)maxd < n ? (size_t)maxd : n;
}

int tool_upload_depots(const char *tool, const char *list, const tool_rc_t *rc,
                       const tool_lbone_opts_t *lb, int64_t length, int verbose,
                       lors_upload_opts_t *o, lors_depot_t **owned)
{
    tool_lbone_need_t need = {o->blocksize, 1, o->reliability, o->duration_s};
    int spread = o->ec_k ? o->ec_k + o->ec_m : o->copies; /* distinct depots wanted */
    size_t n = 0;
    if (length >= 0 && o->ec_k) {
        /* each of the K+M columns holds a K-th of the file, in -F allocations */
        need.unit = (length / o->ec_k + o->fragments) / o->fragments + o->ec_piece;
        need.units = (int64_t)o->fragments * spread;
    } else if (length >= 0) {
        /* transforms may grow the data a little: AES tags, zlib on incompressible bytes */
        int64_t stored = o->e2e && *o->e2e ? length + length / 512 + 65536 : length;
        need.unit = (stored + o->fragments - 1) / o->fragments;
        need.units = (int64_t)o->fragments * o->copies;
    }
    int code = tool_lbone_depots(tool, list, rc, lb, &need, spread, verbose, owned, &n);
    if (code)
        return code;
    o->depots = *owned;
    o->ndepots = tool_lbone_cap(lb, rc, n);
    return TOOL_EXIT_OK;
}

int tool_lbone_unusable(const char *tool, const tool_rc_t *rc, const tool_lbone_opts_t *lb,
                        lors_depot_t **out, size_t *n)
{
    char **servers = NULL, err[512];
    size_t nservers = 0;
    lbone_request_t req;
    lbone_result_t res;
    memset(&res, 0, sizeof res);
    *out = NULL;
    *n = 0;
    if (tool_lbone_servers(lb, rc, &servers, &nservers) < 0)
        return TOOL_EXIT_INTERNAL;
    lbone_request_init(&req);
    req.count = 10000; /* the server's most */
    req.any_status = 1;
    int rc_q = nservers ? lbone_query_depots((const char *const *)servers, nservers, &req, &res,
                                             err, sizeof err)
                        : LBONE_E_ARG;
    tool_lbone_servers_free(servers, nservers);
    if (rc_q != LBONE_OK) {
        tool_error(tool, "warning: L-Bone: %s; depots it calls down or leaving are not known "
                   "this pass", nservers ? err : "none to ask");
        lbone_result_free(&res);
        return TOOL_EXIT_DEPOTS;
    }
    lors_depot_t *d = calloc(res.n ? res.n : 1, sizeof *d);
    if (!d) {
        lbone_result_free(&res);
        return TOOL_EXIT_INTERNAL;
    }
    size_t k = 0;
    for (size_t i = 0; i < res.n; i++) {
        const lbone_depot_info_t *in = &res.depots[i];
        char spec[512];
        if (strcmp(in->status, "down") != 0 && strcmp(in->status, "unreachable") != 0 &&
            strcmp(in->status, "leaving") != 0)
            continue;
        snprintf(spec, sizeof spec, strchr(in->host, ':') ? "[%s]:%d" : "%s:%d", in->host,
                 in->port);
        if (lors_depot_parse(spec, &d[k]) == LORS_OK)
            k++;
    }
    lbone_result_free(&res);
    *out = d;
    *n = k;
    return TOOL_EXIT_OK;
}

/* -H/--lbone (--lbone alone in lors_download: where reports go), -P, -l and -m: on the
 * command line they ask the L-Bone. */
int tool_lbone_opt(void *s, const tool_opt_t *o, const char *name, const char *val,
                   tool_from from, char *err, size_t errlen)
{
    tool_lbone_opts_t *lb = (tool_lbone_opts_t *)((char *)s + o->off);
    if (o->letter == 'P' || o->letter == 'm') {
        tool_opt_t as_int = *o;
        as_int.type = TOOL_OPT_INT;
        as_int.off = o->letter == 'P' ? offsetof(tool_lbone_opts_t, port)
                                      : offsetof(tool_lbone_opts_t, count);
        if (tool_opt_set(lb, &as_int, name, val, from, err, errlen) < 0)
            return -1;
        lb->asked |= o->letter == 'P';
        return 0;
    }
    if (o->letter == 'l')
        lb->location = val;
    else
        lb->server = val;
    lb->asked = 1;
    return 0;
}

/* ---- throughput reports ---- */

int tool_lbone_reports_off(int no_report_flag)
{
    const char *e = getenv("LNS_NO_REPORT");
    return no_report_flag || (e && strcmp(e, "1") == 0);
}

typedef struct meter_depot {
    char name[IBP_MAX_HOST + 16]; /* host:port */
    int64_t bytes;
    int64_t first_ns, last_ns;
} meter_depot_t;

struct tool_lbone_meter {
    meter_depot_t *d;
    size_t n, cap;
};

tool_lbone_meter_t *tool_lbone_meter_new(void)
{
    return calloc(1, sizeof(tool_lbone_meter_t));
}

void tool_lbone_meter_free(tool_lbone_meter_t *m)
{
    if (!m)
        return;
    free(m->d);
    free(m);
}

tool_lbone_meter_t *tool_lbone_meter_tee(tool_tee_t *tee, int no_report_flag)
{
    tool_lbone_meter_t *m;
    if (tool_lbone_reports_off(no_report_flag))
        return NULL;
    m = tool_lbone_meter_new();
    tool_tee_add(tee, tool_lbone_meter_event, m);
    return m;
}

void tool_lbone_meter_report(const char *tool, const tool_lbone_meter_t *m,
                             const tool_lbone_opts_t *lb, const tool_rc_t *rc, int verbose)
{
    char **servers;
    size_t n;
    if (!m || tool_lbone_servers(lb, rc, &servers, &n) < 0)
        return;
    tool_lbone_meter_send(tool, m, servers, n, verbose);
    tool_lbone_servers_free(servers, n);
}

static meter_depot_t *meter_find(tool_lbone_meter_t *m, const lors_depot_t *dep)
{
    char name[sizeof m->d->name];
    lors_depot_t hp = *dep;
    hp.rid[0] = 0; /* the L-Bone's reports name host:port */
    lors_depot_format(&hp, name, sizeof name);
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->d[i].name, name) == 0)
            return &m->d[i];
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 16;
        meter_depot_t *nd = realloc(m->d, cap * sizeof *nd);
        if (!nd)
            return NULL; /* a measurement lost, nothing worse */
        m->d = nd;
        m->cap = cap;
    }
    meter_depot_t *d = &m->d[m->n++];
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "%s", name);
    return d;
}

void tool_lbone_meter_event(void *meter, const lors_event_t *ev)
{
    tool_lbone_meter_t *m = meter;
    int start = ev->kind == LORS_EV_STORE_START || ev->kind == LORS_EV_FETCH_START;
    int end = ev->kind == LORS_EV_STORE_END || ev->kind == LORS_EV_FETCH_END;
    if (!m || !ev->depot || (!start && !end))
        return;
    meter_depot_t *d = meter_find(m, ev->depot);
    if (!d)
        return;
    int64_t now = lns_mono_ns();
    if (start && !d->first_ns)
        d->first_ns = now;
    if (end && d->first_ns) {
        d->bytes += ev->length;
        d->last_ns = now;
    }
}

size_t tool_lbone_meter_send(const char *tool, const tool_lbone_meter_t *m, char **servers,
                             size_t nservers, int verbose)
{
    char err[1600];
    size_t k = 0;
    if (!m || !m->n || !nservers)
        return 0;
    lbone_report_t *r = calloc(m->n, sizeof *r);
    if (!r)
        return 0;
    for (size_t i = 0; i < m->n; i++) {
        const meter_depot_t *d = &m->d[i];
        /* Under a millisecond of data says nothing about a path. */
        if (d->bytes <= 0 || d->last_ns - d->first_ns < 1000000)
            continue;
        r[k].depot = d->name;
        r[k].bytes = (uint64_t)d->bytes;
        r[k].seconds = (double)(d->last_ns - d->first_ns) / 1e9;
        k++;
    }
    if (k) {
        lbone_set_timeouts(2000, 5000);
        if (lbone_report_bandwidth((const char *const *)servers, nservers, r, k, err,
                                   sizeof err) != LBONE_OK) {
            if (verbose)
                tool_error(tool, "warning: throughput report not sent: %s", err);
            k = 0;
        } else if (verbose) {
            fprintf(stderr, "%s: reported the throughput of %zu depot%s to the L-Bone\n", tool,
                    k, k == 1 ? "" : "s");
        }
    }
    free(r);
    return k;
}
