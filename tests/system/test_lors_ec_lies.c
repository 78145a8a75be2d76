/* test_lors_ec_lies.c -- erasure-coded exNodes that lie, on real depots: pieces relabelled as
 * other pieces (two data columns swapped, a parity column called a data column, a data column
 * copied with its digests under another index, a column shifted by a stripe) never come out
 * as the file's bytes with exit 0, through lors_download nor through lors_serve (no 200 with
 * wrong bytes); an exNode of lns_ec version 1 is read and shown as unbound; the keeper keeps
 * the mappings it cannot interpret (a piece index outside the layout, a k that is not the
 * file's, a function lns does not know in a replicated file), their allocations intact, and
 * reports them; an exNode whose layout overflows (size INT64_MAX and its kin) is refused with
 * one line by every tool, and lors_serve and lors_mount answer it with an error while they go
 * on serving the good file beside it.
 *
 * Each lie is built from a real upload with libexnode, as someone editing the XML would. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lns_time.h"
#include "test_tools.h"

#define ND 4
#define PIECE 65536
#define STRIPE (2 * PIECE)
#define FILE_SIZE (2 * STRIPE + 37000) /* two full stripes and a short one */

static tt_env_t T;

/* A 2+1 upload of FILE_SIZE bytes from seed, one stripe a column mapping, on depots 0-2. */
static void upload(const char *name, uint64_t seed, char *src, char *xnd)
{
    snprintf(src, 4096, "%s/%s.bin", lns_test_tmpdir(), name);
    snprintf(xnd, 4096, "%s/%s.xnd", lns_test_tmpdir(), name);
    CU_ASSERT_EQUAL_FATAL(tt_make_file(src, FILE_SIZE, seed), 0);
    int rc = tt_sh(&T, "$B/lors_upload --no-rc -q --depot-list '%s' --ec 2+1 --ec-piece 64K "
                       "-F 3 -d 1h --force -o '%s' '%s'", tt_dlist(&T, 0, 1, 2, -1), xnd, src);
    if (rc != 0)
        fprintf(stderr, "lors_upload --ec: %s", T.err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
}

/* The index of x's column mapping of column j over stripe s, or -1. */
static int column_of(const xnd_t *x, int j, int64_t s)
{
    for (size_t i = 0; i < x->nmaps; i++) {
        int64_t v;
        const xnd_mapping_t *m = x->maps[i];
        if (m->func && xnd_meta_get_int(&m->func->args, "piece", &v) == XND_OK && v == j &&
            m->exnode_offset == s * STRIPE)
            return (int)i;
    }
    return -1;
}

static void set_arg(xnd_mapping_t *m, const char *name, int64_t v)
{
    CU_ASSERT_EQUAL(xnd_meta_set_int(&m->func->args, name, v), XND_OK);
}

static void save(const xnd_t *x, const char *path)
{
    char e[256];
    CU_ASSERT_EQUAL_FATAL(xnd_write_file(x, path, e, sizeof e), XND_OK);
}

/* ---- relabelled pieces ------------------------------------------------------------------- */

enum { LIE_SWAP, LIE_PARITY, LIE_COPY, LIE_SHIFT, NLIES };
static const char *const lie_name[NLIES] = {"swap", "parity", "copy", "shift"};

/* The lie into path: from the honest exNode xnd. */
static void make_lie(const char *xnd, int lie, const char *path)
{
    xnd_t *x = tt_load(xnd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    int d0 = column_of(x, 0, 0), d1 = column_of(x, 1, 0), p = column_of(x, 2, 0);
    CU_ASSERT_FATAL(d0 >= 0 && d1 >= 0 && p >= 0);
    switch (lie) {
    case LIE_SWAP: /* data columns 0 and 1 of stripe 0 trade their indexes */
        set_arg(x->maps[d0], "piece", 1);
        set_arg(x->maps[d1], "piece", 0);
        break;
    case LIE_PARITY: /* the parity column of stripe 0 calls itself data column 0 */
        set_arg(x->maps[p], "piece", 0);
        CU_ASSERT_EQUAL(xnd_remove(x, (size_t)d0), XND_OK);
        break;
    case LIE_COPY: { /* data column 1, allocation and digests, also as column 0 */
        xnd_mapping_t *m = xnd_mapping_copy(x->maps[d1]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(m);
        set_arg(m, "piece", 0);
        CU_ASSERT_EQUAL(xnd_remove(x, (size_t)d0), XND_OK);
        CU_ASSERT_EQUAL(xnd_append(x, m), XND_OK);
        break;
    }
    case LIE_SHIFT: { /* stripe 0's data column 0 moved onto stripe 1, in place of its own */
        int s1 = column_of(x, 0, 1);
        CU_ASSERT_FATAL(s1 >= 0);
        x->maps[d0]->exnode_offset = STRIPE;
        xnd_changed(x);
        CU_ASSERT_EQUAL(xnd_remove(x, (size_t)s1), XND_OK);
        break;
    }
    }
    save(x, path);
    xnd_free(x);
}

/* Fetched bytes: the source's, or a failure with a line saying why; never other bytes with
 * success.  1 if the file's bytes came out. */
static int honest(int ok, const char *got, const char *src, const char *what)
{
    int same = ok && tt_same_file(got, src);
    if (ok && !same)
        fprintf(stderr, "%s: success with wrong bytes\n", what);
    CU_ASSERT(!ok || same);
    return same;
}

static void test_relabelled_download(void)
{
    char src[4096], xnd[4096], lie[4200], got[4400];
    tt_revive(&T);
    upload("honest", 11, src, xnd);
    for (int l = 0; l < NLIES; l++) {
        snprintf(lie, sizeof lie, "%s.%s", xnd, lie_name[l]);
        snprintf(got, sizeof got, "%s.got", lie);
        make_lie(xnd, l, lie);
        int rc = tt_sh(&T, "$B/lors_download --no-rc --quiet -T 3s -o '%s' '%s'", got, lie);
        int same = honest(rc == 0 || rc == 10, got, src, lie_name[l]);
        if (!same) { /* failed: one line naming the file */
            CU_ASSERT_NOT_EQUAL(rc, 0);
            CU_ASSERT_PTR_NOT_NULL(strstr(T.err, lie));
        }
    }
    /* an exNode of version 1 is read, and lors_ls says its digests are not bound */
    xnd_t *x = tt_load(xnd);
    xnd_meta_list_t *l;
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_EQUAL_FATAL(xnd_meta_get_meta(&x->meta, "lns_ec", &l), XND_OK);
    CU_ASSERT_EQUAL(xnd_meta_set_int(l, "version", 1), XND_OK);
    snprintf(lie, sizeof lie, "%s.v1", xnd);
    save(x, lie);
    xnd_free(x);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_ls --no-rc -T 3s '%s'", lie), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "3 stripes (lns_ec version 1: digests not bound to "
                                         "the pieces' places)"));
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_ls --no-rc -T 3s --json '%s'", lie), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "\"version\":1,\"bound\":false}"));
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_ls --no-rc -T 3s --json '%s'", xnd), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "\"version\":2,\"bound\":true}"));
    tt_free_all(&T, xnd);
}

