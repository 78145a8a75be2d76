/* lbone_srv_env.c -- a depot's environment attributes and the "at least this good" filters.
 *
 * Each attribute is kept as a rank where larger is better, so a filter is one comparison
 * and "a value also matches anything better" holds by construction: connections are ranked
 * by line speed (an OC3 depot satisfies connection=T3), monitoring by hours per day, power
 * none < ups < generator, and firewall as openness (a depot not behind a firewall satisfies
 * firewall=yes as well as firewall=no; firewall=yes thus filters nothing).  An attribute a
 * depot did not declare is unknown and satisfies no filter on it.
 */
#include "lbone_srv.h"
#include "lns_err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Ordered by speed (Mbit/s in the comment). */
static const char *const connections[] = {
    "T1",    /* 1.544 */
    "E1",    /* 2.048 */
    "10M",   /* 10 */
    "E3",    /* 34.368 */
    "T3",    /* 44.736 */
    "100M",  /* 100 */
    "OC3",   /* 155.52 */
    "OC12",  /* 622.08 */
    "1G",    /* 1000 */
    "OC48",  /* 2488.32 */
    "OC192", /* 9953.28 */
    "10G",   /* 10000 */
    "40G",   /* 40000 */
    "100G",  /* 100000 */
};
#define NCONN ((int)(sizeof connections / sizeof connections[0]))

static const char *const powers[] = {"none", "ups", "generator"};
#define NPOWER ((int)(sizeof powers / sizeof powers[0]))

void lbone_env_unknown(lbone_env_t *e)
{
    e->connection = e->monitoring = e->power = e->open = -1;
}

/* A value's rank in one of the lists above (case does not count), or -1. */
static int rank_of(const char *const *list, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (strcasecmp(s, list[i]) == 0)
            return i;
    return -1;
}

int lbone_env_connection_parse(const char *s)
{
    return rank_of(connections, NCONN, s);
}

const char *lbone_env_connection_name(int idx)
{
    return idx >= 0 && idx < NCONN ? connections[idx] : NULL;
}

int lbone_env_power_parse(const char *s)
{
    return rank_of(powers, NPOWER, s);
}

const char *lbone_env_power_name(int idx)
{
    return idx >= 0 && idx < NPOWER ? powers[idx] : NULL;
}

static void conn_list(char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; i < NCONN && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, "%s%s", i ? " " : "", connections[i]);
}

int lbone_env_from_json(json_t *v, lbone_env_t *out, char *err, size_t errlen)
{
    const char *k;
    json_t *m;
    lbone_env_unknown(out);
    if (!json_is_object(v)) {
        lns_err_set(err, errlen, "env: must be an object");
        return -1;
    }
    json_object_foreach (v, k, m) {
        const char *str;
        int64_t i;
        if (strcmp(k, "connection") == 0) {
            if (!(str = json_string_value(m)) ||
                (out->connection = lbone_env_connection_parse(str)) < 0) {
                char list[256];
                conn_list(list, sizeof list);
                lns_err_set(err, errlen, "env.connection: must be one of %s", list);
                return -1;
            }
        } else if (strcmp(k, "monitoring") == 0) {
            if (lbone_json_int(m, &i) < 0 || i < 0 || i > 24) {
                lns_err_set(err, errlen, "env.monitoring: must be hours per day, 0 to 24");
                return -1;
            }
            out->monitoring = (int)i;
        } else if (strcmp(k, "power") == 0) {
            if (!(str = json_string_value(m)) || (out->power = lbone_env_power_parse(str)) < 0) {
                lns_err_set(err, errlen, "env.power: must be none, ups or generator");
                return -1;
            }
        } else if (strcmp(k, "firewall") == 0) {
            if (!json_is_boolean(m)) {
                lns_err_set(err, errlen, "env.firewall: must be true or false");
                return -1;
            }
            out->open = json_is_false(m);
        } else {
            lns_err_set(err, errlen,
                        "env: unknown attribute (connection, monitoring, power, firewall)");
            return -1;
        }
    }
    return 0;
}

static int parse_bool(const char *v)
{
    if (strcasecmp(v, "yes") == 0 || strcasecmp(v, "true") == 0 || strcmp(v, "1") == 0)
        return 1;
    if (strcasecmp(v, "no") == 0 || strcasecmp(v, "false") == 0 || strcmp(v, "0") == 0)
        return 0;
    return -1;
}

int lbone_env_query_param(lbone_env_t *want, const char *key, const char *v, char *err,
                          size_t errlen)
{
    if (strcmp(key, "connection") == 0) {
        if ((want->connection = lbone_env_connection_parse(v)) < 0) {
            char list[256];
            conn_list(list, sizeof list);
            lns_err_set(err, errlen, "connection: must be one of %s", list);
            return -1;
        }
        return 1;
    }
    if (strcmp(key, "monitoring") == 0) {
        char *end;
        long h = strtol(v, &end, 10);
        if (!*v || *end || h < 0 || h > 24) {
            lns_err_set(err, errlen, "monitoring: must be hours per day, 0 to 24");
            return -1;
        }
        want->monitoring = (int)h;
        return 1;
    }
    if (strcmp(key, "power") == 0) {
        if ((want->power = lbone_env_power_parse(v)) < 0) {
            lns_err_set(err, errlen, "power: must be none, ups or generator");
            return -1;
        }
        return 1;
    }
    if (strcmp(key, "firewall") == 0) {
        int b = parse_bool(v);
        if (b < 0) {
            lns_err_set(err, errlen, "firewall: must be yes or no");
            return -1;
        }
        /* firewall=no asks for open depots; firewall=yes accepts any. */
        want->open = b ? -1 : 1;
        return 1;
    }
    return 0;
}

static int at_least(int have, int want)
{
    return want < 0 || (have >= 0 && have >= want);
}

int lbone_env_matches(const lbone_env_t *have, const lbone_env_t *want)
{
    return at_least(have->connection, want->connection) &&
           at_least(have->monitoring, want->monitoring) && at_least(have->power, want->power) &&
           at_least(have->open, want->open);
}

void lbone_env_put_json(lns_buf_t *b, const lbone_env_t *e)
{
    lns_buf_puts(b, "{\"connection\":");
    if (e->connection >= 0)
        lbone_json_put_string(b, lbone_env_connection_name(e->connection));
    else
        lns_buf_puts(b, "null");
    lns_buf_puts(b, ",\"monitoring\":");
    if (e->monitoring >= 0)
        lns_buf_printf(b, "%d", e->monitoring);
    else
        lns_buf_puts(b, "null");
    lns_buf_puts(b, ",\"power\":");
    if (e->power >= 0)
        lbone_json_put_string(b, lbone_env_power_name(e->power));
    else
        lns_buf_puts(b, "null");
    lns_buf_puts(b, ",\"firewall\":");
    lns_buf_puts(b, e->open < 0 ? "null" : e->open ? "false" : "true");
    lns_buf_puts(b, "}");
}
