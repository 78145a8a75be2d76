/* test_lbone_server.c -- lbone_server as a process: registration, heartbeats and expiry with
 * real depots, authentication, query filters and ordering, STATUS probes, hostile input,
 * restarts, bandwidth reports.
 *
 * Every test starts its own server (tests/lib/test_lbone.h) on a loopback port it picks.
 * Tests that only exercise the registry run with --probe-interval 0 and made-up host names;
 * those about liveness and reachability register real ibp_depot processes and keep probing
 * on.  "Nothing changed" is checked by comparing the full query answer before and after.
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sqlite3.h>
#include <unistd.h>

#include "lns_test.h"
#include "test_depot.h"
#include "test_lbone.h"

/* Coordinates of three airports, as a depot would register them. */
#define TYS_LAT 35.8111
#define TYS_LON -83.9941
#define AMS_LAT 52.3086
#define AMS_LON 4.7639
#define NRT_LAT 35.7647
#define NRT_LON 140.3864

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static double haversine(double la1, double lo1, double la2, double lo2)
{
    const double r = M_PI / 180;
    double a = sin((la2 - la1) * r / 2), b = sin((lo2 - lo1) * r / 2);
    double h = a * a + cos(la1 * r) * cos(la2 * r) * b * b;
    return 2 * 6371.0088 * asin(sqrt(h));
}

/* GET path; the body (caller frees) or NULL when the code is not want. */
static char *get(const test_lbone_t *l, const char *path, int want)
{
    char *resp = NULL;
    int code = tlb_http(l->port, "GET", path, NULL, NULL, &resp);
    if (code != want) {
        fprintf(stderr, "\n  GET %s: %d (wanted %d): %s\n", path, code, want, resp ? resp : "");
        free(resp);
        return NULL;
    }
    return resp;
}

/* The status of depot id ("up", "down", ...), or "" when GET fails (e.g. 404). */
static void status_of(const test_lbone_t *l, const char *id, char *st, size_t size)
{
    char path[64], *resp = NULL;
    snprintf(path, sizeof path, "/v1/depots/%s", id);
    st[0] = 0;
    if (tlb_http(l->port, "GET", path, NULL, NULL, &resp) == 200)
        tlb_json_str(resp, "status", 0, st, size);
    free(resp);
}

static int wait_status(const test_lbone_t *l, const char *id, const char *want, int ms)
{
    char st[32];
    for (int t = 0; t <= ms; t += 100) {
        status_of(l, id, st, sizeof st);
        if (strcmp(st, want) == 0)
            return 1;
        sleep_ms(100);
    }
    fprintf(stderr, "\n  depot %s is '%s', not '%s', after %d ms\n", id, st, want, ms);
    return 0;
}

static int heartbeat(const test_lbone_t *l, const char *id, const char *secret, const char *body)
{
    char path[80];
    snprintf(path, sizeof path, "/v1/depots/%s/heartbeat", id);
    return tlb_http(l->port, "PUT", path, secret, body, NULL);
}

/* How many depots a query returns, and whether host h appears in it. */
static int query_count(const test_lbone_t *l, const char *params)
{
    char path[512];
    snprintf(path, sizeof path, "/v1/depots?%s", params);
    char *r = get(l, path, 200);
    int n = r ? tlb_count(r, "\"id\":") : -1;
    free(r);
    return n;
}

static int query_has(const test_lbone_t *l, const char *params, const char *host)
{
    char path[512], pat[300];
    snprintf(path, sizeof path, "/v1/depots?%s", params);
    snprintf(pat, sizeof pat, "\"host\":\"%s\"", host);
    char *r = get(l, path, 200);
    int n = r ? tlb_count(r, pat) : -1;
    free(r);
    return n;
}

static void test_register_heartbeat_expiry(void)
{
    test_depot_t d1, d2;
    test_lbone_t l;
    char j[1024], id1[17], id2[17], s1[65], s2[65], st[32], *r;

    CU_ASSERT_FATAL(td_start(&d1, NULL) == 0);
    CU_ASSERT_FATAL(td_start(&d2, NULL) == 0);
    CU_ASSERT_FATAL(tlb_start(&l, "--heartbeat 1 --down-after 2 --drop-after 4 "
                                  "--probe-interval 60") == 0);
    tlb_depot_json(j, sizeof j, "127.0.0.1", d1.port, TYS_LAT, TYS_LON, 1000, 1000, 3600, "");
    CU_ASSERT_FATAL(tlb_register(&l, j, id1, s1) == 201);
    tlb_depot_json(j, sizeof j, "127.0.0.1", d2.port, AMS_LAT, AMS_LON, 1000, 1000, 3600, "");
    CU_ASSERT_FATAL(tlb_register(&l, j, id2, s2) == 201);
    CU_ASSERT(strcmp(id1, id2) != 0);
    CU_ASSERT(strlen(s1) == 64 && strcmp(s1, s2) != 0);
    /* Up once probed; the probe replaced the registered space with the depot's own. */
    CU_ASSERT_FATAL(wait_status(&l, id1, "up", 10000));
    CU_ASSERT_FATAL(wait_status(&l, id2, "up", 10000));
    CU_ASSERT(query_count(&l, "count=10") == 2);
    snprintf(j, sizeof j, "/v1/depots/%s", id1);
    r = get(&l, j, 200);
    CU_ASSERT(r && strstr(r, "\"hard_total\":67108864") && strstr(r, "\"state\":\"ok\""));
    free(r);

    /* Heartbeat: the answer names the interval; the fields it carries replace the old. */
    char *resp = NULL;
    snprintf(j, sizeof j, "/v1/depots/%s/heartbeat", id2);
    CU_ASSERT(tlb_http(l.port, "PUT", j, s2, "{\"hard_free\":12345,\"max_duration\":777}",
                       &resp) == 200);
    CU_ASSERT(resp && strstr(resp, "\"heartbeat_s\":1"));
    free(resp);
    snprintf(j, sizeof j, "/v1/depots/%s", id2);
    r = get(&l, j, 200);
    CU_ASSERT(r && strstr(r, "\"hard_free\":12345") && strstr(r, "\"max_duration\":777"));
    free(r);

    /* d2 keeps heartbeating, d1 falls silent after one last heartbeat: down after 2 s,
     * dropped after 4 s (t counts from after the last heartbeat's answer). */
    int saw_down = 0;
    CU_ASSERT(heartbeat(&l, id1, s1, "{}") == 200);
    int64_t t0 = now_ms();
    for (;;) {
        int64_t t = now_ms() - t0;
        CU_ASSERT(heartbeat(&l, id2, s2, "{}") == 200);
        status_of(&l, id1, st, sizeof st);
        if (t < 1500)
            CU_ASSERT(strcmp(st, "up") == 0);
        if (strcmp(st, "down") == 0 && !saw_down) {
            saw_down = 1;
            CU_ASSERT(query_has(&l, "count=10", "127.0.0.1") == 1);
        }
        if (t > 5500)
            break;
        sleep_ms(250);
    }
    CU_ASSERT(saw_down);
    status_of(&l, id1, st, sizeof st);
    CU_ASSERT(st[0] == 0); /* 404: dropped */
    CU_ASSERT(heartbeat(&l, id1, s1, "{}") == 404);
    CU_ASSERT(wait_status(&l, id2, "up", 0));
    CU_ASSERT(query_count(&l, "count=10") == 1);
    /* An empty heartbeat body is allowed; re-registration brings d1 back. */
    CU_ASSERT(heartbeat(&l, id2, s2, NULL) == 200);
    tlb_depot_json(j, sizeof j, "127.0.0.1", d1.port, TYS_LAT, TYS_LON, 1000, 1000, 3600, "");
    CU_ASSERT(tlb_register(&l, j, id1, s1) == 201);
    CU_ASSERT(wait_status(&l, id1, "up", 10000));

    lns_test_server_finish(&l.srv);
    lns_test_server_stop(&d1.srv);
    lns_test_server_stop(&d2.srv);
}

