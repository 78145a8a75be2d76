/* bench_ibp.c -- load generator for one IBP depot, over libibp only.
 *
 *   bench_ibp fill     HOST PORT SIZE [--from FILE] [--chunk BYTES]   allocate + store, print caps
 *   bench_ibp load     HOST PORT RCAP SIZE [--conns N] [--req BYTES] [--verify FILE]
 *   bench_ibp store    HOST PORT SIZE [--from FILE] [--chunk BYTES] [--keep]
 *   bench_ibp smallops HOST PORT [--clients N] [--seconds S] [--size BYTES]
 *   bench_ibp freeport                                               print a free loopback port
 *
 * Every result is one line of key=value fields on stdout (op=... first), so that
 * tests/bench/bench_depot.sh can take medians and ratios with awk.  MB are 10^6 bytes, as
 * curl's speed_download counts them.
 *
 * The ideas a reader needs: every thread owns its own ibp_client_t, so each one holds exactly
 * one keep-alive connection and threads never meet in a shared pool; data that is loaded is
 * only received into a buffer (never written anywhere), so a LOAD figure is the depot plus one
 * copy into user space, like curl -o /dev/null against nginx.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ibp.h"
#include "lns_units.h"
#include "lns_net.h"
#include "lns_time.h"
#include "usage.h"

enum { EXIT_IBP = 1, EXIT_USAGE = 2, EXIT_VERIFY = 3, EXIT_SYS = 4 };

#define MIB (1024ull * 1024ull)

static const char *usage_text =
    "usage: bench_ibp COMMAND ARGS...\n"
    "  fill     HOST PORT SIZE [--from FILE] [--chunk BYTES] [--duration S]\n"
    "           ALLOCATE a hard allocation of SIZE bytes and STORE SIZE bytes into it (from\n"
    "           FILE with sendfile, else a generated pattern); prints rcap= wcap= mcap=.\n"
    "  load     HOST PORT RCAP SIZE [--conns N] [--req BYTES] [--verify FILE]\n"
    "           N threads, one connection each, LOAD disjoint slices of [0,SIZE) in requests\n"
    "           of BYTES (default 8M) into a buffer; prints MB/s.  --verify compares every\n"
    "           byte with FILE (not for timing).\n"
    "  store    HOST PORT SIZE [--from FILE] [--chunk BYTES] [--keep]\n"
    "           ALLOCATE then STORE SIZE bytes over one connection, in one STORE (--chunk 0,\n"
    "           the default) or STOREs of BYTES; from FILE with sendfile, else from memory.\n"
    "           Prints MB/s of the STOREs; frees the allocation unless --keep.\n"
    "  smallops HOST PORT [--clients N] [--seconds S] [--size BYTES]\n"
    "           N threads (default 16) each loop ALLOCATE(hard) + STORE + LOAD of BYTES\n"
    "           (default 4096), verifying the bytes; prints triples/s and latencies.\n"
    "  freeport prints a TCP port that is free on 127.0.0.1 right now.\n"
    "Sizes take K, M, G, T suffixes (powers of 1024).  Output: key=value lines.\n";

static double secs_since(int64_t t0_ns)
{
    return (double)(lns_mono_ns() - t0_ns) / 1e9;
}

static void die_ibp(const char *what, int err)
{
    fprintf(stderr, "bench_ibp: %s: %s\n", what, ibp_strerror(err));
    exit(EXIT_IBP);
}

static ibp_client_t *client_new(int idle)
{
    ibp_client_opts_t o;
    ibp_client_opts_init(&o);
    o.max_idle_per_depot = idle;
    ibp_client_t *c = ibp_client_new(&o);
    if (!c) {
        fprintf(stderr, "bench_ibp: ibp_client_new: out of memory\n");
        exit(EXIT_SYS);
    }
    return c;
}

/* A cheap deterministic byte stream (xorshift64), so generated data does not compress. */
static void fill_pattern(unsigned char *buf, size_t n, uint64_t seed)
{
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        memcpy(buf + i, &x, 8);
    }
    for (; i < n; i++)
        buf[i] = (unsigned char)(x >> (8 * (i & 7)));
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "bench_ibp: out of memory (%zu bytes)\n", n);
        exit(EXIT_SYS);
    }
    return p;
}

