/* test_alloc_fail.c -- the libraries when memory runs out, in the manner of SQLite's malloc
 * tests: each main operation is run again and again, the Nth allocation it makes failing
 * (N = 1, 2, 3, ...), until a run makes fewer than N allocations and so succeeds.  Every run
 * must end in an error code or success (no crash, no abort), free what it took (under
 * AddressSanitizer, LeakSanitizer fails the program at its end otherwise) and, where it
 * succeeded, give the right answer.  The operations: libexnode's parse and serialize of an
 * exNode; libibp's ALLOCATE, STORE, LOAD, PROBE and STATUS on a real depot; liblors's upload
 * of a buffer to that depot and the download of its exNode.
 *
 * The countdown sits in front of malloc, calloc, realloc, strdup and strndup as the
 * libraries' objects call them (the program is linked with -Wl,--wrap for those, the
 * Makefile's rule for this test), so what libxml2, OpenSSL or libc allocate inside
 * themselves is not counted.  Threads share the countdown: in a download the failing
 * allocation is the Nth of all its threads together, a different one from run to run, which
 * is why every run is judged by its outcome and not by which allocation failed.  Each
 * operation is given at most LNS_ALLOC_FAIL_SECONDS (default 40) of runs: a bound on the
 * suite's time, not a judgment of speed (a slow machine covers fewer allocations and says so;
 * this one covers all of them in about a second).
 */
#include <CUnit/CUnit.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ibp.h"
#include "lns_test.h"
#include "lns_time.h"
#include "lors.h"
#include "test_depot.h"
#include "xnd.h"

/* ---- the countdown ---------------------------------------------------------------------- */

static atomic_long countdown = -1; /* allocations left before the failing one; -1: off */
static atomic_long failures;       /* allocations failed since arm() */
static atomic_int persistent;      /* every allocation after the failing one fails too */

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);

static int fail_now(void)
{
    long c = atomic_load(&countdown);
    if (c < 0)
        return 0;
    long was = atomic_fetch_sub(&countdown, 1);
    if (was == 1 || (was <= 0 && atomic_load(&persistent))) {
        atomic_fetch_add(&failures, 1);
        return 1;
    }
    return 0;
}

void *__wrap_malloc(size_t n) { return fail_now() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t k, size_t n) { return fail_now() ? NULL : __real_calloc(k, n); }
void *__wrap_realloc(void *p, size_t n) { return fail_now() ? NULL : __real_realloc(p, n); }
char *__wrap_strdup(const char *s) { return fail_now() ? NULL : __real_strdup(s); }
char *__wrap_strndup(const char *s, size_t n) { return fail_now() ? NULL : __real_strndup(s, n); }

static void arm(long n, int all_after)
{
    atomic_store(&failures, 0);
    atomic_store(&persistent, all_after);
    atomic_store(&countdown, n);
}

/* Off; 1 if the run met its failing allocation. */
static int disarm(void)
{
    atomic_store(&countdown, -1);
    return atomic_load(&failures) > 0;
}

/* Run op with the Nth allocation failing, N from 1, until a run meets no failure (it made
 * fewer allocations: the whole operation ran) or the time is up; then again with every
 * allocation from the Nth on failing (what an error path allocates fails too).  op returns
 * 1 for an outcome that is right (an error, or success with the right answer), 0 for a
 * wrong one.  The number of runs. */
static long countdown_runs(const char *what, int (*op)(void *), void *arg)
{
    const char *s = getenv("LNS_ALLOC_FAIL_SECONDS");
    int64_t deadline = lns_mono_ms() + 1000 * (s ? atol(s) : 40);
    long runs = 0;
    for (int all_after = 0; all_after < 2; all_after++) {
        long n, wrong = 0;
        int clean = 0;
        for (n = 1; !clean && lns_mono_ms() < deadline; n++) {
            arm(n, all_after);
            int right = op(arg);
            int met = disarm();
            if (!right && wrong++ < 5)
                printf("\n  %s: a wrong outcome with allocation %ld failing%s", what, n,
                       all_after ? " and all after it" : "");
            if (!met) {
                clean = 1;
                CU_ASSERT(right); /* the run without a failure must succeed, and be right */
            }
        }
        CU_ASSERT_EQUAL(wrong, 0);
        printf("\n  %s: %ld runs, %s%s", what, n - 1, all_after ? "from each on, all failing: "
               : "each failing once: ", clean ? "done" : "time was up first");
        runs += n - 1;
    }
    return runs;
}

/* ---- libexnode -------------------------------------------------------------------------- */

static const char *xml;

static int op_exnode(void *arg)
{
    (void)arg;
    xnd_t *x = NULL;
    char err[256], *out = NULL;
    size_t len = 0;
    int rc = xnd_parse_buf(xml, strlen(xml), &x, err, sizeof err);
    if (rc != XND_OK)
        return x == NULL && err[0] != 0; /* an error said, nothing handed out */
    rc = xnd_serialize(x, &out, &len, err, sizeof err);
    int right = rc != XND_OK ? out == NULL : len > 0 && strstr(out, "ibp://") != NULL;
    free(out);
    xnd_free(x);
    return right;
}

/* ---- libibp and liblors on a real depot ------------------------------------------------- */

static test_depot_t D;
static unsigned char data[300000];

