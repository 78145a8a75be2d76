/* lbone_srv_api.c -- the write side of the JSON API: register, heartbeat, delete, reports,
 * and the single-depot view.
 *
 * Bodies are validated completely before anything changes: the JSON must parse strictly,
 * every key must be known, every value must have its type and range, and text must be free
 * of control characters.  The first problem found becomes the 400 reason.  Nothing from a
 * request reaches SQL except through bound parameters, or HTML except through escaping.
 */
#include "lbone_srv.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lbone_geo.h"
#include "lns_log.h"
#include "lns_time.h"
#include "lns_tls.h"

#define MAX_REPORTS 256

int lbone_api_error(lns_buf_t *out, int code, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    lns_buf_puts(out, "{\"error\":");
    lbone_json_put_string(out, msg);
    lns_buf_puts(out, "}\n");
    return code;
}

/* Printable text: no control characters (UTF-8 was checked by the parser). */
static int clean_text(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return 0;
    return 1;
}

static int host_ok(const char *h)
{
    size_t n = strlen(h);
    if (n == 0 || n >= LBONE_MAX_HOST || h[0] == '-' || h[0] == '.')
        return 0;
    for (; *h; h++)
        if (!((*h >= 'a' && *h <= 'z') || (*h >= 'A' && *h <= 'Z') || (*h >= '0' && *h <= '9') ||
              *h == '.' || *h == '-' || *h == '_' || *h == ':'))
            return 0;
    return 1;
}

static int rid_ok(const char *r)
{
    size_t n = strlen(r);
    if (n == 0 || n >= LBONE_MAX_RID)
        return 0;
    for (; *r; r++)
        if (!((*r >= 'a' && *r <= 'z') || (*r >= 'A' && *r <= 'Z') || (*r >= '0' && *r <= '9') ||
              *r == '.' || *r == '-' || *r == '_'))
            return 0;
    return 1;
}

static int get_u64(const json_t *v, uint64_t *out)
{
    int64_t i;
    if (lbone_json_int(v, &i) < 0 || i < 0)
        return -1;
    *out = (uint64_t)i;
    return 0;
}

static int parse_doc(json_t **doc, const char *body, size_t len, lns_buf_t *out)
{
    char why[160];
    if (!(*doc = lbone_json_parse(body, len, why, sizeof why)))
        return lbone_api_error(out, 400, "malformed JSON: %s", why);
    if (!json_is_object(*doc)) {
        json_decref(*doc);
        *doc = NULL;
        return lbone_api_error(out, 400, "the body must be a JSON object");
    }
    return 0;
}

/* The space fields shared by registration and heartbeat.  1 handled, 0 not one of them,
 * 400 after writing the error. */
static int space_field(const char *k, const json_t *m, lbone_depot_t *d, int *mask,
                       lns_buf_t *out)
{
    static const struct {
        const char *key;
        int bit;
    } f[] = {{"hard_total", LBONE_HB_HARD_TOTAL}, {"hard_free", LBONE_HB_HARD_FREE},
             {"soft_total", LBONE_HB_SOFT_TOTAL}, {"soft_free", LBONE_HB_SOFT_FREE},
             {"max_duration", LBONE_HB_MAX_DURATION}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        if (strcmp(k, f[i].key) != 0)
            continue;
        uint64_t v;
        if (get_u64(m, &v) < 0 || v > (uint64_t)INT64_MAX)
            return lbone_api_error(out, 400, "%s: must be a whole number >= 0", k);
        switch (f[i].bit) {
        case LBONE_HB_HARD_TOTAL: d->hard_total = v; break;
        case LBONE_HB_HARD_FREE: d->hard_free = v; break;
        case LBONE_HB_SOFT_TOTAL: d->soft_total = v; break;
        case LBONE_HB_SOFT_FREE: d->soft_free = v; break;
        default: d->max_duration = (int64_t)v; break;
        }
        *mask |= f[i].bit;
        return 1;
    }
    return 0;
}

