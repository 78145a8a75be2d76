/* lbone_srv.h -- lbone_server's internals: settings, the registry, the store, probes,
 * forecasts, rate limits, and the HTTP front.
 *
 * The registry lives in memory (lbone_reg_t, under one rwlock) so that a query reads 10,000
 * depots without touching the disk; SQLite (lbone_db_t) is its durable copy, written through
 * on every change.  Lock order: db->mu, then reg->lock, then hist->mu / probe->mu; never the
 * other way round.  Times kept on disk are epoch milliseconds (they must survive restarts);
 * probe scheduling uses the monotonic clock.
 */
#ifndef LNS_LBONE_SRV_H
#define LNS_LBONE_SRV_H

#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "lns_buf.h"
#include "lbone_json.h"
#include "lns_daemon.h"
#include "lns_reqclock.h"

#define LBONE_DEFAULT_PORT 6767
#define LBONE_ID_LEN 16      /* hex characters of a depot id */
#define LBONE_SECRET_LEN 64  /* hex characters of a depot secret */
#define LBONE_MAX_HOST 256
#define LBONE_MAX_RID 64
#define LBONE_MAX_TEXT 256   /* contact, place */

enum lbone_exit { /* the daemons' set (lns_daemon.h), as ibp_depot's */
    LBONE_EXIT_OK = LNS_EXIT_OK,
    LBONE_EXIT_RUNTIME = LNS_EXIT_RUNTIME,
    LBONE_EXIT_CONFIG = LNS_EXIT_CONFIG,
    LBONE_EXIT_STORAGE = LNS_EXIT_STORAGE, /* the database */
    LBONE_EXIT_NETWORK = LNS_EXIT_NETWORK,
    LBONE_EXIT_DAEMON = LNS_EXIT_DAEMON
};

/* ---- settings (lbone_srv_config.c) --------------------------------------------------- */

enum { LBONE_CFG_OK = 0, LBONE_CFG_EXIT = 1, LBONE_CFG_ERR = -1 };

typedef struct lbone_srv_config {
    char config_file[PATH_MAX];
    char listen[256];
    int port;
    char port_file[PATH_MAX];
    char db[PATH_MAX];
    char token_file[PATH_MAX];
    char geo_data[PATH_MAX];   /* "" = the default (lbone_geo.h) */
    int heartbeat_s;           /* interval told to depots */
    int down_after_s;          /* 0 = 3 heartbeats */
    int drop_after_s;
    int probe_interval_s;      /* 0 = no STATUS probes (depots count as reachable) */
    int probe_threads;
    int probe_timeout_s;
    int threads;               /* HTTP worker threads */
    int max_connections;
    int max_per_address;       /* from one client address; 0 = no limit (-1 before the
                                  settings are read: then a quarter of max_connections) */
    int idle_timeout_s;
    int request_timeout_s;     /* a whole request (head and body) within this */
    uint64_t max_body;
    int report_rate;           /* POST /v1/reports per address per minute */
    int max_pairs;             /* (network, depot) histories kept */
    char log_file[PATH_MAX];
    int log_level;
    char pid_file[PATH_MAX];
    char tls_key[PATH_MAX];    /* HTTPS with this key (default DB.key); "" with plain_http */
    char tls_cert[PATH_MAX];   /* "": self-signed for the key */
    int plain_http;            /* --plain-http: no TLS (tokens cross in cleartext) */
    char pin_file[PATH_MAX];   /* write the key's pin here before the port file */
    int check_config;
} lbone_srv_config_t;

void lbone_config_init(lbone_srv_config_t *cfg);
/* Flags over the file; LBONE_CFG_OK, LBONE_CFG_EXIT (--help/--version done) or LBONE_CFG_ERR. */
int lbone_config_args(lbone_srv_config_t *cfg, int argc, char **argv, char *err, size_t errlen);
void lbone_config_summary(const lbone_srv_config_t *cfg, char *buf, size_t size);

/* ---- secrets (lbone_srv_auth.c) ------------------------------------------------------ */

#define LBONE_HASH_LEN 32
void lbone_sha256(const void *data, size_t len, uint8_t out[LBONE_HASH_LEN]);
/* n random bytes as 2n lowercase hex characters plus NUL into out.  0 or -1. */
int lbone_random_hex(char *out, size_t nbytes);
/* Constant time in the content: compares SHA-256(presented) with hash. */
int lbone_secret_matches(const char *presented, const uint8_t hash[LBONE_HASH_LEN]);
/* The token from the first line of path (at least 16 printable characters). 0 or -1. */
int lbone_token_load(const char *path, uint8_t hash[LBONE_HASH_LEN], char *err, size_t errlen);

