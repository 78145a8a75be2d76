/* test_netlog.c -- lors_download --netlog against real depots: every block's life is in the
 * logs, client side and depot side, and lors_lifelines pairs them (docs/netlogger.md).
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lns_test.h"
#include "lors_lifelines.h"
#include "test_lors.h"
#include "xnd.h"

#define ND 3

static void test_netlog_download(void)
{
    test_depot_t dep[ND];
    lors_depot_t ld[ND];
    ibp_client_t *cli = NULL;
    CU_ASSERT_EQUAL_FATAL(tl_fleet_start(dep, ld, ND, &cli), 0);

    size_t n = 3 << 20;
    unsigned char *src = malloc(n);
    lns_test_fill(src, n, 77);
    lors_upload_opts_t uo;
    lors_report_t rep;
    xnd_t *x = NULL;
    lors_upload_opts_init(&uo);
    uo.depots = ld;
    uo.ndepots = ND;
    uo.copies = 2;
    uo.fragments = 6;
    uo.duration_s = 600;
    uo.timeout_s = 20;
    uo.checksum_blocksize = 256 << 10;
    int rc = lors_upload_buf(&uo, src, n, "nl", &x, &rep);
    lors_report_free(&rep);
    CU_ASSERT_EQUAL_FATAL(rc, LORS_OK);
    char xpath[600], out[600], nlog[600], cmd[6 * 4096 + 1024], err[256];
    snprintf(xpath, sizeof xpath, "%s/nl.xnd", lns_test_tmpdir());
    snprintf(out, sizeof out, "%s/nl.out", lns_test_tmpdir());
    snprintf(nlog, sizeof nlog, "%s/client.netlog", lns_test_tmpdir());
    CU_ASSERT_EQUAL_FATAL(xnd_write_file(x, xpath, err, sizeof err), 0);

    snprintf(cmd, sizeof cmd,
             "%s/lors_download --no-rc --no-report --quiet -bs 256K -t 6 --netlog %s -o %s %s",
             lns_test_bindir(), nlog, out, xpath);
    CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
    FILE *fp = fopen(out, "rb");
    unsigned char *got = malloc(n + 1);
    size_t gn = fp ? fread(got, 1, n + 1, fp) : 0;
    if (fp)
        fclose(fp);
    CU_ASSERT_EQUAL(gn, n);
    CU_ASSERT(memcmp(got, src, n) == 0);
    usleep(300 * 1000); /* depots write their events within 50 ms */

    lors_ll_t ll;
    lors_ll_init(&ll);
    CU_ASSERT_EQUAL(lors_ll_add_file(&ll, nlog, err, sizeof err), 0);
    for (int i = 0; i < ND; i++)
        CU_ASSERT_EQUAL(lors_ll_add_file(&ll, dep[i].events, err, sizeof err), 0);
    CU_ASSERT_EQUAL_FATAL(lors_ll_analyze(&ll), 0);
    CU_ASSERT_EQUAL(ll.bad, 0);
    CU_ASSERT_EQUAL(ll.released, 12); /* 3 MiB in 256 KiB blocks */
    CU_ASSERT_EQUAL(ll.complete, ll.released);
    uint64_t bytes = 0;
    for (size_t i = 0; i < ll.nd; i++)
        bytes += ll.d[i].bytes;
    CU_ASSERT_EQUAL(bytes, n);
    /* every fetch that reached its depot has the depot's lines, every winner all points */
    for (size_t i = 0; i < ll.nf; i++) {
        const lors_ll_fetch_t *f = &ll.f[i];
        CU_ASSERT(f->t[LORS_LL_REQ_SENT] >= 0);
        if (f->committed) {
            CU_ASSERT(f->t[LORS_LL_DEPOT_RECV] >= f->t[LORS_LL_REQ_SENT]);
            CU_ASSERT(f->t[LORS_LL_SEND_END] >= f->t[LORS_LL_READ_START]);
            CU_ASSERT(f->t[LORS_LL_COMMIT] >= f->t[LORS_LL_RECV_END]);
            CU_ASSERT(f->t[LORS_LL_RELEASE] >= f->t[LORS_LL_COMMIT]);
        }
    }
    char png[600];
    snprintf(png, sizeof png, "%s/nl.png", lns_test_tmpdir());
    snprintf(cmd, sizeof cmd, "%s/lors_lifelines -o %s %s %s %s %s > %s/table.txt",
             lns_test_bindir(), png, nlog, dep[0].events, dep[1].events, dep[2].events,
             lns_test_tmpdir());
    CU_ASSERT_EQUAL(system(cmd), 0);
    CU_ASSERT_EQUAL(access(png, R_OK), 0);
    lors_ll_free(&ll);

    free(got);
    free(src);
    xnd_free(x);
    CU_ASSERT_EQUAL(tl_fleet_stop(dep, ND, cli), 0);
}

void lns_test_register(void)
{
    CU_pSuite s = CU_add_suite("netlog", NULL, NULL);
    CU_add_test(s, "lors_download --netlog: every block's client and depot events",
                test_netlog_download);
}
