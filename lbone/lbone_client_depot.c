/* lbone_client_depot.c -- a depot's side of the L-Bone: register, heartbeat, unregister.
 *
 * Registration carries the registry token and returns a per-depot secret; heartbeats and
 * deletion carry that secret only, so a depot's config need not keep the registry token
 * readable after start.  A heartbeat sends only what changes (free space, totals, maximum
 * duration); a 404 answer means the L-Bone forgot the depot (dropped it, or lost its
 * registry), and the caller registers again.
 */
#include "lbone_client_int.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void lbone_announce_init(lbone_announce_t *a)
{
    memset(a, 0, sizeof *a);
    a->port = -1;
    a->max_duration = -1;
    a->monitoring = -1;
    a->firewall = -1;
}

static void put_key(lns_buf_t *b, const char *key)
{
    lns_buf_puts(b, b->len > 1 ? "," : "");
    lbone_json_put_string(b, key);
    lns_buf_puts(b, ":");
}

static void put_str(lns_buf_t *b, const char *key, const char *v)
{
    if (!v)
        return;
    put_key(b, key);
    lbone_json_put_string(b, v);
}

static void put_u64(lns_buf_t *b, const char *key, uint64_t v)
{
    put_key(b, key);
    lns_buf_printf(b, "%llu", (unsigned long long)v);
}

/* The fields a heartbeat refreshes (b holds "{" already). */
static void put_status(lns_buf_t *b, const lbone_announce_t *a)
{
    put_u64(b, "hard_total", a->hard_total);
    put_u64(b, "hard_free", a->hard_free);
    put_u64(b, "soft_total", a->soft_total);
    put_u64(b, "soft_free", a->soft_free);
    if (a->max_duration >= 0)
        put_u64(b, "max_duration", (uint64_t)a->max_duration);
}

static void put_env(lns_buf_t *b, const lbone_announce_t *a)
{
    const char *sep = "";
    put_key(b, "env");
    lns_buf_puts(b, "{");
    if (a->connection) {
        lns_buf_puts(b, "\"connection\":");
        lbone_json_put_string(b, a->connection);
        sep = ",";
    }
    if (a->monitoring >= 0) {
        lns_buf_printf(b, "%s\"monitoring\":%d", sep, a->monitoring);
        sep = ",";
    }
    if (a->power) {
        lns_buf_printf(b, "%s\"power\":", sep);
        lbone_json_put_string(b, a->power);
        sep = ",";
    }
    if (a->firewall >= 0)
        lns_buf_printf(b, "%s\"firewall\":%s", sep, a->firewall ? "true" : "false");
    lns_buf_puts(b, "}");
}

static int build_registration(const lbone_announce_t *a, lns_buf_t *b, char *err,
                              size_t errlen)
{
    if (!a->host || !*a->host || a->port < 1 || a->port > 65535 || !a->rid)
        return lbone__fail(err, errlen, LBONE_E_ARG, "L-Bone registration: needs host, port "
                                                     "and resource id");
    if (a->has_latlon && (!isfinite(a->lat) || !isfinite(a->lon) || fabs(a->lat) > 90 ||
                          fabs(a->lon) > 180))
        return lbone__fail(err, errlen, LBONE_E_ARG, "L-Bone registration: latitude must be in "
                                                     "[-90,90], longitude in [-180,180]");
    lns_buf_puts(b, "{");
    put_str(b, "host", a->host);
    put_u64(b, "port", (uint64_t)a->port);
    put_str(b, "rid", a->rid);
    put_status(b, a);
    if (a->has_latlon) {
        put_key(b, "lat");
        lbone_json_put_number(b, a->lat);
        put_key(b, "lon");
        lbone_json_put_number(b, a->lon);
    } else {
        put_str(b, "place", a->place);
    }
    put_str(b, "contact", a->contact);
    put_str(b, "pin", a->pin);
    if (a->connection || a->monitoring >= 0 || a->power || a->firewall >= 0)
        put_env(b, a);
    lns_buf_puts(b, "}");
    return b->oom ? lbone__fail(err, errlen, LBONE_E_NOMEM, "L-Bone registration: out of memory")
                  : 0;
}