/* A directory <tmpdir>/name served as NAME.bin for each of the n exNodes that make(xnd, i,
 * path) writes from the honest xnd; its path in dir (4200 bytes). */
static void served_dir(const char *name, const char *xnd,
                       void (*make)(const char *, int, const char *),
                       const char *const *names, int n, char *dir)
{
    char path[4400];
    snprintf(dir, 4200, "%s/%s", lns_test_tmpdir(), name);
    mkdir(dir, 0755);
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%s.bin.xnd", dir, names[i]);
        make(xnd, i, path);
    }
}

/* Start lors_serve on dir; its port, or -1. */
static int start_serve(tt_bg_t *srv, const char *dir)
{
    char logp[PATH_MAX];
    int port;
    return tt_serve(&T, srv, dir, logp, &port, NULL, NULL, NULL, NULL) == 0 ? port : -1;
}

static void stop_serve(tt_bg_t *srv)
{
    kill(srv->pid, SIGTERM);
    CU_ASSERT_EQUAL(tt_wait(&T, srv, 5000), 0);
}

/* GET name from the server on port into got: the HTTP status (0: no answer within 30 s);
 * *clean 1 if curl received the whole body it was promised. */
static int get(int port, const char *name, const char *got, int *clean)
{
    int rc = tt_sh(&T, "curl -s -m 30 -o '%s' -w '%%{http_code}' http://127.0.0.1:%d/%s", got,
                   port, name);
    *clean = rc == 0;
    return atoi(T.out);
}

