/* lbone.h -- liblbone: the L-Bone's client (docs/lbone-api.md is the HTTP API it speaks).
 *
 * Clients ask an L-Bone for depots (lbone_query_depots) and tell it what throughput they saw
 * (lbone_report_bandwidth); depots announce themselves (lbone_register, lbone_heartbeat,
 * lbone_unregister).  A server is named "https://host:port#sha256:<pin>" (the L-Bone's key
 * pinned), "https://host:port" (a certificate the system trusts), "http://host:port",
 * "host:port" or "host" (http, port LBONE_DEFAULT_PORT); a token or secret never goes over
 * http:// to another host (lbone_secret_ok).  The calls that take a list of servers try
 * them in order and use the first that answers, as LoRS did with its LBONE_SERVER lines: a
 * server that cannot be reached, times out, fails (5xx) or does not speak the API is
 * skipped; one that refuses the request (4xx) ends the search, since any other would refuse
 * it too.
 *
 * Every call is synchronous, thread-safe and returns LBONE_OK (0) or a negative lbone_code,
 * with a one-line reason in err ("http://h:6767: connection refused").
 */
#ifndef LBONE_H
#define LBONE_H

#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(default) /* the library's exports: what this header declares */

#ifndef LBONE_DEFAULT_PORT
#define LBONE_DEFAULT_PORT 6767
#endif

enum lbone_code {
    LBONE_OK = 0,
    LBONE_E_ARG = -1,      /* a bad argument: the caller's mistake */
    LBONE_E_NOMEM = -2,
    LBONE_E_CONNECT = -3,  /* no answer: refused, unreachable, timed out */
    LBONE_E_PROTOCOL = -4, /* an answer, but not the L-Bone API's (bad JSON, odd status) */
    LBONE_E_REFUSED = -5,  /* the L-Bone refused the request (4xx); its reason is in err */
    LBONE_E_AUTH = -6,     /* a token or secret was refused (401, 403) */
    LBONE_E_NOTFOUND = -7, /* no such depot id (404): a depot registers again */
    LBONE_E_SERVER = -8    /* the L-Bone failed (5xx) */
};
const char *lbone_strerror(int code);

/* Timeouts of every later call, in ms (<= 0: keep the current): connecting, and the whole
 * exchange.  Defaults 3,000 and 15,000. */
void lbone_set_timeouts(int connect_ms, int total_ms);

/* The base URL a server name stands for ("host" -> "http://host:6767").  0, or -1 with a
 * reason in err. */
int lbone_server_url(const char *server, char *url, size_t size, char *err, size_t errlen);

/* 0 if a secret (the registry token, a depot's secret) may be sent to server: over https://,
 * or over http:// to this host (127.0.0.0/8, ::1, localhost: tests, local use).  Else
 * LBONE_E_ARG with one line in err that says to name it https://HOST:PORT#sha256:... (the pin
 * lbone_server logs).  Decided from the name alone, before any connection: lbone_register,
 * lbone_heartbeat and lbone_unregister check it so, and depots at start. */
int lbone_secret_ok(const char *server, char *err, size_t errlen);

/* ---- queries ---------------------------------------------------------------------- */

typedef struct lbone_request {
    int count;              /* how many depots; 0: the server's default */
    uint64_t hard, soft;    /* at least this many bytes free (0: no minimum) */
    int64_t duration;       /* allocations may last at least this many seconds (0: any) */
    const char *location;   /* "airport= TYS", "lat,lon", "host= name"...; NULL: none */
    const char *order;      /* "distance" or "bandwidth"; NULL: the server's default */
    /* Environment filters; a depot with a better value also matches. */
    const char *connection; /* "T1", "T3", "OC3", "1G", "10G"...; NULL: any */
    int monitoring;         /* hours per day, 0..24; -1: any */
    const char *power;      /* "none", "ups", "generator"; NULL: any */
    int firewall;           /* 0: only depots not behind a firewall; -1 (or 1): any */
    int any_status;         /* 1: depots of every status (down, unreachable, leaving, ...),
                             * status in each answer's status field; 0: only up ones */
} lbone_request_t;

/* count 0, no minimum, no location, no filters. */
void lbone_request_init(lbone_request_t *req);

