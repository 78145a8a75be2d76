/* test_lors_e2e.c -- end-to-end transforms against real depots: zlib and AES-256-GCM chains
 * uploaded with two copies and downloaded whole and in sub-ranges across frame boundaries,
 * from memory, files and pipes; compression that really shrinks; a wrong or missing key;
 * a corrupted replica repaired by the checksums, and caught by the GCM tag (or zlib) when
 * there are none; a frame with no replica left, reported in plain bytes; a reader that
 * leaves; an input that ends early leaves nothing on the depots.
 *
 * Three depots live for the whole program.  Every download goes to an unlinked temporary
 * file that is read back and compared byte for byte with the source. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ibp.h"
#include "lns_test.h"
#include "lors.h"
#include "lors_e2e_int.h"
#include "test_depot.h"
#include "test_lors.h"
#include "xnd.h"

#define ND 3
#define FRAME ((int64_t)65536)
#define CKBS 16384

TL_FLEET(ND)
static const char *chains[] = {"zstd", "zlib", "aes", "zlib,aes", "aes,zlib", "aes,zstd"};
#define NCHAINS (int)(sizeof chains / sizeof chains[0])
static unsigned char key[LORS_KEY_BYTES], key2[LORS_KEY_BYTES];

static int suite_init(void)
{
    lns_test_fill(key, sizeof key, 4242);
    lns_test_fill(key2, sizeof key2, 4343);
    return fleet_start();
}

static void uopts(lors_upload_opts_t *o, const char *chain, int copies)
{
    tl_upload_opts(o, ldep, ND, copies, 4);
    o->blocksize = 512 * 1024;
    o->threads = 4;
    o->checksum_blocksize = CKBS;
    o->e2e = chain;
    o->e2e_blocksize = FRAME;
    o->key = key;
}

static void dopts(lors_download_opts_t *o)
{
    lors_download_opts_init(o);
    o->threads = 4;
    o->blocksize = 131072;
    o->timeout_ms = 10000;
    o->key = key;
}

/* Upload src (it must succeed); the report in *rep, or freed when rep is NULL. */
static xnd_t *upload_buf(const lors_upload_opts_t *o, const unsigned char *src, size_t n,
                         lors_report_t *rep)
{
    xnd_t *x = NULL;
    lors_report_t own;
    int rc = lors_upload_buf(o, src, n, "e2e", &x, rep ? rep : &own);
    if (rc != LORS_OK)
        fprintf(stderr, "upload %zu %s: %s\n", n, o->e2e, (rep ? rep : &own)->error);
    if (!rep)
        lors_report_free(&own);
    CU_ASSERT_EQUAL_FATAL(rc, LORS_OK);
    return x;
}

/* Bytes held by the fleet (every test frees what it stored). */
static uint64_t fleet_used(void)
{
    uint64_t used = 0;
    for (int i = 0; i < ND; i++) {
        ibp_depot_status_t st;
        CU_ASSERT_EQUAL(ibp_status(cli, "127.0.0.1", dep[i].port, NULL, NULL, &st), IBP_OK);
        used += st.hard_used;
    }
    return used;
}

/* Download [off, off+len) (len -1: to the end) and compare with src; the report in *keep, or
 * freed when keep is NULL. */
static void check_range(const xnd_t *x, const unsigned char *src, size_t n, int64_t off,
                        int64_t len, lors_dl_report_t *keep)
{
    lors_download_opts_t o;
    lors_dl_report_t rep;
    dopts(&o);
    tl_check_range(&o, x, src, n, off, len, &rep);
    CU_ASSERT_EQUAL(rep.offset, off);
    CU_ASSERT_EQUAL(rep.length, len < 0 ? (int64_t)n - off : len);
    if (keep)
        *keep = rep;
    else
        lors_dl_report_free(&rep);
}

