/* lns_conf.c -- reading "key = value" configuration files (see lns_conf.h). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "lns_conf.h"

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

int lns_conf_read(const char *path, lns_conf_set_fn set, void *arg, char *err, size_t errlen)
{
    char line[PATH_MAX + 512], why[PATH_MAX + 256];
    int lineno = 0, rc = 0;
    FILE *f = fopen(path, "r");

    if (!f) {
        snprintf(err, errlen, "config: cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    while (rc == 0 && fgets(line, sizeof line, f)) {
        char *hash, *eq, *key, *val;
        lineno++;
        if (!strchr(line, '\n') && !feof(f)) {
            snprintf(err, errlen, "%s:%d: line too long", path, lineno);
            rc = -1;
            break;
        }
        if ((hash = strchr(line, '#')))
            *hash = 0;
        key = trim(line);
        if (!*key)
            continue;
        if (!(eq = strchr(key, '='))) {
            snprintf(err, errlen, "%s:%d: expected 'key = value'", path, lineno);
            rc = -1;
            break;
        }
        *eq = 0;
        val = trim(eq + 1);
        key = trim(key);
        if (strcmp(key, "config") == 0 || strcmp(key, "check-config") == 0) {
            snprintf(err, errlen, "%s:%d: '%s' cannot be set in a config file", path, lineno, key);
            rc = -1;
        } else if (set(arg, key, val, why, sizeof why) < 0) {
            snprintf(err, errlen, "%s:%d: %s", path, lineno, why);
            rc = -1;
        }
    }
    fclose(f);
    return rc;
}
