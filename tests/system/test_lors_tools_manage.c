/* test_lors_tools_manage.c -- the programs lors_augment, lors_trim, lors_refresh and lors_ls,
 * run as a user runs them, against five real depots.
 *
 * Every network file is made by the real lors_upload; every program runs through sh -c with
 * its stdout and stderr captured, and is judged by what a user can see: the exit code, the
 * lines it prints, the exNode it leaves (read back with libexnode) and the depots themselves
 * (probed with libibp, or read back with lors_download).  Tests that kill a depot revive it
 * at the start of the next test, so a failed assertion cannot leave the fleet short.
 */
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ibp.h"
#include "lns_test.h"
#include "lors.h"
#include "test_depot.h"
#include "test_json.h"
#include "test_lors.h"
#include "xnd.h"

#define ND 5

static test_depot_t dep[ND];
static lors_depot_t ldep[ND];
static ibp_client_t *cli;
static char out[1 << 17], err[1 << 14];
static int seq;

static int suite_init(void)
{
    return tl_fleet_start(dep, ldep, ND, &cli);
}

static int suite_clean(void)
{
    return tl_fleet_stop(dep, ND, cli);
}

/* Bring back depots an earlier test killed (it may have stopped at a failed assertion). */
static void revive(void)
{
    for (int i = 0; i < ND; i++)
        if (dep[i].pid == 0)
            CU_ASSERT_EQUAL(td_restart(&dep[i]), 0);
}

/* Run "sh -c <cmd>" with $B the programs' directory and $D the tmpdir, HOME in the tmpdir
 * (no ~/.xndrc) and no LNS_RC; stdout and stderr land in out[] and err[].  Exit code or -1. */
