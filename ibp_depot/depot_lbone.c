/* depot_lbone.c -- the depot announces itself to an L-Bone: register, heartbeat, withdraw.
 *
 * Each resource is one registration (host:port/rid), carrying its totals, its free space and
 * its longest allocation.  One thread registers them at start and then sends a heartbeat
 * with fresh STATUS numbers every interval (the L-Bone's heartbeat_s unless lbone-interval
 * says otherwise).  The L-Bone is never on the depot's critical path: when it is down or
 * refuses, the thread logs (once per change of trouble, not once per attempt), retries
 * with exponential backoff up to a minute, and the depot serves on.  A heartbeat answered
 * 404 means the L-Bone forgot the depot (dropped it after a silence, or lost its registry):
 * the depot registers again at once.  On a clean stop the registrations are deleted, so
 * clients are not sent to a depot that is gone.
 */
#include "depot_lbone.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lbone.h"
#include "lbone_geo.h"
#include "lns_conf.h"
#include "lns_err.h"
#include "lns_log.h"
#include "lns_time.h"
#include "lns_units.h"

#define BACKOFF_MAX_S 60
#define DEFAULT_INTERVAL_S 60

/* The settings (config keys). */
static struct {
    char url[512];
    char token_file[PATH_MAX];
    char token[256];
    char place[256];
    int has_lat, has_lon;
    double lat, lon;
    char contact[256];
    char connection[16];
    int monitoring;
    char power[16];
    int firewall;
    int interval; /* seconds; 0: the L-Bone's */
    int leaving;  /* -1 unset, 0, 1: heartbeats say the depot is leaving */
} set;

/* The announcing thread. */
static struct {
    pthread_t thread;
    int running;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stopping;
    const depot_config_t *cfg;
    depot_store_t *store;
    int port;
    lbone_session_t sess[DEPOT_MAX_RESOURCES]; /* id[0] == 0: not registered */
    char trouble[64]; /* the kind of the last problem logged ("heartbeat -3"), to log each once */
    char pin[72]; /* the depot's TLS pin, "" none */
} run = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

void depot_lbone_reset(void)
{
    memset(&set, 0, sizeof set);
    set.monitoring = -1;
    set.firewall = -1;
    set.leaving = -1;
}

static int copy(char *dst, size_t size, const char *key, const char *v, char *err, size_t errlen)
{
    for (const char *p = v; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return lns_err_set(err, errlen, "%s: '%s' holds a control character", key, v);
    if (strlen(v) >= size) {
        lns_err_set(err, errlen, "%s: value too long (at most %zu bytes)", key, size - 1);
        return -1;
    }
    strcpy(dst, v);
    return 0;
}

static int degrees(const char *key, const char *v, double limit, double *out, char *err,
                   size_t errlen)
{
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (!*v || *end || errno || !isfinite(d) || fabs(d) > limit) {
        lns_err_set(err, errlen, "%s: '%s' is not a number of degrees within +-%.0f", key, v,
                    limit);
        return -1;
    }
    *out = d;
    return 0;
}

int depot_lbone_set(const char *key, const char *v, char *err, size_t errlen)
{
    if (strcmp(key, "lbone") == 0) {
        /* Checked by the client's own parser once all settings are in. */
        return copy(set.url, sizeof set.url, key, v, err, errlen);
    }
    if (strcmp(key, "lbone-token-file") == 0)
        return copy(set.token_file, sizeof set.token_file, key, v, err, errlen);
    if (strcmp(key, "lbone-place") == 0)
        return copy(set.place, sizeof set.place, key, v, err, errlen);
    if (strcmp(key, "lbone-lat") == 0) {
        set.has_lat = 1;
        return degrees(key, v, 90, &set.lat, err, errlen);
    }
    if (strcmp(key, "lbone-lon") == 0) {
        set.has_lon = 1;
        return degrees(key, v, 180, &set.lon, err, errlen);
    }
    if (strcmp(key, "lbone-contact") == 0)
        return copy(set.contact, sizeof set.contact, key, v, err, errlen);
    if (strcmp(key, "lbone-env-connection") == 0) {
        if (!*v || strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") !=
                       strlen(v))
            return lns_err_set(err, errlen,
                               "%s: '%s' is not a connection (T1, T3, OC3, 1G, 10G...)",
                               key, v);
        return copy(set.connection, sizeof set.connection, key, v, err, errlen);
    }
    if (strcmp(key, "lbone-env-monitoring") == 0) {
        char *end;
        long h = strtol(v, &end, 10);
        if (!*v || *end || h < 0 || h > 24)
            return lns_err_set(err, errlen, "%s: '%s' is not 0 to 24 hours a day", key, v);
        set.monitoring = (int)h;
        return 0;
    }
    if (strcmp(key, "lbone-env-power") == 0) {
        if (strcasecmp(v, "none") != 0 && strcasecmp(v, "ups") != 0 &&
            strcasecmp(v, "generator") != 0)
            return lns_err_set(err, errlen, "%s: '%s' is not none, ups or generator", key, v);
        return copy(set.power, sizeof set.power, key, v, err, errlen);
    }
    if (strcmp(key, "lbone-env-firewall") == 0)
        return lns_conf_bool(key, v, &set.firewall, err, errlen);
    if (strcmp(key, "lbone-leaving") == 0)
        return lns_conf_bool(key, v, &set.leaving, err, errlen);
    if (strcmp(key, "lbone-interval") == 0) {
        int64_t s;
        if (lns_parse_seconds(v, &s) < 0 || s < 1 || s > 86400)
            return lns_err_set(err, errlen, "%s: '%s' is not a duration of 1s to 1d", key, v);
        set.interval = (int)s;
        return 0;
    }
    lns_err_set(err, errlen, "unknown setting '%s'", key);
    return -1;
}

static int read_token(char *err, size_t errlen)
{
    char line[sizeof set.token + 2];
    if (lns_conf_first_line("lbone-token-file", set.token_file, line, sizeof line, err,
                            errlen) < 0)
        return -1;
    size_t n = strlen(line);
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)line[i] <= 0x20 || (unsigned char)line[i] >= 0x7f)
            n = 0;
    if (n == 0 || n >= sizeof set.token) {
        lns_err_set(err, errlen, "lbone-token-file: %s: the first line must be the registry token "
                    "(printable, no blanks, under %zu characters)",
                    set.token_file, sizeof set.token);
        return -1;
    }
    strcpy(set.token, line);
    return 0;
}

