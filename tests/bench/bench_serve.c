/* bench_serve.c -- the clients of tests/bench/bench_serve.sh: random reads through lors_serve
 * (HTTP Range, libcurl, one kept-alive connection per client), through a lors_mount file
 * (pread), and straight from a depot (one IBP LOAD from the replica that holds the bytes,
 * libibp), each read timed alone; a load of many HTTP clients at once; the load curve's plot.
 *
 *   bench_serve http URL FILESIZE SIZE N          N reads of SIZE through the gateway
 *   bench_serve file PATH SIZE N                  N preads of SIZE of a (mounted) file
 *   bench_serve ibp X.xnd SIZE N                  N IBP LOADs of SIZE from the first replica
 *   bench_serve ibpv X.xnd SIZE N                 ... of the 1 MiB block around, SHA-256'd
 *   bench_serve reader X.xnd                      the whole file through one lors_stream
 *   bench_serve reader X.xnd SIZE N               N reads of SIZE through lors_reader_pread
 *   bench_serve load URL FILESIZE SIZE CLIENTS SECONDS
 *   bench_serve plot OUT.png DATA                 DATA: lines "clients MB/s p50_ms p99_ms"
 *
 * Offsets: each read falls in a block of 1 MiB of its own, in a random order (no block is
 * read twice, so no read finds another's bytes cached), at a random multiple of SIZE inside
 * the block (SIZE divides 1 MiB: 4K, 64K, 1M).  The same seed ($BENCH_SEED) gives every
 * mode the same offsets.  Output: one line of key=value fields (ms, MB of 10^6 bytes).
 */
#include <cairo.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "lns_time.h"
#include "lors.h"
#include "usage.h"
#include "xnd.h"

#define BLOCK (1 << 20)

static const char *usage_text =
    "usage: bench_serve MODE ARGS...\n"
    "  http URL FILESIZE SIZE N | file PATH SIZE N | ibp|ibpv X.xnd SIZE N\n"
    "  reader X.xnd [SIZE N]\n"
    "  load URL FILESIZE SIZE CLIENTS SECONDS | plot OUT.png DATA\n";

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* n offsets of reads of size in a file of fsize bytes: distinct blocks, random order. */
static int64_t *offsets(int64_t fsize, int64_t size, int n)
{
    int64_t nb = fsize / BLOCK;
    if (nb < n || size > BLOCK || BLOCK % size) {
        fprintf(stderr, "bench_serve: %d reads of %lld need as many 1 MiB blocks (have %lld)\n",
                n, (long long)size, (long long)nb);
        exit(BENCH_EXIT_USAGE);
    }
    int64_t *perm = malloc((size_t)nb * sizeof *perm), *o = malloc((size_t)n * sizeof *o);
    for (int64_t i = 0; i < nb; i++)
        perm[i] = i;
    for (int64_t i = nb - 1; i > 0; i--) {
        int64_t k = (int64_t)(next_rand() % (uint64_t)(i + 1)), t = perm[i];
        perm[i] = perm[k];
        perm[k] = t;
    }
    for (int i = 0; i < n; i++)
        o[i] = perm[i] * BLOCK + (int64_t)(next_rand() % (uint64_t)(BLOCK / size)) * size;
    free(perm);
    return o;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    int i = (int)ceil(p * n) - 1;
    return v[i < 0 ? 0 : i >= n ? n - 1 : i];
}

static void print_lat(const char *mode, int64_t size, double *ms, int n)
{
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += ms[i];
    printf("mode=%s size=%lld n=%d mean_ms=%.3f", mode, (long long)size, n, sum / n);
    printf(" p50_ms=%.3f", pct(ms, n, 0.5));
    printf(" p99_ms=%.3f\n", pct(ms, n, 0.99));
}

/* Time n reads of size at o[] through fn; print their latencies as mode.  0, or 1 after a
 * line naming the read that failed. */