static void test_auth(void)
{
    test_lbone_t l;
    char j[1024], ida[17], idb[17], sa[65], sb[65], path[80], *resp = NULL;

    CU_ASSERT_FATAL(tlb_start(&l, "--probe-interval 0") == 0);
    tlb_depot_json(j, sizeof j, "a.test", 6714, TYS_LAT, TYS_LON, 1000, 0, 3600, "");
    CU_ASSERT(tlb_http(l.port, "POST", "/v1/depots", NULL, j, &resp) == 401);
    CU_ASSERT(resp && strstr(resp, "\"error\":"));
    free(resp);
    CU_ASSERT(tlb_http(l.port, "POST", "/v1/depots", "not-the-registry-token", j, NULL) == 403);
    CU_ASSERT(tlb_http(l.port, "POST", "/v1/depots", "", j, NULL) == 401);
    CU_ASSERT(query_count(&l, "") == 0);

    CU_ASSERT_FATAL(tlb_register(&l, j, ida, sa) == 201);
    tlb_depot_json(j, sizeof j, "b.test", 6714, AMS_LAT, AMS_LON, 1000, 0, 3600, "");
    CU_ASSERT_FATAL(tlb_register(&l, j, idb, sb) == 201);
    /* Another depot's secret, the registry token, nothing: refused. */
    CU_ASSERT(heartbeat(&l, ida, sb, "{}") == 403);
    CU_ASSERT(heartbeat(&l, ida, l.token, "{}") == 403);
    CU_ASSERT(heartbeat(&l, ida, NULL, "{}") == 401);
    CU_ASSERT(heartbeat(&l, ida, sa, "{}") == 200);
    snprintf(path, sizeof path, "/v1/depots/%s", ida);
    CU_ASSERT(tlb_http(l.port, "DELETE", path, sb, NULL, NULL) == 403);
    CU_ASSERT(tlb_http(l.port, "DELETE", path, NULL, NULL, NULL) == 401);
    CU_ASSERT(query_count(&l, "") == 2);

    /* Re-registering host:port/rid keeps the id and replaces the secret. */
    char id2[17], s2[65];
    tlb_depot_json(j, sizeof j, "a.test", 6714, TYS_LAT, TYS_LON, 5000, 0, 3600, "");
    CU_ASSERT(tlb_register(&l, j, id2, s2) == 201);
    CU_ASSERT(strcmp(id2, ida) == 0 && strcmp(s2, sa) != 0);
    CU_ASSERT(heartbeat(&l, ida, sa, "{}") == 403);
    CU_ASSERT(heartbeat(&l, ida, s2, "{}") == 200);
    CU_ASSERT(query_count(&l, "") == 2);
    CU_ASSERT(query_count(&l, "hard=4000") == 1);

    /* Delete: with the registry token, or with the depot's own secret. */
    CU_ASSERT(tlb_http(l.port, "DELETE", path, l.token, NULL, NULL) == 204);
    CU_ASSERT(tlb_http(l.port, "DELETE", path, l.token, NULL, NULL) == 404);
    snprintf(path, sizeof path, "/v1/depots/%s", idb);
    CU_ASSERT(tlb_http(l.port, "DELETE", path, sb, NULL, NULL) == 204);
    CU_ASSERT(query_count(&l, "") == 0);
    lns_test_server_finish(&l.srv);
}

