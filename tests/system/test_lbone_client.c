/* test_lbone_client.c -- liblbone, depot registration and the LoRS tools against a real
 * lbone_server and real depots.
 *
 * One L-Bone and four depots live for the whole program; the depots register themselves
 * (ibp_depot --lbone) at known places: two at Amsterdam airport, one at Knoxville's, one at
 * Narita's coordinates.  Checked: queries through liblbone (order by distance from Atlanta,
 * filters, fields), failover from dead or foreign servers to a live one, heartbeats carrying
 * fresh free space, re-registration after the L-Bone forgets a depot or restarts, withdrawal
 * on stop, config errors, lors_upload -l placing data on the nearest depots, throughput
 * reports (and opting out of them), and the lbone_query program. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ibp.h"
#include "lbone.h"
#include "lbone_json.h"
#include "lns_test.h"
#include "test_depot.h"
#include "test_lbone.h"
#include "xnd.h"

#define ND 4
#define MIB (1 << 20)

enum { AMS1, AMS2, TYS, NRT };

static test_lbone_t lb;
static test_depot_t dep[ND];
static ibp_client_t *cli;
static char out[1 << 16], err[1 << 14];

static void msleep(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* sh -c with $B = bin dir, $D = tmpdir, $U = the L-Bone's URL; stdout and stderr land in
 * out[] and err[].  Returns the exit code, or -1. */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int sh(const char *fmt, ...)
{
    char vars[sizeof lb.url + 8];
    snprintf(vars, sizeof vars, "U='%s'", lb.url);
    va_list ap;
    va_start(ap, fmt);
    int rc = lns_test_vsh(vars, fmt, ap);
    va_end(ap);
    lns_test_slurp(lns_test_path("run.out"), out, sizeof out);
    lns_test_slurp(lns_test_path("run.err"), err, sizeof err);
    return rc;
}

/* The depot of lb's registry with this port in a query answer, or NULL. */
static const lbone_depot_info_t *find_port(const lbone_result_t *r, int port)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->depots[i].port == port)
            return &r->depots[i];
    return NULL;
}

/* Ask lb for depots: lbone_query_depots's code, its message on stderr if it failed. */
static int query_req(const lbone_request_t *req, lbone_result_t *r)
{
    const char *servers[] = {lb.url};
    char e[1024];
    int rc = lbone_query_depots(servers, 1, req, r, e, sizeof e);
    if (rc != LBONE_OK)
        fprintf(stderr, "  query: %s\n", e);
    return rc;
}

static int query(const char *location, lbone_result_t *r)
{
    lbone_request_t req;
    lbone_request_init(&req);
    req.location = location;
    req.count = 100;
    return query_req(&req, r);
}

/* Wait (up to ms) until the depot on port is up in lb's answers (want 1) or gone (want 0).
 * Its id goes to id (may be NULL). */
static int wait_listed(int port, int want, char *id, int ms)
{
    for (int waited = 0; waited <= ms; waited += 100) {
        lbone_result_t r;
        if (query(NULL, &r) == LBONE_OK) {
            const lbone_depot_info_t *d = find_port(&r, port);
            if (d && id)
                snprintf(id, 64, "%s", d->id);
            int found = d != NULL;
            lbone_result_free(&r);
            if (found == want)
                return 0;
        }
        msleep(100);
    }
    return -1;
}

/* A number field of GET /v1/depots/{id} (-1 if absent or not found). */
static long long depot_field(const char *id, const char *key)
{
    char path[128], *body = NULL, pat[64];
    long long v = -1;
    snprintf(path, sizeof path, "/v1/depots/%s", id);
    if (tlb_http(lb.port, "GET", path, NULL, NULL, &body) == 200 && body) {
        snprintf(pat, sizeof pat, "\"%s\":", key);
        const char *p = strstr(body, pat);
        if (p)
            v = strtoll(p + strlen(pat), NULL, 10);
    }
    free(body);
    return v;
}

static char depot_args[ND][3 * PATH_MAX];

