/* test_lors_download.c -- liblors download against real depots: sizes, sub-ranges, pipes,
 * depots killed, stopped or corrupted mid-download, a range with no replica left, and the
 * reorder buffer's memory bound.
 *
 * Four depots live for the whole program; tests that kill, stop or corrupt a depot start
 * their own victim.  Every download's output is compared byte for byte with the source
 * (download() writes to an unlinked temporary file and reads it back). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ibp.h"
#include "lns_test.h"
#include "lors.h"
#include "test_depot.h"
#include "test_lors.h"
#include "xnd.h"

#define ND 4
#define CKBS 65536
#define DBS ((int64_t)262144) /* download block size: 4 checksum blocks */

TL_FLEET(ND)

/* Upload src over depots d[0..nd) with copies x fragments; fatal on failure. */
static xnd_t *upload(const lors_depot_t *d, size_t nd, const unsigned char *src, size_t n,
                     int copies, int frags)
{
    lors_upload_opts_t o;
    lors_report_t rep;
    xnd_t *x = NULL;
    tl_upload_opts(&o, d, nd, copies, frags);
    o.threads = 6;
    o.checksum_blocksize = CKBS;
    int rc = lors_upload_buf(&o, src, n, "dl", &x, &rep);
    if (rc != LORS_OK)
        fprintf(stderr, "upload %zu: %s\n", n, rep.error);
    lors_report_free(&rep);
    CU_ASSERT_EQUAL_FATAL(rc, LORS_OK);
    return x;
}

static void dopts(lors_download_opts_t *o)
{
    lors_download_opts_init(o);
    o->threads = 6;
    o->blocksize = DBS;
    o->timeout_ms = 10000;
}

/* tl_dl, saying why it failed (a missing replica is expected). */
static int download(tl_dl_t *d, const xnd_t *x)
{
    int rc = tl_dl(d, x);
    if (rc != LORS_OK && rc != LORS_E_NO_REPLICA)
        fprintf(stderr, "download: %s: %s\n", lors_strerror(rc), d->rep.error);
    return rc;
}

/* Download [off, off+len) (len -1: to the end) and compare with src. */
static void check_range(const xnd_t *x, const unsigned char *src, size_t n, int64_t off,
                        int64_t len)
{
    lors_download_opts_t o;
    lors_dl_report_t rep;
    dopts(&o);
    tl_check_range(&o, x, src, n, off, len, &rep);
    CU_ASSERT(rep.peak_buffered <= o.buffer_bytes + o.threads * rep.max_fetch_buffer);
    lors_dl_report_free(&rep);
}

static void test_sizes(void)
{
    static const size_t sizes[] = {0, 1, DBS - 1, DBS, DBS + 1};
    for (int copies = 1; copies <= 3; copies++)
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            size_t n = sizes[si];
            unsigned char *src = tl_data(n, 100 + si + 10 * (size_t)copies);
            xnd_t *x = upload(ldep, ND, src, n, copies, 4);
            check_range(x, src, n, 0, -1);
            tl_free_xnd(cli, x);
            free(src);
        }
}

static void test_large(void)
{
    size_t n = 20 * 1000 * 1000 + 17;
    unsigned char *src = tl_data(n, 7);
    xnd_t *x = upload(ldep, ND, src, n, 2, 4);
    lors_download_opts_t o;
    lors_dl_report_t rep;
    dopts(&o);
    tl_check_range(&o, x, src, n, 0, -1, &rep);
    CU_ASSERT_EQUAL(rep.ndepots, ND);
    uint64_t bytes = 0, blocks = 0;
    for (size_t d = 0; d < rep.ndepots; d++) {
        bytes += rep.depots[d].bytes;
        blocks += rep.depots[d].blocks;
        CU_ASSERT_EQUAL(rep.depots[d].failures, 0);
    }
    CU_ASSERT_EQUAL(bytes, n);
    CU_ASSERT_EQUAL(blocks, rep.blocks);
    CU_ASSERT(rep.bytes_fetched >= (int64_t)n);
    lors_dl_report_free(&rep);
    tl_free_xnd(cli, x);
    free(src);
}