int depot_lbone_check(char *err, size_t errlen)
{
    if (!set.url[0]) {
        if (set.token_file[0] || set.place[0] || set.has_lat || set.has_lon || set.contact[0] ||
            set.connection[0] || set.monitoring >= 0 || set.power[0] || set.firewall >= 0 ||
            set.interval || set.leaving >= 0) {
            lns_err_set(err, errlen, "lbone: L-Bone settings given but no L-Bone (--lbone URL)");
            return -1;
        }
        return 0;
    }
    char url[512], why[256];
    if (lbone_server_url(set.url, url, sizeof url, why, sizeof why) < 0) {
        lns_err_set(err, errlen, "lbone: %s", why);
        return -1;
    }
    /* the token would cross in cleartext: refused here, in one line at start, rather than
     * by every registration in the log */
    if (lbone_secret_ok(set.url, why, sizeof why) != LBONE_OK) {
        lns_err_set(err, errlen, "lbone: %s", why);
        return -1;
    }
    if (!set.token_file[0]) {
        lns_err_set(err, errlen, "lbone-token-file: needed to register with %s", set.url);
        return -1;
    }
    if (set.has_lat != set.has_lon) {
        lns_err_set(err, errlen, "lbone-lat, lbone-lon: give both or neither");
        return -1;
    }
    if (set.has_lat && set.place[0]) {
        lns_err_set(err, errlen, "lbone-place: give a place or lbone-lat/lbone-lon, not both");
        return -1;
    }
    if (set.place[0]) {
        /* The L-Bone resolves the place; resolving it here too turns a typo into an error
         * at start instead of a refused registration in the log.  Without the gazetteer's
         * data file (logged by it) the L-Bone alone judges. */
        lbone_place_t p;
        int rc = lbone_geo_resolve(set.place, &p, why, sizeof why);
        if (rc < 0 && rc != LBONE_GEO_UNAVAILABLE) {
            lns_err_set(err, errlen, "lbone-place: %s", why);
            return -1;
        }
    }
    return read_token(err, errlen);
}

void depot_lbone_summary(char *buf, size_t size)
{
    if (!set.url[0] || !size)
        return;
    size_t n = strlen(buf);
    if (set.has_lat)
        snprintf(buf + n, size - n, ", L-Bone %s (at %.4f,%.4f)", set.url, set.lat, set.lon);
    else
        snprintf(buf + n, size - n, ", L-Bone %s (place %s)", set.url,
                 set.place[0] ? set.place : "none");
}

/* The announcement of resource rid with its numbers now. */
static void announce(int rid, char *ridtxt, size_t ridsize, lbone_announce_t *a)
{
    depot_res_status_t st;
    lbone_announce_init(a);
    snprintf(ridtxt, ridsize, "%d", rid);
    if (depot_store_status(run.store, rid, &st) != IBP_OK)
        memset(&st, 0, sizeof st);
    a->host = run.cfg->public_host;
    a->port = run.port;
    a->rid = ridtxt;
    a->hard_total = st.hard;
    a->hard_free = st.hard > st.hard_used ? st.hard - st.hard_used : 0;
    a->soft_total = st.soft;
    a->soft_free = st.soft > st.soft_used ? st.soft - st.soft_used : 0;
    a->max_duration = st.max_duration > 0 ? st.max_duration : 0;
    a->has_latlon = set.has_lat;
    a->lat = set.lat;
    a->lon = set.lon;
    a->place = set.place[0] ? set.place : NULL;
    a->contact = set.contact[0] ? set.contact : NULL;
    a->pin = run.pin[0] ? run.pin : NULL;
    a->connection = set.connection[0] ? set.connection : NULL;
    a->monitoring = set.monitoring;
    a->power = set.power[0] ? set.power : NULL;
    a->firewall = set.firewall;
    a->leaving = set.leaving > 0;
}

