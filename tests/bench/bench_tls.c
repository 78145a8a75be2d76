/* bench_tls.c -- the sealed wire's cost per call: libibp over TLS against plaintext, one depot.
 *
 *   bench_tls smallops  HOST PORT [--ops N] [--size BYTES] [--tls-first]
 *   bench_tls handshake HOST PORT [--calls N]
 *
 * Both learn the depot's pin from its STATUS (plaintext, as IBP_TLS_AUTO does) and pin it
 * with ibp_tls_pin, so the TLS clients seal every connection; the plaintext client has
 * IBP_TLS_OFF.  Both run in one process, A against B in the same second, so the machine's
 * other tenants slow both sides alike.
 *
 * smallops: two clients with a warm pool (one kept connection each, opened and, for TLS,
 * handshaken by one untimed triple) each do N ALLOCATE(hard) + STORE + LOAD triples of BYTES
 * (default 4096, verified), plaintext first (TLS first with --tls-first).  Prints triples/s of
 * each side, their ratio, the median triple in microseconds and the ratio of those medians
 * (plain/TLS: the rate of a typical triple, which a burst of other load moves less).
 *
 * handshake: N rounds, each one timed STATUS on a fresh connection (max_idle_per_depot = 0,
 * nothing pooled) three ways: plaintext; TLS with resumption (one client throughout, whose
 * context keeps a session ticket per host:port: after the untimed first call every handshake
 * is resumed); TLS without (a new client each round, so its context, made at its first
 * handshake, has no session: a full handshake, Ed25519 signature and X25519 included).  The
 * new client's time includes making its TLS context (SSL_CTX_new and the system's trust
 * store), which is also timed alone (lns_tls_client_new + free) so the handshake itself can be
 * told.  Prints the medians in microseconds, and the client's CPU microseconds per call.
 *
 * Output: one key=value line (op=... first), for tests/bench/bench_tls.sh.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ibp.h"
#include "lns_time.h"
#include "lns_tls.h"
#include "usage.h"

enum { EXIT_IBP = 1, EXIT_VERIFY = 3, EXIT_SYS = 4 };

static const char *usage_text =
    "usage: bench_tls COMMAND HOST PORT [OPTIONS]\n"
    "  smallops  HOST PORT [--ops N] [--size BYTES] [--tls-first]\n"
    "            N (default 2000) ALLOCATE + STORE + LOAD triples of BYTES (default 4096) over\n"
    "            one pooled plaintext connection and N over one pooled TLS connection (the\n"
    "            depot pinned); prints triples/s of both and the ratio TLS/plain.\n"
    "  handshake HOST PORT [--calls N]\n"
    "            N (default 300) STATUS calls on fresh connections each way: plaintext, TLS\n"
    "            resumed (one client), TLS full (a new client each time); prints median us.\n"
    "Output: one key=value line.\n";

typedef struct opts {
    const char *pos[2];
    int npos;
    uint64_t ops, size, calls;
    int tls_first;
} opts_t;

static void die_ibp(const char *what, int err)
{
    fprintf(stderr, "bench_tls: %s: %s%s%s\n", what, ibp_strerror(err),
            err == IBP_E_TLS || err == IBP_E_TLS_PIN ? ": " : "",
            err == IBP_E_TLS || err == IBP_E_TLS_PIN ? ibp_tls_error() : "");
    exit(EXIT_IBP);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "bench_tls: out of memory (%zu bytes)\n", n);
        exit(EXIT_SYS);
    }
    return p;
}

static ibp_client_t *client_new(int tls, int idle)
{
    ibp_client_opts_t o;
    ibp_client_opts_init(&o);
    o.tls = tls;
    o.max_idle_per_depot = idle;
    ibp_client_t *c = ibp_client_new(&o);
    if (!c) {
        fprintf(stderr, "bench_tls: ibp_client_new: out of memory\n");
        exit(EXIT_SYS);
    }
    return c;
}

static int64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* The median of v[n] in microseconds (sorts v). */
static double median_us(int64_t *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_i64);
    if (n == 0)
        return 0;
    return (n % 2 ? (double)v[n / 2] : ((double)v[n / 2 - 1] + (double)v[n / 2]) / 2) / 1e3;
}

/* Learn the depot's pin from its STATUS (plaintext) and pin it for this process. */
static void pin_depot(const char *host, int port)
{
    ibp_client_t *c = client_new(IBP_TLS_OFF, 0);
    ibp_depot_status_t st;
    int rc = ibp_status(c, host, port, NULL, NULL, &st);
    if (rc != IBP_OK)
        die_ibp("STATUS", rc);
    ibp_client_free(c);
    if (!st.pin[0]) {
        fprintf(stderr, "bench_tls: %s:%d names no TLS pin in its STATUS (--tls no?)\n", host,
                port);
        exit(EXIT_IBP);
    }
    if ((rc = ibp_tls_pin(host, port, st.pin)) != IBP_OK)
        die_ibp("ibp_tls_pin", rc);
}