static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int run(const char *fmt, ...)
{
    char cmd[8192], full[8192 + 4 * 4096 + 256], o[4096], e[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    snprintf(o, sizeof o, "%s/run.out", lns_test_tmpdir());
    snprintf(e, sizeof e, "%s/run.err", lns_test_tmpdir());
    snprintf(full, sizeof full,
             "B='%s'; D='%s'; HOME='%s'; export HOME; unset LNS_RC LNS_KEY LNS_KEY_FILE; "
             "(%s) >'%s' 2>'%s' </dev/null",
             lns_test_bindir(), lns_test_tmpdir(), lns_test_tmpdir(), cmd, o, e);
    int st = system(full);
    lns_test_slurp(o, out, sizeof out);
    lns_test_slurp(e, err, sizeof err);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* "127.0.0.1:p1,127.0.0.1:p2" for the depots listed by index, -1 ending the list. */
static const char *dlist(int first, ...)
{
    static char buf[4][512];
    static int k;
    char *b = buf[k++ % 4];
    va_list ap;
    size_t n = 0;
    b[0] = 0;
    va_start(ap, first);
    for (int i = first; i >= 0; i = va_arg(ap, int))
        n += (size_t)snprintf(b + n, sizeof buf[0] - n, "%s127.0.0.1:%d", n ? "," : "",
                              dep[i].port);
    va_end(ap);
    return b;
}

static int cap_port(const char *cap)
{
    ibp_cap_t c;
    return cap && ibp_cap_parse(cap, &c) == IBP_OK ? c.port : -1;
}

static unsigned char *read_whole(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *p = malloc(len > 0 ? (size_t)len : 1);
    *n = p ? fread(p, 1, (size_t)len, f) : 0;
    fclose(f);
    return p;
}

static int same_file(const char *a, const char *b)
{
    size_t na = 0, nb = 0;
    unsigned char *pa = read_whole(a, &na), *pb = read_whole(b, &nb);
    int same = pa && pb && na == nb && memcmp(pa, pb, na) == 0;
    free(pa);
    free(pb);
    return same;
}

static xnd_t *load(const char *path)
{
    xnd_t *x = NULL;
    char e[256];
    if (xnd_read_file(path, &x, e, sizeof e) != XND_OK)
        fprintf(stderr, "%s: %s\n", path, e);
    return x;
}

/* A file of n bytes made from seed, uploaded by lors_upload; paths in src[] and xnd[]. */
static int upload(size_t n, uint64_t seed, int copies, int frags, const char *depots,
                  const char *extra, char *src, char *xnd)
{
    int id = ++seq;
    snprintf(src, 4096, "%s/f%d.bin", lns_test_tmpdir(), id);
    snprintf(xnd, 4096, "%s/f%d.xnd", lns_test_tmpdir(), id);
    unsigned char *p = malloc(n ? n : 1);
    lns_test_fill(p, n, seed);
    FILE *f = fopen(src, "wb");
    if (!f || fwrite(p, 1, n, f) != n) {
        free(p);
        if (f)
            fclose(f);
        return -1;
    }
    fclose(f);
    free(p);
    int rc = run("$B/lors_upload --depot-list '%s' -c %d -F %d -d 10m %s -o '%s' '%s'", depots,
                 copies, frags, extra ? extra : "", xnd, src);
    if (rc != 0)
        fprintf(stderr, "lors_upload exit %d: %s\n", rc, err);
    return rc;
}

/* Download xnd and compare with src. */
static int downloads_equal(const char *xnd, const char *src)
{
    char got[4096];
    snprintf(got, sizeof got, "%s/got%d.bin", lns_test_tmpdir(), ++seq);
    int rc = run("$B/lors_download -o '%s' '%s'", got, xnd);
    if (rc != 0)
        fprintf(stderr, "lors_download exit %d: %s\n", rc, err);
    return rc == 0 && same_file(got, src);
}

/* DECR every allocation of an exNode file, so the depots do not fill up. */
static void free_all(const char *xnd)
{
    xnd_t *x = load(xnd);
    for (size_t i = 0; x && i < x->nmaps; i++)
        ibp_decr(cli, x->maps[i]->cap[XND_MANAGE], IBP_READCAP);
    xnd_free(x);
}

static int count_lines_with(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* ---- event streams (--events) against lors_ls --json ---- */

#define MAXM 16

/* A mapping as lors_ls --json shows it. */
typedef struct lsmap {
    char depot[128];
    long long off, len, expires;
} lsmap_t;

/* The mappings of the lors_ls --json document in out[] into m; their number, or -1. */
static int ls_maps(lsmap_t *m)
{
    const char *p = strstr(out, "\"mappings\":[");
    int n = 0;
    if (!p || !tj_valid(out))
        return -1;
    for (; n < MAXM && (p = strstr(p, "{\"n\":")) != NULL; p++, n++) {
        const char *d = strstr(p, "\"depot\":\"");
        if (!d || sscanf(d + 9, "%127[^\"]", m[n].depot) != 1)
            return -1;
        m[n].off = tj_nth_int(p, "offset", 0);
        m[n].len = tj_nth_int(p, "length", 0);
        m[n].expires = tj_nth_int(p, "expires", 0);
    }
    return n;
}

/* The value of key in one event line, as an integer; LLONG_MIN if absent or "-". */
static long long evi(const char *line, const char *key)
{
    char pat[40];
    snprintf(pat, sizeof pat, " %s=", key);
    const char *p = strstr(line, pat);
    return p && p[strlen(pat)] != '-' ? strtoll(p + strlen(pat), NULL, 10) : LLONG_MIN;
}

/* What a lors_trim or lors_refresh stream said, per mapping (by its number before the run). */
typedef struct evsum {
    int nmapping, ntrim, nrefresh, nfailure, end, rc;
    long long bytes;          /* END's */
    char kind[MAXM];          /* 'T', 'R', 'F' or 0: the one line that acted on mapping k */
    long long freed[MAXM], old_end[MAXM], new_end[MAXM];
    char op[MAXM][12];        /* FAILURE: the step that failed */
} evsum_t;

/* The port of "host:port[/rid]". */
static int port_of(const char *depot)
{
    const char *c = strrchr(depot, ':');
    return c ? atoi(c + 1) : -1;
}

/* Read the stream in file D/name, written by tool for the mappings b[0..nb) (lors_ls --json
 * before): the header, BEGIN, one MAPPING per mapping, and every line that names a mapping
 * with that mapping's depot and bytes.  0, or -1 after a failed assertion. */
static int ev_read(const char *name, const char *tool, const lsmap_t *b, int nb, evsum_t *e)
{
    char hdr[64], *save = NULL;
    memset(e, 0, sizeof *e);
    if (run("cat \"$D/%s\"", name) != 0)
        return -1;
    snprintf(hdr, sizeof hdr, "LNS-EVENTS 1 tool=%s ", tool);
    CU_ASSERT(strncmp(out, hdr, strlen(hdr)) == 0);
    CU_ASSERT_EQUAL(count_lines_with(out, " BEGIN op="), 1);
    for (char *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        char kind[16] = "", want[160];
        if (sscanf(l, "%*d %15s", kind) != 1)
            continue;
        if (strcmp(kind, "END") == 0) {
            e->end++;
            e->rc = (int)evi(l, "rc");
            e->bytes = evi(l, "bytes");
            continue;
        }
        int isk = strcmp(kind, "TRIM") == 0 ? 'T' : strcmp(kind, "REFRESH") == 0 ? 'R'
                  : strcmp(kind, "FAILURE") == 0 ? 'F' : strcmp(kind, "MAPPING") == 0 ? 'M' : 0;
        if (!isk)
            continue;
        long long k = evi(l, "copy");
        CU_ASSERT_EQUAL(evi(l, "frag"), k);
        if (k < 0 || k >= nb) {
            CU_FAIL("an event names a mapping that is not there");
            return -1;
        }
        /* the depot, as lors_ls names it, and the mapping's bytes */
        snprintf(want, sizeof want, " depot=%s ", b[k].depot);
        CU_ASSERT_PTR_NOT_NULL(strstr(l, want));
        CU_ASSERT_EQUAL(evi(l, "off"), b[k].off);
        CU_ASSERT_EQUAL(evi(l, "len"), b[k].len);
        if (isk == 'M') {
            CU_ASSERT_EQUAL(k, e->nmapping); /* in document order */
            e->nmapping++;
            continue;
        }
        CU_ASSERT_EQUAL(e->kind[k], 0); /* one line per mapping acted on */
        e->kind[k] = (char)isk;
        e->ntrim += isk == 'T';
        e->nrefresh += isk == 'R';
        e->nfailure += isk == 'F';
        e->freed[k] = evi(l, "freed");
        e->old_end[k] = evi(l, "old_end");
        e->new_end[k] = evi(l, "new_end");
        const char *op = strstr(l, " op=");
        if (op)
            sscanf(op + 4, "%11[^ ]", e->op[k]);
    }
    CU_ASSERT_EQUAL(e->nmapping, nb);
    CU_ASSERT_EQUAL(e->end, 1);
    return 0;
}

/* lors_ls --json of xnd into m: the number of mappings, or -1. */
static int ls_json(const char *xnd, lsmap_t *m)
{
    return run("$B/lors_ls --json '%s'", xnd) == 0 || out[0] == '{' ? ls_maps(m) : -1;
}

static void test_json_checker(void)
{
    CU_ASSERT(tj_valid("{\"a\":[1,-2.5e3,true,null,\"x\\n\\u00e9\"],\"b\":{}}\n"));
    CU_ASSERT(!tj_valid("{\"a\":1,}"));
    CU_ASSERT(!tj_valid("{\"a\":01}"));
    CU_ASSERT(!tj_valid("[1] 2"));
    CU_ASSERT(!tj_valid("{\"a\":\"tab\there\"}"));
}

/* ---- lors_augment ---- */

static void test_augment_send(void)
{
    char src[4096], xnd[4096];
    revive();
    CU_ASSERT_EQUAL_FATAL(upload(3000000, 1, 1, 3, dlist(4, -1), NULL, src, xnd), 0);
    xnd_t *x0 = load(xnd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x0);
    CU_ASSERT_EQUAL(x0->nmaps, 3);

    CU_ASSERT_EQUAL(run("$B/lors_augment -V -d 10m --depot-list '%s' '%s'", dlist(1, -1), xnd),
                    0);
    CU_ASSERT_PTR_NULL(strstr(err, " failed ("));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "lors_augment: 3 new mappings; 3000000 bytes copied "
                                       "depot to depot, 0 relayed"));
    xnd_t *x1 = load(xnd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x1);
    CU_ASSERT_EQUAL_FATAL(x1->nmaps, 6);
    /* one new mapping per piece, same range and digests, on the new depot */
    for (size_t i = 0; i < 3; i++) {
        const xnd_mapping_t *a = x0->maps[i];
        int found = 0;
        for (size_t j = 3; j < 6; j++) {
            const xnd_mapping_t *b = x1->maps[j];
            if (b->exnode_offset != a->exnode_offset || b->logical_length != a->logical_length)
                continue;
            found++;
            CU_ASSERT_EQUAL(cap_port(b->cap[XND_READ]), dep[1].port);
            const char *da = NULL, *db = NULL;
            CU_ASSERT_PTR_NOT_NULL_FATAL(a->func);
            CU_ASSERT_PTR_NOT_NULL_FATAL(b->func);
            xnd_meta_get_string(&a->func->args, "digests", &da);
            xnd_meta_get_string(&b->func->args, "digests", &db);
            CU_ASSERT(da && db && strcmp(da, db) == 0);
        }
        CU_ASSERT_EQUAL(found, 1);
    }
    /* the depot the data came from SENT it (its event log is written every 50 ms) */
    struct timespec pause = {0, 200 * 1000000L};
    nanosleep(&pause, NULL);
    CU_ASSERT(td_count_events(&dep[4], " cmd=SEND ") >= 3);

    /* the original depot dies: the new copies alone give the file back */
    CU_ASSERT_EQUAL(td_kill(&dep[4], SIGKILL), 0);
    CU_ASSERT(downloads_equal(xnd, src));
    revive();
    free_all(xnd);
    xnd_free(x0);
    xnd_free(x1);
}

static void test_augment_balance_and_new_only(void)
{
    char src[4096], xnd[4096], newx[4096], before[4096 + 16];
    revive();
    CU_ASSERT_EQUAL_FATAL(upload(1000000, 2, 2, 2, dlist(0, 1, -1), NULL, src, xnd), 0);
    snprintf(before, sizeof before, "%s.before", xnd);
    CU_ASSERT_EQUAL_FATAL(run("cp '%s' '%s'", xnd, before), 0);

    /* two live copies already: -B -c 2 adds nothing */
    CU_ASSERT_EQUAL(run("$B/lors_augment -B -c 2 -d 10m --depot-list '%s' -f '%s'",
                        dlist(2, 3, -1), xnd), 0);
    xnd_t *x = load(xnd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_EQUAL(x->nmaps, 4);
    xnd_free(x);

    /* -n: only the new copies, to -o; the exNode itself untouched */
    snprintf(newx, sizeof newx, "%s/new%d.xnd", lns_test_tmpdir(), ++seq);
    CU_ASSERT_EQUAL(run("$B/lors_augment -n -c 1 -d 10m --depot-list '%s' '%s' -o '%s' "
                        "--events \"$D/aug.ev\"", dlist(2, -1), xnd, newx), 0);
    CU_ASSERT_EQUAL(err[0], 0);
    CU_ASSERT(same_file(xnd, before));
    /* the event stream: what it is, each depot-to-depot copy, how it ended */
    CU_ASSERT_EQUAL_FATAL(run("cat \"$D/aug.ev\""), 0);
    CU_ASSERT(strncmp(out, "LNS-EVENTS 1 tool=lors_augment ", 31) == 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, " BEGIN op=augment "));
    CU_ASSERT_EQUAL(count_lines_with(out, " SEND_END "), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, " END bytes=1000000 seconds="));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, " rc=0 dropped=0\n"));
    x = load(newx);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_EQUAL(x->nmaps, 2);
    CU_ASSERT_EQUAL(xnd_size(x), 1000000);
    for (size_t i = 0; i < x->nmaps; i++)
        CU_ASSERT_EQUAL(cap_port(x->maps[i]->cap[XND_READ]), dep[2].port);
    CU_ASSERT(downloads_equal(newx, src));
    free_all(newx);
    xnd_free(x);

    /* -B -c 3: one more copy per piece, and only one */
    CU_ASSERT_EQUAL(run("$B/lors_augment -B -c 3 -d 10m --depot-list '%s' '%s'", dlist(3, -1),
                        xnd), 0);
    x = load(xnd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_EQUAL(x->nmaps, 6);
    xnd_free(x);

    /* the rc file: its depots, its duration, and COPIES as the target of -B (via LNS_RC) */
    char rcpath[4096];
    snprintf(rcpath, sizeof rcpath, "%s/aug.rc", lns_test_tmpdir());
    FILE *rcf = fopen(rcpath, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(rcf);
    fprintf(rcf, "# test\nDEPOT 127.0.0.1:%d\nDURATION 10m\nCOPIES 4\n", dep[4].port);
    fclose(rcf);
    CU_ASSERT_EQUAL(run("LNS_RC=\"$D/aug.rc\" $B/lors_augment -B '%s'", xnd), 0);
    x = load(xnd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_EQUAL(x->nmaps, 8);
    CU_ASSERT_EQUAL(cap_port(x->maps[7]->cap[XND_READ]), dep[4].port);
    xnd_free(x);
    /* --no-rc: no depots again */
    CU_ASSERT_EQUAL(run("LNS_RC=\"$D/aug.rc\" $B/lors_augment --no-rc -B '%s'", xnd), 5);

    /* -n without -o, and no depots at all: usage and depots errors, nothing written */
    CU_ASSERT_EQUAL(run("$B/lors_augment -n --depot-list '%s' '%s'", dlist(2, -1), xnd), 2);
    CU_ASSERT_EQUAL(run("$B/lors_augment '%s'", xnd), 5);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "lors_augment: "));
    /* an L-Bone that does not answer (a closed loopback port): depots error, nothing written */
    CU_ASSERT_EQUAL(run("$B/lors_augment -H 127.0.0.1 -P 1 '%s'", xnd), 5);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "L-Bone"));
    free_all(xnd);
}

