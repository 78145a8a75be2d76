/* lbone_srv_query.c -- GET /v1/depots: which depots fit a request, nearest or fastest first.
 *
 * One pass over the in-memory registry under the read lock keeps only depots that are up
 * and fit the filters (free hard and soft space, duration, environment), computes each one's
 * great-circle distance to the resolved location and, for order=bandwidth, the forecast for
 * the requester's network; then the first count by (primary, secondary, tertiary) keys (a
 * bounded heap picks them) are written out.  Unknown or repeated parameters are refused: a
 * typo in a filter must not silently widen the answer.
 *
 * Orders: distance -- nearest first, depots without coordinates last, ties by more free hard
 * space (without a location: most free hard space first); bandwidth -- highest forecast
 * first, depots without a forecast last, ties by distance then free space.
 */
#include "lbone_srv.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lbone_geo.h"
#include "lns_time.h"
#include "lns_units.h"

#define DEFAULT_COUNT 10
#define MAX_COUNT 10000

typedef struct query {
    long count;
    uint64_t hard, soft;
    int64_t duration;
    lbone_env_t want;
    int bandwidth;
    int any_status;           /* status=any: every depot, whatever its status */
    const char *location;
} query_t;

typedef struct cand {
    lbone_depot_t *d;
    double k1, k2, k3;
    double dist, fc;
} cand_t;

static int cmp_cand(const void *a, const void *b)
{
    const cand_t *x = a, *y = b;
    if (x->k1 != y->k1)
        return x->k1 < y->k1 ? -1 : 1;
    if (x->k2 != y->k2)
        return x->k2 < y->k2 ? -1 : 1;
    if (x->k3 != y->k3)
        return x->k3 < y->k3 ? -1 : 1;
    return strcmp(x->d->id, y->d->id);
}

/* Keep the best k of the candidates in c[0..k) (a max-heap on the sort order while
 * scanning, so the worst kept one is at the root), then sort those k: O(n log k) instead of
 * sorting all n when a client asks for 6 of 10,000. */
static void sift_down(cand_t *h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && cmp_cand(&h[l], &h[m]) > 0)
            m = l;
        if (r < n && cmp_cand(&h[r], &h[m]) > 0)
            m = r;
        if (m == i)
            return;
        cand_t t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

static size_t select_best(cand_t *c, size_t n, size_t k)
{
    if (k >= n) {
        if (n > 1)
            qsort(c, n, sizeof *c, cmp_cand);
        return n;
    }
    for (size_t i = k / 2 + 1; i-- > 0;)
        sift_down(c, k, i);
    for (size_t i = k; i < n; i++)
        if (cmp_cand(&c[i], &c[0]) < 0) {
            c[0] = c[i];
            sift_down(c, k, 0);
        }
    qsort(c, k, sizeof *c, cmp_cand);
    return k;
}

static int parse_params(query_t *q, const lbone_kv_t *kv, size_t nkv, lns_buf_t *out)
{
    static const char *const known[] = {"count", "hard", "soft", "duration", "location",
                                        "order", "connection", "monitoring", "power",
                                        "firewall", "status"};
    memset(q, 0, sizeof *q);
    q->count = DEFAULT_COUNT;
    lbone_env_unknown(&q->want);
    for (size_t i = 0; i < nkv; i++) {
        const char *k = kv[i].key, *v = kv[i].value ? kv[i].value : "";
        char why[256];
        size_t j;
        for (j = 0; j < sizeof known / sizeof known[0]; j++)
            if (strcmp(k, known[j]) == 0)
                break;
        if (j == sizeof known / sizeof known[0])
            return lbone_api_error(out, 400, "unknown parameter '%.64s' (count, hard, soft, "
                                             "duration, location, order, connection, "
                                             "monitoring, power, firewall, status)", k);
        for (size_t p = 0; p < i; p++)
            if (strcmp(kv[p].key, k) == 0)
                return lbone_api_error(out, 400, "parameter '%s' given twice", k);
        if (strcmp(k, "count") == 0) {
            char *end;
            q->count = strtol(v, &end, 10);
            if (!*v || *end || q->count < 1 || q->count > MAX_COUNT)
                return lbone_api_error(out, 400, "count: must be 1 to %d", MAX_COUNT);
        } else if (strcmp(k, "hard") == 0 || strcmp(k, "soft") == 0) {
            if (lns_parse_size(v, k[0] == 'h' ? &q->hard : &q->soft) < 0)
                return lbone_api_error(out, 400, "%s: must be bytes (K, M, G, T suffixes allowed)", k);
        } else if (strcmp(k, "duration") == 0) {
            if (lns_parse_seconds(v, &q->duration) < 0)
                return lbone_api_error(out, 400, "duration: must be seconds (s, m, h, d suffixes "
                                                 "allowed)");
        } else if (strcmp(k, "location") == 0) {
            if (!*v || strlen(v) > 200)
                return lbone_api_error(out, 400, "location: empty or too long");
            q->location = v;
        } else if (strcmp(k, "status") == 0) {
            if (strcmp(v, "any") == 0)
                q->any_status = 1;
            else if (strcmp(v, "up") != 0)
                return lbone_api_error(out, 400, "status: must be up or any");
        } else if (strcmp(k, "order") == 0) {
            if (strcmp(v, "bandwidth") == 0)
                q->bandwidth = 1;
            else if (strcmp(v, "distance") != 0)
                return lbone_api_error(out, 400, "order: must be distance or bandwidth");
        } else if (lbone_env_query_param(&q->want, k, v, why, sizeof why) < 0) {
            return lbone_api_error(out, 400, "%s", why);
        }
    }
    return 0;
}

