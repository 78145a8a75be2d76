/* depot_config.c -- the depot's settings: command-line flags and the config file.
 *
 * Every setting has one name, the long flag name, which is also its key in the config file
 * ("key = value", '#' starts a comment, "resource" may repeat).  The file is read first and
 * the flags are applied over it; resources given as flags replace those of the file.  A bad
 * value is reported as one line naming the setting and the reason; nothing is guessed.  Each
 * setting is declared once, in settings[] below (lns_conf.h): key, flag, type, field, bounds.
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
    if (lns_parse_seconds(s, &v) < 0 || v == 0 || v > DEPOT_MAX_DURATION_LIMIT)
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
    out->reserve = DEPOT_DEFAULT_RESERVE;
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
        } else if (strcmp(tok, "reserve") == 0) {
            if (lns_parse_size(eq, &out->reserve) < 0 || out->reserve > (1ULL << 40))
                return lns_err_set(err, errlen,
                                   "resource '%s': reserve: '%s' is not a size up to 1T", spec,
                                   eq);
        } else {
            return lns_err_set(err, errlen,
                               "resource '%s': unknown option '%s' (hard, soft, max-duration,"
                               " reserve)", spec, tok);
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
    cfg->chksum_cache = 30;
    cfg->log_level = LNS_LOG_INFO;
    cfg->event_sample = 1;
    cfg->tls = 1;
    depot_lbone_reset();
}

static int set_resource(void *arg, const char *key, const char *v, char *err, size_t errlen)
{
    depot_config_t *cfg = arg;
    (void)key;
    if (cfg->nres == DEPOT_MAX_RESOURCES)
        return lns_err_set(err, errlen, "resource: at most %d resources", DEPOT_MAX_RESOURCES);
    if (depot_parse_resource(v, &cfg->res[cfg->nres], err, errlen) < 0)
        return -1;
    cfg->nres++;
    return 0;
}

static int set_public_host(void *arg, const char *key, const char *v, char *err, size_t errlen)
{
    depot_config_t *cfg = arg;
    if (!*v || strpbrk(v, "/:# \t"))
        return lns_err_set(err, errlen, "public-host: '%s' is not a host name", v);
    return lns_conf_str(key, v, cfg->public_host, sizeof cfg->public_host, err, errlen);
}

static int set_admin_password(void *arg, const char *key, const char *v, char *err,
                              size_t errlen)
{
    depot_config_t *cfg = arg;
    for (const char *p = v; *p; p++)
        if ((unsigned char)*p < 0x21 || (unsigned char)*p > 0x7e)
            return lns_err_set(err, errlen, "admin-password: only printable ASCII without spaces");
    return lns_conf_str(key, v, cfg->admin_password, sizeof cfg->admin_password, err, errlen);
}

static int read_password_file(void *arg, const char *key, const char *path, char *err,
                              size_t errlen)
{
    char line[IBP_MAX_PASSWORD + 2];
    if (lns_conf_first_line(key, path, line, sizeof line, err, errlen) < 0)
        return -1;
    return set_admin_password(arg, "admin-password", line, err, errlen);
}

static int set_durability(void *arg, const char *key, const char *v, char *err, size_t errlen)
{
    depot_config_t *cfg = arg;
    (void)key;
    if (strcmp(v, "os") == 0)
        cfg->durability = DEPOT_DUR_OS;
    else if (strcmp(v, "fsync") == 0)
        cfg->durability = DEPOT_DUR_FSYNC;
    else
        return lns_err_set(err, errlen, "durability: '%s' is not os or fsync", v);
    return 0;
}

static int set_tls(void *arg, const char *key, const char *v, char *err, size_t errlen)
{
    depot_config_t *cfg = arg;
    (void)key;
    if (strcmp(v, "yes") == 0)
        cfg->tls = 1;
    else if (strcmp(v, "no") == 0)
        cfg->tls = 0;
    else
        return lns_err_set(err, errlen, "tls: '%s' is not yes or no", v);
    return 0;
}

static int set_plaintext(void *arg, const char *key, const char *v, char *err, size_t errlen)
{
    depot_config_t *cfg = arg;
    (void)key;
    if (strcmp(v, "allow") == 0)
        cfg->plaintext_refuse = 0;
    else if (strcmp(v, "refuse") == 0)
        cfg->plaintext_refuse = 1;
    else
        return lns_err_set(err, errlen, "plaintext: '%s' is not allow or refuse", v);
    return 0;
}

/* The L-Bone settings live in depot_lbone.c, which checks them as a whole at the end. */
static int set_lbone(void *arg, const char *key, const char *v, char *err, size_t errlen)
{
    (void)arg;
    return depot_lbone_set(key, v, err, errlen);
}

