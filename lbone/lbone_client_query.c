/* lbone_client_query.c -- asking the L-Bone for depots and telling it measured throughput.
 *
 * Both calls walk the server list in order (the LBONE_SERVER lines of an rc file) and stop
 * at the first server that gives an API answer; the reasons of the servers passed over are
 * kept, so "no L-Bone answered" says what happened to each.  Answers are read leniently
 * (unknown fields ignored, optional ones may be missing or null) but a depot without a host
 * and a valid port is an error: a client could not use it.
 */
#include "lbone_client_int.h"

#include <curl/curl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LBONE_REPORTS_PER_POST 256 /* what an L-Bone takes in one request */

void lbone_request_init(lbone_request_t *req)
{
    memset(req, 0, sizeof *req);
    req->monitoring = -1;
    req->firewall = -1;
}

void lbone_result_free(lbone_result_t *res)
{
    if (!res)
        return;
    free(res->depots);
    free(res->json);
    res->depots = NULL;
    res->json = NULL;
    res->n = 0;
}

/* Append "?key=value" (the first) or "&key=value", the value URL-encoded. */
static void put_param(lns_buf_t *b, const char *key, const char *value)
{
    char *esc = curl_easy_escape(NULL, value, 0);
    if (!esc) {
        b->oom = 1;
        return;
    }
    lns_buf_printf(b, "%c%s=%s", b->p && strchr(b->p, '?') ? '&' : '?', key, esc);
    curl_free(esc);
}

static void put_num(lns_buf_t *b, const char *key, unsigned long long v)
{
    char num[24];
    snprintf(num, sizeof num, "%llu", v);
    put_param(b, key, num);
}

static int build_query(const lbone_request_t *req, lns_buf_t *b, char *err, size_t errlen)
{
    if (req->count < 0 || req->duration < 0 || req->monitoring < -1 || req->monitoring > 24)
        return lbone__fail(err, errlen, LBONE_E_ARG, "L-Bone query: count and duration must be "
                                                     ">= 0, monitoring 0 to 24 hours");
    lns_buf_puts(b, "/v1/depots");
    if (req->count > 0)
        put_num(b, "count", (unsigned long long)req->count);
    if (req->hard)
        put_num(b, "hard", req->hard);
    if (req->soft)
        put_num(b, "soft", req->soft);
    if (req->duration)
        put_num(b, "duration", (unsigned long long)req->duration);
    if (req->location && *req->location)
        put_param(b, "location", req->location);
    if (req->order && *req->order)
        put_param(b, "order", req->order);
    if (req->any_status)
        put_param(b, "status", "any");
    if (req->connection && *req->connection)
        put_param(b, "connection", req->connection);
    if (req->monitoring >= 0)
        put_num(b, "monitoring", (unsigned long long)req->monitoring);
    if (req->power && *req->power)
        put_param(b, "power", req->power);
    if (req->firewall == 0)
        put_param(b, "firewall", "no");
    return b->oom ? lbone__fail(err, errlen, LBONE_E_NOMEM, "L-Bone query: out of memory") : 0;
}

static void copy_str(char *dst, size_t size, const json_t *v)
{
    const char *s = json_string_value(v);
    snprintf(dst, size, "%s", s ? s : "");
}

