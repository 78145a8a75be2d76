/* lbone_query.c -- lbone_query: ask an L-Bone for depots, print a table or the JSON answer.
 *
 * Built on liblbone's public header only (lbone.h), so it shows what any client can do.
 * Servers given with --lbone (or -H/-P) are tried in order, the first that answers wins.
 * Exit codes (also in man/lbone_query.1): 0 ok (also when no depot matches), 1 the L-Bone
 * refused the request, 2 usage, 3 no L-Bone answered, 4 an answer that is not the API's.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ibp.h"
#include "lbone.h"
#include "lns_units.h"
#include "lns_err.h"
#include "tool_opt.h"

enum { EX_OK = 0, EX_REFUSED = 1, EX_USAGE = 2, EX_NET = 3, EX_PROTO = 4 };
#define MAX_SERVERS 16

/* "1.5G" style, for the table. */
static void human(int64_t bytes, char *out, size_t size)
{
    static const char units[] = "BKMGTP";
    double v = (double)bytes;
    int u = 0;
    if (bytes < 0) {
        snprintf(out, size, "-");
        return;
    }
    while (v >= 1024 && u < 5)
        v /= 1024, u++;
    snprintf(out, size, u ? "%.1f%c" : "%.0f%c", v, units[u]);
}

static void duration(int64_t s, char *out, size_t size)
{
    if (s < 0)
        snprintf(out, size, "-");
    else if (s >= 86400 && s % 3600 == 0)
        snprintf(out, size, "%lldd", (long long)(s / 86400));
    else if (s >= 3600)
        snprintf(out, size, "%lldh", (long long)(s / 3600));
    else
        snprintf(out, size, "%llds", (long long)s);
}

static void print_table(const lbone_result_t *r, int all)
{
    char addr[300], hard[16], soft[16], dur[24], dist[24], fc[24], heard[24];
    time_t now = time(NULL);
    printf("%-3s %-28s %-6s %8s %8s %7s %10s %10s %6s  %s%s\n", "#", "DEPOT", "RID", "HARD",
           "SOFT", "MAXDUR", "DISTANCE", "FORECAST", "HEARD", all ? "STATUS       " : "",
           "PLACE");
    for (size_t i = 0; i < r->n; i++) {
        const lbone_depot_info_t *d = &r->depots[i];
        snprintf(addr, sizeof addr, "%s:%d", d->host, d->port);
        human(d->hard_free, hard, sizeof hard);
        human(d->soft_free, soft, sizeof soft);
        duration(d->max_duration, dur, sizeof dur);
        if (isnan(d->distance_km))
            snprintf(dist, sizeof dist, "-");
        else
            snprintf(dist, sizeof dist, "%.0f km", d->distance_km);
        if (isnan(d->forecast_mbps))
            snprintf(fc, sizeof fc, "-");
        else
            snprintf(fc, sizeof fc, "%.1f Mb/s", d->forecast_mbps);
        if (d->last_heard < 0)
            snprintf(heard, sizeof heard, "-");
        else
            snprintf(heard, sizeof heard, "%llds", (long long)(now - d->last_heard));
        printf("%-3zu %-28s %-6s %8s %8s %7s %10s %10s %6s  ", i + 1, addr,
               d->rid[0] ? d->rid : "-", hard, soft, dur, dist, fc, heard);
        if (all)
            printf("%-12s ", d->status[0] ? d->status : "-");
        printf("%s\n", d->place[0] ? d->place : "-");
    }
    if (r->resolved)
        printf("location: %s (%.4f,%.4f)\n", r->place[0] ? r->place : "?", r->lat, r->lon);
    printf("%zu depot%s from %s\n", r->n, r->n == 1 ? "" : "s", r->server);
}