static const char usage_text[] =
    "Usage: ibp_depot [options]\n"
    "Serve disk space to the network over the IBP protocol (see ibp_depot(8)).\n"
    "\n"
    "  -c, --config FILE            read settings from FILE (flags override it)\n"
    "  -l, --listen ADDR            address to listen on (default: all)\n"
    "  -p, --port N                 TCP port (default 6714; 0 = any free port)\n"
    "      --port-file FILE         write the bound port to FILE once listening\n"
    "  -r, --resource DIR[,hard=SIZE][,soft=SIZE][,max-duration=DUR][,reserve=SIZE]\n"
    "                               a storage resource (repeatable; ids 0, 1, ...)\n"
    "                               defaults hard=1G soft=1G max-duration=30d reserve=8M\n"
    "                               (capped, with a warning, to what the filesystem holds)\n"
    "      --public-host NAME       host name written into capabilities\n"
    "      --admin-password PW      password for STATUS CHANGE (ps shows it to every\n"
    "                               user: prefer --admin-password-file)\n"
    "      --admin-password-file F  read that password from the first line of F\n"
    "      --max-connections N      simultaneous connections (default 4096)\n"
    "      --idle-timeout S         close connections idle this long (default 60)\n"
    "      --header-timeout S       a started request line must arrive within S (default 10)\n"
    "      --max-timeout S          upper bound of a request's server timeout (default 300)\n"
    "      --durability os|fsync    fsync data and metadata before replying (default os)\n"
    "      --chksum-cache S         a disk-checksummed block computed or checked less than S\n"
    "                               seconds ago is read without hashing it (default 30; 0 = never)\n"
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
    "      --lbone-leaving yes|no   say in every heartbeat that this depot is leaving: the\n"
    "                               L-Bone hands it out no more, keepers move data off it\n"
    "      --tls yes|no             serve TLS 1.3 on the same port as plain IBP (default yes)\n"
    "      --plaintext allow|refuse plain IBP for old clients (default allow, the IBP\n"
    "                               world's); refuse answers it with an error and closes\n"
    "      --tls-key FILE           the depot's key, made (mode 0600) if missing; its hash\n"
    "                               is the depot's pin (default RESOURCE0/tls.key)\n"
    "      --tls-cert FILE          a CA's certificate for the key (default self-signed)\n"
    "      --check-config           validate the settings, print a summary, exit\n"
    "  -h, --help                   show this help\n"
    "  -V, --version                show the version\n";

#define F(member) LNS_CONF_FIELD(depot_config_t, member)

