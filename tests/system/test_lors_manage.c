/* test_lors_manage.c -- liblors management against real depots: probe and the logical view,
 * augment (IBP SEND, relay, moving off a failing target, balance, -n), trim and refresh.
 *
 * Five depots live for the whole program; tests that kill a depot or need special settings
 * start their own.  That bytes went depot to depot is read from the depots' event logs: the
 * source answered SENDs and served no LOAD, the targets received the STOREs.  Contents are
 * checked by downloading and comparing byte for byte, after the source depot is killed. */
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ibp.h"
#include "lns_test.h"
#include "lns_time.h"
#include "lors.h"
#include "test_depot.h"
#include "test_lors.h"
#include "xnd.h"

#define ND 5
#define CKBS 65536

TL_FLEET(ND)
static int nvictims;

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A depot of its own for a test (killed or stopped by the test). */
static void victim(test_depot_t *v, lors_depot_t *lv, const char *extra)
{
    char name[32], args[PATH_MAX + 160];
    snprintf(name, sizeof name, "victim%d", nvictims++);
    snprintf(args, sizeof args, "--resource %s/%s,hard=64M,soft=64M,max-duration=3600 %s",
             lns_test_tmpdir(), name, extra ? extra : "");
    CU_ASSERT_FATAL(td_start(v, args) == 0);
    tl_lors_depot(v, lv);
}

static xnd_t *upload(const lors_depot_t *d, size_t nd, const unsigned char *src, size_t n,
                     int copies, int frags, int64_t duration)
{
    lors_upload_opts_t o;
    lors_report_t rep;
    xnd_t *x = NULL;
    tl_upload_opts(&o, d, nd, copies, frags);
    o.duration_s = duration;
    o.threads = 4;
    o.checksum_blocksize = CKBS;
    int rc = lors_upload_buf(&o, src, n, "managed", &x, &rep);
    if (rc != LORS_OK)
        fprintf(stderr, "upload: %s\n", rep.error);
    lors_report_free(&rep);
    CU_ASSERT_EQUAL_FATAL(rc, LORS_OK);
    return x;
}

/* Upload src to a new victim depot paired with a fleet depot (copy 0 of each fragment
 * on the victim when copies is 2), so a test can kill the victim and keep the rest. */
static xnd_t *upload_with_victim(test_depot_t *v, const lors_depot_t *partner,
                                 const unsigned char *src, size_t n, int copies, int frags)
{
    lors_depot_t lv[2];
    victim(v, &lv[0], NULL);
    lv[1] = *partner;
    return upload(lv, 2, src, n, copies, frags, 600);
}

/* 1 if downloading x (checksums verified) gives exactly src. */
static int downloads_as(const xnd_t *x, const unsigned char *src, size_t n, int threads)
{
    lors_download_opts_t o;
    lors_dl_report_t rep;
    char path[PATH_MAX];
    lors_download_opts_init(&o);
    o.threads = threads;
    o.depot_cap = threads;
    o.timeout_ms = 10000;
    snprintf(path, sizeof path, "%s/m.XXXXXX", lns_test_tmpdir());
    int fd = mkstemp(path);
    if (fd < 0)
        return 0;
    unlink(path);
    int rc = lors_download_fd(&o, x, fd, &rep);
    if (rc != LORS_OK)
        fprintf(stderr, "download: %s: %s\n", lors_strerror(rc), rep.error);
    lors_dl_report_free(&rep);
    off_t len = lseek(fd, 0, SEEK_END);
    unsigned char *back = malloc(n ? n : 1);
    int same = rc == LORS_OK && len == (off_t)n && pread(fd, back, n, 0) == (ssize_t)n &&
               memcmp(back, src, n) == 0;
    free(back);
    close(fd);
    return same;
}

/* ---- event logs ---------------------------------------------------------------------------- */

/* Lines of d's event log with both needles (b may be NULL). */
static int events_with(const test_depot_t *d, const char *a, const char *b)
{
    FILE *f = fopen(d->events, "r");
    char line[4096];
    int n = 0;
    while (f && fgets(line, sizeof line, f))
        n += strstr(line, a) && (!b || strstr(line, b));
    if (f)
        fclose(f);
    return n;
}

/* Wait until every request d answered so far is in its event log: ask a STATUS, wait for it
 * (lines are written in order, up to 50 ms late). */
static void events_sync(const test_depot_t *d)
{
    ibp_depot_status_t st;
    int before = events_with(d, " cmd=STATUS ", NULL);
    CU_ASSERT_EQUAL(ibp_status(cli, "127.0.0.1", d->port, NULL, NULL, &st), IBP_OK);
    for (int i = 0; i < 300 && events_with(d, " cmd=STATUS ", NULL) <= before; i++)
        sleep_ms(10);
}

/* The distinct client ports of d's STORE events. */
static int store_ports(const test_depot_t *d, int *ports, int max, int *nstores)
{
    FILE *f = fopen(d->events, "r");
    char line[4096];
    int n = 0;
    *nstores = 0;
    while (f && fgets(line, sizeof line, f)) {
        char *c = strstr(line, " client=127.0.0.1:");
        if (!strstr(line, " cmd=STORE ") || !strstr(line, " result=1") || !c)
            continue;
        int port = atoi(c + strlen(" client=127.0.0.1:")), seen = 0;
        (*nstores)++;
        for (int i = 0; i < n; i++)
            seen |= ports[i] == port;
        if (!seen && n < max)
            ports[n++] = port;
    }
    if (f)
        fclose(f);
    return n;
}

/* ---- events from the library ---------------------------------------------------------- */

typedef struct evcount {
    int n[LORS_EV_RELAY + 1];
    int64_t sent_bytes;
} evcount_t;

static void count_event(void *arg, const lors_event_t *ev)
{
    evcount_t *c = arg;
    if (ev->kind >= 0 && ev->kind <= LORS_EV_RELAY)
        c->n[ev->kind]++;
    if (ev->kind == LORS_EV_SEND_END)
        c->sent_bytes += ev->length;
}

