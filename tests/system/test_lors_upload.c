/* test_lors_upload.c -- liblors upload against real depots: layouts, replicas, checksums,
 * input read once, and depots that are dead before or die during the upload.
 *
 * Four depots live for the whole program; tests that kill a depot start their own extra
 * one.  Every upload is checked the same way (check_upload): each mapping is loaded back
 * with ibp_load and compared with the source and with its lns_checksum digests, the copies
 * of a fragment sit on distinct depots, and the exNode survives serialize/parse/serialize.
 * Each test frees what it uploaded so the depots do not fill up. */
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
#include "lors_b3tree.h"
#include "test_depot.h"
#include "test_lors.h"
#include "xnd.h"

#define ND 4
#define BS ((int64_t)1572867) /* 1.5 MiB + 3: block-size fragments span two STORE chunks */
#define CKBS 65536

TL_FLEET(ND)

static void opts(lors_upload_opts_t *o, const lors_depot_t *d, size_t nd, int copies, int frags)
{
    tl_upload_opts(o, d, nd, copies, frags);
    o->blocksize = BS;
    o->threads = 6;
    o->checksum_blocksize = CKBS;
}

static int cap_port(const char *cap)
{
    ibp_cap_t c;
    return ibp_cap_parse(cap, &c) == IBP_OK ? c.port : -1;
}

/* DECR every allocation of x. */
static void free_xnd(xnd_t *x)
{
    for (size_t i = 0; x && i < x->nmaps; i++)
        ibp_decr(cli, x->maps[i]->cap[XND_MANAGE], IBP_READCAP);
}

