/* lbone_query.c -- lbone_query: ask an L-Bone for depots, print a table or the JSON answer.
 *
 * Built on liblbone's public header only (lbone.h), so it shows what any client can do.
 * Servers given with --lbone (or -H/-P) are tried in order, the first that answers wins.
 * Exit codes (also in man/lbone_query.1): 0 ok (also when no depot matches), 1 the L-Bone
 * refused the request, 2 usage, 3 no L-Bone answered, 4 an answer that is not the API's.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ibp.h"
#include "lbone.h"
#include "lns_units.h"
#include "lns_version.h"

enum { EX_OK = 0, EX_REFUSED = 1, EX_USAGE = 2, EX_NET = 3, EX_PROTO = 4 };
#define MAX_SERVERS 16

static const char usage_text[] =
"Usage: lbone_query [options]\n"
"Ask an L-Bone for depots with enough space for enough time, nearest to a place first.\n"
"\n"
"  -H, --lbone URL         L-Bone server: http://host:port, host:port or host (port 6767);\n"
"                          repeat to give fallbacks, tried in order (default localhost)\n"
"  -P, --port PORT         port for the -H servers given without one\n"
"  -l, --location LOC      order by distance from LOC: \"lat,lon\", \"airport= TYS\",\n"
"                          \"zip= 37996\", \"city= Knoxville state= TN\",\n"
"                          \"city= Amsterdam country= NL\", \"state= TN\", \"country= NL\",\n"
"                          \"host= depot.example.org\"\n"
"  -m, --count N           at most N depots (default: the L-Bone's)\n"
"  -s, --soft SIZE         at least SIZE of soft storage free (K, M, G, T)\n"
"  -h, --hard SIZE         at least SIZE of hard storage free\n"
"  -d, --duration TIME     allocations may last at least TIME (s, m, h, d)\n"
"  -o, --order ORDER       distance (default) or bandwidth (the L-Bone's forecasts)\n"
"      --connection C      at least this connection: T1, T3, OC3, 100M, 1G, 10G...\n"
"      --monitoring H      monitored at least H hours a day\n"
"      --power P           at least this power backup: none, ups, generator\n"
"      --no-firewall       only depots not behind a firewall\n"
"      --json              print the L-Bone's JSON answer instead of a table\n"
"  -T, --timeout TIME      give up on a server after TIME (default 15s)\n"
"      --help              this text\n"
"      --version           the version\n"
"\n"
"Exit: 0 ok, 1 the L-Bone refused the request, 2 usage, 3 no L-Bone answered,\n"
"4 an answer that is not the L-Bone's.\n";

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "lbone_query: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (try 'lbone_query --help')\n");
    return EX_USAGE;
}

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

static void print_table(const lbone_result_t *r)
{
    char addr[300], hard[16], soft[16], dur[24], dist[24], fc[24], heard[24];
    time_t now = time(NULL);
    printf("%-3s %-28s %-6s %8s %8s %7s %10s %10s %6s  %s\n", "#", "DEPOT", "RID", "HARD",
           "SOFT", "MAXDUR", "DISTANCE", "FORECAST", "HEARD", "PLACE");
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
        printf("%-3zu %-28s %-6s %8s %8s %7s %10s %10s %6s  %s\n", i + 1, addr,
               d->rid[0] ? d->rid : "-", hard, soft, dur, dist, fc, heard,
               d->place[0] ? d->place : "-");
    }
    if (r->resolved)
        printf("location: %s (%.4f,%.4f)\n", r->place[0] ? r->place : "?", r->lat, r->lon);
    printf("%zu depot%s from %s\n", r->n, r->n == 1 ? "" : "s", r->server);
}

int main(int argc, char **argv)
{
    enum { O_CONN = 256, O_MON, O_POWER, O_NOFW, O_JSON, O_HELP, O_VERSION };
    static const struct option opts[] = {
        {"lbone", required_argument, NULL, 'H'},   {"port", required_argument, NULL, 'P'},
        {"location", required_argument, NULL, 'l'}, {"count", required_argument, NULL, 'm'},
        {"soft", required_argument, NULL, 's'},    {"hard", required_argument, NULL, 'h'},
        {"duration", required_argument, NULL, 'd'}, {"order", required_argument, NULL, 'o'},
        {"connection", required_argument, NULL, O_CONN},
        {"monitoring", required_argument, NULL, O_MON},
        {"power", required_argument, NULL, O_POWER}, {"no-firewall", no_argument, NULL, O_NOFW},
        {"json", no_argument, NULL, O_JSON},        {"timeout", required_argument, NULL, 'T'},
        {"help", no_argument, NULL, O_HELP},        {"version", no_argument, NULL, O_VERSION},
        {NULL, 0, NULL, 0}};
    const char *given[MAX_SERVERS];
    char servers_buf[MAX_SERVERS][300];
    const char *servers[MAX_SERVERS];
    size_t nservers = 0;
    const char *port = NULL;
    int json = 0, c;
    lbone_request_t req;
    lbone_request_init(&req);

    opterr = 0;
    while ((c = getopt_long(argc, argv, ":H:P:l:m:s:h:d:o:T:", opts, NULL)) != -1) {
        char *end;
        long v;
        int64_t secs;
        switch (c) {
        case 'H':
            if (nservers == MAX_SERVERS)
                return usage_error("at most %s L-Bone servers", "16");
            given[nservers++] = optarg;
            break;
        case 'P':
            v = strtol(optarg, &end, 10);
            if (*end || end == optarg || v < 1 || v > 65535)
                return usage_error("--port: '%s' is not a port (1 to 65535)", optarg);
            port = optarg;
            break;
        case 'l':
            req.location = optarg;
            break;
        case 'm':
            v = strtol(optarg, &end, 10);
            if (*end || end == optarg || v < 1 || v > 10000)
                return usage_error("--count: '%s' is not a number from 1 to 10000", optarg);
            req.count = (int)v;
            break;
        case 's':
            if (lns_parse_size(optarg, &req.soft) < 0)
                return usage_error("--soft: '%s' is not a size", optarg);
            break;
        case 'h':
            if (lns_parse_size(optarg, &req.hard) < 0)
                return usage_error("--hard: '%s' is not a size", optarg);
            break;
        case 'd':
            if (lns_parse_seconds(optarg, &req.duration) < 0)
                return usage_error("--duration: '%s' is not a duration", optarg);
            break;
        case 'o':
            if (strcmp(optarg, "distance") != 0 && strcmp(optarg, "bandwidth") != 0)
                return usage_error("--order: '%s' is not distance or bandwidth", optarg);
            req.order = optarg;
            break;
        case 'T':
            if (lns_parse_seconds(optarg, &secs) < 0 || secs < 1 || secs > 3600)
                return usage_error("--timeout: '%s' is not a duration of 1s to 1h", optarg);
            lbone_set_timeouts(secs * 1000 < 3000 ? (int)secs * 1000 : 3000, (int)secs * 1000);
            break;
        case O_CONN:
            req.connection = optarg;
            break;
        case O_MON:
            v = strtol(optarg, &end, 10);
            if (*end || end == optarg || v < 0 || v > 24)
                return usage_error("--monitoring: '%s' is not 0 to 24 hours", optarg);
            req.monitoring = (int)v;
            break;
        case O_POWER:
            req.power = optarg;
            break;
        case O_NOFW:
            req.firewall = 0;
            break;
        case O_JSON:
            json = 1;
            break;
        case O_HELP:
            fputs(usage_text, stdout);
            return EX_OK;
        case O_VERSION:
            printf("lbone_query (lns) %s\n", LNS_VERSION);
            return EX_OK;
        case ':':
            return usage_error("%s needs a value", argv[optind - 1]);
        default:
            return usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return usage_error("unexpected argument '%s'", argv[optind]);
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
    if (json) {
        size_t n = strlen(res.json);
        fputs(res.json, stdout);
        if (!n || res.json[n - 1] != '\n')
            putchar('\n');
    }
    else
        print_table(&res);
    lbone_result_free(&res);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        perror("lbone_query: stdout");
        return EX_PROTO;
    }
    return EX_OK;
}