static void test_subranges(void)
{
    size_t n = 3 * 1000 * 1000 + 5; /* fragments of 750002 bytes: off the block grid */
    unsigned char *src = tl_data(n, 8);
    xnd_t *x = upload(ldep, ND, src, n, 2, 4);
    check_range(x, src, n, 12345, 1000);              /* inside one block */
    check_range(x, src, n, 700001, 900000);           /* across a fragment boundary */
    check_range(x, src, n, 750002 - 3, 7);            /* a few bytes either side of it */
    check_range(x, src, n, 1, (int64_t)n - 2);
    check_range(x, src, n, (int64_t)n - 5, 5);
    check_range(x, src, n, (int64_t)n, 0);
    check_range(x, src, n, 2 * CKBS + 1, -1);

    lors_download_opts_t o;
    lors_dl_report_t rep;
    dopts(&o);
    o.offset = (int64_t)n - 1;
    o.length = 2;
    CU_ASSERT_EQUAL(lors_download_fd(&o, x, 1, &rep), LORS_E_INVAL);
    CU_ASSERT(strstr(rep.error, "range") != NULL);
    lors_dl_report_free(&rep);
    tl_free_xnd(cli, x);
    free(src);
}

typedef struct drain {
    int fd;
    unsigned char *buf;
    size_t n, cap;
    size_t stop_after; /* close early after this many bytes (0: never) */
} drain_t;

static void *drain_pipe(void *arg)
{
    drain_t *d = arg;
    for (;;) {
        if (d->stop_after && d->n >= d->stop_after)
            break;
        ssize_t r = read(d->fd, d->buf + d->n, d->cap - d->n < 65536 ? d->cap - d->n : 65536);
        if (r <= 0)
            break;
        d->n += (size_t)r;
    }
    close(d->fd);
    return NULL;
}

static void test_pipe(void)
{
    size_t n = 6 * 1000 * 1000 + 3;
    unsigned char *src = tl_data(n, 9);
    xnd_t *x = upload(ldep, ND, src, n, 2, 4);
    int p[2];
    CU_ASSERT_FATAL(pipe(p) == 0);
    drain_t d = {p[0], malloc(n + 1), 0, n + 1, 0};
    pthread_t t;
    pthread_create(&t, NULL, drain_pipe, &d);
    lors_download_opts_t o;
    lors_dl_report_t rep;
    dopts(&o);
    o.prebuffer_bytes = 4 * DBS;
    CU_ASSERT_EQUAL(lors_download_fd(&o, x, p[1], &rep), LORS_OK);
    close(p[1]);
    pthread_join(t, NULL);
    CU_ASSERT_EQUAL(d.n, n);
    CU_ASSERT(d.n == n && memcmp(d.buf, src, n) == 0);
    lors_dl_report_free(&rep);

    /* the reader goes away after 1 MB: a clean LORS_E_WRITE, no SIGPIPE */
    CU_ASSERT_FATAL(pipe(p) == 0);
    drain_t d2 = {p[0], d.buf, 0, n + 1, 1000000};
    pthread_create(&t, NULL, drain_pipe, &d2);
    CU_ASSERT_EQUAL(lors_download_fd(&o, x, p[1], &rep), LORS_E_WRITE);
    CU_ASSERT(strstr(rep.error, "Broken pipe") != NULL);
    close(p[1]);
    pthread_join(t, NULL);
    lors_dl_report_free(&rep);
    free(d.buf);
    tl_free_xnd(cli, x);
    free(src);
}

/* Act on a victim depot at the k-th block that completes. */
typedef struct victim {
    test_depot_t *d;
    int sig;
    int at, seen;
    pthread_mutex_t mu;
} victim_t;

static void on_ev(void *arg, const lors_event_t *ev)
{
    victim_t *v = arg;
    if (ev->kind != LORS_EV_FETCH_END)
        return;
    pthread_mutex_lock(&v->mu);
    if (++v->seen == v->at)
        lns_test_server_kill(&v->d->srv, v->sig);
    pthread_mutex_unlock(&v->mu);
}

/* A depot of its own started as *vd (named name) and the list ld[4] of the shared depots with
 * it in place i. */
static void with_victim(test_depot_t *vd, const char *name, int i, lors_depot_t *ld)
{
    CU_ASSERT_FATAL(tl_start_depot(vd, name, "256M") == 0);
    for (int k = 0; k < 4; k++)
        ld[k] = ldep[k];
    tl_lors_depot(vd, &ld[i]);
}