static int text_field(const char *k, const json_t *m, char *dst, size_t size, lns_buf_t *out)
{
    const char *s = json_string_value(m);
    size_t n = json_string_length(m);
    if (!s)
        return lbone_api_error(out, 400, "%s: must be a string", k);
    if (n >= size)
        return lbone_api_error(out, 400, "%s: longer than %zu bytes", k, size - 1);
    if (!clean_text(s))
        return lbone_api_error(out, 400, "%s: control characters are not allowed", k);
    memcpy(dst, s, n + 1);
    return 0;
}

static int parse_registration(json_t *root, lbone_depot_t *d, lns_buf_t *out)
{
    int mask = 0, has_lat = 0, has_lon = 0, has_place = 0, rc;
    char place[LBONE_MAX_TEXT] = "";

    memset(d, 0, sizeof *d);
    strcpy(d->rid, "0");
    lbone_env_unknown(&d->env);
    const char *k;
    json_t *m;
    json_object_foreach (root, k, m) {
        int64_t i;
        double x;
        if ((rc = space_field(k, m, d, &mask, out)) != 0) {
            if (rc != 1)
                return rc;
        } else if (strcmp(k, "host") == 0) {
            if ((rc = text_field(k, m, d->host, sizeof d->host, out)) != 0)
                return rc;
            if (!host_ok(d->host))
                return lbone_api_error(out, 400, "host: not a host name or address");
        } else if (strcmp(k, "port") == 0) {
            if (lbone_json_int(m, &i) < 0 || i < 1 || i > 65535)
                return lbone_api_error(out, 400, "port: must be 1 to 65535");
            d->port = (int)i;
        } else if (strcmp(k, "rid") == 0) {
            if ((rc = text_field(k, m, d->rid, sizeof d->rid, out)) != 0)
                return rc;
            if (!rid_ok(d->rid))
                return lbone_api_error(out, 400, "rid: letters, digits, '.', '-', '_' only");
        } else if (strcmp(k, "lat") == 0 || strcmp(k, "lon") == 0) {
            int is_lat = k[1] == 'a';
            if (!json_is_number(m) || fabs(x = json_number_value(m)) > (is_lat ? 90 : 180))
                return lbone_api_error(out, 400, "%s: must be a number of degrees within +-%d", k,
                                       is_lat ? 90 : 180);
            if (is_lat) {
                d->lat = x;
                has_lat = 1;
            } else {
                d->lon = x;
                has_lon = 1;
            }
        } else if (strcmp(k, "place") == 0) {
            if ((rc = text_field(k, m, place, sizeof place, out)) != 0)
                return rc;
            has_place = 1;
        } else if (strcmp(k, "contact") == 0) {
            if ((rc = text_field(k, m, d->contact, sizeof d->contact, out)) != 0)
                return rc;
        } else if (strcmp(k, "pin") == 0) { /* "sha256:" and 64 lowercase hex digits */
            if ((rc = text_field(k, m, d->pin, sizeof d->pin, out)) != 0)
                return rc;
            if (!lns_tls_pin_valid(d->pin))
                return lbone_api_error(out, 400, "pin: expected sha256: and 64 hex digits");
        } else if (strcmp(k, "env") == 0) {
            char why[256];
            if (lbone_env_from_json(m, &d->env, why, sizeof why) < 0)
                return lbone_api_error(out, 400, "%s", why);
        } else {
            return lbone_api_error(out, 400, "unknown field '%.64s'", k);
        }
    }
    if (!d->host[0] || !d->port)
        return lbone_api_error(out, 400, "host and port are required");
    if ((mask & 0x1f) != 0x1f)
        return lbone_api_error(out, 400, "hard_total, hard_free, soft_total, soft_free and "
                                         "max_duration are required");
    if (d->hard_free > d->hard_total || d->soft_free > d->soft_total)
        return lbone_api_error(out, 400, "free space above the total");
    if (has_lat != has_lon)
        return lbone_api_error(out, 400, "lat and lon go together");
    if (has_lat) {
        d->has_loc = 1;
        strcpy(d->place, place); /* a label only: the coordinates are what counts */
    } else if (has_place) {
        lbone_place_t p;
        char why[256];
        if (lbone_geo_resolve(place, &p, why, sizeof why) < 0)
            return lbone_api_error(out, 400, "place: %s", why);
        d->has_loc = 1;
        d->lat = p.lat;
        d->lon = p.lon;
        snprintf(d->place, sizeof d->place, "%s", p.name);
    }
    return 0;
}