static void test_query_filters(void)
{
    test_lbone_t l;
    char j[1024];
    const unsigned long long G = 1ULL << 30, M = 1ULL << 20;

    CU_ASSERT_FATAL(tlb_start(&l, "--probe-interval 0") == 0);
    tlb_depot_json(j, sizeof j, "d1.test", 6714, 10, 10, G, 0, 86400,
                   ",\"env\":{\"connection\":\"T1\",\"monitoring\":8,\"power\":\"none\","
                   "\"firewall\":true}");
    CU_ASSERT(tlb_register(&l, j, NULL, NULL) == 201);
    tlb_depot_json(j, sizeof j, "d2.test", 6714, 10, 10, 10 * G, G, 30 * 86400,
                   ",\"env\":{\"connection\":\"OC3\",\"monitoring\":24,\"power\":\"ups\","
                   "\"firewall\":false}");
    CU_ASSERT(tlb_register(&l, j, NULL, NULL) == 201);
    tlb_depot_json(j, sizeof j, "d3.test", 6714, 10, 10, 100 * M, 10 * G, 7 * 86400,
                   ",\"env\":{\"connection\":\"10G\",\"monitoring\":12,\"power\":\"generator\","
                   "\"firewall\":false}");
    CU_ASSERT(tlb_register(&l, j, NULL, NULL) == 201);
    tlb_depot_json(j, sizeof j, "d4.test", 6714, 10, 10, 2 * M, 2 * M, 3600, "");
    CU_ASSERT(tlb_register(&l, j, NULL, NULL) == 201);

    CU_ASSERT(query_count(&l, "") == 4);
    CU_ASSERT(query_count(&l, "count=2") == 2);
    CU_ASSERT(query_count(&l, "hard=2G") == 1 && query_has(&l, "hard=2G", "d2.test") == 1);
    CU_ASSERT(query_count(&l, "hard=2147483648") == 1);
    CU_ASSERT(query_count(&l, "soft=512M") == 2 && query_has(&l, "soft=512M", "d1.test") == 0);
    CU_ASSERT(query_count(&l, "duration=10d") == 1);
    CU_ASSERT(query_count(&l, "duration=172800") == 2);
    /* A value matches anything better; undeclared attributes match nothing. */
    CU_ASSERT(query_count(&l, "connection=T3") == 2 && query_has(&l, "connection=T3", "d1.test") == 0);
    CU_ASSERT(query_count(&l, "connection=t1") == 3 && query_has(&l, "connection=T1", "d4.test") == 0);
    CU_ASSERT(query_count(&l, "connection=100G") == 0);
    CU_ASSERT(query_count(&l, "monitoring=12") == 2);
    CU_ASSERT(query_count(&l, "monitoring=0") == 3);
    CU_ASSERT(query_count(&l, "power=ups") == 2 && query_has(&l, "power=ups", "d1.test") == 0);
    CU_ASSERT(query_count(&l, "power=generator") == 1);
    CU_ASSERT(query_count(&l, "firewall=no") == 2);
    CU_ASSERT(query_count(&l, "firewall=yes") == 4);
    CU_ASSERT(query_count(&l, "connection=OC3&power=generator") == 1 &&
              query_has(&l, "connection=OC3&power=generator", "d3.test") == 1);
    CU_ASSERT(query_count(&l, "hard=1G&soft=1G&duration=1d&connection=OC3") == 1);
    /* Without a location: most free hard space first. */
    char *r = get(&l, "/v1/depots", 200);
    CU_ASSERT(r && strstr(r, "d2.test") < strstr(r, "d1.test") &&
              strstr(r, "d1.test") < strstr(r, "d3.test") && strstr(r, "d3.test") < strstr(r, "d4.test"));
    CU_ASSERT(r && strstr(r, "\"resolved\":null") && strstr(r, "\"distance_km\":null"));
    free(r);

    static const char *bad[] = {"connection=T2", "monitoring=25", "monitoring=x", "power=solar",
                                "firewall=maybe", "hard=abc", "soft=-1", "duration=1y",
                                "count=0", "count=10001", "order=random", "colour=red",
                                "count=1&count=2", "location=", "location=airport%3D%20ZZZZ"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char path[256];
        snprintf(path, sizeof path, "/v1/depots?%s", bad[i]);
        r = get(&l, path, 400);
        CU_ASSERT(r && strstr(r, "\"error\":"));
        if (!r)
            fprintf(stderr, "  (query %s)\n", bad[i]);
        free(r);
    }
    lns_test_server_finish(&l.srv);
}

/* Positions of three hosts in an answer are in the given order. */
static int in_order(const char *r, const char *a, const char *b, const char *c)
{
    const char *pa = strstr(r, a), *pb = strstr(r, b), *pc = strstr(r, c);
    return pa && pb && pc && pa < pb && pb < pc;
}

/* distance_km of the n-th depot. */
static double nth_distance(const char *r, int n)
{
    const char *p = r;
    for (int i = 0; i <= n; i++) {
        p = strstr(p, "\"distance_km\":");
        if (!p)
            return -1;
        p += 14;
    }
    return atof(p);
}

