/* lbone_srv_config.c -- lbone_server's settings: command-line flags and the config file.
 *
 * As for ibp_depot: every setting has one name, the long flag name, which is also its key in
 * the config file ("key = value", '#' starts a comment).  The file is read first and flags
 * override it.  A bad value is one line naming the setting and the reason; nothing is
 * guessed.  Durations take s/m/h/d suffixes, sizes K/M/G/T.  Each setting is declared once,
 * in settings[] below (lns_conf.h).
 */
#include "lbone_srv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ibp.h"
#include "lns_conf.h"
#include "lns_daemon.h"
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
    cfg->max_connections = 0; /* the open-file limit, less some for the database and logs */
    cfg->max_per_address = -1;
    cfg->idle_timeout_s = 30;
    cfg->request_timeout_s = 10;
    cfg->max_body = 64 * 1024;
    cfg->report_rate = 60;
    cfg->max_pairs = 200000;
    cfg->log_level = LNS_LOG_INFO;
}

static int set_db(void *arg, const char *key, const char *v, char *err, size_t errlen)
{
    lbone_srv_config_t *cfg = arg;
    if (!*v)
        return lns_err_set(err, errlen, "db: empty path");
    return lns_conf_str(key, v, cfg->db, sizeof cfg->db, err, errlen);
}