int lbone_api_register(lbone_srv_t *s, const char *bearer, const char *body, size_t len,
                       lns_buf_t *out)
{
    json_t *doc;
    lbone_depot_t d;
    char id[LBONE_ID_LEN + 1], secret[LBONE_SECRET_LEN + 1], why[256];
    int rc;

    if (!bearer)
        return lbone_api_error(out, 401, "registration needs 'Authorization: Bearer <registry token>'");
    if (!lbone_secret_matches(bearer, s->token_hash))
        return lbone_api_error(out, 403, "wrong registry token");
    if ((rc = parse_doc(&doc, body, len, out)) != 0)
        return rc;
    rc = parse_registration(doc, &d, out);
    json_decref(doc);
    if (rc != 0)
        return rc;
    if ((rc = lbone_core_register(s, &d, id, secret, why, sizeof why)) != 201)
        return lbone_api_error(out, rc, "%s", why);
    lns_buf_puts(out, "{\"id\":");
    lbone_json_put_string(out, id);
    lns_buf_puts(out, ",\"secret\":");
    lbone_json_put_string(out, secret);
    lns_buf_printf(out, ",\"heartbeat_s\":%d}\n", s->cfg->heartbeat_s);
    return 201;
}

int lbone_api_heartbeat(lbone_srv_t *s, const char *id, const char *bearer, const char *body,
                        size_t len, lns_buf_t *out)
{
    json_t *doc = NULL;
    lbone_depot_t upd;
    int mask = 0, rc;
    char why[256];

    if (!bearer)
        return lbone_api_error(out, 401, "a heartbeat needs 'Authorization: Bearer <depot secret>'");
    memset(&upd, 0, sizeof upd);
    /* An empty body is a heartbeat that changes nothing but the time. */
    if (len > 0) {
        if ((rc = parse_doc(&doc, body, len, out)) != 0)
            return rc;
        const char *k;
        json_t *m;
        json_object_foreach (doc, k, m) {
            if (strcmp(k, "leaving") == 0) {
                if (!json_is_boolean(m)) {
                    json_decref(doc);
                    return lbone_api_error(out, 400, "leaving: must be true or false");
                }
                upd.leaving = json_is_true(m);
                mask |= LBONE_HB_LEAVING;
                continue;
            }
            if ((rc = space_field(k, m, &upd, &mask, out)) == 1)
                continue;
            if (rc == 0)
                rc = lbone_api_error(out, 400, "unknown field '%.64s' (a heartbeat carries "
                                               "hard_total, hard_free, soft_total, soft_free, "
                                               "max_duration, leaving)", k);
            json_decref(doc);
            return rc;
        }
        json_decref(doc);
    }
    if ((rc = lbone_core_heartbeat(s, id, bearer, &upd, mask, why, sizeof why)) != 200)
        return lbone_api_error(out, rc, "%s", why);
    lns_buf_printf(out, "{\"heartbeat_s\":%d}\n", s->cfg->heartbeat_s);
    return 200;
}

int lbone_api_delete(lbone_srv_t *s, const char *id, const char *bearer, lns_buf_t *out)
{
    char why[256];
    int rc;
    if (!bearer)
        return lbone_api_error(out, 401, "deleting needs 'Authorization: Bearer <depot secret "
                                         "or registry token>'");
    if ((rc = lbone_core_delete(s, id, bearer, why, sizeof why)) != 204)
        return lbone_api_error(out, rc, "%s", why);
    return 204;
}