/* What the flags said (tool_opt.h): no rc file, the request's fields as given. */
typedef struct settings {
    tool_common_t c;
    const char *given[MAX_SERVERS]; /* -H, in order */
    size_t nservers;
    const char *port, *location, *order, *connection, *power;
    int count, monitoring, no_firewall, json, all;
    int64_t soft, hard, duration;
} settings_t;

#define S(field) TOOL_OFF(settings_t, field)

static int set_server(void *sp, const tool_opt_t *o, const char *name, const char *val,
                      tool_from from, char *err, size_t errlen)
{
    settings_t *s = sp;
    if (s->nservers == MAX_SERVERS)
        return lns_err_set(err, errlen, "at most %d L-Bone servers", MAX_SERVERS);
    s->given[s->nservers++] = val;
    return 0;
}

static int set_port(void *sp, const tool_opt_t *o, const char *name, const char *val,
                    tool_from from, char *err, size_t errlen)
{
    if (tool_opt_check(o, TOOL_OPT_INT, name, val, from, err, errlen) < 0)
        return -1;
    ((settings_t *)sp)->port = val;
    return 0;
}

static int set_order(void *sp, const tool_opt_t *o, const char *name, const char *val,
                     tool_from from, char *err, size_t errlen)
{
    if (strcmp(val, "distance") != 0 && strcmp(val, "bandwidth") != 0)
        return lns_err_set(err, errlen, "%s %s: expected distance or bandwidth", name, val);
    ((settings_t *)sp)->order = val;
    return 0;
}

static const tool_opt_t opts[] = {
    {TOOL_OPT_FN, "lbone", 'H', NULL, 0, 0, 0, NULL, "URL",
     "L-Bone server: https://host:port#sha256:... (as lbone_server\nlogs it), "
     "http://host:port, host:port or host (port 6767);\nrepeat to give "
     "fallbacks, tried in order (default localhost)", set_server},
    {TOOL_OPT_FN, "port", 'P', NULL, 0, 1, 65535, NULL, "PORT",
     "port for the -H servers given without one", set_port},
    {TOOL_OPT_STR, "location", 'l', NULL, S(location), 0, 0, NULL, "LOC",
     "order by distance from LOC: \"lat,lon\", \"airport= TYS\",\n\"zip= 37996\", \"city= "
     "Knoxville state= TN\",\n\"city= Amsterdam country= NL\", \"state= TN\", \"country= "
     "NL\",\n\"host= depot.example.org\"", NULL},
    {TOOL_OPT_INT, "count", 'm', NULL, S(count), 1, 10000, NULL, "N",
     "at most N depots (default: the L-Bone's)", NULL},
    {TOOL_OPT_SIZE, "soft", 's', NULL, S(soft), 0, INT64_MAX, NULL, "SIZE",
     "at least SIZE of soft storage free (K, M, G, T)", NULL},
    {TOOL_OPT_SIZE, "hard", 'h', NULL, S(hard), 0, INT64_MAX, NULL, "SIZE",
     "at least SIZE of hard storage free", NULL},
    {TOOL_OPT_SECONDS, "duration", 'd', NULL, S(duration), 0, INT64_MAX, NULL, "TIME",
     "allocations may last at least TIME (s, m, h, d)", NULL},
    {TOOL_OPT_FN, "order", 'o', NULL, 0, 0, 0, NULL, "ORDER",
     "distance (default) or bandwidth (the L-Bone's forecasts)", set_order},
    {TOOL_OPT_STR, "connection", 0, NULL, S(connection), 0, 0, NULL, "C",
     "at least this connection: T1, T3, OC3, 100M, 1G, 10G...", NULL},
    {TOOL_OPT_INT, "monitoring", 0, NULL, S(monitoring), 0, 24, NULL, "H",
     "monitored at least H hours a day", NULL},
    {TOOL_OPT_STR, "power", 0, NULL, S(power), 0, 0, NULL, "P",
     "at least this power backup: none, ups, generator", NULL},
    {TOOL_OPT_SWITCH, "no-firewall", 0, NULL, S(no_firewall), 1, 0, NULL, NULL,
     "only depots not behind a firewall", NULL},
    {TOOL_OPT_SWITCH, "all", 'a', NULL, S(all), 1, 0, NULL, NULL,
     "every depot, whatever its status (down, unreachable, probing,\nleaving), with a STATUS "
     "column", NULL},
    {TOOL_OPT_SWITCH, "json", 0, NULL, S(json), 1, 0, NULL, NULL,
     "print the L-Bone's JSON answer instead of a table", NULL},
    {TOOL_OPT_SECONDS, "timeout", 'T', NULL, TOOL_C(timeout), 1, 3600, "15s", "TIME",
     "give up on a server after TIME", NULL},
    TOOL_OPT_HELP,
    TOOL_OPT_TABLE_END,
};