static int op_ibp(void *arg)
{
    (void)arg;
    ibp_client_t *c = ibp_client_new(NULL);
    if (!c)
        return 1;
    ibp_attr_t a = {.size = sizeof data, .duration_s = 60, .reliability = IBP_HARD,
                    .type = IBP_BYTEARRAY};
    ibp_caps_t caps;
    static unsigned char back[sizeof data];
    uint64_t n = 0;
    ibp_probe_t pr;
    ibp_depot_status_t st;
    int right = 1, rc = ibp_allocate(c, "127.0.0.1", D.port, NULL, &a, &caps);
    if (rc == IBP_OK) {
        if (ibp_store(c, caps.write, data, sizeof data, &n) == IBP_OK)
            right &= n == sizeof data;
        memset(back, 0, sizeof back);
        if (n == sizeof data && ibp_load(c, caps.read, 0, sizeof data, back) == IBP_OK)
            right &= memcmp(back, data, sizeof data) == 0;
        if (ibp_probe(c, caps.manage, &pr) == IBP_OK)
            right &= pr.max_size == sizeof data;
        ibp_status(c, "127.0.0.1", D.port, NULL, NULL, &st);
        ibp_decr(c, caps.manage, IBP_READCAP);
    }
    ibp_client_free(c);
    return right;
}

static xnd_t *uploaded; /* the clean upload's exNode, for the download */

static void upload_opts(lors_upload_opts_t *o, lors_depot_t *d)
{
    memset(d, 0, sizeof *d);
    snprintf(d->host, sizeof d->host, "127.0.0.1");
    d->port = D.port;
    lors_upload_opts_init(o);
    o->depots = d;
    o->ndepots = 1;
    o->fragments = 3;
    o->threads = 2;
    o->duration_s = 600;
    o->checksum_blocksize = 65536;
    o->timeout_s = 20;
}

static int op_upload(void *arg)
{
    (void)arg;
    lors_upload_opts_t o;
    lors_depot_t d;
    lors_report_t rep;
    xnd_t *x = NULL;
    upload_opts(&o, &d);
    int rc = lors_upload_buf(&o, data, sizeof data, "f.bin", &x, &rep);
    int right = rc == LORS_OK ? x != NULL && xnd_extent(x) == (int64_t)sizeof data : x == NULL;
    lors_report_free(&rep);
    if (rc == LORS_OK && !uploaded) {
        uploaded = x;
        x = NULL;
    }
    if (x) {
        lors_discard(x, 2, 20, NULL);
        xnd_free(x);
    }
    return right;
}

static int op_download(void *arg)
{
    (void)arg;
    lors_download_opts_t o;
    lors_dl_report_t rep;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/dl.out", lns_test_tmpdir());
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return 0;
    lors_download_opts_init(&o);
    o.threads = 2;
    o.blocksize = 65536;
    o.timeout_ms = 20000;
    int rc = lors_download_fd(&o, uploaded, fd, &rep);
    int right = 1;
    if (rc == LORS_OK) {
        static unsigned char back[sizeof data];
        right = pread(fd, back, sizeof back, 0) == (ssize_t)sizeof back &&
                memcmp(back, data, sizeof data) == 0;
    }
    lors_dl_report_free(&rep);
    close(fd);
    return right;
}

/* ---- the cases -------------------------------------------------------------------------- */

static int suite_init(void)
{
    lns_test_fill(data, sizeof data, 38);
    return td_start(&D, NULL) < 0 ? -1 : 0;
}

static int suite_clean(void)
{
    if (uploaded) {
        lors_discard(uploaded, 2, 20, NULL);
        xnd_free(uploaded);
    }
    lns_test_server_stop(&D.srv);
    return 0;
}

static void test_exnode(void)
{
    lors_upload_opts_t o;
    lors_depot_t d;
    lors_report_t rep;
    xnd_t *x = NULL;
    char err[256], *out = NULL;
    size_t len;
    /* the exNode to parse: a real upload's, written once without the countdown */
    upload_opts(&o, &d);
    CU_ASSERT_EQUAL_FATAL(lors_upload_buf(&o, data, sizeof data, "x.bin", &x, &rep), LORS_OK);
    lors_report_free(&rep);
    CU_ASSERT_EQUAL_FATAL(xnd_serialize(x, &out, &len, err, sizeof err), XND_OK);
    xml = out;
    countdown_runs("libexnode parse + serialize", op_exnode, NULL);
    xml = NULL;
    free(out);
    lors_discard(x, 2, 20, NULL);
    xnd_free(x);
}

static void test_ibp(void)
{
    countdown_runs("libibp allocate, store, load, probe, status", op_ibp, NULL);
}

static void test_lors(void)
{
    countdown_runs("liblors upload", op_upload, NULL);
    if (!uploaded) /* the time was up before a clean run: one without the countdown */
        CU_ASSERT(op_upload(NULL));
    CU_ASSERT_PTR_NOT_NULL_FATAL(uploaded);
    countdown_runs("liblors download", op_download, NULL);
}

static const lns_test_case tests[] = {
    {"libexnode: parse and serialize, each allocation failing once", test_exnode},
    {"libibp: a round trip on a depot, each allocation failing once", test_ibp},
    {"liblors: upload and download, each allocation failing once", test_lors},
};

LNS_TEST_MAIN_WITH("allocation failures", suite_init, suite_clean, tests)