/* ---- lors_trim ---- */

static void test_trim_numbers_and_depot(void)
{
    char src[4096], xnd[4096];
    revive();
    CU_ASSERT_EQUAL_FATAL(upload(800000, 3, 2, 2, dlist(0, 1, 2, -1), NULL, src, xnd), 0);
    xnd_t *x0 = load(xnd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x0);
    CU_ASSERT_EQUAL_FATAL(x0->nmaps, 4);

    CU_ASSERT_EQUAL(run("$B/lors_trim -V -m 0 '%s'", xnd), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "lors_trim: removed: 0\n"));
    xnd_t *x1 = load(xnd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x1);
    CU_ASSERT_EQUAL_FATAL(x1->nmaps, 3);
    for (size_t i = 0; i < 3; i++)
        CU_ASSERT_STRING_EQUAL(x1->maps[i]->cap[XND_READ], x0->maps[i + 1]->cap[XND_READ]);
    /* -n is the default: the allocation is still there */
    ibp_probe_t p;
    CU_ASSERT_EQUAL(ibp_probe(cli, x0->maps[0]->cap[XND_MANAGE], &p), IBP_OK);
    CU_ASSERT(downloads_equal(xnd, src));

    /* --depot: every mapping on that depot.  Fragment i copy k went to depot (2i + k) mod 3,
     * so x1 is [f0 on 1, f1 on 2, f1 on 0]: depot 0 holds a copy that depot 2 also has. */
    int port = cap_port(x1->maps[2]->cap[XND_READ]);
    CU_ASSERT_EQUAL(port, dep[0].port);
    size_t on = 0;
    for (size_t i = 0; i < x1->nmaps; i++)
        on += cap_port(x1->maps[i]->cap[XND_READ]) == port;
    lsmap_t b[MAXM], a[MAXM];
    evsum_t e;
    int nb = ls_json(xnd, b);
    CU_ASSERT_EQUAL_FATAL(nb, (int)x1->nmaps);
    CU_ASSERT_EQUAL(run("$B/lors_trim --depot 127.0.0.1:%d --events \"$D/trim.ev\" '%s'", port,
                        xnd), 0);
    /* the stream: one TRIM per mapping that lors_ls no longer lists, as it listed it */
    CU_ASSERT_EQUAL(ls_json(xnd, a), nb - (int)on);
    if (ev_read("trim.ev", "lors_trim", b, nb, &e) == 0) {
        long long bytes = 0;
        CU_ASSERT_EQUAL(e.ntrim, (int)on);
        for (int k = 0; k < nb; k++) {
            CU_ASSERT_EQUAL(e.kind[k] == 'T', port_of(b[k].depot) == port);
            if (e.kind[k] == 'T') {
                CU_ASSERT_EQUAL(e.freed[k], LLONG_MIN); /* freed=-: no -d */
                bytes += b[k].len;
            }
        }
        CU_ASSERT_EQUAL(e.rc, 0);
        CU_ASSERT_EQUAL(e.bytes, bytes);
    }
    xnd_t *x2 = load(xnd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x2);
    CU_ASSERT_EQUAL(x2->nmaps, x1->nmaps - on);
    for (size_t i = 0; i < x2->nmaps; i++)
        CU_ASSERT_NOT_EQUAL(cap_port(x2->maps[i]->cap[XND_READ]), port);
    CU_ASSERT(downloads_equal(xnd, src));

    /* a number past the end, a bad list, -d with -n: usage */
    CU_ASSERT_EQUAL(run("$B/lors_trim -m 9 '%s'", xnd), 2);
    CU_ASSERT_EQUAL(run("$B/lors_trim -m 1-0 '%s'", xnd), 2);
    CU_ASSERT_EQUAL(run("$B/lors_trim -d -n -m 0 '%s'", xnd), 2);

    /* free what is left, and the mappings removed without -d */
    free_all(xnd);
    ibp_decr(cli, x0->maps[0]->cap[XND_MANAGE], IBP_READCAP);
    ibp_decr(cli, x1->maps[2]->cap[XND_MANAGE], IBP_READCAP);
    xnd_free(x0);
    xnd_free(x1);
    xnd_free(x2);
}

