/* test_lors_lifelines.c -- lors_lifelines' reading, matching, table and PNG.
 *
 * A hand-written log with known times gives exact throughputs and fit; a second one, with a
 * depot per case, gives each fit method (LORS_REPLY's medians, least squares, none) its exact
 * figures; the log recorded from a real 3-depot download by a client that did not yet write
 * LORS_REPLY (tests/data/netlog/, see its README) must have every released block matched to
 * its depot lines and, its sizes being nearly equal, no fit.  The plot is read back with
 * cairo: a PNG of the asked size, and at the times the logs give each fetch, its bar's colour
 * in its depot's lane (the hand log: won, failed, redundant and lost, hatched), and nothing
 * where no fetch was running.
 */
#include <CUnit/CUnit.h>
#include <cairo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lns_test.h"
#include "lifelines.h"

static const char *hand_log[] = {
    /* depot a:1, two fetches of different sizes: delay 2 ms for 1e6 bytes, 4.5 ms for 3e6 */
    "LORS_REQ_SENT c 100.000000000 fetch=1.1 block=0 off=0 len=1000000 depot=a:1 alloc=aaaa "
    "aoff=0 alen=1000000 redundant=0",
    "IBP_LOAD_RECV a 100.000300000 client=x:9 alloc=aaaa off=0 len=1000000",
    "IBP_LOAD_READ_START a 100.000400000 client=x:9 alloc=aaaa off=0 len=1000000",
    "IBP_LOAD_SEND_END a 100.001500000 client=x:9 alloc=aaaa off=0 len=1000000 bytes=1000000 "
    "result=1",
    "LORS_RECV_END c 100.002000000 fetch=1.1 block=0 off=0 len=1000000 depot=a:1 alloc=aaaa "
    "aoff=0 alen=1000000",
    "LORS_COMMIT c 100.002100000 fetch=1.1 block=0 off=0 len=1000000 depot=a:1 alloc=aaaa "
    "aoff=0 alen=1000000 verified=1",
    "LORS_RELEASE c 100.002200000 fetch=1.1 block=0 off=0 len=1000000 depot=a:1",
    "LORS_REQ_SENT c 100.001000000 fetch=1.2 block=1 off=1000000 len=3000000 depot=a:1 "
    "alloc=aaaa aoff=1000000 alen=3000000 redundant=0",
    "LORS_RECV_END c 100.005500000 fetch=1.2 block=1 off=1000000 len=3000000 depot=a:1 "
    "alloc=aaaa aoff=1000000 alen=3000000",
    "LORS_COMMIT c 100.005600000 fetch=1.2 block=1 off=1000000 len=3000000 depot=a:1 "
    "alloc=aaaa aoff=1000000 alen=3000000 verified=1",
    "LORS_RELEASE c 100.005700000 fetch=1.2 block=1 off=1000000 len=3000000 depot=a:1",
    /* depot b:2: a failure, a redundant fetch that is cancelled, one win */
    "LORS_REQ_SENT c 100.000000000 fetch=1.3 block=2 off=4000000 len=1000000 depot=b:2 "
    "alloc=bbbb aoff=0 alen=1000000 redundant=0",
    "LORS_FAIL c 100.001000000 fetch=1.3 block=2 off=4000000 len=1000000 depot=b:2 "
    "alloc=bbbb aoff=0 alen=1000000 op=LOAD ibp_err=-3",
    "LORS_REQ_SENT c 100.001500000 fetch=1.5 block=2 off=4000000 len=1000000 depot=b:2 "
    "alloc=bbbb aoff=0 alen=1000000 redundant=0",
    "LORS_REDUNDANT c 100.002000000 fetch=1.4 block=2 off=4000000 len=1000000 depot=b:2 "
    "alloc=cccc aoff=0 alen=1000000",
    "LORS_REQ_SENT c 100.002000000 fetch=1.4 block=2 off=4000000 len=1000000 depot=b:2 "
    "alloc=cccc aoff=0 alen=1000000 redundant=1",
    "LORS_RECV_END c 100.003500000 fetch=1.5 block=2 off=4000000 len=1000000 depot=b:2 "
    "alloc=bbbb aoff=0 alen=1000000",
    "LORS_COMMIT c 100.003600000 fetch=1.5 block=2 off=4000000 len=1000000 depot=b:2 "
    "alloc=bbbb aoff=0 alen=1000000 verified=1",
    "LORS_RECV_END c 100.004000000 fetch=1.4 block=2 off=4000000 len=1000000 depot=b:2 "
    "alloc=cccc aoff=0 alen=1000000",
    "LORS_CANCEL c 100.004100000 fetch=1.4 block=2 off=4000000 len=1000000 depot=b:2 "
    "alloc=cccc aoff=0 alen=1000000 got=1000000",
    "LORS_RELEASE c 100.005800000 fetch=1.5 block=2 off=4000000 len=1000000 depot=b:2",
    "IBP_REQ a 100.001600000 client=x:9 cmd=LOAD alloc=aaaa off=0 len=1000000 bytes=1000000 "
    "dur_us=1300 result=1",
    "not an event line at all",
    "LORS_COMMIT c 1x0.0 fetch=1.9 block=3",
};