typedef int64_t (*read_fn)(void *arg, char *buf, int64_t size, int64_t off, char *err,
                           size_t errlen);
static int time_reads(const char *mode, read_fn fn, void *arg, const int64_t *o, int64_t size,
                      int n)
{
    double *ms = malloc((size_t)n * sizeof *ms);
    char *buf = malloc((size_t)size), err[512] = "";
    for (int i = 0; i < n; i++) {
        int64_t t0 = lns_mono_ns();
        if (fn(arg, buf, size, o[i], err, sizeof err) != size) {
            fprintf(stderr, "bench_serve: %s: read at %lld failed %s\n", mode, (long long)o[i],
                    err);
            return 1;
        }
        ms[i] = (double)(lns_mono_ns() - t0) / 1e6;
    }
    print_lat(mode, size, ms, n);
    free(buf);
    free(ms);
    return 0;
}

/* x and a reader of it on a cache of its own: 0, or 1 after a line. */
static int open_reader(const char *xpath, xnd_t **x, lors_reader_t **r)
{
    char err[512];
    lors_reader_opts_t ro;
    lors_reader_opts_init(&ro);
    if (xnd_read_file(xpath, x, err, sizeof err) != XND_OK ||
        !(*r = lors_reader_open(&ro, *x, NULL, err, sizeof err))) {
        fprintf(stderr, "bench_serve: %s: %s\n", xpath, err);
        return 1;
    }
    return 0;
}

/* ---- HTTP ---------------------------------------------------------------------------------- */

typedef struct sink {
    char *buf;
    size_t n, cap;
} sink_t;

static size_t sink_write(char *p, size_t sz, size_t nm, void *arg)
{
    sink_t *s = arg;
    size_t len = sz * nm;
    if (s->n + len <= s->cap) {
        memcpy(s->buf + s->n, p, len);
        s->n += len;
    }
    return len;
}

/* One range GET on the handle; 0 when exactly size bytes came with a 206. */
static int http_range(CURL *h, sink_t *s, int64_t off, int64_t size)
{
    char range[64];
    snprintf(range, sizeof range, "%lld-%lld", (long long)off, (long long)(off + size - 1));
    s->n = 0;
    curl_easy_setopt(h, CURLOPT_RANGE, range);
    long code = 0;
    if (curl_easy_perform(h) != CURLE_OK)
        return -1;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    return code == 206 && (int64_t)s->n == size ? 0 : -1;
}

static CURL *http_handle(const char *url, sink_t *s)
{
    CURL *h = curl_easy_init();
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, sink_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    return h;
}

typedef struct http_reader {
    CURL *h;
    sink_t s;
} http_reader_t;

static int64_t http_read(void *arg, char *buf, int64_t size, int64_t off, char *err,
                         size_t errlen)
{
    http_reader_t *hr = arg;
    (void)buf; /* the bytes land in the sink */
    if (http_range(hr->h, &hr->s, off, size) != 0) {
        snprintf(err, errlen, "(GET of bytes %lld+%lld)", (long long)off, (long long)size);
        return -1;
    }
    return size;
}

static int mode_http(const char *url, int64_t fsize, int64_t size, int n)
{
    int64_t *o = offsets(fsize, size, n);
    http_reader_t hr = {NULL, {malloc((size_t)size), 0, (size_t)size}};
    hr.h = http_handle(url, &hr.s);
    http_range(hr.h, &hr.s, 0, 1); /* the connection made before the clock starts, as for ibp */
    int bad = time_reads("http", http_read, &hr, o, size, n);
    curl_easy_cleanup(hr.h);
    free(hr.s.buf);
    free(o);
    return bad;
}

/* ---- a file, a depot, the reader ---------------------------------------------------------- */

static int64_t file_read(void *arg, char *buf, int64_t size, int64_t off, char *err,
                         size_t errlen)
{
    ssize_t got = pread(*(int *)arg, buf, (size_t)size, off);
    if (got < 0)
        snprintf(err, errlen, "(%s)", strerror(errno));
    return got;
}