/* ---- environment attributes (lbone_srv_env.c) ---------------------------------------- */

/* Each field: -1 unknown (depot) or any (filter).  Larger is better for all four:
 * connection is an index into a table ordered by speed, power none < ups < generator,
 * firewall is stored as "open" (1 = not behind a firewall). */
typedef struct lbone_env {
    int connection;
    int monitoring; /* hours per day, 0..24 */
    int power;
    int open;
} lbone_env_t;

void lbone_env_unknown(lbone_env_t *e);
int lbone_env_connection_parse(const char *s);  /* index, or -1 */
const char *lbone_env_connection_name(int idx); /* NULL for -1 */
int lbone_env_power_parse(const char *s);
const char *lbone_env_power_name(int idx);
/* The registration's "env" object.  0, or -1 and a reason. */
int lbone_env_from_json(json_t *v, lbone_env_t *out, char *err, size_t errlen);
/* One query parameter (connection, monitoring, power, firewall) into want.  1 if key is an
 * environment key and v is good, 0 if key is not one, -1 bad value (reason in err). */
int lbone_env_query_param(lbone_env_t *want, const char *key, const char *v, char *err,
                          size_t errlen);
/* 1 when every attribute of have is at least what want asks. */
int lbone_env_matches(const lbone_env_t *have, const lbone_env_t *want);
void lbone_env_put_json(lns_buf_t *b, const lbone_env_t *e);

/* ---- depots and the registry (lbone_srv_registry.c) ---------------------------------- */

enum lbone_probe_state { LBONE_PROBE_UNKNOWN = 0, LBONE_PROBE_OK = 1, LBONE_PROBE_FAILED = 2 };
enum lbone_status { LBONE_ST_UP, LBONE_ST_DOWN, LBONE_ST_UNREACHABLE, LBONE_ST_PROBING,
                    LBONE_ST_LEAVING };

typedef struct lbone_depot {
    /* registered (persistent) */
    char id[LBONE_ID_LEN + 1];
    char host[LBONE_MAX_HOST];
    int port;
    char rid[LBONE_MAX_RID];
    uint64_t hard_total, hard_free, soft_total, soft_free;
    int64_t max_duration;
    int has_loc;
    double lat, lon;
    char place[LBONE_MAX_TEXT];
    char contact[LBONE_MAX_TEXT];
    char pin[72];            /* its TLS pin, "" if it named none */
    lbone_env_t env;
    uint8_t secret_hash[LBONE_HASH_LEN];
    int64_t registered_ms, last_heard_ms; /* epoch */
    /* runtime */
    int leaving;             /* its heartbeats say it is leaving: not handed out, and
                              * keepers move data off it (not stored: every heartbeat
                              * repeats it) */
    uint64_t gen;            /* bumped by each registration: stale probe results are dropped */
    int probe_state;
    int probe_queued;
    int64_t probe_last_ms;   /* epoch ms of the last finished probe, 0 = none */
    int64_t probe_next_mono; /* monotonic ms when the next periodic probe is due */
    char probe_error[128];
    /* registry links */
    size_t idx;
    struct lbone_depot *next_id, *next_key;
} lbone_depot_t;

typedef struct lbone_reg {
    pthread_rwlock_t lock;
    lbone_depot_t **v;
    size_t n, cap;
    lbone_depot_t **by_id, **by_key; /* chained hash tables of nbuckets */
    size_t nbuckets;
} lbone_reg_t;

int lbone_reg_init(lbone_reg_t *r);
void lbone_reg_free(lbone_reg_t *r);
/* Caller holds the write lock. */
lbone_depot_t *lbone_reg_find_id(const lbone_reg_t *r, const char *id);
lbone_depot_t *lbone_reg_find_key(const lbone_reg_t *r, const char *host, int port,
                                  const char *rid);
int lbone_reg_insert(lbone_reg_t *r, lbone_depot_t *d);  /* takes ownership; 0 or -1 */
void lbone_reg_remove(lbone_reg_t *r, lbone_depot_t *d); /* frees d */

/* ---- the SQLite store (lbone_srv_db.c) ----------------------------------------------- */

typedef struct lbone_db lbone_db_t;