/* One depot of an answer.  Unknown numbers are NAN (doubles) or -1 (integers). */
typedef struct lbone_depot_info {
    char id[64];
    char host[256];
    int port;
    char rid[64];
    int64_t hard_free, soft_free; /* bytes */
    int64_t max_duration;         /* seconds */
    double lat, lon;
    char place[256];
    char status[16];              /* "up" in query answers; with any_status also "down",
                                   * "unreachable", "probing", "leaving" */
    double distance_km;           /* from the resolved location */
    double forecast_mbps;         /* the L-Bone's bandwidth forecast for this client */
    int64_t last_heard;           /* epoch seconds */
    char pin[72];                 /* its TLS pin ("sha256:<64 hex>") as it registered it,
                                   * "" if it named none */
} lbone_depot_info_t;

typedef struct lbone_result {
    lbone_depot_info_t *depots; /* in the server's order */
    size_t n;
    int resolved;               /* 1: the location resolved to the place below */
    double lat, lon;
    char place[128];
    char server[512];           /* the L-Bone that answered */
    char *json;                 /* its answer, as received (for `lbone_query --json`) */
} lbone_result_t;

/* Ask the servers in order for depots.  *res is filled on LBONE_OK; free it with
 * lbone_result_free (also safe after an error). */
int lbone_query_depots(const char *const servers[], size_t nservers, const lbone_request_t *req,
                       lbone_result_t *res, char *err, size_t errlen);
void lbone_result_free(lbone_result_t *res);

/* ---- bandwidth reports ------------------------------------------------------------ */

typedef struct lbone_report {
    const char *depot; /* "host:port" as in the exNode */
    uint64_t bytes;
    double seconds;    /* mbps is computed from these two */
} lbone_report_t;

/* Send n reports to the first server that takes them (in requests of up to 256).  Every
 * report needs a depot, bytes > 0 and seconds > 0; the L-Bone ignores depots it does not
 * know. */
int lbone_report_bandwidth(const char *const servers[], size_t nservers,
                           const lbone_report_t *reports, size_t n, char *err, size_t errlen);

/* ---- depots: registration, heartbeats ----------------------------------------------- */

/* What a depot announces.  Unknown: NULL strings, -1 integers. */
typedef struct lbone_announce {
    const char *host;
    int port;
    const char *rid;
    uint64_t hard_total, hard_free, soft_total, soft_free;
    int64_t max_duration;
    int has_latlon;     /* 1: lat/lon below; 0: place (or no location) */
    double lat, lon;
    const char *place;  /* "airport= TYS", resolved by the L-Bone */
    const char *contact;
    const char *pin;    /* the depot's TLS pin ("sha256:<64 hex>"), NULL if it has none */
    const char *connection;
    int monitoring;     /* hours per day */
    const char *power;
    int firewall;       /* 1 behind a firewall, 0 not */
    int leaving;        /* heartbeats only: 1 the depot is leaving (the L-Bone hands it out
                         * no more; keepers move data off it) for as long as its heartbeats
                         * say so; 0 (the default) not */
} lbone_announce_t;

void lbone_announce_init(lbone_announce_t *a);

/* What a registration returns: the depot's id, its secret for heartbeats and deletion, and
 * the interval the L-Bone asks heartbeats at. */
typedef struct lbone_session {
    char id[64];
    char secret[160];
    int heartbeat_s;
} lbone_session_t;

/* POST /v1/depots with the registry token.  Registering the same host:port/rid again
 * replaces the old registration (and its secret). */
int lbone_register(const char *server, const char *token, const lbone_announce_t *a,
                   lbone_session_t *out, char *err, size_t errlen);
/* PUT /v1/depots/{id}/heartbeat with the fresh free space and duration of a (the rest of a
 * is not sent).  LBONE_E_NOTFOUND: the L-Bone forgot the depot; register again.  On
 * LBONE_OK, s->heartbeat_s is the interval now asked for. */
int lbone_heartbeat(const char *server, lbone_session_t *s, const lbone_announce_t *a, char *err,
                    size_t errlen);
/* DELETE /v1/depots/{id} with the depot's secret. */
int lbone_unregister(const char *server, const lbone_session_t *s, char *err, size_t errlen);

#pragma GCC visibility pop
#endif
