/* test_lors_ec_depots.c -- erasure-coded files on six real depots: upload --ec 4+2 and download
 * byte-exact whole and in sub-ranges; with any two depots SIGKILLed (each of the 15 pairs,
 * and two killed mid-download), with two corrupted pieces of one stripe, with one depot
 * SIGSTOPped; with three gone the download fails naming the stripes' bytes.  Upload from a
 * pipe, around a dead depot in the list, and refused with too few depots.  Killed depots are
 * restarted (their allocations survive) before the next test. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include <isa-l/crc64.h>

#include "ibp.h"
#include "lns_test.h"
#include "lors.h"
#include "test_depot.h"
#include "test_lors.h"
#include "xnd.h"

#define ND 6
#define PIECE ((int64_t)64 << 10)
#define N ((size_t)(6 * 4 * PIECE + 12345)) /* six full stripes and a short seventh */

TL_FLEET(ND)

static unsigned char *src;
static xnd_t *x; /* the shared file: 4+2 over the six depots */

static xnd_t *upload_ec(const lors_depot_t *d, size_t nd, const unsigned char *buf, size_t n,
                        int k, int m, lors_report_t *rep)
{
    lors_upload_opts_t o;
    xnd_t *out = NULL;
    tl_upload_opts(&o, d, nd, 1, 4);
    o.ec_k = k;
    o.ec_m = m;
    o.ec_piece = PIECE;
    o.timeout_s = 5;
    int rc = lors_upload_buf(&o, buf, n, "ec", &out, rep);
    if (rc != LORS_OK)
        fprintf(stderr, "upload --ec %d+%d: %s\n", k, m, rep->error);
    return out;
}

static int suite_init(void)
{
    if (fleet_start() != 0)
        return -1;
    src = tl_data(N, 77);
    lors_report_t rep;
    x = upload_ec(ldep, ND, src, N, 4, 2, &rep);
    lors_report_free(&rep);
    return x ? 0 : -1;
}

static int suite_clean(void)
{
    tl_free_xnd(cli, x);
    free(src);
    return fleet_stop();
}

static void dopts(lors_download_opts_t *o)
{
    lors_download_opts_init(o);
    o->threads = 6;
    o->timeout_ms = 3000;
    o->stall_ms = 500;
}

/* The port of a mapping's read capability. */
static int map_port(const xnd_mapping_t *m)
{
    ibp_cap_t c;
    return m->cap[XND_READ] && ibp_cap_parse(m->cap[XND_READ], &c) == IBP_OK ? c.port : -1;
}

static void test_layout(void)
{
    lors_ec_info_t info;
    char err[256];
    CU_ASSERT_EQUAL_FATAL(lors_ec_info(x, &info, err, sizeof err), LORS_OK);
    CU_ASSERT(info.present && info.k == 4 && info.m == 2);
    CU_ASSERT_EQUAL(info.piece_size, PIECE);
    CU_ASSERT_EQUAL(info.stripes, 7);
    CU_ASSERT_EQUAL(xnd_size(x), (int64_t)N);
    /* -F 4 over 7 stripes: segments of 2 stripes, each 6 column mappings on 6 depots */
    CU_ASSERT_EQUAL(x->nmaps, 4 * 6);
    for (size_t g = 0; g + 6 <= x->nmaps; g += 6)
        for (size_t i = g; i < g + 6; i++)
            for (size_t j = g; j < i; j++)
                CU_ASSERT_NOT_EQUAL(map_port(x->maps[i]), map_port(x->maps[j]));
    /* the segments rotate: column 0 is not always on the same depot */
    CU_ASSERT_NOT_EQUAL(map_port(x->maps[0]), map_port(x->maps[6]));
    /* storage: (k + m) / k of the file, plus the short stripe's padding */
    int64_t stored = 0;
    for (size_t i = 0; i < x->nmaps; i++)
        stored += x->maps[i]->alloc_length;
    CU_ASSERT(stored >= (int64_t)N * 6 / 4 && stored < (int64_t)N * 6 / 4 + 6 * PIECE);
    /* every stripe has all six pieces */
    lors_ec_stripe_t *st;
    size_t ns;
    CU_ASSERT_EQUAL_FATAL(lors_ec_stripes(x, NULL, &st, &ns), LORS_OK);
    CU_ASSERT_EQUAL(ns, 7);
    for (size_t s = 0; s < ns; s++)
        CU_ASSERT(st[s].alive == 6 && st[s].margin == 2);
    CU_ASSERT_EQUAL(st[6].length, (int64_t)(N - 6 * 4 * PIECE));
    free(st);
}