static void load_hand(lors_ll_t *ll)
{
    lors_ll_init(ll);
    for (size_t i = 0; i < sizeof hand_log / sizeof hand_log[0]; i++)
        lors_ll_add_line(ll, hand_log[i]);
    CU_ASSERT_EQUAL_FATAL(lors_ll_analyze(ll), 0);
}

static const lors_ll_fetch_t *fetch(const lors_ll_t *ll, const char *id)
{
    for (size_t i = 0; i < ll->nf; i++)
        if (strcmp(ll->f[i].id, id) == 0)
            return &ll->f[i];
    return NULL;
}

static void test_hand_table(void)
{
    lors_ll_t ll;
    load_hand(&ll);
    CU_ASSERT_EQUAL(ll.bad, 1); /* the bad timestamp; the other two are ignored */
    CU_ASSERT_EQUAL(ll.nf, 5);
    CU_ASSERT_EQUAL(ll.released, 3);
    CU_ASSERT_EQUAL(ll.matched, 1);
    CU_ASSERT_EQUAL(ll.complete, 1);
    const lors_ll_fetch_t *f = fetch(&ll, "1.1");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(f->t[LORS_LL_DEPOT_RECV], 100000300000LL);
    CU_ASSERT_EQUAL(f->t[LORS_LL_READ_START], 100000400000LL);
    CU_ASSERT_EQUAL(f->t[LORS_LL_SEND_END], 100001500000LL);
    CU_ASSERT_EQUAL(f->t[LORS_LL_RELEASE], 100002200000LL);
    CU_ASSERT_EQUAL(ll.t0, 100000000000LL);
    CU_ASSERT_EQUAL(ll.t1, 100005800000LL);

    CU_ASSERT_EQUAL_FATAL(ll.nd, 2);
    const lors_ll_depot_t *a = &ll.d[0], *b = &ll.d[1];
    CU_ASSERT_STRING_EQUAL(a->name, "a:1");
    CU_ASSERT_EQUAL(a->blocks, 2);
    CU_ASSERT_EQUAL(a->bytes, 4000000);
    /* 4e6 bytes from 100.000 to 100.0055: 727.27 MB/s */
    CU_ASSERT_DOUBLE_EQUAL(a->mbps, 4e6 / 0.0055 / 1e6, 1e-6);
    /* slope (0.0045 - 0.002) / 2e6 = 1.25 ns/byte: 800 MB/s; latency 2 ms - 1.25 ms */
    CU_ASSERT_EQUAL(a->fit_ok, 1);
    CU_ASSERT_EQUAL(a->fit, LORS_LL_FIT_LS);
    CU_ASSERT_EQUAL(a->fit_n, 2);
    CU_ASSERT_DOUBLE_EQUAL(a->fit_mbps, 800.0, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(a->latency_s, 0.00075, 1e-12);
    CU_ASSERT_EQUAL(a->failures + a->wasted + a->redundant, 0);

    CU_ASSERT_STRING_EQUAL(b->name, "b:2");
    CU_ASSERT_EQUAL(b->fetches, 3);
    CU_ASSERT_EQUAL(b->blocks, 1);
    CU_ASSERT_EQUAL(b->bytes, 1000000);
    CU_ASSERT_DOUBLE_EQUAL(b->mbps, 500.0, 1e-6); /* 1e6 bytes in 2 ms */
    CU_ASSERT_EQUAL(b->failures, 1);
    CU_ASSERT_EQUAL(b->redundant, 1);
    CU_ASSERT_EQUAL(b->redundant_won, 0);
    CU_ASSERT_EQUAL(b->wasted, 1);
    CU_ASSERT_EQUAL(b->fit_n, 2); /* two fetches of one size: no fit */
    CU_ASSERT_EQUAL(b->fit_ok, 0);
    CU_ASSERT_EQUAL(b->fit, LORS_LL_FIT_NONE);

    char path[512];
    snprintf(path, sizeof path, "%s/t.json", lns_test_tmpdir());
    FILE *fp = fopen(path, "w+");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    lors_ll_print_json(&ll, fp);
    rewind(fp);
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    buf[n] = 0;
    fclose(fp);
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "\"depot\": \"a:1\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "\"fit_mbps\": 800.000000"));
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "\"fit\": \"ls\", \"latency_ms\": 0.750000"));
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "\"fit\": null, \"latency_ms\": null"));
    lors_ll_free(&ll);
}