static void test_order_distance_bandwidth(void)
{
    test_lbone_t l;
    char j[1024], *r;

    CU_ASSERT_FATAL(tlb_start(&l, "--probe-interval 0") == 0);
    /* Registered out of order, so the answer's order is the server's doing. */
    tlb_depot_json(j, sizeof j, "nrt.test", 6714, NRT_LAT, NRT_LON, 1000, 0, 3600, "");
    CU_ASSERT(tlb_register(&l, j, NULL, NULL) == 201);
    tlb_depot_json(j, sizeof j, "tys.test", 6714, TYS_LAT, TYS_LON, 1000, 0, 3600, "");
    CU_ASSERT(tlb_register(&l, j, NULL, NULL) == 201);
    tlb_depot_json(j, sizeof j, "ams.test", 6714, AMS_LAT, AMS_LON, 1000, 0, 3600, "");
    CU_ASSERT(tlb_register(&l, j, NULL, NULL) == 201);

    r = get(&l, "/v1/depots?location=33.64%2C-84.43", 200);
    CU_ASSERT_FATAL(r != NULL);
    CU_ASSERT(in_order(r, "tys.test", "ams.test", "nrt.test"));
    CU_ASSERT(fabs(nth_distance(r, 0) - haversine(33.64, -84.43, TYS_LAT, TYS_LON)) < 0.5);
    CU_ASSERT(fabs(nth_distance(r, 1) - haversine(33.64, -84.43, AMS_LAT, AMS_LON)) < 0.5);
    CU_ASSERT(fabs(nth_distance(r, 2) - haversine(33.64, -84.43, NRT_LAT, NRT_LON)) < 0.5);
    CU_ASSERT(strstr(r, "\"resolved\":{\"lat\":33.64,\"lon\":-84.43") != NULL);
    free(r);

    r = get(&l, "/v1/depots?location=airport%3D%20ATL", 200);
    CU_ASSERT_FATAL(r != NULL);
    CU_ASSERT(in_order(r, "tys.test", "ams.test", "nrt.test"));
    CU_ASSERT(nth_distance(r, 0) > 200 && nth_distance(r, 0) < 300); /* ATL-TYS ~245 km */
    CU_ASSERT(strstr(r, "ATL") != NULL);
    free(r);
    /* From Amsterdam and from Tokyo the order turns round. */
    r = get(&l, "/v1/depots?location=city%3D%20Amsterdam%20country%3D%20NL", 200);
    CU_ASSERT(r && in_order(r, "ams.test", "tys.test", "nrt.test"));
    free(r);
    r = get(&l, "/v1/depots?location=airport%3DNRT&count=2", 200);
    CU_ASSERT(r && tlb_count(r, "\"id\":") == 2 && strstr(r, "nrt.test") < strstr(r, "ams.test") &&
              !strstr(r, "tys.test"));
    free(r);
    /* host= resolves from the registry. */
    r = get(&l, "/v1/depots?location=host%3D%20tys.test", 200);
    CU_ASSERT(r && in_order(r, "tys.test", "ams.test", "nrt.test") && nth_distance(r, 0) < 0.001);
    free(r);
    r = get(&l, "/v1/depots?location=host%3Dnowhere.test", 400);
    free(r);

    /* A place name is resolved at registration. */
    char id[17];
    snprintf(j, sizeof j, "{\"host\":\"ams2.test\",\"port\":6714,\"hard_total\":10,"
                          "\"hard_free\":10,\"soft_total\":0,\"soft_free\":0,"
                          "\"max_duration\":60,\"place\":\"airport= AMS\"}");
    CU_ASSERT(tlb_register(&l, j, id, NULL) == 201);
    snprintf(j, sizeof j, "/v1/depots/%s", id);
    r = get(&l, j, 200);
    CU_ASSERT(r && strstr(r, "\"lat\":52.3") && strstr(r, "\"lon\":4.7") && strstr(r, "AMS"));
    free(r);

    /* order=bandwidth: forecasts for this network first (fastest first), then by distance. */
    const char *rep = "{\"reports\":[{\"depot\":\"nrt.test:6714\",\"mbps\":90,\"bytes\":1000000,"
                      "\"seconds\":0.09},{\"depot\":\"ams.test:6714\",\"mbps\":30}]}";
    CU_ASSERT(tlb_http(l.port, "POST", "/v1/reports", NULL, rep, NULL) == 204);
    r = get(&l, "/v1/depots?location=airport%3D%20ATL&order=bandwidth", 200);
    CU_ASSERT(r && in_order(r, "nrt.test", "ams.test", "tys.test"));
    CU_ASSERT(r && strstr(r, "\"forecast_mbps\":90") && strstr(r, "\"forecast_mbps\":30"));
    free(r);
    r = get(&l, "/v1/depots?location=airport%3D%20ATL", 200);
    CU_ASSERT(r && in_order(r, "tys.test", "ams.test", "nrt.test") &&
              strstr(r, "\"forecast_mbps\":90"));
    free(r);
    lns_test_server_finish(&l.srv);
}

static void test_unreachable(void)
{
    test_depot_t d;
    test_lbone_t l;
    char j[1024], idd[17], idx[17], sd[65], sx[65];
    int dead_port;

    int fd = raw_listen_loopback(&dead_port);
    CU_ASSERT_FATAL(fd >= 0);
    close(fd); /* now nobody listens there */
    CU_ASSERT_FATAL(td_start(&d, NULL) == 0);
    CU_ASSERT_FATAL(tlb_start(&l, "--probe-interval 1 --probe-timeout 2") == 0);
    tlb_depot_json(j, sizeof j, "127.0.0.1", dead_port, TYS_LAT, TYS_LON, 1000, 1000, 3600, "");
    CU_ASSERT_FATAL(tlb_register(&l, j, idx, sx) == 201);
    tlb_depot_json(j, sizeof j, "127.0.0.1", d.port, AMS_LAT, AMS_LON, 1000, 1000, 3600, "");
    CU_ASSERT_FATAL(tlb_register(&l, j, idd, sd) == 201);
    CU_ASSERT(wait_status(&l, idd, "up", 10000));
    CU_ASSERT(wait_status(&l, idx, "unreachable", 10000));
    /* Never handed out, though it registered with a valid token and is nearer to ATL. */
    char *r = get(&l, "/v1/depots?location=airport%3D%20ATL", 200);
    CU_ASSERT(r && tlb_count(r, "\"id\":") == 1 && strstr(r, idd) && !strstr(r, idx));
    free(r);
    r = get(&l, "/", 200);
    CU_ASSERT(r && strstr(r, ">unreachable<"));
    free(r);
    /* Heartbeats do not make it reachable: only a STATUS answer does. */
    CU_ASSERT(heartbeat(&l, idx, sx, "{}") == 200);
    sleep_ms(300);
    CU_ASSERT(wait_status(&l, idx, "unreachable", 0));
    /* A depot that dies is taken out by the next periodic probe, and back when it returns. */
    CU_ASSERT(lns_test_server_kill(&d.srv, SIGKILL) == 0);
    CU_ASSERT(wait_status(&l, idd, "unreachable", 8000));
    CU_ASSERT(query_count(&l, "") == 0);
    CU_ASSERT_FATAL(td_restart(&d) == 0);
    CU_ASSERT(heartbeat(&l, idd, sd, "{}") == 200);
    CU_ASSERT(wait_status(&l, idd, "up", 8000));
    CU_ASSERT(query_count(&l, "") == 1);
    lns_test_server_finish(&l.srv);
    lns_test_server_stop(&d.srv);
}