static int suite_init(void)
{
    setenv("HOME", lns_test_tmpdir(), 1);
    unsetenv("LNS_RC");
    unsetenv("LNS_NO_REPORT");
    /* Everything here is on 127.0.0.1: a proxy from the environment would only be in the way. */
    static const char *proxies[] = {"http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY",
                                    "all_proxy", "ALL_PROXY"};
    for (size_t i = 0; i < sizeof proxies / sizeof proxies[0]; i++)
        unsetenv(proxies[i]);
    /* heartbeats every second, but a depot is down only after a minute without one and a
     * probe waits 30 s: on a loaded machine (ASan, a sealed heartbeat each second) a late
     * heartbeat or slow probe must not take a depot out of the answers the tests judge */
    if (tlb_start(&lb, "--heartbeat 1 --down-after 60 --probe-interval 2 --probe-timeout 30") < 0)
        return -1;
    static const char *places[ND] = {
        "--lbone-place airport=AMS --lbone-contact ops@example.org --lbone-env-connection 1G "
        "--lbone-env-power ups",
        "--lbone-place airport=AMS --lbone-env-connection 1G --lbone-env-power ups",
        "--lbone-place airport=TYS --lbone-env-connection T3",
        "--lbone-lat 35.7647 --lbone-lon 140.3864"};
    for (int i = 0; i < ND; i++) {
        snprintf(depot_args[i], sizeof depot_args[i],
                 "--lbone %s --lbone-token-file %s %s --resource %s/res%d,hard=64M,soft=64M,"
                 "max-duration=3600", lb.url, lb.token_file, places[i], lns_test_tmpdir(), i);
        if (td_start(&dep[i], depot_args[i]) < 0)
            return -1;
    }
    for (int i = 0; i < ND; i++)
        if (wait_listed(dep[i].port, 1, NULL, 15000) < 0) {
            fprintf(stderr, "depot %d (port %d) never appeared in the L-Bone\n", i, dep[i].port);
            return -1;
        }
    cli = ibp_client_new(NULL);
    return cli ? 0 : -1;
}

static int suite_clean(void)
{
    int ok = 1;
    for (int i = 0; i < ND; i++) {
        if (dep[i].pid && !lns_test_server_log_clean(&dep[i].srv))
            ok = 0;
        lns_test_server_stop(&dep[i].srv);
    }
    if (lb.pid && !lns_test_server_log_clean(&lb.srv))
        ok = 0;
    lns_test_server_stop(&lb.srv);
    if (cli)
        ibp_client_free(cli);
    return ok ? 0 : -1;
}

/* ---- queries ---- */

static void test_query_order_and_fields(void)
{
    lbone_result_t r;
    CU_ASSERT_EQUAL_FATAL(query("airport= ATL", &r), LBONE_OK);
    CU_ASSERT_EQUAL(r.n, ND);
    CU_ASSERT(r.resolved);
    CU_ASSERT(fabs(r.lat - 33.64) < 0.1 && fabs(r.lon + 84.43) < 0.1);
    CU_ASSERT_STRING_EQUAL(r.server, lb.url);
    CU_ASSERT_PTR_NOT_NULL(r.json);
    if (r.n == ND) {
        /* Knoxville (~250 km), Amsterdam twice (~7,000 km), Narita (~11,000 km) */
        CU_ASSERT_EQUAL(r.depots[0].port, dep[TYS].port);
        CU_ASSERT(r.depots[0].distance_km > 240 && r.depots[0].distance_km < 260);
        int a = r.depots[1].port, b = r.depots[2].port;
        CU_ASSERT((a == dep[AMS1].port && b == dep[AMS2].port) ||
                  (a == dep[AMS2].port && b == dep[AMS1].port));
        CU_ASSERT_EQUAL(r.depots[3].port, dep[NRT].port);
        CU_ASSERT(r.depots[1].distance_km < r.depots[3].distance_km);
        for (size_t i = 0; i < r.n; i++) {
            const lbone_depot_info_t *d = &r.depots[i];
            CU_ASSERT_STRING_EQUAL(d->host, "127.0.0.1");
            CU_ASSERT_STRING_EQUAL(d->rid, "0");
            CU_ASSERT_STRING_EQUAL(d->status, "up");
            CU_ASSERT(d->id[0] != 0);
            CU_ASSERT_EQUAL(d->max_duration, 3600);
            CU_ASSERT(d->hard_free > 0 && d->hard_free <= 64 * MIB);
            CU_ASSERT(llabs((long long)(time(NULL) - d->last_heard)) < 30);
            CU_ASSERT(!isnan(d->lat) && !isnan(d->lon));
        }
        /* The NRT depot gave coordinates, the others a place the L-Bone resolved. */
        CU_ASSERT(fabs(r.depots[3].lat - 35.7647) < 1e-6);
        CU_ASSERT_PTR_NOT_NULL(strstr(r.depots[0].place, "TYS"));
    }
    lbone_result_free(&r);
    CU_ASSERT_PTR_NULL(r.depots); /* free is idempotent */
    lbone_result_free(&r);
}