static void aopts(lors_augment_opts_t *o, const lors_depot_t *d, size_t nd, int copies)
{
    lors_augment_opts_init(o);
    o->up.depots = d;
    o->up.ndepots = nd;
    o->up.copies = copies;
    o->up.duration_s = 600;
    o->up.threads = 3;
    o->up.timeout_s = 20;
}

/* ---- augment ------------------------------------------------------------------------------- */

/* Three pieces on one depot, one more copy on two others by SEND; then the source dies and
 * the file still downloads from the new copies alone. */
static void test_augment_send(void)
{
    test_depot_t v;
    lors_depot_t lv;
    size_t n = 3 * 1000 * 1000 + 17;
    unsigned char *src = tl_data(n, 41);
    victim(&v, &lv, NULL);
    xnd_t *x = upload(&lv, 1, src, n, 1, 3, 600);
    CU_ASSERT_EQUAL(x->nmaps, 3);

    events_sync(&v);
    events_sync(&dep[1]);
    events_sync(&dep[2]);
    int loads0 = events_with(&v, " cmd=LOAD ", NULL);
    int sends0 = events_with(&v, " cmd=SEND ", " result=1");
    int stores0 = events_with(&dep[1], " cmd=STORE ", " result=1") +
                  events_with(&dep[2], " cmd=STORE ", " result=1");

    lors_augment_opts_t o;
    lors_report_t rep;
    evcount_t ec = {{0}, 0};
    aopts(&o, &ldep[1], 2, 1);
    o.up.on_event = count_event;
    o.up.event_arg = &ec;
    int rc = lors_augment(&o, x, NULL, &rep);
    if (rc != LORS_OK)
        fprintf(stderr, "augment: %s\n", rep.error);
    CU_ASSERT_EQUAL_FATAL(rc, LORS_OK);
    CU_ASSERT_EQUAL(rep.bytes_sent, (int64_t)n);
    CU_ASSERT_EQUAL(rep.bytes_relayed, 0);
    CU_ASSERT_EQUAL(rep.mappings, 3);
    CU_ASSERT_EQUAL(rep.nissues, 0);
    CU_ASSERT_EQUAL(x->nmaps, 6);
    CU_ASSERT_EQUAL(ec.n[LORS_EV_ALLOCATE], 3);
    CU_ASSERT_EQUAL(ec.n[LORS_EV_SEND_START], 3);
    CU_ASSERT_EQUAL(ec.n[LORS_EV_SEND_END], 3);
    CU_ASSERT_EQUAL(ec.n[LORS_EV_RELAY], 0);
    CU_ASSERT_EQUAL(ec.sent_bytes, (int64_t)n);
    lors_report_free(&rep);

    /* the depots saw SENDs at the source and STOREs at the targets; no byte was loaded */
    events_sync(&v);
    events_sync(&dep[1]);
    events_sync(&dep[2]);
    CU_ASSERT_EQUAL(events_with(&v, " cmd=SEND ", " result=1") - sends0, 3);
    CU_ASSERT_EQUAL(events_with(&v, " cmd=LOAD ", NULL) - loads0, 0);
    CU_ASSERT_EQUAL(events_with(&dep[1], " cmd=STORE ", " result=1") +
                        events_with(&dep[2], " cmd=STORE ", " result=1") - stores0,
                    3);

    /* each new mapping repeats its source's range and digests, on a target depot */
    for (size_t i = 0; i < 3; i++) {
        const xnd_mapping_t *s = x->maps[i], *m = x->maps[3 + i];
        const char *d1 = NULL, *d2 = NULL;
        CU_ASSERT_EQUAL(m->exnode_offset, s->exnode_offset);
        CU_ASSERT_EQUAL(m->logical_length, s->logical_length);
        CU_ASSERT_EQUAL(m->alloc_offset, 0);
        CU_ASSERT_FATAL(m->func != NULL);
        xnd_meta_get_string(&s->func->args, "digests", &d1);
        xnd_meta_get_string(&m->func->args, "digests", &d2);
        CU_ASSERT(d1 && d2 && strcmp(d1, d2) == 0);
        ibp_cap_t cap;
        CU_ASSERT_EQUAL(ibp_cap_parse(m->cap[XND_READ], &cap), IBP_OK);
        CU_ASSERT(cap.port == dep[1].port || cap.port == dep[2].port);
        CU_ASSERT(m->end.epoch > time(NULL) + 500 && m->end.epoch <= time(NULL) + 601);
    }

    lns_test_server_kill(&v.srv, SIGKILL);
    CU_ASSERT(downloads_as(x, src, n, 4));
    tl_free_xnd(cli, x);
    free(src);
}

/* Repeated SENDs from one depot to one target reuse the depot's pooled connection. */
static void test_send_pooled(void)
{
    test_depot_t s, t;
    lors_depot_t ls, lt;
    size_t n = 400000;
    unsigned char *src = tl_data(n, 42);
    victim(&s, &ls, NULL);
    victim(&t, &lt, NULL);
    xnd_t *x = upload(&ls, 1, src, n, 1, 4, 600);

    lors_augment_opts_t o;
    lors_report_t rep;
    aopts(&o, &lt, 1, 1);
    o.up.threads = 1;
    CU_ASSERT_EQUAL(lors_augment(&o, x, NULL, &rep), LORS_OK);
    CU_ASSERT_EQUAL(rep.bytes_sent, (int64_t)n);
    lors_report_free(&rep);

    events_sync(&t);
    int ports[16], nstores;
    int nports = store_ports(&t, ports, 16, &nstores);
    CU_ASSERT_EQUAL(nstores, 4);
    CU_ASSERT_EQUAL(nports, 1); /* one connection for the four SENDs */
    CU_ASSERT(downloads_as(x, src, n, 2));
    tl_free_xnd(cli, x);
    lns_test_server_stop(&s.srv); /* the source frees its pooled SEND clients: no leak, no report */
    lns_test_server_stop(&t.srv);
    CU_ASSERT(lns_test_server_log_clean(&s.srv));
    CU_ASSERT(lns_test_server_log_clean(&t.srv));
    free(src);
}