static void test_whole_and_ranges(void)
{
    lors_download_opts_t o;
    lors_dl_report_t rep;
    dopts(&o);
    tl_check_range(&o, x, src, N, 0, -1, &rep);
    lors_dl_report_free(&rep);
    /* ranges: inside a piece, across pieces, across stripes, the short tail, one byte */
    int64_t r[][2] = {{1, 100},
                      {PIECE - 10, 20},
                      {4 * PIECE - 1, 2},
                      {3 * PIECE + 5, 9 * PIECE},
                      {6 * 4 * PIECE + 100, 12245},
                      {(int64_t)N - 1, 1},
                      {0, 0}};
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++) {
        tl_check_range(&o, x, src, N, r[i][0], r[i][1], &rep);
        lors_dl_report_free(&rep);
    }
}

/* Download f with o and assert that it is the source, byte for byte (saying why not); the
 * report in *rep, for the caller's own checks (it frees it). */
static void download_exact_with(const lors_download_opts_t *o, const xnd_t *f, const char *what,
                                lors_dl_report_t *rep)
{
    unsigned char *out = NULL;
    size_t outlen = 0;
    int rc = tl_download_mem(o, f, &out, &outlen, rep);
    if (rc != LORS_OK || outlen != N || memcmp(out, src, N) != 0)
        fprintf(stderr, "%s: rc %d, %zu bytes: %s\n", what, rc, outlen, rep->error);
    CU_ASSERT_EQUAL(rc, LORS_OK);
    CU_ASSERT(outlen == N && memcmp(out, src, N) == 0);
    free(out);
}

/* The shared file, with the default options. */
static void download_exact(const char *what)
{
    lors_download_opts_t o;
    lors_dl_report_t rep;
    dopts(&o);
    download_exact_with(&o, x, what, &rep);
    lors_dl_report_free(&rep);
}

static void restart(int i)
{
    CU_ASSERT_EQUAL_FATAL(td_restart(&dep[i]), 0);
}

/* Each of the 15 pairs of depots killed: the file still comes back whole. */
static void test_two_killed(void)
{
    for (int a = 0; a < ND; a++)
        for (int b = a + 1; b < ND; b++) {
            char what[64];
            snprintf(what, sizeof what, "depots %d and %d killed", a, b);
            lns_test_server_kill(&dep[a].srv, SIGKILL);
            lns_test_server_kill(&dep[b].srv, SIGKILL);
            download_exact(what);
            restart(a);
            restart(b);
        }
}

typedef struct killer {
    int at, seen;
    pthread_mutex_t mu;
} killer_t;

static void on_fetch(void *arg, const lors_event_t *ev)
{
    killer_t *k = arg;
    if (ev->kind != LORS_EV_FETCH_END)
        return;
    pthread_mutex_lock(&k->mu);
    if (++k->seen == k->at) {
        lns_test_server_kill(&dep[1].srv, SIGKILL);
        lns_test_server_kill(&dep[4].srv, SIGKILL);
    }
    pthread_mutex_unlock(&k->mu);
}

static void test_two_killed_midway(void)
{
    lors_download_opts_t o;
    lors_dl_report_t rep;
    killer_t k = {6, 0, PTHREAD_MUTEX_INITIALIZER};
    dopts(&o);
    o.on_event = on_fetch;
    o.event_arg = &k;
    download_exact_with(&o, x, "two killed mid-download", &rep);
    CU_ASSERT(k.seen >= 6);
    lors_dl_report_free(&rep);
    restart(1);
    restart(4);
}

/* Overwrite the first bytes of piece (stripe s, column j) of x through the mapping's write
 * cap; the mapping's index, -1 if there is none. */