static int set_max_body(void *arg, const char *key, const char *v, char *err, size_t errlen)
{
    lbone_srv_config_t *cfg = arg;
    uint64_t x;
    (void)key;
    if (lns_parse_size(v, &x) < 0 || x < 1024 || x > 16 * 1024 * 1024)
        return lns_err_set(err, errlen, "max-body: '%s' is not a size from 1K to 16M", v);
    cfg->max_body = x;
    return 0;
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
    "      --pin-file FILE        write the HTTPS pin (sha256:...) to FILE, before the\n"
    "                             port file\n"
    "      --db FILE              SQLite registry (default /var/lib/lns/lbone.db)\n"
    "      --token-file FILE      registry token depots must present (first line; required)\n"
    "      --geo-data FILE        gazetteer records instead of share/lns/gazetteer.txt\n"
    "      --heartbeat DUR        heartbeat interval told to depots (default 60s)\n"
    "      --down-after DUR       not heard from this long: unavailable (default 3 heartbeats)\n"
    "      --drop-after DUR       not heard from this long: removed (default 7d)\n"
    "      --probe-interval DUR   IBP STATUS probe of each depot (default 10m; 0 = no probes,\n"
    "                             depots count as reachable: for benchmarks only)\n"
    "      --probe-threads N      probes in parallel (default 16)\n"
    "      --probe-timeout DUR    a probe's connect and reply timeout (default 5s)\n"
    "      --threads N            HTTP worker threads (default 4)\n"
    "      --max-connections N    simultaneous HTTP connections (default 0: the open-file\n"
    "                             limit less 256; once all but a quarter are open, the\n"
    "                             oldest unfinished requests are closed to make room)\n"
    "      --max-per-address N    of them from one client address (default a quarter of\n"
    "                             max-connections; 0 = no limit)\n"
    "      --idle-timeout DUR     close HTTP connections inactive for (default 30s)\n"
    "      --request-timeout DUR  close connections that have not sent a whole request\n"
    "                             within (default 10s; idle keep-alive ones too)\n"
    "      --max-body SIZE        largest request body (default 64K)\n"
    "      --report-rate N        bandwidth reports per client address per minute (default 60)\n"
    "      --max-pairs N          (client network, depot) histories kept (default 200000)\n"
    "      --log-file FILE        diagnostic log (default stderr)\n"
    "      --log-level LEVEL      error, warn, info or debug (default info)\n"
    "      --pid-file FILE        write the process id to FILE\n"
    "      --tls-key FILE         the HTTPS key, made (Ed25519, mode 0600) if missing, refused\n"
    "                             if others may read it; its pin is logged: clients give\n"
    "                             it as https://HOST:PORT#sha256:... (default DB.key)\n"
    "      --tls-cert FILE        a CA's certificate for the key (default self-signed)\n"
    "      --plain-http           serve plain HTTP, no TLS: registry tokens and depot\n"
    "                             secrets cross readable (loopback tests, benchmarks)\n"
    "      --check-config         validate the settings, print a summary, exit\n"
    "  -h, --help                 show this help\n"
    "  -V, --version              show the version\n";

#define F(member) LNS_CONF_FIELD(lbone_srv_config_t, member)
#define YEAR (366LL * 86400)

static const lns_conf_setting_t settings[] = {
    {"config", 'c', LNS_CONF_FILE, F(config_file)},
    {"listen", 'l', LNS_CONF_STR, F(listen)},
    {"port", 'p', LNS_CONF_INT, F(port), 0, 65535},
    {"port-file", 0, LNS_CONF_STR, F(port_file)},
    {"db", 0, LNS_CONF_FUNC, .fn = set_db},
    {"token-file", 0, LNS_CONF_STR, F(token_file)},
    {"geo-data", 0, LNS_CONF_STR, F(geo_data)},
    {"heartbeat", 0, LNS_CONF_SECS, F(heartbeat_s), 1, 86400},
    {"down-after", 0, LNS_CONF_SECS, F(down_after_s), 1, YEAR},
    {"drop-after", 0, LNS_CONF_SECS, F(drop_after_s), 1, 10 * YEAR},
    {"probe-interval", 0, LNS_CONF_SECS, F(probe_interval_s), 0, YEAR},
    {"probe-threads", 0, LNS_CONF_INT, F(probe_threads), 1, 1024},
    {"probe-timeout", 0, LNS_CONF_SECS, F(probe_timeout_s), 1, 600},
    {"threads", 0, LNS_CONF_INT, F(threads), 1, 256},
    {"max-connections", 0, LNS_CONF_INT, F(max_connections), 0, 100000},
    {"max-per-address", 0, LNS_CONF_INT, F(max_per_address), 0, 100000},
    {"idle-timeout", 0, LNS_CONF_SECS, F(idle_timeout_s), 1, 86400},
    {"request-timeout", 0, LNS_CONF_SECS, F(request_timeout_s), 1, 3600},
    {"max-body", 0, LNS_CONF_FUNC, .fn = set_max_body},
    {"report-rate", 0, LNS_CONF_INT, F(report_rate), 1, 1000000},
    {"max-pairs", 0, LNS_CONF_INT, F(max_pairs), 1, 100000000},
    {"log-file", 0, LNS_CONF_STR, F(log_file)},
    {"log-level", 0, LNS_CONF_LEVEL, F(log_level)},
    {"pid-file", 0, LNS_CONF_STR, F(pid_file)},
    {"tls-key", 0, LNS_CONF_STR, F(tls_key)},
    {"tls-cert", 0, LNS_CONF_STR, F(tls_cert)},
    {"plain-http", 0, LNS_CONF_BOOL, F(plain_http)},
    {"pin-file", 0, LNS_CONF_STR, F(pin_file)},
    LNS_CONF_TABLE_END(lbone_srv_config_t)};

static const lns_conf_daemon_t daemon_def = {usage_text, "lbone_server (lns) " LNS_VERSION "\n",
                                             settings};

/* Flags over the file, then the checks that need every setting. */
int lbone_config_args(lbone_srv_config_t *cfg, int argc, char **argv, char *err, size_t errlen)
{
    int rc;

    lbone_config_init(cfg);
    rc = lns_conf_daemon_args(&daemon_def, argc, argv, NULL, cfg, err, errlen);
    if (rc != LNS_CONF_OK)
        return rc == LNS_CONF_EXIT ? LBONE_CFG_EXIT : LBONE_CFG_ERR;
    if (!cfg->max_connections) {
        long n = lns_daemon_nofile() - 256;
        cfg->max_connections = n < 64 ? 64 : n > 100000 ? 100000 : (int)n;
    }
    if (cfg->max_per_address < 0)
        cfg->max_per_address = cfg->max_connections >= 4 ? cfg->max_connections / 4 : 1;
    if (!cfg->token_file[0])
        return lns_err_set(err, errlen,
                           "token-file: not set (registration needs a registry token)");
    if (cfg->plain_http && (cfg->tls_key[0] || cfg->tls_cert[0] || cfg->pin_file[0]))
        return lns_err_set(err, errlen, "plain-http and %s: choose one (plain HTTP has no key "
                           "and no pin)", cfg->tls_key[0]    ? "tls-key"
                                          : cfg->tls_cert[0] ? "tls-cert"
                                                             : "pin-file");
    /* HTTPS by default, with a key of its own next to the registry it serves (as a depot
     * keeps its key in its first resource) */
    if (!cfg->plain_http && !cfg->tls_key[0] &&
        snprintf(cfg->tls_key, sizeof cfg->tls_key, "%s.key", cfg->db) >= (int)sizeof cfg->tls_key)
        return lns_err_set(err, errlen, "tls-key: %s.key is too long", cfg->db);
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
             "max %d connections (%d per address), request timeout %ds, idle timeout %ds, "
             "max body %llu, %d reports/min per address, %s%s",
             cfg->listen[0] ? cfg->listen : "*", cfg->port, cfg->db, cfg->heartbeat_s,
             lbone_srv_down_after_s(cfg), cfg->drop_after_s,
             cfg->probe_interval_s ? "on" : "OFF", cfg->probe_interval_s, cfg->probe_threads,
             cfg->probe_timeout_s, cfg->threads, cfg->max_connections, cfg->max_per_address,
             cfg->request_timeout_s, cfg->idle_timeout_s, (unsigned long long)cfg->max_body,
             cfg->report_rate, cfg->plain_http ? "PLAIN HTTP" : "HTTPS with key ",
             cfg->plain_http ? "" : cfg->tls_key);
}