static int mode_file(const char *path, int64_t size, int n)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        fprintf(stderr, "bench_serve: %s: %s\n", path, strerror(errno));
        return 1;
    }
    int64_t *o = offsets(lseek(fd, 0, SEEK_END), size, n);
    int bad = time_reads("file", file_read, &fd, o, size, n);
    close(fd);
    free(o);
    return bad;
}

typedef struct ibp_reader {
    const xnd_t *x;
    ibp_client_t *c;
    int64_t ck;          /* verify: the checksum block to load and hash; 0: just the bytes */
    unsigned char *buf;  /* BLOCK bytes */
} ibp_reader_t;

/* One LOAD of [off, off+size) from the first mapping that holds it all, or with r->ck of the
 * whole checksum block around it, SHA-256'd, as a client that checks what it reads must. */
static int64_t ibp_read(void *arg, char *buf, int64_t size, int64_t off, char *err,
                        size_t errlen)
{
    ibp_reader_t *r = arg;
    int64_t len = size;
    (void)buf;
    if (r->ck) {
        off = off / r->ck * r->ck;
        len = r->ck;
    }
    const xnd_mapping_t *m = NULL;
    for (size_t k = 0; k < r->x->nmaps && !m; k++)
        if (off >= r->x->maps[k]->exnode_offset &&
            off + len <= r->x->maps[k]->exnode_offset + r->x->maps[k]->logical_length)
            m = r->x->maps[k];
    if (!m) {
        snprintf(err, errlen, "(no one mapping holds bytes %lld+%lld)", (long long)off,
                 (long long)len);
        return -1;
    }
    int rc = ibp_load(r->c, m->cap[XND_READ],
                      (uint64_t)(off - m->exnode_offset + m->alloc_offset), (uint64_t)len,
                      r->buf);
    if (rc != IBP_OK) {
        snprintf(err, errlen, "(LOAD: %s)", ibp_strerror(rc));
        return -1;
    }
    unsigned char md[EVP_MAX_MD_SIZE];
    if (r->ck && EVP_Digest(r->buf, (size_t)len, md, NULL, EVP_sha256(), NULL) != 1) {
        snprintf(err, errlen, "(SHA-256 failed)");
        return -1;
    }
    return size;
}

static int mode_ibp(const char *xpath, int64_t size, int n, int verify)
{
    xnd_t *x;
    char err[512];
    if (xnd_read_file(xpath, &x, err, sizeof err) != XND_OK) {
        fprintf(stderr, "bench_serve: %s: %s\n", xpath, err);
        return 1;
    }
    ibp_reader_t r = {x, ibp_client_new(NULL), 0, malloc(BLOCK)};
    if (verify) { /* the file's checksum block, 1 MiB unless it says otherwise */
        r.ck = BLOCK;
        for (size_t k = 0; k < x->nmaps; k++)
            if (x->maps[k]->func && strcmp(x->maps[k]->func->name, LORS_CHECKSUM_FUNC) == 0 &&
                xnd_meta_get_int(&x->maps[k]->func->args, "blocksize", &r.ck) == XND_OK)
                break;
        if (r.ck < 1 || r.ck > BLOCK) {
            fprintf(stderr, "bench_serve: %s: a checksum block of %lld bytes (1..1 MiB here)\n",
                    xpath, (long long)r.ck);
            return 1;
        }
    }
    int64_t *o = offsets(xnd_extent(x), size, n);
    int bad = ibp_read(&r, NULL, 1, 0, err, sizeof err) != 1; /* opens the connections */
    if (bad)
        fprintf(stderr, "bench_serve: ibp: the first LOAD failed %s\n", err);
    else
        bad = time_reads(verify ? "ibp_verified" : "ibp", ibp_read, &r, o, size, n);
    ibp_client_free(r.c);
    xnd_free(x);
    free(r.buf);
    free(o);
    return bad;
}