/* A client that keeps no connection open after a call. */
static ibp_client_t *unpooled(void)
{
    ibp_client_opts_t co;
    ibp_client_opts_init(&co);
    co.max_idle_per_depot = 0;
    ibp_client_t *c = ibp_client_new(&co);
    CU_ASSERT_FATAL(c != NULL);
    return c;
}

/* A target that refuses the source's connection (max-connections 1, held by our client):
 * SEND fails; with relay the bytes go through the client, without it the copy moves to
 * another depot, or fails when there is none, leaving nothing behind. */
static void test_augment_relay(void)
{
    test_depot_t t;
    lors_depot_t lt[2];
    size_t n = 1500000;
    unsigned char *src = tl_data(n, 43);
    victim(&t, &lt[0], "--max-connections 1");
    lt[1] = ldep[4];
    xnd_t *x = upload(&ldep[3], 1, src, n, 1, 2, 600);

    /* relay */
    lors_augment_opts_t o;
    lors_report_t rep;
    evcount_t ec = {{0}, 0};
    xnd_t *added = NULL;
    aopts(&o, lt, 1, 1);
    o.up.threads = 1;
    o.up.on_event = count_event;
    o.up.event_arg = &ec;
    int rc = lors_augment(&o, x, &added, &rep);
    if (rc != LORS_OK)
        fprintf(stderr, "augment (relay): %s\n", rep.error);
    CU_ASSERT_EQUAL_FATAL(rc, LORS_OK);
    CU_ASSERT_EQUAL(rep.bytes_sent, 0);
    CU_ASSERT_EQUAL(rep.bytes_relayed, (int64_t)n);
    CU_ASSERT_EQUAL(rep.nissues, 2);
    for (size_t i = 0; i < rep.nissues; i++) {
        CU_ASSERT_EQUAL(rep.issues[i].relayed, 1);
        CU_ASSERT_STRING_EQUAL(rep.issues[i].op, "SEND");
        CU_ASSERT_EQUAL(rep.issues[i].moved_to.port, t.port);
    }
    CU_ASSERT_EQUAL(ec.n[LORS_EV_RELAY], 2);
    CU_ASSERT_EQUAL(ec.n[LORS_EV_SEND_END], 0);
    lors_report_free(&rep);
    CU_ASSERT_EQUAL_FATAL(added->nmaps, 2);
    /* the relayed copies alone hold the file (one connection: the depot takes no more) */
    int same = 0;
    for (int i = 0; i < 20 && !same; i++) {
        sleep_ms(100); /* until the depot has seen our last connection close */
        same = downloads_as(added, src, n, 1);
    }
    CU_ASSERT(same);
    ibp_client_t *once = unpooled();
    for (size_t i = 0; i < added->nmaps; i++) {
        int drc = IBP_E_OUT_OF_SOCKETS;
        for (int k = 0; k < 20 && drc == IBP_E_OUT_OF_SOCKETS; k++) {
            sleep_ms(100); /* until the depot has seen the download's connection close */
            drc = ibp_decr(once, added->maps[i]->cap[XND_MANAGE], IBP_READCAP);
        }
        CU_ASSERT_EQUAL(drc, IBP_OK);
    }
    xnd_free(added);
    while (x->nmaps > 2)
        xnd_remove(x, x->nmaps - 1);

    /* no relay, a second depot: the copy moves there and goes by SEND */
    sleep_ms(200);
    xnd_t *one = upload(&ldep[3], 1, src, n, 1, 1, 600);
    aopts(&o, lt, 2, 1);
    o.up.threads = 1;
    o.relay = 0;
    rc = lors_augment(&o, one, NULL, &rep);
    if (rc != LORS_OK)
        fprintf(stderr, "augment (move): %s\n", rep.error);
    CU_ASSERT_EQUAL(rc, LORS_OK);
    CU_ASSERT_EQUAL(rep.bytes_sent, (int64_t)n);
    CU_ASSERT_EQUAL(rep.bytes_relayed, 0);
    CU_ASSERT_EQUAL_FATAL(rep.nissues, 1);
    CU_ASSERT_STRING_EQUAL(rep.issues[0].op, "SEND");
    CU_ASSERT_EQUAL(rep.issues[0].depot.port, t.port);
    CU_ASSERT_EQUAL(rep.issues[0].moved, 1);
    CU_ASSERT_EQUAL(rep.issues[0].moved_to.port, dep[4].port);
    CU_ASSERT_EQUAL(rep.issues[0].relayed, 0);
    lors_report_free(&rep);
    CU_ASSERT_EQUAL(one->nmaps, 2);
    tl_free_xnd(cli, one);

    /* no relay, no other depot: fails, x unchanged, the allocation made is freed */
    sleep_ms(200);
    aopts(&o, lt, 1, 1);
    o.up.threads = 1;
    o.relay = 0;
    rc = lors_augment(&o, x, NULL, &rep);
    CU_ASSERT_EQUAL(rc, LORS_E_PLACE);
    CU_ASSERT(strstr(rep.error, "no depot left") != NULL);
    CU_ASSERT_EQUAL(x->nmaps, 2);
    CU_ASSERT_EQUAL(rep.mappings, 0);
    lors_report_free(&rep);
    ibp_depot_status_t st;
    rc = IBP_E_OUT_OF_SOCKETS;
    for (int i = 0; i < 20 && rc != IBP_OK; i++) {
        sleep_ms(100);
        rc = ibp_status(once, "127.0.0.1", t.port, NULL, NULL, &st);
    }
    ibp_client_free(once);
    CU_ASSERT_EQUAL(rc, IBP_OK);
    CU_ASSERT_EQUAL(st.allocations, 0);

    tl_free_xnd(cli, x);
    lns_test_server_finish(&t.srv);
    free(src);
}