/* Every chain x sizes around the frame, 2 copies, from memory; the exNode also through XML. */
static void test_round_trips(void)
{
    static const size_t sizes[] = {0, 1, FRAME - 1, FRAME, FRAME + 1, 3 * 1000 * 1000 + 7};
    for (int ci = 0; ci < NCHAINS; ci++)
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            size_t n = sizes[si];
            unsigned char *src = tl_data(n, 100 + si + 10 * (size_t)ci);
            lors_upload_opts_t o;
            lors_report_t rep;
            uopts(&o, chains[ci], 2);
            xnd_t *x = upload_buf(&o, src, n, &rep);
            int64_t frames = (int64_t)n / FRAME + ((int64_t)n % FRAME != 0);
            CU_ASSERT_EQUAL(rep.plain_size, (int64_t)n);
            CU_ASSERT_EQUAL(rep.bytes_read, (int64_t)n);
            CU_ASSERT_EQUAL(rep.size, xnd_size(x));
            CU_ASSERT_EQUAL(rep.mappings, (int)x->nmaps);
            if (strcmp(chains[ci], "aes") == 0)
                CU_ASSERT_EQUAL(rep.size, (int64_t)n + LORS_E2E_TAG * frames);
            lors_report_free(&rep);

            lors_e2e_info_t info;
            char err[512];
            CU_ASSERT_EQUAL(lors_e2e_info(x, &info, err, sizeof err), LORS_OK);
            CU_ASSERT(info.present);
            CU_ASSERT_STRING_EQUAL(info.chain, chains[ci]);
            CU_ASSERT_EQUAL(info.plain_size, (int64_t)n);
            CU_ASSERT_EQUAL(info.frame_size, FRAME);
            CU_ASSERT_EQUAL(info.frames, frames);
            CU_ASSERT_EQUAL(xnd_validate(x, 0, err, sizeof err), XND_OK);

            char *xml = NULL;
            size_t xl;
            xnd_t *y = NULL;
            CU_ASSERT_EQUAL(xnd_serialize(x, &xml, &xl, err, sizeof err), XND_OK);
            CU_ASSERT(xml && strstr(xml, LORS_E2E_META) != NULL);
            CU_ASSERT_EQUAL(xnd_parse_buf(xml, xl, &y, err, sizeof err), XND_OK);
            CU_ASSERT_PTR_NOT_NULL_FATAL(y);
            check_range(y, src, n, 0, -1, NULL);
            free(xml);
            xnd_free(y);
            tl_free_xnd(cli, x);
            free(src);
        }
}

/* From a pipe of unknown length and from a file of known length. */
static void test_fd_inputs(void)
{
    size_t n = 2 * 1000 * 1000 + 333;
    unsigned char *src = tl_data(n, 21);
    lors_upload_opts_t o;
    lors_report_t rep;
    xnd_t *x = NULL;
    lns_test_feed feed;
    uopts(&o, "zlib,aes", 2);
    CU_ASSERT_FATAL(lns_test_feed_start(&feed, src, n, 10000) == 0);
    int rc = lors_upload_fd(&o, feed.rfd, -1, "pipe", &x, &rep);
    lns_test_feed_end(&feed);
    CU_ASSERT_EQUAL_FATAL(rc, LORS_OK);
    CU_ASSERT_EQUAL(rep.bytes_read, (int64_t)n);
    CU_ASSERT_EQUAL(rep.plain_size, (int64_t)n);
    lors_report_free(&rep);
    check_range(x, src, n, 0, -1, NULL);
    tl_free_xnd(cli, x);

    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/in.XXXXXX", lns_test_tmpdir());
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    unlink(path);
    CU_ASSERT_EQUAL(write(fd, src, n), (ssize_t)n);
    lseek(fd, 1000, SEEK_SET); /* from the current position, as the contract says */
    uopts(&o, "aes,zlib", 2);
    CU_ASSERT_EQUAL(lors_upload_fd(&o, fd, (int64_t)n - 2000, "file", &x, &rep), LORS_OK);
    CU_ASSERT_EQUAL(rep.plain_size, (int64_t)n - 2000);
    lors_report_free(&rep);
    check_range(x, src + 1000, n - 2000, 0, -1, NULL);
    tl_free_xnd(cli, x);

    /* the input ends before its length: an error, no exNode, nothing left on the depots */
    uint64_t before = fleet_used();
    lseek(fd, 0, SEEK_SET);
    x = (xnd_t *)1;
    CU_ASSERT_EQUAL(lors_upload_fd(&o, fd, (int64_t)n + 1, "file", &x, &rep), LORS_E_SHORT);
    CU_ASSERT_PTR_NULL(x);
    CU_ASSERT(strstr(rep.error, "ended") != NULL);
    CU_ASSERT_EQUAL(fleet_used(), before);
    lors_report_free(&rep);
    close(fd);
    free(src);
}