static int corrupt(xnd_t *f, int64_t s, int j)
{
    int64_t S = 4 * PIECE;
    for (size_t i = 0; i < f->nmaps; i++) {
        xnd_mapping_t *m = f->maps[i];
        int64_t col;
        int64_t first = m->exnode_offset / S, n = (m->logical_length + S - 1) / S;
        if (xnd_meta_get_int(&m->func->args, "piece", &col) != XND_OK || col != j ||
            s < first || s >= first + n)
            continue;
        unsigned char junk[64];
        memset(junk, 0x5a, sizeof junk);
        uint64_t w = 0;
        CU_ASSERT_EQUAL(ibp_write(cli, m->cap[XND_WRITE], (uint64_t)((s - first) * PIECE), junk,
                                  sizeof junk, &w), IBP_OK);
        return (int)i;
    }
    CU_FAIL("no such piece");
    return -1;
}

/* The mappings whose fetches failed their digests (LORS_EV_FETCH_FAIL, op CHECKSUM). */
typedef struct {
    pthread_mutex_t mu;
    int failed[64];
} digests_t;

static void on_digest(void *arg, const lors_event_t *ev)
{
    digests_t *d = arg;
    if (ev->kind != LORS_EV_FETCH_FAIL || !ev->op || strcmp(ev->op, "CHECKSUM") != 0 ||
        ev->copy < 0 || ev->copy >= 64)
        return;
    pthread_mutex_lock(&d->mu);
    d->failed[ev->copy] = 1;
    pthread_mutex_unlock(&d->mu);
}

static void test_two_corrupted(void)
{
    /* a copy of its own, so that the shared file stays whole */
    lors_report_t urep;
    xnd_t *y = upload_ec(ldep, ND, src, N, 4, 2, &urep);
    lors_report_free(&urep);
    CU_ASSERT_PTR_NOT_NULL_FATAL(y);
    CU_ASSERT_FATAL(y->nmaps <= 64);
    /* a data and a parity piece of stripe 2: the data piece's digest fails, and a parity
     * piece fetched in its place may be the damaged one; two data pieces of stripe 3 */
    int damaged[64] = {0};
    const int sj[4][2] = {{2, 1}, {2, 4}, {3, 0}, {3, 3}};
    for (int i = 0; i < 4; i++) {
        int q = corrupt(y, sj[i][0], sj[i][1]);
        CU_ASSERT_FATAL(q >= 0);
        damaged[q] = 1;
    }
    lors_download_opts_t o;
    lors_dl_report_t rep;
    digests_t d = {PTHREAD_MUTEX_INITIALIZER, {0}};
    dopts(&o);
    o.on_event = on_digest;
    o.event_arg = &d;
    download_exact_with(&o, y, "two corrupted", &rep);
    /* Which damaged pieces are read at all is the scheduler's choice: a stripe at the head
     * with a piece done opens its other pieces to parity at once, so a damaged data piece
     * may be passed over, or lose to a parity piece before its digest is checked (CI on
     * 2026-11-25 and a fresh-clone run of d201b4b: 2 of the 3 damaged data mappings
     * blamed).  What holds every time: each mapping whose bytes failed their digest is
     * blamed, only those, and they are damaged ones; and some are read (a block's first
     * fetch goes to its own data piece unless its stripe is already at the head: 2 to 4 of
     * the 4 damaged mappings were blamed in 24 runs under ASan, two at once). */
    int blamed[64] = {0};
    for (size_t i = 0; i < rep.nbad; i++) {
        int q = rep.bad_mappings[i];
        CU_ASSERT_FATAL(q >= 0 && q < 64);
        CU_ASSERT(damaged[q]);
        CU_ASSERT(d.failed[q]);
        blamed[q] = 1;
    }
    for (int q = 0; q < 64; q++)
        CU_ASSERT(!d.failed[q] || blamed[q]);
    CU_ASSERT(rep.nbad >= 1);
    lors_dl_report_free(&rep);
    tl_free_xnd(cli, y);
}

/* Parity pieces carry a CRC-64, data pieces SHA-256.  A parity piece rewritten with its CRC
 * in the exNode forged to match (what only a hostile depot or editor does) passes its own
 * check; the data decoded from it then fails the data piece's SHA-256: the download stops
 * there (LORS_E_E2E) and never writes the wrong bytes. */