/* One depot per case of the fit.  Times are ms after 200 s; REPLY only where said. */
#define FL(ev, ms, id, depot, size, extra)                                                    \
    ev " c " #ms " fetch=" id " block=0 off=0 len=" #size " depot=" depot " alloc=" id        \
       " aoff=0 alen=" #size extra
static const char *fit_log[] = {
    /* r:1, one size, REPLY gaps 1, 2, 9 ms and transfers 4, 5, 20 ms: latency 2 ms (median),
     * 1e6 B / 5 ms = 200 MB/s; fetch r4 replied after 50 ms but never finished: not a sample */
    FL("LORS_REQ_SENT", 200.000, "r1", "r:1", 1000000, " redundant=0"),
    FL("LORS_REPLY", 200.001, "r1", "r:1", 1000000, " redundant=0"),
    FL("LORS_RECV_END", 200.005, "r1", "r:1", 1000000, ""),
    FL("LORS_REQ_SENT", 200.010, "r2", "r:1", 1000000, " redundant=0"),
    FL("LORS_REPLY", 200.012, "r2", "r:1", 1000000, " redundant=0"),
    FL("LORS_RECV_END", 200.017, "r2", "r:1", 1000000, ""),
    FL("LORS_REQ_SENT", 200.020, "r3", "r:1", 1000000, " redundant=0"),
    FL("LORS_REPLY", 200.029, "r3", "r:1", 1000000, " redundant=0"),
    FL("LORS_RECV_END", 200.049, "r3", "r:1", 1000000, ""),
    FL("LORS_REQ_SENT", 200.030, "r4", "r:1", 1000000, " redundant=1"),
    FL("LORS_REPLY", 200.080, "r4", "r:1", 1000000, " redundant=1"),
    FL("LORS_CANCEL", 200.081, "r4", "r:1", 1000000, " got=65536"),
    /* m:2, sizes 1e6, 2e6, 5e5 with REPLY: REPLY wins over least squares; time per byte 2, 2,
     * 20 ns: 500 MB/s; REPLY gaps 3, 3, 4 ms: 3 ms */
    FL("LORS_REQ_SENT", 200.000, "m1", "m:2", 1000000, " redundant=0"),
    FL("LORS_REPLY", 200.003, "m1", "m:2", 1000000, " redundant=0"),
    FL("LORS_RECV_END", 200.005, "m1", "m:2", 1000000, ""),
    FL("LORS_REQ_SENT", 200.010, "m2", "m:2", 2000000, " redundant=0"),
    FL("LORS_REPLY", 200.013, "m2", "m:2", 2000000, " redundant=0"),
    FL("LORS_RECV_END", 200.017, "m2", "m:2", 2000000, ""),
    FL("LORS_REQ_SENT", 200.020, "m3", "m:2", 500000, " redundant=0"),
    FL("LORS_REPLY", 200.024, "m3", "m:2", 500000, " redundant=0"),
    FL("LORS_RECV_END", 200.034, "m3", "m:2", 500000, ""),
    /* e:3, one size, no REPLY (an old log): no fit */
    FL("LORS_REQ_SENT", 200.000, "e1", "e:3", 1000000, " redundant=0"),
    FL("LORS_RECV_END", 200.005, "e1", "e:3", 1000000, ""),
    FL("LORS_REQ_SENT", 200.010, "e2", "e:3", 1000000, " redundant=0"),
    FL("LORS_RECV_END", 200.016, "e2", "e:3", 1000000, ""),
    /* n:4, no REPLY, sizes 1e6, 2e6 twice, delays 2, 5 and 3, 5 ms: slope 0.5 ns/B but its
     * standard error is larger: no fit */
    FL("LORS_REQ_SENT", 200.000, "n1", "n:4", 1000000, " redundant=0"),
    FL("LORS_RECV_END", 200.002, "n1", "n:4", 1000000, ""),
    FL("LORS_REQ_SENT", 200.010, "n2", "n:4", 1000000, " redundant=0"),
    FL("LORS_RECV_END", 200.015, "n2", "n:4", 1000000, ""),
    FL("LORS_REQ_SENT", 200.020, "n3", "n:4", 2000000, " redundant=0"),
    FL("LORS_RECV_END", 200.023, "n3", "n:4", 2000000, ""),
    FL("LORS_REQ_SENT", 200.030, "n4", "n:4", 2000000, " redundant=0"),
    FL("LORS_RECV_END", 200.035, "n4", "n:4", 2000000, ""),
    /* s:5, as n:4 with delays 2.0, 2.2 and 3.0, 3.2 ms: 1 ns/B (1000 MB/s), 1.1 ms */
    FL("LORS_REQ_SENT", 200.000, "s1", "s:5", 1000000, " redundant=0"),
    FL("LORS_RECV_END", 200.002, "s1", "s:5", 1000000, ""),
    FL("LORS_REQ_SENT", 200.010, "s2", "s:5", 1000000, " redundant=0"),
    FL("LORS_RECV_END", 200.0122, "s2", "s:5", 1000000, ""),
    FL("LORS_REQ_SENT", 200.020, "s3", "s:5", 2000000, " redundant=0"),
    FL("LORS_RECV_END", 200.023, "s3", "s:5", 2000000, ""),
    FL("LORS_REQ_SENT", 200.030, "s4", "s:5", 2000000, " redundant=0"),
    FL("LORS_RECV_END", 200.0332, "s4", "s:5", 2000000, ""),
    /* v:6, no REPLY, a block and a last block 10% shorter: an exact line through two points,
     * but its slope is the delays' noise: no fit */
    FL("LORS_REQ_SENT", 200.000, "v1", "v:6", 262144, " redundant=0"),
    FL("LORS_RECV_END", 200.002, "v1", "v:6", 262144, ""),
    FL("LORS_REQ_SENT", 200.010, "v2", "v:6", 237856, " redundant=0"),
    FL("LORS_RECV_END", 200.011, "v2", "v:6", 237856, ""),
};

