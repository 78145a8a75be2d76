/* lns_conf.c -- a daemon's settings from "key = value" files and its command line.
 *
 * The command line goes through getopt_long, twice over the same argv: the first pass finds
 * errors, --help, --version and the config file before anything is set, the second feeds each
 * flag to the same setter as the file, so flags win over the file whatever their order.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lns_conf.h"
#include "lns_err.h"

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