static void parse_opts(int argc, char **argv, opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->ops = 2000;
    o->size = 4096;
    o->calls = 300;
    static const char *const flags[] = {"--tls-first", NULL};
    for (int i = 0; i < argc; i++) {
        const char *v, *a = bench_arg(argc, argv, &i, o->pos, &o->npos, 2, flags, &v);
        if (!a)
            continue;
        if (!strcmp(a, "--tls-first"))
            o->tls_first = 1;
        else if (!strcmp(a, "--ops"))
            o->ops = bench_size_arg(v, "bad --ops");
        else if (!strcmp(a, "--size"))
            o->size = bench_size_arg(v, "bad --size");
        else if (!strcmp(a, "--calls"))
            o->calls = bench_size_arg(v, "bad --calls");
        else
            bench_usage_exit("unknown option");
    }
    if (o->npos != 2)
        bench_usage_exit("HOST PORT");
    if (o->ops < 1 || o->ops > 10000000 || o->calls < 1 || o->calls > 1000000 || o->size < 1 ||
        o->size > 64ull << 20)
        bench_usage_exit("--ops, --calls 1..10^6, --size 1..64M");
}

/* ---- smallops ------------------------------------------------------------------------ */

#define BLOCK 50 /* smallops: triples one side does before the other takes its turn */

typedef struct side {
    ibp_client_t *c;
    int64_t *lat; /* ns per triple */
    double seconds;
} side_t;

/* One ALLOCATE + STORE + LOAD of size bytes, verified; the seed makes the bytes. */
static void triple(ibp_client_t *c, const char *host, int port, unsigned char *out,
                   unsigned char *in, uint64_t size, uint64_t seed)
{
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    for (uint64_t i = 0; i < size; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        out[i] = (unsigned char)x;
    }
    ibp_attr_t a = {.size = size, .duration_s = 600, .reliability = IBP_HARD,
                    .type = IBP_BYTEARRAY};
    ibp_caps_t caps;
    uint64_t got = 0;
    int rc = ibp_allocate(c, host, port, NULL, &a, &caps);
    if (rc != IBP_OK)
        die_ibp("ALLOCATE", rc);
    if ((rc = ibp_store(c, caps.write, out, size, &got)) != IBP_OK || got != size)
        die_ibp("STORE", rc != IBP_OK ? rc : IBP_E_GENERIC);
    if ((rc = ibp_load(c, caps.read, 0, size, in)) != IBP_OK)
        die_ibp("LOAD", rc);
    if (memcmp(in, out, size) != 0) {
        fprintf(stderr, "bench_tls: LOAD returned other bytes than were stored\n");
        exit(EXIT_VERIFY);
    }
}

/* Triples [from, to) of one side, timed one by one. */
static void run_block(side_t *s, const char *host, int port, const opts_t *o,
                      unsigned char *out, unsigned char *in, uint64_t seed, uint64_t from,
                      uint64_t to)
{
    int64_t t0 = lns_mono_ns();
    for (uint64_t i = from; i < to; i++) {
        int64_t t = lns_mono_ns();
        triple(s->c, host, port, out, in, o->size, seed + i);
        s->lat[i] = lns_mono_ns() - t;
    }
    s->seconds += (double)(lns_mono_ns() - t0) / 1e9;
}

static int cmd_smallops(const opts_t *o)
{
    const char *host = o->pos[0];
    int port = bench_port_arg(o->pos[1]);
    pin_depot(host, port);
    side_t plain = {.c = client_new(IBP_TLS_OFF, 1)}, tls = {.c = client_new(IBP_TLS_AUTO, 1)};
    unsigned char *out = xmalloc(o->size), *in = xmalloc(o->size);
    plain.lat = xmalloc(o->ops * sizeof(int64_t));
    tls.lat = xmalloc(o->ops * sizeof(int64_t));
    /* Warm pools: the connection (and its handshake) is made here, untimed. */
    triple(plain.c, host, port, out, in, o->size, 1);
    triple(tls.c, host, port, out, in, o->size, 2);
    /* Blocks of BLOCK triples, the sides taking turns (the first side first in every other
     * pair), so that a noisy second of this shared machine falls on both. */
    for (uint64_t b = 0, k = 0; b < o->ops; b += BLOCK, k++) {
        uint64_t e = b + BLOCK < o->ops ? b + BLOCK : o->ops;
        int tls_now = o->tls_first ^ (int)(k & 1);
        run_block(tls_now ? &tls : &plain, host, port, o, out, in, tls_now ? 1u << 30 : 2u << 30,
                  b, e);
        run_block(tls_now ? &plain : &tls, host, port, o, out, in, tls_now ? 2u << 30 : 1u << 30,
                  b, e);
    }
    double pr = (double)o->ops / plain.seconds, tr = (double)o->ops / tls.seconds;
    double pm = median_us(plain.lat, o->ops), tm = median_us(tls.lat, o->ops);
    printf("op=smallops size=%" PRIu64 " triples=%" PRIu64 " first=%s plain_triples_per_s=%.1f "
           "tls_triples_per_s=%.1f ratio=%.3f plain_p50_us=%.1f tls_p50_us=%.1f "
           "ratio_p50=%.3f\n",
           o->size, o->ops, o->tls_first ? "tls" : "plain", pr, tr, tr / pr, pm, tm, pm / tm);
    ibp_client_free(plain.c);
    ibp_client_free(tls.c);
    free(plain.lat);
    free(tls.lat);
    free(out);
    free(in);
    return 0;
}