static void test_fit_methods(void)
{
    lors_ll_t ll;
    lors_ll_init(&ll);
    for (size_t i = 0; i < sizeof fit_log / sizeof fit_log[0]; i++)
        CU_ASSERT_EQUAL(lors_ll_add_line(&ll, fit_log[i]), 1);
    CU_ASSERT_EQUAL_FATAL(lors_ll_analyze(&ll), 0);
    CU_ASSERT_EQUAL(ll.bad, 0);
    CU_ASSERT_EQUAL(ll.replies, 7);
    const lors_ll_fetch_t *f = fetch(&ll, "r3");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(f->t[LORS_LL_REPLY], 200029000000LL);
    CU_ASSERT_EQUAL(fetch(&ll, "e1")->t[LORS_LL_REPLY], -1);
    CU_ASSERT_EQUAL_FATAL(ll.nd, 6);
    /* sorted by name */
    const lors_ll_depot_t *e = &ll.d[0], *m = &ll.d[1], *n = &ll.d[2], *r = &ll.d[3],
                          *sd = &ll.d[4], *v = &ll.d[5];
    CU_ASSERT_STRING_EQUAL(r->name, "r:1");
    CU_ASSERT_STRING_EQUAL(m->name, "m:2");
    CU_ASSERT_STRING_EQUAL(e->name, "e:3");
    CU_ASSERT_STRING_EQUAL(n->name, "n:4");
    CU_ASSERT_STRING_EQUAL(sd->name, "s:5");
    CU_ASSERT_STRING_EQUAL(v->name, "v:6");

    CU_ASSERT_EQUAL(r->fit, LORS_LL_FIT_REPLY);
    CU_ASSERT_EQUAL(r->fit_ok, 1);
    CU_ASSERT_EQUAL(r->fit_n, 3);
    CU_ASSERT_DOUBLE_EQUAL(r->latency_s, 0.002, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(r->fit_mbps, 200.0, 1e-6);

    CU_ASSERT_EQUAL(m->fit, LORS_LL_FIT_REPLY);
    CU_ASSERT_EQUAL(m->fit_n, 3);
    CU_ASSERT_DOUBLE_EQUAL(m->latency_s, 0.003, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(m->fit_mbps, 500.0, 1e-6);

    CU_ASSERT_EQUAL(e->fit, LORS_LL_FIT_NONE);
    CU_ASSERT_EQUAL(e->fit_ok, 0);
    CU_ASSERT_EQUAL(e->fit_n, 2);
    CU_ASSERT_EQUAL(n->fit, LORS_LL_FIT_NONE);
    CU_ASSERT_EQUAL(n->fit_n, 4);
    CU_ASSERT_EQUAL(v->fit, LORS_LL_FIT_NONE);
    CU_ASSERT_EQUAL(v->fit_n, 2);

    CU_ASSERT_EQUAL(sd->fit, LORS_LL_FIT_LS);
    CU_ASSERT_EQUAL(sd->fit_n, 4);
    CU_ASSERT_DOUBLE_EQUAL(sd->latency_s, 0.0011, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(sd->fit_mbps, 1000.0, 1e-3);

    /* the table names the method in its fit column, before latency and throughput */
    char path[512], line[512];
    snprintf(path, sizeof path, "%s/fit.txt", lns_test_tmpdir());
    FILE *fp = fopen(path, "w+");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    lors_ll_print_table(&ll, fp);
    rewind(fp);
    int rows = 0;
    while (fgets(line, sizeof line, fp)) {
        char name[64], fit[16], lat[32], mb[32];
        if (sscanf(line, "%63s %*s %*s %*s %*s %*s %*s %*s %*s %15s %31s %31s", name, fit, lat,
                   mb) != 4 || strchr(name, ':') == NULL)
            continue;
        rows++;
        if (strcmp(name, "r:1") == 0) {
            CU_ASSERT_STRING_EQUAL(fit, "reply");
            CU_ASSERT_STRING_EQUAL(lat, "2.000");
            CU_ASSERT_STRING_EQUAL(mb, "200.00");
        } else if (strcmp(name, "s:5") == 0) {
            CU_ASSERT_STRING_EQUAL(fit, "ls");
            CU_ASSERT_STRING_EQUAL(lat, "1.100");
            CU_ASSERT_STRING_EQUAL(mb, "1000.00");
        } else if (strcmp(name, "e:3") == 0) {
            CU_ASSERT_STRING_EQUAL(fit, "-");
            CU_ASSERT_STRING_EQUAL(lat, "-");
            CU_ASSERT_STRING_EQUAL(mb, "-");
        }
    }
    fclose(fp);
    CU_ASSERT_EQUAL(rows, 6);
    lors_ll_free(&ll);
}

/* The data directory next to this file's: tests/unit/x.c -> tests/data/netlog. */
static void data_dir(char *buf, size_t size)
{
    const char *f = __FILE__, *u = strstr(f, "unit/test_lors_lifelines.c");
    snprintf(buf, size, "%.*sdata/netlog", u ? (int)(u - f) : 0, f);
}

static void test_recorded(void)
{
    char dir[512], path[600], err[256];
    static const char *files[] = {"client.log", "depot0.log", "depot1.log", "depot2.log"};
    lors_ll_t ll;
    lors_ll_init(&ll);
    data_dir(dir, sizeof dir);
    size_t releases = 0, reqs = 0;
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        CU_ASSERT_EQUAL_FATAL(lors_ll_add_file(&ll, path, err, sizeof err), 0);
        FILE *fp = fopen(path, "r");
        char line[2048];
        while (fp && fgets(line, sizeof line, fp)) {
            releases += strncmp(line, "LORS_RELEASE ", 13) == 0;
            reqs += strncmp(line, "LORS_REQ_SENT ", 14) == 0;
        }
        if (fp)
            fclose(fp);
    }
    CU_ASSERT_EQUAL_FATAL(lors_ll_analyze(&ll), 0);
    CU_ASSERT(releases > 0);
    CU_ASSERT_EQUAL(ll.bad, 0);
    CU_ASSERT_EQUAL(ll.released, releases);
    CU_ASSERT_EQUAL(ll.replies, 0); /* recorded before LORS_REPLY */
    CU_ASSERT_EQUAL(ll.complete, releases); /* every block: all points but REPLY */
    CU_ASSERT_EQUAL(ll.matched, reqs);
    CU_ASSERT_EQUAL(ll.nd, 3);
    uint64_t bytes = 0, blocks = 0;
    for (size_t i = 0; i < ll.nd; i++) {
        bytes += ll.d[i].bytes;
        blocks += ll.d[i].blocks;
        CU_ASSERT(ll.d[i].mbps > 0);
    }
    CU_ASSERT_EQUAL(blocks, releases);
    CU_ASSERT_EQUAL(bytes, 3000000); /* the recorded file's size */
    /* blocks of 262144 and 237856 bytes, no REPLY: nothing a fit can stand on */
    for (size_t i = 0; i < ll.nd; i++) {
        CU_ASSERT_EQUAL(ll.d[i].fit, LORS_LL_FIT_NONE);
        CU_ASSERT(ll.d[i].fit_n >= 3);
    }
    /* every point of a block comes after the one before it that the log has (the depot's three
     * are in the depot's clock: the same machine here) */
    for (size_t i = 0; i < ll.nf; i++) {
        CU_ASSERT_EQUAL(ll.f[i].t[LORS_LL_REPLY], -1);
        for (int k = 1, prev = 0; k < LORS_LL_NPOINTS; k++) {
            if (ll.f[i].t[k] < 0)
                continue;
            CU_ASSERT(ll.f[i].t[k] >= ll.f[i].t[prev]);
            prev = k;
        }
    }
    lors_ll_free(&ll);
}

/* ---- the plot, read back with cairo ------------------------------------------------------ */

typedef struct image {
    cairo_surface_t *s;
    const unsigned char *p;
    int w, h, stride;
} image_t;

/* The PNG at path, which must be w x h 8-bit RGB. */
static int image_load(image_t *im, const char *path, int w, int h)
{
    im->s = cairo_image_surface_create_from_png(path);
    CU_ASSERT_EQUAL_FATAL(cairo_surface_status(im->s), CAIRO_STATUS_SUCCESS);
    CU_ASSERT_EQUAL(cairo_image_surface_get_format(im->s), CAIRO_FORMAT_RGB24);
    im->w = cairo_image_surface_get_width(im->s);
    im->h = cairo_image_surface_get_height(im->s);
    im->stride = cairo_image_surface_get_stride(im->s);
    im->p = cairo_image_surface_get_data(im->s);
    CU_ASSERT_EQUAL(im->w, w);
    CU_ASSERT_EQUAL(im->h, h);
    return im->w == w && im->h == h && im->p;
}

static uint32_t pixel(const image_t *im, int x, int y)
{
    uint32_t v;
    memcpy(&v, im->p + (size_t)y * (size_t)im->stride + (size_t)x * 4, 4);
    return v & 0xffffff;
}

static int near(uint32_t a, uint32_t b)
{
    for (int sh = 0; sh < 24; sh += 8) {
        int d = (int)(a >> sh & 0xff) - (int)(b >> sh & 0xff);
        if (d < -2 || d > 2)
            return 0;
    }
    return 1;
}

/* Pixels of colour c in the column at t seconds after the first event, inside lane `lane`. */
static int lane_count(const image_t *im, const lors_ll_frame_t *fr, size_t lane, double t,
                      uint32_t c)
{
    int x = (int)(fr->left + t / fr->span_s * (fr->right - fr->left));
    int y0 = (int)(fr->top + (double)lane * fr->lane_h) + 1;
    int y1 = (int)(fr->top + (double)(lane + 1) * fr->lane_h) - 1;
    int n = 0;
    for (int y = y0; y < y1; y++)
        n += near(pixel(im, x, y), c);
    return n;
}

/* Nothing drawn in the column at t in the lane: only light greys (background, shading,
 * grid), no bar's colour or edge. */
static int lane_empty(const image_t *im, const lors_ll_frame_t *fr, size_t lane, double t)
{
    int x = (int)(fr->left + t / fr->span_s * (fr->right - fr->left));
    int y0 = (int)(fr->top + (double)lane * fr->lane_h) + 2;
    int y1 = (int)(fr->top + (double)(lane + 1) * fr->lane_h) - 2;
    for (int y = y0; y < y1; y++) {
        uint32_t c = pixel(im, x, y);
        if ((c & 0xff) < 0xc0 || (c >> 8 & 0xff) != (c & 0xff) || (c >> 16) != (c & 0xff))
            return 0;
    }
    return 1;
}

static void test_plot_size(void)
{
    lors_ll_t ll;
    char path[512], err[256];
    load_hand(&ll);
    snprintf(path, sizeof path, "%s/ll-size.png", lns_test_tmpdir());
    CU_ASSERT_EQUAL(lors_ll_plot_png(&ll, path, 10, 10, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "10x10"));
    CU_ASSERT_EQUAL(lors_ll_plot_png(&ll, "/nonexistent/dir/x.png", 640, 300, err, sizeof err),
                    -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "/nonexistent/dir/x.png"));
    static const int sizes[][2] = {{320, 200}, {641, 301}, {1200, 600}};
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL_FATAL(lors_ll_plot_png(&ll, path, sizes[i][0], sizes[i][1], err,
                                               sizeof err), 0);
        image_t im;
        if (image_load(&im, path, sizes[i][0], sizes[i][1])) {
            size_t ink = 0; /* something was drawn: not every pixel is white */
            for (int y = 0; y < im.h; y++)
                for (int x = 0; x < im.w; x++)
                    ink += pixel(&im, x, y) != 0xffffff;
            CU_ASSERT(ink > 1000);
        }
        cairo_surface_destroy(im.s);
    }
    lors_ll_free(&ll);
}