/* Sub-ranges inside, across and at the ends of frames; only the frames needed are fetched. */
static void test_subranges(void)
{
    size_t n = 3 * 1000 * 1000 + 5;
    unsigned char *src = tl_data(n, 22);
    for (int ci = 0; ci < NCHAINS; ci++) {
        lors_upload_opts_t o;
        lors_dl_report_t dr;
        uopts(&o, chains[ci], 2);
        xnd_t *x = upload_buf(&o, src, n, NULL);
        check_range(x, src, n, FRAME - 3, 7, &dr); /* a few bytes either side of a boundary */
        /* two frames' blocks, perhaps twice (redundant fetches): far from the 3 MB */
        CU_ASSERT(dr.bytes_fetched <= 6 * FRAME);
        CU_ASSERT(dr.bytes_fetched > 0);
        lors_dl_report_free(&dr);
        check_range(x, src, n, 12345, 1000, NULL);          /* inside one frame */
        check_range(x, src, n, 2 * FRAME - 1, FRAME + 2, NULL); /* over a whole frame */
        check_range(x, src, n, 5 * FRAME, FRAME, NULL);    /* exactly one frame */
        check_range(x, src, n, 1, (int64_t)n - 2, NULL);
        check_range(x, src, n, (int64_t)n - 5, 5, NULL);
        check_range(x, src, n, (int64_t)n, 0, NULL);
        check_range(x, src, n, 7 * FRAME + 1, -1, NULL);

        lors_download_opts_t d;
        dopts(&d);
        d.offset = (int64_t)n - 1;
        d.length = 2; /* plain bytes: one past the end, though the stored file is longer */
        CU_ASSERT_EQUAL(lors_download_fd(&d, x, 1, &dr), LORS_E_INVAL);
        CU_ASSERT(strstr(dr.error, "range") != NULL);
        lors_dl_report_free(&dr);
        tl_free_xnd(cli, x);
    }
    free(src);
}

static void test_compressible(void)
{
    size_t n = 4 * 1000 * 1000;
    static const char pat[] = "Logistical networking: storage in the network. ";
    unsigned char *src = malloc(n);
    for (size_t i = 0; i < n; i++)
        src[i] = (unsigned char)(pat[i % (sizeof pat - 1)] + (i / 4096 % 3));
    lors_upload_opts_t o;
    lors_report_t rep;
    uopts(&o, "zlib,aes", 2);
    xnd_t *x = upload_buf(&o, src, n, &rep);
    CU_ASSERT(rep.size < (int64_t)n / 20);
    CU_ASSERT_EQUAL(rep.plain_size, (int64_t)n);
    if (getenv("LNS_TEST_VERBOSE"))
        fprintf(stderr, "zlib,aes: %zu plain -> %lld stored\n", n, (long long)rep.size);
    lors_report_free(&rep);
    check_range(x, src, n, 0, -1, NULL);
    check_range(x, src, n, 999999, 1000001, NULL);
    tl_free_xnd(cli, x);

    /* encrypted before compressed: nothing to gain, the chain order matters */
    uopts(&o, "aes,zlib", 1);
    x = upload_buf(&o, src, n, &rep);
    CU_ASSERT(rep.size > (int64_t)n);
    lors_report_free(&rep);
    check_range(x, src, n, 0, -1, NULL);
    tl_free_xnd(cli, x);
    free(src);
}