/* The whole check of an uploaded exNode against its source.  live: depots that were up. */
static void check_upload(xnd_t *x, const unsigned char *src, size_t n, int copies, int live)
{
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_EQUAL(xnd_size(x), (int64_t)n);
    char err[256];
    CU_ASSERT_EQUAL(xnd_validate(x, 0, err, sizeof err), XND_OK);
    if (n == 0) {
        CU_ASSERT_EQUAL(x->nmaps, 0);
    } else {
        CU_ASSERT_EQUAL(x->nmaps % (size_t)copies, 0);
    }

    /* every byte covered exactly copies times */
    xnd_range_t *rg = NULL;
    size_t nrg = 0;
    CU_ASSERT_EQUAL_FATAL(xnd_coverage(x, NULL, NULL, &rg, &nrg), XND_OK);
    for (size_t i = 0; i < nrg; i++)
        CU_ASSERT_EQUAL(rg[i].count, (size_t)copies);
    free(rg);

    for (size_t i = 0; i < x->nmaps; i++) {
        xnd_mapping_t *m = x->maps[i];
        CU_ASSERT(m->logical_length > 0);
        CU_ASSERT_EQUAL(m->alloc_offset, 0);
        CU_ASSERT(m->alloc_length >= m->logical_length);
        CU_ASSERT(m->start.epoch != XND_TIME_UNKNOWN);
        CU_ASSERT(m->end.epoch != XND_TIME_UNKNOWN && m->end.epoch > m->start.epoch);
        CU_ASSERT_PTR_NOT_NULL(m->cap[XND_READ]);
        CU_ASSERT_PTR_NOT_NULL(m->cap[XND_WRITE]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(m->cap[XND_MANAGE]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(m->func);
        CU_ASSERT_STRING_EQUAL(m->func->name, "lns_checksum");
        const char *alg = NULL, *dig = NULL;
        int64_t bs = 0;
        CU_ASSERT_EQUAL(xnd_meta_get_string(&m->func->args, "algorithm", &alg), XND_OK);
        CU_ASSERT_EQUAL(xnd_meta_get_int(&m->func->args, "blocksize", &bs), XND_OK);
        CU_ASSERT_EQUAL_FATAL(xnd_meta_get_string(&m->func->args, "digests", &dig), XND_OK);
        CU_ASSERT_EQUAL(bs, CKBS);
        CU_ASSERT_EQUAL(strlen(dig), (size_t)((m->logical_length + bs - 1) / bs) * 64);

        unsigned char *got = malloc((size_t)m->logical_length);
        CU_ASSERT_EQUAL_FATAL(ibp_load(cli, m->cap[XND_READ], 0, (uint64_t)m->logical_length,
                                       got),
                              IBP_OK);
        CU_ASSERT(memcmp(got, src + m->exnode_offset, (size_t)m->logical_length) == 0);
        CU_ASSERT_EQUAL(lors_checksum_verify(m, got, (size_t)m->logical_length), LORS_OK);
        got[m->logical_length / 2] ^= 1;
        CU_ASSERT_EQUAL(lors_checksum_verify(m, got, (size_t)m->logical_length), LORS_E_DIGEST);
        free(got);

        ibp_probe_t p;
        CU_ASSERT_EQUAL(ibp_probe(cli, m->cap[XND_MANAGE], &p), IBP_OK);
        /* the data, then the outboard of its blocks (BLAKE3's 16 KiB CVs) */
        CU_ASSERT_EQUAL(p.cur_size, (uint64_t)m->logical_length +
                                        (uint64_t)lors__b3_outboard_len(m->logical_length, bs));
        CU_ASSERT_EQUAL(p.cur_size, (uint64_t)m->alloc_length);

        /* replicas: same digests, distinct depots when there are enough */
        for (size_t j = 0; j < i; j++) {
            xnd_mapping_t *r = x->maps[j];
            if (r->exnode_offset != m->exnode_offset)
                continue;
            CU_ASSERT_EQUAL(r->logical_length, m->logical_length);
            const char *rd = NULL;
            xnd_meta_get_string(&r->func->args, "digests", &rd);
            CU_ASSERT(rd && strcmp(rd, dig) == 0);
            if (copies <= live)
                CU_ASSERT_NOT_EQUAL(cap_port(r->cap[XND_READ]), cap_port(m->cap[XND_READ]));
        }
    }

    /* round trip */
    char *s1 = NULL, *s2 = NULL;
    size_t l1 = 0, l2 = 0;
    xnd_t *y = NULL;
    CU_ASSERT_EQUAL_FATAL(xnd_serialize(x, &s1, &l1, err, sizeof err), XND_OK);
    CU_ASSERT_EQUAL_FATAL(xnd_parse_buf(s1, l1, &y, err, sizeof err), XND_OK);
    CU_ASSERT_EQUAL(y->nmaps, x->nmaps);
    CU_ASSERT_EQUAL(xnd_size(y), (int64_t)n);
    for (size_t i = 0; i < y->nmaps; i++)
        CU_ASSERT_PTR_NOT_NULL(y->maps[i]->func);
    CU_ASSERT_EQUAL(xnd_serialize(y, &s2, &l2, err, sizeof err), XND_OK);
    CU_ASSERT(l1 == l2 && s2 && memcmp(s1, s2, l1) == 0);
    free(s1);
    free(s2);
    xnd_free(y);
}

static int port_in_xnd(const xnd_t *x, int port)
{
    for (size_t i = 0; i < x->nmaps; i++)
        if (cap_port(x->maps[i]->cap[XND_READ]) == port)
            return 1;
    return 0;
}

/* ---- layouts from memory ---- */

static void test_sizes_copies_fragments(void)
{
    static const size_t sizes[] = {0, 1, BS - 1, BS, BS + 1};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        unsigned char *src = tl_data(sizes[si], 100 + si);
        for (int c = 1; c <= 3; c++)
            for (int F = 1; F <= 4; F += 3) {
                lors_upload_opts_t o;
                lors_report_t rep;
                xnd_t *x = NULL;
                opts(&o, ldep, ND, c, F);
                int rc = lors_upload_buf(&o, src, sizes[si], "file.bin", &x, &rep);
                if (rc != LORS_OK)
                    fprintf(stderr, "upload size %zu c %d F %d: %s\n", sizes[si], c, F,
                            rep.error);
                CU_ASSERT_EQUAL_FATAL(rc, LORS_OK);
                check_upload(x, src, sizes[si], c, ND);
                int nf = sizes[si] == 0 ? 0 : (sizes[si] < (size_t)F ? (int)sizes[si] : F);
                CU_ASSERT_EQUAL(x->nmaps, (size_t)(nf * c));
                CU_ASSERT_EQUAL(rep.fragments, nf);
                CU_ASSERT_EQUAL(rep.nissues, 0);
                CU_ASSERT_EQUAL(rep.bytes_read, (int64_t)sizes[si]);
                CU_ASSERT_EQUAL(rep.bytes_stored, (int64_t)sizes[si] * c);
                const char *fn = NULL;
                CU_ASSERT_EQUAL(xnd_meta_get_string(&x->meta, "filename", &fn), XND_OK);
                CU_ASSERT(fn && strcmp(fn, "file.bin") == 0);
                free_xnd(x);
                xnd_free(x);
                lors_report_free(&rep);
            }
        free(src);
    }
}

static void test_large(void)
{
    static const struct { int c, F, from_file; } cases[] = {{1, 4, 1}, {2, 4, 0}, {3, 1, 1}};
    size_t n = 20u * 1000 * 1000 + 17;
    unsigned char *src = tl_data(n, 7);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/large.bin", lns_test_tmpdir());
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    CU_ASSERT_FATAL(fd >= 0 && write(fd, src, n) == (ssize_t)n);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        lors_upload_opts_t o;
        lors_report_t rep;
        xnd_t *x = NULL;
        int rc;
        opts(&o, ldep, ND, cases[i].c, cases[i].F);
        if (i == 2)
            o.duration_s = -1; /* the depot's maximum: end times come from PROBE */
        if (cases[i].from_file) {
            lseek(fd, 0, SEEK_SET);
            rc = lors_upload_fd(&o, fd, (int64_t)n, "large.bin", &x, &rep);
        } else {
            rc = lors_upload_buf(&o, src, n, "large.bin", &x, &rep);
        }
        if (rc != LORS_OK)
            fprintf(stderr, "large upload %zu: %s\n", i, rep.error);
        CU_ASSERT_EQUAL_FATAL(rc, LORS_OK);
        check_upload(x, src, n, cases[i].c, ND);
        CU_ASSERT_EQUAL(x->nmaps, (size_t)(cases[i].c * cases[i].F));
        CU_ASSERT_EQUAL(rep.bytes_read, (int64_t)n);
        CU_ASSERT_EQUAL(rep.bytes_reread, 0);
        if (i == 2)
            for (size_t k = 0; k < x->nmaps; k++)
                CU_ASSERT(x->maps[k]->end.epoch - x->maps[k]->start.epoch > 3500);
        free_xnd(x);
        xnd_free(x);
        lors_report_free(&rep);
    }
    close(fd);
    free(src);
}