/* 2 copies over three shared depots and a victim; sig sent to it after 5 blocks. */
static void victim_download(int sig, const char *name)
{
    test_depot_t vd;
    lors_depot_t ld[4];
    with_victim(&vd, name, 3, ld);
    size_t n = 12 * 1000 * 1000 + 1;
    unsigned char *src = tl_data(n, 10 + (uint64_t)sig);
    xnd_t *x = upload(ld, 4, src, n, 2, 4);
    victim_t v = {&vd, sig, 5, 0, PTHREAD_MUTEX_INITIALIZER};
    tl_dl_t dl;
    dopts(&dl.o);
    dl.o.timeout_ms = 2000;
    dl.o.stall_ms = 1000;
    dl.o.on_event = on_ev;
    dl.o.event_arg = &v;
    int rc = download(&dl, x);
    CU_ASSERT_EQUAL(rc, LORS_OK);
    CU_ASSERT_EQUAL(dl.outlen, n);
    CU_ASSERT(dl.outlen == n && memcmp(dl.out, src, n) == 0);
    CU_ASSERT(v.seen >= 5);
    CU_ASSERT(dl.rep.seconds < 20);
    /* the end does not wait for reads blocked on the stopped depot to time out: the engine
     * interrupts them once their blocks are done elsewhere */
    if (sig == SIGSTOP)
        CU_ASSERT(dl.rep.seconds < dl.o.timeout_ms / 1000.0);
    /* the victim cost fetches: failed (refused, timed out) or cancelled (lost the race) */
    uint64_t hit = 0;
    for (size_t i = 0; i < dl.rep.ndepots; i++)
        if (dl.rep.depots[i].depot.port == vd.port)
            hit = dl.rep.depots[i].failures + dl.rep.depots[i].wasted;
    CU_ASSERT(hit >= 1);
    if (getenv("LNS_TEST_VERBOSE"))
        fprintf(stderr, "%s: %.2f s, victim failures+cancelled %llu\n", name, dl.rep.seconds,
                (unsigned long long)hit);
    tl_dl_end(&dl);
    if (sig == SIGSTOP)
        kill(vd.pid, SIGCONT);
    tl_free_xnd(cli, x);
    lns_test_server_stop(&vd.srv);
    free(src);
}

static void test_killed(void)
{
    victim_download(SIGKILL, "killed");
}

static void test_stopped(void)
{
    victim_download(SIGSTOP, "stopped");
}

/* The port of a capability, or -1. */
static int cap_port(const char *cap)
{
    ibp_cap_t c;
    return cap && ibp_cap_parse(cap, &c) == IBP_OK ? c.port : -1;
}

/* Copy 0 of a one-fragment file is corrupted in every download block: every block fetched
 * from it fails its checksum and comes from copy 1; the mapping is reported bad. */
