/* test_lors_large.c -- a 100 MB random file through liblors with several layouts.
 *
 * The file lives on disk; each layout uploads it from a descriptor (known length, and once as
 * a stream of unknown length), downloads it to another file and compares SHA-256 digests of
 * the two, then frees every allocation with lors_trim (force, free) and checks that the
 * depots gave the space back, so that the layouts do not pile up on the depots. */
#include <fcntl.h>
#include <openssl/evp.h>
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
#define SIZE ((size_t)100 * 1000 * 1000 + 4093) /* not a multiple of anything */

static test_depot_t dep[ND];
static lors_depot_t ldep[ND];
static ibp_client_t *cli;
static char src_path[4096];
static unsigned char src_digest[32];

/* SHA-256 of a whole file into md; 0 or -1. */
static int sha256_file(const char *path, unsigned char md[32])
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    unsigned char buf[1 << 16];
    ssize_t r;
    EVP_DigestInit_ex(c, EVP_sha256(), NULL);
    while ((r = read(fd, buf, sizeof buf)) > 0)
        EVP_DigestUpdate(c, buf, (size_t)r);
    EVP_DigestFinal_ex(c, md, NULL);
    EVP_MD_CTX_free(c);
    close(fd);
    return r < 0 ? -1 : 0;
}

static int suite_init(void)
{
    if (tl_fleet_start(dep, ldep, ND, &cli) != 0)
        return -1;
    snprintf(src_path, sizeof src_path, "%s/src.bin", lns_test_tmpdir());
    int fd = open(src_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return -1;
    unsigned char *buf = malloc(1 << 20);
    size_t done = 0;
    for (uint64_t seed = 1; done < SIZE; seed++) {
        size_t n = SIZE - done < (1u << 20) ? SIZE - done : (1u << 20);
        lns_test_fill(buf, n, seed);
        if (write(fd, buf, n) != (ssize_t)n)
            break;
        done += n;
    }
    free(buf);
    close(fd);
    return done == SIZE && sha256_file(src_path, src_digest) == 0 ? 0 : -1;
}

static int suite_clean(void)
{
    return tl_fleet_stop(dep, ND, cli);
}

/* Bytes the fleet's default resources hold now. */
static uint64_t fleet_used(void)
{
    uint64_t used = 0;
    for (int i = 0; i < ND; i++) {
        ibp_depot_status_t st;
        int rc = ibp_status(cli, ldep[i].host, ldep[i].port, ldep[i].rid, NULL, &st);
        CU_ASSERT_EQUAL(rc, IBP_OK);
        if (rc == IBP_OK)
            used += st.hard_used + st.soft_used;
    }
    return used;
}

/* Upload src with copies x frags (length -1: as a stream of unknown length), download it,
 * compare digests, then free it all with lors_trim. */
static void round_trip(int copies, int frags, int64_t blocksize, int stream)
{
    lors_upload_opts_t uo;
    lors_report_t urep;
    xnd_t *x = NULL;
    uint64_t used0 = fleet_used();
    uint64_t used_during;

    tl_upload_opts(&uo, ldep, ND, copies, frags);
    uo.blocksize = blocksize;
    uo.timeout_s = 30;
    int in = open(src_path, O_RDONLY);
    CU_ASSERT_FATAL(in >= 0);
    int rc = lors_upload_fd(&uo, in, stream ? -1 : (int64_t)SIZE, "large", &x, &urep);
    close(in);
    if (rc != LORS_OK)
        fprintf(stderr, "upload c=%d F=%d: %s\n", copies, frags, urep.error);
    CU_ASSERT_EQUAL_FATAL(rc, LORS_OK);
    CU_ASSERT_EQUAL(urep.bytes_read, (int64_t)SIZE);
    CU_ASSERT_EQUAL(urep.bytes_stored, (int64_t)SIZE * copies);
    CU_ASSERT_EQUAL((int)x->nmaps, urep.fragments * copies);
    if (!stream)
        CU_ASSERT_EQUAL(urep.fragments, frags);
    lors_report_free(&urep);

    char out_path[4096];
    snprintf(out_path, sizeof out_path, "%s/out.bin", lns_test_tmpdir());
    int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CU_ASSERT_FATAL(out >= 0);
    lors_download_opts_t dopt;
    lors_dl_report_t drep;
    lors_download_opts_init(&dopt);
    rc = lors_download_fd(&dopt, x, out, &drep);
    close(out);
    if (rc != LORS_OK)
        fprintf(stderr, "download c=%d F=%d: %s\n", copies, frags, drep.error);
    CU_ASSERT_EQUAL(rc, LORS_OK);
    CU_ASSERT_EQUAL(drep.bytes_written, (int64_t)SIZE);
    CU_ASSERT_EQUAL(drep.nbad, 0);
    lors_dl_report_free(&drep);
    unsigned char md[32];
    CU_ASSERT_EQUAL(sha256_file(out_path, md), 0);
    CU_ASSERT(memcmp(md, src_digest, sizeof md) == 0);
    unlink(out_path);

    used_during = fleet_used();
    CU_ASSERT(used_during >= used0 + (uint64_t)SIZE * (uint64_t)copies);

    lors_trim_opts_t to;
    lors_trim_report_t trep;
    lors_trim_opts_init(&to);
    to.dead = 0;
    to.free_allocs = 1;
    to.force = 1;
    int *all = malloc(x->nmaps * sizeof *all);
    for (size_t i = 0; i < x->nmaps; i++)
        all[i] = (int)i;
    to.mappings = all;
    to.nmappings = x->nmaps;
    size_t n = x->nmaps;
    CU_ASSERT_EQUAL(lors_trim(&to, x, &trep), LORS_OK);
    CU_ASSERT_EQUAL(trep.nremoved, n);
    CU_ASSERT_EQUAL(trep.nunfreed, 0);
    CU_ASSERT_EQUAL(x->nmaps, 0);
    lors_trim_report_free(&trep);
    free(all);
    xnd_free(x);
    CU_ASSERT_EQUAL(fleet_used(), used0);
}

static void test_one_copy_one_fragment(void)
{
    round_trip(1, 1, LORS_DEFAULT_BLOCKSIZE, 0);
}

static void test_two_copies_four_fragments(void)
{
    round_trip(2, 4, LORS_DEFAULT_BLOCKSIZE, 0);
}

static void test_three_copies_seven_fragments(void)
{
    round_trip(3, 7, LORS_DEFAULT_BLOCKSIZE, 0);
}

static void test_stream_odd_blocks(void)
{
    round_trip(2, 4, 3 * 1000 * 1000 + 1, 1); /* unknown length: 34 fragments of an odd size */
}

static const lns_test_case tests[] = {
    {"100 MB, 1 copy, 1 fragment", test_one_copy_one_fragment},
    {"100 MB, 2 copies, 4 fragments", test_two_copies_four_fragments},
    {"100 MB, 3 copies, 7 fragments", test_three_copies_seven_fragments},
    {"100 MB as a stream, 2 copies, odd block size", test_stream_odd_blocks},
};

LNS_TEST_MAIN_WITH("lors_large", suite_init, suite_clean, tests)