static void test_relabelled_serve(void)
{
    char src[4096], xnd[4096], dir[4200], got[4400];
    tt_bg_t srv;
    tt_revive(&T);
    upload("served", 12, src, xnd);
    served_dir("lies", xnd, make_lie, lie_name, NLIES, dir);
    int port = start_serve(&srv, dir);
    CU_ASSERT_FATAL(port > 0);
    for (int l = 0; l < NLIES; l++) {
        char name[64];
        int clean;
        snprintf(name, sizeof name, "%s.bin", lie_name[l]);
        snprintf(got, sizeof got, "%s/%s.got", lns_test_tmpdir(), lie_name[l]);
        int code = get(port, name, got, &clean);
        honest(code == 200, got, src, name);
        CU_ASSERT(code == 200 ? clean : code >= 400 && code < 600);
    }
    stop_serve(&srv);
    tt_free_all(&T, xnd);
}

/* ---- the keeper keeps what it cannot interpret ------------------------------------------- */

/* 1 if x still has a mapping with manage capability cap and its depot still holds it. */
static int kept(const xnd_t *x, const char *cap)
{
    int found = 0;
    for (size_t i = 0; x && i < x->nmaps; i++)
        found |= x->maps[i]->cap[XND_MANAGE] && strcmp(x->maps[i]->cap[XND_MANAGE], cap) == 0;
    ibp_probe_t p;
    int alive = ibp_probe(T.cli, cap, &p) == IBP_OK && p.cur_size > 0;
    if (!found || !alive)
        fprintf(stderr, "%s: %s\n", cap, !found ? "left the exNode" : "freed");
    return found && alive;
}

/* Write x to xnd (and free it), then one lors_keep --json pass over it with state db: its
 * exit code, the report in T.out. */
static int save_and_keep(xnd_t *x, const char *xnd, const char *db)
{
    save(x, xnd);
    xnd_free(x);
    return tt_sh(&T, "$B/lors_keep --no-rc --state '%s' --depot-list '%s' -T 3s --json '%s'", db,
                 T.depots, xnd);
}

#define NODD 4

static void test_keep_unread_ec(void)
{
    char src[4096], xnd[4096], src2[4096], xnd2[4096], st[4200];
    char *caps[NODD];
    tt_revive(&T);
    upload("kept", 13, src, xnd);
    upload("donor", 13, src2, xnd2); /* the same bytes in allocations of their own */
    xnd_t *x = tt_load(xnd), *d = tt_load(xnd2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    /* valid pieces under functions that do not fit the 2+1 layout */
    static const struct { const char *arg; int64_t v; } odd[NODD] = {
        {"piece", 7}, {"piece", -1}, {"piece", 2147483647}, {"k", 1}};
    for (int i = 0; i < NODD; i++) {
        xnd_mapping_t *m = xnd_mapping_copy(d->maps[i]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(m);
        set_arg(m, odd[i].arg, odd[i].v);
        caps[i] = strdup(m->cap[XND_MANAGE]);
        CU_ASSERT_EQUAL(xnd_append(x, m), XND_OK);
    }
    snprintf(st, sizeof st, "%s/keep.db", lns_test_tmpdir());
    CU_ASSERT_EQUAL(save_and_keep(x, xnd, st), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "\"unread\":4"));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "\"removed\":0"));
    int rc = tt_sh(&T, "$B/lors_keep --no-rc --state '%s' --depot-list '%s' -T 3s -V '%s'", st,
                   T.depots, xnd);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "4 mappings lns cannot read are kept"));
    x = tt_load(xnd);
    for (int i = 0; i < NODD; i++) {
        CU_ASSERT(kept(x, caps[i]));
        free(caps[i]);
    }
    xnd_free(x);
    CU_ASSERT_EQUAL(tt_downloads_equal(&T, xnd, src), 1);
    tt_free_all(&T, xnd);
    for (size_t i = NODD; d && i < d->nmaps; i++)
        ibp_decr(T.cli, d->maps[i]->cap[XND_MANAGE], IBP_READCAP);
    xnd_free(d);
}

/* A replicated file: a copy under a function lns does not know, its lease over by the
 * exNode (so the keeper counts it dead), stays with its allocation. */
static void test_keep_unread_copies(void)
{
    char src[4096], xnd[4096], src2[4096], xnd2[4096], st[4200];
    tt_revive(&T);
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 300000, 14, 2, 1, T.depots, NULL, src, xnd), 0);
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 300000, 14, 1, 1, T.depots, NULL, src2, xnd2), 0);
    xnd_t *x = tt_load(xnd), *d = tt_load(xnd2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    xnd_mapping_t *m = xnd_mapping_copy(d->maps[0]);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    xnd_mapping_set_func(m, xnd_func_new("someone_elses_cipher"));
    CU_ASSERT_EQUAL(xnd_mapping_set_time(m, 1, lns_now_s() - 60), XND_OK);
    char *cap = strdup(m->cap[XND_MANAGE]);
    CU_ASSERT_EQUAL(xnd_append(x, m), XND_OK);
    xnd_free(d);
    snprintf(st, sizeof st, "%s/keep2.db", lns_test_tmpdir());
    CU_ASSERT_EQUAL(save_and_keep(x, xnd, st), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "\"unread\":1"));
    x = tt_load(xnd);
    CU_ASSERT(kept(x, cap));
    xnd_free(x);
    free(cap);
    tt_free_all(&T, xnd);
}

