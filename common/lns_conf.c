/* lns_conf.c -- a daemon's settings from "key = value" files and its command line.
 *
 * The command line goes through getopt_long, twice over the same argv: the first pass finds
 * errors, --help, --version and the config file before anything is set, the second feeds each
 * flag to the same setter as the file, so flags win over the file whatever their order.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lns_conf.h"
#include "lns_err.h"
#include "lns_log.h"
#include "lns_units.h"

static char *trim(char *s)
{
    char *e;
    while (*s == ' ' || *s == '\t')
        s++;
    e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n'))
        *--e = 0;
    return s;
}

int lns_conf_str(const char *key, const char *value, char *dst, size_t size, char *err,
                 size_t errlen)
{
    if (strlen(value) >= size)
        return lns_err_set(err, errlen, "%s: value too long (at most %zu bytes)", key,
                           size - 1);
    strcpy(dst, value);
    return 0;
}

int lns_conf_first_line(const char *key, const char *path, char *line, size_t size, char *err,
                        size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return lns_err_set(err, errlen, "%s: cannot open %s: %s", key, path, strerror(errno));
    if (!fgets(line, (int)size, f))
        line[0] = 0;
    fclose(f);
    line[strcspn(line, "\r\n")] = 0;
    return 0;
}

int lns_conf_read(const char *path, lns_conf_set_fn set, void *arg, char *err, size_t errlen)
{
    char line[PATH_MAX + 512], why[PATH_MAX + 256];
    int lineno = 0, rc = 0;
    FILE *f = fopen(path, "r");

    if (!f) {
        lns_err_set(err, errlen, "config: cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    while (rc == 0 && fgets(line, sizeof line, f)) {
        char *hash, *eq, *key, *val;
        lineno++;
        if (!strchr(line, '\n') && !feof(f)) {
            lns_err_set(err, errlen, "%s:%d: line too long", path, lineno);
            rc = -1;
            break;
        }
        if ((hash = strchr(line, '#')))
            *hash = 0;
        key = trim(line);
        if (!*key)
            continue;
        if (!(eq = strchr(key, '='))) {
            lns_err_set(err, errlen, "%s:%d: expected 'key = value'", path, lineno);
            rc = -1;
            break;
        }
        *eq = 0;
        val = trim(eq + 1);
        key = trim(key);
        if (strcmp(key, "config") == 0 || strcmp(key, "check-config") == 0) {
            lns_err_set(err, errlen, "%s:%d: '%s' cannot be set in a config file", path, lineno,
                        key);
            rc = -1;
        } else if (set(arg, key, val, why, sizeof why) < 0) {
            lns_err_set(err, errlen, "%s:%d: %s", path, lineno, why);
            rc = -1;
        }
    }
    fclose(f);
    return rc;
}

/* Long options come back from getopt_long as LONG_BASE + their index, so that options without
 * a letter can be told apart; short ones as their letter. */
enum { LONG_BASE = 256 };

static const lns_conf_opt_t *opt_of(const lns_conf_opt_t *opts, int c)
{
    if (c >= LONG_BASE)
        return &opts[c - LONG_BASE];
    for (const lns_conf_opt_t *o = opts; o->name; o++)
        if (o->letter == c)
            return o;
    return NULL;
}

/* Pass 1: LNS_CONF_OK with the last config file (or NULL) in *config, LNS_CONF_EXIT, or
 * LNS_CONF_ERR. */