static int open_source(const char *path, uint64_t size)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        fprintf(stderr, "bench_ibp: %s: %s\n", path, strerror(errno));
        exit(EXIT_SYS);
    }
    if ((uint64_t)st.st_size < size) {
        fprintf(stderr, "bench_ibp: %s: only %lld bytes, need %" PRIu64 "\n", path,
                (long long)st.st_size, size);
        exit(EXIT_USAGE);
    }
    return fd;
}

/* STORE size bytes to wcap: from file fd with sendfile (fd >= 0) or from a generated buffer,
 * in one STORE (chunk 0) or STOREs of chunk bytes. */
static void store_bytes(ibp_client_t *c, const char *wcap, uint64_t size, int fd, uint64_t chunk,
                        unsigned char *buf)
{
    uint64_t step = chunk ? chunk : size;
    for (uint64_t off = 0; off < size || (size == 0 && off == 0); off += step) {
        uint64_t n = size - off < step ? size - off : step, got = 0;
        int rc = fd >= 0 ? ibp_store_file(c, wcap, fd, off, n, &got)
                         : ibp_store(c, wcap, buf, n, &got);
        if (rc != IBP_OK)
            die_ibp("STORE", rc);
        if (got != n) {
            fprintf(stderr, "bench_ibp: STORE: depot took %" PRIu64 " of %" PRIu64 " bytes\n",
                    got, n);
            exit(EXIT_IBP);
        }
        if (size == 0)
            break;
    }
}

static void allocate(ibp_client_t *c, const char *host, int port, uint64_t size, int64_t dur,
                     ibp_caps_t *caps)
{
    ibp_attr_t a = {.size = size ? size : 1, .duration_s = dur, .reliability = IBP_HARD,
                    .type = IBP_BYTEARRAY};
    int rc = ibp_allocate(c, host, port, NULL, &a, caps);
    if (rc != IBP_OK)
        die_ibp("ALLOCATE", rc);
}

/* ---- options ------------------------------------------------------------------------- */

typedef struct opts {
    const char *pos[8];
    int npos;
    int conns, clients;
    uint64_t req, chunk, size;
    double seconds;
    int64_t duration;
    const char *from, *verify;
    int keep;
} opts_t;

static void parse_opts(int argc, char **argv, opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->conns = 1;
    o->clients = 16;
    o->req = 8 * MIB;
    o->size = 4096;
    o->seconds = 10;
    o->duration = 3600;
    static const char *const flags[] = {"--keep", NULL};
    for (int i = 0; i < argc; i++) {
        const char *v, *a = bench_arg(argc, argv, &i, o->pos, &o->npos, 8, flags, &v);
        if (!a)
            continue;
        if (!strcmp(a, "--keep"))
            o->keep = 1;
        else if (!strcmp(a, "--conns"))
            o->conns = (int)bench_size_arg(v, "bad --conns");
        else if (!strcmp(a, "--clients"))
            o->clients = (int)bench_size_arg(v, "bad --clients");
        else if (!strcmp(a, "--req"))
            o->req = bench_size_arg(v, "bad --req");
        else if (!strcmp(a, "--chunk"))
            o->chunk = bench_size_arg(v, "bad --chunk");
        else if (!strcmp(a, "--size"))
            o->size = bench_size_arg(v, "bad --size");
        else if (!strcmp(a, "--duration"))
            o->duration = (int64_t)bench_size_arg(v, "bad --duration");
        else if (!strcmp(a, "--seconds")) {
            o->seconds = atof(v);
            if (o->seconds <= 0)
                bench_usage_exit("bad --seconds");
        } else if (!strcmp(a, "--from"))
            o->from = v;
        else if (!strcmp(a, "--verify"))
            o->verify = v;
        else
            bench_usage_exit("unknown option");
    }
    if (o->conns < 1 || o->conns > 1024 || o->clients < 1 || o->clients > 1024 || o->req == 0)
        bench_usage_exit("counts must be 1..1024, --req > 0");
}

/* ---- fill and store ------------------------------------------------------------------ */

/* fill keeps the allocation and prints its capabilities; store times the ALLOCATE too and
 * frees the allocation unless --keep. */