static int64_t reader_read(void *arg, char *buf, int64_t size, int64_t off, char *err,
                           size_t errlen)
{
    int rc;
    return lors_reader_pread(arg, buf, (size_t)size, off, &rc, err, errlen);
}

/* n reads of size through lors_reader_pread (no HTTP): the reader's own latency. */
static int mode_reader_random(const char *xpath, int64_t size, int n)
{
    xnd_t *x;
    lors_reader_t *r;
    if (open_reader(xpath, &x, &r))
        return 1;
    int64_t *o = offsets(lors_reader_size(r), size, n);
    int bad = time_reads("reader", reader_read, r, o, size, n);
    lors_reader_close(r);
    xnd_free(x);
    free(o);
    return bad;
}

static int mode_reader(const char *xpath)
{
    xnd_t *x;
    lors_reader_t *r;
    char err[512];
    if (open_reader(xpath, &x, &r))
        return 1;
    lors_stream_t *s = lors_stream_open(r);
    if (!s) {
        fprintf(stderr, "bench_serve: out of memory\n");
        return 1;
    }
    size_t chunk = 256 * 1024;
    char *buf = malloc(chunk);
    int64_t t0 = lns_mono_ns(), off = 0, got;
    int rc;
    while ((got = lors_stream_pread(s, buf, chunk, off, &rc, err, sizeof err)) > 0)
        off += got;
    double secs = (double)(lns_mono_ns() - t0) / 1e9;
    if (got < 0) {
        fprintf(stderr, "bench_serve: read at %lld: %s\n", (long long)off, err);
        return 1;
    }
    printf("mode=reader bytes=%lld seconds=%.3f MBps=%.1f\n", (long long)off, secs,
           (double)off / secs / 1e6);
    lors_stream_close(s);
    lors_reader_close(r);
    xnd_free(x);
    free(buf);
    return 0;
}

/* ---- load ------------------------------------------------------------------------------------ */

typedef struct client {
    pthread_t t;
    const char *url;
    int64_t fsize, size, deadline_ns;
    uint64_t seed;
    double *ms;
    int n, cap, failed;
} client_t;

static void *client_run(void *arg)
{
    client_t *k = arg;
    sink_t s = {malloc((size_t)k->size), 0, (size_t)k->size};
    CURL *h = http_handle(k->url, &s);
    int64_t nb = k->fsize / BLOCK;
    uint64_t st = k->seed;
    while (lns_mono_ns() < k->deadline_ns) {
        st ^= st << 13;
        st ^= st >> 7;
        st ^= st << 17;
        int64_t off = (int64_t)(st % (uint64_t)nb) * BLOCK;
        int64_t t0 = lns_mono_ns();
        if (http_range(h, &s, off, k->size) != 0) {
            k->failed++;
            continue;
        }
        if (k->n == k->cap) {
            k->cap = k->cap ? 2 * k->cap : 256;
            k->ms = realloc(k->ms, (size_t)k->cap * sizeof *k->ms);
        }
        k->ms[k->n++] = (double)(lns_mono_ns() - t0) / 1e6;
    }
    curl_easy_cleanup(h);
    free(s.buf);
    return NULL;
}