int lbone_register(const char *server, const char *token, const lbone_announce_t *a,
                   lbone_session_t *out, char *err, size_t errlen)
{
    char base[LBONE_MAX_BASE];
    lns_buf_t body;
    int rc;

    if (out)
        memset(out, 0, sizeof *out);
    if (!a || !out || !token || !*token)
        return lbone__fail(err, errlen, LBONE_E_ARG, "L-Bone registration: needs a registry "
                                                     "token");
    if (lbone__base_url(server, base, sizeof base, err, errlen) < 0)
        return LBONE_E_ARG;
    lns_buf_init(&body);
    if ((rc = build_registration(a, &body, err, errlen)) != LBONE_OK) {
        lns_buf_free(&body);
        return rc;
    }
    lbone_http_t h = {.method = "POST", .bearer = token, .body = body.p, .body_len = body.len};
    rc = lbone__http(base, "/v1/depots", &h, err, errlen);
    lns_buf_free(&body);
    if (rc == LBONE_OK && h.status != 201 && h.status != 200)
        rc = lbone__status_error(base, &h, err, errlen);
    if (rc == LBONE_OK) {
        json_t *doc = lbone__parse_answer(base, &h, err, errlen);
        const char *id = json_string_value(json_object_get(doc, "id"));
        const char *secret = json_string_value(json_object_get(doc, "secret"));
        int64_t hb = 0;
        if (!doc) {
            rc = LBONE_E_PROTOCOL;
        } else if (!id || !secret || !*id || strlen(id) >= sizeof out->id || !*secret ||
                   strlen(secret) >= sizeof out->secret ||
                   strspn(id, "0123456789abcdefABCDEF-_") != strlen(id) ||
                   lbone_json_int(json_object_get(doc, "heartbeat_s"), &hb) < 0 || hb < 1 ||
                   hb > 86400) {
            rc = lbone__fail(err, errlen, LBONE_E_PROTOCOL, "%s: registration answer without a "
                                                            "usable id, secret and heartbeat_s", base);
        } else {
            snprintf(out->id, sizeof out->id, "%s", id);
            snprintf(out->secret, sizeof out->secret, "%s", secret);
            out->heartbeat_s = (int)hb;
        }
        json_decref(doc);
    }
    lns_buf_free(&h.answer);
    return rc;
}

int lbone_heartbeat(const char *server, lbone_session_t *s, const lbone_announce_t *a, char *err,
                    size_t errlen)
{
    char base[LBONE_MAX_BASE], path[128];
    lns_buf_t body;
    int rc;

    if (!s || !a || !s->id[0] || !s->secret[0])
        return lbone__fail(err, errlen, LBONE_E_ARG, "L-Bone heartbeat: not registered");
    if (lbone__base_url(server, base, sizeof base, err, errlen) < 0)
        return LBONE_E_ARG;
    snprintf(path, sizeof path, "/v1/depots/%s/heartbeat", s->id);
    lns_buf_init(&body);
    lns_buf_puts(&body, "{");
    put_status(&body, a);
    if (a->leaving) { /* only then: a server from before "leaving" refuses the field */
        put_key(&body, "leaving");
        lns_buf_puts(&body, "true");
    }
    lns_buf_puts(&body, "}");
    if (body.oom) {
        lns_buf_free(&body);
        return lbone__fail(err, errlen, LBONE_E_NOMEM, "L-Bone heartbeat: out of memory");
    }
    lbone_http_t h = {.method = "PUT", .bearer = s->secret, .body = body.p, .body_len = body.len};
    rc = lbone__http(base, path, &h, err, errlen);
    lns_buf_free(&body);
    if (rc == LBONE_OK && h.status != 200 && h.status != 204)
        rc = lbone__status_error(base, &h, err, errlen);
    if (rc == LBONE_OK && h.status == 200 && h.answer.len) {
        /* The L-Bone may change the interval; keep the old one if the answer does not say. */
        char jerr[16];
        int64_t hb;
        json_t *doc = lbone_json_parse(h.answer.p, h.answer.len, jerr, sizeof jerr);
        if (lbone_json_int(json_object_get(doc, "heartbeat_s"), &hb) == 0 && hb >= 1 &&
            hb <= 86400)
            s->heartbeat_s = (int)hb;
        json_decref(doc);
    }
    lns_buf_free(&h.answer);
    return rc;
}

int lbone_unregister(const char *server, const lbone_session_t *s, char *err, size_t errlen)
{
    char base[LBONE_MAX_BASE], path[128];
    int rc;

    if (!s || !s->id[0] || !s->secret[0])
        return lbone__fail(err, errlen, LBONE_E_ARG, "L-Bone unregister: not registered");
    if (lbone__base_url(server, base, sizeof base, err, errlen) < 0)
        return LBONE_E_ARG;
    snprintf(path, sizeof path, "/v1/depots/%s", s->id);
    lbone_http_t h = {.method = "DELETE", .bearer = s->secret};
    rc = lbone__http(base, path, &h, err, errlen);
    if (rc == LBONE_OK && h.status != 204 && h.status != 200)
        rc = lbone__status_error(base, &h, err, errlen);
    lns_buf_free(&h.answer);
    return rc;
}
