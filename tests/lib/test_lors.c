/* test_lors.c -- real depots as liblors sees them, for the lors system tests. */
#include "test_lors.h"

#include <CUnit/CUnit.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lns_test.h"

int tl_start_depot(test_depot_t *d, const char *name, const char *hard)
{
    char extra[PATH_MAX + 128];
    snprintf(extra, sizeof extra, "--resource %s/%s,hard=%s,soft=64M,max-duration=3600",
             lns_test_tmpdir(), name, hard);
    return td_start(d, extra);
}

void tl_lors_depot(const test_depot_t *d, lors_depot_t *l)
{
    memset(l, 0, sizeof *l);
    snprintf(l->host, sizeof l->host, "127.0.0.1");
    l->port = d->port;
}

int tl_fleet_start(test_depot_t *dep, lors_depot_t *ldep, int n, ibp_client_t **cli)
{
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "res%d", i);
        if (tl_start_depot(&dep[i], name, "256M") < 0)
            return -1;
        tl_lors_depot(&dep[i], &ldep[i]);
    }
    ibp_client_opts_t o;
    ibp_client_opts_init(&o);
    o.io_timeout_ms = 20000;
    *cli = ibp_client_new(&o);
    return *cli ? 0 : -1;
}

int tl_fleet_stop(test_depot_t *dep, int n, ibp_client_t *cli)
{
    int clean = 1;
    for (int i = 0; i < n; i++) {
        clean &= lns_test_server_log_clean(&dep[i].srv);
        lns_test_server_stop(&dep[i].srv);
    }
    ibp_client_free(cli);
    return clean ? 0 : -1;
}

unsigned char *tl_data(size_t n, uint64_t seed)
{
    unsigned char *p = malloc(n ? n : 1);
    if (p)
        lns_test_fill(p, n, seed);
    return p;
}

void tl_upload_opts(lors_upload_opts_t *o, const lors_depot_t *d, size_t nd, int copies,
                    int frags)
{
    lors_upload_opts_init(o);
    o->depots = d;
    o->ndepots = nd;
    o->copies = copies;
    o->fragments = frags;
    o->duration_s = 600;
    o->timeout_s = 20;
}

int tl_download_mem(const lors_download_opts_t *o, const xnd_t *x, unsigned char **out,
                    size_t *outlen, lors_dl_report_t *rep)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/dl.XXXXXX", lns_test_tmpdir());
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    unlink(path);
    int rc = lors_download_fd(o, x, fd, rep);
    off_t n = lseek(fd, 0, SEEK_END);
    *out = malloc(n > 0 ? (size_t)n : 1);
    *outlen = (size_t)n;
    CU_ASSERT_EQUAL(pread(fd, *out, (size_t)n, 0), (ssize_t)n);
    close(fd);
    return rc;
}

int tl_dl(tl_dl_t *d, const xnd_t *x)
{
    return tl_download_mem(&d->o, x, &d->out, &d->outlen, &d->rep);
}

void tl_dl_end(tl_dl_t *d)
{
    lors_dl_report_free(&d->rep);
    free(d->out);
    d->out = NULL;
    d->outlen = 0;
}

void tl_check_range(const lors_download_opts_t *o, const xnd_t *x, const unsigned char *src,
                    size_t n, int64_t off, int64_t len, lors_dl_report_t *rep)
{
    lors_download_opts_t ro = *o;
    unsigned char *out;
    size_t outlen;
    ro.offset = off;
    ro.length = len;
    size_t want = len < 0 ? n - (size_t)off : (size_t)len;
    int rc = tl_download_mem(&ro, x, &out, &outlen, rep);
    if (rc != LORS_OK)
        fprintf(stderr, "download %lld+%lld: %s\n", (long long)off, (long long)len, rep->error);
    CU_ASSERT_EQUAL(rc, LORS_OK);
    CU_ASSERT_EQUAL(outlen, want);
    CU_ASSERT_EQUAL(rep->bytes_written, (int64_t)want);
    CU_ASSERT(outlen == want && memcmp(out, src + off, want) == 0);
    CU_ASSERT_EQUAL(rep->nbad, 0);
    free(out);
}

void tl_free_xnd(ibp_client_t *cli, xnd_t *x)
{
    for (size_t i = 0; x && i < x->nmaps; i++)
        if (x->maps[i]->cap[XND_MANAGE])
            ibp_decr(cli, x->maps[i]->cap[XND_MANAGE], IBP_READCAP);
    xnd_free(x);
}