static int mode_load(const char *url, int64_t fsize, int64_t size, int clients, double secs)
{
    client_t *k = calloc((size_t)clients, sizeof *k);
    int64_t t0 = lns_mono_ns(), end = t0 + (int64_t)(secs * 1e9);
    for (int i = 0; i < clients; i++) {
        k[i] = (client_t){.url = url, .fsize = fsize, .size = size, .deadline_ns = end,
                          .seed = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1) | 1};
        if (pthread_create(&k[i].t, NULL, client_run, &k[i]) != 0) {
            fprintf(stderr, "bench_serve: cannot start client %d\n", i);
            return 1;
        }
    }
    int total = 0, failed = 0;
    for (int i = 0; i < clients; i++) {
        pthread_join(k[i].t, NULL);
        total += k[i].n;
        failed += k[i].failed;
    }
    double wall = (double)(lns_mono_ns() - t0) / 1e9;
    double *all = malloc((size_t)(total ? total : 1) * sizeof *all);
    int m = 0;
    for (int i = 0; i < clients; i++) {
        memcpy(all + m, k[i].ms, (size_t)k[i].n * sizeof *all);
        m += k[i].n;
        free(k[i].ms);
    }
    printf("mode=load clients=%d size=%lld requests=%d failed=%d seconds=%.2f MBps=%.1f",
           clients, (long long)size, total, failed, wall, (double)total * size / wall / 1e6);
    if (total)
        printf(" p50_ms=%.2f p99_ms=%.2f\n", pct(all, total, 0.5), pct(all, total, 0.99));
    else
        printf(" p50_ms=0 p99_ms=0\n");
    free(all);
    free(k);
    return failed > 0;
}

/* ---- the plot -------------------------------------------------------------------------------- */

/* Throughput (left axis, blue) and p99 response time (right axis, red) against the number of
 * clients (log2 axis), with the knee (p99 past 10x the single client's) marked. */
static int mode_plot(const char *out, const char *data)
{
    FILE *f = fopen(data, "r");
    if (!f) {
        fprintf(stderr, "bench_serve: %s: %s\n", data, strerror(errno));
        return 1;
    }
    double c[64], mbps[64], p50[64], p99[64];
    int n = 0;
    while (n < 64 && fscanf(f, "%lf %lf %lf %lf", &c[n], &mbps[n], &p50[n], &p99[n]) == 4)
        n++;
    fclose(f);
    if (n < 2) {
        fprintf(stderr, "bench_serve: %s: fewer than 2 points\n", data);
        return 1;
    }
    const int W = 800, H = 480, L = 80, R = 80, T = 50, B = 60;
    cairo_surface_t *sf = cairo_image_surface_create(CAIRO_FORMAT_RGB24, W, H);
    cairo_t *cr = cairo_create(sf);
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    double maxm = 0, maxp = 0, cmin = c[0], cmax = c[n - 1];
    for (int i = 0; i < n; i++) {
        maxm = mbps[i] > maxm ? mbps[i] : maxm;
        maxp = p99[i] > maxp ? p99[i] : maxp;
    }
    maxm *= 1.15;
    maxp *= 1.15;
#define X(v) (L + (log2(v) - log2(cmin)) / (log2(cmax) - log2(cmin)) * (W - L - R))
#define YM(v) (H - B - (v) / maxm * (H - T - B))
#define YP(v) (H - B - (v) / maxp * (H - T - B))
    cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, 13);
    cairo_set_line_width(cr, 1);
    cairo_set_source_rgb(cr, 0.3, 0.3, 0.3);
    cairo_rectangle(cr, L, T, W - L - R, H - T - B);
    cairo_stroke(cr);
    char lab[64];
    for (int i = 0; i < n; i++) { /* x ticks: the client counts */
        snprintf(lab, sizeof lab, "%g", c[i]);
        cairo_move_to(cr, X(c[i]) - 8, H - B + 18);
        cairo_show_text(cr, lab);
    }
    for (int k = 0; k <= 4; k++) { /* y ticks, both axes */
        cairo_set_source_rgb(cr, 0.1, 0.3, 0.8);
        snprintf(lab, sizeof lab, "%.0f", maxm * k / 4);
        cairo_move_to(cr, 10, YM(maxm * k / 4) + 4);
        cairo_show_text(cr, lab);
        cairo_set_source_rgb(cr, 0.8, 0.1, 0.1);
        snprintf(lab, sizeof lab, "%.0f", maxp * k / 4);
        cairo_move_to(cr, W - R + 8, YP(maxp * k / 4) + 4);
        cairo_show_text(cr, lab);
    }
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_move_to(cr, W / 2 - 60, H - 15);
    cairo_show_text(cr, "concurrent clients");
    cairo_move_to(cr, L, 30);
    cairo_show_text(cr, "lors_serve, random 1 MiB windows: throughput (MB/s, blue) and p99 (ms, red)");
    cairo_set_line_width(cr, 2.5);
    cairo_set_source_rgb(cr, 0.1, 0.3, 0.8);
    for (int i = 0; i < n; i++)
        (i ? cairo_line_to : cairo_move_to)(cr, X(c[i]), YM(mbps[i]));
    cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0.8, 0.1, 0.1);
    for (int i = 0; i < n; i++)
        (i ? cairo_line_to : cairo_move_to)(cr, X(c[i]), YP(p99[i]));
    cairo_stroke(cr);
    /* 10x the single client's p99 */
    cairo_set_line_width(cr, 1);
    double knee = 10 * p99[0];
    if (knee < maxp) {
        double dash[] = {4, 4};
        cairo_set_dash(cr, dash, 2, 0);
        cairo_move_to(cr, L, YP(knee));
        cairo_line_to(cr, W - R, YP(knee));
        cairo_stroke(cr);
        cairo_set_dash(cr, NULL, 0, 0);
        cairo_move_to(cr, L + 6, YP(knee) - 5);
        cairo_show_text(cr, "10 x p99 of one client");
    }
    for (int i = 0; i < n; i++) {
        cairo_set_source_rgb(cr, 0.1, 0.3, 0.8);
        cairo_arc(cr, X(c[i]), YM(mbps[i]), 4, 0, 2 * M_PI);
        cairo_fill(cr);
        cairo_set_source_rgb(cr, 0.8, 0.1, 0.1);
        cairo_arc(cr, X(c[i]), YP(p99[i]), 4, 0, 2 * M_PI);
        cairo_fill(cr);
    }
    cairo_destroy(cr);
    int bad = cairo_surface_write_to_png(sf, out) != CAIRO_STATUS_SUCCESS;
    cairo_surface_destroy(sf);
    if (bad)
        fprintf(stderr, "bench_serve: cannot write %s\n", out);
    return bad;
}