/* ---- handshake ----------------------------------------------------------------------- */

enum { H_PLAIN, H_RESUMED, H_FULL, H_CTX, H_KINDS };

static void status_call(ibp_client_t *c, const char *host, int port, const char *what)
{
    ibp_depot_status_t st;
    int rc = ibp_status(c, host, port, NULL, NULL, &st);
    if (rc != IBP_OK)
        die_ibp(what, rc);
}

static int cmd_handshake(const opts_t *o)
{
    const char *host = o->pos[0];
    int port = bench_port_arg(o->pos[1]);
    pin_depot(host, port);
    size_t n = (size_t)o->calls;
    int64_t *wall[H_KINDS], cpu[H_KINDS] = {0};
    for (int k = 0; k < H_KINDS; k++)
        wall[k] = xmalloc(n * sizeof(int64_t));
    ibp_client_t *plain = client_new(IBP_TLS_OFF, 0), *resumed = client_new(IBP_TLS_AUTO, 0);
    status_call(plain, host, port, "STATUS (plaintext)");
    status_call(resumed, host, port, "STATUS (TLS)"); /* the first, full handshake: a ticket */
    char err[256];
    for (size_t i = 0; i < n; i++) {
        int64_t t0 = lns_mono_ns(), c0 = cpu_ns();
        status_call(plain, host, port, "STATUS (plaintext)");
        int64_t t1 = lns_mono_ns(), c1 = cpu_ns();
        status_call(resumed, host, port, "STATUS (TLS, resumed)");
        int64_t t2 = lns_mono_ns(), c2 = cpu_ns();
        ibp_client_t *fresh = client_new(IBP_TLS_AUTO, 0);
        status_call(fresh, host, port, "STATUS (TLS, full)");
        ibp_client_free(fresh);
        int64_t t3 = lns_mono_ns(), c3 = cpu_ns();
        lns_tls_ctx_t *ctx = lns_tls_client_new(err, sizeof err);
        if (!ctx) {
            fprintf(stderr, "bench_tls: %s\n", err);
            return EXIT_SYS;
        }
        lns_tls_ctx_free(ctx);
        int64_t t4 = lns_mono_ns(), c4 = cpu_ns();
        wall[H_PLAIN][i] = t1 - t0, cpu[H_PLAIN] += c1 - c0;
        wall[H_RESUMED][i] = t2 - t1, cpu[H_RESUMED] += c2 - c1;
        wall[H_FULL][i] = t3 - t2, cpu[H_FULL] += c3 - c2;
        wall[H_CTX][i] = t4 - t3, cpu[H_CTX] += c4 - c3;
    }
    double m[H_KINDS];
    for (int k = 0; k < H_KINDS; k++)
        m[k] = median_us(wall[k], n);
    printf("op=handshake calls=%zu plain_us=%.1f tls_resumed_us=%.1f tls_full_us=%.1f "
           "ctx_us=%.1f full_minus_ctx_us=%.1f cpu_plain_us=%.1f cpu_resumed_us=%.1f "
           "cpu_full_us=%.1f cpu_ctx_us=%.1f\n",
           n, m[H_PLAIN], m[H_RESUMED], m[H_FULL], m[H_CTX], m[H_FULL] - m[H_CTX],
           (double)cpu[H_PLAIN] / 1e3 / (double)n, (double)cpu[H_RESUMED] / 1e3 / (double)n,
           (double)cpu[H_FULL] / 1e3 / (double)n, (double)cpu[H_CTX] / 1e3 / (double)n);
    ibp_client_free(plain);
    ibp_client_free(resumed);
    for (int k = 0; k < H_KINDS; k++)
        free(wall[k]);
    return 0;
}

int main(int argc, char **argv)
{
    const char *cmd = bench_command("bench_tls", usage_text, argc, argv);
    opts_t o;
    parse_opts(argc - 2, argv + 2, &o);
    if (!strcmp(cmd, "smallops"))
        return cmd_smallops(&o);
    if (!strcmp(cmd, "handshake"))
        return cmd_handshake(&o);
    bench_usage_exit("unknown command");
    return 2;
}
