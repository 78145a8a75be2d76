/* lbone_server_main.c -- lbone_server: start up, serve, shut down.
 *
 * Order matters: settings, token, gazetteer and database are checked before anything
 * listens, so errors reach the terminal with their exit code (the TLS key, HTTPS unless
 * --plain-http, before the probe threads); the registry and the measurement history are
 * loaded before the first request; the pin file and then the port file are written last,
 * when requests are really answered, because scripts and tests use the port file as the
 * readiness signal.  SIGTERM and SIGINT are blocked in every thread and taken with sigwait
 * here.
 */
#include "lbone_srv.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ibp.h"
#include "lbone_geo.h"
#include "lns_daemon.h"
#include "lns_log.h"
#include "lns_tls.h"
#include "lns_version.h"

static lbone_srv_config_t cfg;
static lbone_srv_t srv;

static lns_daemon_t dmn = {"lbone_server", cfg.log_file, -1};

static void replay(void *arg, const char *net, const char *depot_id, double mbps)
{
    lbone_srv_t *s = arg;
    /* Rows of depots removed while a report was in flight are left over: skip them. */
    if (lbone_reg_find_id(&s->reg, depot_id))
        lbone_hist_add(s->hist, net, depot_id, mbps);
}

int main(int argc, char **argv)
{
    char err[PATH_MAX + 512];
    sigset_t sigs;
    int sig;

    switch (lbone_config_args(&cfg, argc, argv, err, sizeof err)) {
    case LBONE_CFG_EXIT: return LBONE_EXIT_OK;
    case LBONE_CFG_ERR:
        fprintf(stderr, "lbone_server: %s\n", err);
        return LBONE_EXIT_CONFIG;
    default: break;
    }
    if (lbone_token_load(cfg.token_file, srv.token_hash, err, sizeof err) < 0)
        lns_daemon_die(&dmn, LBONE_EXIT_CONFIG, "%s", err);
    if (cfg.geo_data[0] && lbone_geo_open(cfg.geo_data) < 0)
        lns_daemon_die(&dmn, LBONE_EXIT_CONFIG, "geo-data: cannot load %s: %s", cfg.geo_data,
                       strerror(errno));
    if (cfg.check_config) {
        if (!cfg.geo_data[0])
            (void)lbone_geo_open(NULL); /* a default data file missing: its warning */
        lbone_config_summary(&cfg, err, sizeof err);
        printf("lbone_server: configuration OK: %s\n", err);
        return LBONE_EXIT_OK;
    }
    if (lns_log_open("lbone_server", cfg.log_file, cfg.log_level, err, sizeof err) < 0)
        lns_daemon_die(&dmn, LBONE_EXIT_CONFIG, "%s", err);
    /* The default gazetteer now, so that the first query does not wait for it; without its
     * data file (the gazetteer logs why, here in the log) the server serves on and place
     * names do not resolve. */
    if (!cfg.geo_data[0])
        (void)lbone_geo_open(NULL);

    lns_daemon_signals(&sigs, 0);

    srv.cfg = &cfg;
    if (lbone_reg_init(&srv.reg) < 0)
        lns_daemon_die(&dmn, LBONE_EXIT_RUNTIME, "out of memory");
    if (!(srv.db = lbone_db_open(cfg.db, err, sizeof err)))
        lns_daemon_die(&dmn, LBONE_EXIT_STORAGE, "%s", err);
    if (lbone_db_load(srv.db, &srv.reg, err, sizeof err) < 0)
        lns_daemon_die(&dmn, LBONE_EXIT_STORAGE, "%s", err);
    if (!(srv.hist = lbone_hist_new(cfg.max_pairs)) || !(srv.rl = lbone_rl_new(cfg.report_rate)))
        lns_daemon_die(&dmn, LBONE_EXIT_RUNTIME, "out of memory");
    if (lbone_db_each_measurement(srv.db, replay, &srv) < 0)
        lns_daemon_die(&dmn, LBONE_EXIT_STORAGE, "db: reading measurements: %s",
                       lbone_db_error(srv.db));
    /* the key before the probe threads, which would still run when a bad key stops us;
     * HTTPS unless --plain-http (the key is made on a first start, ECDSA P-256, which
     * browsers take for the status page, where they refuse Ed25519) */
    lns_tls_id_t *id = NULL;
    if (!cfg.plain_http &&
        (!(id = lns_tls_id_load(cfg.tls_key, cfg.tls_cert, LNS_TLS_MAKE_P256, err, sizeof err)) ||
         lns_tls_id_pem(id, &srv.tls_cert, &srv.tls_key) < 0))
        lns_daemon_die(&dmn, LBONE_EXIT_CONFIG, "%s", id ? "TLS key: out of memory" : err);
    if (lbone_probe_start(&srv, err, sizeof err) < 0)
        lns_daemon_die(&dmn, LBONE_EXIT_RUNTIME, "%s", err);
    if (lbone_http_start(&srv, err, sizeof err) < 0)
        lns_daemon_die(&dmn, LBONE_EXIT_NETWORK, "listen: %s", err);
    /* the start lines before the files a supervisor (or a test) waits for */
    lns_log(LNS_LOG_INFO, "lns %s listening on %s port %d, %zu depots, %zu histories, probes %s",
            LNS_VERSION, cfg.listen[0] ? cfg.listen : "*", srv.port, srv.reg.n,
            lbone_hist_pairs(srv.hist), cfg.probe_interval_s ? "on" : "off");
    if (id)
        lns_log(LNS_LOG_INFO, "HTTPS, pin %s (key %s): clients and depots name this L-Bone as "
                "https://HOST:%d#%s", lns_tls_id_pin(id), cfg.tls_key, srv.port,
                lns_tls_id_pin(id));
    else
        lns_log(LNS_LOG_WARN, "plain HTTP (--plain-http): registration tokens and depot "
                              "secrets cross the network readable by anyone on the path");
    if (cfg.pid_file[0])
        lns_daemon_write_file(&dmn, LBONE_EXIT_DAEMON, cfg.pid_file, (long)getpid(), "pid-file");
    if (cfg.pin_file[0])
        lns_daemon_write_text(&dmn, LBONE_EXIT_DAEMON, cfg.pin_file, lns_tls_id_pin(id),
                              "pin-file");
    if (cfg.port_file[0])
        lns_daemon_write_file(&dmn, LBONE_EXIT_DAEMON, cfg.port_file, srv.port, "port-file");

    while (sigwait(&sigs, &sig) != 0 || (sig != SIGTERM && sig != SIGINT))
        ;
    lns_log(LNS_LOG_INFO, "signal %d: stopping", sig);
    lbone_http_stop(&srv);
    if (srv.tls_key)
        memset(srv.tls_key, 0, strlen(srv.tls_key));
    free(srv.tls_key);
    free(srv.tls_cert);
    lns_tls_id_free(id);
    lbone_probe_stop(&srv);
    lbone_db_close(srv.db);
    lbone_hist_free(srv.hist);
    lbone_rl_free(srv.rl);
    lbone_reg_free(&srv.reg);
    lbone_geo_close();
    if (cfg.pid_file[0])
        unlink(cfg.pid_file);
    lns_log(LNS_LOG_INFO, "stopped");
    lns_log_close();
    return LBONE_EXIT_OK;
}