static int cmd_store(opts_t *o, int fill)
{
    if (o->npos != 3)
        bench_usage_exit(fill ? "fill HOST PORT SIZE" : "store HOST PORT SIZE");
    const char *host = o->pos[0];
    int port = bench_port_arg(o->pos[1]);
    uint64_t size = bench_size_arg(o->pos[2], "bad SIZE");
    int fd = o->from ? open_source(o->from, size) : -1;
    uint64_t bufsz = o->chunk ? o->chunk : size;
    unsigned char *buf = NULL;
    if (fd < 0) {
        buf = xmalloc(bufsz);
        fill_pattern(buf, bufsz, fill ? 1 : 2);
    }
    ibp_client_t *c = client_new(1);
    ibp_caps_t caps;
    int64_t ta = lns_mono_ns();
    allocate(c, host, port, size, o->duration, &caps);
    double alloc_s = secs_since(ta);
    int64_t t0 = lns_mono_ns();
    store_bytes(c, caps.write, size, fd, o->chunk, buf);
    double s = secs_since(t0);
    if (fill)
        printf("op=fill bytes=%" PRIu64 " seconds=%.6f mbps=%.1f\n", size, s, size / s / 1e6);
    else
        printf("op=store bytes=%" PRIu64 " chunk=%" PRIu64 " source=%s seconds=%.6f "
               "alloc_ms=%.3f mbps=%.1f\n",
               size, o->chunk ? o->chunk : size, fd >= 0 ? "file" : "memory", s,
               alloc_s * 1e3, size / s / 1e6);
    if (fill || o->keep) {
        printf("rcap=%s\nwcap=%s\nmcap=%s\n", caps.read, caps.write, caps.manage);
    } else {
        int rc = ibp_decr(c, caps.manage, IBP_READCAP);
        if (rc != IBP_OK)
            die_ibp("MANAGE DECR (free)", rc);
    }
    ibp_client_free(c);
    free(buf);
    if (fd >= 0)
        close(fd);
    return 0;
}

/* ---- load ---------------------------------------------------------------------------- */

typedef struct load_job {
    pthread_t th;
    const char *rcap;
    uint64_t off, len, req;
    int verify_fd;
    pthread_barrier_t *start;
    int64_t t_end_ns;
    int err;      /* IBP error, 0 = none */
    int mismatch; /* first verify mismatch found */
} load_job_t;

static void *load_thread(void *arg)
{
    load_job_t *j = arg;
    ibp_client_t *c = client_new(1);
    unsigned char *buf = xmalloc(j->req);
    unsigned char *ref = j->verify_fd >= 0 ? xmalloc(j->req) : NULL;
    /* Touch the buffer before the clock starts, so page faults are not measured. */
    memset(buf, 0, j->req);
    pthread_barrier_wait(j->start);
    for (uint64_t done = 0; done < j->len;) {
        uint64_t n = j->len - done < j->req ? j->len - done : j->req;
        int rc = ibp_load(c, j->rcap, j->off + done, n, buf);
        if (rc != IBP_OK) {
            j->err = rc;
            break;
        }
        if (ref) {
            ssize_t r = pread(j->verify_fd, ref, n, (off_t)(j->off + done));
            if (r != (ssize_t)n || memcmp(ref, buf, n) != 0) {
                j->mismatch = 1;
                break;
            }
        }
        done += n;
    }
    j->t_end_ns = lns_mono_ns();
    free(ref);
    free(buf);
    ibp_client_free(c);
    return NULL;
}