static void test_query_filters(void)
{
    const char *servers[] = {lb.url};
    lbone_request_t req;
    lbone_result_t r;
    char e[1024];

    lbone_request_init(&req);
    req.location = "zip= 37996";
    req.count = 2;
    CU_ASSERT_EQUAL_FATAL(query_req(&req, &r), LBONE_OK);
    CU_ASSERT_EQUAL(r.n, 2);
    if (r.n)
        CU_ASSERT_EQUAL(r.depots[0].port, dep[TYS].port);
    lbone_result_free(&r);

    lbone_request_init(&req);
    req.hard = 1ULL << 40; /* nobody has a terabyte */
    CU_ASSERT_EQUAL(query_req(&req, &r), LBONE_OK);
    CU_ASSERT_EQUAL(r.n, 0);
    CU_ASSERT(!r.resolved);
    lbone_result_free(&r);

    lbone_request_init(&req);
    req.duration = 7200; /* the depots allow an hour */
    CU_ASSERT_EQUAL(query_req(&req, &r), LBONE_OK);
    CU_ASSERT_EQUAL(r.n, 0);
    lbone_result_free(&r);

    /* "at least T3": the 1G depots at AMS and the T3 one at TYS; not NRT (undeclared) */
    lbone_request_init(&req);
    req.connection = "T3";
    CU_ASSERT_EQUAL(query_req(&req, &r), LBONE_OK);
    CU_ASSERT_EQUAL(r.n, 3);
    CU_ASSERT_PTR_NULL(find_port(&r, dep[NRT].port));
    lbone_result_free(&r);
    req.connection = "OC12";
    req.power = "ups";
    CU_ASSERT_EQUAL(query_req(&req, &r), LBONE_OK);
    CU_ASSERT_EQUAL(r.n, 2);
    CU_ASSERT_PTR_NOT_NULL(find_port(&r, dep[AMS1].port));
    CU_ASSERT_PTR_NOT_NULL(find_port(&r, dep[AMS2].port));
    lbone_result_free(&r);

    /* refused requests: a reason from the server, LBONE_E_REFUSED */
    lbone_request_init(&req);
    req.location = "airport= QQQ";
    CU_ASSERT_EQUAL(lbone_query_depots(servers, 1, &req, &r, e, sizeof e), LBONE_E_REFUSED);
    CU_ASSERT_PTR_NOT_NULL(strstr(e, "QQQ"));
    CU_ASSERT_EQUAL(r.n, 0);
    lbone_request_init(&req);
    req.connection = "carrier-pigeon";
    CU_ASSERT_EQUAL(lbone_query_depots(servers, 1, &req, &r, e, sizeof e), LBONE_E_REFUSED);
    /* caller mistakes never reach the network */
    lbone_request_init(&req);
    req.count = -1;
    CU_ASSERT_EQUAL(lbone_query_depots(servers, 1, &req, &r, e, sizeof e), LBONE_E_ARG);
    CU_ASSERT_EQUAL(lbone_query_depots(servers, 0, &req, &r, e, sizeof e), LBONE_E_ARG);
}