static void test_keys(void)
{
    size_t n = 500000;
    unsigned char *src = tl_data(n, 23);
    lors_upload_opts_t o;
    lors_report_t rep;
    tl_dl_t dl;
    xnd_t *x = (xnd_t *)1;

    /* aes without a key: refused before anything is stored */
    uopts(&o, "zlib,aes", 2);
    o.key = NULL;
    CU_ASSERT_EQUAL(lors_upload_buf(&o, src, n, "k", &x, &rep), LORS_E_KEY);
    CU_ASSERT_PTR_NULL(x);
    CU_ASSERT(strstr(rep.error, "key") != NULL);
    lors_report_free(&rep);
    /* a chain that does not parse */
    o.e2e = "zlib,rot13";
    CU_ASSERT_EQUAL(lors_upload_buf(&o, src, n, "k", &x, &rep), LORS_E_INVAL);
    CU_ASSERT(strstr(rep.error, "rot13") != NULL);
    lors_report_free(&rep);
    o.e2e = "zlib";
    o.e2e_blocksize = -1;
    CU_ASSERT_EQUAL(lors_upload_buf(&o, src, n, "k", &x, &rep), LORS_E_INVAL);
    lors_report_free(&rep);
    /* levels out of the compressor's range, or with no compressor */
    static const struct { const char *chain; int level; const char *says; } lv[] = {
        {"zstd", 20, "zstd takes 1 to 19"}, {"zlib", 10, "zlib takes 1 to 9"},
        {"zstd", -1, "zstd takes 1 to 19"}, {"aes", 3, "has no compressor"}};
    for (size_t i = 0; i < sizeof lv / sizeof lv[0]; i++) {
        uopts(&o, lv[i].chain, 1);
        o.e2e_level = lv[i].level;
        CU_ASSERT_EQUAL(lors_upload_buf(&o, src, n, "k", &x, &rep), LORS_E_INVAL);
        CU_ASSERT(strstr(rep.error, lv[i].says) != NULL);
        lors_report_free(&rep);
    }

    uopts(&o, "aes", 2);
    x = upload_buf(&o, src, n, NULL);
    dopts(&dl.o);
    dl.o.key = key2;
    CU_ASSERT_EQUAL(tl_dl(&dl, x), LORS_E_KEY);
    CU_ASSERT(strstr(dl.rep.error,
                     "the key does not match the one this file was encrypted with") != NULL);
    CU_ASSERT_EQUAL(dl.outlen, 0);
    CU_ASSERT_EQUAL(dl.rep.bytes_written, 0);
    tl_dl_end(&dl);
    dl.o.key = NULL;
    CU_ASSERT_EQUAL(tl_dl(&dl, x), LORS_E_KEY);
    CU_ASSERT_EQUAL(dl.outlen, 0);
    CU_ASSERT(strstr(dl.rep.error, "no key") != NULL);
    tl_dl_end(&dl);
    /* a zlib-only file needs no key */
    tl_free_xnd(cli, x);
    uopts(&o, "zlib", 1);
    o.key = NULL;
    x = upload_buf(&o, src, n, NULL);
    CU_ASSERT_EQUAL(tl_dl(&dl, x), LORS_OK);
    CU_ASSERT(dl.outlen == n && memcmp(dl.out, src, n) == 0);
    tl_dl_end(&dl);
    tl_free_xnd(cli, x);
    free(src);
}

/* Flip a byte of stored byte `at` in every mapping that holds it (all: every replica). */
static int flip_stored(const xnd_t *x, int64_t at, int all)
{
    int done = 0;
    for (size_t i = 0; i < x->nmaps && (all || !done); i++) {
        const xnd_mapping_t *m = x->maps[i];
        if (at < m->exnode_offset || at >= m->exnode_offset + m->logical_length)
            continue;
        uint64_t a = (uint64_t)(at - m->exnode_offset + m->alloc_offset);
        unsigned char b;
        CU_ASSERT_EQUAL(ibp_load(cli, m->cap[XND_READ], a, 1, &b), IBP_OK);
        b ^= 0x10;
        CU_ASSERT_EQUAL(ibp_write(cli, m->cap[XND_WRITE], a, &b, 1, NULL), IBP_OK);
        done++;
    }
    return done;
}

/* The stored offset of the middle of frame f. */
static int64_t frame_middle(const xnd_t *x, int64_t f)
{
    lors__e2e_desc_t d;
    int present = 0;
    char err[256];
    int64_t off = 0, len = 0;
    CU_ASSERT_EQUAL_FATAL(lors__e2e_desc_read(x, &d, &present, err, sizeof err), LORS_OK);
    lors__e2e_frame_loc(&d, f, &off, &len);
    lors__e2e_desc_free(&d);
    return off + len / 2;
}

/* src uploaded with the chain in copies at the compression level (0: the default), no
 * checksums, and a byte in the middle of frame f flipped in every copy. */
static xnd_t *upload_damaged(const unsigned char *src, size_t n, const char *chain, int copies,
                             int level, int64_t f)
{
    lors_upload_opts_t o;
    uopts(&o, chain, copies);
    o.checksum = "none";
    o.e2e_level = level;
    xnd_t *x = upload_buf(&o, src, n, NULL);
    CU_ASSERT_EQUAL(flip_stored(x, frame_middle(x, f), 1), copies);
    return x;
}