/* The whole answer of an unfiltered query: equal before and after means nothing changed. */
static char *snapshot(const test_lbone_t *l)
{
    return get(l, "/v1/depots?count=10000", 200);
}

static void test_hostile_input(void)
{
    test_lbone_t l;
    char j[2048], id[17];
    CU_ASSERT_FATAL(tlb_start(&l, "--probe-interval 0") == 0);
    tlb_depot_json(j, sizeof j, "good.test", 6714, TYS_LAT, TYS_LON, 1000, 0, 3600,
                   ",\"contact\":\"ops <ops@good.test>\"");
    CU_ASSERT_FATAL(tlb_register(&l, j, id, NULL) == 201);
    char *before = snapshot(&l);
    CU_ASSERT_FATAL(before != NULL);

    /* The good body with one member replaced or added. */
    static const char *good =
        "\"host\":\"x.test\",\"port\":6714,\"hard_total\":10,\"hard_free\":5,"
        "\"soft_total\":0,\"soft_free\":0,\"max_duration\":60";
    static const char *bad[] = {
        "", "{", "[]", "null", "\"x\"", "{} {}", "{\"host\":\"x.test\",}", "{'host':'x'}",
        "{\"host\":\"x.test\" /* c */}", "{\"port\":0123}", "{\"port\":NaN}",
        "{\"host\":\"a\",\"host\":\"b\"}",
        "{%s,\"port\":0}", "{\"port\":70000,%s}", "{%s,\"extra\":1}", "{%s,\"lat\":91,\"lon\":0}",
        "{%s,\"lat\":10}", "{%s,\"lon\":1e999,\"lat\":1}", "{%s,\"contact\":\"a\\u0000b\"}",
        "{%s,\"contact\":\"a\x01" "b\"}", "{%s,\"contact\":\"\xff\xfe\"}",
        "{%s,\"contact\":\"\\ud800\"}", "{%s,\"contact\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
        "{%s,\"rid\":\"x y\"}", "{%s,\"env\":{\"connection\":\"T2\"}}",
        "{%s,\"env\":{\"monitoring\":25}}", "{%s,\"env\":{\"colour\":\"red\"}}",
        "{%s,\"env\":[]}", "{%s,\"place\":\"airport= ZZZZ\"}", "{%s,\"hard_free\":11}",
        "{\"host\":\"x.test\",\"port\":6714}",
        "{\"host\":\"x'; DROP TABLE depots; --\",\"port\":6714,\"hard_total\":10,"
        "\"hard_free\":5,\"soft_total\":0,\"soft_free\":0,\"max_duration\":60}",
        "{\"host\":\"<b>x</b>\",\"port\":6714,\"hard_total\":10,\"hard_free\":5,"
        "\"soft_total\":0,\"soft_free\":0,\"max_duration\":60}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char body[1024], *resp = NULL;
        snprintf(body, sizeof body, bad[i], good);
        int code = tlb_http(l.port, "POST", "/v1/depots", l.token, body, &resp);
        CU_ASSERT(code == 400 && resp && strstr(resp, "{\"error\":\""));
        if (code != 400)
            fprintf(stderr, "\n  body %zu (%s): %d %s\n", i, body, code, resp ? resp : "");
        free(resp);
    }
    /* Heartbeats and reports with bad bodies. */
    CU_ASSERT(heartbeat(&l, id, "whatever", "{\"hard_free\":\"1\"}") == 400);
    CU_ASSERT(heartbeat(&l, id, "whatever", "{\"free\":1}") == 400);
    CU_ASSERT(heartbeat(&l, id, "whatever", "{") == 400);
    CU_ASSERT(tlb_http(l.port, "POST", "/v1/reports", NULL, "{\"reports\":[{\"depot\":"
                       "\"good.test:6714\",\"mbps\":-1}]}", NULL) == 400);
    CU_ASSERT(tlb_http(l.port, "POST", "/v1/reports", NULL, "{\"reports\":[{\"depot\":"
                       "\"good.test\",\"mbps\":5}]}", NULL) == 400);

    /* Oversized: declared, and chunked. */
    size_t big = 100000;
    char *huge = malloc(big + 256);
    CU_ASSERT_FATAL(huge != NULL);
    int n = snprintf(huge, big + 256, "{%s,\"contact\":\"", good);
    memset(huge + n, 'a', big);
    strcpy(huge + n + big, "\"}");
    char *resp = NULL;
    CU_ASSERT(tlb_http(l.port, "POST", "/v1/depots", l.token, huge, &resp) == 413);
    CU_ASSERT(resp && strstr(resp, "\"error\":"));
    free(resp);
    size_t cap = big + 4096;
    char *req = malloc(cap);
    CU_ASSERT_FATAL(req != NULL);
    int m = snprintf(req, cap, "POST /v1/depots HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                               "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
                               "Connection: close\r\n\r\n", l.token);
    for (size_t off = 0; off < big; off += 10000)
        m += snprintf(req + m, cap - (size_t)m, "2710\r\n%.10000s\r\n", huge + off);
    m += snprintf(req + m, cap - (size_t)m, "0\r\n\r\n");
    CU_ASSERT(tlb_http_raw(l.port, req, (size_t)m, NULL) == 413);
    free(req);
    free(huge);

    /* Wrong content type, unknown paths and methods, injected ids. */
    snprintf(j, sizeof j, "POST /v1/depots HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                          "Content-Type: text/plain\r\nContent-Length: 2\r\nConnection: close"
                          "\r\n\r\n{}", l.token);
    CU_ASSERT(tlb_http_raw(l.port, j, strlen(j), NULL) == 415);
    CU_ASSERT(tlb_http(l.port, "GET", "/v1/depots/1'%20OR%20'1'='1", NULL, NULL, NULL) == 404);
    CU_ASSERT(tlb_http(l.port, "GET", "/v1/depots?location=x'%3B%20DROP%20TABLE%20depots%3B--",
                       NULL, NULL, NULL) == 400);
    CU_ASSERT(tlb_http(l.port, "PATCH", "/v1/depots", NULL, "{}", NULL) == 405);
    CU_ASSERT(tlb_http(l.port, "GET", "/etc/passwd", NULL, NULL, NULL) == 404);

    char *after = snapshot(&l);
    CU_ASSERT(after && strcmp(before, after) == 0);
    free(before);
    free(after);

    /* Quotes and markup are data: stored verbatim, shown escaped. */
    const char *evil = "Robert'); DROP TABLE depots;-- <script>alert(1)</script> & \\\"x\\\"";
    tlb_depot_json(j, sizeof j, "evil.test", 6714, AMS_LAT, AMS_LON, 1000, 0, 3600, "");
    j[strlen(j) - 1] = 0;
    snprintf(j + strlen(j), sizeof j - strlen(j), ",\"contact\":\"%s\",\"place\":\"<i>Amsterdam</i>\"}", evil);
    CU_ASSERT(tlb_register(&l, j, id, NULL) == 201);
    CU_ASSERT(query_count(&l, "") == 2);
    char *page = get(&l, "/", 200);
    CU_ASSERT_FATAL(page != NULL);
    CU_ASSERT(strstr(page, "Robert&#39;); DROP TABLE depots;-- &lt;script&gt;alert(1)&lt;/script&gt; "
                           "&amp; &quot;x&quot;") != NULL);
    CU_ASSERT(strstr(page, "&lt;i&gt;Amsterdam&lt;/i&gt;") != NULL);
    CU_ASSERT(strstr(page, "<script") == NULL && strstr(page, "<i>") == NULL);
    CU_ASSERT(strstr(page, "ops &lt;ops@good.test&gt;") != NULL);
    free(page);
    snprintf(j, sizeof j, "/v1/depots/%s", id);
    char *one = get(&l, j, 200);
    CU_ASSERT(one && strstr(one, "Robert'); DROP TABLE depots;-- \\u003cscript\\u003e"));
    free(one);
    lns_test_server_finish(&l.srv);
}