static void test_failover(void)
{
    char dead[64], dead2[64], foreign[64], e[2048];
    lbone_request_t req;
    lbone_result_t r;
    int p1 = raw_dead_port(), p2 = raw_dead_port();
    snprintf(dead, sizeof dead, "http://127.0.0.1:%d", p1);
    snprintf(dead2, sizeof dead2, "127.0.0.1:%d", p2);
    snprintf(foreign, sizeof foreign, "127.0.0.1:%d", dep[TYS].port); /* speaks IBP */
    lbone_request_init(&req);
    req.location = "airport= ATL";

    const char *s1[] = {dead, lb.url};
    CU_ASSERT_EQUAL(lbone_query_depots(s1, 2, &req, &r, e, sizeof e), LBONE_OK);
    CU_ASSERT_STRING_EQUAL(r.server, lb.url);
    CU_ASSERT_EQUAL(r.n, ND);
    lbone_result_free(&r);

    const char *s2[] = {foreign, "bad host", dead2, lb.url};
    CU_ASSERT_EQUAL(lbone_query_depots(s2, 4, &req, &r, e, sizeof e), LBONE_OK);
    CU_ASSERT_STRING_EQUAL(r.server, lb.url);
    lbone_result_free(&r);

    const char *s3[] = {dead, dead2};
    CU_ASSERT_EQUAL(lbone_query_depots(s3, 2, &req, &r, e, sizeof e), LBONE_E_CONNECT);
    char want1[32], want2[32];
    snprintf(want1, sizeof want1, ":%d", p1);
    snprintf(want2, sizeof want2, ":%d", p2);
    CU_ASSERT_PTR_NOT_NULL(strstr(e, want1));
    CU_ASSERT_PTR_NOT_NULL(strstr(e, want2));

    /* A second L-Bone that dies: the first one's clients move on to the live one. */
    test_lbone_t lb2;
    CU_ASSERT_EQUAL_FATAL(tlb_start(&lb2, NULL), 0);
    const char *s4[] = {lb2.url, lb.url};
    CU_ASSERT_EQUAL(lbone_query_depots(s4, 2, &req, &r, e, sizeof e), LBONE_OK);
    CU_ASSERT_STRING_EQUAL(r.server, lb2.url); /* the first that answers, even if empty */
    CU_ASSERT_EQUAL(r.n, 0);
    lbone_result_free(&r);
    lns_test_server_kill(&lb2.srv, SIGKILL);
    CU_ASSERT_EQUAL(lbone_query_depots(s4, 2, &req, &r, e, sizeof e), LBONE_OK);
    CU_ASSERT_STRING_EQUAL(r.server, lb.url);
    CU_ASSERT_EQUAL(r.n, ND);
    lbone_result_free(&r);

    /* A refusal is final: the next server would refuse the same request. */
    const char *s5[] = {lb.url, dead};
    req.location = "planet= Mars";
    CU_ASSERT_EQUAL(lbone_query_depots(s5, 2, &req, &r, e, sizeof e), LBONE_E_REFUSED);
    CU_ASSERT_PTR_NULL(strstr(e, want1));
    lns_test_server_stop(&lb2.srv);
}

/* ---- the depot's side ---- */

static void test_heartbeat_free_space(void)
{
    char id[64];
    CU_ASSERT_EQUAL_FATAL(wait_listed(dep[TYS].port, 1, id, 5000), 0);
    long long before = depot_field(id, "hard_free");
    CU_ASSERT_FATAL(before > 8 * MIB);
    ibp_attr_t attr = {8 * MIB, 600, IBP_HARD, IBP_BYTEARRAY};
    ibp_caps_t caps;
    CU_ASSERT_EQUAL_FATAL(ibp_allocate(cli, "127.0.0.1", dep[TYS].port, "0", &attr, &caps),
                          IBP_OK);
    long long now = before;
    for (int i = 0; i < 100 && now == before; i++) {
        msleep(100);
        now = depot_field(id, "hard_free");
    }
    CU_ASSERT_EQUAL(now, before - 8 * MIB);
    CU_ASSERT_EQUAL(ibp_decr(cli, caps.manage, IBP_READCAP), IBP_OK);
    for (int i = 0; i < 100 && now != before; i++) {
        msleep(100);
        now = depot_field(id, "hard_free");
    }
    CU_ASSERT_EQUAL(now, before);

    /* What the depot declared came through. */
    char aid[64], *body = NULL, path[128];
    CU_ASSERT_EQUAL_FATAL(wait_listed(dep[AMS1].port, 1, aid, 5000), 0);
    snprintf(path, sizeof path, "/v1/depots/%s", aid);
    CU_ASSERT_EQUAL(tlb_http(lb.port, "GET", path, NULL, NULL, &body), 200);
    CU_ASSERT_PTR_NOT_NULL(body && strstr(body, "ops@example.org"));
    CU_ASSERT_PTR_NOT_NULL(body && strstr(body, "\"connection\":\"1G\""));
    CU_ASSERT_PTR_NOT_NULL(body && strstr(body, "\"power\":\"ups\""));
    free(body);
}

static void test_reregister_after_forget(void)
{
    char id[64], id2[64], path[128];
    CU_ASSERT_EQUAL_FATAL(wait_listed(dep[NRT].port, 1, id, 5000), 0);
    snprintf(path, sizeof path, "/v1/depots/%s", id);
    CU_ASSERT_EQUAL_FATAL(tlb_http(lb.port, "DELETE", path, lb.token, NULL, NULL), 204);
    /* The next heartbeat is answered 404; the depot registers again at once. */
    int back = -1;
    for (int i = 0; i < 100 && back < 0; i++) {
        msleep(100);
        if (wait_listed(dep[NRT].port, 1, id2, 0) == 0 && strcmp(id, id2) != 0)
            back = 0;
    }
    CU_ASSERT_EQUAL(back, 0);
    char log[1 << 15];
    lns_test_slurp(dep[NRT].log, log, sizeof log);
    CU_ASSERT_PTR_NOT_NULL(strstr(log, "registering again"));
}

