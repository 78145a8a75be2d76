/* bench_ec.c -- helpers of tests/bench/bench_ec.sh (make bench-ec).
 *
 *   bench_ec codec [-s BYTES] [-p PIECE]     ISA-L's raw rates for 4+2, 6+3 and 10+4
 *   bench_ec storage X.xnd                   bytes allocated per byte of the file
 *   bench_ec drop X.xnd M OUT.xnd            OUT: X with data columns 0..M-1 on a dead depot
 *   bench_ec free X.xnd                      free every allocation of X (lors_discard)
 *
 * codec: for each layout, the same Cauchy matrix lns uses (gf_gen_cauchy1_matrix), encode
 * (ec_encode_data: K data pieces to M parity) and decode with M data pieces lost (invert the
 * K x K submatrix of the survivors once, ec_init_tables, ec_encode_data of the M lost ones) over
 * about -s bytes of data (default 256 MiB) in pieces of -p (default 1 MiB), from memory.  Rates
 * are bytes of file data per second (MB = 10^6), the median of 5 passes; one line per layout:
 * "layout=4+2 encode_mbps=... decode_mbps=...".
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <isa-l/erasure_code.h>

#include "lns_time.h"
#include "lors.h"
#include "usage.h"
#include "xnd.h"

static const char *usage_text =
    "usage: bench_ec COMMAND ARGS...\n"
    "  codec [-s BYTES] [-p PIECE]   ISA-L encode and decode rates for 4+2, 6+3, 10+4\n"
    "  storage X.xnd                 bytes allocated per byte of the file\n"
    "  drop X.xnd M OUT.xnd          X with data columns 0..M-1 on a dead depot\n"
    "  free X.xnd                    free every allocation of X\n";

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The M lost data pieces 0..m-1 from survivors m..k+m-1: the decode matrix's rows. */
static int decode_rows(const unsigned char *a, int k, int m, unsigned char *rows)
{
    unsigned char *sub = malloc((size_t)k * k), *inv = malloc((size_t)k * k);
    int rc = sub && inv ? 0 : -1;
    for (int r = 0; rc == 0 && r < k; r++)
        memcpy(sub + (size_t)r * k, a + (size_t)(m + r) * k, (size_t)k); /* survivor rows */
    if (rc == 0 && gf_invert_matrix(sub, inv, k) != 0)
        rc = -1;
    for (int r = 0; rc == 0 && r < m; r++)
        memcpy(rows + (size_t)r * k, inv + (size_t)r * k, (size_t)k);
    free(sub);
    free(inv);
    return rc;
}

static int codec(int argc, char **argv)
{
    uint64_t total = 256u << 20, piece = 1u << 20;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "-s") == 0 && i + 1 < argc)
            total = bench_size_arg(argv[++i], "-s");
        else if (strcmp(argv[i], "-p") == 0 && i + 1 < argc)
            piece = bench_size_arg(argv[++i], "-p");
        else
            bench_usage_exit("codec takes -s BYTES and -p PIECE");
    }
    static const int layouts[][2] = {{4, 2}, {6, 3}, {10, 4}};
    for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++) {
        int k = layouts[l][0], m = layouts[l][1], n = k + m;
        /* a working set of 16 stripes, cycled until total bytes of data went through */
        int nst = 16;
        uint64_t stripes = total / (piece * (uint64_t)k);
        if (stripes < 1)
            stripes = 1;
        unsigned char *a = malloc((size_t)n * k), *g = malloc((size_t)k * m * 32),
                      *rows = malloc((size_t)k * m), *gd = malloc((size_t)k * m * 32);
        unsigned char **buf = calloc((size_t)nst * n, sizeof *buf);
        if (!a || !g || !rows || !gd || !buf)
            return 4;
        for (int i = 0; i < nst * n; i++) {
            buf[i] = aligned_alloc(64, piece);
            if (!buf[i])
                return 4;
            for (uint64_t b = 0; b < piece; b++)
                buf[i][b] = (unsigned char)(b * 131 + (uint64_t)i * 7);
        }
        gf_gen_cauchy1_matrix(a, n, k);
        ec_init_tables(k, m, a + (size_t)k * k, g);
        if (decode_rows(a, k, m, rows) != 0)
            return 4;
        ec_init_tables(k, m, rows, gd);
        double enc[5], dec[5];
        for (int pass = 0; pass < 5; pass++) {
            int64_t t0 = lns_mono_ns();
            for (uint64_t s = 0; s < stripes; s++) {
                unsigned char **st = buf + (s % (uint64_t)nst) * (uint64_t)n;
                ec_encode_data((int)piece, k, m, g, st, st + k);
            }
            int64_t t1 = lns_mono_ns();
            for (uint64_t s = 0; s < stripes; s++) {
                unsigned char **st = buf + (s % (uint64_t)nst) * (uint64_t)n;
                /* sources: the survivors m..n-1 (data m..k-1 and all parity); targets: 0..m-1,
                 * rebuilt into the scratch of the next stripe's parity (not read after) */
                unsigned char **dst = buf + ((s + 1) % (uint64_t)nst) * (uint64_t)n + k;
                ec_encode_data((int)piece, k, m, gd, st + m, dst);
            }
            int64_t t2 = lns_mono_ns();
            double bytes = (double)stripes * (double)k * (double)piece;
            enc[pass] = bytes / ((double)(t1 - t0) / 1e9) / 1e6;
            dec[pass] = bytes / ((double)(t2 - t1) / 1e9) / 1e6;
        }
        qsort(enc, 5, sizeof enc[0], cmp_double);
        qsort(dec, 5, sizeof dec[0], cmp_double);
        printf("layout=%d+%d piece=%" PRIu64 " data_bytes=%" PRIu64 " encode_mbps=%.0f "
               "decode_mbps=%.0f\n", k, m, piece, stripes * (uint64_t)k * piece, enc[2], dec[2]);
        for (int i = 0; i < nst * n; i++)
            free(buf[i]);
        free(buf);
        free(a);
        free(g);
        free(rows);
        free(gd);
    }
    return 0;
}

