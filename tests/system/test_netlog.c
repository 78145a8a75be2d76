/* test_netlog.c -- lors_download --netlog against real depots: every block's life is in the
 * logs, client side and depot side, and lors_lifelines pairs them (docs/netlogger.md).
 *
 * The blocks all have one size, so the per-depot fit must come from LORS_REPLY: one per fetch
 * whose bytes all arrived, between its REQ_SENT and RECV_END, counted in the raw log (the
 * reader would hide a duplicate by keeping the last).
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lns_test.h"
#include "lifelines.h"
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
    tl_upload_opts(&uo, ld, ND, 2, 6);
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
    /* the depots' events are all on disk once they have stopped (SIGTERM writes them out),
     * however late a busy machine runs their writer threads */
    for (int i = 0; i < ND; i++)
        lns_test_server_stop(&dep[i].srv);

    /* per fetch id, from the raw client log: REPLY and RECV_END lines */
    struct { char id[64]; int replies, ends; } seen[256];
    int nseen = 0, nreply = 0;
    fp = fopen(nlog, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    char line[2048];
    while (fgets(line, sizeof line, fp)) {
        int reply = strncmp(line, "LORS_REPLY ", 11) == 0;
        int end = strncmp(line, "LORS_RECV_END ", 14) == 0;
        const char *id = strstr(line, " fetch=");
        if ((!reply && !end) || !id)
            continue;
        char fid[64];
        CU_ASSERT_FATAL(sscanf(id + 7, "%63s", fid) == 1);
        int k = 0;
        while (k < nseen && strcmp(seen[k].id, fid) != 0)
            k++;
        if (k == nseen) {
            CU_ASSERT_FATAL(nseen < 256);
            snprintf(seen[nseen].id, sizeof seen[nseen].id, "%s", fid);
            seen[nseen].replies = seen[nseen].ends = 0;
            nseen++;
        }
        seen[k].replies += reply;
        seen[k].ends += end;
        nreply += reply;
    }
    fclose(fp);
    CU_ASSERT(nreply >= 12);
    for (int k = 0; k < nseen; k++) {
        CU_ASSERT(seen[k].replies <= 1);
        if (seen[k].ends)
            CU_ASSERT_EQUAL(seen[k].replies, 1);
    }

    lors_ll_t ll;
    lors_ll_init(&ll);
    CU_ASSERT_EQUAL(lors_ll_add_file(&ll, nlog, err, sizeof err), 0);
    for (int i = 0; i < ND; i++)
        CU_ASSERT_EQUAL(lors_ll_add_file(&ll, dep[i].events, err, sizeof err), 0);
    CU_ASSERT_EQUAL_FATAL(lors_ll_analyze(&ll), 0);
    CU_ASSERT_EQUAL(ll.bad, 0);
    CU_ASSERT_EQUAL(ll.released, 12); /* 3 MiB in 256 KiB blocks */
    CU_ASSERT_EQUAL(ll.replies, (size_t)nreply);
    CU_ASSERT_EQUAL(ll.complete, ll.released); /* REPLY included: the log has them */
    uint64_t bytes = 0;
    for (size_t i = 0; i < ll.nd; i++)
        bytes += ll.d[i].bytes;
    CU_ASSERT_EQUAL(bytes, n);
    /* every fetch that reached its depot has the depot's lines, every winner all points */
    for (size_t i = 0; i < ll.nf; i++) {
        const lors_ll_fetch_t *f = &ll.f[i];
        CU_ASSERT(f->t[LORS_LL_REQ_SENT] >= 0);
        if (f->t[LORS_LL_REPLY] >= 0)
            CU_ASSERT(f->t[LORS_LL_REPLY] >= f->t[LORS_LL_REQ_SENT]);
        if (f->t[LORS_LL_RECV_END] >= 0) {
            CU_ASSERT(f->t[LORS_LL_REPLY] >= 0);
            CU_ASSERT(f->t[LORS_LL_RECV_END] >= f->t[LORS_LL_REPLY]);
        }
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
    /* every depot that served a block: a fit from REPLY, with numbers */
    int fitted = 0;
    for (size_t i = 0; i < ll.nd; i++) {
        const lors_ll_depot_t *d = &ll.d[i];
        if (!d->blocks)
            continue;
        CU_ASSERT_EQUAL(d->fit, LORS_LL_FIT_REPLY);
        CU_ASSERT(d->fit_n >= 1);
        CU_ASSERT(d->latency_s > 0 && d->latency_s < 5);
        CU_ASSERT(d->fit_mbps > 0);
        fitted++;
    }
    CU_ASSERT(fitted >= 1);
    char tpath[600];
    snprintf(tpath, sizeof tpath, "%s/table.txt", lns_test_tmpdir());
    fp = fopen(tpath, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    int rows = 0;
    while (fgets(line, sizeof line, fp)) {
        char name[128], fit[16], lat[32], mb[32], *e1, *e2;
        int blocks;
        if (sscanf(line, "%127s %d %*s %*s %*s %*s %*s %*s %*s %15s %31s %31s", name, &blocks,
                   fit, lat, mb) != 5 || strncmp(name, "127.0.0.1:", 10) != 0 || blocks == 0)
            continue;
        rows++;
        double l = strtod(lat, &e1), t = strtod(mb, &e2);
        CU_ASSERT_STRING_EQUAL(fit, "reply");
        CU_ASSERT(*e1 == 0 && *e2 == 0 && l > 0 && t > 0);
    }
    fclose(fp);
    CU_ASSERT_EQUAL(rows, fitted);
    lors_ll_free(&ll);

    free(got);
    free(src);
    xnd_free(x);
    CU_ASSERT_EQUAL(tl_fleet_stop(dep, ND, cli), 0);
}

static const lns_test_case tests[] = {
    {"lors_download --netlog: every block's client and depot events", test_netlog_download},
};

LNS_TEST_MAIN("netlog", tests)