static void test_lbone_down_and_back(void)
{
    ibp_depot_status_t st;
    CU_ASSERT_EQUAL_FATAL(lns_test_server_kill(&lb.srv, SIGKILL), 0);
    msleep(2500); /* heartbeats fail meanwhile (several: each kind is logged once) */
    char log[1 << 15] = "";
    int64_t end = lns_test_deadline(LNS_TEST_WAIT_MS);
    while (!strstr(log, "retrying with backoff") && lns_test_poll(end))
        lns_test_slurp(dep[TYS].log, log, sizeof log);
    /* The depots serve on. */
    CU_ASSERT_EQUAL(ibp_status(cli, "127.0.0.1", dep[TYS].port, "0", NULL, &st), IBP_OK);
    lns_test_slurp(dep[TYS].log, log, sizeof log);
    CU_ASSERT_PTR_NOT_NULL(strstr(log, "retrying with backoff"));
    /* Logged once per kind of trouble, not once per attempt. */
    int n = 0;
    for (const char *p = log; (p = strstr(p, "retrying with backoff")); p++)
        n++;
    CU_ASSERT(n >= 1 && n <= 2);
    /* The L-Bone comes back with its registry; the depots are heard again. */
    CU_ASSERT_EQUAL_FATAL(tlb_restart(&lb), 0);
    for (int i = 0; i < ND; i++)
        CU_ASSERT_EQUAL(wait_listed(dep[i].port, 1, NULL, 15000), 0);
    end = lns_test_deadline(LNS_TEST_WAIT_MS);
    do
        lns_test_slurp(dep[TYS].log, log, sizeof log);
    while (!strstr(log, "answers again") && lns_test_poll(end));
    CU_ASSERT_PTR_NOT_NULL(strstr(log, "answers again"));
}

static void test_depot_start_stop(void)
{
    test_depot_t d;
    char args[3 * PATH_MAX], id[64];
    ibp_depot_status_t st;

    /* An L-Bone that is down does not keep a depot from starting and serving. */
    snprintf(args, sizeof args, "--lbone http://127.0.0.1:%d --lbone-token-file %s "
             "--lbone-place zip=37996", raw_dead_port(), lb.token_file);
    CU_ASSERT_EQUAL_FATAL(td_start(&d, args), 0);
    CU_ASSERT_EQUAL(ibp_status(cli, "127.0.0.1", d.port, "0", NULL, &st), IBP_OK);
    lns_test_server_stop(&d.srv);

    /* A clean stop withdraws the registration. */
    snprintf(args, sizeof args, "--lbone %s --lbone-token-file %s --lbone-place zip=37996 "
             "--lbone-interval 1", lb.url, lb.token_file);
    CU_ASSERT_EQUAL_FATAL(td_start(&d, args), 0);
    CU_ASSERT_EQUAL_FATAL(wait_listed(d.port, 1, id, 10000), 0);
    lns_test_server_stop(&d.srv);
    char path[128];
    snprintf(path, sizeof path, "/v1/depots/%s", id);
    CU_ASSERT_EQUAL(tlb_http(lb.port, "GET", path, NULL, NULL, NULL), 404);
}

static void test_depot_config_errors(void)
{
    const char *base = "\"$B/ibp_depot\" --check-config --resource \"$D/cfg\"";
    CU_ASSERT_EQUAL(sh("%s --lbone \"$U\" --lbone-token-file '%s' --lbone-place 'airport= TYS'",
                       base, lb.token_file), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "L-Bone"));
    /* each bad setting: exit 2, one line naming it */
    CU_ASSERT_EQUAL(sh("%s --lbone \"$U\"", base), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "lbone-token-file"));
    CU_ASSERT_EQUAL(sh("%s --lbone \"$U\" --lbone-token-file '%s' --lbone-place airport=QQQ",
                       base, lb.token_file), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "lbone-place"));
    CU_ASSERT_EQUAL(sh("%s --lbone ftp://x --lbone-token-file '%s'", base, lb.token_file), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "lbone:"));
    CU_ASSERT_EQUAL(sh("%s --lbone \"$U\" --lbone-token-file '%s' --lbone-lat 10", base,
                       lb.token_file), 2);
    CU_ASSERT_EQUAL(sh("%s --lbone \"$U\" --lbone-token-file '%s' --lbone-lat 91 "
                       "--lbone-lon 0", base, lb.token_file), 2);
    CU_ASSERT_EQUAL(sh("%s --lbone \"$U\" --lbone-token-file '%s' --lbone-env-power solar",
                       base, lb.token_file), 2);
    CU_ASSERT_EQUAL(sh("%s --lbone \"$U\" --lbone-token-file \"$D/no-such-token\"", base), 2);
    CU_ASSERT_EQUAL(sh("%s --lbone-place airport=TYS", base), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "no L-Bone"));
    CU_ASSERT_EQUAL(sh("%s --lbone-bogus 1", base), 2);
}