static xnd_t *load(const char *path)
{
    char err[512];
    xnd_t *x = NULL;
    if (xnd_read_file(path, &x, err, sizeof err) != XND_OK) {
        fprintf(stderr, "bench_ec: %s: %s\n", path, err);
        return NULL;
    }
    return x;
}

static int storage(const char *path)
{
    xnd_t *x = load(path);
    if (!x)
        return 3;
    lors_ec_info_t ec;
    char err[256];
    int64_t size = xnd_size(x), alloc = 0;
    if (lors_ec_info(x, &ec, err, sizeof err) == LORS_OK && ec.present)
        size = ec.size;
    for (size_t i = 0; i < x->nmaps; i++)
        alloc += x->maps[i]->alloc_length;
    printf("size=%" PRId64 " allocated=%" PRId64 " per_byte=%.3f\n", size, alloc,
           size > 0 ? (double)alloc / (double)size : 0);
    xnd_free(x);
    return 0;
}

/* cap with its host:port replaced by 127.0.0.1:1, where nothing listens (malloc'd). */
static char *dead_cap(const char *cap)
{
    const char *h = strstr(cap, "://"), *e = h ? strchr(h + 3, '/') : NULL;
    if (!e)
        return strdup(cap);
    size_t n = (size_t)(h + 3 - cap), len = n + strlen("127.0.0.1:1") + strlen(e) + 1;
    char *d = malloc(len);
    if (d)
        snprintf(d, len, "%.*s127.0.0.1:1%s", (int)n, cap, e);
    return d;
}

static int drop(const char *path, int m, const char *out)
{
    xnd_t *x = load(path);
    if (!x)
        return 3;
    /* the mappings stay, with their digests (so decoded pieces are checked as after a real
     * loss); their depot refuses connections, as a dead one does */
    for (size_t i = 0; i < x->nmaps; i++) {
        xnd_mapping_t *mp = x->maps[i];
        int64_t col;
        if (!mp->func || strcmp(mp->func->name, LORS_EC_META) != 0 ||
            xnd_meta_get_int(&mp->func->args, "piece", &col) != XND_OK || col >= m)
            continue;
        for (int c = 0; c < 3; c++) {
            if (!mp->cap[c])
                continue;
            char *d = dead_cap(mp->cap[c]);
            if (!d || xnd_mapping_set_cap(mp, (xnd_capkind)c, d) != XND_OK) {
                free(d);
                xnd_free(x);
                return 4;
            }
            free(d);
        }
    }
    char err[512];
    int rc = xnd_write_file(x, out, err, sizeof err) == XND_OK ? 0 : 4;
    if (rc)
        fprintf(stderr, "bench_ec: %s: %s\n", out, err);
    xnd_free(x);
    return rc;
}

static int discard(const char *path)
{
    xnd_t *x = load(path);
    if (!x)
        return 3;
    lors_freed_t f;
    int rc = lors_discard(x, 8, 10, &f);
    xnd_free(x);
    return rc == LORS_OK ? 0 : 1;
}

int main(int argc, char **argv)
{
    bench_usage_init("bench_ec", usage_text);
    if (argc < 2)
        bench_usage_exit(NULL);
    if (strcmp(argv[1], "codec") == 0)
        return codec(argc, argv);
    if (strcmp(argv[1], "storage") == 0 && argc == 3)
        return storage(argv[2]);
    if (strcmp(argv[1], "drop") == 0 && argc == 5)
        return drop(argv[2], atoi(argv[3]), argv[4]);
    if (strcmp(argv[1], "free") == 0 && argc == 3)
        return discard(argv[2]);
    bench_usage_exit("unknown command or wrong arguments");
}