static void test_trim_dead_and_free(void)
{
    char src[4096], xnd[4096];
    revive();
    /* fragment i copy k on depot (2i + k) mod 2: every fragment on both depots */
    CU_ASSERT_EQUAL_FATAL(upload(600000, 4, 2, 2, dlist(3, 4, -1), NULL, src, xnd), 0);
    CU_ASSERT_EQUAL(td_kill(&dep[4], SIGKILL), 0);

    /* in a pipe: stdin to stdout, the file itself untouched */
    char piped[4096];
    snprintf(piped, sizeof piped, "%s/piped%d.xnd", lns_test_tmpdir(), ++seq);
    CU_ASSERT_EQUAL(run("cat '%s' | $B/lors_trim -u - > '%s'", xnd, piped), 0);
    CU_ASSERT_EQUAL(err[0], 0);
    xnd_t *x = load(piped);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_EQUAL(x->nmaps, 2);
    xnd_free(x);
    x = load(xnd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_EQUAL(x->nmaps, 4);
    xnd_free(x);
    CU_ASSERT_EQUAL(run("$B/lors_ls -l - < '%s'", piped), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "logical:\n0 600000 1\n"));

    CU_ASSERT_EQUAL(run("$B/lors_trim -V -u '%s'", xnd), 0);
    x = load(xnd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_EQUAL(x->nmaps, 2);
    for (size_t i = 0; i < x->nmaps; i++)
        CU_ASSERT_EQUAL(cap_port(x->maps[i]->cap[XND_READ]), dep[3].port);
    CU_ASSERT(downloads_equal(xnd, src));
    revive();

    /* -d frees: the allocation is gone afterwards */
    char m0[IBP_MAX_CAP];
    snprintf(m0, sizeof m0, "%s", x->maps[0]->cap[XND_MANAGE]);
    ibp_probe_t p;
    CU_ASSERT_EQUAL(ibp_probe(cli, m0, &p), IBP_OK);
    lsmap_t b[MAXM];
    evsum_t e;
    int nb = ls_json(xnd, b);
    CU_ASSERT_EQUAL(nb, 2);
    CU_ASSERT_EQUAL(run("$B/lors_trim -d -m 0 --force --events fd:3 '%s' 3>\"$D/trimd.ev\"",
                        xnd), 0);
    CU_ASSERT_NOT_EQUAL(ibp_probe(cli, m0, &p), IBP_OK);
    if (nb > 0 && ev_read("trimd.ev", "lors_trim", b, nb, &e) == 0) {
        CU_ASSERT_EQUAL(e.ntrim, 1);
        CU_ASSERT_EQUAL(e.kind[0], 'T');
        CU_ASSERT_EQUAL(e.freed[0], 1);
        CU_ASSERT_EQUAL(e.rc, 0);
        CU_ASSERT_EQUAL(e.bytes, b[0].len);
    }
    xnd_free(x);
    x = load(xnd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_EQUAL(x->nmaps, 1);
    free_all(xnd);
    xnd_free(x);
}

static void test_trim_refuses_last_copy(void)
{
    char src[4096], xnd[4096], before[4096 + 16];
    revive();
    CU_ASSERT_EQUAL_FATAL(upload(300000, 5, 1, 2, dlist(0, 1, -1), NULL, src, xnd), 0);
    snprintf(before, sizeof before, "%s.before", xnd);
    CU_ASSERT_EQUAL_FATAL(run("cp '%s' '%s'", xnd, before), 0);

    lsmap_t b[MAXM];
    evsum_t e;
    int nb = ls_json(xnd, b);
    CU_ASSERT_EQUAL(nb, 2);
    CU_ASSERT_EQUAL(run("$B/lors_trim -m 1 --events \"$D/trim6.ev\" '%s'", xnd), 6);
    CU_ASSERT(strncmp(err, "lors_trim: ", 11) == 0);
    CU_ASSERT_EQUAL(count_lines_with(err, "\n"), 1);
    CU_ASSERT(same_file(xnd, before));
    /* refused: no TRIM, and END says so */
    if (nb > 0 && ev_read("trim6.ev", "lors_trim", b, nb, &e) == 0) {
        CU_ASSERT_EQUAL(e.ntrim, 0);
        CU_ASSERT_EQUAL(e.rc, 6);
        CU_ASSERT_EQUAL(e.bytes, 0);
    }
    CU_ASSERT_EQUAL(run("$B/lors_trim -d --depot 127.0.0.1:%d '%s'", dep[0].port, xnd), 6);
    CU_ASSERT(same_file(xnd, before));
    CU_ASSERT(downloads_equal(xnd, src));

    /* --force does it, and lors_ls then sees the gap */
    CU_ASSERT_EQUAL(run("$B/lors_trim --force -m 1 '%s'", xnd), 0);
    CU_ASSERT_EQUAL(run("$B/lors_ls -l '%s'", xnd), 8);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, " 0 GAP\n"));
    free_all(before);
}