static void test_corrupt(void)
{
    size_t n = 16 * (size_t)DBS - 100;
    unsigned char *src = tl_data(n, 11);
    xnd_t *x = upload(ldep, ND, src, n, 2, 1);
    CU_ASSERT_EQUAL_FATAL(x->nmaps, 2);
    for (size_t off = 1000; off < n; off += (size_t)DBS) {
        unsigned char junk[4] = {src[off] ^ 0xff, 1, 2, 3};
        CU_ASSERT_EQUAL(ibp_write(cli, x->maps[0]->cap[XND_WRITE], off, junk, 4, NULL), IBP_OK);
    }
    tl_dl_t dl;
    dopts(&dl.o);
    CU_ASSERT_EQUAL(download(&dl, x), LORS_OK);
    CU_ASSERT_EQUAL(dl.outlen, n);
    CU_ASSERT(dl.outlen == n && memcmp(dl.out, src, n) == 0);
    CU_ASSERT_EQUAL(dl.rep.nbad, 1);
    if (dl.rep.nbad == 1)
        CU_ASSERT_EQUAL(dl.rep.bad_mappings[0], 0);
    uint64_t bad = 0;
    for (size_t i = 0; i < dl.rep.ndepots; i++)
        bad += dl.rep.depots[i].bad_data;
    CU_ASSERT(bad >= 1);
    /* the file was served below its copy count: one of two copies left, all of it, and the
     * depot of copy 0 named for bad data */
    CU_ASSERT_EQUAL(dl.rep.ndegraded, 1);
    if (dl.rep.ndegraded == 1) {
        CU_ASSERT_EQUAL(dl.rep.degraded[0].offset, 0);
        CU_ASSERT_EQUAL(dl.rep.degraded[0].length, (int64_t)n);
        CU_ASSERT_EQUAL(dl.rep.degraded[0].copies, 2);
        CU_ASSERT_EQUAL(dl.rep.degraded[0].left, 1);
    }
    int named = 0;
    for (size_t i = 0; i < dl.rep.ndepots; i++)
        if (dl.rep.depots[i].failed[0]) {
            named++;
            CU_ASSERT_STRING_EQUAL(dl.rep.depots[i].failed, "bad data");
            CU_ASSERT_EQUAL(dl.rep.depots[i].depot.port, cap_port(x->maps[0]->cap[XND_READ]));
        }
    CU_ASSERT_EQUAL(named, 1);
    tl_dl_end(&dl);

    /* without verification the corruption goes through: the check is what caught it */
    dl.o.verify = 0;
    dl.o.threads = 1;
    CU_ASSERT_EQUAL(download(&dl, x), LORS_OK);
    CU_ASSERT_EQUAL(dl.rep.nbad, 0);
    CU_ASSERT_EQUAL(dl.rep.ndegraded, 0);
    tl_dl_end(&dl);
    tl_free_xnd(cli, x);
    free(src);
}

/* One copy; fragment 2 lives on a depot that is dead: LORS_E_NO_REPLICA naming its bytes,
 * and what was written is a correct prefix. */
static void test_no_replica(void)
{
    test_depot_t vd;
    lors_depot_t ld[4];
    with_victim(&vd, "gone", 2, ld);
    size_t n = 4 * 1000 * 1000;
    unsigned char *src = tl_data(n, 12);
    xnd_t *x = upload(ld, 4, src, n, 1, 4);
    lns_test_server_kill(&vd.srv, SIGKILL);
    tl_dl_t dl;
    dopts(&dl.o);
    dl.o.timeout_ms = 2000;
    CU_ASSERT_EQUAL(download(&dl, x), LORS_E_NO_REPLICA);
    CU_ASSERT(dl.rep.missing_off >= 2000000 && dl.rep.missing_off + dl.rep.missing_len <= 3000000);
    CU_ASSERT(dl.rep.missing_len > 0);
    CU_ASSERT(strstr(dl.rep.error, "bytes ") != NULL);
    CU_ASSERT(dl.outlen <= 2000000 && dl.outlen == (size_t)dl.rep.bytes_written);
    CU_ASSERT(memcmp(dl.out, src, dl.outlen) == 0);
    tl_dl_end(&dl);
    tl_free_xnd(cli, x);
    lns_test_server_stop(&vd.srv);
    free(src);
}

/* A victim depot whose LOAD replies run into the failpoint load.mid (spec), over ld[0]. */
static void start_cut_depot(test_depot_t *vd, const char *spec, lors_depot_t *ld)
{
    setenv("LNS_FAILPOINTS", spec, 1);
    int started = tl_start_depot(vd, "cut", "64M");
    unsetenv("LNS_FAILPOINTS");
    CU_ASSERT_FATAL(started == 0);
    tl_lors_depot(vd, ld);
}

/* The depot's first LOAD reply ends halfway (failpoint load.mid): the block's other half is
 * all that is fetched again, so the bytes fetched are the file's size exactly, and the
 * block's digests are checked over both parts. */