static void test_restart_keeps_registry(void)
{
    test_lbone_t l;
    char j[1024], id[3][17], sec[3][65];
    static const char *hosts[3] = {"r1.test", "r2.test", "r3.test"};

    CU_ASSERT_FATAL(tlb_start(&l, "--probe-interval 0") == 0);
    for (int i = 0; i < 3; i++) {
        tlb_depot_json(j, sizeof j, hosts[i], 6714 + i, 10 + i, 20 + i, 1000 * (i + 1), 0, 3600,
                       ",\"contact\":\"c\",\"env\":{\"power\":\"ups\"}");
        CU_ASSERT_FATAL(tlb_register(&l, j, id[i], sec[i]) == 201);
    }
    CU_ASSERT(heartbeat(&l, id[1], sec[1], "{\"hard_free\":1500}") == 200);
    for (int k = 0; k < 3; k++)
        CU_ASSERT(tlb_http(l.port, "POST", "/v1/reports", NULL,
                           "{\"reports\":[{\"depot\":\"r3.test:6716\",\"mbps\":42}]}", NULL) == 204);
    char *before = snapshot(&l);
    CU_ASSERT_FATAL(before != NULL);
    CU_ASSERT(strstr(before, "\"forecast_mbps\":42") != NULL);

    CU_ASSERT(lns_test_server_kill(&l.srv, SIGKILL) == 0);
    CU_ASSERT_FATAL(tlb_restart(&l) == 0);
    char *after = snapshot(&l);
    CU_ASSERT(after && strcmp(before, after) == 0);
    free(before);
    free(after);
    CU_ASSERT(query_count(&l, "power=ups&hard=1400") == 2);
    /* The secrets survive (only their hashes were stored), and so does the history. */
    for (int i = 0; i < 3; i++)
        CU_ASSERT(heartbeat(&l, id[i], sec[i], "{}") == 200);
    CU_ASSERT(heartbeat(&l, id[0], sec[1], "{}") == 403);
    snprintf(j, sizeof j, "/v1/depots/%s", id[2]);
    char *r = get(&l, j, 200);
    CU_ASSERT(r && strstr(r, "\"measurements\":3") && strstr(r, "\"network\":\"127.0.0.0/24\""));
    free(r);
    /* A clean stop and start too. */
    lns_test_server_stop(&l.srv);
    CU_ASSERT_FATAL(tlb_restart(&l) == 0);
    CU_ASSERT(query_count(&l, "") == 3);
    lns_test_server_finish(&l.srv);
}

/* The depots' TLS pins (issue 37): registered, in the answers, kept across a restart; a pin
 * that is not one refused; a version-1 database (before pins) upgraded in place. */