/* The hand-written log's fetches where the log put them, in ms after the first event (100.000):
 * a:1 (lane 0): 1.1 won 0-2.1, 1.2 won 1.0-5.6.  b:2 (lane 1): 1.3 failed 0-1.0, 1.5 won
 * 1.5-3.6, 1.4 redundant and cancelled 2.0-4.1; nothing from 1.0 to 1.5 nor after 4.1. */
static void test_plot_hand(void)
{
    lors_ll_t ll;
    lors_ll_frame_t fr;
    char path[512], err[256];
    load_hand(&ll);
    snprintf(path, sizeof path, "%s/ll-hand.png", lns_test_tmpdir());
    CU_ASSERT_EQUAL_FATAL(lors_ll_plot_png(&ll, path, 640, 300, err, sizeof err), 0);
    CU_ASSERT_EQUAL_FATAL(lors_ll_plot_frame(&ll, 640, 300, &fr, err, sizeof err), 0);
    CU_ASSERT(fr.span_s >= 0.0058 && fr.span_s < 0.0058 * 1.5);
    CU_ASSERT(fr.left > 0 && fr.right > fr.left && fr.right <= 640);
    CU_ASSERT(fr.top > 0 && fr.lane_h > 20 && fr.top + 2 * fr.lane_h < 300);
    CU_ASSERT_EQUAL(lors_ll_bar_kind(fetch(&ll, "1.1")), LORS_LL_BAR_WON);
    CU_ASSERT_EQUAL(lors_ll_bar_kind(fetch(&ll, "1.3")), LORS_LL_BAR_FAILED);
    CU_ASSERT_EQUAL(lors_ll_bar_kind(fetch(&ll, "1.4")), LORS_LL_BAR_REDUNDANT);
    CU_ASSERT_EQUAL(fetch(&ll, "1.3")->t_stop, 100001000000LL);
    CU_ASSERT_EQUAL(fetch(&ll, "1.4")->t_stop, 100004100000LL);
    const uint32_t *c = lors_ll_bar_rgb;
    image_t im;
    if (image_load(&im, path, 640, 300)) {
        CU_ASSERT(lane_count(&im, &fr, 0, 0.0005, c[LORS_LL_BAR_WON]) > 10);
        CU_ASSERT(lane_count(&im, &fr, 0, 0.0015, c[LORS_LL_BAR_WON]) > 10);
        CU_ASSERT(lane_count(&im, &fr, 0, 0.0045, c[LORS_LL_BAR_WON]) > 10);
        for (double t = 0.0001; t < 0.0058; t += 0.0001) {
            CU_ASSERT_EQUAL(lane_count(&im, &fr, 0, t, c[LORS_LL_BAR_FAILED]), 0);
            CU_ASSERT_EQUAL(lane_count(&im, &fr, 0, t, c[LORS_LL_BAR_REDUNDANT]), 0);
        }
        CU_ASSERT(lane_empty(&im, &fr, 0, 0.0057));
        CU_ASSERT(lane_count(&im, &fr, 1, 0.0005, c[LORS_LL_BAR_FAILED]) > 5);
        CU_ASSERT(lane_empty(&im, &fr, 1, 0.00125));
        CU_ASSERT(lane_count(&im, &fr, 1, 0.0025, c[LORS_LL_BAR_WON]) > 5);
        CU_ASSERT(lane_count(&im, &fr, 1, 0.0025, c[LORS_LL_BAR_REDUNDANT]) > 2);
        CU_ASSERT_EQUAL(lane_count(&im, &fr, 1, 0.0025, c[LORS_LL_BAR_FAILED]), 0);
        CU_ASSERT(lane_count(&im, &fr, 1, 0.0039, c[LORS_LL_BAR_REDUNDANT]) > 2);
        CU_ASSERT_EQUAL(lane_count(&im, &fr, 1, 0.0039, c[LORS_LL_BAR_WON]), 0);
        CU_ASSERT(lane_empty(&im, &fr, 1, 0.0045));
        CU_ASSERT(lane_empty(&im, &fr, 1, 0.0055));
        /* the redundant fetch lost: hatched, white lines through its colour */
        CU_ASSERT(lane_count(&im, &fr, 1, 0.0030, 0xffffff) > 0);
        CU_ASSERT(lane_count(&im, &fr, 1, 0.0030, 0xffffff) <
                  lane_count(&im, &fr, 1, 0.0030, c[LORS_LL_BAR_REDUNDANT]) * 2);
    }
    cairo_surface_destroy(im.s);
    lors_ll_free(&ll);
}