/* -B adds only what is missing, counting live copies; -n holds only the new mappings. */
static void test_augment_balance(void)
{
    size_t n = 800000;
    unsigned char *src = tl_data(n, 44);
    xnd_t *x = upload(ldep, 4, src, n, 1, 4, 600);
    lors_augment_opts_t o;
    lors_report_t rep;
    xnd_t *added = NULL;

    aopts(&o, ldep, ND, 2);
    o.balance = 1;
    CU_ASSERT_EQUAL_FATAL(lors_augment(&o, x, &added, &rep), LORS_OK);
    CU_ASSERT_EQUAL(rep.mappings, 4);
    CU_ASSERT_EQUAL(x->nmaps, 8);
    CU_ASSERT_EQUAL_FATAL(added->nmaps, 4);
    const char *fn = NULL;
    CU_ASSERT_EQUAL(xnd_meta_get_string(&added->meta, "filename", &fn), XND_OK);
    CU_ASSERT(fn && strcmp(fn, "managed") == 0);
    CU_ASSERT_EQUAL(xnd_size(added), (int64_t)n);
    for (size_t i = 0; i < 4; i++) {
        CU_ASSERT_STRING_EQUAL(added->maps[i]->cap[XND_READ], x->maps[4 + i]->cap[XND_READ]);
        /* a new copy never on its source's depot while others are free */
        ibp_cap_t a, b;
        ibp_cap_parse(x->maps[i]->cap[XND_READ], &a);
        ibp_cap_parse(x->maps[4 + i]->cap[XND_READ], &b);
        CU_ASSERT_NOT_EQUAL(a.port, b.port);
    }
    xnd_free(added);
    lors_report_free(&rep);

    /* balanced already: nothing to add */
    CU_ASSERT_EQUAL(lors_augment(&o, x, &added, &rep), LORS_OK);
    CU_ASSERT_EQUAL(rep.mappings, 0);
    CU_ASSERT_EQUAL(x->nmaps, 8);
    CU_ASSERT_EQUAL(added->nmaps, 0);
    xnd_free(added);
    lors_report_free(&rep);

    /* only part of the file (-O/-L): the pieces holding those bytes */
    o.up.copies = 3;
    o.offset = 0;
    o.length = 1;
    CU_ASSERT_EQUAL(lors_augment(&o, x, NULL, &rep), LORS_OK);
    CU_ASSERT_EQUAL(rep.mappings, 1);
    CU_ASSERT_EQUAL(x->nmaps, 9);
    CU_ASSERT_EQUAL(x->maps[8]->exnode_offset, 0);
    lors_report_free(&rep);
    CU_ASSERT(downloads_as(x, src, n, 4));
    tl_free_xnd(cli, x);

    /* a dead copy does not count: two copies each, one depot killed, -B -c 2 adds one each */
    test_depot_t v;
    x = upload_with_victim(&v, &ldep[1], src, n, 2, 2);
    lns_test_server_kill(&v.srv, SIGKILL);
    aopts(&o, &ldep[2], 1, 2);
    o.balance = 1;
    CU_ASSERT_EQUAL(lors_augment(&o, x, NULL, &rep), LORS_OK);
    CU_ASSERT_EQUAL(rep.mappings, 2);
    lors_report_free(&rep);
    CU_ASSERT(downloads_as(x, src, n, 4));

    /* with every copy of some bytes dead there is nothing to copy from */
    lors_trim_opts_t to;
    lors_trim_report_t tr;
    lors_trim_opts_init(&to);
    int last[2] = {4, 5};
    to.mappings = last;
    to.nmappings = 2;
    CU_ASSERT_EQUAL(lors_trim(&to, x, &tr), LORS_OK); /* keeps the originals: dead and live */
    lors_trim_report_free(&tr);
    int live[1] = {1};
    to.mappings = live;
    to.nmappings = 1;
    to.force = 1;
    CU_ASSERT_EQUAL(lors_trim(&to, x, &tr), LORS_OK); /* fragment 0: only its dead copy left */
    lors_trim_report_free(&tr);
    CU_ASSERT_EQUAL(lors_augment(&o, x, NULL, &rep), LORS_E_NO_REPLICA);
    CU_ASSERT(strstr(rep.error, "no live copy") != NULL);
    lors_report_free(&rep);
    tl_free_xnd(cli, x);
    free(src);
}

/* ---- probe and the logical view -------------------------------------------------------- */