static const tool_cmd_t cmd = {
    "lbone_query",
    "Usage: lbone_query [options]\n"
    "Ask an L-Bone for depots with enough space for enough time, nearest to a place first.\n\n",
    "\nExit: 0 ok, 1 the L-Bone refused the request, 2 usage, 3 no L-Bone answered,\n"
    "4 an answer that is not the L-Bone's.\n",
    opts, sizeof(settings_t), NULL,
};

int main(int argc, char **argv)
{
    settings_t s;
    char servers_buf[MAX_SERVERS][300];
    const char *servers[MAX_SERVERS], **given;
    lbone_request_t req;
    int first, code = tool_opt_parse(&cmd, argc, argv, &s, &first);
    if (code)
        return code;
    if (first < argc)
        return tool_usage(cmd.name, "unexpected argument '%s'", argv[first]);
    given = s.given;
    lbone_set_timeouts(s.c.timeout * 1000 < 3000 ? (int)s.c.timeout * 1000 : 3000,
                       (int)s.c.timeout * 1000);
    lbone_request_init(&req);
    req.location = s.location;
    req.order = s.order;
    req.connection = s.connection;
    req.power = s.power;
    req.count = s.count != TOOL_UNSET_INT ? s.count : 0;
    req.monitoring = s.monitoring != TOOL_UNSET_INT ? s.monitoring : -1;
    req.firewall = s.no_firewall ? 0 : -1;
    req.any_status = s.all;
    req.soft = s.soft != TOOL_UNSET ? (uint64_t)s.soft : 0;
    req.hard = s.hard != TOOL_UNSET ? (uint64_t)s.hard : 0;
    req.duration = s.duration != TOOL_UNSET ? s.duration : 0;
    size_t nservers = s.nservers;
    const char *port = s.port;
    if (!nservers)
        given[nservers++] = "localhost";
    /* -P applies to the servers named without a port or scheme. */
    for (size_t i = 0; i < nservers; i++) {
        servers[i] = given[i];
        if (port && !strstr(given[i], "://") && !strchr(given[i], ':')) {
            snprintf(servers_buf[i], sizeof servers_buf[i], "%s:%s", given[i], port);
            servers[i] = servers_buf[i];
        }
    }

    lbone_result_t res;
    char err[1600];
    int rc = lbone_query_depots(servers, nservers, &req, &res, err, sizeof err);
    if (rc != LBONE_OK) {
        fprintf(stderr, "lbone_query: %s\n", err);
        lbone_result_free(&res);
        return rc == LBONE_E_REFUSED || rc == LBONE_E_AUTH ? EX_REFUSED
             : rc == LBONE_E_ARG                           ? EX_USAGE
             : rc == LBONE_E_CONNECT                       ? EX_NET
                                                           : EX_PROTO;
    }
    if (s.json) {
        size_t n = strlen(res.json);
        fputs(res.json, stdout);
        if (!n || res.json[n - 1] != '\n')
            putchar('\n');
    }
    else
        print_table(&res, s.all);
    lbone_result_free(&res);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        perror("lbone_query: stdout");
        return EX_PROTO;
    }
    return EX_OK;
}