static double get_num(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static int64_t get_int(const json_t *obj, const char *key)
{
    int64_t i;
    return lbone_json_int(json_object_get(obj, key), &i) == 0 ? i : -1;
}

static int read_depot(const json_t *o, lbone_depot_info_t *d)
{
    const char *host = json_string_value(json_object_get(o, "host"));
    int64_t port = get_int(o, "port");
    if (!json_is_object(o) || !host || !*host ||
        strlen(host) >= sizeof d->host || port < 1 || port > 65535)
        return -1;
    memset(d, 0, sizeof *d);
    snprintf(d->host, sizeof d->host, "%s", host);
    d->port = (int)port;
    copy_str(d->id, sizeof d->id, json_object_get(o, "id"));
    copy_str(d->rid, sizeof d->rid, json_object_get(o, "rid"));
    copy_str(d->place, sizeof d->place, json_object_get(o, "place"));
    copy_str(d->pin, sizeof d->pin, json_object_get(o, "pin"));
    copy_str(d->status, sizeof d->status, json_object_get(o, "status"));
    d->hard_free = get_int(o, "hard_free");
    d->soft_free = get_int(o, "soft_free");
    d->max_duration = get_int(o, "max_duration");
    d->last_heard = get_int(o, "last_heard");
    d->lat = get_num(o, "lat");
    d->lon = get_num(o, "lon");
    d->distance_km = get_num(o, "distance_km");
    d->forecast_mbps = get_num(o, "forecast_mbps");
    return 0;
}

/* The answer of one server into res.  LBONE_OK or LBONE_E_PROTOCOL / LBONE_E_NOMEM. */
static int read_answer(const char *base, lbone_http_t *h, lbone_result_t *res, char *err,
                       size_t errlen)
{
    json_t *doc = lbone__parse_answer(base, h, err, errlen);
    if (!doc)
        return LBONE_E_PROTOCOL;
    json_t *list = json_object_get(doc, "depots"), *o;
    int rc = LBONE_OK;
    if (!json_is_array(list)) {
        rc = lbone__fail(err, errlen, LBONE_E_PROTOCOL, "%s: answer has no \"depots\" list", base);
        goto out;
    }
    size_t n = json_array_size(list), i;
    res->depots = calloc(n ? n : 1, sizeof *res->depots);
    if (!res->depots) {
        rc = lbone__fail(err, errlen, LBONE_E_NOMEM, "%s: out of memory for %zu depots", base, n);
        goto out;
    }
    json_array_foreach (list, i, o) {
        if (read_depot(o, &res->depots[i]) < 0) {
            rc = lbone__fail(err, errlen, LBONE_E_PROTOCOL,
                             "%s: depot %zu of the answer has no host or a bad port", base, i + 1);
            goto out;
        }
    }
    res->n = n;
    const json_t *where = json_object_get(doc, "resolved");
    if (json_is_object(where)) {
        res->resolved = 1;
        res->lat = get_num(where, "lat");
        res->lon = get_num(where, "lon");
        copy_str(res->place, sizeof res->place, json_object_get(where, "name"));
    }
    res->json = lns_buf_take(&h->answer, NULL);
out:
    json_decref(doc);
    if (rc != LBONE_OK)
        lbone_result_free(res);
    return rc;
}

/* Append "; reason" of one server to the running list of reasons. */
static void add_reason(char *all, size_t size, const char *one)
{
    size_t n = strlen(all);
    if (n + 3 < size)
        snprintf(all + n, size - n, "%s%s", n ? "; " : "", one);
}

int lbone_query_depots(const char *const servers[], size_t nservers, const lbone_request_t *req,
                       lbone_result_t *res, char *err, size_t errlen)
{
    lns_buf_t path;
    char base[LBONE_MAX_BASE], one[512], all[1536] = "";
    int rc = LBONE_E_CONNECT;

    if (res)
        memset(res, 0, sizeof *res);
    if (!res || !req || (nservers && !servers))
        return lbone__fail(err, errlen, LBONE_E_ARG, "L-Bone query: no request or result");
    if (!nservers)
        return lbone__fail(err, errlen, LBONE_E_ARG, "L-Bone query: no L-Bone server given");
    lns_buf_init(&path);
    if ((rc = build_query(req, &path, err, errlen)) != LBONE_OK) {
        lns_buf_free(&path);
        return rc;
    }
    for (size_t i = 0; i < nservers; i++) {
        lbone_http_t h = {.method = "GET"};
        if (lbone__base_url(servers[i], base, sizeof base, one, sizeof one) < 0) {
            rc = LBONE_E_ARG; /* a bad name in the list: say so, but try the others */
            add_reason(all, sizeof all, one);
            continue;
        }
        rc = lbone__http(base, path.p, &h, one, sizeof one);
        if (rc == LBONE_OK && h.status == 200) {
            rc = read_answer(base, &h, res, one, sizeof one);
            if (rc == LBONE_OK)
                snprintf(res->server, sizeof res->server, "%s", base);
        } else if (rc == LBONE_OK) {
            rc = lbone__status_error(base, &h, one, sizeof one);
            if (rc == LBONE_E_NOTFOUND) /* no /v1/depots here: not an L-Bone */
                rc = LBONE_E_PROTOCOL;
        }
        lns_buf_free(&h.answer);
        if (rc == LBONE_OK || !(lbone__try_next(rc) || rc == LBONE_E_ARG)) {
            if (rc != LBONE_OK)
                lbone__fail(err, errlen, rc, "%s", one);
            lns_buf_free(&path);
            return rc;
        }
        add_reason(all, sizeof all, one);
    }
    lns_buf_free(&path);
    return lbone__fail(err, errlen, rc, "no L-Bone answered: %s", all);
}

static int build_reports(const lbone_report_t *r, size_t n, lns_buf_t *b, char *err,
                         size_t errlen)
{
    lns_buf_puts(b, "{\"reports\":[");
    for (size_t i = 0; i < n; i++) {
        if (!r[i].depot || !*r[i].depot || !r[i].bytes || !(r[i].seconds > 0) ||
            !isfinite(r[i].seconds))
            return lbone__fail(err, errlen, LBONE_E_ARG, "L-Bone report on %s: needs a depot, "
                               "bytes and a positive time", r[i].depot ? r[i].depot : "?");
        double mbps = (double)r[i].bytes * 8 / r[i].seconds / 1e6;
        lns_buf_puts(b, i ? ",{\"depot\":" : "{\"depot\":");
        lbone_json_put_string(b, r[i].depot);
        lns_buf_puts(b, ",\"mbps\":");
        lbone_json_put_number(b, mbps);
        lns_buf_printf(b, ",\"bytes\":%llu,\"seconds\":", (unsigned long long)r[i].bytes);
        lbone_json_put_number(b, r[i].seconds);
        lns_buf_puts(b, "}");
    }
    lns_buf_puts(b, "]}");
    return b->oom ? lbone__fail(err, errlen, LBONE_E_NOMEM, "L-Bone reports: out of memory") : 0;
}

/* One POST of at most LBONE_REPORTS_PER_POST reports, to the first server that takes it. */
static int post_reports(const char *const servers[], size_t nservers, const lbone_report_t *r,
                        size_t n, char *err, size_t errlen)
{
    lns_buf_t body;
    char base[LBONE_MAX_BASE], one[512], all[1536] = "";
    int rc;

    lns_buf_init(&body);
    if ((rc = build_reports(r, n, &body, err, errlen)) != LBONE_OK) {
        lns_buf_free(&body);
        return rc;
    }
    for (size_t i = 0; i < nservers; i++) {
        lbone_http_t h = {.method = "POST", .body = body.p, .body_len = body.len};
        if (lbone__base_url(servers[i], base, sizeof base, one, sizeof one) < 0) {
            rc = LBONE_E_ARG;
            add_reason(all, sizeof all, one);
            continue;
        }
        rc = lbone__http(base, "/v1/reports", &h, one, sizeof one);
        if (rc == LBONE_OK && h.status != 204 && h.status != 200) {
            rc = lbone__status_error(base, &h, one, sizeof one);
            if (rc == LBONE_E_NOTFOUND)
                rc = LBONE_E_PROTOCOL;
        }
        lns_buf_free(&h.answer);
        if (rc == LBONE_OK || !(lbone__try_next(rc) || rc == LBONE_E_ARG)) {
            if (rc != LBONE_OK)
                lbone__fail(err, errlen, rc, "%s", one);
            lns_buf_free(&body);
            return rc;
        }
        add_reason(all, sizeof all, one);
    }
    lns_buf_free(&body);
    return lbone__fail(err, errlen, rc, "no L-Bone took the reports: %s", all);
}

int lbone_report_bandwidth(const char *const servers[], size_t nservers,
                           const lbone_report_t *reports, size_t n, char *err, size_t errlen)
{
    if (!nservers || !servers || !reports || !n)
        return lbone__fail(err, errlen, LBONE_E_ARG, "L-Bone reports: no server or no reports");
    for (size_t i = 0; i < n; i += LBONE_REPORTS_PER_POST) {
        size_t k = n - i < LBONE_REPORTS_PER_POST ? n - i : LBONE_REPORTS_PER_POST;
        int rc = post_reports(servers, nservers, reports + i, k, err, errlen);
        if (rc != LBONE_OK)
            return rc;
    }
    return LBONE_OK;
}