void lbone_api_put_depot_fields(lns_buf_t *b, const lbone_srv_t *s, const lbone_depot_t *d,
                                int64_t now_ms)
{
    lns_buf_puts(b, "\"id\":");
    lbone_json_put_string(b, d->id);
    lns_buf_puts(b, ",\"host\":");
    lbone_json_put_string(b, d->host);
    lns_buf_printf(b, ",\"port\":%d,\"rid\":", d->port);
    lbone_json_put_string(b, d->rid);
    lns_buf_printf(b, ",\"hard_total\":%llu,\"hard_free\":%llu,\"soft_total\":%llu,"
                        "\"soft_free\":%llu,\"max_duration\":%lld,\"lat\":",
                     (unsigned long long)d->hard_total, (unsigned long long)d->hard_free,
                     (unsigned long long)d->soft_total, (unsigned long long)d->soft_free,
                     (long long)d->max_duration);
    if (d->has_loc) {
        lbone_json_put_number(b, d->lat);
        lns_buf_puts(b, ",\"lon\":");
        lbone_json_put_number(b, d->lon);
    } else {
        lns_buf_puts(b, "null,\"lon\":null");
    }
    lns_buf_puts(b, ",\"place\":");
    if (d->place[0])
        lbone_json_put_string(b, d->place);
    else
        lns_buf_puts(b, "null");
    if (d->pin[0]) {
        lns_buf_puts(b, ",\"pin\":");
        lbone_json_put_string(b, d->pin);
    }
    lns_buf_puts(b, ",\"status\":");
    lbone_json_put_string(b, lbone_status_name(lbone_srv_status(s, d, now_ms)));
    lns_buf_printf(b, ",\"last_heard\":%lld", (long long)(d->last_heard_ms / 1000));
}

int lbone_api_depot(lbone_srv_t *s, const char *id, lns_buf_t *out)
{
    int64_t now = lns_now_s() * 1000;
    pthread_rwlock_rdlock(&s->reg.lock);
    lbone_depot_t *d = lbone_reg_find_id(&s->reg, id);
    if (!d) {
        pthread_rwlock_unlock(&s->reg.lock);
        return lbone_api_error(out, 404, "unknown depot id");
    }
    lns_buf_puts(out, "{");
    lbone_api_put_depot_fields(out, s, d, now);
    lns_buf_puts(out, ",\"contact\":");
    lbone_json_put_string(out, d->contact);
    lns_buf_puts(out, ",\"env\":");
    lbone_env_put_json(out, &d->env);
    lns_buf_printf(out, ",\"registered\":%lld,\"probe\":{\"state\":",
                     (long long)(d->registered_ms / 1000));
    lbone_json_put_string(out, d->probe_state == LBONE_PROBE_OK       ? "ok"
                               : d->probe_state == LBONE_PROBE_FAILED ? "failed"
                                                                      : "pending");
    lns_buf_puts(out, ",\"last\":");
    if (d->probe_last_ms)
        lns_buf_printf(out, "%lld", (long long)(d->probe_last_ms / 1000));
    else
        lns_buf_puts(out, "null");
    lns_buf_puts(out, ",\"error\":");
    if (d->probe_error[0])
        lbone_json_put_string(out, d->probe_error);
    else
        lns_buf_puts(out, "null");
    lns_buf_puts(out, "},\"history\":");
    char did[LBONE_ID_LEN + 1];
    strcpy(did, d->id);
    pthread_rwlock_unlock(&s->reg.lock);
    lbone_hist_put_depot(s->hist, did, out);
    lns_buf_puts(out, "}\n");
    return 200;
}

typedef struct report {
    char depot[LBONE_ID_LEN + 1]; /* resolved id, "" when unknown */
    double mbps;
} report_t;

