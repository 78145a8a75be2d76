/* depot_main.c -- ibp_depot: start up, serve, shut down.
 *
 * Order matters: settings are checked and the socket is bound before the process detaches,
 * so that errors reach the terminal with their exit code; threads start only after the fork
 * (a fork keeps only the calling thread); the port file is written last, when the depot
 * really answers, because scripts and tests use it as the readiness signal.  SIGTERM and
 * SIGINT arrive through a signalfd in the accept loop (they are blocked in every thread).
 */
#include "depot.h"
#include "depot_lbone.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lns_daemon.h"
#include "lns_log.h"
#include "lns_tls.h"
#include "lns_version.h"

static depot_config_t cfg;
static depot_store_t store;
static depot_server_t server;

static lns_daemon_t dmn = {"ibp_depot", cfg.log_file, -1};

/* Relative paths would break once a daemon moves to "/". */
static void absolutize(char *path, size_t size)
{
    char cwd[PATH_MAX], tmp[PATH_MAX * 2 + 2];
    if (!path[0] || path[0] == '/' || !getcwd(cwd, sizeof cwd))
        return;
    snprintf(tmp, sizeof tmp, "%s/%s", cwd, path);
    if (strlen(tmp) < size)
        strcpy(path, tmp);
}

static void raise_nofile(void)
{
    long n = lns_daemon_nofile();
    if (n >= 0 && n < (long)cfg.max_connections * 2 + 64)
        lns_log(LNS_LOG_WARN, "open file limit %ld is low for %d connections", n,
                cfg.max_connections);
}

/* Detach; the original process waits on a pipe until the daemon is ready or failed, and
 * exits with the daemon's exit code, so "ibp_depot -d" fails loudly like the foreground. */
static void daemonize(void)
{
    int p[2];
    if (pipe(p) < 0)
        lns_daemon_die(&dmn, DEPOT_EXIT_DAEMON, "daemon: pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0)
        lns_daemon_die(&dmn, DEPOT_EXIT_DAEMON, "daemon: fork: %s", strerror(errno));
    if (pid > 0) {
        char buf[PATH_MAX + 600];
        ssize_t n, got = 0;
        close(p[1]);
        while ((n = read(p[0], buf + got, sizeof buf - 1 - (size_t)got)) > 0)
            got += n;
        buf[got] = 0;
        if (got == 0) {
            fprintf(stderr, "ibp_depot: the daemon exited during startup (see its log)\n");
            _exit(DEPOT_EXIT_DAEMON);
        }
        int code = atoi(buf);
        char *msg = strchr(buf, ' ');
        if (code != 0 && msg)
            fprintf(stderr, "ibp_depot: %s\n", msg + 1);
        _exit(code);
    }
    close(p[0]);
    if (setsid() < 0)
        lns_daemon_die(&dmn, DEPOT_EXIT_DAEMON, "daemon: setsid: %s", strerror(errno));
    pid = fork();
    if (pid < 0)
        lns_daemon_die(&dmn, DEPOT_EXIT_DAEMON, "daemon: fork: %s", strerror(errno));
    if (pid > 0)
        _exit(0);
    dmn.ready_fd = p[1];
    if (chdir("/") < 0)
        lns_daemon_die(&dmn, DEPOT_EXIT_DAEMON, "daemon: chdir /: %s", strerror(errno));
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
        if (cfg.log_file[0])
            dup2(null, 2);
        if (null > 2)
            close(null);
    }
}

/* A password on the command line can be read by every user of the host (ps): blank it in
 * argv once the configuration holds it, and say so; --admin-password-file or the
 * configuration file keep it off the command line altogether.  1 if one was there. */
static int blank_password_args(int argc, char **argv)
{
    int found = 0;
    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        if (strcmp(a, "--") == 0)
            break;
        if (strncmp(a, "--admin-password=", 17) == 0) {
            memset(a + 17, 'x', strlen(a + 17));
            found = 1;
        } else if (strcmp(a, "--admin-password") == 0 && i + 1 < argc) {
            memset(argv[i + 1], 'x', strlen(argv[i + 1]));
            found = 1;
            i++;
        }
    }
    return found;
}