static void test_probe_logical(void)
{
    test_depot_t v;
    size_t n = 600000;
    unsigned char *src = tl_data(n, 45);
    xnd_t *x = upload_with_victim(&v, &ldep[1], src, n, 2, 2); /* copy 1 on dep 1 */
    lors_probe_t *pr = NULL;
    xnd_range_t *r = NULL;
    size_t nr = 0;

    CU_ASSERT_EQUAL_FATAL(lors_probe_all(x, 4, 10, &pr), LORS_OK);
    for (size_t i = 0; i < x->nmaps; i++) {
        CU_ASSERT_EQUAL(pr[i].mapping, (int)i);
        CU_ASSERT_EQUAL(pr[i].alive, 1);
        CU_ASSERT_EQUAL(pr[i].probed, 1);
        CU_ASSERT(pr[i].expires >= x->maps[i]->end.epoch - 2 &&
                  pr[i].expires <= x->maps[i]->end.epoch + 2);
        CU_ASSERT_EQUAL(pr[i].probe.cur_size, (uint64_t)x->maps[i]->alloc_length); /* + outboard */
    }
    CU_ASSERT_EQUAL(pr[0].depot.port, v.port);
    CU_ASSERT_EQUAL(lors_ls_logical(x, pr, &r, &nr), LORS_OK);
    CU_ASSERT_EQUAL(nr, 1);
    CU_ASSERT(nr == 1 && r[0].offset == 0 && r[0].length == (int64_t)n && r[0].count == 2);
    free(r);
    /* a second mapping of the same bytes on the same depot is no second place to lose them:
     * the copies counted are the depots holding them */
    xnd_t *y = xnd_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(y);
    CU_ASSERT_EQUAL(xnd_set_size(y, xnd_size(x)), XND_OK);
    for (size_t i = 0; i < x->nmaps; i++)
        CU_ASSERT_EQUAL(xnd_append(y, xnd_mapping_copy(x->maps[i])), XND_OK);
    CU_ASSERT_EQUAL(xnd_append(y, xnd_mapping_copy(x->maps[0])), XND_OK);
    CU_ASSERT_EQUAL(lors_ls_logical(y, NULL, &r, &nr), LORS_OK);
    CU_ASSERT(nr >= 1 && r[0].count == 2);
    free(r);
    xnd_free(y);
    free(pr);

    lns_test_server_kill(&v.srv, SIGKILL);
    /* without its manage capability, a mapping is probed by a 1-byte LOAD */
    xnd_mapping_set_cap(x->maps[1], XND_MANAGE, NULL);
    CU_ASSERT_EQUAL_FATAL(lors_probe_all(x, 4, 10, &pr), LORS_OK);
    CU_ASSERT_EQUAL(pr[0].alive, 0);
    CU_ASSERT_EQUAL(pr[0].ibp_err, IBP_E_CONNECTION);
    CU_ASSERT(strstr(pr[0].why, "connect") != NULL);
    CU_ASSERT_EQUAL(pr[2].alive, 0);
    CU_ASSERT_EQUAL(pr[1].alive, 1);
    CU_ASSERT_EQUAL(pr[1].probed, 0);
    CU_ASSERT_EQUAL(pr[3].alive, 1);
    CU_ASSERT_EQUAL(lors_ls_logical(x, pr, &r, &nr), LORS_OK);
    CU_ASSERT(nr == 1 && r[0].count == 1);
    free(r);
    CU_ASSERT_EQUAL(lors_ls_logical(x, NULL, &r, &nr), LORS_OK);
    CU_ASSERT(nr == 1 && r[0].count == 2);
    free(r);
    free(pr);

    /* only the second fragment's live copy gone: coverage 1 then 0 */
    xnd_remove(x, 3);
    CU_ASSERT_EQUAL_FATAL(lors_probe_all(x, 2, 10, &pr), LORS_OK);
    CU_ASSERT_EQUAL(lors_ls_logical(x, pr, &r, &nr), LORS_OK);
    CU_ASSERT_EQUAL_FATAL(nr, 2);
    CU_ASSERT_EQUAL(r[0].count, 1);
    CU_ASSERT_EQUAL(r[1].count, 0);
    CU_ASSERT_EQUAL(r[1].offset, x->maps[2]->exnode_offset);
    free(r);
    free(pr);
    tl_free_xnd(cli, x);
    free(src);
}

/* ---- trim ------------------------------------------------------------------------------- */

static lors_trim_opts_t topts(const int *m, size_t nm)
{
    lors_trim_opts_t o;
    lors_trim_opts_init(&o);
    o.mappings = m;
    o.nmappings = nm;
    return o;
}

static void test_trim(void)
{
    size_t n = 500000;
    unsigned char *src = tl_data(n, 46);
    lors_trim_report_t r;
    /* [f0 on dep0, f0 on dep1, f1 on dep0, f1 on dep1] */
    xnd_t *x = upload(ldep, 2, src, n, 2, 2, 600);
    char *gone = strdup(x->maps[0]->cap[XND_MANAGE]);

    int m0[1] = {0};
    lors_trim_opts_t o = topts(m0, 1);
    o.free_allocs = 1;
    CU_ASSERT_EQUAL(lors_trim(&o, x, &r), LORS_OK);
    CU_ASSERT_EQUAL(r.nremoved, 1);
    CU_ASSERT(r.nremoved == 1 && r.removed[0] == 0);
    CU_ASSERT_EQUAL(r.nunfreed, 0);
    lors_trim_report_free(&r);
    CU_ASSERT_EQUAL(x->nmaps, 3);
    ibp_probe_t p;
    CU_ASSERT_EQUAL(ibp_probe(cli, gone, &p), IBP_E_CAP_NOT_FOUND); /* -d freed it */
    free(gone);

    /* now mapping 0 is fragment 0's last copy */
    o = topts(m0, 1);
    CU_ASSERT_EQUAL(lors_trim(&o, x, &r), LORS_E_UNSAFE);
    CU_ASSERT(strstr(r.error, "no copy") != NULL);
    CU_ASSERT_EQUAL(r.nremoved, 0);
    lors_trim_report_free(&r);
    CU_ASSERT_EQUAL(x->nmaps, 3);

    int bad[2] = {1, 3};
    o = topts(bad, 2);
    CU_ASSERT_EQUAL(lors_trim(&o, x, &r), LORS_E_INVAL);
    CU_ASSERT(strstr(r.error, "mapping 3") != NULL);
    lors_trim_report_free(&r);
    CU_ASSERT_EQUAL(x->nmaps, 3);

    /* by depot: [f0 on dep1, f1 on dep0, f1 on dep1]; dep0's copy goes, then dep1's would
     * be the last ones */
    o = topts(NULL, 0);
    o.depots = &ldep[0];
    o.ndepots = 1;
    o.free_allocs = 1;
    CU_ASSERT_EQUAL(lors_trim(&o, x, &r), LORS_OK);
    CU_ASSERT(r.nremoved == 1 && r.removed[0] == 1);
    lors_trim_report_free(&r);
    CU_ASSERT_EQUAL(x->nmaps, 2);
    o.depots = &ldep[1];
    CU_ASSERT_EQUAL(lors_trim(&o, x, &r), LORS_E_UNSAFE);
    lors_trim_report_free(&r);
    CU_ASSERT_EQUAL(x->nmaps, 2);

    /* force: the last copies go anyway */
    o.force = 1;
    CU_ASSERT_EQUAL(lors_trim(&o, x, &r), LORS_OK);
    CU_ASSERT_EQUAL(r.nremoved, 2);
    CU_ASSERT_EQUAL(r.nunfreed, 0);
    lors_trim_report_free(&r);
    CU_ASSERT_EQUAL(x->nmaps, 0);
    xnd_free(x);
    free(src);
}