/* ---- layouts that overflow --------------------------------------------------------------- */

enum { BAD_MAX, BAD_NEAR, BAD_BIGPIECE, NBAD };
static const char *const bad_name[NBAD] = {"max", "near", "bigpiece"};

/* The stripes a size makes at stripe bytes a stripe, without overflowing. */
static int64_t stripes_of(int64_t size, int64_t stripe)
{
    return size / stripe + (size % stripe != 0);
}

/* An honest exNode whose lns_ec and size say a huge file (its mappings still fit it). */
static void make_bad(const char *xnd, int bad, const char *path)
{
    xnd_t *x = tt_load(xnd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    xnd_meta_list_t *l;
    CU_ASSERT_EQUAL_FATAL(xnd_meta_get_meta(&x->meta, "lns_ec", &l), XND_OK);
    int64_t size = bad == BAD_NEAR ? INT64_MAX - STRIPE : INT64_MAX, stripe = STRIPE;
    if (bad == BAD_BIGPIECE) {
        /* the largest layout: 32 pieces of 64 MiB a stripe; every column still says its own */
        stripe = (int64_t)32 * (64 << 20);
        CU_ASSERT_EQUAL(xnd_meta_set_int(l, "piece_size", 64 << 20), XND_OK);
        CU_ASSERT_EQUAL(xnd_meta_set_int(l, "k", 32), XND_OK);
    }
    CU_ASSERT_EQUAL(xnd_meta_set_int(l, "stripes", stripes_of(size, stripe)), XND_OK);
    CU_ASSERT_EQUAL(xnd_set_size(x, size), XND_OK);
    save(x, path);
    xnd_free(x);
}

/* No sanitizer report, no crash: the tool refused the exNode with one line naming it. */
static void refused(int rc, const char *tool, const char *path)
{
    if (rc != 3)
        fprintf(stderr, "%s %s: exit %d: %s\n", tool, path, rc, T.err);
    CU_ASSERT_EQUAL(rc, 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, path));
    CU_ASSERT_PTR_NULL(strstr(T.err, "runtime error"));
    CU_ASSERT_PTR_NULL(strstr(T.err, "Sanitizer"));
    CU_ASSERT_EQUAL(tt_count(T.err, "\n"), 1);
}

static void test_overflow_tools(void)
{
    char src[4096], xnd[4096], bad[4200], st[4400];
    tt_revive(&T);
    upload("huge", 15, src, xnd);
    snprintf(st, sizeof st, "%s/huge.db", lns_test_tmpdir());
    for (int b = 0; b < NBAD; b++) {
        snprintf(bad, sizeof bad, "%s.%s", xnd, bad_name[b]);
        make_bad(xnd, b, bad);
        refused(tt_sh(&T, "$B/lors_ls --no-rc -T 3s '%s'", bad), "lors_ls", bad);
        refused(tt_sh(&T, "$B/lors_download --no-rc --quiet -T 3s -o $D/huge.got '%s'", bad),
                "lors_download", bad);
        refused(tt_sh(&T, "$B/lors_augment --no-rc -q -T 3s --depot-list '%s' '%s'",
                      tt_dlist(&T, 3, -1), bad), "lors_augment", bad);
        refused(tt_sh(&T, "$B/lors_keep --no-rc --state '%s' --depot-list '%s' -T 3s '%s'", st,
                      T.depots, bad), "lors_keep", bad);
    }
    tt_free_all(&T, xnd);
}

/* A directory with the bad exNodes and a good file: the bad ones answer an error, the good
 * one is served before and after them, the server stays up. */