static int cmd_load(opts_t *o)
{
    if (o->npos != 4)
        bench_usage_exit("load HOST PORT RCAP SIZE");
    (void)o->pos[0]; /* host and port come from the capability; kept for a uniform CLI */
    bench_port_arg(o->pos[1]);
    const char *rcap = o->pos[2];
    uint64_t size = bench_size_arg(o->pos[3], "bad SIZE");
    int vfd = o->verify ? open_source(o->verify, size) : -1;
    int n = o->conns;
    load_job_t *jobs = calloc((size_t)n, sizeof(*jobs));
    pthread_barrier_t start;
    if (!jobs || pthread_barrier_init(&start, NULL, (unsigned)n + 1) != 0) {
        fprintf(stderr, "bench_ibp: cannot set up %d threads\n", n);
        return EXIT_SYS;
    }
    uint64_t slice = size / (uint64_t)n;
    for (int i = 0; i < n; i++) {
        jobs[i].rcap = rcap;
        jobs[i].off = slice * (uint64_t)i;
        jobs[i].len = i == n - 1 ? size - jobs[i].off : slice;
        jobs[i].req = o->req;
        jobs[i].verify_fd = vfd;
        jobs[i].start = &start;
        if (pthread_create(&jobs[i].th, NULL, load_thread, &jobs[i]) != 0) {
            fprintf(stderr, "bench_ibp: pthread_create failed\n");
            return EXIT_SYS;
        }
    }
    pthread_barrier_wait(&start);
    int64_t t0 = lns_mono_ns();
    int64_t t_end = t0;
    int err = 0, mismatch = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(jobs[i].th, NULL);
        if (jobs[i].t_end_ns > t_end)
            t_end = jobs[i].t_end_ns;
        if (jobs[i].err && !err)
            err = jobs[i].err;
        mismatch |= jobs[i].mismatch;
    }
    pthread_barrier_destroy(&start);
    free(jobs);
    if (err)
        die_ibp("LOAD", err);
    if (mismatch) {
        fprintf(stderr, "bench_ibp: LOAD: data differs from %s\n", o->verify);
        return EXIT_VERIFY;
    }
    double s = (double)(t_end - t0) / 1e9;
    printf("op=load conns=%d req=%" PRIu64 " bytes=%" PRIu64 " seconds=%.6f mbps=%.1f%s\n", n,
           o->req, size, s, size / s / 1e6, vfd >= 0 ? " verified=1" : "");
    if (vfd >= 0)
        close(vfd);
    return 0;
}

/* ---- small ops ----------------------------------------------------------------------- */

typedef struct lat {
    int64_t *v;
    size_t n, cap;
} lat_t;

static void lat_add(lat_t *l, int64_t ns)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 4096;
        l->v = realloc(l->v, l->cap * sizeof(*l->v));
        if (!l->v) {
            fprintf(stderr, "bench_ibp: out of memory\n");
            exit(EXIT_SYS);
        }
    }
    l->v[l->n++] = ns;
}

enum { L_TRIPLE, L_ALLOC, L_STORE, L_LOAD, L_KINDS };
static const char *lat_name[L_KINDS] = {"triple", "alloc", "store", "load"};

typedef struct small_job {
    pthread_t th;
    int id;
    const char *host;
    int port;
    uint64_t size;
    int64_t duration;
    int64_t stop_ns;
    pthread_barrier_t *start;
    lat_t lat[L_KINDS];
    uint64_t triples;
    int err;
    const char *err_op;
    int mismatch;
} small_job_t;