int main(int argc, char **argv)
{
    bench_usage_init("bench_serve", usage_text);
    if (argc < 3)
        bench_usage_exit(NULL);
    const char *m = argv[1];
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (getenv("BENCH_SEED")) /* other offsets: a round's reads find nothing an earlier cached */
        rng ^= strtoull(getenv("BENCH_SEED"), NULL, 10) * 0xbf58476d1ce4e5b9ull;
    if (strcmp(m, "http") == 0 && argc == 6)
        return mode_http(argv[2], (int64_t)bench_size_arg(argv[3], "FILESIZE"),
                         (int64_t)bench_size_arg(argv[4], "SIZE"), atoi(argv[5]));
    if (strcmp(m, "file") == 0 && argc == 5)
        return mode_file(argv[2], (int64_t)bench_size_arg(argv[3], "SIZE"), atoi(argv[4]));
    if ((strcmp(m, "ibp") == 0 || strcmp(m, "ibpv") == 0) && argc == 5)
        return mode_ibp(argv[2], (int64_t)bench_size_arg(argv[3], "SIZE"), atoi(argv[4]),
                        m[3] == 'v');
    if (strcmp(m, "reader") == 0 && argc == 3)
        return mode_reader(argv[2]);
    if (strcmp(m, "reader") == 0 && argc == 5)
        return mode_reader_random(argv[2], (int64_t)bench_size_arg(argv[3], "SIZE"),
                                  atoi(argv[4]));
    if (strcmp(m, "load") == 0 && argc == 7)
        return mode_load(argv[2], (int64_t)bench_size_arg(argv[3], "FILESIZE"),
                         (int64_t)bench_size_arg(argv[4], "SIZE"), atoi(argv[5]), atof(argv[6]));
    if (strcmp(m, "plot") == 0 && argc == 4)
        return mode_plot(argv[2], argv[3]);
    bench_usage_exit("unknown mode or wrong arguments");
}