static void test_trim_dead(void)
{
    test_depot_t v;
    size_t n = 500000;
    unsigned char *src = tl_data(n, 47);
    lors_trim_report_t r;
    xnd_t *x = upload_with_victim(&v, &ldep[4], src, n, 2, 2); /* 0, 2 on the victim; 1, 3 on dep4 */
    lns_test_server_kill(&v.srv, SIGKILL);

    /* -u with numbers: only those of them found dead */
    int m13[2] = {1, 3};
    lors_trim_opts_t o = topts(m13, 2);
    o.dead = 1;
    CU_ASSERT_EQUAL(lors_trim(&o, x, &r), LORS_OK);
    CU_ASSERT_EQUAL(r.nremoved, 0);
    lors_trim_report_free(&r);
    CU_ASSERT_EQUAL(x->nmaps, 4);

    /* -u -d: the dead ones go; their depot is down, so they cannot be freed */
    o = topts(NULL, 0);
    o.dead = 1;
    o.free_allocs = 1;
    o.timeout_s = 5;
    CU_ASSERT_EQUAL(lors_trim(&o, x, &r), LORS_E_PARTIAL);
    CU_ASSERT(r.nremoved == 2 && r.removed[0] == 0 && r.removed[1] == 2);
    CU_ASSERT(r.nunfreed == 2 && r.unfreed[0] == 0 && r.unfreed[1] == 2);
    lors_trim_report_free(&r);
    CU_ASSERT_EQUAL(x->nmaps, 2);
    CU_ASSERT(downloads_as(x, src, n, 2));

    tl_free_xnd(cli, x);

    /* the only copy, dead: removing it loses nothing, so it is not refused */
    test_depot_t w;
    lors_depot_t lw;
    victim(&w, &lw, NULL);
    x = upload(&lw, 1, src, n, 1, 1, 600);
    lns_test_server_kill(&w.srv, SIGKILL);
    int m0[1] = {0};
    o = topts(m0, 1);
    o.timeout_s = 5;
    CU_ASSERT_EQUAL(lors_trim(&o, x, &r), LORS_OK);
    CU_ASSERT_EQUAL(r.nremoved, 1);
    lors_trim_report_free(&r);
    CU_ASSERT_EQUAL(x->nmaps, 0);
    xnd_free(x);
    free(src);
}

/* ---- refresh ------------------------------------------------------------------------------ */

static int near(int64_t a, int64_t b)
{
    return a >= b - 3 && a <= b + 3;
}

static void test_refresh(void)
{
    size_t n = 300000;
    unsigned char *src = tl_data(n, 48);
    xnd_t *x = upload(ldep, 2, src, n, 1, 2, 600);
    lors_refresh_opts_t o;
    lors_refresh_report_t r;
    int64_t end0 = x->maps[0]->end.epoch;

    lors_refresh_opts_init(&o);
    o.mode = LORS_REFRESH_ADD;
    o.value = 100;
    CU_ASSERT_EQUAL(lors_refresh(&o, x, &r), LORS_OK);
    CU_ASSERT_EQUAL_FATAL(r.n, 2);
    CU_ASSERT_EQUAL(r.failed, 0);
    CU_ASSERT_EQUAL(r.items[0].old_end, end0);
    CU_ASSERT(near(r.items[0].new_end, end0 + 100));
    CU_ASSERT_EQUAL(x->maps[0]->end.epoch, r.items[0].new_end);
    lors_refresh_report_free(&r);

    o.mode = LORS_REFRESH_FROM_NOW;
    o.value = 1000;
    CU_ASSERT_EQUAL(lors_refresh(&o, x, &r), LORS_OK);
    for (size_t i = 0; i < r.n; i++) {
        CU_ASSERT(near(r.items[i].new_end, time(NULL) + 1000));
        CU_ASSERT_EQUAL(x->maps[i]->end.epoch, r.items[i].new_end);
    }
    lors_refresh_report_free(&r);

    o.mode = LORS_REFRESH_AT;
    o.value = time(NULL) + 2000;
    CU_ASSERT_EQUAL(lors_refresh(&o, x, &r), LORS_OK);
    CU_ASSERT(near(r.items[1].new_end, o.value));
    lors_refresh_report_free(&r);

    o.mode = LORS_REFRESH_MAX;
    CU_ASSERT_EQUAL(lors_refresh(&o, x, &r), LORS_OK);
    CU_ASSERT(near(r.items[0].new_end, time(NULL) + 3600)); /* the depots' max-duration */
    CU_ASSERT(near(x->maps[1]->end.epoch, time(NULL) + 3600));
    lors_refresh_report_free(&r);

    /* an end in the past: refused for every mapping, ends unchanged */
    int64_t before = x->maps[0]->end.epoch;
    o.mode = LORS_REFRESH_AT;
    o.value = time(NULL) - 5;
    CU_ASSERT_EQUAL(lors_refresh(&o, x, &r), LORS_E_PARTIAL);
    CU_ASSERT_EQUAL(r.failed, 2);
    CU_ASSERT(strstr(r.items[0].why, "past") != NULL);
    CU_ASSERT_EQUAL(x->maps[0]->end.epoch, before);
    lors_refresh_report_free(&r);

    /* longer than the depot allows */
    o.mode = LORS_REFRESH_FROM_NOW;
    o.value = 7200;
    CU_ASSERT_EQUAL(lors_refresh(&o, x, &r), LORS_E_PARTIAL);
    CU_ASSERT_EQUAL(r.items[0].ibp_err, IBP_E_LONG_DURATION);
    lors_refresh_report_free(&r);

    o.value = 0;
    CU_ASSERT_EQUAL(lors_refresh(&o, x, &r), LORS_E_INVAL);
    lors_refresh_report_free(&r);
    tl_free_xnd(cli, x);
    free(src);
}

