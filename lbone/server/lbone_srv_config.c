/* lbone_srv_config.c -- lbone_server's settings: command-line flags and the config file.
 *
 * As for ibp_depot: every setting has one name, the long flag name, which is also its key in
 * the config file ("key = value", '#' starts a comment).  The file is read first and flags
 * override it.  A bad value is one line naming the setting and the reason; nothing is
 * guessed.  Durations take s/m/h/d suffixes, sizes K/M/G/T.
 */
#include "lbone_srv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ibp.h"
#include "lns_conf.h"
#include "lns_err.h"
#include "lns_log.h"
#include "lns_units.h"
#include "lns_version.h"

void lbone_config_init(lbone_srv_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->port = LBONE_DEFAULT_PORT;
    snprintf(cfg->db, sizeof cfg->db, "/var/lib/lns/lbone.db");
    cfg->heartbeat_s = 60;
    cfg->down_after_s = 0;
    cfg->drop_after_s = 7 * 86400;
    cfg->probe_interval_s = 600;
    cfg->probe_threads = 16;
    cfg->probe_timeout_s = 5;
    cfg->threads = 4;
    cfg->max_connections = 1024;
    cfg->idle_timeout_s = 30;
    cfg->max_body = 64 * 1024;
    cfg->report_rate = 60;
    cfg->max_pairs = 200000;
    cfg->log_level = LNS_LOG_INFO;
}

static int set_int(const char *key, const char *v, long lo, long hi, int *out, char *err,
                   size_t errlen)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (!*v || *end || errno || x < lo || x > hi)
        return lns_err_set(err, errlen,
                           "%s: '%s' is not a whole number from %ld to %ld", key, v, lo, hi);
    *out = (int)x;
    return 0;
}

static int set_secs(const char *key, const char *v, int64_t lo, int64_t hi, int *out, char *err,
                    size_t errlen)
{
    int64_t x;
    if (lns_parse_seconds(v, &x) < 0 || x < lo || x > hi)
        return lns_err_set(err, errlen, "%s: '%s' is not a duration from %llds to %llds", key, v,
                           (long long)lo, (long long)hi);
    *out = (int)x;
    return 0;
}

