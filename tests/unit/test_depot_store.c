/* test_depot_store.c -- the depot's storage layer, settings and keys, without the network.
 *
 * The store runs on a fresh directory per test: allocations, the write path, space
 * accounting and soft reclaim, expiry, the SQLite reload after a restart and the cleanup of
 * orphan files; slab files (no file per small allocation, no stale bytes from a reused slot,
 * CHNG across 64 KiB, free lists rebuilt at restart).  Then the parsers of sizes, durations,
 * resources and the whole command line, and the capability keys. */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "depot.h"
#include "lns_units.h"
#include "lns_log.h"
#include "lns_test.h"
#include "lns_time.h"

static depot_config_t cfg;
static depot_store_t st;
static int dirseq;

/* A fresh config with one resource of the given sizes in a new directory. */
static void setup(uint64_t hard, uint64_t soft, int64_t maxdur)
{
    depot_config_init(&cfg);
    cfg.nres = 1;
    snprintf(cfg.res[0].dir, sizeof cfg.res[0].dir, "%s/store%d", lns_test_tmpdir(), dirseq++);
    cfg.res[0].hard = hard;
    cfg.res[0].soft = soft;
    cfg.res[0].max_duration = maxdur;
}

static int open_store(void)
{
    char err[512];
    int rc = depot_store_open(&st, &cfg, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "depot_store_open: %s\n", err);
    return rc;
}

static void key_of(const depot_newalloc_t *na, int kind, char *key, char *tk)
{
    depot_key_format(na->id, na->secret[kind], key);
    sprintf(tk, "%u", (unsigned)na->typekey[kind]);
}

static depot_alloc_t *lookup(const depot_newalloc_t *na, int kind, int *rc)
{
    char key[64], tk[16];
    depot_alloc_t *a = NULL;
    int k = -1;
    key_of(na, kind, key, tk);
    *rc = depot_store_lookup(&st, "", key, tk, &a, &k);
    if (*rc == IBP_OK && k != kind) {
        depot_alloc_release(a);
        *rc = -999;
        return NULL;
    }
    return *rc == IBP_OK ? a : NULL;
}

/* Append (offset UINT64_MAX) or write bytes through the data path. */
static int put(const depot_newalloc_t *na, uint64_t offset, const void *buf, uint64_t len)
{
    int rc;
    uint64_t at;
    depot_data_t d;
    depot_alloc_t *a = lookup(na, DEPOT_WRITE, &rc);
    if (!a)
        return rc;
    rc = depot_write_begin(a, offset, len, &at, &d);
    if (rc == IBP_OK) {
        if (len > 0 && pwrite(d.fd, buf, len, (off_t)(d.base + at)) != (ssize_t)len) {
            depot_write_abort(a, &d);
            rc = IBP_E_FILE_WRITE;
        } else {
            rc = depot_write_commit(a, &d, at + len);
        }
    }
    depot_alloc_release(a);
    return rc;
}

static uint64_t cur_size(const depot_newalloc_t *na)
{
    int rc;
    depot_row_t row;
    depot_alloc_t *a = lookup(na, DEPOT_READ, &rc);
    if (!a)
        return UINT64_MAX;
    depot_alloc_snapshot(a, &row);
    depot_alloc_release(a);
    return row.cur_size;
}

/* Read back n bytes at off (inside the current size, as LOAD does); 0 if they equal want. */
static int check_data(const depot_newalloc_t *na, uint64_t off, const void *want, size_t n)
{
    int rc;
    depot_row_t row;
    depot_data_t d;
    if (n == 0)
        return 0;
    char *got = malloc(n);
    depot_alloc_t *a = lookup(na, DEPOT_READ, &rc);
    if (!a || !got) {
        free(got);
        if (a)
            depot_alloc_release(a);
        return -1;
    }
    depot_alloc_snapshot(a, &row);
    ssize_t r = -1;
    if (off + n <= row.cur_size && depot_data_open(a->res, &row, 0, &d) == 0) {
        r = pread(d.fd, got, n, (off_t)(d.base + off));
        depot_data_close(&d);
    }
    depot_alloc_release(a);
    rc = r == (ssize_t)n && memcmp(got, want, n) == 0 ? 0 : -1;
    free(got);
    return rc;
}

static depot_res_status_t status(void)
{
    depot_res_status_t s;
    memset(&s, 0xff, sizeof s);
    depot_store_status(&st, 0, &s);
    return s;
}

static void test_alloc_store_load_free(void)
{
    depot_newalloc_t na;
    char buf[10000];
    int rc;

    setup(1 << 20, 1 << 20, 3600);
    CU_ASSERT_FATAL(open_store() == 0);
    CU_ASSERT_EQUAL_FATAL(depot_store_allocate(&st, 0, IBP_HARD, IBP_BYTEARRAY, 600, 10000, &na),
                          IBP_OK);
    CU_ASSERT_EQUAL(cur_size(&na), 0);
    lns_test_fill(buf, sizeof buf, 7);
    CU_ASSERT_EQUAL(put(&na, UINT64_MAX, buf, 4000), IBP_OK);
    CU_ASSERT_EQUAL(put(&na, UINT64_MAX, buf + 4000, 6000), IBP_OK);
    CU_ASSERT_EQUAL(cur_size(&na), 10000);
    CU_ASSERT_EQUAL(check_data(&na, 0, buf, sizeof buf), 0);
    /* full: one more byte would pass max_size */
    CU_ASSERT_EQUAL(put(&na, UINT64_MAX, "x", 1), IBP_E_WOULD_EXCEED_LIMIT);
    CU_ASSERT_EQUAL(put(&na, 9999, "y", 2), IBP_E_WOULD_EXCEED_LIMIT);
    CU_ASSERT_EQUAL(cur_size(&na), 10000);
    /* WRITE inside */
    CU_ASSERT_EQUAL(put(&na, 100, "abc", 3), IBP_OK);
    memcpy(buf + 100, "abc", 3);
    CU_ASSERT_EQUAL(check_data(&na, 0, buf, sizeof buf), 0);
    CU_ASSERT_EQUAL(status().nallocs, 1);
    CU_ASSERT_EQUAL(status().hard_used, 10000);

    /* 10000 bytes live in the 16 KiB slab, not in a file of their own */
    char path[PATH_MAX + 64], slab[PATH_MAX + 64];
    struct stat sb;
    snprintf(path, sizeof path, "%s/data/%02x/%016llx", cfg.res[0].dir, (unsigned)(na.id >> 56),
             (unsigned long long)na.id);
    snprintf(slab, sizeof slab, "%s/slab/16384", cfg.res[0].dir);
    CU_ASSERT_EQUAL(access(path, F_OK), -1);
    CU_ASSERT(stat(slab, &sb) == 0 && sb.st_size >= 10000 && sb.st_blocks > 0);

    /* free with DECR of the read count; the slot is punched out with the last reference */
    depot_alloc_t *a = lookup(&na, DEPOT_MANAGE, &rc);
    CU_ASSERT_FATAL(a != NULL);
    CU_ASSERT_EQUAL(depot_store_decr(a, IBP_READCAP), IBP_OK);
    depot_alloc_release(a);
    CU_ASSERT(stat(slab, &sb) == 0 && sb.st_blocks == 0);
    CU_ASSERT_PTR_NULL(lookup(&na, DEPOT_READ, &rc));
    CU_ASSERT_EQUAL(rc, IBP_E_CAP_NOT_FOUND);
    CU_ASSERT_EQUAL(status().nallocs, 0);
    CU_ASSERT_EQUAL(status().hard_used, 0);

    /* past 64 KiB: an own file, created by the first STORE, gone with the last reference */
    CU_ASSERT_EQUAL_FATAL(depot_store_allocate(&st, 0, IBP_HARD, IBP_BYTEARRAY, 600, 65537, &na),
                          IBP_OK);
    snprintf(path, sizeof path, "%s/data/%02x/%016llx", cfg.res[0].dir, (unsigned)(na.id >> 56),
             (unsigned long long)na.id);
    CU_ASSERT_EQUAL(access(path, F_OK), -1);
    CU_ASSERT_EQUAL(put(&na, UINT64_MAX, buf, sizeof buf), IBP_OK);
    CU_ASSERT_EQUAL(access(path, F_OK), 0);
    CU_ASSERT_EQUAL(check_data(&na, 0, buf, sizeof buf), 0);
    a = lookup(&na, DEPOT_MANAGE, &rc);
    CU_ASSERT_FATAL(a != NULL);
    /* a TRUNCATE below the size gives the own file's tail back */
    struct stat fsb;
    CU_ASSERT_EQUAL(depot_store_truncate(a, 100), IBP_OK);
    CU_ASSERT(stat(path, &fsb) == 0 && fsb.st_size == 100);
    CU_ASSERT_EQUAL(check_data(&na, 0, buf, 100), 0);
    CU_ASSERT_EQUAL(depot_store_decr(a, IBP_READCAP), IBP_OK);
    depot_alloc_release(a);
    CU_ASSERT_EQUAL(access(path, F_OK), -1);
    depot_store_close(&st);
}