/* The recorded download: every block's winning fetch in its depot's lane over its span. */
static void test_plot_recorded(void)
{
    char dir[512], path[600], err[256];
    static const char *files[] = {"client.log", "depot0.log", "depot1.log", "depot2.log"};
    lors_ll_t ll;
    lors_ll_frame_t fr;
    lors_ll_init(&ll);
    data_dir(dir, sizeof dir);
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        CU_ASSERT_EQUAL_FATAL(lors_ll_add_file(&ll, path, err, sizeof err), 0);
    }
    CU_ASSERT_EQUAL_FATAL(lors_ll_analyze(&ll), 0);
    snprintf(path, sizeof path, "%s/ll-rec.png", lns_test_tmpdir());
    CU_ASSERT_EQUAL_FATAL(lors_ll_plot_png(&ll, path, 1200, 600, err, sizeof err), 0);
    CU_ASSERT_EQUAL_FATAL(lors_ll_plot_frame(&ll, 1200, 600, &fr, err, sizeof err), 0);
    image_t im;
    size_t seen = 0;
    if (image_load(&im, path, 1200, 600))
        for (size_t i = 0; i < ll.nf; i++) {
            const lors_ll_fetch_t *f = &ll.f[i];
            size_t lane = 0;
            while (lane < ll.nd && strcmp(ll.d[lane].name, f->depot) != 0)
                lane++;
            CU_ASSERT_FATAL(lane < ll.nd && f->committed);
            double mid = (double)(f->t[LORS_LL_REQ_SENT] + f->t[LORS_LL_COMMIT]) / 2;
            double t = (mid - (double)ll.t0) / 1e9;
            int n = lane_count(&im, &fr, lane, t, lors_ll_bar_rgb[LORS_LL_BAR_WON]);
            CU_ASSERT(n > 5);
            seen += n > 5;
        }
    CU_ASSERT_EQUAL(seen, ll.nf);
    cairo_surface_destroy(im.s);
    lors_ll_free(&ll);
}

/* After the last plot: cairo's and fontconfig's caches freed, for LeakSanitizer. */
static int plot_exit(void)
{
    lors_ll_plot_exit();
    return 0;
}

static const lns_test_case tests[] = {
    {"hand-written log: table and fit", test_hand_table},
    {"fit: REPLY medians, least squares, none", test_fit_methods},
    {"recorded 3-depot log: every block matched", test_recorded},
    {"plot: sizes, errors, a PNG cairo reads back", test_plot_size},
    {"plot: each fetch of the hand log in its lane, time and colour", test_plot_hand},
    {"plot: the recorded log's fetches in their lanes", test_plot_recorded},
};

LNS_TEST_MAIN_WITH("lors_lifelines", NULL, plot_exit, tests)
