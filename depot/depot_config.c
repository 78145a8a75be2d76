/* depot_config.c -- the depot's settings: command-line flags and the config file.
 *
 * Every setting has one name, the long flag name, which is also its key in the config file
 * ("key = value", '#' starts a comment, "resource" may repeat).  The file is read first and
 * the flags are applied over it; resources given as flags replace those of the file.  A bad
 * value is reported as one line naming the setting and the reason; nothing is guessed.
 */
#include "depot.h"
#include "depot_lbone.h"
#include "ibp_proto.h"
#include "lns_conf.h"
#include "lns_err.h"
#include "lns_units.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lns_log.h"
#include "lns_version.h"

int depot_parse_duration(const char *s, int64_t *out)
{
    int64_t v;
    /* Keep expiry arithmetic (now + duration) far from overflow: at most 100,000 years. */
    if (lns_parse_seconds(s, &v) < 0 || v == 0 || v > 100000LL * 365 * 86400)
        return -1;
    *out = v;
    return 0;
}

int depot_parse_resource(const char *spec, depot_resource_cfg_t *out, char *err, size_t errlen)
{
    char buf[PATH_MAX + 256];
    char *save = NULL, *tok;

    if (snprintf(buf, sizeof buf, "%s", spec) >= (int)sizeof buf)
        return lns_err_set(err, errlen, "resource: specification too long");
    memset(out, 0, sizeof *out);
    out->hard = DEPOT_DEFAULT_SIZE;
    out->soft = DEPOT_DEFAULT_SIZE;
    out->max_duration = DEPOT_DEFAULT_MAX_DURATION;
    tok = strtok_r(buf, ",", &save);
    if (!tok || !*tok || strchr(tok, '='))
        return lns_err_set(err, errlen, "resource '%s': must start with a directory", spec);
    if (strlen(tok) >= sizeof out->dir)
        return lns_err_set(err, errlen, "resource '%s': directory name too long", spec);
    strcpy(out->dir, tok);
    while ((tok = strtok_r(NULL, ",", &save))) {
        char *eq = strchr(tok, '=');
        if (!eq)
            return lns_err_set(err, errlen, "resource '%s': '%s' is not key=value", spec, tok);
        *eq++ = 0;
        if (strcmp(tok, "hard") == 0) {
            if (lns_parse_size(eq, &out->hard) < 0)
                return lns_err_set(err, errlen,
                                   "resource '%s': hard: '%s' is not a size", spec, eq);
        } else if (strcmp(tok, "soft") == 0) {
            if (lns_parse_size(eq, &out->soft) < 0)
                return lns_err_set(err, errlen,
                                   "resource '%s': soft: '%s' is not a size", spec, eq);
        } else if (strcmp(tok, "max-duration") == 0) {
            if (depot_parse_duration(eq, &out->max_duration) < 0)
                return lns_err_set(err, errlen,
                                   "resource '%s': max-duration: '%s' is not a duration",
                                   spec, eq);
        } else {
            return lns_err_set(err, errlen,
                               "resource '%s': unknown option '%s' (hard, soft, max-duration)",
                               spec, tok);
        }
    }
    if (out->hard == 0 && out->soft == 0)
        return lns_err_set(err, errlen, "resource '%s': hard and soft are both 0", spec);
    return 0;
}

void depot_config_init(depot_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->port = IBP_DEFAULT_PORT;
    cfg->max_connections = 4096;
    cfg->idle_timeout = 60;
    cfg->header_timeout = 10;
    cfg->max_timeout = 300;
    cfg->durability = DEPOT_DUR_OS;
    cfg->log_level = LNS_LOG_INFO;
    cfg->event_sample = 1;
    depot_lbone_reset();
}

static int set_int(const char *key, const char *v, int lo, int hi, int *out, char *err,
                   size_t errlen)
{
    uint64_t x;
    if (ibp_parse_u64(v, strlen(v), &x) < 0 || x < (uint64_t)lo || x > (uint64_t)hi)
        return lns_err_set(err, errlen,
                           "%s: '%s' is not a whole number from %d to %d", key, v, lo, hi);
    *out = (int)x;
    return 0;
}