static void *small_thread(void *arg)
{
    small_job_t *j = arg;
    ibp_client_t *c = client_new(1);
    unsigned char *out = xmalloc(j->size), *in = xmalloc(j->size);
    ibp_attr_t a = {.size = j->size, .duration_s = j->duration, .reliability = IBP_HARD,
                    .type = IBP_BYTEARRAY};
    ibp_caps_t caps;
    pthread_barrier_wait(j->start);
    for (uint64_t it = 0;; it++) {
        int64_t t0 = lns_mono_ns();
        if (t0 >= j->stop_ns)
            break;
        fill_pattern(out, j->size, ((uint64_t)j->id << 40) ^ it);
        int rc = ibp_allocate(c, j->host, j->port, NULL, &a, &caps);
        int64_t t1 = lns_mono_ns();
        if (rc != IBP_OK) {
            j->err = rc, j->err_op = "ALLOCATE";
            break;
        }
        uint64_t got = 0;
        rc = ibp_store(c, caps.write, out, j->size, &got);
        int64_t t2 = lns_mono_ns();
        if (rc != IBP_OK || got != j->size) {
            j->err = rc != IBP_OK ? rc : IBP_E_GENERIC, j->err_op = "STORE";
            break;
        }
        rc = ibp_load(c, caps.read, 0, j->size, in);
        int64_t t3 = lns_mono_ns();
        if (rc != IBP_OK) {
            j->err = rc, j->err_op = "LOAD";
            break;
        }
        if (memcmp(in, out, j->size) != 0) {
            j->mismatch = 1;
            break;
        }
        lat_add(&j->lat[L_TRIPLE], t3 - t0);
        lat_add(&j->lat[L_ALLOC], t1 - t0);
        lat_add(&j->lat[L_STORE], t2 - t1);
        lat_add(&j->lat[L_LOAD], t3 - t2);
        j->triples++;
    }
    free(out);
    free(in);
    ibp_client_free(c);
    return NULL;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static double pct_ms(const int64_t *v, size_t n, double p)
{
    if (n == 0)
        return 0;
    size_t i = (size_t)(p * (double)(n - 1) + 0.5);
    return (double)v[i] / 1e6;
}

static int cmd_smallops(opts_t *o)
{
    if (o->npos != 2)
        bench_usage_exit("smallops HOST PORT");
    const char *host = o->pos[0];
    int port = bench_port_arg(o->pos[1]);
    int n = o->clients;
    small_job_t *jobs = calloc((size_t)n, sizeof(*jobs));
    pthread_barrier_t start;
    if (!jobs || pthread_barrier_init(&start, NULL, (unsigned)n + 1) != 0) {
        fprintf(stderr, "bench_ibp: cannot set up %d threads\n", n);
        return EXIT_SYS;
    }
    /* The stop time is set before the threads start and read only after the barrier. */
    int64_t t0 = lns_mono_ns() + 50 * 1000000ll;
    int64_t stop = t0 + (int64_t)(o->seconds * 1e9);
    for (int i = 0; i < n; i++) {
        small_job_t *j = &jobs[i];
        j->id = i;
        j->host = host;
        j->port = port;
        j->size = o->size;
        j->duration = o->duration;
        j->stop_ns = stop;
        j->start = &start;
        if (pthread_create(&j->th, NULL, small_thread, j) != 0) {
            fprintf(stderr, "bench_ibp: pthread_create failed\n");
            return EXIT_SYS;
        }
    }
    pthread_barrier_wait(&start);
    t0 = lns_mono_ns();
    int64_t t_end = t0;
    lat_t all[L_KINDS] = {{0}};
    uint64_t triples = 0;
    int err = 0, mismatch = 0;
    const char *err_op = NULL;
    for (int i = 0; i < n; i++) {
        small_job_t *j = &jobs[i];
        pthread_join(j->th, NULL);
        if (!err && j->err)
            err = j->err, err_op = j->err_op;
        mismatch |= j->mismatch;
        triples += j->triples;
        for (int k = 0; k < L_KINDS; k++) {
            for (size_t m = 0; m < j->lat[k].n; m++)
                lat_add(&all[k], j->lat[k].v[m]);
            free(j->lat[k].v);
        }
    }
    t_end = lns_mono_ns();
    pthread_barrier_destroy(&start);
    free(jobs);
    if (err)
        die_ibp(err_op, err);
    if (mismatch) {
        fprintf(stderr, "bench_ibp: smallops: LOAD returned other bytes than were stored\n");
        return EXIT_VERIFY;
    }
    double s = (double)(t_end - t0) / 1e9;
    printf("op=smallops clients=%d size=%" PRIu64 " triples=%" PRIu64 " seconds=%.3f "
           "triples_per_s=%.1f ops_per_s=%.1f",
           n, o->size, triples, s, triples / s, 3 * triples / s);
    for (int k = 0; k < L_KINDS; k++) {
        qsort(all[k].v, all[k].n, sizeof(int64_t), cmp_i64);
        printf(" %s_p50_ms=%.3f %s_p99_ms=%.3f", lat_name[k], pct_ms(all[k].v, all[k].n, 0.50),
               lat_name[k], pct_ms(all[k].v, all[k].n, 0.99));
        free(all[k].v);
    }
    printf("\n");
    return 0;
}

static int cmd_freeport(void)
{
    int port = 0;
    char err[256];
    int fd = lns_listen("127.0.0.1", 0, 1, &port, err, sizeof(err));
    if (fd < 0) {
        fprintf(stderr, "bench_ibp: freeport: %s\n", err);
        return EXIT_SYS;
    }
    close(fd);
    printf("%d\n", port);
    return 0;
}

int main(int argc, char **argv)
{
    const char *cmd = bench_command("bench_ibp", usage_text, argc, argv);
    if (!strcmp(cmd, "freeport"))
        return cmd_freeport();
    opts_t o;
    parse_opts(argc - 2, argv + 2, &o);
    if (!strcmp(cmd, "fill"))
        return cmd_store(&o, 1);
    if (!strcmp(cmd, "load"))
        return cmd_load(&o);
    if (!strcmp(cmd, "store"))
        return cmd_store(&o, 0);
    if (!strcmp(cmd, "smallops"))
        return cmd_smallops(&o);
    bench_usage_exit("unknown command");
    return EXIT_USAGE;
}