static void test_forged_parity(void)
{
    lors_report_t urep;
    xnd_t *y = upload_ec(ldep, ND, src, N, 4, 2, &urep);
    lors_report_free(&urep);
    CU_ASSERT_PTR_NOT_NULL_FATAL(y);
    int64_t S = 4 * PIECE, s = 2;
    /* stripe 2: data piece 1 and parity piece 5 damaged (their digests fail), parity piece 4
     * damaged with its CRC forged: the only fourth piece left is the forged one */
    corrupt(y, s, 1);
    corrupt(y, s, 5);
    corrupt(y, s, 4);
    int forged = 0;
    for (size_t i = 0; i < y->nmaps && !forged; i++) {
        xnd_mapping_t *m = y->maps[i];
        int64_t col;
        const char *alg = NULL, *dig = NULL;
        int64_t first = m->exnode_offset / S, n = (m->logical_length + S - 1) / S;
        if (xnd_meta_get_int(&m->func->args, "piece", &col) != XND_OK || col != 4 ||
            s < first || s >= first + n)
            continue;
        CU_ASSERT_EQUAL(xnd_meta_get_string(&m->func->args, "algorithm", &alg), XND_OK);
        CU_ASSERT_STRING_EQUAL(alg, "crc64");
        CU_ASSERT_EQUAL_FATAL(xnd_meta_get_string(&m->func->args, "digests", &dig), XND_OK);
        unsigned char *piece = malloc(PIECE);
        CU_ASSERT_EQUAL_FATAL(ibp_load(cli, m->cap[XND_READ], (uint64_t)((s - first) * PIECE),
                                       PIECE, piece), IBP_OK);
        /* the forger binds it to its place too (docs/exnode.md): the CRC of the place line */
        char hex[17], line[256], *d = strdup(dig);
        snprintf(hex, sizeof hex, "%016llx",
                 (unsigned long long)crc64_ecma_refl(0, piece, (uint64_t)PIECE));
        int ll = snprintf(line, sizeof line, "lns_ec-piece 2 rs-cauchy 4 2 %lld %lld %lld 4 %s",
                          (long long)PIECE, (long long)xnd_size(y), (long long)s, hex);
        snprintf(hex, sizeof hex, "%016llx",
                 (unsigned long long)crc64_ecma_refl(0, (unsigned char *)line, (uint64_t)ll));
        memcpy(d + (size_t)(s - first) * 16, hex, 16);
        CU_ASSERT_EQUAL(xnd_meta_set_string(&m->func->args, "digests", d), XND_OK);
        free(d);
        free(piece);
        forged = 1;
    }
    CU_ASSERT_FATAL(forged);
    tl_dl_t dl;
    dopts(&dl.o);
    CU_ASSERT_EQUAL(tl_dl(&dl, y), LORS_E_E2E);
    CU_ASSERT_PTR_NOT_NULL(strstr(dl.rep.error, "does not match its digests"));
    CU_ASSERT(dl.outlen <= (size_t)(s * S));
    CU_ASSERT(memcmp(dl.out, src, dl.outlen) == 0);
    tl_dl_end(&dl);
    tl_free_xnd(cli, y);
}

static void test_one_stopped(void)
{
    kill(dep[2].pid, SIGSTOP);
    lors_download_opts_t o;
    lors_dl_report_t rep;
    dopts(&o);
    download_exact_with(&o, x, "one stopped", &rep);
    kill(dep[2].pid, SIGCONT);
    /* the stalls were cut short, not waited out */
    CU_ASSERT(rep.seconds < 10);
    lors_dl_report_free(&rep);
}

static void test_three_gone(void)
{
    lns_test_server_kill(&dep[0].srv, SIGKILL);
    lns_test_server_kill(&dep[2].srv, SIGKILL);
    lns_test_server_kill(&dep[5].srv, SIGKILL);
    tl_dl_t dl;
    dopts(&dl.o);
    CU_ASSERT_EQUAL(tl_dl(&dl, x), LORS_E_NO_REPLICA);
    /* the message names the stripes' bytes */
    char first[64]; /* every stripe has a piece on each depot: all are lost */
    snprintf(first, sizeof first, "bytes 0-%zu:", N - 1);
    CU_ASSERT(strstr(dl.rep.error, first) != NULL);
    CU_ASSERT(strstr(dl.rep.error, "pieces") != NULL);
    if (!strstr(dl.rep.error, first))
        fprintf(stderr, "three gone: %s\n", dl.rep.error);
    CU_ASSERT(dl.outlen < N && memcmp(dl.out, src, dl.outlen) == 0); /* a valid prefix at most */
    tl_dl_end(&dl);
    restart(0);
    restart(2);
    restart(5);
    download_exact("after the restarts");
}