static int read_password_file(depot_config_t *cfg, const char *path, char *err, size_t errlen)
{
    char line[IBP_MAX_PASSWORD + 2];
    FILE *f = fopen(path, "r");
    if (!f)
        return lns_err_set(err, errlen,
                           "admin-password-file: cannot open %s: %s", path, strerror(errno));
    if (!fgets(line, sizeof line, f))
        line[0] = 0;
    fclose(f);
    line[strcspn(line, "\r\n")] = 0;
    return depot_config_set(cfg, "admin-password", line, err, errlen);
}

int depot_config_set(depot_config_t *cfg, const char *key, const char *v, char *err,
                     size_t errlen)
{
    if (strcmp(key, "listen") == 0)
        return lns_conf_str(key, v, cfg->listen, sizeof cfg->listen, err, errlen);
    if (strcmp(key, "port") == 0)
        return set_int(key, v, 0, 65535, &cfg->port, err, errlen);
    if (strcmp(key, "port-file") == 0)
        return lns_conf_str(key, v, cfg->port_file, sizeof cfg->port_file, err, errlen);
    if (strcmp(key, "resource") == 0) {
        if (cfg->nres == DEPOT_MAX_RESOURCES)
            return lns_err_set(err, errlen,
                               "resource: at most %d resources", DEPOT_MAX_RESOURCES);
        if (depot_parse_resource(v, &cfg->res[cfg->nres], err, errlen) < 0)
            return -1;
        cfg->nres++;
        return 0;
    }
    if (strcmp(key, "public-host") == 0) {
        if (!*v || strpbrk(v, "/:# \t"))
            return lns_err_set(err, errlen, "public-host: '%s' is not a host name", v);
        return lns_conf_str(key, v, cfg->public_host, sizeof cfg->public_host, err, errlen);
    }
    if (strcmp(key, "admin-password") == 0) {
        for (const char *p = v; *p; p++)
            if ((unsigned char)*p < 0x21 || (unsigned char)*p > 0x7e)
                return lns_err_set(err, errlen,
                                   "admin-password: only printable ASCII without spaces");
        return lns_conf_str(key, v, cfg->admin_password, sizeof cfg->admin_password, err, errlen);
    }
    if (strcmp(key, "admin-password-file") == 0)
        return read_password_file(cfg, v, err, errlen);
    if (strcmp(key, "max-connections") == 0)
        return set_int(key, v, 1, 1000000, &cfg->max_connections, err, errlen);
    if (strcmp(key, "idle-timeout") == 0)
        return set_int(key, v, 1, 86400, &cfg->idle_timeout, err, errlen);
    if (strcmp(key, "header-timeout") == 0)
        return set_int(key, v, 1, 86400, &cfg->header_timeout, err, errlen);
    if (strcmp(key, "max-timeout") == 0)
        return set_int(key, v, 1, 86400, &cfg->max_timeout, err, errlen);
    if (strcmp(key, "durability") == 0) {
        if (strcmp(v, "os") == 0)
            cfg->durability = DEPOT_DUR_OS;
        else if (strcmp(v, "fsync") == 0)
            cfg->durability = DEPOT_DUR_FSYNC;
        else
            return lns_err_set(err, errlen, "durability: '%s' is not os or fsync", v);
        return 0;
    }
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
    if (strcmp(key, "event-log") == 0)
        return lns_conf_str(key, v, cfg->event_log, sizeof cfg->event_log, err, errlen);
    if (strcmp(key, "event-sample") == 0)
        return set_int(key, v, 0, 1000000000, &cfg->event_sample, err, errlen);
    if (strcmp(key, "daemon") == 0) {
        if (strcmp(v, "yes") == 0 || strcmp(v, "true") == 0 || strcmp(v, "1") == 0)
            cfg->daemon = 1;
        else if (strcmp(v, "no") == 0 || strcmp(v, "false") == 0 || strcmp(v, "0") == 0)
            cfg->daemon = 0;
        else
            return lns_err_set(err, errlen, "daemon: '%s' is not yes or no", v);
        return 0;
    }
    if (strcmp(key, "pid-file") == 0)
        return lns_conf_str(key, v, cfg->pid_file, sizeof cfg->pid_file, err, errlen);
    if (strncmp(key, "lbone", 5) == 0)
        return depot_lbone_set(key, v, err, errlen);
    return lns_err_set(err, errlen, "unknown setting '%s'", key);
}