static void test_write_gap_and_truncate(void)
{
    depot_newalloc_t na;
    char zeros[50] = {0};
    int rc;

    setup(1 << 20, 0, 3600);
    CU_ASSERT_FATAL(open_store() == 0);
    CU_ASSERT_EQUAL_FATAL(depot_store_allocate(&st, 0, IBP_HARD, IBP_BYTEARRAY, 60, 1000, &na),
                          IBP_OK);
    CU_ASSERT_EQUAL(put(&na, UINT64_MAX, "0123456789", 10), IBP_OK);
    /* a write past the end leaves a gap of zeros */
    CU_ASSERT_EQUAL(put(&na, 60, "END", 3), IBP_OK);
    CU_ASSERT_EQUAL(cur_size(&na), 63);
    CU_ASSERT_EQUAL(check_data(&na, 10, zeros, 50), 0);
    CU_ASSERT_EQUAL(check_data(&na, 60, "END", 3), 0);

    depot_alloc_t *a = lookup(&na, DEPOT_MANAGE, &rc);
    CU_ASSERT_FATAL(a != NULL);
    /* TRUNCATE, as ACCRE: the maximum size becomes the new size, the current size is cut to
     * it; growing changes the maximum (and the space taken) only */
    CU_ASSERT_EQUAL(depot_store_truncate(a, 5), IBP_OK);
    CU_ASSERT_EQUAL(cur_size(&na), 5);
    CU_ASSERT_EQUAL(status().hard_used, 5);
    CU_ASSERT_EQUAL(put(&na, 5, "x", 1), IBP_E_WOULD_EXCEED_LIMIT);
    CU_ASSERT_EQUAL(depot_store_truncate(a, 20), IBP_OK);
    CU_ASSERT_EQUAL(cur_size(&na), 5);
    CU_ASSERT_EQUAL(status().hard_used, 20);
    CU_ASSERT_EQUAL(depot_store_truncate(a, 2 << 20), IBP_E_WOULD_EXCEED_LIMIT);
    CU_ASSERT_EQUAL(status().hard_used, 20);
    CU_ASSERT_EQUAL(put(&na, 19, "", 0), IBP_OK);
    CU_ASSERT_EQUAL(check_data(&na, 0, "01234\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 19), 0);
    CU_ASSERT_EQUAL(put(&na, 19, "y", 1), IBP_OK);
    /* CHNG: not below the current size, not past the free space */
    CU_ASSERT_EQUAL(depot_store_change(a, 10, 0, 0), IBP_E_WOULD_DAMAGE_DATA);
    CU_ASSERT_EQUAL(depot_store_change(a, 2 << 20, 0, 0), IBP_E_WOULD_EXCEED_LIMIT);
    CU_ASSERT_EQUAL(depot_store_change(a, 5000, 0, 0), IBP_OK);
    CU_ASSERT_EQUAL(status().hard_used, 5000);
    CU_ASSERT_EQUAL(depot_store_change(a, 0, 7200, 0), IBP_E_LONG_DURATION);
    /* soft may use hard space that hard allocations leave unused */
    CU_ASSERT_EQUAL(depot_store_change(a, 0, 0, IBP_SOFT), IBP_OK);
    CU_ASSERT_EQUAL(status().hard_used, 0);
    CU_ASSERT_EQUAL(status().soft_used, 5000);
    CU_ASSERT_EQUAL(depot_store_change(a, 0, 60, IBP_HARD), IBP_OK);
    CU_ASSERT_EQUAL(status().hard_used, 5000);
    CU_ASSERT_EQUAL(status().soft_used, 0);
    /* write count to 0: a count only, as in LoCI 1.3.1 and ACCRE 1.4 (docs/interop.md) */
    CU_ASSERT_EQUAL(depot_store_decr(a, IBP_WRITECAP), IBP_OK);
    CU_ASSERT_EQUAL(put(&na, UINT64_MAX, "z", 1), IBP_OK);
    CU_ASSERT_EQUAL(depot_store_decr(a, IBP_WRITECAP), IBP_E_INVALID_PARAMETER);
    CU_ASSERT_EQUAL(depot_store_incr(a, IBP_WRITECAP), IBP_OK);
    CU_ASSERT_EQUAL(put(&na, UINT64_MAX, "z", 1), IBP_OK);
    depot_alloc_release(a);
    depot_store_close(&st);
}

static void test_space_accounting(void)
{
    depot_newalloc_t na, h1;
    setup(1000, 500, 3600);
    CU_ASSERT_FATAL(open_store() == 0);
    /* hard may not pass the hard capacity, even with soft space free */
    CU_ASSERT_EQUAL(depot_store_allocate(&st, 0, IBP_HARD, 1, 60, 1001, &na),
                    IBP_E_WOULD_EXCEED_LIMIT);
    CU_ASSERT_EQUAL(depot_store_allocate(&st, 0, IBP_SOFT, 1, 60, 1501, &na),
                    IBP_E_WOULD_EXCEED_LIMIT);
    CU_ASSERT_EQUAL(depot_store_allocate(&st, 0, IBP_HARD, 1, 60, 600, &h1), IBP_OK);
    /* soft gets soft + unused hard = 500 + 400 */
    CU_ASSERT_EQUAL(depot_store_allocate(&st, 0, IBP_SOFT, 1, 60, 901, &na),
                    IBP_E_WOULD_EXCEED_LIMIT);
    CU_ASSERT_EQUAL(depot_store_allocate(&st, 0, IBP_SOFT, 1, 60, 900, &na), IBP_OK);
    depot_res_status_t s = status();
    CU_ASSERT_EQUAL(s.hard_used, 600);
    CU_ASSERT_EQUAL(s.soft_used, 900);
    CU_ASSERT_EQUAL(s.nallocs, 2);
    CU_ASSERT_EQUAL(depot_store_allocate(&st, 0, IBP_SOFT, 1, 60, 1, &na),
                    IBP_E_WOULD_EXCEED_LIMIT);
    /* other errors */
    CU_ASSERT_EQUAL(depot_store_allocate(&st, 1, IBP_SOFT, 1, 60, 1, &na), IBP_E_INVALID_RID);
    CU_ASSERT_EQUAL(depot_store_allocate(&st, 0, IBP_SOFT, 2, 60, 1, &na),
                    IBP_E_TYPE_NOT_SUPPORTED);
    CU_ASSERT_EQUAL(depot_store_allocate(&st, 0, 3, 1, 60, 1, &na), IBP_E_INV_PAR_ATRL);
    CU_ASSERT_EQUAL(depot_store_allocate(&st, 0, IBP_SOFT, 1, 60, 0, &na), IBP_E_INV_PAR_SIZE);
    /* STATUS CHANGE may not go below what is allocated */
    CU_ASSERT_EQUAL(depot_store_set_limits(&st, 0, 599, 0, 0), IBP_E_WOULD_DAMAGE_DATA);
    CU_ASSERT_EQUAL(depot_store_set_limits(&st, 0, 0, 399, 0), IBP_E_WOULD_DAMAGE_DATA);
    CU_ASSERT_EQUAL(depot_store_set_limits(&st, 0, 2000, 0, 100), IBP_OK);
    s = status();
    CU_ASSERT_EQUAL(s.hard, 2000);
    CU_ASSERT_EQUAL(s.soft, 500);
    CU_ASSERT_EQUAL(s.max_duration, 100);
    CU_ASSERT_EQUAL(depot_store_allocate(&st, 0, IBP_SOFT, 1, 101, 1, &na), IBP_E_LONG_DURATION);
    depot_store_close(&st);
}

static void test_soft_reclaim_order(void)
{
    depot_newalloc_t a, b, c, h, x;
    int rc;
    setup(1000, 500, 3600);
    CU_ASSERT_FATAL(open_store() == 0);
    CU_ASSERT_EQUAL(depot_store_allocate(&st, 0, IBP_SOFT, 1, 100, 400, &a), IBP_OK);
    CU_ASSERT_EQUAL(depot_store_allocate(&st, 0, IBP_SOFT, 1, 50, 400, &b), IBP_OK);
    CU_ASSERT_EQUAL(depot_store_allocate(&st, 0, IBP_SOFT, 1, 200, 400, &c), IBP_OK);
    /* hard 600 fits the hard capacity; soft borrowed 700 of it: b (soonest) must go */
    CU_ASSERT_EQUAL(depot_store_allocate(&st, 0, IBP_HARD, 1, 10, 600, &h), IBP_OK);
    CU_ASSERT_PTR_NULL(lookup(&b, DEPOT_READ, &rc));
    CU_ASSERT_EQUAL(rc, IBP_E_CAP_NOT_FOUND);
    depot_alloc_t *p = lookup(&a, DEPOT_READ, &rc);
    CU_ASSERT_PTR_NOT_NULL(p);
    if (p)
        depot_alloc_release(p);
    /* next: a (100 s) goes before c (200 s) */
    CU_ASSERT_EQUAL(depot_store_allocate(&st, 0, IBP_HARD, 1, 10, 400, &x), IBP_OK);
    CU_ASSERT_PTR_NULL(lookup(&a, DEPOT_READ, &rc));
    p = lookup(&c, DEPOT_READ, &rc);
    CU_ASSERT_PTR_NOT_NULL(p);
    if (p)
        depot_alloc_release(p);
    /* soft is never reclaimed for soft, and hard never past the hard capacity */
    CU_ASSERT_EQUAL(depot_store_allocate(&st, 0, IBP_SOFT, 1, 10, 101, &x),
                    IBP_E_WOULD_EXCEED_LIMIT);
    CU_ASSERT_EQUAL(depot_store_allocate(&st, 0, IBP_HARD, 1, 10, 1, &x),
                    IBP_E_WOULD_EXCEED_LIMIT);
    depot_res_status_t s = status();
    CU_ASSERT_EQUAL(s.hard_used, 1000);
    CU_ASSERT_EQUAL(s.soft_used, 400);
    CU_ASSERT_EQUAL(s.nallocs, 3);
    depot_store_close(&st);
}

static void test_expiry_arithmetic(void)
{
    int64_t e = 0;
    CU_ASSERT_EQUAL(depot_expiry(1000, 10, 100, &e), IBP_OK);
    CU_ASSERT_EQUAL(e, 1010);
    CU_ASSERT_EQUAL(depot_expiry(1000, -1, 100, &e), IBP_OK);
    CU_ASSERT_EQUAL(e, 1100);
    CU_ASSERT_EQUAL(depot_expiry(1000, 100, 100, &e), IBP_OK);
    CU_ASSERT_EQUAL(e, 1100);
    CU_ASSERT_EQUAL(depot_expiry(1000, 101, 100, &e), IBP_E_LONG_DURATION);
    CU_ASSERT_EQUAL(depot_expiry(1000, 0, 100, &e), IBP_E_INV_PAR_ATDR);
    CU_ASSERT_EQUAL(depot_expiry(1000, -2, 100, &e), IBP_E_INV_PAR_ATDR);
    CU_ASSERT_EQUAL(depot_timeout_ms(0, 300), 1000);
    CU_ASSERT_EQUAL(depot_timeout_ms(-5, 300), 1000);
    CU_ASSERT_EQUAL(depot_timeout_ms(30, 300), 30000);
    CU_ASSERT_EQUAL(depot_timeout_ms(100000, 300), 300000);
}

static void test_expiry_in_store(void)
{
    depot_newalloc_t na, keep;
    int rc;
    setup(1 << 20, 0, 3600);
    CU_ASSERT_FATAL(open_store() == 0);
    CU_ASSERT_EQUAL(depot_store_allocate(&st, 0, IBP_HARD, 1, 60, 1000, &na), IBP_OK);
    CU_ASSERT_EQUAL(depot_store_allocate(&st, 0, IBP_HARD, 1, -1, 2000, &keep), IBP_OK);
    CU_ASSERT_EQUAL(put(&na, UINT64_MAX, "data", 4), IBP_OK);
    depot_alloc_t *a = lookup(&keep, DEPOT_MANAGE, &rc);
    CU_ASSERT_FATAL(a != NULL);
    depot_row_t row;
    depot_alloc_snapshot(a, &row);
    depot_alloc_release(a);
    CU_ASSERT(row.expires >= lns_now_s() + 3599 && row.expires <= lns_now_s() + 3600);
    lns_now_advance_s(61); /* the test clock: na's minute has passed, keep's hour not */
    /* refused at once, even before the reaper ran */
    CU_ASSERT_PTR_NULL(lookup(&na, DEPOT_READ, &rc));
    CU_ASSERT_EQUAL(rc, IBP_E_CAP_NOT_FOUND);
    depot_store_reap(&st);
    depot_res_status_t s = status();
    CU_ASSERT_EQUAL(s.hard_used, 2000);
    CU_ASSERT_EQUAL(s.nallocs, 1);
    depot_store_close(&st);
}

static void test_restart_reload(void)
{
    depot_newalloc_t na[50], gone;
    char buf[3000], path[PATH_MAX + 64];
    int rc;

    setup(1 << 20, 1 << 20, 3600);
    CU_ASSERT_FATAL(open_store() == 0);
    for (int i = 0; i < 50; i++) {
        CU_ASSERT_EQUAL_FATAL(depot_store_allocate(&st, 0, i % 2 ? IBP_SOFT : IBP_HARD, 1, 600,
                                                   3000, &na[i]), IBP_OK);
        lns_test_fill(buf, sizeof buf, (uint64_t)i);
        CU_ASSERT_EQUAL(put(&na[i], UINT64_MAX, buf, (uint64_t)(i * 50)), IBP_OK);
    }
    depot_res_status_t before = status();
    CU_ASSERT_EQUAL(depot_store_allocate(&st, 0, IBP_HARD, 1, 60, 100, &gone), IBP_OK);
    CU_ASSERT_EQUAL(put(&gone, UINT64_MAX, "soon gone", 9), IBP_OK);
    depot_store_close(&st);

    /* an orphan file (a crash between row delete and unlink) and the file of one that
     * expires while the depot is down must both go */
    snprintf(path, sizeof path, "%s/data/ab/abcdef0123456789", cfg.res[0].dir);
    int fd = open(path, O_CREAT | O_WRONLY, 0644);
    CU_ASSERT_FATAL(fd >= 0);
    close(fd);
    lns_now_advance_s(61); /* the test clock: gone's minute passes while the depot is down */

    CU_ASSERT_FATAL(open_store() == 0);
    CU_ASSERT_EQUAL(access(path, F_OK), -1);
    snprintf(path, sizeof path, "%s/data/%02x/%016llx", cfg.res[0].dir,
             (unsigned)(gone.id >> 56), (unsigned long long)gone.id);
    CU_ASSERT_EQUAL(access(path, F_OK), -1);
    CU_ASSERT_PTR_NULL(lookup(&gone, DEPOT_READ, &rc));
    for (int i = 0; i < 50; i++) {
        lns_test_fill(buf, sizeof buf, (uint64_t)i);
        CU_ASSERT_EQUAL(cur_size(&na[i]), (uint64_t)(i * 50));
        CU_ASSERT_EQUAL(check_data(&na[i], 0, buf, (size_t)(i * 50)), 0);
    }
    depot_res_status_t after = status();
    CU_ASSERT_EQUAL(after.nallocs, 50);
    CU_ASSERT_EQUAL(after.hard_used, before.hard_used);
    CU_ASSERT_EQUAL(after.soft_used, before.soft_used);
    /* every capability kind still works */
    depot_alloc_t *a = lookup(&na[3], DEPOT_MANAGE, &rc);
    CU_ASSERT_PTR_NOT_NULL(a);
    if (a)
        depot_alloc_release(a);
    depot_store_close(&st);
}

static void test_reload_many_fast(void)
{
    depot_newalloc_t na;
    setup(1ULL << 40, 0, 3600);
    CU_ASSERT_FATAL(open_store() == 0);
    for (int i = 0; i < 20000; i++)
        if (depot_store_allocate(&st, 0, IBP_HARD, 1, 600, 4096, &na) != IBP_OK) {
            CU_FAIL("allocate");
            break;
        }
    depot_store_close(&st);
    double t0 = lns_test_cpu_s();
    CU_ASSERT_FATAL(open_store() == 0);
    double secs = lns_test_cpu_s() - t0;
    CU_ASSERT_EQUAL(status().nallocs, 20000);
    /* judged in CPU time, which a busy machine does not stretch, with a wide margin */
    CU_ASSERT(secs < 1);
    if (secs >= 1)
        fprintf(stderr, "reload of 20000 allocations: %.2f s of CPU\n", secs);
    depot_store_close(&st);
}

/* ---- slab files -------------------------------------------------------------------------- */

static depot_row_t row_of(const depot_newalloc_t *na)
{
    int rc;
    depot_row_t row;
    memset(&row, 0xff, sizeof row);
    depot_alloc_t *a = lookup(na, DEPOT_READ, &rc);
    if (a) {
        depot_alloc_snapshot(a, &row);
        depot_alloc_release(a);
    }
    return row;
}

static int free_alloc(const depot_newalloc_t *na)
{
    int rc;
    depot_alloc_t *a = lookup(na, DEPOT_MANAGE, &rc);
    if (!a)
        return rc;
    rc = depot_store_decr(a, IBP_READCAP);
    depot_alloc_release(a);
    return rc;
}

static int manage(const depot_newalloc_t *na, int truncate, uint64_t size)
{
    int rc;
    depot_alloc_t *a = lookup(na, DEPOT_MANAGE, &rc);
    if (!a)
        return rc;
    rc = truncate ? depot_store_truncate(a, size) : depot_store_change(a, size, 0, 0);
    depot_alloc_release(a);
    return rc;
}

/* Regular files under <dir>/data (there should be none for small allocations). */
static int count_data_files(void)
{
    char cmd[PATH_MAX + 64];
    int n = -1;
    snprintf(cmd, sizeof cmd, "find '%s/data' -type f | wc -l", cfg.res[0].dir);
    FILE *p = popen(cmd, "r");
    if (p) {
        if (fscanf(p, "%d", &n) != 1)
            n = -1;
        pclose(p);
    }
    return n;
}

static off_t file_size(const char *name)
{
    char path[PATH_MAX + 64];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s", cfg.res[0].dir, name);
    return stat(path, &sb) == 0 ? sb.st_size : -1;
}

/* Write bytes straight into the slab file at an allocation's slot (a slot that still holds
 * someone's old bytes: a crash before its punch). */
static void scribble_slot(const depot_row_t *row, int byte)
{
    char path[PATH_MAX + 64], *junk = malloc(row->slab);
    snprintf(path, sizeof path, "%s/slab/%u", cfg.res[0].dir, row->slab);
    int fd = open(path, O_WRONLY);
    CU_ASSERT_FATAL(fd >= 0 && junk != NULL);
    memset(junk, byte, row->slab);
    CU_ASSERT(pwrite(fd, junk, row->slab, (off_t)(row->slot * row->slab)) == (ssize_t)row->slab);
    close(fd);
    free(junk);
}

static void test_slab_placement(void)
{
    static const uint64_t sizes[] = {1, 4096, 4097, 8192, 10000, 16384, 20000, 32768, 40000,
                                     65535, 65536};
    static const uint32_t slabs[] = {4096, 4096, 8192, 8192, 16384, 16384, 32768, 32768, 65536,
                                     65536, 65536};
    enum { N = sizeof sizes / sizeof sizes[0], ROUNDS = 3 };
    depot_newalloc_t na[ROUNDS][N];
    static char buf[65536];

    setup(1 << 30, 0, 3600);
    CU_ASSERT_FATAL(open_store() == 0);
    for (int r = 0; r < ROUNDS; r++)
        for (int i = 0; i < N; i++) {
            CU_ASSERT_EQUAL_FATAL(depot_store_allocate(&st, 0, IBP_HARD, 1, 600, sizes[i],
                                                       &na[r][i]), IBP_OK);
            depot_row_t row = row_of(&na[r][i]);
            CU_ASSERT_EQUAL(row.slab, slabs[i]);
            CU_ASSERT(row.slot >= 0);
            lns_test_fill(buf, sizes[i], (uint64_t)(r * N + i));
            CU_ASSERT_EQUAL(put(&na[r][i], UINT64_MAX, buf, sizes[i]), IBP_OK);
        }
    CU_ASSERT_EQUAL(count_data_files(), 0);
    /* per round two allocations of each size up to 32 KiB, three of 64 KiB: no gaps */
    CU_ASSERT_EQUAL(file_size("slab/4096"), 2 * ROUNDS * 4096);
    CU_ASSERT_EQUAL(file_size("slab/65536"), 3 * ROUNDS * 65536);
    for (int r = 0; r < ROUNDS; r++)
        for (int i = 0; i < N; i++) {
            lns_test_fill(buf, sizes[i], (uint64_t)(r * N + i));
            CU_ASSERT_EQUAL(check_data(&na[r][i], 0, buf, sizes[i]), 0);
        }
    /* one past 64 KiB: its own file */
    depot_newalloc_t big;
    CU_ASSERT_EQUAL_FATAL(depot_store_allocate(&st, 0, IBP_HARD, 1, 600, 65537, &big), IBP_OK);
    CU_ASSERT_EQUAL(row_of(&big).slab, 0);
    CU_ASSERT_EQUAL(row_of(&big).slot, -1);
    CU_ASSERT_EQUAL(put(&big, UINT64_MAX, buf, 100), IBP_OK);
    CU_ASSERT_EQUAL(count_data_files(), 1);
    depot_store_close(&st);
}

static void test_slot_reuse_no_stale_bytes(void)
{
    depot_newalloc_t a1, a2;
    char pat[4096], zeros[4096] = {0};
    depot_data_t d;
    uint64_t at;
    int rc;

    setup(1 << 20, 0, 3600);
    CU_ASSERT_FATAL(open_store() == 0);
    CU_ASSERT_EQUAL_FATAL(depot_store_allocate(&st, 0, IBP_HARD, 1, 600, 4096, &a1), IBP_OK);
    memset(pat, 'A', sizeof pat);
    CU_ASSERT_EQUAL(put(&a1, UINT64_MAX, pat, sizeof pat), IBP_OK);
    depot_row_t r1 = row_of(&a1);
    CU_ASSERT_EQUAL(free_alloc(&a1), IBP_OK);

    /* the same class takes the slot just freed */
    CU_ASSERT_EQUAL_FATAL(depot_store_allocate(&st, 0, IBP_HARD, 1, 600, 3000, &a2), IBP_OK);
    depot_row_t r2 = row_of(&a2);
    CU_ASSERT_EQUAL(r2.slab, r1.slab);
    CU_ASSERT_EQUAL_FATAL(r2.slot, r1.slot);
    CU_ASSERT_EQUAL(cur_size(&a2), 0);
    /* as if the punch had never happened: old bytes all over the slot */
    scribble_slot(&r2, 'A');

    /* a WRITE past the end: the gap reads as zeros, not as the old bytes */
    CU_ASSERT_EQUAL(put(&a2, 1000, "xyz", 3), IBP_OK);
    CU_ASSERT_EQUAL(cur_size(&a2), 1003);
    CU_ASSERT_EQUAL(check_data(&a2, 0, zeros, 1000), 0);
    CU_ASSERT_EQUAL(check_data(&a2, 1000, "xyz", 3), 0);
    /* TRUNCATE down (the maximum too), up again, a WRITE past the end: what was cut off
     * does not come back */
    CU_ASSERT_EQUAL(manage(&a2, 1, 1001), IBP_OK);
    CU_ASSERT_EQUAL(cur_size(&a2), 1001);
    CU_ASSERT_EQUAL(manage(&a2, 1, 3000), IBP_OK);
    CU_ASSERT_EQUAL(cur_size(&a2), 1001);
    CU_ASSERT_EQUAL(put(&a2, 1500, "", 0), IBP_OK);
    CU_ASSERT_EQUAL(check_data(&a2, 1000, "x\0\0\0", 4), 0);

    /* an aborted STORE leaves bytes past the size; a later gap must not show them */
    depot_alloc_t *w = lookup(&a2, DEPOT_WRITE, &rc);
    CU_ASSERT_FATAL(w != NULL);
    CU_ASSERT_EQUAL_FATAL(depot_write_begin(w, UINT64_MAX, 1000, &at, &d), IBP_OK);
    CU_ASSERT_EQUAL(at, 1500);
    CU_ASSERT(pwrite(d.fd, pat, 1000, (off_t)(d.base + at)) == 1000);
    depot_write_abort(w, &d);
    depot_alloc_release(w);
    CU_ASSERT_EQUAL(cur_size(&a2), 1500);
    CU_ASSERT_EQUAL(put(&a2, 2900, "end", 3), IBP_OK);
    CU_ASSERT_EQUAL(check_data(&a2, 1500, zeros, 1400), 0);
    CU_ASSERT_EQUAL(check_data(&a2, 2900, "end", 3), 0);
    /* an empty WRITE past the end grows the size: zeros again */
    scribble_slot(&r2, 'A');
    CU_ASSERT_EQUAL(manage(&a2, 1, 100), IBP_OK);
    CU_ASSERT_EQUAL(manage(&a2, 1, 3000), IBP_OK);
    CU_ASSERT_EQUAL(put(&a2, 3000, "", 0), IBP_OK);
    CU_ASSERT_EQUAL(cur_size(&a2), 3000);
    CU_ASSERT_EQUAL(check_data(&a2, 100, zeros, 2900), 0);
    depot_store_close(&st);
}

static void test_chng_moves_across_64k(void)
{
    depot_newalloc_t na, other;
    static char buf[200000], zeros[65536];
    char path[PATH_MAX + 64];

    setup(1 << 30, 0, 3600);
    CU_ASSERT_FATAL(open_store() == 0);
    lns_test_fill(buf, sizeof buf, 42);
    CU_ASSERT_EQUAL_FATAL(depot_store_allocate(&st, 0, IBP_HARD, 1, 600, 40000, &na), IBP_OK);
    CU_ASSERT_EQUAL(put(&na, UINT64_MAX, buf, 30000), IBP_OK);
    depot_row_t before = row_of(&na);
    CU_ASSERT_EQUAL(before.slab, 65536);
    /* within the slot: only max_size changes */
    CU_ASSERT_EQUAL(manage(&na, 0, 65536), IBP_OK);
    CU_ASSERT_EQUAL(row_of(&na).slab, 65536);
    CU_ASSERT_EQUAL(row_of(&na).slot, before.slot);
    CU_ASSERT_EQUAL(manage(&na, 0, 35000), IBP_OK); /* down, still >= cur_size: same slot */
    CU_ASSERT_EQUAL(row_of(&na).slot, before.slot);
    CU_ASSERT_EQUAL(manage(&na, 0, 29999), IBP_E_WOULD_DAMAGE_DATA);
    /* past it: moved to an own file, bytes and all */
    CU_ASSERT_EQUAL(manage(&na, 0, sizeof buf), IBP_OK);
    depot_row_t after = row_of(&na);
    CU_ASSERT_EQUAL(after.slab, 0);
    CU_ASSERT_EQUAL(after.slot, -1);
    CU_ASSERT_EQUAL(after.max_size, sizeof buf);
    CU_ASSERT_EQUAL(after.cur_size, 30000);
    snprintf(path, sizeof path, "%s/data/%02x/%016llx", cfg.res[0].dir, (unsigned)(na.id >> 56),
             (unsigned long long)na.id);
    CU_ASSERT_EQUAL(access(path, F_OK), 0);
    CU_ASSERT_EQUAL(check_data(&na, 0, buf, 30000), 0);
    CU_ASSERT_EQUAL(put(&na, UINT64_MAX, buf + 30000, sizeof buf - 30000), IBP_OK);
    CU_ASSERT_EQUAL(check_data(&na, 0, buf, sizeof buf), 0);
    CU_ASSERT_EQUAL(status().hard_used, sizeof buf);

    /* the old slot is free again (and empty) */
    CU_ASSERT_EQUAL_FATAL(depot_store_allocate(&st, 0, IBP_HARD, 1, 600, 65536, &other), IBP_OK);
    CU_ASSERT_EQUAL(row_of(&other).slot, before.slot);
    CU_ASSERT_EQUAL(put(&other, 65536, "", 0), IBP_OK);
    CU_ASSERT_EQUAL(check_data(&other, 0, zeros, sizeof zeros), 0);

    /* and all of it survives a restart */
    depot_store_close(&st);
    CU_ASSERT_FATAL(open_store() == 0);
    CU_ASSERT_EQUAL(row_of(&na).slab, 0);
    CU_ASSERT_EQUAL(check_data(&na, 0, buf, sizeof buf), 0);
    CU_ASSERT_EQUAL(row_of(&other).slot, before.slot);
    depot_store_close(&st);
}

/* Allocation i's size in test_restart_rebuilds_free_lists: 1 to 65536 bytes, well spread. */
static uint64_t spread_size(int i)
{
    return 1 + (uint64_t)(i * 7919) % 65536;
}

/* Allocate size bytes (at most 64 KiB; hard, 600 s) as *na and store size bytes from seed. */
static void alloc_filled(depot_newalloc_t *na, uint64_t size, uint64_t seed)
{
    static char buf[65536];
    CU_ASSERT_EQUAL_FATAL(depot_store_allocate(&st, 0, IBP_HARD, 1, 600, size, na), IBP_OK);
    lns_test_fill(buf, size, seed);
    CU_ASSERT_EQUAL(put(na, UINT64_MAX, buf, size), IBP_OK);
}

/* The size of the slab file of class c. */
static off_t slab_size(int c)
{
    char name[32];
    snprintf(name, sizeof name, "slab/%u", DEPOT_SLOT_MIN << c);
    return file_size(name);
}

static void test_restart_rebuilds_free_lists(void)
{
    enum { N = 300 };
    depot_newalloc_t na[2 * N];
    int live[2 * N];
    static char buf[65536];

    setup(1 << 30, 0, 3600);
    CU_ASSERT_FATAL(open_store() == 0);
    for (int i = 0; i < N; i++) {
        alloc_filled(&na[i], spread_size(i), (uint64_t)i);
        live[i] = 1;
    }
    for (int i = 0; i < N; i += 3) {
        CU_ASSERT_EQUAL(free_alloc(&na[i]), IBP_OK);
        live[i] = 0;
    }
    off_t sizes[DEPOT_SLAB_CLASSES];
    for (int c = 0; c < DEPOT_SLAB_CLASSES; c++)
        sizes[c] = slab_size(c);
    depot_store_close(&st);

    CU_ASSERT_FATAL(open_store() == 0);
    /* as many new ones of each size as were freed: they fill the holes, the files do not
     * grow; and no slot is handed out twice, or someone's bytes would change */
    for (int i = 0; i < N; i += 3) {
        alloc_filled(&na[N + i], spread_size(i), (uint64_t)(N + i));
        live[N + i] = 1;
    }
    for (int c = 0; c < DEPOT_SLAB_CLASSES; c++)
        CU_ASSERT(slab_size(c) <= sizes[c]);
    int bad = 0;
    for (int i = 0; i < 2 * N; i++) {
        if (i >= N && !live[i])
            continue;
        uint64_t size = spread_size(i % N);
        lns_test_fill(buf, size, (uint64_t)i);
        if (live[i] && check_data(&na[i], 0, buf, size) != 0)
            bad++;
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(count_data_files(), 0);
    depot_store_close(&st);
}

/* SQL that takes a database back to an older schema: the columns each schema added (2: slab
 * files, 3: aliases, 4: disk checksums) dropped, the schema's number set. */
#define DROP(col) "ALTER TABLE alloc DROP COLUMN " col ";"
#define NO_CKS DROP("cks_type") DROP("cks_bs")
#define NO_ALIASES DROP("master") DROP("alias_off") DROP("alias_len") NO_CKS
#define NO_SLABS DROP("slab") DROP("slot") NO_ALIASES
#define SCHEMA(v) "UPDATE depot SET value = '" v "' WHERE key = 'schema';"

/* The path of resource 0's database (the result lives until the next call). */
static const char *db_path(void)
{
    static char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/depot.db", cfg.res[0].dir);
    return path;
}

/* Run sql on the database of the closed store: to make it as an older depot wrote it. */
static void rewrite_db(const char *sql)
{
    sqlite3 *db = NULL;
    CU_ASSERT_FATAL(sqlite3_open(db_path(), &db) == SQLITE_OK);
    CU_ASSERT_EQUAL(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

/* A fresh store with one allocation *old of n bytes from seed (buf holds them too), closed;
 * then sql run on its database. */
static void older_store(depot_newalloc_t *old, char *buf, size_t n, uint64_t seed,
                        const char *sql)
{
    setup(1 << 30, 0, 3600);
    CU_ASSERT_FATAL(open_store() == 0);
    lns_test_fill(buf, n, seed);
    alloc_filled(old, n, seed);
    depot_store_close(&st);
    rewrite_db(sql);
}

/* A database written before slab files (schema 1, no slab/slot columns) is upgraded: its
 * allocations keep their own files, new small ones go to slabs. */
static void test_schema_1_upgrade(void)
{
    depot_newalloc_t old, small;
    static char buf[100000];

    setup(1 << 30, 0, 3600);
    CU_ASSERT_FATAL(open_store() == 0);
    lns_test_fill(buf, sizeof buf, 5);
    CU_ASSERT_EQUAL_FATAL(depot_store_allocate(&st, 0, IBP_HARD, 1, 600, 3000, &old), IBP_OK);
    CU_ASSERT_EQUAL(manage(&old, 0, sizeof buf), IBP_OK); /* now in its own file */
    CU_ASSERT_EQUAL(put(&old, UINT64_MAX, buf, sizeof buf), IBP_OK);
    depot_store_close(&st);
    rewrite_db(NO_SLABS SCHEMA("1"));

    CU_ASSERT_FATAL(open_store() == 0);
    CU_ASSERT_EQUAL(row_of(&old).slab, 0);
    CU_ASSERT_EQUAL(check_data(&old, 0, buf, sizeof buf), 0);
    CU_ASSERT_EQUAL_FATAL(depot_store_allocate(&st, 0, IBP_HARD, 1, 600, 100, &small), IBP_OK);
    CU_ASSERT_EQUAL(row_of(&small).slab, 4096);
    CU_ASSERT_EQUAL(put(&small, UINT64_MAX, buf, 100), IBP_OK);
    depot_store_close(&st);
    CU_ASSERT_FATAL(open_store() == 0);
    CU_ASSERT_EQUAL(check_data(&old, 0, buf, sizeof buf), 0);
    CU_ASSERT_EQUAL(check_data(&small, 0, buf, 100), 0);
    depot_store_close(&st);
}

/* A database written before aliases (schema 2) is upgraded: its rows stay allocations. */
static void test_schema_2_upgrade(void)
{
    depot_newalloc_t old;
    static char buf[5000];
    sqlite3 *db = NULL;

    older_store(&old, buf, sizeof buf, 7, NO_ALIASES SCHEMA("2"));

    CU_ASSERT_FATAL(open_store() == 0);
    CU_ASSERT_EQUAL(row_of(&old).master, 0);
    CU_ASSERT_EQUAL(check_data(&old, 0, buf, sizeof buf), 0);
    depot_store_close(&st);
    CU_ASSERT_FATAL(sqlite3_open(db_path(), &db) == SQLITE_OK);
    sqlite3_stmt *q = NULL;
    CU_ASSERT_FATAL(sqlite3_prepare_v2(db, "SELECT value FROM depot WHERE key = 'schema'", -1, &q,
                                       NULL) == SQLITE_OK);
    CU_ASSERT(sqlite3_step(q) == SQLITE_ROW &&
              strcmp((const char *)sqlite3_column_text(q, 0), "4") == 0);
    sqlite3_finalize(q);
    sqlite3_close(db);
}

/* A database written before disk checksums (schema 3) is upgraded: no row has any; a new
 * allocation with them keeps them across a reopen. */
static void test_schema_3_upgrade(void)
{
    depot_newalloc_t old, cks;
    static char buf[5000];

    older_store(&old, buf, sizeof buf, 9, NO_CKS SCHEMA("3"));

    CU_ASSERT_FATAL(open_store() == 0);
    CU_ASSERT_EQUAL(row_of(&old).cks_type, 0);
    CU_ASSERT_EQUAL(check_data(&old, 0, buf, sizeof buf), 0);
    CU_ASSERT_EQUAL_FATAL(depot_store_allocate_cks(&st, 0, IBP_HARD, 1, 600, 100, DEPOT_CKS_MD5,
                                                   4096, &cks), IBP_OK);
    depot_store_close(&st);
    CU_ASSERT_FATAL(open_store() == 0);
    CU_ASSERT_EQUAL(row_of(&cks).cks_type, DEPOT_CKS_MD5);
    CU_ASSERT_EQUAL(row_of(&cks).cks_bs, 4096);
    depot_store_close(&st);
}

/* ---- settings ---------------------------------------------------------------------------- */

static void test_parse_size_duration(void)
{
    uint64_t v;
    int64_t d;
    CU_ASSERT(lns_parse_size("4096", &v) == 0 && v == 4096);
    CU_ASSERT(lns_parse_size("64K", &v) == 0 && v == 65536);
    CU_ASSERT(lns_parse_size("64M", &v) == 0 && v == 64ULL << 20);
    CU_ASSERT(lns_parse_size("1g", &v) == 0 && v == 1ULL << 30);
    CU_ASSERT(lns_parse_size("2T", &v) == 0 && v == 2ULL << 40);
    CU_ASSERT(lns_parse_size("0", &v) == 0 && v == 0);
    const char *bad_sizes[] = {"", "-1", "1X", "1.5G", "G", "1GB", " 1", "99999999999999999999",
                               "9000000T"};
    for (size_t i = 0; i < sizeof bad_sizes / sizeof *bad_sizes; i++)
        CU_ASSERT_EQUAL(lns_parse_size(bad_sizes[i], &v), -1);
    CU_ASSERT(depot_parse_duration("3600", &d) == 0 && d == 3600);
    CU_ASSERT(depot_parse_duration("90s", &d) == 0 && d == 90);
    CU_ASSERT(depot_parse_duration("15m", &d) == 0 && d == 900);
    CU_ASSERT(depot_parse_duration("2h", &d) == 0 && d == 7200);
    CU_ASSERT(depot_parse_duration("30d", &d) == 0 && d == 30 * 86400);
    const char *bad_durs[] = {"", "0", "0d", "-1", "1w", "h", "1.5h", "99999999999999999d"};
    for (size_t i = 0; i < sizeof bad_durs / sizeof *bad_durs; i++)
        CU_ASSERT_EQUAL(depot_parse_duration(bad_durs[i], &d), -1);
}

static void test_parse_resource(void)
{
    depot_resource_cfg_t r;
    char err[512];
    CU_ASSERT_EQUAL(depot_parse_resource("/srv/ibp", &r, err, sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(r.dir, "/srv/ibp");
    CU_ASSERT_EQUAL(r.hard, 1ULL << 30);
    CU_ASSERT_EQUAL(r.soft, 1ULL << 30);
    CU_ASSERT_EQUAL(r.max_duration, 30 * 86400);
    CU_ASSERT_EQUAL(depot_parse_resource("/d,hard=10G,soft=0,max-duration=2h", &r, err,
                                         sizeof err), 0);
    CU_ASSERT_EQUAL(r.hard, 10ULL << 30);
    CU_ASSERT_EQUAL(r.soft, 0);
    CU_ASSERT_EQUAL(r.max_duration, 7200);
    CU_ASSERT_EQUAL(depot_parse_resource("/d,size=1G", &r, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "size"));
    CU_ASSERT_EQUAL(depot_parse_resource("/d,hard=lots", &r, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "hard"));
    CU_ASSERT_EQUAL(depot_parse_resource("hard=1G", &r, err, sizeof err), -1);
    CU_ASSERT_EQUAL(depot_parse_resource("/d,max-duration=0", &r, err, sizeof err), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "max-duration"));
    CU_ASSERT_EQUAL(depot_parse_resource("/d,hard=0,soft=0", &r, err, sizeof err), -1);
    CU_ASSERT_EQUAL(depot_parse_resource("/d,hard", &r, err, sizeof err), -1);
}

static int args(const char *line, char *err, size_t errlen)
{
    char buf[2048], *argv[64];
    int argc = 0;
    snprintf(buf, sizeof buf, "ibp_depot %s", line);
    for (char *t = strtok(buf, " "); t && argc < 63; t = strtok(NULL, " "))
        argv[argc++] = t;
    argv[argc] = NULL;
    err[0] = 0;
    return depot_config_args(&cfg, argc, argv, err, errlen);
}

static void test_config_args_and_file(void)
{
    char err[1024], path[PATH_MAX], line[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/depot.conf", lns_test_tmpdir());
    FILE *f = fopen(path, "w");
    CU_ASSERT_FATAL(f != NULL);
    fprintf(f, "# a comment\n\nport = 7000   # trailing comment\n"
               "resource = /a,hard=1M\nresource = /b,soft=2M\n"
               "idle-timeout=30\n durability = fsync\nadmin-password = s3cret\n");
    fclose(f);

    snprintf(line, sizeof line, "-c %s", path);
    CU_ASSERT_EQUAL(args(line, err, sizeof err), DEPOT_CFG_OK);
    CU_ASSERT_EQUAL(cfg.port, 7000);
    CU_ASSERT_EQUAL(cfg.nres, 2);
    CU_ASSERT_EQUAL(cfg.res[1].soft, 2ULL << 20);
    CU_ASSERT_EQUAL(cfg.idle_timeout, 30);
    CU_ASSERT_EQUAL(cfg.durability, DEPOT_DUR_FSYNC);
    CU_ASSERT_STRING_EQUAL(cfg.admin_password, "s3cret");
    CU_ASSERT_EQUAL(cfg.max_connections, 4096);

    /* flags override the file, and flag resources replace the file's */
    snprintf(line, sizeof line, "--port 0 --config %s -r /c --max-connections 10", path);
    CU_ASSERT_EQUAL(args(line, err, sizeof err), DEPOT_CFG_OK);
    CU_ASSERT_EQUAL(cfg.port, 0);
    CU_ASSERT_EQUAL(cfg.nres, 1);
    CU_ASSERT_STRING_EQUAL(cfg.res[0].dir, "/c");
    CU_ASSERT_EQUAL(cfg.max_connections, 10);

    /* bad settings: one message naming the setting */
    struct { const char *line, *needle; } bad[] = {
        {"-r /a --port 70000", "port"},
        {"-r /a --port x", "port"},
        {"-r /a --max-connections 0", "max-connections"},
        {"-r /a --durability sometimes", "durability"},
        {"-r /a --log-level loud", "log-level"},
        {"-r /a --event-sample -1", "event-sample"},
        {"-r /a --idle-timeout 0", "idle-timeout"},
        {"-r /a,hard=1Q", "hard"},
        {"-r /a --bogus", "bogus"},
        {"-r /a --port", "port"},
        {"--port 1", "resource"},
        {"-r /a -r /a", "twice"},
        {"-r /a --public-host a/b", "public-host"},
        {"-r /a --admin-password-file /nonexistent/pw", "admin-password-file"},
        {"-r /a extra", "extra"},
        {"-c /nonexistent/depot.conf", "nonexistent"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int rc = args(bad[i].line, err, sizeof err);
        if (rc != DEPOT_CFG_ERR || !strstr(err, bad[i].needle))
            fprintf(stderr, "\n  '%s': rc %d, '%s'\n", bad[i].line, rc, err);
        CU_ASSERT_EQUAL(rc, DEPOT_CFG_ERR);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, bad[i].needle));
    }
    /* errors in the file name the line */
    f = fopen(path, "w");
    CU_ASSERT_FATAL(f != NULL);
    fprintf(f, "port = 1\nno equals sign here\n");
    fclose(f);
    snprintf(line, sizeof line, "-c %s -r /a", path);
    CU_ASSERT_EQUAL(args(line, err, sizeof err), DEPOT_CFG_ERR);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, ":2:"));
    f = fopen(path, "w");
    CU_ASSERT_FATAL(f != NULL);
    fprintf(f, "max-timeout = forever\n");
    fclose(f);
    CU_ASSERT_EQUAL(args(line, err, sizeof err), DEPOT_CFG_ERR);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "max-timeout"));
}

/* ---- keys --------------------------------------------------------------------------------- */

static void test_keys(void)
{
    uint8_t secret[3][DEPOT_SECRET_LEN], dig[3][DEPOT_DIGEST_LEN], s2[DEPOT_SECRET_LEN];
    uint32_t tk[3];
    char key[DEPOT_KEY_HEX + 1], tks[16];
    uint64_t id;

    for (int k = 0; k < 3; k++) {
        CU_ASSERT_EQUAL(depot_random(secret[k], DEPOT_SECRET_LEN), 0);
        CU_ASSERT_EQUAL(depot_typekey_new(&tk[k]), 0);
        CU_ASSERT(tk[k] >= 1 && tk[k] <= 0x7fffffffu);
        depot_digest(secret[k], dig[k]);
    }
    CU_ASSERT(memcmp(secret[0], secret[1], DEPOT_SECRET_LEN) != 0);
    depot_key_format(0x0123456789abcdefULL, secret[1], key);
    CU_ASSERT_EQUAL(strlen(key), 48);
    CU_ASSERT_NSTRING_EQUAL(key, "0123456789abcdef", 16);
    CU_ASSERT_EQUAL(depot_key_parse(key, &id, s2), 0);
    CU_ASSERT_EQUAL(id, 0x0123456789abcdefULL);
    CU_ASSERT_EQUAL(memcmp(s2, secret[1], DEPOT_SECRET_LEN), 0);

    for (int k = 0; k < 3; k++) {
        sprintf(tks, "%u", (unsigned)tk[k]);
        CU_ASSERT_EQUAL(depot_key_match((const uint8_t(*)[32])dig, tk, secret[k], tks), k);
        sprintf(tks, "%u", (unsigned)tk[(k + 1) % 3]);
        if (tk[k] != tk[(k + 1) % 3])
            CU_ASSERT_EQUAL(depot_key_match((const uint8_t(*)[32])dig, tk, secret[k], tks), -1);
        sprintf(tks, "0%u", (unsigned)tk[k]);
        CU_ASSERT_EQUAL(depot_key_match((const uint8_t(*)[32])dig, tk, secret[k], tks), -1);
    }
    /* one flipped bit of the secret */
    memcpy(s2, secret[2], DEPOT_SECRET_LEN);
    s2[7] ^= 0x10;
    sprintf(tks, "%u", (unsigned)tk[2]);
    CU_ASSERT_EQUAL(depot_key_match((const uint8_t(*)[32])dig, tk, s2, tks), -1);

    key[20] = 'A';
    CU_ASSERT_EQUAL(depot_key_parse(key, &id, s2), -1);
    CU_ASSERT_EQUAL(depot_key_parse("0123", &id, s2), -1);
    CU_ASSERT_EQUAL(depot_key_parse("", &id, s2), -1);

    CU_ASSERT_EQUAL(depot_password_ok("pw", "pw"), 1);
    CU_ASSERT_EQUAL(depot_password_ok("pw", "pW"), 0);
    CU_ASSERT_EQUAL(depot_password_ok("pw", "pw2"), 0);
    CU_ASSERT_EQUAL(depot_password_ok("", ""), 0);
}

static void test_lookup_rejects(void)
{
    depot_newalloc_t na;
    depot_alloc_t *a = NULL;
    char key[64], tk[16];
    int kind;

    setup(1 << 20, 0, 3600);
    CU_ASSERT_FATAL(open_store() == 0);
    CU_ASSERT_EQUAL_FATAL(depot_store_allocate(&st, 0, IBP_HARD, 1, 60, 100, &na), IBP_OK);
    key_of(&na, DEPOT_WRITE, key, tk);
    CU_ASSERT_EQUAL(depot_store_lookup(&st, "0", key, tk, &a, &kind), IBP_OK);
    CU_ASSERT_EQUAL(kind, DEPOT_WRITE);
    depot_alloc_release(a);
    CU_ASSERT_EQUAL(depot_store_lookup(&st, "1", key, tk, &a, &kind), IBP_E_CAP_NOT_FOUND);
    CU_ASSERT_EQUAL(depot_store_lookup(&st, "00", key, tk, &a, &kind), IBP_E_CAP_NOT_FOUND);
    CU_ASSERT_EQUAL(depot_store_lookup(&st, "", key, "1", &a, &kind), IBP_E_CAP_NOT_FOUND);
    key[47] = key[47] == '0' ? '1' : '0';
    CU_ASSERT_EQUAL(depot_store_lookup(&st, "", key, tk, &a, &kind), IBP_E_CAP_NOT_FOUND);
    key[0] = key[0] == '0' ? '1' : '0';
    CU_ASSERT_EQUAL(depot_store_lookup(&st, "", key, tk, &a, &kind), IBP_E_CAP_NOT_FOUND);
    CU_ASSERT_EQUAL(depot_store_lookup(&st, "", "IBP-12345", tk, &a, &kind), IBP_E_CAP_NOT_FOUND);
    depot_store_close(&st);
}

static const lns_test_case store_tests[] = {
    {"allocate, store, load back, free", test_alloc_store_load_free},
    {"write gap, truncate, change, write count", test_write_gap_and_truncate},
    {"space accounting hard/soft", test_space_accounting},
    {"soft reclaim order", test_soft_reclaim_order},
    {"expiry arithmetic and timeout clamping", test_expiry_arithmetic},
    {"expiry in the store", test_expiry_in_store},
    {"restart reload, expired and orphan files", test_restart_reload},
    {"reload of 20000 allocations", test_reload_many_fast},
    {"small allocations live in slab files", test_slab_placement},
    {"a reused slot never shows old bytes", test_slot_reuse_no_stale_bytes},
    {"CHNG across 64 KiB moves the bytes", test_chng_moves_across_64k},
    {"restart rebuilds the slab free lists", test_restart_rebuilds_free_lists},
    {"schema 1 database upgraded", test_schema_1_upgrade},
    {"schema 2 database upgraded", test_schema_2_upgrade},
    {"schema 3 database upgraded", test_schema_3_upgrade},
    {"lookup rejects forged keys", test_lookup_rejects},
};

static const lns_test_case config_tests[] = {
    {"sizes and durations", test_parse_size_duration},
    {"resource specifications", test_parse_resource},
    {"flags and config file", test_config_args_and_file},
};

static const lns_test_case key_tests[] = {
    {"generation and verification", test_keys},
};

void lns_test_register(void)
{
    lns_log_open("test_depot_store", NULL, LNS_LOG_ERROR, NULL, 0);
    LNS_TEST_SUITE("depot_store", NULL, NULL, store_tests);
    LNS_TEST_SUITE("depot_config", NULL, NULL, config_tests);
    LNS_TEST_SUITE("depot_keys", NULL, NULL, key_tests);
}