/* ---- lors_refresh ---- */

/* The ends of all mappings of an exNode file, within [lo, hi]? */
static int ends_within(const char *xnd, int64_t lo, int64_t hi)
{
    xnd_t *x = load(xnd);
    int ok = x && x->nmaps > 0;
    for (size_t i = 0; ok && i < x->nmaps; i++)
        if (x->maps[i]->end.epoch < lo || x->maps[i]->end.epoch > hi) {
            fprintf(stderr, "mapping %zu ends %lld, not in [%lld, %lld]\n", i,
                    (long long)x->maps[i]->end.epoch, (long long)lo, (long long)hi);
            ok = 0;
        }
    xnd_free(x);
    return ok;
}

/* lors_ls --json shows the same expiry as the exNode (to the PROBE's second). */
static int ls_agrees(const char *xnd)
{
    xnd_t *x = load(xnd);
    int ok = x != NULL && run("$B/lors_ls --json '%s'", xnd) == 0 && tj_valid(out);
    for (size_t i = 0; ok && i < x->nmaps; i++) {
        long long e = tj_nth_int(out, "expires", (int)i);
        ok = e > x->maps[i]->end.epoch - 3 && e < x->maps[i]->end.epoch + 3;
        if (!ok)
            fprintf(stderr, "ls says %lld, the exNode %lld\n", e,
                    (long long)x->maps[i]->end.epoch);
    }
    xnd_free(x);
    return ok;
}