/* ---- the LoRS tools ---- */

static int cap_port(const char *cap)
{
    ibp_cap_t c;
    return cap && ibp_cap_parse(cap, &c) == IBP_OK ? c.port : -1;
}

/* How many mappings of the exNode at path sit on port (-1 if it does not load); *all gets
 * the number of mappings. */
static int maps_on(const char *path, int port, int *all)
{
    xnd_t *x = NULL;
    char e[256];
    if (xnd_read_file(path, &x, e, sizeof e) != XND_OK)
        return -1;
    int n = 0;
    for (size_t i = 0; i < x->nmaps; i++)
        n += cap_port(x->maps[i]->cap[XND_READ]) == port;
    *all = (int)x->nmaps;
    xnd_free(x);
    return n;
}

static long long measurements(int port)
{
    char id[64];
    if (wait_listed(port, 1, id, 5000) < 0)
        return -1;
    char path[128], *body = NULL;
    long long n = 0;
    snprintf(path, sizeof path, "/v1/depots/%s", id);
    if (tlb_http(lb.port, "GET", path, NULL, NULL, &body) == 200 && body) {
        const char *p = strstr(body, "\"measurements\":");
        n = p ? strtoll(p + 15, NULL, 10) : 0;
    }
    free(body);
    return n;
}