int main(int argc, char **argv)
{
    char err[PATH_MAX + 512];
    sigset_t sigs;
    int sigfd;

    int cfg_rc = depot_config_args(&cfg, argc, argv, err, sizeof err);
    int pw_on_argv = blank_password_args(argc, argv);
    switch (cfg_rc) {
    case DEPOT_CFG_EXIT: return DEPOT_EXIT_OK;
    case DEPOT_CFG_ERR:
        fprintf(stderr, "ibp_depot: %s\n", err);
        return DEPOT_EXIT_CONFIG;
    default: break;
    }
    if (cfg.check_config) {
        depot_config_summary(&cfg, err, sizeof err);
        printf("ibp_depot: configuration OK: %s\n", err);
        return DEPOT_EXIT_OK;
    }
    for (int i = 0; i < cfg.nres; i++)
        absolutize(cfg.res[i].dir, sizeof cfg.res[i].dir);
    absolutize(cfg.pid_file, sizeof cfg.pid_file);
    absolutize(cfg.port_file, sizeof cfg.port_file);
    absolutize(cfg.tls_key, sizeof cfg.tls_key);
    absolutize(cfg.tls_cert, sizeof cfg.tls_cert);

    if (lns_log_open("ibp_depot", cfg.log_file, cfg.log_level, err, sizeof err) < 0 ||
        lns_event_open(cfg.event_log, cfg.public_host, cfg.event_sample, err, sizeof err) < 0)
        lns_daemon_die(&dmn, DEPOT_EXIT_CONFIG, "%s", err);
    raise_nofile();
    if (pw_on_argv)
        lns_log(LNS_LOG_WARN, "--admin-password on the command line can be read by any user "
                              "of this host (ps); use --admin-password-file or the configuration "
                              "file");

    lns_daemon_signals(&sigs, SIGHUP);

    server.cfg = &cfg;
    server.store = &store;
    if (depot_server_listen(&server, err, sizeof err) < 0)
        lns_daemon_die(&dmn, DEPOT_EXIT_NETWORK, "listen: %s", err);
    if (cfg.daemon)
        daemonize();
    /* After the fork: a signalfd belongs to the process that made it. */
    sigfd = signalfd(-1, &sigs, SFD_CLOEXEC);
    if (sigfd < 0)
        lns_daemon_die(&dmn, DEPOT_EXIT_RUNTIME, "signalfd: %s", strerror(errno));
    if (cfg.pid_file[0])
        lns_daemon_write_file(&dmn, DEPOT_EXIT_DAEMON, cfg.pid_file, (long)getpid(), "pid-file");
    /* the identity before the store, whose threads would still run when a bad key stops us */
    if (cfg.tls) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s", cfg.tls_key);
        char *slash = strrchr(dir, '/');
        if (slash && slash != dir) { /* a first start: the resource directory may be new */
            *slash = '\0';
            if (mkdir(dir, 0750) < 0 && errno != EEXIST)
                lns_daemon_die(&dmn, DEPOT_EXIT_CONFIG, "tls-key: %s: %s", dir, strerror(errno));
        }
        if (!(server.tls_id = lns_tls_id_load(cfg.tls_key, cfg.tls_cert, 1, err, sizeof err)) ||
            !(server.tls_ctx = lns_tls_server_new(server.tls_id, err, sizeof err)))
            lns_daemon_die(&dmn, DEPOT_EXIT_CONFIG, "%s", err);
    }
    if (depot_store_open(&store, &cfg, err, sizeof err) < 0)
        lns_daemon_die(&dmn, DEPOT_EXIT_STORAGE, "%s", err);
    if (cfg.port_file[0])
        lns_daemon_write_file(&dmn, DEPOT_EXIT_DAEMON, cfg.port_file, server.port, "port-file");
    lns_log(LNS_LOG_INFO, "lns %s listening on %s port %d, %d resource%s, public host %s",
            LNS_VERSION, cfg.listen[0] ? cfg.listen : "*", server.port, cfg.nres,
            cfg.nres == 1 ? "" : "s", cfg.public_host);
    if (server.tls_id)
        lns_log(LNS_LOG_INFO, "TLS 1.3 on the same port, pin %s (key %s), %s; plaintext %s",
                lns_tls_id_pin(server.tls_id), cfg.tls_key, lns_tls_kernel_note(),
                cfg.plaintext_refuse ? "refused" : "allowed (old IBP clients)");
    else
        lns_log(LNS_LOG_WARN, "TLS off (--tls no): capabilities and data cross the network "
                              "readable by anyone on the path");
    if (depot_lbone_start(&cfg, &store, server.port,
                          server.tls_id ? lns_tls_id_pin(server.tls_id) : NULL, err,
                          sizeof err) < 0)
        lns_daemon_die(&dmn, DEPOT_EXIT_RUNTIME, "%s", err);
    lns_daemon_ready(&dmn);

    depot_server_run(&server, sigfd);
    depot_lbone_stop();
    depot_store_close(&store);
    lns_tls_ctx_free(server.tls_ctx);
    lns_tls_id_free(server.tls_id);
    close(sigfd);
    if (cfg.pid_file[0])
        unlink(cfg.pid_file);
    lns_log(LNS_LOG_INFO, "stopped");
    lns_event_close();
    lns_log_close();
    return DEPOT_EXIT_OK;
}