/* "host:port" of a registered depot -> its id (any resource on that host and port). */
static int depot_by_hostport(lbone_srv_t *s, const char *hp, char *id)
{
    char host[LBONE_MAX_HOST];
    const char *colon = strrchr(hp, ':');
    char *end;
    if (!colon || colon == hp || (size_t)(colon - hp) >= sizeof host)
        return -1;
    long port = strtol(colon + 1, &end, 10);
    if (!colon[1] || *end || port < 1 || port > 65535)
        return -1;
    memcpy(host, hp, (size_t)(colon - hp));
    host[colon - hp] = 0;
    id[0] = 0;
    pthread_rwlock_rdlock(&s->reg.lock);
    lbone_depot_t *d = lbone_reg_find_key(&s->reg, host, (int)port, "0");
    for (size_t i = 0; !d && i < s->reg.n; i++)
        if (s->reg.v[i]->port == port && strcasecmp(s->reg.v[i]->host, host) == 0)
            d = s->reg.v[i];
    if (d)
        strcpy(id, d->id);
    pthread_rwlock_unlock(&s->reg.lock);
    return 0;
}

int lbone_api_reports(lbone_srv_t *s, const char *net, const char *body, size_t len,
                      lns_buf_t *out)
{
    json_t *doc;
    report_t rep[MAX_REPORTS];
    size_t n = 0;
    int rc;

    if ((rc = parse_doc(&doc, body, len, out)) != 0)
        return rc;
    json_t *list = json_object_get(doc, "reports");
    if (json_object_size(doc) != 1 || !json_is_array(list)) {
        json_decref(doc);
        return lbone_api_error(out, 400, "the body must be {\"reports\": [...]}");
    }
    if (json_array_size(list) > MAX_REPORTS) {
        json_decref(doc);
        return lbone_api_error(out, 400, "at most %d reports per request", MAX_REPORTS);
    }
    json_t *r;
    json_array_foreach (list, n, r) {
        const char *hp = json_string_value(json_object_get(r, "depot"));
        double mbps = 0, secs = 0;
        int64_t bytes = 0;
        size_t known = 0;
        rc = 0;
        if (!json_is_object(r))
            rc = lbone_api_error(out, 400, "reports[%zu]: must be an object", n);
        else if (!hp || depot_by_hostport(s, hp, rep[n].depot) < 0)
            rc = lbone_api_error(out, 400, "reports[%zu].depot: must be \"host:port\"", n);
        else if (!json_is_number(json_object_get(r, "mbps")) ||
                 !((mbps = json_number_value(json_object_get(r, "mbps"))) > 0) || mbps > 1e7)
            rc = lbone_api_error(out, 400, "reports[%zu].mbps: must be a number above 0", n);
        known = 2;
        if (!rc && json_object_get(r, "bytes")) {
            known++;
            if (lbone_json_int(json_object_get(r, "bytes"), &bytes) < 0 || bytes < 0)
                rc = lbone_api_error(out, 400, "reports[%zu].bytes: must be a whole number >= 0", n);
        }
        if (!rc && json_object_get(r, "seconds")) {
            known++;
            if (!json_is_number(json_object_get(r, "seconds")) ||
                (secs = json_number_value(json_object_get(r, "seconds"))) < 0)
                rc = lbone_api_error(out, 400, "reports[%zu].seconds: must be a number >= 0", n);
        }
        if (!rc && json_object_size(r) != known)
            rc = lbone_api_error(out, 400, "reports[%zu]: unknown field (depot, mbps, bytes, "
                                           "seconds)", n);
        if (rc) {
            json_decref(doc);
            return rc;
        }
        rep[n].mbps = mbps;
    }
    json_decref(doc);

    int64_t now = lns_now_s() * 1000;
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        /* Reports about depots we do not know (or dropped meanwhile) are ignored: storing
         * them would let anyone grow the tables with made-up names. */
        if (!rep[i].depot[0])
            continue;
        if (lbone_hist_add(s->hist, net, rep[i].depot, rep[i].mbps) < 0)
            continue;
        lbone_db_lock(s->db);
        lbone_db_measurement(s->db, net, rep[i].depot, now, rep[i].mbps, LBONE_FC_KEEP);
        lbone_db_unlock(s->db);
        used++;
    }
    lns_log(LNS_LOG_DEBUG, "reports from %s: %zu of %zu used", net, used, n);
    return 204;
}