static void test_refresh_dead_expired(void)
{
    test_depot_t v;
    size_t n = 300000;
    unsigned char *src = tl_data(n, 49);
    lors_refresh_opts_t o;
    lors_refresh_report_t r;
    xnd_t *x = upload_with_victim(&v, &ldep[2], src, n, 1, 2); /* fragment 0 on the victim */
    int64_t end0 = x->maps[0]->end.epoch;
    lns_test_server_kill(&v.srv, SIGKILL);

    lors_refresh_opts_init(&o);
    o.timeout_s = 5;
    CU_ASSERT_EQUAL(lors_refresh(&o, x, &r), LORS_E_PARTIAL);
    CU_ASSERT_EQUAL(r.failed, 1);
    CU_ASSERT_EQUAL(r.items[0].ok, 0);
    CU_ASSERT_EQUAL(r.items[0].ibp_err, IBP_E_CONNECTION);
    CU_ASSERT(r.items[0].why[0] != '\0');
    CU_ASSERT(strstr(r.error, "mapping 0") != NULL);
    CU_ASSERT_EQUAL(r.items[1].ok, 1);
    CU_ASSERT(near(x->maps[1]->end.epoch, time(NULL) + 3600));
    CU_ASSERT_EQUAL(x->maps[0]->end.epoch, end0);
    lors_refresh_report_free(&r);
    tl_free_xnd(cli, x);

    /* expired: dead to the probe without asking, and refresh fails for it */
    x = upload(&ldep[2], 1, src, n, 1, 1, 2);
    sleep_ms(3000);
    lors_probe_t *pr = NULL;
    CU_ASSERT_EQUAL_FATAL(lors_probe_all(x, 2, 10, &pr), LORS_OK);
    CU_ASSERT_EQUAL(pr[0].alive, 0);
    CU_ASSERT_STRING_EQUAL(pr[0].why, "expired");
    free(pr);
    o.mode = LORS_REFRESH_FROM_NOW;
    o.value = 100;
    CU_ASSERT_EQUAL(lors_refresh(&o, x, &r), LORS_E_PARTIAL);
    CU_ASSERT_EQUAL(r.items[0].ok, 0);
    CU_ASSERT_EQUAL(r.items[0].ibp_err, IBP_E_CAP_NOT_FOUND);
    lors_refresh_report_free(&r);
    xnd_free(x);
    free(src);
}

/* The capability cap with its port replaced by port, into out. */
static void cap_to_port(const char *cap, int from, int port, char *out, size_t size)
{
    char pat[16];
    snprintf(pat, sizeof pat, ":%d/", from);
    const char *p = strstr(cap, pat);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    snprintf(out, size, "%.*s:%d/%s", (int)(p - cap), cap, port, p + strlen(pat));
}

/* lors_discard frees every allocation and counts them; a depot that never answers costs one
 * timeout, not one per allocation (its others are counted unfreed without asking). */