static int conf_set(void *arg, const char *key, const char *value, char *err, size_t errlen)
{
    return depot_config_set(arg, key, value, err, errlen);
}

int depot_config_file(depot_config_t *cfg, const char *path, char *err, size_t errlen)
{
    return lns_conf_read(path, conf_set, cfg, err, errlen);
}

static const char usage_text[] =
    "Usage: ibp_depot [options]\n"
    "Serve disk space to the network over the IBP protocol (see ibp_depot(8)).\n"
    "\n"
    "  -c, --config FILE            read settings from FILE (flags override it)\n"
    "  -l, --listen ADDR            address to listen on (default: all)\n"
    "  -p, --port N                 TCP port (default 6714; 0 = any free port)\n"
    "      --port-file FILE         write the bound port to FILE once listening\n"
    "  -r, --resource DIR[,hard=SIZE][,soft=SIZE][,max-duration=DUR]\n"
    "                               a storage resource (repeatable; ids 0, 1, ...)\n"
    "                               defaults hard=1G soft=1G max-duration=30d\n"
    "      --public-host NAME       host name written into capabilities\n"
    "      --admin-password PW      password for STATUS CHANGE\n"
    "      --admin-password-file F  read that password from the first line of F\n"
    "      --max-connections N      simultaneous connections (default 4096)\n"
    "      --idle-timeout S         close connections idle this long (default 60)\n"
    "      --header-timeout S       a started request line must arrive within S (default 10)\n"
    "      --max-timeout S          upper bound of a request's server timeout (default 300)\n"
    "      --durability os|fsync    fsync data and metadata before replying (default os)\n"
    "      --log-file FILE          diagnostic log (default stderr)\n"
    "      --log-level LEVEL        error, warn, info or debug (default info)\n"
    "      --event-log FILE         one IBP_REQ event line per request\n"
    "      --event-sample N         log 1 request in N (1 = all, 0 = none; default 1)\n"
    "  -d, --daemon                 run in the background\n"
    "      --pid-file FILE          write the process id to FILE\n"
    "      --lbone URL              register with this L-Bone and send it heartbeats\n"
    "      --lbone-token-file FILE  the L-Bone's registry token (first line of FILE)\n"
    "      --lbone-place PLACE      where the depot is: \"airport= TYS\", \"zip= 37996\"...\n"
    "      --lbone-lat D, --lbone-lon D   or its latitude and longitude\n"
    "      --lbone-contact TEXT     who runs the depot\n"
    "      --lbone-env-connection C, --lbone-env-monitoring H, --lbone-env-power P,\n"
    "      --lbone-env-firewall yes|no    environment the L-Bone's clients filter on\n"
    "      --lbone-interval S       heartbeat interval (default: what the L-Bone asks)\n"
    "      --check-config           validate the settings, print a summary, exit\n"
    "  -h, --help                   show this help\n"
    "  -V, --version                show the version\n";

static const lns_conf_opt_t opts[] = {
    {"config", 'c', 1},
    {"listen", 'l', 1},
    {"port", 'p', 1},
    {"port-file", 0, 1},
    {"resource", 'r', 1},
    {"public-host", 0, 1},
    {"admin-password", 0, 1},
    {"admin-password-file", 0, 1},
    {"max-connections", 0, 1},
    {"idle-timeout", 0, 1},
    {"header-timeout", 0, 1},
    {"max-timeout", 0, 1},
    {"durability", 0, 1},
    {"log-file", 0, 1},
    {"log-level", 0, 1},
    {"event-log", 0, 1},
    {"event-sample", 0, 1},
    {"daemon", 'd', 0},
    {"pid-file", 0, 1},
    {"lbone", 0, 1},
    {"lbone-token-file", 0, 1},
    {"lbone-place", 0, 1},
    {"lbone-lat", 0, 1},
    {"lbone-lon", 0, 1},
    {"lbone-contact", 0, 1},
    {"lbone-env-connection", 0, 1},
    {"lbone-env-monitoring", 0, 1},
    {"lbone-env-power", 0, 1},
    {"lbone-env-firewall", 0, 1},
    {"lbone-interval", 0, 1},
    {"check-config", 0, 0},
    {"help", 'h', 0},
    {"version", 'V', 0},
    {NULL, 0, 0}};