static void test_upload_nearest(void)
{
    int all = 0;
    CU_ASSERT_EQUAL_FATAL(sh("head -c 4194304 /dev/urandom > \"$D/near.bin\""), 0);
    long long m0 = measurements(dep[AMS1].port);

    /* Two depots wanted near Amsterdam: the two AMS ones get every fragment. */
    CU_ASSERT_EQUAL(sh("\"$B/lors_upload\" --no-rc -H \"$U\" -l 'airport= AMS' -m 2 -d 10m -V "
                       "-o \"$D/near.xnd\" \"$D/near.bin\""), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "L-Bone"));
    int a1 = maps_on(lns_test_path("near.xnd"), dep[AMS1].port, &all);
    int a2 = maps_on(lns_test_path("near.xnd"), dep[AMS2].port, &all);
    CU_ASSERT(all >= 2);
    CU_ASSERT(a1 > 0 && a2 > 0);
    CU_ASSERT_EQUAL(a1 + a2, all);
    /* the upload reported its throughput: the L-Bone has a measurement of AMS1 */
    CU_ASSERT(measurements(dep[AMS1].port) > m0);

    /* The data is intact: download it back (also reporting). */
    long long m1 = measurements(dep[AMS1].port);
    CU_ASSERT_EQUAL(sh("\"$B/lors_download\" --no-rc --lbone \"$U\" -o \"$D/near.out\" "
                       "\"$D/near.xnd\" && cmp \"$D/near.bin\" \"$D/near.out\""), 0);
    CU_ASSERT(measurements(dep[AMS1].port) > m1);
    /* Opting out: --no-report and LNS_NO_REPORT=1 leave the history alone. */
    long long m2 = measurements(dep[AMS1].port);
    CU_ASSERT_EQUAL(sh("\"$B/lors_download\" --no-rc --lbone \"$U\" --no-report -o "
                       "\"$D/near.out\" \"$D/near.xnd\""), 0);
    CU_ASSERT_EQUAL(sh("LNS_NO_REPORT=1 \"$B/lors_download\" --no-rc --lbone \"$U\" -o "
                       "\"$D/near.out\" \"$D/near.xnd\""), 0);
    CU_ASSERT_EQUAL(measurements(dep[AMS1].port), m2);
    /* With a measurement, the L-Bone forecasts this network's bandwidth to AMS1. */
    lbone_request_t req;
    lbone_result_t r;
    lbone_request_init(&req);
    req.order = "bandwidth";
    CU_ASSERT_EQUAL(query_req(&req, &r), LBONE_OK);
    const lbone_depot_info_t *d = find_port(&r, dep[AMS1].port);
    CU_ASSERT(d && d->forecast_mbps > 0);
    lbone_result_free(&r);

    /* One depot near Narita, given by coordinates. */
    CU_ASSERT_EQUAL(sh("\"$B/lors_upload\" --no-rc -H \"$U\" -l '35.7,140.4' -m 1 -d 10m "
                       "-o \"$D/nrt.xnd\" \"$D/near.bin\""), 0);
    CU_ASSERT_EQUAL(maps_on(lns_test_path("nrt.xnd"), dep[NRT].port, &all), all);

    /* From the rc file: a dead L-Bone first (LoRS's "host port"), then ours by its pinned
     * URL (the '#' inside it is no comment); LOCATION and MAXDEPOTS. */
    char rc[PATH_MAX + 512];
    snprintf(rc, sizeof rc, "printf 'LBONE_SERVER 127.0.0.1 %d\\nLBONE_SERVER %s # ours\\n"
             "LOCATION zip= 37996\\nMAXDEPOTS 1\\n' > \"$D/lb.rc\"", raw_dead_port(), lb.url);
    CU_ASSERT_EQUAL_FATAL(sh("%s", rc), 0);
    CU_ASSERT_EQUAL(sh("LNS_RC=\"$D/lb.rc\" \"$B/lors_upload\" -d 10m -o \"$D/tys.xnd\" "
                       "\"$D/near.bin\""), 0);
    CU_ASSERT_EQUAL(maps_on(lns_test_path("tys.xnd"), dep[TYS].port, &all), all);
    CU_ASSERT(all > 0);

    /* lors_augment: one more copy near Amsterdam of the Knoxville file. */
    CU_ASSERT_EQUAL(sh("\"$B/lors_augment\" --no-rc -H \"$U\" -l 'airport= AMS' -m 1 -d 10m "
                       "\"$D/tys.xnd\""), 0);
    int tys = maps_on(lns_test_path("tys.xnd"), dep[TYS].port, &all);
    int ams = maps_on(lns_test_path("tys.xnd"), dep[AMS1].port, &all) +
              maps_on(lns_test_path("tys.xnd"), dep[AMS2].port, &all);
    CU_ASSERT(tys > 0 && ams == tys && tys + ams == all);

    /* Nothing fits: exit 5 and a line that says so; an unknown place: usage (2). */
    CU_ASSERT_EQUAL(sh("\"$B/lors_upload\" --no-rc -H \"$U\" -l 'airport= AMS' -d 2h "
                       "-o \"$D/no.xnd\" \"$D/near.bin\""), 5);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "no depot"));
    CU_ASSERT_EQUAL(sh("\"$B/lors_upload\" --no-rc -H \"$U\" -l 'airport= QQQ' -d 10m "
                       "-o \"$D/no.xnd\" \"$D/near.bin\""), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "QQQ"));
    CU_ASSERT_EQUAL(sh("\"$B/lors_upload\" --no-rc -H 127.0.0.1:%d -d 10m -o \"$D/no.xnd\" "
                       "\"$D/near.bin\"", raw_dead_port()), 5);
    CU_ASSERT_EQUAL(sh("\"$B/lors_upload\" --no-rc -l 'airport= AMS' -d 10m -o \"$D/no.xnd\" "
                       "\"$D/near.bin\""), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "no L-Bone"));
    CU_ASSERT_EQUAL(access(lns_test_path("no.xnd"), F_OK), -1);
}

/* Pins (issue 37): each depot registers its TLS pin, the L-Bone's answers carry it, and the
 * tools use it: with --tls require (no plaintext, no STATUS asked for a pin) an upload to
 * depots found through the L-Bone is sealed from the first connection and succeeds only
 * because the answer gave their pins. */