/* From a pipe (length unknown), with a dead depot in the list that the columns move off. */
static void test_pipe_and_dead_depot(void)
{
    int fds[2];
    CU_ASSERT_FATAL(pipe(fds) == 0);
    size_t n = 3 * 6 * PIECE + 999;
    unsigned char *buf = tl_data(n, 78);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        size_t off = 0;
        while (off < n) {
            ssize_t w = write(fds[1], buf + off, n - off < 10000 ? n - off : 10000);
            if (w <= 0)
                _exit(1);
            off += (size_t)w;
        }
        _exit(0);
    }
    close(fds[1]);
    int dead = 0, lfd = raw_listen_loopback(&dead);
    CU_ASSERT_FATAL(lfd >= 0);
    close(lfd); /* a port nobody listens on: refused */
    lors_depot_t d[ND + 1];
    memcpy(d, ldep, sizeof ldep);
    d[ND] = ldep[0];
    d[0].port = dead; /* first in the list: the first segment's column 0 lands there */
    lors_upload_opts_t o;
    lors_report_t rep;
    xnd_t *y = NULL;
    tl_upload_opts(&o, d, ND + 1, 1, 4);
    o.ec_k = 3;
    o.ec_m = 3;
    o.ec_piece = PIECE;
    o.blocksize = 2 * PIECE; /* from a pipe: 2 stripes per segment */
    o.timeout_s = 5;
    int rc = lors_upload_fd(&o, fds[0], -1, "pipe", &y, &rep);
    close(fds[0]);
    waitpid(pid, NULL, 0);
    CU_ASSERT_EQUAL(rc, LORS_OK);
    if (rc != LORS_OK)
        fprintf(stderr, "pipe upload: %s\n", rep.error);
    CU_ASSERT(rep.nissues >= 1); /* the dead depot, worked around */
    CU_ASSERT_EQUAL(rep.size, (int64_t)n);
    lors_report_free(&rep);
    if (y) {
        for (size_t i = 0; i < y->nmaps; i++)
            CU_ASSERT_NOT_EQUAL(map_port(y->maps[i]), dead);
        lors_download_opts_t dlo;
        lors_dl_report_t dr;
        dopts(&dlo);
        tl_check_range(&dlo, y, buf, n, 0, -1, &dr);
        lors_dl_report_free(&dr);
    }
    tl_free_xnd(cli, y);
    free(buf);
}

static void test_too_few_depots(void)
{
    lors_report_t rep;
    lors_depot_t d[ND];
    memcpy(d, ldep, sizeof ldep);
    d[5] = d[4]; /* six entries, five depots */
    xnd_t *y = upload_ec(d, ND, src, 1000, 4, 2, &rep);
    CU_ASSERT_PTR_NULL(y);
    CU_ASSERT(strstr(rep.error, "6 distinct depots") != NULL);
    lors_report_free(&rep);
}

static const lns_test_case tests[] = {
    {"4+2: layout, rotation, storage, stripes", test_layout},
    {"whole file and sub-ranges", test_whole_and_ranges},
    {"any two depots SIGKILLed (15 pairs)", test_two_killed},
    {"two depots SIGKILLed mid-download", test_two_killed_midway},
    {"two corrupted pieces", test_two_corrupted},
    {"a parity piece with a forged CRC: the decoded data fails its SHA-256",
     test_forged_parity},
    {"one depot SIGSTOPped", test_one_stopped},
    {"three depots gone: fails naming the bytes", test_three_gone},
    {"upload from a pipe around a dead depot", test_pipe_and_dead_depot},
    {"too few depots", test_too_few_depots},
};

LNS_TEST_MAIN_WITH("lors erasure coding on depots", suite_init, suite_clean, tests)