/* ---- pipes: unknown length, and the input read once ---- */

typedef struct feeder {
    int fd;
    const unsigned char *data;
    size_t n;
    size_t written;
} feeder_t;

static void *feed(void *arg)
{
    feeder_t *f = arg;
    while (f->written < f->n) {
        ssize_t w = write(f->fd, f->data + f->written, f->n - f->written);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        f->written += (size_t)w;
    }
    close(f->fd);
    return NULL;
}

/* Upload n bytes through a pipe with the length (or -1); returns the rc. */
static int upload_pipe(const lors_upload_opts_t *o, const unsigned char *src, size_t n,
                       int64_t length, xnd_t **x, lors_report_t *rep)
{
    int p[2];
    pthread_t t;
    CU_ASSERT_FATAL(pipe(p) == 0);
    feeder_t f = {p[1], src, n, 0};
    pthread_create(&t, NULL, feed, &f);
    int rc = lors_upload_fd(o, p[0], length, "pipe", x, rep);
    /* whatever the library left unread, drain it so the feeder ends, and count it */
    char buf[65536];
    size_t left = 0;
    ssize_t r;
    while ((r = read(p[0], buf, sizeof buf)) > 0)
        left += (size_t)r;
    pthread_join(t, NULL);
    close(p[0]);
    CU_ASSERT_EQUAL(f.written, n);
    CU_ASSERT_EQUAL(left, 0);
    return rc;
}

static void test_pipe_unknown_length(void)
{
    static const size_t sizes[] = {0, 1, BS - 1, BS, BS + 1, 5 * BS + 12345};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        size_t n = sizes[si];
        unsigned char *src = tl_data(n, 300 + si);
        lors_upload_opts_t o;
        lors_report_t rep;
        xnd_t *x = NULL;
        opts(&o, ldep, ND, 3, 4);
        int rc = upload_pipe(&o, src, n, -1, &x, &rep);
        if (rc != LORS_OK)
            fprintf(stderr, "pipe upload %zu: %s\n", n, rep.error);
        CU_ASSERT_EQUAL_FATAL(rc, LORS_OK);
        check_upload(x, src, n, 3, ND);
        size_t nf = (n + (size_t)BS - 1) / (size_t)BS;
        CU_ASSERT_EQUAL(x->nmaps, nf * 3);
        /* read once: three copies from a pipe, every byte read exactly once */
        CU_ASSERT_EQUAL(rep.bytes_read, (int64_t)n);
        CU_ASSERT_EQUAL(rep.bytes_reread, 0);
        CU_ASSERT_EQUAL(rep.bytes_stored, (int64_t)n * 3);
        /* the last fragment's allocation was shrunk to its length and its outboard */
        for (size_t i = 0; i < x->nmaps; i++)
            CU_ASSERT_EQUAL(x->maps[i]->alloc_length,
                            x->maps[i]->logical_length +
                                lors__b3_outboard_len(x->maps[i]->logical_length, CKBS));
        free_xnd(x);
        xnd_free(x);
        lors_report_free(&rep);
        free(src);
    }
}