static void test_refresh_modes(void)
{
    char src[4096], xnd[4096];
    revive();
    CU_ASSERT_EQUAL_FATAL(upload(200000, 6, 2, 1, dlist(1, 2, -1), NULL, src, xnd), 0);
    int64_t now = (int64_t)time(NULL);
    CU_ASSERT(ends_within(xnd, now + 590, now + 605));

    lsmap_t b[MAXM], a[MAXM];
    evsum_t e;
    int nb = ls_json(xnd, b);
    CU_ASSERT_EQUAL(nb, 2);
    CU_ASSERT_EQUAL(run("$B/lors_refresh -s 30m --events \"$D/ref.ev\" '%s'", xnd), 0);
    CU_ASSERT_EQUAL(err[0], 0);
    now = (int64_t)time(NULL);
    CU_ASSERT(ends_within(xnd, now + 1790, now + 1805));
    CU_ASSERT(ls_agrees(xnd));
    /* one REFRESH per mapping: the expiry lors_ls showed before, the one it shows now */
    CU_ASSERT_EQUAL(ls_json(xnd, a), nb);
    if (nb > 0 && ev_read("ref.ev", "lors_refresh", b, nb, &e) == 0) {
        CU_ASSERT_EQUAL(e.nrefresh, nb);
        for (int k = 0; k < nb; k++) {
            CU_ASSERT(llabs(e.old_end[k] - b[k].expires) <= 3);
            CU_ASSERT(llabs(e.new_end[k] - a[k].expires) <= 3);
            CU_ASSERT(e.new_end[k] >= now + 1790);
        }
        CU_ASSERT_EQUAL(e.rc, 0);
        CU_ASSERT_EQUAL(e.bytes, b[0].len + b[1].len);
    }

    CU_ASSERT_EQUAL(run("$B/lors_refresh -V -d 5m '%s'", xnd), 0);
    CU_ASSERT_EQUAL(count_lines_with(err, " -> "), 2);
    now = (int64_t)time(NULL);
    CU_ASSERT(ends_within(xnd, now + 2090, now + 2105));

    char at[32];
    xnd_time_format(now + 1200, at, sizeof at);
    CU_ASSERT_EQUAL(run("$B/lors_refresh -a '%s' '%s'", at, xnd), 0);
    CU_ASSERT(ends_within(xnd, now + 1195, now + 1205));
    CU_ASSERT(ls_agrees(xnd));

    /* -m, the default: the depots' maximum, 3600 s */
    CU_ASSERT_EQUAL(run("$B/lors_refresh '%s'", xnd), 0);
    now = (int64_t)time(NULL);
    CU_ASSERT(ends_within(xnd, now + 3590, now + 3605));
    CU_ASSERT(ls_agrees(xnd));
    CU_ASSERT(downloads_equal(xnd, src));

    CU_ASSERT_EQUAL(run("$B/lors_refresh -m -s 1h '%s'", xnd), 2);
    CU_ASSERT_EQUAL(run("$B/lors_refresh -a yesterday '%s'", xnd), 2);
    free_all(xnd);
}

static void test_refresh_dead_depot(void)
{
    char src[4096], xnd[4096];
    revive();
    CU_ASSERT_EQUAL_FATAL(upload(200000, 7, 2, 1, dlist(0, 4, -1), NULL, src, xnd), 0);
    xnd_t *x0 = load(xnd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x0);
    lsmap_t b[MAXM], a[MAXM];
    evsum_t e;
    int nb = ls_json(xnd, b);
    CU_ASSERT_EQUAL_FATAL(nb, 2);
    CU_ASSERT_EQUAL(td_kill(&dep[4], SIGKILL), 0);
    int dead = cap_port(x0->maps[0]->cap[XND_READ]) == dep[4].port ? 0 : 1;

    CU_ASSERT_EQUAL(run("$B/lors_refresh -s 40m --events \"$D/ref8.ev\" '%s'", xnd), 8);
    char want[128];
    snprintf(want, sizeof want, "lors_refresh: mapping %d (127.0.0.1:%d", dead, dep[4].port);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
    CU_ASSERT_EQUAL(count_lines_with(err, "\n"), 1);
    CU_ASSERT_EQUAL(ls_json(xnd, a), nb);
    if (ev_read("ref8.ev", "lors_refresh", b, nb, &e) == 0) {
        /* the dead depot's mapping: a FAILURE of the CHNG; the other: extended */
        CU_ASSERT_EQUAL(e.kind[dead], 'F');
        CU_ASSERT_STRING_EQUAL(e.op[dead], "CHANGE");
        CU_ASSERT_EQUAL(port_of(b[dead].depot), dep[4].port);
        CU_ASSERT_EQUAL(e.kind[1 - dead], 'R');
        CU_ASSERT(llabs(e.new_end[1 - dead] - a[1 - dead].expires) <= 3);
        CU_ASSERT_EQUAL(e.nfailure + e.nrefresh, 2);
        CU_ASSERT_EQUAL(e.rc, 8);
        CU_ASSERT_EQUAL(e.bytes, b[1 - dead].len);
    }
    /* the live one was extended and recorded, the dead one kept its end */
    xnd_t *x1 = load(xnd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x1);
    int64_t now = (int64_t)time(NULL);
    CU_ASSERT(x1->maps[1 - dead]->end.epoch >= now + 2390);
    CU_ASSERT_EQUAL(x1->maps[dead]->end.epoch, x0->maps[dead]->end.epoch);
    revive();
    free_all(xnd);
    xnd_free(x0);
    xnd_free(x1);
}