static void test_cut_reply(void)
{
    test_depot_t vd;
    lors_depot_t ld;
    start_cut_depot(&vd, "load.mid=error@1", &ld);
    size_t n = 8 * (size_t)DBS;
    unsigned char *src = tl_data(n, 14);
    xnd_t *x = upload(&ld, 1, src, n, 1, 1);
    tl_dl_t dl;
    dopts(&dl.o);
    CU_ASSERT_EQUAL(download(&dl, x), LORS_OK);
    CU_ASSERT(dl.outlen == n && memcmp(dl.out, src, n) == 0);
    CU_ASSERT_EQUAL(dl.rep.ndepots, 1);
    if (dl.rep.ndepots == 1)
        CU_ASSERT_EQUAL(dl.rep.depots[0].failures, 1);
    CU_ASSERT_EQUAL(dl.rep.bytes_fetched, (int64_t)n);
    if (dl.rep.bytes_fetched != (int64_t)n)
        fprintf(stderr, "fetched %lld bytes of %zu\n", (long long)dl.rep.bytes_fetched, n);
    tl_dl_end(&dl);
    tl_free_xnd(cli, x);
    lns_test_server_stop(&vd.srv);
    free(src);
}

typedef struct bg_download {
    lors_download_opts_t o;
    const xnd_t *x;
    unsigned char *out;
    size_t outlen;
    lors_dl_report_t rep;
    int rc;
} bg_download_t;

static void *bg_download(void *arg)
{
    bg_download_t *b = arg;
    b->rc = tl_download_mem(&b->o, b->x, &b->out, &b->outlen, &b->rep);
    return NULL;
}

/* 1 once process pid is stopped or dead (state T or Z in /proc, or gone), within ms. */
static int wait_halted(int pid, int ms)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    for (int i = 0; i <= ms / 10; i++) {
        FILE *f = fopen(path, "r");
        if (!f)
            return 1;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = 0;
        const char *p = strrchr(buf, ')');
        if (p && p[1] == ' ' && (p[2] == 'T' || p[2] == 'Z'))
            return 1;
        usleep(10000);
    }
    return 0;
}

/* Two victim depots: copy 0 of an 8-block file on `first`, whose LOADs run into the failpoint
 * load.mid as spec says, and copy 1 on `late`. */
typedef struct late {
    test_depot_t first, late;
    size_t n;
    unsigned char *src;
    xnd_t *x;
    bg_download_t bg;
} late_t;

static void late_setup(late_t *L, const char *spec, uint64_t seed)
{
    lors_depot_t ld[2];
    memset(L, 0, sizeof *L);
    start_cut_depot(&L->first, spec, &ld[0]);
    CU_ASSERT_FATAL(tl_start_depot(&L->late, "late", "64M") == 0);
    tl_lors_depot(&L->late, &ld[1]);
    L->n = 8 * (size_t)DBS;
    L->src = tl_data(L->n, seed);
    L->x = upload(ld, 2, L->src, L->n, 2, 1);
}

/* Download the file into L->bg with `late` stopped until `first` has stopped or died at the
 * failpoint and the half it sent has come: so the fetch from `first` has its half before any
 * fetch from `late` can race it.  The bytes must be the file's. */
static void late_download(late_t *L)
{
    bg_download_t *bg = &L->bg;
    dopts(&bg->o);
    bg->x = L->x;
    CU_ASSERT_EQUAL(lns_test_server_kill(&L->late.srv, SIGSTOP), 0);
    pthread_t t;
    CU_ASSERT_FATAL(pthread_create(&t, NULL, bg_download, bg) == 0);
    /* no assertion while the download runs: it makes its own (tl_download_mem) */
    int halted = wait_halted(L->first.pid, LNS_TEST_WAIT_MS);
    usleep(300000);
    int cont = lns_test_server_kill(&L->late.srv, SIGCONT);
    pthread_join(t, NULL);
    CU_ASSERT(halted);
    CU_ASSERT_EQUAL(cont, 0);
    CU_ASSERT_EQUAL(bg->rc, LORS_OK);
    CU_ASSERT(bg->outlen == L->n && memcmp(bg->out, L->src, L->n) == 0);
}

static void late_end(late_t *L)
{
    lors_dl_report_free(&L->bg.rep);
    free(L->bg.out);
    lns_test_server_kill(&L->first.srv, SIGCONT); /* if it was stopped */
    tl_free_xnd(cli, L->x);
    lns_test_server_stop(&L->first.srv);
    lns_test_server_stop(&L->late.srv);
    free(L->src);
}

/* Copy 0's depot has bad bytes in the first half of every block and dies halfway through its
 * first LOAD reply: the half it sent, joined to the rest from copy 1, fails the checksum; the
 * block then comes whole from copy 1, which passes, so the bad half was copy 0's: reported
 * as its bad data (copy 1 is not blamed, or the file could not be read). */