lbone_db_t *lbone_db_open(const char *path, char *err, size_t errlen);
void lbone_db_close(lbone_db_t *db);
/* Serializes every write; taken before the registry lock. */
void lbone_db_lock(lbone_db_t *db);
void lbone_db_unlock(lbone_db_t *db);
/* Load every depot into r (probe state unknown).  0 or -1. */
int lbone_db_load(lbone_db_t *db, lbone_reg_t *r, char *err, size_t errlen);
/* Write d in full (insert or replace by id).  With the db lock held.  0 or -1. */
int lbone_db_put(lbone_db_t *db, const lbone_depot_t *d);
int lbone_db_heartbeat(lbone_db_t *db, const lbone_depot_t *d);
int lbone_db_delete(lbone_db_t *db, const char *id);
/* Append one measurement and keep only the newest keep of its pair. */
int lbone_db_measurement(lbone_db_t *db, const char *net, const char *depot_id, int64_t t_ms,
                         double mbps, int keep);
/* Feed every stored measurement, oldest first, to fn. */
int lbone_db_each_measurement(lbone_db_t *db,
                              void (*fn)(void *arg, const char *net, const char *depot_id,
                                         double mbps),
                              void *arg);
const char *lbone_db_error(lbone_db_t *db);

/* ---- bandwidth forecasts (lbone_srv_forecast.c: the NWS-style predictors) ------------ */

#define LBONE_FC_KEEP 32      /* measurements kept per series */
#define LBONE_FC_MEDIAN_WIN 21
#define LBONE_FC_RECENT 10    /* forecasts whose errors make the "recent error" */

enum lbone_fc_predictor {
    LBONE_FC_LAST,
    LBONE_FC_MEAN,
    LBONE_FC_MEDIAN,
    LBONE_FC_EXP_SLOW,
    LBONE_FC_EXP_FAST,
    LBONE_FC_NPRED
};

typedef struct lbone_fc {
    double hist[LBONE_FC_KEEP]; /* ring of the newest measurements */
    int64_t n;                  /* measurements seen */
    int head;                   /* next slot of hist */
    double sum;                 /* of all measurements, for the running mean */
    double exp_slow, exp_fast;
    double cum_err[LBONE_FC_NPRED]; /* sum of absolute errors of all forecasts */
    double recent[LBONE_FC_NPRED][LBONE_FC_RECENT]; /* ring of the newest absolute errors */
    int64_t nerr;               /* forecasts judged so far */
} lbone_fc_t;

void lbone_fc_init(lbone_fc_t *f);
/* Judge every predictor's forecast against mbps, then learn it. */
void lbone_fc_add(lbone_fc_t *f, double mbps);
/* What predictor p forecasts now; NAN before any measurement. */
double lbone_fc_predict(const lbone_fc_t *f, int p);
/* The predictor with the smallest recent mean absolute error (ties: smaller cumulative
 * error, then the lower number); LBONE_FC_LAST until one forecast has been judged. */
int lbone_fc_best(const lbone_fc_t *f);
/* The best predictor's forecast (NAN when empty); *pred (may be NULL) gets which. */
double lbone_fc_forecast(const lbone_fc_t *f, int *pred);
double lbone_fc_recent_error(const lbone_fc_t *f, int p);
double lbone_fc_cum_error(const lbone_fc_t *f, int p);
const char *lbone_fc_name(int p);

/* ---- measurement history per (client network, depot) (lbone_srv_history.c) ----------- */

typedef struct lbone_hist lbone_hist_t;

lbone_hist_t *lbone_hist_new(int max_pairs);
void lbone_hist_free(lbone_hist_t *h);
/* Add a measurement; 0, or -1 when the table is full and the pair is new. */
int lbone_hist_add(lbone_hist_t *h, const char *net, const char *depot_id, double mbps);
/* The forecast for the pair, or NAN. */
double lbone_hist_forecast(lbone_hist_t *h, const char *net, const char *depot_id);
/* JSON array of every network's summary for one depot. */
void lbone_hist_put_depot(lbone_hist_t *h, const char *depot_id, lns_buf_t *b);
void lbone_hist_forget_depot(lbone_hist_t *h, const char *depot_id);
size_t lbone_hist_pairs(lbone_hist_t *h);
/* "a.b.c.0/24" or "x:x:x::/48" for a client address (IPv4-mapped IPv6 counts as IPv4). */
int lbone_client_net(const void *sockaddr, char *out, size_t size);

/* ---- per-address rate limit (lbone_srv_ratelimit.c) ---------------------------------- */