/* ---- lors_ls ---- */

static void test_ls_views(void)
{
    char src[4096], xnd[4096];
    revive();
    CU_ASSERT_EQUAL_FATAL(upload(3 << 20, 8, 2, 2, dlist(2, 3, -1), NULL, src, xnd), 0);

    CU_ASSERT_EQUAL(run("$B/lors_ls -p '%s'", xnd), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "size: 3145728\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "mappings: 4\n"));
    CU_ASSERT_PTR_NULL(strstr(out, "logical:"));
    const char *p = strstr(out, "physical:\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    p += strlen("physical:\n");
    for (int i = 0; i < 4; i++) {
        int n, refs, port, used = 0;
        char flags[8], date[16], tod[16], status[16];
        long long off, len;
        CU_ASSERT_EQUAL_FATAL(sscanf(p, "%d %7s %d 127.0.0.1:%d/%*s %lld %lld %15s %15s %15s%n",
                                     &n, flags, &refs, &port, &off, &len, date, tod, status,
                                     &used), 9);
        CU_ASSERT_EQUAL(n, i);
        CU_ASSERT_STRING_EQUAL(flags, "Hrwma");
        CU_ASSERT_EQUAL(refs, 1);
        CU_ASSERT(port == dep[2].port || port == dep[3].port);
        CU_ASSERT_EQUAL(len, 3 << 19);
        CU_ASSERT(off == 0 || off == 3 << 19);
        CU_ASSERT_STRING_EQUAL(status, "alive");
        p = strchr(p + used, '\n');
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        p++;
    }

    CU_ASSERT_EQUAL(run("$B/lors_ls -l '%s'", xnd), 0);
    CU_ASSERT_PTR_NULL(strstr(out, "physical:"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "logical:\n0 3145728 2\n"));

    CU_ASSERT_EQUAL(run("$B/lors_ls -h '%s'", xnd), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "size: 3.0MiB\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, " 1.5MiB "));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "logical:\n0 3.0MiB 2\n"));

    CU_ASSERT_EQUAL(run("$B/lors_ls --json '%s'", xnd), 0);
    CU_ASSERT(tj_valid(out));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"complete\":true"));
    CU_ASSERT_EQUAL(count_lines_with(out, "\"alive\":true"), 4);
    CU_ASSERT_EQUAL(tj_nth_int(out, "size", 0), 3 << 20);
    if (access("/usr/bin/python3", X_OK) == 0)
        CU_ASSERT_EQUAL(run("$B/lors_ls --json '%s' | python3 -m json.tool >/dev/null", xnd),
                        0);

    /* a killed depot: its mappings dead, the file still whole through the others */
    CU_ASSERT_EQUAL(td_kill(&dep[3], SIGKILL), 0);
    CU_ASSERT_EQUAL(run("$B/lors_ls '%s'", xnd), 0);
    CU_ASSERT_EQUAL(count_lines_with(out, " dead: "), 2);
    CU_ASSERT_EQUAL(count_lines_with(out, " alive\n"), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "logical:\n0 3145728 1\n"));
    CU_ASSERT_EQUAL(run("$B/lors_ls --json '%s'", xnd), 0);
    CU_ASSERT(tj_valid(out));
    CU_ASSERT_EQUAL(count_lines_with(out, "\"alive\":false"), 2);
    /* --no-probe asks nobody */
    CU_ASSERT_EQUAL(run("$B/lors_ls --no-probe -p '%s'", xnd), 0);
    CU_ASSERT_EQUAL(count_lines_with(out, " not probed\n"), 4);
    revive();
    free_all(xnd);
}

static void test_ls_expired_and_lost(void)
{
    char src[4096], xnd[4096];
    revive();
    CU_ASSERT_EQUAL_FATAL(upload(100000, 9, 1, 1, dlist(0, -1), "-d 2s", src, xnd), 0);
    sleep(3);
    CU_ASSERT_EQUAL(run("$B/lors_ls '%s'", xnd), 8);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, " dead: expired\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "0 100000 0 GAP\n"));
    CU_ASSERT(strncmp(err, "lors_ls: ", 9) == 0);
    CU_ASSERT_EQUAL(run("$B/lors_ls --json '%s'", xnd), 8);
    CU_ASSERT(tj_valid(out));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"complete\":false"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"why\":\"expired\""));

    /* a depot gone with the only copy */
    CU_ASSERT_EQUAL_FATAL(upload(100000, 10, 1, 2, dlist(1, 4, -1), NULL, src, xnd), 0);
    CU_ASSERT_EQUAL(td_kill(&dep[4], SIGKILL), 0);
    CU_ASSERT_EQUAL(run("$B/lors_ls -l '%s'", xnd), 8);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, " 0 GAP\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, " 1\n"));
    /* nothing to copy those bytes from: lors_augment refuses and leaves the exNode alone */
    char before[4096 + 16];
    snprintf(before, sizeof before, "%s.before", xnd);
    CU_ASSERT_EQUAL_FATAL(run("cp '%s' '%s'", xnd, before), 0);
    CU_ASSERT_EQUAL(run("$B/lors_augment -d 10m --depot-list '%s' '%s'", dlist(2, -1), xnd), 6);
    CU_ASSERT(strncmp(err, "lors_augment: ", 14) == 0);
    CU_ASSERT(same_file(xnd, before));
    revive();
    free_all(xnd);
}