static void test_cut_reply_bad(void)
{
    late_t L;
    late_setup(&L, "load.mid=kill@1", 15);
    CU_ASSERT_EQUAL_FATAL(L.x->nmaps, 2);
    int bad = cap_port(L.x->maps[0]->cap[XND_READ]) == L.first.port ? 0 : 1;
    CU_ASSERT_EQUAL_FATAL(cap_port(L.x->maps[bad]->cap[XND_READ]), L.first.port);
    for (size_t off = 1000; off < L.n; off += (size_t)DBS) {
        unsigned char junk[4] = {L.src[off] ^ 0xff, 1, 2, 3};
        CU_ASSERT_EQUAL(ibp_write(cli, L.x->maps[bad]->cap[XND_WRITE], off, junk, 4, NULL),
                        IBP_OK);
    }
    late_download(&L);
    CU_ASSERT_EQUAL(L.bg.rep.nbad, 1);
    if (L.bg.rep.nbad == 1)
        CU_ASSERT_EQUAL(L.bg.rep.bad_mappings[0], bad);
    late_end(&L);
}

/* Copy 0's depot hangs halfway through its first LOAD reply (load.mid=stop): the block's
 * rescue on copy 1 starts with a copy of the half that came and loads only the rest, so the
 * bytes fetched are less than a half block over the file's size (reloading the block from
 * copy 1 makes them a half block more).  Not exactly the size: a piece of the half that the
 * hung fetch reads only after the rescue has started counts as fetched twice (CI, under
 * ASan: 64 KiB more). */
static void test_stalled_reply(void)
{
    late_t L;
    late_setup(&L, "load.mid=stop@1", 16);
    late_download(&L);
    CU_ASSERT(L.bg.rep.bytes_fetched >= (int64_t)L.n);
    CU_ASSERT(L.bg.rep.bytes_fetched < (int64_t)L.n + DBS / 2);
    if (L.bg.rep.bytes_fetched != (int64_t)L.n)
        fprintf(stderr, "fetched %lld bytes of %zu\n", (long long)L.bg.rep.bytes_fetched, L.n);
    late_end(&L);
}

/* A reorder buffer of two blocks still downloads 20 MB, within budget + one buffer a stream. */
static void test_memory_bound(void)
{
    size_t n = 20 * 1000 * 1000;
    unsigned char *src = tl_data(n, 13);
    xnd_t *x = upload(ldep, ND, src, n, 2, 4);
    lors_download_opts_t o;
    lors_dl_report_t rep;
    dopts(&o);
    o.buffer_bytes = 2 * DBS;
    tl_check_range(&o, x, src, n, 0, -1, &rep);
    CU_ASSERT(rep.max_fetch_buffer <= DBS);
    CU_ASSERT(rep.peak_buffered > 0);
    CU_ASSERT(rep.peak_buffered <= o.buffer_bytes + o.threads * rep.max_fetch_buffer);
    if (rep.peak_buffered > o.buffer_bytes + o.threads * rep.max_fetch_buffer)
        fprintf(stderr, "peak %lld\n", (long long)rep.peak_buffered);
    lors_dl_report_free(&rep);
    tl_free_xnd(cli, x);
    free(src);
}

static const lns_test_case tests[] = {
    {"sizes 0/1/bs-1/bs/bs+1 x copies 1-3", test_sizes},
    {"20 MB, 2 copies", test_large},
    {"sub-ranges", test_subranges},
    {"to a pipe; the reader leaves", test_pipe},
    {"a depot SIGKILLed mid-download", test_killed},
    {"a depot SIGSTOPped mid-download", test_stopped},
    {"a reply cut halfway: only the rest is fetched again", test_cut_reply},
    {"a cut reply's bad half: the block whole, its depot blamed", test_cut_reply_bad},
    {"a hung reply's half starts its rescue elsewhere", test_stalled_reply},
    {"a corrupted replica: checksum, other replica, reported", test_corrupt},
    {"one copy, its depot dead: no replica", test_no_replica},
    {"memory bound with a 2-block reorder buffer", test_memory_bound},
};

LNS_TEST_MAIN_WITH("lors download", fleet_start, fleet_stop, tests)