static const lns_conf_setting_t settings[] = {
    {"config", 'c', LNS_CONF_FILE, F(config_file)},
    {"listen", 'l', LNS_CONF_STR, F(listen)},
    {"port", 'p', LNS_CONF_INT, F(port), 0, 65535},
    {"port-file", 0, LNS_CONF_STR, F(port_file)},
    {"resource", 'r', LNS_CONF_FUNC, .fn = set_resource},
    {"public-host", 0, LNS_CONF_FUNC, .fn = set_public_host},
    {"admin-password", 0, LNS_CONF_FUNC, .fn = set_admin_password},
    {"admin-password-file", 0, LNS_CONF_FUNC, .fn = read_password_file},
    {"max-connections", 0, LNS_CONF_INT, F(max_connections), 1, 1000000},
    {"idle-timeout", 0, LNS_CONF_INT, F(idle_timeout), 1, 86400},
    {"header-timeout", 0, LNS_CONF_INT, F(header_timeout), 1, 86400},
    {"max-timeout", 0, LNS_CONF_INT, F(max_timeout), 1, 86400},
    {"durability", 0, LNS_CONF_FUNC, .fn = set_durability},
    {"chksum-cache", 0, LNS_CONF_INT, F(chksum_cache), 0, 86400},
    {"log-file", 0, LNS_CONF_STR, F(log_file)},
    {"log-level", 0, LNS_CONF_LEVEL, F(log_level)},
    {"event-log", 0, LNS_CONF_STR, F(event_log)},
    {"event-sample", 0, LNS_CONF_INT, F(event_sample), 0, 1000000000},
    {"daemon", 'd', LNS_CONF_BOOL, F(daemon)},
    {"pid-file", 0, LNS_CONF_STR, F(pid_file)},
    {"tls", 0, LNS_CONF_FUNC, .fn = set_tls},
    {"plaintext", 0, LNS_CONF_FUNC, .fn = set_plaintext},
    {"tls-key", 0, LNS_CONF_STR, F(tls_key)},
    {"tls-cert", 0, LNS_CONF_STR, F(tls_cert)},
    {"lbone", 0, LNS_CONF_FUNC, .fn = set_lbone},
    {"lbone-token-file", 0, LNS_CONF_FUNC, .fn = set_lbone},
    {"lbone-place", 0, LNS_CONF_FUNC, .fn = set_lbone},
    {"lbone-lat", 0, LNS_CONF_FUNC, .fn = set_lbone},
    {"lbone-lon", 0, LNS_CONF_FUNC, .fn = set_lbone},
    {"lbone-contact", 0, LNS_CONF_FUNC, .fn = set_lbone},
    {"lbone-env-connection", 0, LNS_CONF_FUNC, .fn = set_lbone},
    {"lbone-env-monitoring", 0, LNS_CONF_FUNC, .fn = set_lbone},
    {"lbone-env-power", 0, LNS_CONF_FUNC, .fn = set_lbone},
    {"lbone-env-firewall", 0, LNS_CONF_FUNC, .fn = set_lbone},
    {"lbone-interval", 0, LNS_CONF_FUNC, .fn = set_lbone},
    {"lbone-leaving", 0, LNS_CONF_FUNC, .fn = set_lbone},
    LNS_CONF_TABLE_END(depot_config_t)};

static const lns_conf_daemon_t daemon_def = {usage_text, "ibp_depot (lns) " LNS_VERSION "\n",
                                             settings};

typedef struct {
    depot_config_t *cfg;
    int flag_res; /* resources seen among the flags */
} args_state_t;

/* A setting from the command line: the file ("config") comes before every flag; resources
 * given as flags replace the file's. */
static int args_set(void *arg, const char *key, const char *value, char *err, size_t errlen)
{
    args_state_t *st = arg;
    if (strcmp(key, "resource") == 0 && !st->flag_res++)
        st->cfg->nres = 0;
    return lns_conf_set(settings, st->cfg, key, value, err, errlen);
}

int depot_config_args(depot_config_t *cfg, int argc, char **argv, char *err, size_t errlen)
{
    args_state_t st = {cfg, 0};
    int rc;

    depot_config_init(cfg);
    rc = lns_conf_daemon_args(&daemon_def, argc, argv, args_set, &st, err, errlen);
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
    if (cfg->plaintext_refuse && !cfg->tls)
        return lns_err_set(err, errlen, "plaintext refuse with tls no: nothing could be served");
    if (!cfg->tls_key[0] &&
        snprintf(cfg->tls_key, sizeof cfg->tls_key, "%s/tls.key", cfg->res[0].dir) >=
            (int)sizeof cfg->tls_key)
        return lns_err_set(err, errlen, "tls-key: %s/tls.key is too long", cfg->res[0].dir);
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
        snprintf(buf + n, size - n, ", max-connections %d, durability %s, chksum-cache %ds, "
                 "admin password %s, tls %s%s", cfg->max_connections,
                 cfg->durability == DEPOT_DUR_FSYNC ? "fsync" : "os", cfg->chksum_cache,
                 cfg->admin_password[0] ? "set" : "not set", cfg->tls ? "yes" : "no",
                 cfg->plaintext_refuse ? " (plaintext refused)" : "");
    depot_lbone_summary(buf, size);
}