/* Log a problem once: the same kind again (what failed, and the lbone_code; the text may
 * differ in details such as timings) stays quiet, at debug level. */
static void trouble(const char *what, int code, const char *why)
{
    char kind[sizeof run.trouble];
    snprintf(kind, sizeof kind, "%s %d", what, code);
    if (strcmp(kind, run.trouble) != 0) {
        lns_log(LNS_LOG_WARN, "L-Bone %s: %s (retrying with backoff; the depot serves on)", what,
                why);
        snprintf(run.trouble, sizeof run.trouble, "%s", kind);
    } else {
        lns_log(LNS_LOG_DEBUG, "L-Bone %s: %s", what, why);
    }
}

/* Register or heartbeat every resource once.  1 if all went through. */
static int announce_all(void)
{
    int ok = 1;
    for (int r = 0; r < run.cfg->nres; r++) {
        lbone_announce_t a;
        lbone_session_t *s = &run.sess[r];
        char rid[16], why[1024];
        int rc = LBONE_E_NOTFOUND;
        announce(r, rid, sizeof rid, &a);
        if (s->id[0]) {
            rc = lbone_heartbeat(set.url, s, &a, why, sizeof why);
            if (rc == LBONE_E_NOTFOUND) {
                lns_log(LNS_LOG_INFO, "L-Bone %s forgot resource %d (%s); registering again",
                        set.url, r, s->id);
                s->id[0] = 0;
            } else if (rc != LBONE_OK) {
                trouble("heartbeat", rc, why);
            }
        }
        if (!s->id[0]) {
            rc = lbone_register(set.url, set.token, &a, s, why, sizeof why);
            if (rc == LBONE_OK)
                lns_log(LNS_LOG_INFO, "registered resource %d with L-Bone %s as %s, heartbeat "
                        "every %ds", r, set.url, s->id, set.interval ? set.interval : s->heartbeat_s);
            else
                trouble("registration", rc, why);
        }
        if (rc != LBONE_OK)
            ok = 0;
    }
    if (ok && run.trouble[0]) {
        lns_log(LNS_LOG_INFO, "L-Bone %s answers again", set.url);
        run.trouble[0] = 0;
    }
    return ok;
}

static int interval_s(void)
{
    int iv = 0;
    if (set.interval)
        return set.interval;
    for (int r = 0; r < run.cfg->nres; r++)
        if (run.sess[r].id[0] && run.sess[r].heartbeat_s > 0 &&
            (!iv || run.sess[r].heartbeat_s < iv))
            iv = run.sess[r].heartbeat_s;
    return iv ? iv : DEFAULT_INTERVAL_S;
}

static void *announcer(void *arg)
{
    int backoff = 1;
    pthread_mutex_lock(&run.mu);
    while (!run.stopping) {
        pthread_mutex_unlock(&run.mu);
        int ok = announce_all();
        int iv = interval_s(), wait;
        if (ok) {
            wait = iv;
            backoff = 1;
        } else {
            wait = backoff < iv ? backoff : iv;
            backoff = backoff * 2 > BACKOFF_MAX_S ? BACKOFF_MAX_S : backoff * 2;
        }
        struct timespec ts;
        lns_cond_deadline(&ts, (int64_t)wait * 1000000000LL);
        pthread_mutex_lock(&run.mu);
        while (!run.stopping && pthread_cond_timedwait(&run.cv, &run.mu, &ts) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&run.mu);
    /* Withdraw, quickly: a stopping depot should not wait long on an L-Bone. */
    lbone_set_timeouts(1000, 3000);
    for (int r = 0; r < run.cfg->nres; r++) {
        char why[1024];
        if (!run.sess[r].id[0])
            continue;
        if (lbone_unregister(set.url, &run.sess[r], why, sizeof why) == LBONE_OK)
            lns_log(LNS_LOG_INFO, "withdrew resource %d from L-Bone %s", r, set.url);
        else
            lns_log(LNS_LOG_WARN, "L-Bone withdrawal of resource %d: %s", r, why);
    }
    return arg;
}

int depot_lbone_start(const depot_config_t *cfg, depot_store_t *store, int port,
                      const char *pin, char *err, size_t errlen)
{
    if (!set.url[0])
        return 0;
    snprintf(run.pin, sizeof run.pin, "%s", pin ? pin : "");
    run.cfg = cfg;
    run.store = store;
    run.port = port;
    run.stopping = 0;
    run.trouble[0] = 0;
    memset(run.sess, 0, sizeof run.sess);
    lbone_set_timeouts(2000, 10000);
    int e = pthread_create(&run.thread, NULL, announcer, NULL);
    if (e) {
        lns_err_set(err, errlen, "L-Bone: cannot start the announcing thread: %s", strerror(e));
        return -1;
    }
    run.running = 1;
    return 0;
}

void depot_lbone_stop(void)
{
    if (!run.running)
        return;
    pthread_mutex_lock(&run.mu);
    run.stopping = 1;
    pthread_cond_signal(&run.cv);
    pthread_mutex_unlock(&run.mu);
    pthread_join(run.thread, NULL);
    run.running = 0;
}