int lbone_config_set(lbone_srv_config_t *cfg, const char *key, const char *v, char *err,
                     size_t errlen)
{
    static const int64_t year = 366 * 86400;
    if (strcmp(key, "listen") == 0)
        return lns_conf_str(key, v, cfg->listen, sizeof cfg->listen, err, errlen);
    if (strcmp(key, "port") == 0)
        return set_int(key, v, 0, 65535, &cfg->port, err, errlen);
    if (strcmp(key, "port-file") == 0)
        return lns_conf_str(key, v, cfg->port_file, sizeof cfg->port_file, err, errlen);
    if (strcmp(key, "db") == 0) {
        if (!*v)
            return lns_err_set(err, errlen, "db: empty path");
        return lns_conf_str(key, v, cfg->db, sizeof cfg->db, err, errlen);
    }
    if (strcmp(key, "token-file") == 0)
        return lns_conf_str(key, v, cfg->token_file, sizeof cfg->token_file, err, errlen);
    if (strcmp(key, "geo-data") == 0)
        return lns_conf_str(key, v, cfg->geo_data, sizeof cfg->geo_data, err, errlen);
    if (strcmp(key, "heartbeat") == 0)
        return set_secs(key, v, 1, 86400, &cfg->heartbeat_s, err, errlen);
    if (strcmp(key, "down-after") == 0)
        return set_secs(key, v, 1, year, &cfg->down_after_s, err, errlen);
    if (strcmp(key, "drop-after") == 0)
        return set_secs(key, v, 1, 10 * year, &cfg->drop_after_s, err, errlen);
    if (strcmp(key, "probe-interval") == 0)
        return set_secs(key, v, 0, year, &cfg->probe_interval_s, err, errlen);
    if (strcmp(key, "probe-threads") == 0)
        return set_int(key, v, 1, 1024, &cfg->probe_threads, err, errlen);
    if (strcmp(key, "probe-timeout") == 0)
        return set_secs(key, v, 1, 600, &cfg->probe_timeout_s, err, errlen);
    if (strcmp(key, "threads") == 0)
        return set_int(key, v, 1, 256, &cfg->threads, err, errlen);
    if (strcmp(key, "max-connections") == 0)
        return set_int(key, v, 1, 100000, &cfg->max_connections, err, errlen);
    if (strcmp(key, "idle-timeout") == 0)
        return set_secs(key, v, 1, 86400, &cfg->idle_timeout_s, err, errlen);
    if (strcmp(key, "max-body") == 0) {
        uint64_t x;
        if (lns_parse_size(v, &x) < 0 || x < 1024 || x > 16 * 1024 * 1024)
            return lns_err_set(err, errlen, "max-body: '%s' is not a size from 1K to 16M", v);
        cfg->max_body = x;
        return 0;
    }
    if (strcmp(key, "report-rate") == 0)
        return set_int(key, v, 1, 1000000, &cfg->report_rate, err, errlen);
    if (strcmp(key, "max-pairs") == 0)
        return set_int(key, v, 1, 100000000, &cfg->max_pairs, err, errlen);
    if (strcmp(key, "log-file") == 0)
        return lns_conf_str(key, v, cfg->log_file, sizeof cfg->log_file, err, errlen);
    if (strcmp(key, "log-level") == 0) {
        int l = lns_log_level_parse(v);
        if (l < 0)
            return lns_err_set(err, errlen,
                               "log-level: '%s' is not error, warn, info or debug", v);
        cfg->log_level = l;
        return 0;
    }
    if (strcmp(key, "pid-file") == 0)
        return lns_conf_str(key, v, cfg->pid_file, sizeof cfg->pid_file, err, errlen);
    return lns_err_set(err, errlen, "unknown setting '%s'", key);
}

static int conf_set(void *arg, const char *key, const char *value, char *err, size_t errlen)
{
    return lbone_config_set(arg, key, value, err, errlen);
}

int lbone_config_file(lbone_srv_config_t *cfg, const char *path, char *err, size_t errlen)
{
    return lns_conf_read(path, conf_set, cfg, err, errlen);
}

static const char usage_text[] =
    "Usage: lbone_server --token-file FILE [options]\n"
    "The L-Bone: a registry of IBP depots that clients query by space, time, place and\n"
    "bandwidth (see lbone_server(8) and docs/lbone-api.md).\n"
    "\n"
    "  -c, --config FILE          read settings from FILE (flags override it)\n"
    "  -l, --listen ADDR          address to listen on (default: all)\n"
    "  -p, --port N               TCP port (default 6767; 0 = any free port)\n"
    "      --port-file FILE       write the bound port to FILE once serving\n"
    "      --db FILE              SQLite registry (default /var/lib/lns/lbone.db)\n"
    "      --token-file FILE      registry token depots must present (first line; required)\n"
    "      --geo-data FILE        gazetteer records instead of the built-in ones\n"
    "      --heartbeat DUR        heartbeat interval told to depots (default 60s)\n"
    "      --down-after DUR       not heard from this long: unavailable (default 3 heartbeats)\n"
    "      --drop-after DUR       not heard from this long: removed (default 7d)\n"
    "      --probe-interval DUR   IBP STATUS probe of each depot (default 10m; 0 = no probes,\n"
    "                             depots count as reachable: for benchmarks only)\n"
    "      --probe-threads N      probes in parallel (default 16)\n"
    "      --probe-timeout DUR    a probe's connect and reply timeout (default 5s)\n"
    "      --threads N            HTTP worker threads (default 4)\n"
    "      --max-connections N    simultaneous HTTP connections (default 1024)\n"
    "      --idle-timeout DUR     close idle HTTP connections after (default 30s)\n"
    "      --max-body SIZE        largest request body (default 64K)\n"
    "      --report-rate N        bandwidth reports per client address per minute (default 60)\n"
    "      --max-pairs N          (client network, depot) histories kept (default 200000)\n"
    "      --log-file FILE        diagnostic log (default stderr)\n"
    "      --log-level LEVEL      error, warn, info or debug (default info)\n"
    "      --pid-file FILE        write the process id to FILE\n"
    "      --check-config         validate the settings, print a summary, exit\n"
    "  -h, --help                 show this help\n"
    "  -V, --version              show the version\n";