/* "host= name" (keyword case-insensitive, blanks optional): the name, or NULL. */
static const char *host_keyword(const char *loc)
{
    while (*loc == ' ')
        loc++;
    if (strncasecmp(loc, "host", 4) != 0)
        return NULL;
    loc += 4;
    while (*loc == ' ')
        loc++;
    if (*loc != '=')
        return NULL;
    loc++;
    while (*loc == ' ')
        loc++;
    return loc;
}

/* The mean position of the registered depots on host (any status). Under the read lock. */
static int resolve_host(lbone_srv_t *s, const char *host, lbone_place_t *p)
{
    char name[LBONE_MAX_HOST];
    size_t n = strcspn(host, " ");
    double lat = 0, lon = 0;
    int k = 0;
    if (n == 0 || n >= sizeof name || host[n + strspn(host + n, " ")])
        return -1;
    memcpy(name, host, n);
    name[n] = 0;
    for (size_t i = 0; i < s->reg.n; i++) {
        const lbone_depot_t *d = s->reg.v[i];
        if (d->has_loc && strcasecmp(d->host, name) == 0) {
            lat += d->lat;
            lon += d->lon;
            k++;
        }
    }
    if (k == 0)
        return -1;
    p->lat = lat / k;
    p->lon = lon / k;
    snprintf(p->name, sizeof p->name, "host %.120s", name);
    return 0;
}

static void put_place(lns_buf_t *b, const lbone_place_t *p)
{
    lns_buf_puts(b, "{\"lat\":");
    lbone_json_put_number(b, p->lat);
    lns_buf_puts(b, ",\"lon\":");
    lbone_json_put_number(b, p->lon);
    lns_buf_puts(b, ",\"name\":");
    lbone_json_put_string(b, p->name);
    lns_buf_puts(b, "}");
}

int lbone_api_query(lbone_srv_t *s, const char *net, const lbone_kv_t *kv, size_t nkv,
                    lns_buf_t *out)
{
    query_t q;
    lbone_place_t place;
    int has_place = 0, rc;
    const char *hostname = NULL;

    if ((rc = parse_params(&q, kv, nkv, out)) != 0)
        return rc;
    if (q.location && !(hostname = host_keyword(q.location))) {
        char why[256];
        if (lbone_geo_resolve(q.location, &place, why, sizeof why) < 0)
            return lbone_api_error(out, 400, "location: %s", why);
        has_place = 1;
    }

    pthread_rwlock_rdlock(&s->reg.lock);
    if (hostname) {
        if (resolve_host(s, hostname, &place) < 0) {
            pthread_rwlock_unlock(&s->reg.lock);
            return lbone_api_error(out, 400, "location: no registered depot with coordinates "
                                             "on host '%.100s'", hostname);
        }
        has_place = 1;
    }
    cand_t *c = s->reg.n ? malloc(s->reg.n * sizeof *c) : NULL;
    if (s->reg.n && !c) {
        pthread_rwlock_unlock(&s->reg.lock);
        return lbone_api_error(out, 503, "out of memory");
    }
    int64_t now = lns_now_s() * 1000;
    size_t n = 0;
    for (size_t i = 0; i < s->reg.n; i++) {
        lbone_depot_t *d = s->reg.v[i];
        if ((!q.any_status && lbone_srv_status(s, d, now) != LBONE_ST_UP) || d->hard_free < q.hard ||
            d->soft_free < q.soft || d->max_duration < q.duration ||
            !lbone_env_matches(&d->env, &q.want))
            continue;
        cand_t *x = &c[n++];
        x->d = d;
        x->dist = has_place && d->has_loc
                      ? lbone_geo_distance_km(place.lat, place.lon, d->lat, d->lon)
                      : NAN;
        x->fc = q.bandwidth && net ? lbone_hist_forecast(s->hist, net, d->id) : NAN;
        double dist_key = isnan(x->dist) ? INFINITY : x->dist;
        double space_key = -(double)d->hard_free;
        if (q.bandwidth) {
            x->k1 = isnan(x->fc) ? INFINITY : -x->fc;
            x->k2 = dist_key;
            x->k3 = space_key;
        } else {
            x->k1 = has_place ? dist_key : space_key;
            x->k2 = space_key;
            x->k3 = 0;
        }
    }
    n = select_best(c, n, (size_t)q.count);

    lns_buf_puts(out, "{\"depots\":[");
    for (size_t i = 0; i < n; i++) {
        lns_buf_puts(out, i ? ",{" : "{");
        lbone_api_put_depot_fields(out, s, c[i].d, now);
        lns_buf_puts(out, ",\"distance_km\":");
        lbone_json_put_number(out, c[i].dist);
        if (!q.bandwidth && net)
            c[i].fc = lbone_hist_forecast(s->hist, net, c[i].d->id);
        lns_buf_puts(out, ",\"forecast_mbps\":");
        lbone_json_put_number(out, c[i].fc);
        lns_buf_puts(out, "}");
    }
    pthread_rwlock_unlock(&s->reg.lock);
    free(c);
    lns_buf_puts(out, "],\"resolved\":");
    if (has_place)
        put_place(out, &place);
    else
        lns_buf_puts(out, "null");
    lns_buf_puts(out, "}\n");
    return 200;
}