static void test_pins(void)
{
    test_lbone_t l;
    char j[1024], id[17], sec[65], pin[80];
    static const char good[] =
        "sha256:2a05b4fac8144d78452e750c0c6f57caab1dcf079b14677ad918e3a8352e7449";
    CU_ASSERT_FATAL(tlb_start(&l, "--probe-interval 0") == 0);
    tlb_depot_json(j, sizeof j, "p1.test", 6714, 10, 20, 1000, 0, 3600,
                   ",\"pin\":\"sha256:2a05b4fac8144d78452e750c0c6f57caab1dcf079b14677ad918e3a8352e7449\"");
    CU_ASSERT_FATAL(tlb_register(&l, j, id, sec) == 201);
    tlb_depot_json(j, sizeof j, "p2.test", 6714, 10, 20, 1000, 0, 3600,
                   ",\"pin\":\"sha256:XYZ\"");
    CU_ASSERT(tlb_register(&l, j, id, sec) == 400);
    char *r = get(&l, "/v1/depots", 200);
    CU_ASSERT(r && tlb_json_str(r, "pin", 0, pin, sizeof pin) == 0 && strcmp(pin, good) == 0);
    free(r);
    CU_ASSERT(lns_test_server_kill(&l.srv, SIGKILL) == 0);
    CU_ASSERT_FATAL(tlb_restart(&l) == 0);
    r = get(&l, "/v1/depots", 200);
    CU_ASSERT(r && tlb_json_str(r, "pin", 0, pin, sizeof pin) == 0 && strcmp(pin, good) == 0);
    free(r);
    /* the database as version 1 had it: no pin column */
    lns_test_server_stop(&l.srv);
    sqlite3 *h = NULL;
    CU_ASSERT_FATAL(sqlite3_open(l.db, &h) == SQLITE_OK);
    CU_ASSERT(sqlite3_exec(h, "ALTER TABLE depots DROP COLUMN pin;"
                              "UPDATE meta SET value = '1' WHERE key = 'schema';",
                           NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(h);
    CU_ASSERT_FATAL(tlb_restart(&l) == 0);
    CU_ASSERT(query_count(&l, "") == 1);
    r = get(&l, "/v1/depots", 200);
    CU_ASSERT(r && strstr(r, "\"host\":\"p1.test\"") && !strstr(r, "\"pin\""));
    free(r);
    lns_test_server_finish(&l.srv);
}

static void test_reports_rate_limit(void)
{
    test_lbone_t l;
    char j[1024], id[17], *resp = NULL;

    CU_ASSERT_FATAL(tlb_start(&l, "--probe-interval 0 --report-rate 8") == 0);
    tlb_depot_json(j, sizeof j, "fc.test", 7000, 1, 1, 1000, 0, 3600, "");
    CU_ASSERT_FATAL(tlb_register(&l, j, id, NULL) == 201);
    /* A steady path with one outlier: the forecast follows the steady value. */
    static const double mbps[] = {50, 52, 48, 50, 400, 51, 49};
    for (size_t i = 0; i < sizeof mbps / sizeof mbps[0]; i++) {
        snprintf(j, sizeof j, "{\"reports\":[{\"depot\":\"FC.test:7000\",\"mbps\":%g,"
                              "\"bytes\":1000,\"seconds\":1}, {\"depot\":\"other.test:1\",\"mbps\":1}]}",
                 mbps[i]);
        CU_ASSERT(tlb_http(l.port, "POST", "/v1/reports", NULL, j, NULL) == 204);
    }
    /* The 8th is a bad one (still counted), the 9th is over the limit. */
    CU_ASSERT(tlb_http(l.port, "POST", "/v1/reports", NULL, "{\"reports\":{}}", NULL) == 400);
    CU_ASSERT(tlb_http(l.port, "POST", "/v1/reports", NULL, "{\"reports\":[]}", &resp) == 429);
    CU_ASSERT(resp && strstr(resp, "\"error\":"));
    free(resp);
    snprintf(j, sizeof j, "/v1/depots/%s", id);
    char *r = get(&l, j, 200);
    CU_ASSERT_FATAL(r != NULL);
    CU_ASSERT(strstr(r, "\"measurements\":7") && strstr(r, "\"last_mbps\":49"));
    const char *f = strstr(r, "\"forecast_mbps\":");
    double fc = f ? atof(f + 16) : 0;
    CU_ASSERT(fc > 45 && fc < 60);
    free(r);
    lns_test_server_finish(&l.srv);
}

/* HTTPS by default (issue 37): no TLS option given, the server makes its key beside the
 * database (DB.key, mode 0600), writes its pin to --pin-file and logs the pinned name; a
 * plain HTTP request gets no HTTP answer; a key others may read stops a restart (exit 2).
 * --plain-http answers plain HTTP and logs the warning. */
static void test_https_default(void)
{
    test_lbone_t l, p;
    char key[PATH_MAX + 8], log[1 << 14], *resp = NULL, cmd[4 * PATH_MAX];
    struct stat st;
    static const char req[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

    CU_ASSERT_EQUAL_FATAL(tlb_start(&l, "--probe-interval 0"), 0);
    snprintf(key, sizeof key, "%s.key", l.db);
    CU_ASSERT(stat(key, &st) == 0 && (st.st_mode & 0777) == 0600);
    CU_ASSERT_EQUAL(strncmp(l.pin, "sha256:", 7), 0);
    CU_ASSERT_EQUAL(tlb_http(l.port, "GET", "/healthz", NULL, NULL, NULL), 200);
    CU_ASSERT_EQUAL(tlb_http_plain(l.port, req, sizeof req - 1, &resp), -1);
    CU_ASSERT(resp == NULL || strstr(resp, "HTTP/") == NULL);
    free(resp);
    lns_test_slurp(l.log, log, sizeof log);
    char name[160];
    snprintf(name, sizeof name, "https://HOST:%d#%s", l.port, l.pin);
    CU_ASSERT_PTR_NOT_NULL(strstr(log, name));
    /* the same key, so the same pin, after a restart */
    char pin[sizeof l.pin];
    snprintf(pin, sizeof pin, "%s", l.pin);
    lns_test_server_stop(&l.srv);
    CU_ASSERT_EQUAL_FATAL(tlb_restart(&l), 0);
    CU_ASSERT_STRING_EQUAL(l.pin, pin);
    lns_test_server_stop(&l.srv);
    /* a key open to others: refused, exit 2, one line naming it */
    CU_ASSERT_EQUAL(chmod(key, 0644), 0);
    snprintf(cmd, sizeof cmd, "%s/lbone_server --db %s --token-file %s --port 0 2>&1 | "
             "grep -q 'open to others'", lns_test_bindir(), l.db, l.token_file);
    CU_ASSERT_EQUAL(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s/lbone_server --db %s --token-file %s --port 0 2>/dev/null",
             lns_test_bindir(), l.db, l.token_file);
    CU_ASSERT_EQUAL(WEXITSTATUS(system(cmd)), 2);
    /* --plain-http: plain answers, the warning, no key; not with a TLS option */
    CU_ASSERT_EQUAL_FATAL(tlb_start(&p, "--plain-http --probe-interval 0"), 0);
    CU_ASSERT_EQUAL(tlb_http_plain(p.port, req, sizeof req - 1, NULL), 200);
    snprintf(key, sizeof key, "%s.key", p.db);
    CU_ASSERT(access(key, F_OK) != 0);
    lns_test_slurp(p.log, log, sizeof log);
    CU_ASSERT_PTR_NOT_NULL(strstr(log, "plain HTTP (--plain-http)"));
    snprintf(cmd, sizeof cmd, "%s/lbone_server --token-file %s --plain-http --pin-file x "
             "--check-config 2>/dev/null", lns_test_bindir(), p.token_file);
    CU_ASSERT_EQUAL(WEXITSTATUS(system(cmd)), 2);
    lns_test_server_finish(&p.srv);
}

static void test_command_line(void)
{
    char cmd[PATH_MAX * 2], tok[PATH_MAX];
    const char *bin = lns_test_bindir();
    snprintf(tok, sizeof tok, "%s/cli-token", lns_test_tmpdir());
    FILE *f = fopen(tok, "w");
    CU_ASSERT_FATAL(f != NULL);
    fputs("0123456789abcdef0123\n", f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s/lbone_server --help | grep -q -- --drop-after", bin);
    CU_ASSERT(system(cmd) == 0);
    snprintf(cmd, sizeof cmd, "%s/lbone_server --version | grep -q 'lbone_server (lns)'", bin);
    CU_ASSERT(system(cmd) == 0);
    snprintf(cmd, sizeof cmd, "%s/lbone_server --db /nonexistent/x 2>/dev/null", bin);
    CU_ASSERT(WEXITSTATUS(system(cmd)) == 2); /* no token file */
    snprintf(cmd, sizeof cmd, "%s/lbone_server --token-file %s --bogus 2>/dev/null", bin, tok);
    CU_ASSERT(WEXITSTATUS(system(cmd)) == 2);
    snprintf(cmd, sizeof cmd, "%s/lbone_server --token-file %s --heartbeat 0 2>/dev/null", bin, tok);
    CU_ASSERT(WEXITSTATUS(system(cmd)) == 2);
    snprintf(cmd, sizeof cmd, "%s/lbone_server --token-file %s --check-config >/dev/null", bin, tok);
    CU_ASSERT(system(cmd) == 0);
    snprintf(cmd, sizeof cmd, "%s/lbone_server --token-file %s --db /nonexistent/dir/x.db "
                              "--port 0 2>/dev/null", bin, tok);
    CU_ASSERT(WEXITSTATUS(system(cmd)) == 3);
    /* A config file, with a flag overriding it. */
    char conf[PATH_MAX + 16];
    snprintf(conf, sizeof conf, "%s/lbone.conf", lns_test_tmpdir());
    f = fopen(conf, "w");
    CU_ASSERT_FATAL(f != NULL);
    fprintf(f, "# test\ntoken-file = %s\nheartbeat = 2m\nport = 1\n", tok);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s/lbone_server -c %s --port 7 --check-config | "
                              "grep -q ':7, .*heartbeat 120s'", bin, conf);
    CU_ASSERT(system(cmd) == 0);
}

/* Without its gazetteer's data file the server starts and serves: one warning in its log
 * names the file, queries by place name get 400 (every time, with no new log line), queries
 * and registrations by coordinates work. */
static void test_no_gazetteer(void)
{
    test_lbone_t l;
    char missing[PATH_MAX], j[1024], logtext[16384], *r;
    snprintf(missing, sizeof missing, "%s/no-such-gazetteer.txt", lns_test_tmpdir());
    setenv("LNS_GAZETTEER", missing, 1);
    int started = tlb_start(&l, "--probe-interval 0");
    unsetenv("LNS_GAZETTEER");
    CU_ASSERT_FATAL(started == 0);
    for (int i = 0; i < 2; i++) {
        r = get(&l, "/v1/depots?location=airport%3D%20ATL", 400);
        CU_ASSERT(r && strstr(r, "place lookup unavailable") && !strstr(r, missing));
        free(r);
    }
    tlb_depot_json(j, sizeof j, "tys.test", 6714, TYS_LAT, TYS_LON, 1000, 0, 3600, "");
    CU_ASSERT(tlb_register(&l, j, NULL, NULL) == 201);
    r = get(&l, "/v1/depots?location=33.64%2C-84.43", 200);
    CU_ASSERT(r && strstr(r, "tys.test"));
    free(r);
    lns_test_server_stop(&l.srv);
    lns_test_slurp(l.log, logtext, sizeof logtext);
    CU_ASSERT_EQUAL(tlb_count(logtext, "warn: gazetteer"), 1);
    CU_ASSERT_EQUAL(tlb_count(logtext, missing), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(logtext, "lbone_server["));
}

static const lns_test_case tests[] = {
    {"register, heartbeat, down, dropped (real depots)", test_register_heartbeat_expiry},
    {"registry token and depot secrets", test_auth},
    {"query filters: space, duration, environment", test_query_filters},
    {"order by distance (TYS, AMS, NRT) and bandwidth", test_order_distance_bandwidth},
    {"unreachable depots are not handed out", test_unreachable},
    {"malformed, oversized and injected input", test_hostile_input},
    {"restart keeps the registry", test_restart_keeps_registry},
    {"TLS pins: registered, answered, kept; a version-1 database upgraded", test_pins},
    {"reports, forecasts, rate limit", test_reports_rate_limit},
    {"command line and config file", test_command_line},
    {"HTTPS by default: key 0600 beside the db, pin file, plain HTTP unanswered", test_https_default},
    {"without its gazetteer's data file", test_no_gazetteer},
};

LNS_TEST_MAIN("lbone server", tests)