static void test_discard(void)
{
    size_t n = 200000;
    unsigned char *src = tl_data(n, 31);
    int hport, hole = raw_listen_loopback(&hport);
    CU_ASSERT_FATAL(hole >= 0);
    xnd_t *x = upload(ldep, 2, src, n, 2, 2, 600);
    CU_ASSERT_EQUAL_FATAL(x->nmaps, 4);
    ibp_caps_t keep[4];
    for (size_t i = 0; i < 4; i++)
        snprintf(keep[i].manage, sizeof keep[i].manage, "%s", x->maps[i]->cap[XND_MANAGE]);
    /* three mappings more, on a "depot" that accepts connections and never answers */
    for (size_t i = 0; i < 3; i++) {
        xnd_mapping_t *m = xnd_mapping_copy(x->maps[i]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(m);
        for (int k = XND_READ; k <= XND_MANAGE; k++) {
            char c[IBP_MAX_CAP + 16];
            ibp_cap_t pc;
            CU_ASSERT_EQUAL_FATAL(ibp_cap_parse(m->cap[k], &pc), IBP_OK);
            cap_to_port(m->cap[k], pc.port, hport, c, sizeof c);
            CU_ASSERT_EQUAL(xnd_mapping_set_cap(m, k, c), XND_OK);
        }
        CU_ASSERT_EQUAL_FATAL(xnd_append(x, m), XND_OK);
    }
    lors_freed_t f;
    int64_t t0 = lns_mono_ms();
    CU_ASSERT_EQUAL(lors_discard(x, 1, 1, &f), LORS_E_PARTIAL);
    int64_t ms = lns_mono_ms() - t0;
    CU_ASSERT_EQUAL(f.freed, 4);
    CU_ASSERT_EQUAL(f.depots, 2);
    CU_ASSERT_EQUAL(f.unfreed, 3);
    CU_ASSERT(ms < 30000); /* a hang only */
    /* the silent depot was asked one DECR, which libibp may try on a second connection (2
     * wait in its queue here), not one per allocation (3 to 6) */
    int asked = 0;
    fcntl(hole, F_SETFL, O_NONBLOCK);
    for (int cfd; (cfd = accept(hole, NULL, NULL)) >= 0; asked++)
        close(cfd);
    CU_ASSERT(asked >= 1 && asked <= 2);
    if (asked < 1 || asked > 2)
        fprintf(stderr, "the silent depot had %d connections\n", asked);
    for (size_t i = 0; i < 4; i++) {
        ibp_probe_t p;
        CU_ASSERT_EQUAL(ibp_probe(cli, keep[i].manage, &p), IBP_E_CAP_NOT_FOUND);
    }
    /* all gone already: freed as far as it gets */
    xnd_t *y = xnd_new();
    for (size_t i = 0; i < 4; i++)
        xnd_append(y, xnd_mapping_copy(x->maps[i]));
    CU_ASSERT_EQUAL(lors_discard(y, 4, 5, &f), LORS_OK);
    CU_ASSERT_EQUAL(f.freed, 4);
    CU_ASSERT_EQUAL(f.unfreed, 0);
    xnd_free(y);
    xnd_free(x);
    close(hole);
    free(src);
}

/* A stop flag already set: upload and augment stop before allocating anything. */
static void test_stop_flag(void)
{
    size_t n = 100000;
    unsigned char *src = tl_data(n, 32);
    volatile sig_atomic_t stop = 1;
    lors_upload_opts_t o;
    lors_report_t rep;
    xnd_t *x = NULL;
    tl_upload_opts(&o, ldep, 2, 2, 2);
    o.stop = &stop;
    CU_ASSERT_EQUAL(lors_upload_buf(&o, src, n, "stopped", &x, &rep), LORS_E_STOPPED);
    CU_ASSERT_PTR_NULL(x);
    CU_ASSERT_EQUAL(rep.freed.freed + rep.freed.unfreed, 0);
    CU_ASSERT_EQUAL(rep.mappings, 0);
    lors_report_free(&rep);

    x = upload(ldep, 1, src, n, 1, 1, 600);
    lors_augment_opts_t ao;
    lors_augment_opts_init(&ao);
    ao.up.depots = &ldep[1];
    ao.up.ndepots = 1;
    ao.up.duration_s = 600;
    ao.up.timeout_s = 20;
    ao.up.stop = &stop;
    CU_ASSERT_EQUAL(lors_augment(&ao, x, NULL, &rep), LORS_E_STOPPED);
    CU_ASSERT_EQUAL(x->nmaps, 1);
    CU_ASSERT_EQUAL(rep.freed.freed + rep.freed.unfreed, 0);
    lors_report_free(&rep);
    tl_free_xnd(cli, x);
    free(src);
}

static void test_strerror(void)
{
    int codes[] = {LORS_E_KEY, LORS_E_E2E, LORS_E_UNSAFE, LORS_E_PARTIAL, LORS_E_RC,
                   LORS_E_STOPPED};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        CU_ASSERT(strstr(lors_strerror(codes[i]), "unknown") == NULL);
}

/* Timeouts as long as an int holds reach every call that takes one: the library must not
 * overflow timeout_s * 1000 on its way to libibp's milliseconds (in the sanitizer build an
 * overflow aborts the test).  Every call still works. */
static void test_huge_timeouts(void)
{
    size_t n = 100000;
    unsigned char *src = tl_data(n, 40);
    lors_upload_opts_t o;
    lors_report_t rep;
    xnd_t *x = NULL;
    tl_upload_opts(&o, ldep, 2, 2, 1);
    o.timeout_s = INT_MAX;
    CU_ASSERT_EQUAL(lors_upload_buf(&o, src, n, "t", &x, &rep), LORS_OK);
    lors_report_free(&rep);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);

    lors_probe_t *pr = NULL;
    CU_ASSERT_EQUAL(lors_probe_all(x, 2, INT_MAX, &pr), LORS_OK);
    CU_ASSERT(pr && pr[0].alive && pr[1].alive);
    free(pr);

    lors_augment_opts_t ao;
    lors_augment_opts_init(&ao);
    ao.up.depots = &ldep[2];
    ao.up.ndepots = 1;
    ao.up.duration_s = 600;
    ao.up.timeout_s = INT_MAX;
    CU_ASSERT_EQUAL(lors_augment(&ao, x, NULL, &rep), LORS_OK);
    lors_report_free(&rep);
    CU_ASSERT_EQUAL(x->nmaps, 3);

    lors_refresh_opts_t ro;
    lors_refresh_report_t rr;
    lors_refresh_opts_init(&ro);
    ro.mode = LORS_REFRESH_FROM_NOW;
    ro.value = 600;
    ro.timeout_s = INT_MAX;
    CU_ASSERT_EQUAL(lors_refresh(&ro, x, &rr), LORS_OK);
    lors_refresh_report_free(&rr);

    int last = 2;
    lors_trim_opts_t to;
    lors_trim_report_t tr;
    lors_trim_opts_init(&to);
    to.mappings = &last;
    to.nmappings = 1;
    to.free_allocs = 1;
    to.timeout_s = INT_MAX;
    CU_ASSERT_EQUAL(lors_trim(&to, x, &tr), LORS_OK);
    lors_trim_report_free(&tr);
    CU_ASSERT_EQUAL(x->nmaps, 2);
    tl_free_xnd(cli, x);
    free(src);
}

static const lns_test_case tests[] = {
    {"augment by SEND; the source dies; download from the copies", test_augment_send},
    {"SENDs to one target share the depot's pooled connection", test_send_pooled},
    {"SEND refused: relay, move, or fail leaving nothing", test_augment_relay},
    {"augment -B, -n, -O/-L, dead copies, nothing to copy from", test_augment_balance},
    {"probe and the logical view with a dead depot", test_probe_logical},
    {"trim by number and depot, -d, unsafe, force, out of range", test_trim},
    {"trim -u and -u -d with a dead depot", test_trim_dead},
    {"refresh ADD, FROM_NOW, AT, MAX, past, too long", test_refresh},
    {"refresh with a dead depot and an expired mapping", test_refresh_dead_expired},
    {"discard: frees, counts, one timeout for a silent depot", test_discard},
    {"a stop flag set: upload and augment allocate nothing", test_stop_flag},
    {"words for the new error codes", test_strerror},
    {"timeouts of INT_MAX seconds: no overflow", test_huge_timeouts},
};

LNS_TEST_MAIN_WITH("lors manage", fleet_start, fleet_stop, tests)
