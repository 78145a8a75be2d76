/* bench_lbone.c -- load generator for lbone_server: registrations, queries, heartbeats.
 *
 *   bench_lbone --port P --token-file F [--depots 10000] [--seconds 10] [--hb-threads 2]
 *               [--queries 2000] [--hb-rate 1000]
 *
 * Talks HTTP/1.1 over keep-alive loopback connections (one per thread, raw sockets, so the
 * client costs little next to the server).  Phases, each printed as key=value lines:
 *   1. register: --depots depots at random places with random space and environment;
 *   2. query: --queries queries one after another (location, space, count=6), latency each;
 *   3. heartbeat: --hb-threads threads send heartbeats as fast as answers come, --seconds;
 *   4. mixed: the heartbeat threads again, paced to --hb-rate heartbeats/s in all, while one
 *      thread queries back to back; the heartbeat rate sustained and the query latencies
 *      under that load.
 * Every answer's status code is checked; any unexpected one aborts with exit 1.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "lns_time.h"

typedef struct conn {
    int fd;
    char buf[65536];
    size_t have;
} conn_t;

static int port;
static char token[600];
static int ndepots = 10000;
static int seconds = 10;
static int hb_threads = 2;
static int nqueries = 2000;
static int hb_rate = 1000;    /* mixed phase target, all threads together */
static int hb_paced;
static char (*ids)[17];
static char (*secrets)[65];
static unsigned long long *hard_total, *soft_total; /* heartbeats stay within them */
static atomic_int stop_flag;
static atomic_long hb_done;

static void die(const char *what)
{
    fprintf(stderr, "bench_lbone: %s\n", what);
    exit(1);
}

static void conn_open(conn_t *c)
{
    struct sockaddr_in sa;
    int one = 1;
    c->have = 0;
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((unsigned short)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sa, sizeof sa) < 0)
        die("cannot connect to the server");
}

/* One request on the keep-alive connection; the body of the answer goes to out (if not
 * NULL, NUL-terminated, at most outsize).  Returns the status code. */