static void test_corruption(void)
{
    size_t n = 1500000;
    unsigned char *src = tl_data(n, 24);
    lors_upload_opts_t o;
    tl_dl_t dl;

    /* copy 0 damaged in every checksum block, checksums on: whatever is fetched from it fails
     * its digest and comes from copy 1; the bad mappings are named */
    uopts(&o, "zlib,aes", 2);
    xnd_t *x = upload_buf(&o, src, n, NULL);
    for (size_t i = 0; i < x->nmaps; i += 2) /* fragment order, then copy order */
        for (int64_t a = x->maps[i]->exnode_offset + 100;
             a < x->maps[i]->exnode_offset + x->maps[i]->logical_length; a += CKBS)
            CU_ASSERT_EQUAL(flip_stored(x, a, 0), 1);
    dopts(&dl.o);
    CU_ASSERT_EQUAL(tl_dl(&dl, x), LORS_OK);
    CU_ASSERT(dl.outlen == n && memcmp(dl.out, src, n) == 0);
    CU_ASSERT(dl.rep.nbad >= 1);
    for (size_t i = 0; i < dl.rep.nbad; i++)
        CU_ASSERT(dl.rep.bad_mappings[i] % 2 == 0);
    tl_dl_end(&dl);
    tl_free_xnd(cli, x);

    /* checksums off and every replica damaged: the GCM tag catches it, names the frame, and
     * what was written is exactly the frames before it */
    x = upload_damaged(src, n, "zlib,aes", 2, 0, 5);
    CU_ASSERT_EQUAL(tl_dl(&dl, x), LORS_E_E2E);
    CU_ASSERT(strstr(dl.rep.error, "frame 5 ") != NULL);
    CU_ASSERT(strstr(dl.rep.error, "authentication failed") != NULL);
    CU_ASSERT(strstr(dl.rep.error, "327680-393215") != NULL); /* its plain bytes */
    CU_ASSERT_EQUAL(dl.outlen, 5 * FRAME);
    CU_ASSERT_EQUAL(dl.rep.bytes_written, 5 * FRAME);
    CU_ASSERT(memcmp(dl.out, src, dl.outlen) == 0);
    tl_dl_end(&dl);
    /* a range before the damage still downloads */
    check_range(x, src, n, 0, 5 * FRAME, NULL);
    tl_free_xnd(cli, x);

    /* a compressor alone, no checksums: its own check (Adler-32, XXH64) catches it */
    for (int z = 0; z < 2; z++) {
        x = upload_damaged(src, n, z ? "zstd" : "zlib", 1, z ? 19 : 0, 2);
        CU_ASSERT_EQUAL(tl_dl(&dl, x), LORS_E_E2E);
        CU_ASSERT(strstr(dl.rep.error, "frame 2 ") != NULL &&
                  strstr(dl.rep.error, z ? "zstd" : "zlib") != NULL);
        CU_ASSERT_EQUAL(dl.outlen, 2 * FRAME);
        tl_dl_end(&dl);
        tl_free_xnd(cli, x);
    }
    free(src);
}

/* A stored fragment with no mapping left: LORS_E_NO_REPLICA in plain bytes, a valid prefix. */
static void test_no_replica(void)
{
    size_t n = 3 * 1000 * 1000;
    unsigned char *src = tl_data(n, 25);
    lors_upload_opts_t o;
    tl_dl_t dl;
    uopts(&o, "aes", 1);
    xnd_t *x = upload_buf(&o, src, n, NULL);
    CU_ASSERT_FATAL(x->nmaps >= 3);
    xnd_mapping_t *gone = xnd_mapping_copy(x->maps[2]);
    int64_t s0 = gone->exnode_offset, s1 = s0 + gone->logical_length;
    CU_ASSERT_EQUAL(xnd_remove(x, 2), XND_OK);
    dopts(&dl.o);
    CU_ASSERT_EQUAL(tl_dl(&dl, x), LORS_E_NO_REPLICA);
    /* the plain bytes of the frames that had stored bytes in the missing piece */
    int64_t fa = s0 / (FRAME + 16), fb = (s1 - 1) / (FRAME + 16);
    CU_ASSERT(dl.rep.missing_off >= fa * FRAME && dl.rep.missing_off < (fb + 1) * FRAME);
    CU_ASSERT(dl.rep.missing_off + dl.rep.missing_len <= (fb + 1) * FRAME);
    CU_ASSERT(dl.rep.missing_len > 0);
    CU_ASSERT(strstr(dl.rep.error, "plain bytes") != NULL);
    CU_ASSERT(dl.outlen == (size_t)dl.rep.bytes_written &&
              (int64_t)dl.outlen <= dl.rep.missing_off);
    CU_ASSERT(memcmp(dl.out, src, dl.outlen) == 0);
    tl_dl_end(&dl);
    ibp_decr(cli, gone->cap[XND_MANAGE], IBP_READCAP);
    xnd_mapping_free(gone);
    tl_free_xnd(cli, x);
    free(src);
}