typedef struct lbone_rl lbone_rl_t;
/* per_minute requests per address, bursts of as many. */
lbone_rl_t *lbone_rl_new(int per_minute);
void lbone_rl_free(lbone_rl_t *rl);
/* 1 if the address may make a request now (and counts it), 0 if over the limit. */
int lbone_rl_allow(lbone_rl_t *rl, const char *addr, int64_t now_ms);

/* ---- the server (lbone_srv_core.c, lbone_srv_probe.c, lbone_srv_http.c) -------------- */

typedef struct lbone_prober lbone_prober_t;

typedef struct lbone_srv {
    const lbone_srv_config_t *cfg;
    uint8_t token_hash[LBONE_HASH_LEN];
    lbone_db_t *db;
    lbone_reg_t reg;
    lbone_hist_t *hist;
    lbone_rl_t *rl;
    lbone_prober_t *prober;
    struct MHD_Daemon *mhd;
    lns_reqclock_t *deadline; /* the request clock of the HTTP front */
    int port;
    char *tls_cert, *tls_key; /* PEM texts for HTTPS, NULL: plain HTTP (--plain-http) */
} lbone_srv_t;

int lbone_srv_down_after_s(const lbone_srv_config_t *cfg);
/* Status of d now; caller holds the registry lock (read is enough). */
int lbone_srv_status(const lbone_srv_t *s, const lbone_depot_t *d, int64_t now_ms);
const char *lbone_status_name(int st);

/* The registry's operations (lbone_srv_core.c).  Each returns an HTTP status code and, on
 * failure, a reason in err. */
int lbone_core_register(lbone_srv_t *s, lbone_depot_t *in, char *id, char *secret,
                        char *err, size_t errlen);
/* Fields of upd flagged in mask replace the depot's; see LBONE_HB_*. */
enum { LBONE_HB_HARD_TOTAL = 1, LBONE_HB_HARD_FREE = 2, LBONE_HB_SOFT_TOTAL = 4,
       LBONE_HB_SOFT_FREE = 8, LBONE_HB_MAX_DURATION = 16, LBONE_HB_LEAVING = 32 };
int lbone_core_heartbeat(lbone_srv_t *s, const char *id, const char *bearer,
                         const lbone_depot_t *upd, int mask, char *err, size_t errlen);
int lbone_core_delete(lbone_srv_t *s, const char *id, const char *bearer, char *err,
                      size_t errlen);
/* Drop every depot not heard from within drop-after; returns how many. */
int lbone_core_sweep(lbone_srv_t *s, int64_t now_ms);

/* Probes (lbone_srv_probe.c): a scheduler thread (also runs the sweep) and workers. */
int lbone_probe_start(lbone_srv_t *s, char *err, size_t errlen);
void lbone_probe_stop(lbone_srv_t *s);
/* Queue a probe of d now (caller holds the registry write lock). */
void lbone_probe_enqueue(lbone_srv_t *s, lbone_depot_t *d);

/* API handlers (lbone_srv_api.c, lbone_srv_query.c, lbone_srv_page.c): each fills body
 * (JSON or HTML) and returns the HTTP status. */
int lbone_api_register(lbone_srv_t *s, const char *bearer, const char *body, size_t len,
                       lns_buf_t *out);
int lbone_api_heartbeat(lbone_srv_t *s, const char *id, const char *bearer, const char *body,
                        size_t len, lns_buf_t *out);
int lbone_api_delete(lbone_srv_t *s, const char *id, const char *bearer, lns_buf_t *out);
int lbone_api_depot(lbone_srv_t *s, const char *id, lns_buf_t *out);
int lbone_api_reports(lbone_srv_t *s, const char *net, const char *body, size_t len,
                      lns_buf_t *out);
/* Query parameters as (key, value) pairs, already URL-decoded. */
typedef struct lbone_kv {
    const char *key, *value;
} lbone_kv_t;
int lbone_api_query(lbone_srv_t *s, const char *net, const lbone_kv_t *kv, size_t nkv,
                    lns_buf_t *out);
int lbone_page_status(lbone_srv_t *s, lns_buf_t *out);
/* {"error": "..."} */
int lbone_api_error(lns_buf_t *out, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Fields of d shared by the query and the single-depot answers (no braces). */
void lbone_api_put_depot_fields(lns_buf_t *b, const lbone_srv_t *s, const lbone_depot_t *d,
                                int64_t now_ms);

/* The HTTP front (lbone_srv_http.c). */
int lbone_http_start(lbone_srv_t *s, char *err, size_t errlen);
void lbone_http_stop(lbone_srv_t *s);

#endif