static int request(conn_t *c, const char *method, const char *path, const char *bearer,
                   const char *body, char *out, size_t outsize)
{
    char req[4096];
    int n = snprintf(req, sizeof req, "%s %s HTTP/1.1\r\nHost: bench\r\n", method, path);
    if (bearer)
        n += snprintf(req + n, sizeof req - (size_t)n, "Authorization: Bearer %s\r\n", bearer);
    if (body)
        n += snprintf(req + n, sizeof req - (size_t)n,
                      "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                      strlen(body), body);
    else
        n += snprintf(req + n, sizeof req - (size_t)n, "\r\n");
    if (n >= (int)sizeof req)
        die("request too long");
    for (int off = 0; off < n;) {
        ssize_t w = send(c->fd, req + off, (size_t)(n - off), MSG_NOSIGNAL);
        if (w <= 0)
            die("send failed");
        off += (int)w;
    }
    /* Read the head, then Content-Length bytes. */
    char *end;
    for (;;) {
        c->buf[c->have] = 0;
        if ((end = strstr(c->buf, "\r\n\r\n")))
            break;
        if (c->have + 1 >= sizeof c->buf)
            die("answer head too long");
        ssize_t r = recv(c->fd, c->buf + c->have, sizeof c->buf - 1 - c->have, 0);
        if (r <= 0)
            die("connection closed by the server");
        c->have += (size_t)r;
    }
    int code = 0;
    size_t clen = 0;
    if (sscanf(c->buf, "HTTP/1.1 %d", &code) != 1)
        die("bad status line");
    char *cl = strcasestr(c->buf, "\r\nContent-Length:");
    if (cl && cl < end)
        clen = strtoul(cl + 17, NULL, 10);
    size_t head = (size_t)(end + 4 - c->buf);
    if (head + clen >= sizeof c->buf)
        die("answer too long for the bench buffer");
    while (c->have < head + clen) {
        ssize_t r = recv(c->fd, c->buf + c->have, sizeof c->buf - 1 - c->have, 0);
        if (r <= 0)
            die("connection closed inside an answer");
        c->have += (size_t)r;
    }
    if (out) {
        size_t k = clen < outsize - 1 ? clen : outsize - 1;
        memcpy(out, c->buf + head, k);
        out[k] = 0;
    }
    memmove(c->buf, c->buf + head + clen, c->have - head - clen);
    c->have -= head + clen;
    return code;
}

static double frand(unsigned *seed)
{
    return rand_r(seed) / (double)RAND_MAX;
}

typedef struct range {
    int from, to;
} range_t;

static void *register_range(void *arg)
{
    range_t *r = arg;
    conn_t *c = malloc(sizeof *c);
    unsigned seed = (unsigned)r->from + 1;
    static const char *conns[] = {"T1", "T3", "OC3", "OC12", "1G", "10G"};
    static const char *powers[] = {"none", "ups", "generator"};
    char body[1024], out[512];
    if (!c)
        die("out of memory");
    conn_open(c);
    for (int i = r->from; i < r->to; i++) {
        unsigned long long hard = (unsigned long long)(frand(&seed) * 1e12);
        snprintf(body, sizeof body,
                 "{\"host\":\"depot%05d.bench\",\"port\":6714,\"rid\":\"0\",\"hard_total\":%llu,"
                 "\"hard_free\":%llu,\"soft_total\":%llu,\"soft_free\":%llu,"
                 "\"max_duration\":%d,\"lat\":%.4f,\"lon\":%.4f,\"contact\":\"bench\","
                 "\"env\":{\"connection\":\"%s\",\"monitoring\":%d,\"power\":\"%s\","
                 "\"firewall\":%s}}",
                 i, hard * 2, hard, hard, hard / 2, 3600 * (1 + rand_r(&seed) % 720),
                 frand(&seed) * 140 - 60, frand(&seed) * 360 - 180, conns[rand_r(&seed) % 6],
                 rand_r(&seed) % 25, powers[rand_r(&seed) % 3], rand_r(&seed) % 2 ? "true" : "false");
        if (request(c, "POST", "/v1/depots", token, body, out, sizeof out) != 201)
            die(out);
        char *p = strstr(out, "\"id\":\""), *q = strstr(out, "\"secret\":\"");
        if (!p || !q)
            die("registration answer without id or secret");
        memcpy(ids[i], p + 6, 16);
        ids[i][16] = 0;
        memcpy(secrets[i], q + 10, 64);
        secrets[i][64] = 0;
        hard_total[i] = hard * 2;
        soft_total[i] = hard;
    }
    close(c->fd);
    free(c);
    return NULL;
}

static void *heartbeats(void *arg)
{
    unsigned seed = (unsigned)(size_t)arg * 7919 + 1;
    conn_t *c = malloc(sizeof *c);
    char path[80], body[128];
    int64_t period = hb_paced ? 1000000000LL * hb_threads / hb_rate : 0;
    int64_t next = lns_mono_ns();
    if (!c)
        die("out of memory");
    conn_open(c);
    while (!atomic_load(&stop_flag)) {
        /* Paced: one heartbeat per period, catching up (no sleep) when behind. */
        if (period) {
            int64_t now = lns_mono_ns();
            if (next > now) {
                struct timespec ts = {0, (long)(next - now)};
                nanosleep(&ts, NULL);
            }
            next += period;
        }
        int i = rand_r(&seed) % ndepots;
        snprintf(path, sizeof path, "/v1/depots/%s/heartbeat", ids[i]);
        /* Free space moves, but within the same spread as at registration, so the queries
         * of the mixed phase sift as many candidates as those of the idle one. */
        snprintf(body, sizeof body, "{\"hard_free\":%llu,\"soft_free\":%llu}",
                 (unsigned long long)(hard_total[i] * (0.4 + 0.2 * frand(&seed))),
                 (unsigned long long)(soft_total[i] * (0.4 + 0.2 * frand(&seed))));
        if (request(c, "PUT", path, secrets[i], body, NULL, 0) != 200)
            die("heartbeat refused");
        atomic_fetch_add(&hb_done, 1);
    }
    close(c->fd);
    free(c);
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
    int k = (int)ceil(p / 100.0 * n) - 1;
    return v[k < 0 ? 0 : k >= n ? n - 1 : k];
}

/* Queries back to back until n are done or, with until_stop, until stop_flag. */
static int run_queries(double *lat_ms, int n, int until_stop, size_t *bytes)
{
    static const char *places[] = {"35.96%2C-83.92", "52.37%2C4.89", "35.68%2C139.69",
                                   "-33.87%2C151.21", "40.71%2C-74.01", "airport%3D%20ATL",
                                   "airport%3D%20AMS", "city%3D%20Knoxville%20state%3D%20TN"};
    conn_t *c = malloc(sizeof *c);
    char path[256];
    static char out[65536];
    unsigned seed = 42;
    int done = 0;
    if (!c)
        die("out of memory");
    conn_open(c);
    *bytes = 0;
    while (done < n && (!until_stop || !atomic_load(&stop_flag))) {
        snprintf(path, sizeof path, "/v1/depots?location=%s&count=6&hard=%d&duration=%d",
                 places[rand_r(&seed) % 8], rand_r(&seed) % 1000000000, 3600 * (rand_r(&seed) % 48));
        int64_t t0 = lns_mono_ns();
        if (request(c, "GET", path, NULL, NULL, out, sizeof out) != 200)
            die(out);
        lat_ms[done++] = (double)(lns_mono_ns() - t0) / 1e6;
        *bytes += strlen(out);
        if (!strstr(out, "\"id\":"))
            die("a query found no depot");
    }
    close(c->fd);
    free(c);
    return done;
}

static void report_latency(const char *phase, double *lat, int n)
{
    qsort(lat, (size_t)n, sizeof *lat, cmp_double);
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += lat[i];
    printf("%s_queries=%d\n%s_query_ms_mean=%.3f\n%s_query_ms_p50=%.3f\n%s_query_ms_p99=%.3f\n"
           "%s_query_ms_max=%.3f\n",
           phase, n, phase, sum / n, phase, pct(lat, n, 50), phase, pct(lat, n, 99), phase,
           lat[n - 1]);
}

static double run_heartbeats(int with_queries, double *lat, int *nlat)
{
    pthread_t th[64];
    size_t bytes;
    atomic_store(&stop_flag, 0);
    atomic_store(&hb_done, 0);
    hb_paced = with_queries;
    int64_t t0 = lns_mono_ns();
    for (int i = 0; i < hb_threads; i++)
        pthread_create(&th[i], NULL, heartbeats, (void *)(size_t)i);
    if (with_queries) {
        /* Query for the whole window; the clock stops the heartbeats. */
        int64_t end = t0 + (int64_t)seconds * 1000000000LL;
        int n = 0;
        while (lns_mono_ns() < end && n < 1000000) {
            int k = run_queries(lat + n, 200 < 1000000 - n ? 200 : 1000000 - n, 0, &bytes);
            n += k;
        }
        *nlat = n;
    } else {
        struct timespec ts = {seconds, 0};
        nanosleep(&ts, NULL);
    }
    atomic_store(&stop_flag, 1);
    for (int i = 0; i < hb_threads; i++)
        pthread_join(th[i], NULL);
    double secs = (double)(lns_mono_ns() - t0) / 1e9;
    return (double)atomic_load(&hb_done) / secs;
}

int main(int argc, char **argv)
{
    const char *token_file = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--port") == 0)
            port = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--token-file") == 0)
            token_file = argv[i + 1];
        else if (strcmp(argv[i], "--depots") == 0)
            ndepots = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--seconds") == 0)
            seconds = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--hb-threads") == 0)
            hb_threads = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--queries") == 0)
            nqueries = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--hb-rate") == 0)
            hb_rate = atoi(argv[i + 1]);
        else
            die("usage: bench_lbone --port P --token-file F [--depots N] [--seconds S] "
                "[--hb-threads N] [--queries N] [--hb-rate N]");
    }
    if (port <= 0 || !token_file || ndepots < 1 || seconds < 1 || hb_threads < 1 ||
        hb_threads > 64 || nqueries < 1 || hb_rate < 1)
        die("--port and --token-file are required; counts must be positive");
    FILE *f = fopen(token_file, "r");
    if (!f || !fgets(token, sizeof token, f))
        die("cannot read the token file");
    fclose(f);
    token[strcspn(token, "\r\n")] = 0;
    ids = calloc((size_t)ndepots, sizeof *ids);
    secrets = calloc((size_t)ndepots, sizeof *secrets);
    hard_total = calloc((size_t)ndepots, sizeof *hard_total);
    soft_total = calloc((size_t)ndepots, sizeof *soft_total);
    double *lat = malloc(1000000 * sizeof *lat);
    if (!ids || !secrets || !hard_total || !soft_total || !lat)
        die("out of memory");

    /* 1. Register, 4 connections at once. */
    pthread_t th[4];
    range_t rg[4];
    int64_t t0 = lns_mono_ns();
    for (int i = 0; i < 4; i++) {
        rg[i].from = ndepots * i / 4;
        rg[i].to = ndepots * (i + 1) / 4;
        pthread_create(&th[i], NULL, register_range, &rg[i]);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    double rs = (double)(lns_mono_ns() - t0) / 1e9;
    printf("depots=%d\nregister_seconds=%.2f\nregisters_per_s=%.0f\n", ndepots, rs, ndepots / rs);

    /* 2. Queries alone. */
    size_t bytes;
    int n = run_queries(lat, nqueries, 0, &bytes);
    printf("query_answer_bytes_mean=%zu\n", bytes / (size_t)n);
    report_latency("idle", lat, n);

    /* 3. Heartbeats alone; 4. heartbeats while one client queries back to back. */
    printf("heartbeats_per_s=%.0f\n", run_heartbeats(0, NULL, NULL));
    int nl = 0;
    double hb = run_heartbeats(1, lat, &nl);
    printf("mixed_heartbeat_target_per_s=%d\nmixed_heartbeats_per_s=%.0f\n", hb_rate, hb);
    report_latency("mixed", lat, nl);
    free(lat);
    free(ids);
    free(secrets);
    free(hard_total);
    free(soft_total);
    return 0;
}