static void test_pipe_known_length(void)
{
    size_t n = 3 * BS + 5;
    unsigned char *src = tl_data(n, 41);
    lors_upload_opts_t o;
    lors_report_t rep;
    xnd_t *x = NULL;
    opts(&o, ldep, ND, 2, 1);
    /* F 1 would make one fragment of n bytes; from a pipe fragments stay <= blocksize */
    CU_ASSERT_EQUAL_FATAL(upload_pipe(&o, src, n, (int64_t)n, &x, &rep), LORS_OK);
    check_upload(x, src, n, 2, ND);
    CU_ASSERT_EQUAL(x->nmaps, 4 * 2);
    CU_ASSERT_EQUAL(rep.bytes_read, (int64_t)n);
    free_xnd(x);
    xnd_free(x);
    lors_report_free(&rep);

    /* a pipe shorter than the length given is an error, and leaves nothing behind */
    opts(&o, ldep, ND, 2, 4);
    CU_ASSERT_EQUAL(upload_pipe(&o, src, n - 10, (int64_t)n, &x, &rep), LORS_E_SHORT);
    CU_ASSERT_PTR_NULL(x);
    CU_ASSERT_PTR_NOT_NULL(strstr(rep.error, "ended"));
    lors_report_free(&rep);
    free(src);
}

/* ---- failing depots ---- */

static void test_depot_dead_before(void)
{
    test_depot_t dead;
    lors_depot_t l[ND + 1];
    CU_ASSERT_FATAL(tl_start_depot(&dead, "deadres", "256M") == 0);
    tl_lors_depot(&dead, &l[0]);
    lns_test_server_kill(&dead.srv, SIGKILL);
    memcpy(&l[1], ldep, sizeof ldep);

    size_t n = 6 * 1000 * 1000;
    unsigned char *src = tl_data(n, 55);
    lors_upload_opts_t o;
    lors_report_t rep;
    xnd_t *x = NULL;
    opts(&o, l, ND + 1, 2, 4);
    int rc = lors_upload_buf(&o, src, n, "f", &x, &rep);
    if (rc != LORS_OK)
        fprintf(stderr, "upload with a dead depot: %s\n", rep.error);
    CU_ASSERT_EQUAL_FATAL(rc, LORS_OK);
    check_upload(x, src, n, 2, ND);
    CU_ASSERT_FALSE(port_in_xnd(x, dead.port));
    CU_ASSERT_FATAL(rep.nissues >= 1);
    for (size_t i = 0; i < rep.nissues; i++) {
        CU_ASSERT_EQUAL(rep.issues[i].depot.port, dead.port);
        CU_ASSERT_STRING_EQUAL(rep.issues[i].op, "ALLOCATE");
        CU_ASSERT(rep.issues[i].moved);
        CU_ASSERT_NOT_EQUAL(rep.issues[i].moved_to.port, dead.port);
    }
    free_xnd(x);
    xnd_free(x);
    lors_report_free(&rep);
    free(src);
}

typedef struct killer {
    test_depot_t *victim;
    int killed;
    int allocs, stores_on_victim;
} killer_t;

/* Kill the victim right after the first chunk it has stored: that copy is then mid-fragment. */
static void kill_on_store(void *arg, const lors_event_t *ev)
{
    killer_t *k = arg;
    if (ev->kind == LORS_EV_ALLOCATE)
        k->allocs++;
    if (ev->kind == LORS_EV_STORE_END && ev->depot->port == k->victim->port) {
        k->stores_on_victim++;
        if (!k->killed) {
            lns_test_server_kill(&k->victim->srv, SIGKILL);
            k->killed = 1;
        }
    }
}