/* ---- malformed exNodes ---- */

static void test_malformed_exnode(void)
{
    static const char *bad[] = {
        "not xml at all\n",
        "<?xml version=\"1.0\"?>\n<exnode xmlns=\"http://loci.cs.utk.edu/exnode\">\n"
        "<mapping><exnode_offset>-5</exnode_offset></mapping></exnode>\n",
        "<exnode xmlns=\"http://loci.cs.utk.edu/exnode\"><mapping>",
        "<notes xmlns=\"urn:example\"><mapping/></notes>\n",
    };
    char path[4096], copy[4096 + 16], o[4096];
    revive();
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
        snprintf(path, sizeof path, "%s/bad%zu.xnd", lns_test_tmpdir(), b);
        snprintf(copy, sizeof copy, "%s.orig", path);
        FILE *f = fopen(path, "w");
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        fputs(bad[b], f);
        fclose(f);
        CU_ASSERT_EQUAL_FATAL(run("cp '%s' '%s'", path, copy), 0);
        for (int c = 0; c < 4; c++) {
            char cmd[512];
            if (c == 0)
                snprintf(cmd, sizeof cmd, "$B/lors_augment --depot-list 127.0.0.1:%d",
                         dep[0].port);
            else
                snprintf(cmd, sizeof cmd, "$B/%s", c == 1 ? "lors_trim -m 0"
                                                   : c == 2 ? "lors_refresh" : "lors_ls");
            /* in place, and to -o (not for lors_ls) */
            CU_ASSERT_EQUAL(run("%s '%s'", cmd, path), 3);
            CU_ASSERT(strchr(err, '\n') == err + strlen(err) - 1);
            CU_ASSERT(strncmp(err, "lors_", 5) == 0);
            CU_ASSERT(same_file(path, copy));
            if (c == 3)
                continue;
            snprintf(o, sizeof o, "%s/out%zu_%d.xnd", lns_test_tmpdir(), b, c);
            CU_ASSERT_EQUAL(run("%s -o '%s' '%s'", cmd, o, path), 3);
            CU_ASSERT_NOT_EQUAL(access(o, F_OK), 0);
        }
    }
    CU_ASSERT_EQUAL(run("$B/lors_ls '%s/no-such.xnd'", lns_test_tmpdir()), 3);
}

/* ---- the command-line contract ---- */

static void test_help_version_usage(void)
{
    static const char *tools[] = {"lors_augment", "lors_trim", "lors_refresh", "lors_ls"};
    for (size_t i = 0; i < 4; i++) {
        char want[64];
        CU_ASSERT_EQUAL(run("$B/%s --help", tools[i]), 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "Usage: "));
        CU_ASSERT_EQUAL(run("$B/%s --version", tools[i]), 0);
        snprintf(want, sizeof want, "%s (lns) %s\n", tools[i], LNS_VERSION);
        CU_ASSERT_STRING_EQUAL(out, want);
        CU_ASSERT_EQUAL(run("$B/%s --no-such-flag x.xnd", tools[i]), 2);
        CU_ASSERT(strncmp(err, tools[i], strlen(tools[i])) == 0);
        CU_ASSERT_EQUAL(run("$B/%s", tools[i]), 2);
        CU_ASSERT_EQUAL(run("$B/%s -t 0 x.xnd", tools[i]), 2);
        CU_ASSERT_EQUAL(run("$B/%s --rc '%s/no-such-rc' x.xnd", tools[i], lns_test_tmpdir()),
                        2);
    }
}

void lns_test_register(void)
{
    CU_pSuite s = CU_add_suite("lors manage tools", suite_init, suite_clean);
    CU_add_test(s, "the test's JSON checker", test_json_checker);
    CU_add_test(s, "--help, --version, usage errors", test_help_version_usage);
    CU_add_test(s, "augment by SEND; the original depot dies", test_augment_send);
    CU_add_test(s, "augment -B and -n", test_augment_balance_and_new_only);
    CU_add_test(s, "trim -m, --depot", test_trim_numbers_and_depot);
    CU_add_test(s, "trim -u after a kill, -d frees", test_trim_dead_and_free);
    CU_add_test(s, "trim refuses the last copy without --force", test_trim_refuses_last_copy);
    CU_add_test(s, "refresh -s, -d, -a, -m", test_refresh_modes);
    CU_add_test(s, "refresh with a dead depot: exit 8 naming the mapping",
                test_refresh_dead_depot);
    CU_add_test(s, "ls -p, -l, -h, --json; a killed depot", test_ls_views);
    CU_add_test(s, "ls: an expired mapping, a lost copy", test_ls_expired_and_lost);
    CU_add_test(s, "a malformed exNode: exit 3, nothing written", test_malformed_exnode);
}