static void test_pins(void)
{
    char want[72];
    lbone_request_t req;
    lbone_result_t r;
    lbone_request_init(&req);
    CU_ASSERT_EQUAL_FATAL(query_req(&req, &r), LBONE_OK);
    const lbone_depot_info_t *d = find_port(&r, dep[AMS1].port);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    CU_ASSERT_EQUAL(td_pin(&dep[AMS1], want), 0);
    CU_ASSERT_STRING_EQUAL(d->pin, want);
    lbone_result_free(&r);
    CU_ASSERT_EQUAL_FATAL(sh("head -c 300000 /dev/urandom > \"$D/pin.bin\""), 0);
    CU_ASSERT_EQUAL(sh("\"$B/lors_upload\" --no-rc --tls require -H \"$U\" -l 'airport= AMS' "
                       "-m 2 -d 10m -o \"$D/pin.xnd\" \"$D/pin.bin\""), 0);
    CU_ASSERT_EQUAL(sh("\"$B/lors_download\" --no-rc --tls require -o \"$D/pin.out\" "
                       "\"$D/pin.xnd\" && cmp \"$D/pin.bin\" \"$D/pin.out\""), 0);
    /* a depot list without pins: --tls require then finds nothing it may speak to; with the
     * depot's pin written in it ("host:port#sha256:..."), as good as the L-Bone's answer */
    CU_ASSERT(sh("\"$B/lors_upload\" --no-rc --tls require --depot-list 127.0.0.1:%d -d 10m "
                 "-o \"$D/pin2.xnd\" \"$D/pin.bin\"", dep[AMS1].port) != 0);
    CU_ASSERT_EQUAL(sh("\"$B/lors_upload\" --no-rc --tls require --depot-list 127.0.0.1:%d#%s "
                       "-d 10m -o \"$D/pin3.xnd\" \"$D/pin.bin\"", dep[AMS1].port, want), 0);
}

static void test_lbone_query_tool(void)
{
    CU_ASSERT_EQUAL(sh("\"$B/lbone_query\" -H 127.0.0.1:%d -H \"$U\" -l 'airport= ATL'",
                       raw_dead_port()), 0);
    /* the header, then TYS first and NRT last */
    char first[64], last[64];
    snprintf(first, sizeof first, "1   127.0.0.1:%d ", dep[TYS].port);
    snprintf(last, sizeof last, "4   127.0.0.1:%d ", dep[NRT].port);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, first));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, last));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "location: airport ATL"));

    CU_ASSERT_EQUAL(sh("\"$B/lbone_query\" --lbone \"$U\" -l 'zip= 37996' -m 1 --json"), 0);
    char e[256];
    json_t *doc = lbone_json_parse(out, strlen(out), e, sizeof e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
    const json_t *list = json_object_get(doc, "depots");
    CU_ASSERT_EQUAL(json_array_size(list), 1);
    int64_t port = 0;
    lbone_json_int(json_object_get(json_array_get(list, 0), "port"), &port);
    CU_ASSERT_EQUAL(port, dep[TYS].port);
    json_decref(doc);

    /* -P adds the port to a bare host name, which means plain http: a --plain-http L-Bone */
    test_lbone_t lp;
    CU_ASSERT_EQUAL_FATAL(tlb_start(&lp, "--plain-http --probe-interval 0"), 0);
    CU_ASSERT_EQUAL(sh("\"$B/lbone_query\" -H 127.0.0.1 -P %d -h 1T", lp.port), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "0 depots"));
    lns_test_server_finish(&lp.srv);
    CU_ASSERT_EQUAL(sh("\"$B/lbone_query\" -H 127.0.0.1:%d", raw_dead_port()), 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "no L-Bone answered"));
    CU_ASSERT_EQUAL(sh("\"$B/lbone_query\" -H \"$U\" -l 'airport= QQQ'"), 1);
    CU_ASSERT_EQUAL(sh("\"$B/lbone_query\" -H \"$U\" --order fastest"), 2);
    CU_ASSERT_EQUAL(sh("\"$B/lbone_query\" --help"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "--location"));
    CU_ASSERT_EQUAL(sh("\"$B/lbone_query\" --version"), 0);
}

static const lns_test_case tests[] = {
    {"query: order by distance, fields", test_query_order_and_fields},
    {"query: filters and refusals", test_query_filters},
    {"failover", test_failover},
    {"heartbeats carry free space", test_heartbeat_free_space},
    {"re-registration after a 404", test_reregister_after_forget},
    {"L-Bone down and back", test_lbone_down_and_back},
    {"depot start and stop", test_depot_start_stop},
    {"depot config errors", test_depot_config_errors},
    {"lors tools: nearest depots, reports", test_upload_nearest},
    {"lbone_query", test_lbone_query_tool},
    {"pins: registered, in the answers, used by the tools", test_pins},
};

LNS_TEST_MAIN_WITH("lbone client", suite_init, suite_clean, tests)