static void killed_mid_upload(int from_pipe)
{
    test_depot_t victim;
    lors_depot_t l[ND + 1];
    CU_ASSERT_FATAL(tl_start_depot(&victim, from_pipe ? "victim1" : "victim0", "256M") == 0);
    tl_lors_depot(&victim, &l[0]);
    memcpy(&l[1], ldep, sizeof ldep);
    int vport = victim.port;

    size_t n = 12 * 1000 * 1000 + 3;
    unsigned char *src = tl_data(n, 77 + from_pipe);
    lors_upload_opts_t o;
    lors_report_t rep;
    xnd_t *x = NULL;
    killer_t k = {&victim, 0, 0, 0};
    opts(&o, l, ND + 1, 2, 4);
    o.blocksize = 3 * 1000 * 1000;
    o.on_event = kill_on_store;
    o.event_arg = &k;
    int rc;
    if (from_pipe) {
        rc = upload_pipe(&o, src, n, -1, &x, &rep);
    } else {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/victim.bin", lns_test_tmpdir());
        int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
        CU_ASSERT_FATAL(fd >= 0 && write(fd, src, n) == (ssize_t)n);
        lseek(fd, 0, SEEK_SET);
        rc = lors_upload_fd(&o, fd, (int64_t)n, "victim.bin", &x, &rep);
        close(fd);
    }
    if (rc != LORS_OK)
        fprintf(stderr, "upload with a depot killed: %s\n", rep.error);
    CU_ASSERT_EQUAL_FATAL(rc, LORS_OK);
    CU_ASSERT(k.killed);
    check_upload(x, src, n, 2, ND);
    CU_ASSERT_FALSE(port_in_xnd(x, vport));
    CU_ASSERT_EQUAL(rep.bytes_read, (int64_t)n);
    int store_issue = 0;
    for (size_t i = 0; i < rep.nissues; i++) {
        CU_ASSERT_EQUAL(rep.issues[i].depot.port, vport);
        CU_ASSERT(rep.issues[i].moved);
        if (strcmp(rep.issues[i].op, "STORE") == 0)
            store_issue = 1;
    }
    CU_ASSERT(store_issue);
    /* restarted copies were stored again: more than n*2 bytes went out */
    CU_ASSERT(rep.bytes_stored > (int64_t)n * 2);
    if (!from_pipe) {
        CU_ASSERT(rep.bytes_reread > 0);
    } else {
        CU_ASSERT_EQUAL(rep.bytes_reread, 0);
    }
    free_xnd(x);
    xnd_free(x);
    lors_report_free(&rep);
    free(src);
}

static void test_killed_mid_upload_file(void)
{
    killed_mid_upload(0);
}

static void test_killed_mid_upload_pipe(void)
{
    killed_mid_upload(1);
}

static void test_all_depots_fail(void)
{
    test_depot_t small, d1, d2;
    lors_depot_t l[3];
    CU_ASSERT_FATAL(tl_start_depot(&small, "small", "4M") == 0);
    CU_ASSERT_FATAL(tl_start_depot(&d1, "dead1", "64M") == 0);
    CU_ASSERT_FATAL(tl_start_depot(&d2, "dead2", "64M") == 0);
    tl_lors_depot(&small, &l[0]);
    tl_lors_depot(&d1, &l[1]);
    tl_lors_depot(&d2, &l[2]);
    lns_test_server_kill(&d1.srv, SIGKILL);
    lns_test_server_kill(&d2.srv, SIGKILL);

    /* 8 MB in 2 MB fragments: the one live depot holds 4 MB, then refuses */
    size_t n = 8 * 1000 * 1000;
    unsigned char *src = tl_data(n, 99);
    lors_upload_opts_t o;
    lors_report_t rep;
    xnd_t *x = (xnd_t *)1;
    opts(&o, l, 3, 1, 4);
    int rc = lors_upload_buf(&o, src, n, "f", &x, &rep);
    CU_ASSERT_EQUAL(rc, LORS_E_PLACE);
    CU_ASSERT_PTR_NULL(x);
    CU_ASSERT_PTR_NOT_NULL(strstr(rep.error, "fragment"));
    CU_ASSERT_PTR_NOT_NULL(strstr(rep.error, "bytes"));
    CU_ASSERT(rep.nissues >= 2);
    ibp_depot_status_t st;
    CU_ASSERT_EQUAL(ibp_status(cli, "127.0.0.1", small.port, NULL, NULL, &st), IBP_OK);
    CU_ASSERT_EQUAL(st.hard_used, 0);
    lors_report_free(&rep);

    /* nothing alive at all */
    opts(&o, &l[1], 2, 2, 4);
    rc = lors_upload_buf(&o, src, n, "f", &x, &rep);
    CU_ASSERT_EQUAL(rc, LORS_E_PLACE);
    CU_ASSERT_PTR_NULL(x);
    CU_ASSERT_PTR_NOT_NULL(strstr(rep.error, "fragment"));
    lors_report_free(&rep);

    CU_ASSERT(lns_test_server_log_clean(&small.srv));
    lns_test_server_stop(&small.srv);
    free(src);
}