typedef struct drain {
    int fd;
    size_t n, stop_after;
} drain_t;

static void *drain_pipe(void *arg)
{
    drain_t *dr = arg;
    char buf[65536];
    while (dr->n < dr->stop_after) {
        ssize_t r = read(dr->fd, buf, sizeof buf);
        if (r <= 0)
            break;
        dr->n += (size_t)r;
    }
    close(dr->fd);
    return NULL;
}

/* The reader goes away after 300 KB: LORS_E_WRITE, no SIGPIPE, and nothing left running. */
static void test_reader_leaves(void)
{
    size_t n = 2 * 1000 * 1000;
    unsigned char *src = tl_data(n, 26);
    lors_upload_opts_t o;
    uopts(&o, "zlib,aes", 2);
    xnd_t *x = upload_buf(&o, src, n, NULL);
    int p[2];
    CU_ASSERT_FATAL(pipe(p) == 0);
    drain_t dr = {p[0], 0, 300000};
    pthread_t t;
    pthread_create(&t, NULL, drain_pipe, &dr);
    lors_download_opts_t d;
    lors_dl_report_t r;
    dopts(&d);
    CU_ASSERT_EQUAL(lors_download_fd(&d, x, p[1], &r), LORS_E_WRITE);
    CU_ASSERT(strstr(r.error, "Broken pipe") != NULL);
    CU_ASSERT(r.bytes_written < (int64_t)n);
    close(p[1]);
    pthread_join(t, NULL);
    lors_dl_report_free(&r);
    tl_free_xnd(cli, x);
    free(src);
}

/* Every mapping of frames carries the frame size as its e2e_blocksize and a function the
 * original tools do not know, so that they refuse the file instead of writing its frames out
 * as data: lns_checksum, or without checksums the lns_e2e mark; lns reads both as the bytes
 * as they are.  (make interop gives such files to the original lors_download: cells 6.lns-*.) */
static void test_marked_for_originals(void)
{
    size_t n = 3 * FRAME + 5;
    unsigned char *src = tl_data(n, 77);
    for (int ck = 0; ck < 2; ck++) {
        lors_upload_opts_t o;
        uopts(&o, "zlib,aes", 2);
        if (!ck)
            o.checksum = "none";
        xnd_t *x = upload_buf(&o, src, n, NULL);
        CU_ASSERT(x->nmaps > 0);
        for (size_t i = 0; i < x->nmaps; i++) {
            lors_func_info_t fi;
            CU_ASSERT_EQUAL(x->maps[i]->e2e_blocksize, FRAME);
            CU_ASSERT_EQUAL(lors_func_info(x, i, &fi), LORS_OK);
            CU_ASSERT_EQUAL(fi.kind, ck ? LORS_FUNC_CHECKSUM : LORS_FUNC_NONE);
            CU_ASSERT_STRING_EQUAL(fi.name, ck ? LORS_CHECKSUM_FUNC : "lns_e2e");
        }
        check_range(x, src, n, 0, -1, NULL);
        check_range(x, src, n, FRAME - 3, FRAME + 7, NULL);
        /* the mark means nothing in a file without frames: there it is refused */
        xnd_meta_remove(&x->meta, LORS_E2E_META);
        lors_func_info_t fi;
        CU_ASSERT_EQUAL(lors_func_info(x, 0, &fi), LORS_OK);
        CU_ASSERT_EQUAL(fi.kind, ck ? LORS_FUNC_CHECKSUM : LORS_FUNC_UNKNOWN);
        tl_free_xnd(cli, x);
    }
    free(src);
}

static const lns_test_case tests[] = {
    {"round trips: 4 chains x 6 sizes, 2 copies, via XML", test_round_trips},
    {"mappings of frames marked for the original tools", test_marked_for_originals},
    {"from a pipe and a file; an input that ends early", test_fd_inputs},
    {"sub-ranges across frames", test_subranges},
    {"compressible data shrinks", test_compressible},
    {"keys: none, wrong, not needed", test_keys},
    {"corruption: checksum repairs, tag and zlib catch", test_corruption},
    {"a frame with no replica", test_no_replica},
    {"the reader leaves", test_reader_leaves},
};

LNS_TEST_MAIN_WITH("lors e2e", suite_init, fleet_stop, tests)