static int first_pass(const lns_conf_cli_t *cli, int argc, char **argv, const char *shorts,
                      const struct option *longs, const char **config, char *err, size_t errlen)
{
    int c;
    optind = 0;
    while ((c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
        const lns_conf_opt_t *o = opt_of(cli->opts, c);
        if (c == ':') {
            lns_err_set(err, errlen, "option '%s' needs a value", argv[optind - 1]);
            return LNS_CONF_ERR;
        }
        if (c == '?' || !o) {
            lns_err_set(err, errlen, "unknown option '%s' (see --help)", argv[optind - 1]);
            return LNS_CONF_ERR;
        }
        if (strcmp(o->name, "help") == 0) {
            fputs(cli->usage, stdout);
            return LNS_CONF_EXIT;
        }
        if (strcmp(o->name, "version") == 0) {
            fputs(cli->version, stdout);
            return LNS_CONF_EXIT;
        }
        if (strcmp(o->name, "config") == 0)
            *config = optarg;
    }
    if (optind < argc) {
        lns_err_set(err, errlen, "unexpected argument '%s' (see --help)", argv[optind]);
        return LNS_CONF_ERR;
    }
    return LNS_CONF_OK;
}

int lns_conf_args(const lns_conf_cli_t *cli, int argc, char **argv, lns_conf_set_fn set,
                  void *arg, char *err, size_t errlen)
{
    const char *config = NULL;
    struct option *longs;
    char *shorts;
    size_t n = 0, k = 0;
    int c, rc;

    while (cli->opts[n].name)
        n++;
    longs = calloc(n + 1, sizeof *longs);
    shorts = malloc(2 * n + 2);
    if (!longs || !shorts) {
        free(longs);
        free(shorts);
        lns_err_set(err, errlen, "command line: out of memory");
        return LNS_CONF_ERR;
    }
    shorts[k++] = ':'; /* a missing value is ':', told apart from an unknown option '?' */
    for (size_t i = 0; i < n; i++) {
        const lns_conf_opt_t *o = &cli->opts[i];
        longs[i] = (struct option){o->name, o->has_arg ? required_argument : no_argument, NULL,
                                   LONG_BASE + (int)i};
        if (o->letter) {
            shorts[k++] = o->letter;
            if (o->has_arg)
                shorts[k++] = ':';
        }
    }
    shorts[k] = 0;

    opterr = 0;
    rc = first_pass(cli, argc, argv, shorts, longs, &config, err, errlen);
    if (rc == LNS_CONF_OK && config && set(arg, "config", config, err, errlen) < 0)
        rc = LNS_CONF_ERR;
    optind = 0;
    while (rc == LNS_CONF_OK && (c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
        const lns_conf_opt_t *o = opt_of(cli->opts, c);
        if (strcmp(o->name, "config") != 0 &&
            set(arg, o->name, o->has_arg ? optarg : "yes", err, errlen) < 0)
            rc = LNS_CONF_ERR;
    }
    free(longs);
    free(shorts);
    return rc;
}

/* Decimal digits only (no sign, no spaces), at most 18 of them so nothing overflows. */
static int parse_digits(const char *v, long long *out)
{
    size_t n = strspn(v, "0123456789");
    if (n == 0 || v[n] || n > 18)
        return -1;
    *out = strtoll(v, NULL, 10);
    return 0;
}

int lns_conf_bool(const char *key, const char *v, int *out, char *err, size_t errlen)
{
    if (strcmp(v, "yes") == 0 || strcmp(v, "true") == 0 || strcmp(v, "1") == 0)
        *out = 1;
    else if (strcmp(v, "no") == 0 || strcmp(v, "false") == 0 || strcmp(v, "0") == 0)
        *out = 0;
    else
        return lns_err_set(err, errlen, "%s: '%s' is not yes or no", key, v);
    return 0;
}

int lns_conf_set(const lns_conf_setting_t *settings, void *cfg, const char *key,
                 const char *v, char *err, size_t errlen)
{
    const lns_conf_setting_t *s = settings;
    char *field;
    long long x;
    int64_t secs;
    int level;

    while (s->name && strcmp(s->name, key) != 0)
        s++;
    field = (char *)cfg + s->off;
    switch (s->name ? s->type : LNS_CONF_CMD) {
    case LNS_CONF_STR: return lns_conf_str(key, v, field, s->size, err, errlen);
    case LNS_CONF_INT:
        if (parse_digits(v, &x) < 0 || x < s->lo || x > s->hi)
            return lns_err_set(err, errlen, "%s: '%s' is not a whole number from %lld to %lld",
                               key, v, s->lo, s->hi);
        *(int *)field = (int)x;
        return 0;
    case LNS_CONF_SECS:
        if (lns_parse_seconds(v, &secs) < 0 || secs < s->lo || secs > s->hi)
            return lns_err_set(err, errlen, "%s: '%s' is not a duration from %llds to %llds",
                               key, v, s->lo, s->hi);
        *(int *)field = (int)secs;
        return 0;
    case LNS_CONF_BOOL: return lns_conf_bool(key, v, (int *)field, err, errlen);
    case LNS_CONF_LEVEL:
        if ((level = lns_log_level_parse(v)) < 0)
            return lns_err_set(err, errlen, "%s: '%s' is not error, warn, info or debug", key,
                               v);
        *(int *)field = level;
        return 0;
    case LNS_CONF_FUNC: return s->fn(cfg, key, v, err, errlen);
    case LNS_CONF_FILE:
        if (lns_conf_str(key, v, field, s->size, err, errlen) < 0)
            return -1;
        return lns_conf_file(settings, cfg, v, err, errlen);
    case LNS_CONF_CMD: break;
    }
    return lns_err_set(err, errlen, "unknown setting '%s'", key);
}

/* What lns_conf_read's callback is given: the table and the config it fills. */
typedef struct {
    const lns_conf_setting_t *settings;
    void *cfg;
} table_arg_t;

static int table_set(void *arg, const char *key, const char *value, char *err, size_t errlen)
{
    table_arg_t *t = arg;
    return lns_conf_set(t->settings, t->cfg, key, value, err, errlen);
}

int lns_conf_file(const lns_conf_setting_t *settings, void *cfg, const char *path, char *err,
                  size_t errlen)
{
    table_arg_t t = {settings, cfg};
    return lns_conf_read(path, table_set, &t, err, errlen);
}

int lns_conf_daemon_args(const lns_conf_daemon_t *d, int argc, char **argv, lns_conf_set_fn set,
                         void *arg, char *err, size_t errlen)
{
    table_arg_t t = {d->settings, arg};
    lns_conf_opt_t *opts;
    size_t n = 0;
    int rc;

    while (d->settings[n].name)
        n++;
    if (!(opts = calloc(n + 1, sizeof *opts))) {
        lns_err_set(err, errlen, "command line: out of memory");
        return LNS_CONF_ERR;
    }
    for (size_t i = 0; i < n; i++) {
        const lns_conf_setting_t *s = &d->settings[i];
        opts[i] = (lns_conf_opt_t){s->name, s->letter,
                                   s->type != LNS_CONF_BOOL && s->type != LNS_CONF_CMD};
    }
    rc = lns_conf_args(&(lns_conf_cli_t){d->usage, d->version, opts}, argc, argv,
                       set ? set : table_set, set ? arg : &t, err, errlen);
    free(opts);
    return rc;
}