static const lns_conf_cli_t cli = {usage_text, "ibp_depot (lns) " LNS_VERSION "\n", opts};

typedef struct {
    depot_config_t *cfg;
    int flag_res; /* resources seen among the flags */
} args_state_t;

/* A setting from the command line: the file ("config") comes before every flag. */
static int args_set(void *arg, const char *key, const char *value, char *err, size_t errlen)
{
    args_state_t *st = arg;
    depot_config_t *cfg = st->cfg;
    if (strcmp(key, "config") == 0)
        return lns_conf_str(key, value, cfg->config_file, sizeof cfg->config_file, err, errlen) < 0
                   ? -1
                   : depot_config_file(cfg, value, err, errlen);
    if (strcmp(key, "check-config") == 0) {
        cfg->check_config = 1;
        return 0;
    }
    if (strcmp(key, "resource") == 0 && !st->flag_res++)
        cfg->nres = 0; /* flags replace the file's resources */
    return depot_config_set(cfg, key, value, err, errlen);
}

int depot_config_args(depot_config_t *cfg, int argc, char **argv, char *err, size_t errlen)
{
    args_state_t st = {cfg, 0};
    int rc;

    depot_config_init(cfg);
    rc = lns_conf_args(&cli, argc, argv, args_set, &st, err, errlen);
    if (rc != LNS_CONF_OK)
        return rc == LNS_CONF_EXIT ? DEPOT_CFG_EXIT : DEPOT_CFG_ERR;

    if (cfg->nres == 0)
        return lns_err_set(err, errlen, "resource: none configured (use --resource DIR,...)");
    for (int i = 0; i < cfg->nres; i++)
        for (int j = 0; j < i; j++)
            if (strcmp(cfg->res[i].dir, cfg->res[j].dir) == 0)
                return lns_err_set(err, errlen,
                                   "resource: directory %s given twice", cfg->res[i].dir);
    if (!cfg->public_host[0] && gethostname(cfg->public_host, sizeof cfg->public_host - 1) < 0)
        return lns_err_set(err, errlen, "public-host: not set and gethostname failed");
    if (depot_lbone_check(err, errlen) < 0)
        return DEPOT_CFG_ERR;
    return DEPOT_CFG_OK;
}

static void human(uint64_t v, char *buf, size_t size)
{
    static const char units[] = "KMGT";
    int u = -1;
    while (u < 3 && v >= 1024 && v % 1024 == 0) {
        v /= 1024;
        u++;
    }
    if (u < 0)
        snprintf(buf, size, "%llu", (unsigned long long)v);
    else
        snprintf(buf, size, "%llu%c", (unsigned long long)v, units[u]);
}

void depot_config_summary(const depot_config_t *cfg, char *buf, size_t size)
{
    size_t n;
    n = (size_t)snprintf(buf, size, "listen %s:%d, public-host %s, %d resource%s:",
                         cfg->listen[0] ? cfg->listen : "*", cfg->port, cfg->public_host,
                         cfg->nres, cfg->nres == 1 ? "" : "s");
    for (int i = 0; i < cfg->nres && n < size; i++) {
        char h[32], s[32];
        human(cfg->res[i].hard, h, sizeof h);
        human(cfg->res[i].soft, s, sizeof s);
        n += (size_t)snprintf(buf + n, size - n, " %d=%s(hard=%s,soft=%s,max-duration=%llds)", i,
                              cfg->res[i].dir, h, s, (long long)cfg->res[i].max_duration);
    }
    if (n < size)
        snprintf(buf + n, size - n, ", max-connections %d, durability %s, admin password %s",
                 cfg->max_connections, cfg->durability == DEPOT_DUR_FSYNC ? "fsync" : "os",
                 cfg->admin_password[0] ? "set" : "not set");
    depot_lbone_summary(buf, size);
}