static const lns_conf_opt_t opts[] = {
    {"config", 'c', 1},
    {"listen", 'l', 1},
    {"port", 'p', 1},
    {"port-file", 0, 1},
    {"db", 0, 1},
    {"token-file", 0, 1},
    {"geo-data", 0, 1},
    {"heartbeat", 0, 1},
    {"down-after", 0, 1},
    {"drop-after", 0, 1},
    {"probe-interval", 0, 1},
    {"probe-threads", 0, 1},
    {"probe-timeout", 0, 1},
    {"threads", 0, 1},
    {"max-connections", 0, 1},
    {"idle-timeout", 0, 1},
    {"max-body", 0, 1},
    {"report-rate", 0, 1},
    {"max-pairs", 0, 1},
    {"log-file", 0, 1},
    {"log-level", 0, 1},
    {"pid-file", 0, 1},
    {"check-config", 0, 0},
    {"help", 'h', 0},
    {"version", 'V', 0},
    {NULL, 0, 0}};

static const lns_conf_cli_t cli = {usage_text, "lbone_server (lns) " LNS_VERSION "\n", opts};

/* A setting from the command line: the file ("config") comes before every flag. */
static int args_set(void *arg, const char *key, const char *value, char *err, size_t errlen)
{
    lbone_srv_config_t *cfg = arg;
    if (strcmp(key, "config") == 0)
        return lns_conf_str(key, value, cfg->config_file, sizeof cfg->config_file, err, errlen) < 0
                   ? -1
                   : lbone_config_file(cfg, value, err, errlen);
    if (strcmp(key, "check-config") == 0) {
        cfg->check_config = 1;
        return 0;
    }
    return lbone_config_set(cfg, key, value, err, errlen);
}

int lbone_config_args(lbone_srv_config_t *cfg, int argc, char **argv, char *err, size_t errlen)
{
    int rc;

    lbone_config_init(cfg);
    rc = lns_conf_args(&cli, argc, argv, args_set, cfg, err, errlen);
    if (rc != LNS_CONF_OK)
        return rc == LNS_CONF_EXIT ? LBONE_CFG_EXIT : LBONE_CFG_ERR;
    if (!cfg->token_file[0])
        return lns_err_set(err, errlen,
                           "token-file: not set (registration needs a registry token)");
    if (lbone_srv_down_after_s(cfg) > cfg->drop_after_s)
        return lns_err_set(err, errlen,
                           "drop-after (%ds) must not be shorter than down-after (%ds)",
                           cfg->drop_after_s, lbone_srv_down_after_s(cfg));
    return LBONE_CFG_OK;
}

void lbone_config_summary(const lbone_srv_config_t *cfg, char *buf, size_t size)
{
    snprintf(buf, size,
             "listen %s:%d, db %s, heartbeat %ds, down after %ds, dropped after %ds, "
             "probes %s (every %ds, %d threads, timeout %ds), %d HTTP threads, "
             "max %d connections, max body %llu, %d reports/min per address",
             cfg->listen[0] ? cfg->listen : "*", cfg->port, cfg->db, cfg->heartbeat_s,
             lbone_srv_down_after_s(cfg), cfg->drop_after_s,
             cfg->probe_interval_s ? "on" : "OFF", cfg->probe_interval_s, cfg->probe_threads,
             cfg->probe_timeout_s, cfg->threads, cfg->max_connections,
             (unsigned long long)cfg->max_body, cfg->report_rate);
}