/* ---- options and events ---- */

static int nalloc, nstore_end, ncopy_done;

static void count_events(void *arg, const lors_event_t *ev)
{
    (void)arg;
    nalloc += ev->kind == LORS_EV_ALLOCATE;
    nstore_end += ev->kind == LORS_EV_STORE_END;
    ncopy_done += ev->kind == LORS_EV_COPY_DONE;
}

static void test_options_events(void)
{
    size_t n = 2 * 1000 * 1000;
    unsigned char *src = tl_data(n, 5);
    lors_upload_opts_t o;
    lors_report_t rep;
    xnd_t *x = NULL;

    opts(&o, ldep, ND, 2, 4);
    o.checksum = "md-nonsense";
    CU_ASSERT_EQUAL(lors_upload_buf(&o, src, n, "f", &x, &rep), LORS_E_DIGEST);
    CU_ASSERT_PTR_NULL(x);
    opts(&o, ldep, ND, 0, 4);
    CU_ASSERT_EQUAL(lors_upload_buf(&o, src, n, "f", &x, &rep), LORS_E_INVAL);
    opts(&o, NULL, 0, 1, 4);
    CU_ASSERT_EQUAL(lors_upload_buf(&o, src, n, "f", &x, &rep), LORS_E_INVAL);

    /* blake2b512, events */
    opts(&o, ldep, ND, 2, 4);
    o.checksum = "blake2b512";
    o.on_event = count_events;
    CU_ASSERT_EQUAL_FATAL(lors_upload_buf(&o, src, n, NULL, &x, &rep), LORS_OK);
    CU_ASSERT_EQUAL(nalloc, 8);
    CU_ASSERT_EQUAL(ncopy_done, 8);
    CU_ASSERT(nstore_end >= 8);
    for (size_t i = 0; i < x->nmaps; i++) {
        const char *dig = NULL;
        xnd_meta_get_string(&x->maps[i]->func->args, "digests", &dig);
        CU_ASSERT(dig && strlen(dig) == (size_t)((x->maps[i]->logical_length + CKBS - 1) / CKBS) * 128);
        CU_ASSERT_EQUAL(lors_checksum_verify(x->maps[i], src + x->maps[i]->exnode_offset,
                                             (size_t)x->maps[i]->logical_length),
                        LORS_OK);
    }
    free_xnd(x);
    xnd_free(x);
    lors_report_free(&rep);

    /* no checksums: no function on the mappings */
    opts(&o, ldep, ND, 1, 2);
    o.checksum = "none";
    CU_ASSERT_EQUAL_FATAL(lors_upload_buf(&o, src, n, NULL, &x, &rep), LORS_OK);
    for (size_t i = 0; i < x->nmaps; i++)
        CU_ASSERT_PTR_NULL(x->maps[i]->func);
    free_xnd(x);
    xnd_free(x);
    lors_report_free(&rep);
    free(src);
}

static const lns_test_case tests[] = {
    {"sizes 0/1/bs-1/bs/bs+1 x copies 1-3 x fragments 1/4", test_sizes_copies_fragments},
    {"20 MB from file and memory", test_large},
    {"pipe of unknown length, read once", test_pipe_unknown_length},
    {"pipe of known length", test_pipe_known_length},
    {"a depot dead before the upload", test_depot_dead_before},
    {"a depot killed mid-upload (file)", test_killed_mid_upload_file},
    {"a depot killed mid-upload (pipe)", test_killed_mid_upload_pipe},
    {"every depot fails: clean error, nothing left", test_all_depots_fail},
    {"options, checksums, events", test_options_events},
};

LNS_TEST_MAIN_WITH("lors upload", fleet_start, fleet_stop, tests)