static void test_overflow_serve(void)
{
    char src[4096], xnd[4096], dir[4200], got[4400], good[4400];
    tt_bg_t srv;
    tt_revive(&T);
    upload("good", 16, src, xnd);
    served_dir("huge", xnd, make_bad, bad_name, NBAD, dir);
    snprintf(good, sizeof good, "%s/good.bin.xnd", dir);
    CU_ASSERT_EQUAL_FATAL(tt_sh(&T, "cp '%s' '%s'", xnd, good), 0);
    snprintf(got, sizeof got, "%s/good.got", lns_test_tmpdir());
    int port = start_serve(&srv, dir), clean;
    CU_ASSERT_FATAL(port > 0);
    CU_ASSERT_EQUAL(get(port, "good.bin", got, &clean), 200);
    CU_ASSERT(clean && tt_same_file(got, src));
    CU_ASSERT_EQUAL(tt_sh(&T, "curl -sf http://127.0.0.1:%d/", port), 0);
    for (int b = 0; b < NBAD; b++) {
        char name[64], body[4400];
        snprintf(name, sizeof name, "%s.bin", bad_name[b]);
        snprintf(body, sizeof body, "%s/%s.body", lns_test_tmpdir(), bad_name[b]);
        int code = get(port, name, body, &clean);
        if (code < 400 || code >= 600)
            fprintf(stderr, "GET %s: %d\n", name, code);
        CU_ASSERT(code >= 400 && code < 600);
        char text[4096];
        lns_test_slurp(body, text, sizeof text);
        CU_ASSERT_EQUAL(tt_count(text, "\n"), 1);
        CU_ASSERT_NOT_EQUAL(tt_sh(&T, "curl -sfI -m 30 http://127.0.0.1:%d/%s", port, name), 0);
        CU_ASSERT_EQUAL(kill(srv.pid, 0), 0);
    }
    CU_ASSERT_EQUAL(get(port, "good.bin", got, &clean), 200);
    CU_ASSERT(clean && tt_same_file(got, src));
    stop_serve(&srv);

    /* lors_mount, where FUSE is there: the bad files fail to read, the good one reads */
    if (access("/dev/fuse", R_OK | W_OK) == 0 &&
        system("command -v fusermount3 >/dev/null 2>&1") == 0) {
        char mnt[4200], logp[4200];
        tt_bg_t mb;
        snprintf(mnt, sizeof mnt, "%s/mnt", lns_test_tmpdir());
        snprintf(logp, sizeof logp, "%s/mount.log", lns_test_tmpdir());
        mkdir(mnt, 0755);
        CU_ASSERT_EQUAL_FATAL(tt_spawn(&T, &mb, "lors_mount", "--no-rc", "-f", "-T", "3s",
                                       "--log", logp, dir, mnt, (char *)NULL), 0);
        int up = 0;
        char f[4400];
        struct stat sb;
        snprintf(f, sizeof f, "%s/good.bin", mnt);
        int64_t end = lns_test_deadline(LNS_TEST_WAIT_MS);
        while (!(up = stat(f, &sb) == 0) && lns_test_poll(end))
            ;
        CU_ASSERT_FATAL(up);
        for (int b = 0; b < NBAD; b++) {
            CU_ASSERT_NOT_EQUAL(tt_sh(&T, "timeout 30 cat '%s/%s.bin' > /dev/null", mnt, bad_name[b]), 0);
            CU_ASSERT_EQUAL(tt_sh(&T, "cmp '%s/good.bin' '%s'", mnt, src), 0);
        }
        CU_ASSERT_EQUAL(kill(mb.pid, 0), 0);
        CU_ASSERT_EQUAL(tt_sh(&T, "fusermount3 -u '%s'", mnt), 0);
        int st = tt_wait(&T, &mb, 30000);
        CU_ASSERT_EQUAL(st, 0);
        if (st != 0) { /* what it said, and its log */
            static char log[1 << 14];
            lns_test_slurp(logp, log, sizeof log);
            fprintf(stderr, "lors_mount: status %d\nstderr: %.4000s\nlog: %.4000s\n", st, T.err,
                    log);
        }
    } else {
        printf("SKIP lors_mount part: no /dev/fuse or no fusermount3\n");
    }
    tt_free_all(&T, xnd);
}

static const lns_test_case tests[] = {
    {"relabelled pieces: lors_download never succeeds with wrong bytes", test_relabelled_download},
    {"relabelled pieces: lors_serve never answers 200 with wrong bytes", test_relabelled_serve},
    {"keeper keeps lns_ec mappings that do not fit, and reports them", test_keep_unread_ec},
    {"keeper keeps a copy under an unknown function", test_keep_unread_copies},
    {"overflowing layouts: every tool refuses with one line", test_overflow_tools},
    {"overflowing layouts: lors_serve and lors_mount stay up", test_overflow_serve},
};

TT_MAIN(&T, "lors_ec_lies", ND, tests)
