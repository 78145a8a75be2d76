/* test_lors_tools_manage.c -- the programs lors_augment, lors_trim and lors_refresh, run as a
 * user runs them, against five real depots.
 *
 * Every network file is made by the real lors_upload; every program runs through sh -c with
 * its stdout and stderr captured (tests/lib/test_tools.h), and is judged by what a user can
 * see: the exit code, the lines it prints, the exNode it leaves (read back with libexnode), the
 * event stream it writes (held against lors_ls --json) and the depots themselves (probed with
 * libibp, or read back with lors_download).  Tests that kill a depot revive it at the start of
 * the next test, so a failed assertion cannot leave the fleet short.
 */
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ibp.h"
#include "lns_test.h"
#include "test_json.h"
#include "test_tools.h"
#include "xnd.h"

#define ND 5

static tt_env_t T;

/* ---- event streams (--events) against lors_ls --json ---- */

/* What a lors_trim or lors_refresh stream said, per mapping (by its number before the run). */
typedef struct evsum {
    int nmapping, ntrim, nrefresh, nfailure, end, rc;
    long long bytes;          /* END's */
    char kind[TT_MAXM];       /* 'T', 'R', 'F' or 0: the one line that acted on mapping k */
    long long freed[TT_MAXM], old_end[TT_MAXM], new_end[TT_MAXM];
    char op[TT_MAXM][12];     /* FAILURE: the step that failed */
} evsum_t;

/* Read the stream in file D/name, written by tool for the mappings b[0..nb) (lors_ls --json
 * before): the header, BEGIN, one MAPPING per mapping, and every line that names a mapping
 * with that mapping's depot and bytes.  0, or -1 after a failed assertion. */
static int ev_read(const char *name, const char *tool, const tt_lsmap_t *b, int nb, evsum_t *e)
{
    char hdr[64], *save = NULL;
    memset(e, 0, sizeof *e);
    if (tt_sh(&T, "cat \"$D/%s\"", name) != 0)
        return -1;
    snprintf(hdr, sizeof hdr, "LNS-EVENTS 1 tool=%s ", tool);
    CU_ASSERT(strncmp(T.out, hdr, strlen(hdr)) == 0);
    CU_ASSERT_EQUAL(tt_count(T.out, " BEGIN op="), 1);
    for (char *l = strtok_r(T.out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        char kind[16] = "", want[160];
        if (sscanf(l, "%*d %15s", kind) != 1)
            continue;
        if (strcmp(kind, "END") == 0) {
            e->end++;
            e->rc = (int)tt_ev_int(l, "rc");
            e->bytes = tt_ev_int(l, "bytes");
            continue;
        }
        int isk = strcmp(kind, "TRIM") == 0 ? 'T' : strcmp(kind, "REFRESH") == 0 ? 'R'
                  : strcmp(kind, "FAILURE") == 0 ? 'F' : strcmp(kind, "MAPPING") == 0 ? 'M' : 0;
        if (!isk)
            continue;
        long long k = tt_ev_int(l, "copy");
        CU_ASSERT_EQUAL(tt_ev_int(l, "frag"), k);
        if (k < 0 || k >= nb) {
            CU_FAIL("an event names a mapping that is not there");
            return -1;
        }
        /* the depot, as lors_ls names it, and the mapping's bytes */
        snprintf(want, sizeof want, " depot=%s ", b[k].depot);
        CU_ASSERT_PTR_NOT_NULL(strstr(l, want));
        CU_ASSERT_EQUAL(tt_ev_int(l, "off"), b[k].off);
        CU_ASSERT_EQUAL(tt_ev_int(l, "len"), b[k].len);
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
        e->freed[k] = tt_ev_int(l, "freed");
        e->old_end[k] = tt_ev_int(l, "old_end");
        e->new_end[k] = tt_ev_int(l, "new_end");
        const char *op = strstr(l, " op=");
        if (op)
            sscanf(op + 4, "%11[^ ]", e->op[k]);
    }
    CU_ASSERT_EQUAL(e->nmapping, nb);
    CU_ASSERT_EQUAL(e->end, 1);
    return 0;
}

/* ---- lors_augment ---- */

static void test_augment_send(void)
{
    char src[4096], xnd[4096];
    tt_revive(&T);
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 3000000, 1, 1, 3, tt_dlist(&T, 4, -1), NULL, src, xnd), 0);
    xnd_t *x0 = tt_load(xnd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x0);
    CU_ASSERT_EQUAL(x0->nmaps, 3);

    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_augment -V -d 10m --depot-list '%s' '%s'",
                          tt_dlist(&T, 1, -1), xnd), 0);
    CU_ASSERT_PTR_NULL(strstr(T.err, " failed ("));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "lors_augment: 3 new mappings; 3000000 bytes copied "
                                       "depot to depot, 0 relayed"));
    xnd_t *x1 = tt_load(xnd);
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
            CU_ASSERT_EQUAL(tt_cap_port(b->cap[XND_READ]), T.dep[1].port);
            const char *da = NULL, *db = NULL;
            CU_ASSERT_PTR_NOT_NULL_FATAL(a->func);
            CU_ASSERT_PTR_NOT_NULL_FATAL(b->func);
            xnd_meta_get_string(&a->func->args, "digests", &da);
            xnd_meta_get_string(&b->func->args, "digests", &db);
            CU_ASSERT(da && db && strcmp(da, db) == 0);
        }
        CU_ASSERT_EQUAL(found, 1);
    }
    /* the depot the data came from SENT it (its event log is written every 50 ms: polled) */
    int64_t end = lns_test_deadline(LNS_TEST_WAIT_MS);
    while (td_count_events(&T.dep[4], " cmd=SEND ") < 3 && lns_test_poll(end))
        ;
    CU_ASSERT(td_count_events(&T.dep[4], " cmd=SEND ") >= 3);

    /* the original depot dies: the new copies alone give the file back */
    CU_ASSERT_EQUAL(lns_test_server_kill(&T.dep[4].srv, SIGKILL), 0);
    CU_ASSERT(tt_downloads_equal(&T, xnd, src));
    tt_revive(&T);
    tt_free_all(&T, xnd);
    xnd_free(x0);
    xnd_free(x1);
}

static void test_augment_balance_and_new_only(void)
{
    char src[4096], xnd[4096], newx[4096], before[4096 + 16];
    tt_revive(&T);
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 1000000, 2, 2, 2, tt_dlist(&T, 0, 1, -1), NULL, src, xnd),
                          0);
    snprintf(before, sizeof before, "%s.before", xnd);
    CU_ASSERT_EQUAL_FATAL(tt_sh(&T, "cp '%s' '%s'", xnd, before), 0);

    /* two live copies already: -B -c 2 adds nothing */
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_augment -B -c 2 -d 10m --depot-list '%s' -f '%s'",
                          tt_dlist(&T, 2, 3, -1), xnd), 0);
    xnd_t *x = tt_load(xnd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_EQUAL(x->nmaps, 4);
    xnd_free(x);

    /* -n: only the new copies, to -o; the exNode itself untouched */
    snprintf(newx, sizeof newx, "%s/new%d.xnd", lns_test_tmpdir(), ++T.seq);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_augment -n -c 1 -d 10m --depot-list '%s' '%s' -o '%s' "
                          "--events \"$D/aug.ev\"", tt_dlist(&T, 2, -1), xnd, newx), 0);
    CU_ASSERT_EQUAL(T.err[0], 0);
    CU_ASSERT(tt_same_file(xnd, before));
    /* the event stream: what it is, each depot-to-depot copy, how it ended */
    CU_ASSERT_EQUAL_FATAL(tt_sh(&T, "cat \"$D/aug.ev\""), 0);
    CU_ASSERT(strncmp(T.out, "LNS-EVENTS 1 tool=lors_augment ", 31) == 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, " BEGIN op=augment "));
    CU_ASSERT_EQUAL(tt_count(T.out, " SEND_END "), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, " END bytes=1000000 seconds="));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, " rc=0 dropped=0\n"));
    x = tt_load(newx);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_EQUAL(x->nmaps, 2);
    CU_ASSERT_EQUAL(xnd_size(x), 1000000);
    for (size_t i = 0; i < x->nmaps; i++)
        CU_ASSERT_EQUAL(tt_cap_port(x->maps[i]->cap[XND_READ]), T.dep[2].port);
    CU_ASSERT(tt_downloads_equal(&T, newx, src));
    tt_free_all(&T, newx);
    xnd_free(x);

    /* -B -c 3: one more copy per piece, and only one */
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_augment -B -c 3 -d 10m --depot-list '%s' '%s'",
                          tt_dlist(&T, 3, -1), xnd), 0);
    x = tt_load(xnd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_EQUAL(x->nmaps, 6);
    xnd_free(x);

    /* the rc file: its depots, its duration, and COPIES as the target of -B (via LNS_RC) */
    char rcpath[4096];
    snprintf(rcpath, sizeof rcpath, "%s/aug.rc", lns_test_tmpdir());
    FILE *rcf = fopen(rcpath, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(rcf);
    fprintf(rcf, "# test\nDEPOT 127.0.0.1:%d\nDURATION 10m\nCOPIES 4\n", T.dep[4].port);
    fclose(rcf);
    CU_ASSERT_EQUAL(tt_sh(&T, "LNS_RC=\"$D/aug.rc\" $B/lors_augment -B '%s'", xnd), 0);
    x = tt_load(xnd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_EQUAL(x->nmaps, 8);
    CU_ASSERT_EQUAL(tt_cap_port(x->maps[7]->cap[XND_READ]), T.dep[4].port);
    xnd_free(x);
    /* --no-rc: no depots again */
    CU_ASSERT_EQUAL(tt_sh(&T, "LNS_RC=\"$D/aug.rc\" $B/lors_augment --no-rc -B '%s'", xnd), 5);

    /* -n without -o, and no depots at all: usage and depots errors, nothing written */
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_augment -n --depot-list '%s' '%s'", tt_dlist(&T, 2, -1),
                          xnd), 2);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_augment '%s'", xnd), 5);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "lors_augment: "));
    /* an L-Bone that does not answer (a closed loopback port): depots error, nothing written */
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_augment -H 127.0.0.1 -P 1 '%s'", xnd), 5);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "L-Bone"));
    tt_free_all(&T, xnd);
}

/* ---- lors_trim ---- */

static void test_trim_numbers_and_depot(void)
{
    char src[4096], xnd[4096];
    tt_revive(&T);
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 800000, 3, 2, 2, tt_dlist(&T, 0, 1, 2, -1), NULL, src, xnd),
                          0);
    xnd_t *x0 = tt_load(xnd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x0);
    CU_ASSERT_EQUAL_FATAL(x0->nmaps, 4);

    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_trim -V -m 0 '%s'", xnd), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "lors_trim: removed: 0\n"));
    xnd_t *x1 = tt_load(xnd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x1);
    CU_ASSERT_EQUAL_FATAL(x1->nmaps, 3);
    for (size_t i = 0; i < 3; i++)
        CU_ASSERT_STRING_EQUAL(x1->maps[i]->cap[XND_READ], x0->maps[i + 1]->cap[XND_READ]);
    /* -n is the default: the allocation is still there */
    ibp_probe_t p;
    CU_ASSERT_EQUAL(ibp_probe(T.cli, x0->maps[0]->cap[XND_MANAGE], &p), IBP_OK);
    CU_ASSERT(tt_downloads_equal(&T, xnd, src));

    /* --depot: every mapping on that depot.  Fragment i copy k went to depot (2i + k) mod 3,
     * so x1 is [f0 on 1, f1 on 2, f1 on 0]: depot 0 holds a copy that depot 2 also has. */
    int port = tt_cap_port(x1->maps[2]->cap[XND_READ]);
    CU_ASSERT_EQUAL(port, T.dep[0].port);
    size_t on = 0;
    for (size_t i = 0; i < x1->nmaps; i++)
        on += tt_cap_port(x1->maps[i]->cap[XND_READ]) == port;
    tt_lsmap_t b[TT_MAXM], a[TT_MAXM];
    evsum_t e;
    int nb = tt_ls_json(&T, xnd, b);
    CU_ASSERT_EQUAL_FATAL(nb, (int)x1->nmaps);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_trim --depot 127.0.0.1:%d --events \"$D/trim.ev\" '%s'",
                          port, xnd), 0);
    /* the stream: one TRIM per mapping that lors_ls no longer lists, as it listed it */
    CU_ASSERT_EQUAL(tt_ls_json(&T, xnd, a), nb - (int)on);
    if (ev_read("trim.ev", "lors_trim", b, nb, &e) == 0) {
        long long bytes = 0;
        CU_ASSERT_EQUAL(e.ntrim, (int)on);
        for (int k = 0; k < nb; k++) {
            CU_ASSERT_EQUAL(e.kind[k] == 'T', tt_port_of(b[k].depot) == port);
            if (e.kind[k] == 'T') {
                CU_ASSERT_EQUAL(e.freed[k], LLONG_MIN); /* freed=-: no -d */
                bytes += b[k].len;
            }
        }
        CU_ASSERT_EQUAL(e.rc, 0);
        CU_ASSERT_EQUAL(e.bytes, bytes);
    }
    xnd_t *x2 = tt_load(xnd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x2);
    CU_ASSERT_EQUAL(x2->nmaps, x1->nmaps - on);
    for (size_t i = 0; i < x2->nmaps; i++)
        CU_ASSERT_NOT_EQUAL(tt_cap_port(x2->maps[i]->cap[XND_READ]), port);
    CU_ASSERT(tt_downloads_equal(&T, xnd, src));

    /* a number past the end, a bad list, -d with -n: usage */
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_trim -m 9 '%s'", xnd), 2);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_trim -m 1-0 '%s'", xnd), 2);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_trim -d -n -m 0 '%s'", xnd), 2);

    /* free what is left, and the mappings removed without -d */
    tt_free_all(&T, xnd);
    ibp_decr(T.cli, x0->maps[0]->cap[XND_MANAGE], IBP_READCAP);
    ibp_decr(T.cli, x1->maps[2]->cap[XND_MANAGE], IBP_READCAP);
    xnd_free(x0);
    xnd_free(x1);
    xnd_free(x2);
}

static void test_trim_dead_and_free(void)
{
    char src[4096], xnd[4096];
    tt_revive(&T);
    /* fragment i copy k on depot (2i + k) mod 2: every fragment on both depots */
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 600000, 4, 2, 2, tt_dlist(&T, 3, 4, -1), NULL, src, xnd),
                          0);
    CU_ASSERT_EQUAL(lns_test_server_kill(&T.dep[4].srv, SIGKILL), 0);

    /* in a pipe: stdin to stdout, the file itself untouched */
    char piped[4096];
    snprintf(piped, sizeof piped, "%s/piped%d.xnd", lns_test_tmpdir(), ++T.seq);
    CU_ASSERT_EQUAL(tt_sh(&T, "cat '%s' | $B/lors_trim -u - > '%s'", xnd, piped), 0);
    CU_ASSERT_EQUAL(T.err[0], 0);
    xnd_t *x = tt_load(piped);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_EQUAL(x->nmaps, 2);
    xnd_free(x);
    x = tt_load(xnd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_EQUAL(x->nmaps, 4);
    xnd_free(x);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_ls -l - < '%s'", piped), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "logical:\nOFFSET LENGTH LIVE\n     0 600000    1\n"));

    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_trim -V -u '%s'", xnd), 0);
    x = tt_load(xnd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_EQUAL(x->nmaps, 2);
    for (size_t i = 0; i < x->nmaps; i++)
        CU_ASSERT_EQUAL(tt_cap_port(x->maps[i]->cap[XND_READ]), T.dep[3].port);
    CU_ASSERT(tt_downloads_equal(&T, xnd, src));
    tt_revive(&T);

    /* -d frees: the allocation is gone afterwards */
    char m0[IBP_MAX_CAP];
    snprintf(m0, sizeof m0, "%s", x->maps[0]->cap[XND_MANAGE]);
    ibp_probe_t p;
    CU_ASSERT_EQUAL(ibp_probe(T.cli, m0, &p), IBP_OK);
    tt_lsmap_t b[TT_MAXM];
    evsum_t e;
    int nb = tt_ls_json(&T, xnd, b);
    CU_ASSERT_EQUAL(nb, 2);
    /* a copy of the exNode names the same allocations: -d says it frees them for both */
    char twin[4096 + 8];
    snprintf(twin, sizeof twin, "%s.twin", xnd);
    CU_ASSERT_EQUAL_FATAL(tt_sh(&T, "cp '%s' '%s'", xnd, twin), 0);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_trim -d -m 0 --force --events fd:3 '%s' 3>\"$D/trimd.ev\"",
                          xnd), 0);
    CU_ASSERT_NOT_EQUAL(ibp_probe(T.cli, m0, &p), IBP_OK);
    CU_ASSERT_EQUAL(tt_count(T.err, "\n"), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "lors_trim: freed 1 allocation: "));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "copies of this exNode (cp) lose"));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "lors_share"));
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_ls --no-rc -T 3s '%s'", twin), 8);
    unlink(twin);
    /* without -d nothing is freed, and nothing is said */
    CU_ASSERT_EQUAL(tt_sh(&T, "cp '%s' '%s'", xnd, twin), 0);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_trim -n -m 0 --force -o '%s.n' '%s'", twin, twin), 0);
    CU_ASSERT_EQUAL(T.err[0], '\0');
    unlink(twin);
    if (nb > 0 && ev_read("trimd.ev", "lors_trim", b, nb, &e) == 0) {
        CU_ASSERT_EQUAL(e.ntrim, 1);
        CU_ASSERT_EQUAL(e.kind[0], 'T');
        CU_ASSERT_EQUAL(e.freed[0], 1);
        CU_ASSERT_EQUAL(e.rc, 0);
        CU_ASSERT_EQUAL(e.bytes, b[0].len);
    }
    xnd_free(x);
    x = tt_load(xnd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_EQUAL(x->nmaps, 1);
    tt_free_all(&T, xnd);
    xnd_free(x);
}

static void test_trim_refuses_last_copy(void)
{
    char src[4096], xnd[4096], before[4096 + 16];
    tt_revive(&T);
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 300000, 5, 1, 2, tt_dlist(&T, 0, 1, -1), NULL, src, xnd),
                          0);
    snprintf(before, sizeof before, "%s.before", xnd);
    CU_ASSERT_EQUAL_FATAL(tt_sh(&T, "cp '%s' '%s'", xnd, before), 0);

    tt_lsmap_t b[TT_MAXM];
    evsum_t e;
    int nb = tt_ls_json(&T, xnd, b);
    CU_ASSERT_EQUAL(nb, 2);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_trim -m 1 --events \"$D/trim6.ev\" '%s'", xnd), 6);
    CU_ASSERT(strncmp(T.err, "lors_trim: ", 11) == 0);
    CU_ASSERT_EQUAL(tt_count(T.err, "\n"), 1);
    CU_ASSERT(tt_same_file(xnd, before));
    /* refused: no TRIM, and END says so */
    if (nb > 0 && ev_read("trim6.ev", "lors_trim", b, nb, &e) == 0) {
        CU_ASSERT_EQUAL(e.ntrim, 0);
        CU_ASSERT_EQUAL(e.rc, 6);
        CU_ASSERT_EQUAL(e.bytes, 0);
    }
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_trim -d --depot 127.0.0.1:%d '%s'", T.dep[0].port, xnd), 6);
    CU_ASSERT(tt_same_file(xnd, before));
    CU_ASSERT(tt_downloads_equal(&T, xnd, src));

    /* --force does it, and lors_ls then sees the gap */
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_trim --force -m 1 '%s'", xnd), 0);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_ls -l '%s'", xnd), 8);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, " 0 GAP\n"));
    tt_free_all(&T, before);
}

/* ---- lors_refresh ---- */

/* The ends of all mappings of an exNode file, within [lo, hi]? */
static int ends_within(const char *xnd, int64_t lo, int64_t hi)
{
    xnd_t *x = tt_load(xnd);
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
    xnd_t *x = tt_load(xnd);
    int ok = x != NULL && tt_sh(&T, "$B/lors_ls --json '%s'", xnd) == 0 && tj_valid(T.out);
    for (size_t i = 0; ok && i < x->nmaps; i++) {
        long long e = tj_nth_int(T.out, "expires", (int)i);
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
    tt_revive(&T);
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 200000, 6, 2, 1, tt_dlist(&T, 1, 2, -1), NULL, src, xnd),
                          0);
    int64_t now = (int64_t)time(NULL);
    CU_ASSERT(ends_within(xnd, now + 590, now + 605));

    tt_lsmap_t b[TT_MAXM], a[TT_MAXM];
    evsum_t e;
    int nb = tt_ls_json(&T, xnd, b);
    CU_ASSERT_EQUAL(nb, 2);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_refresh -s 30m --events \"$D/ref.ev\" '%s'", xnd), 0);
    CU_ASSERT_EQUAL(T.err[0], 0);
    now = (int64_t)time(NULL);
    CU_ASSERT(ends_within(xnd, now + 1790, now + 1805));
    CU_ASSERT(ls_agrees(xnd));
    /* one REFRESH per mapping: the expiry lors_ls showed before, the one it shows now */
    CU_ASSERT_EQUAL(tt_ls_json(&T, xnd, a), nb);
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

    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_refresh -V -d 5m '%s'", xnd), 0);
    CU_ASSERT_EQUAL(tt_count(T.err, " -> "), 2);
    now = (int64_t)time(NULL);
    CU_ASSERT(ends_within(xnd, now + 2090, now + 2105));

    char at[32];
    xnd_time_format(now + 1200, at, sizeof at);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_refresh -a '%s' '%s'", at, xnd), 0);
    CU_ASSERT(ends_within(xnd, now + 1195, now + 1205));
    CU_ASSERT(ls_agrees(xnd));

    /* -m, the default: the depots' maximum, 3600 s */
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_refresh '%s'", xnd), 0);
    now = (int64_t)time(NULL);
    CU_ASSERT(ends_within(xnd, now + 3590, now + 3605));
    CU_ASSERT(ls_agrees(xnd));
    CU_ASSERT(tt_downloads_equal(&T, xnd, src));

    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_refresh -m -s 1h '%s'", xnd), 2);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_refresh -a yesterday '%s'", xnd), 2);
    tt_free_all(&T, xnd);
}

static void test_refresh_dead_depot(void)
{
    char src[4096], xnd[4096];
    tt_revive(&T);
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 200000, 7, 2, 1, tt_dlist(&T, 0, 4, -1), NULL, src, xnd),
                          0);
    xnd_t *x0 = tt_load(xnd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x0);
    tt_lsmap_t b[TT_MAXM], a[TT_MAXM];
    evsum_t e;
    int nb = tt_ls_json(&T, xnd, b);
    CU_ASSERT_EQUAL_FATAL(nb, 2);
    CU_ASSERT_EQUAL(lns_test_server_kill(&T.dep[4].srv, SIGKILL), 0);
    int dead = tt_cap_port(x0->maps[0]->cap[XND_READ]) == T.dep[4].port ? 0 : 1;

    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_refresh -s 40m --events \"$D/ref8.ev\" '%s'", xnd), 8);
    char want[128];
    snprintf(want, sizeof want, "lors_refresh: mapping %d (127.0.0.1:%d", dead, T.dep[4].port);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, want));
    CU_ASSERT_EQUAL(tt_count(T.err, "\n"), 1);
    CU_ASSERT_EQUAL(tt_ls_json(&T, xnd, a), nb);
    if (ev_read("ref8.ev", "lors_refresh", b, nb, &e) == 0) {
        /* the dead depot's mapping: a FAILURE of the CHNG; the other: extended */
        CU_ASSERT_EQUAL(e.kind[dead], 'F');
        CU_ASSERT_STRING_EQUAL(e.op[dead], "CHANGE");
        CU_ASSERT_EQUAL(tt_port_of(b[dead].depot), T.dep[4].port);
        CU_ASSERT_EQUAL(e.kind[1 - dead], 'R');
        CU_ASSERT(llabs(e.new_end[1 - dead] - a[1 - dead].expires) <= 3);
        CU_ASSERT_EQUAL(e.nfailure + e.nrefresh, 2);
        CU_ASSERT_EQUAL(e.rc, 8);
        CU_ASSERT_EQUAL(e.bytes, b[1 - dead].len);
    }
    /* the live one was extended and recorded, the dead one kept its end */
    xnd_t *x1 = tt_load(xnd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x1);
    int64_t now = (int64_t)time(NULL);
    CU_ASSERT(x1->maps[1 - dead]->end.epoch >= now + 2390);
    CU_ASSERT_EQUAL(x1->maps[dead]->end.epoch, x0->maps[dead]->end.epoch);
    tt_revive(&T);
    tt_free_all(&T, xnd);
    xnd_free(x0);
    xnd_free(x1);
}

/* ---- a stopped depot (SIGSTOP: the kernel accepts connections into its backlog, nothing
 * ever answers) under -T 60s: each tool gives it up after a short silence, long before -T,
 * which is what each waited before ---- */

static long long mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Stop depot i, run cmd through sh, wake the depot: the exit code, *took its milliseconds. */
static int run_stopped(int i, long long *took, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int run_stopped(int i, long long *took, const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    if (lns_test_server_kill(&T.dep[i].srv, SIGSTOP) != 0)
        return -1;
    long long t0 = mono_ms();
    int rc = tt_sh(&T, "%s", cmd);
    *took = mono_ms() - t0;
    kill(T.dep[i].pid, SIGCONT);
    if (*took >= 30000)
        fprintf(stderr, "%s: exit %d after %lld ms: %s", cmd, rc, *took, T.err);
    return rc;
}

/* augment onto a list whose first depot is stopped: the copies go to the other, one line. */
static void test_augment_stopped(void)
{
    char src[4096], xnd[4096], want[96];
    long long took;
    tt_revive(&T);
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 3000000, 11, 1, 3, tt_dlist(&T, 4, -1), NULL, src, xnd),
                          0);
    CU_ASSERT_EQUAL(run_stopped(1, &took, "$B/lors_augment -T 60s -d 10m --depot-list '%s' '%s'",
                                tt_dlist(&T, 1, 2, -1), xnd), 0);
    CU_ASSERT(took < 30000);
    CU_ASSERT_EQUAL(tt_count(T.err, "\n"), 1);
    snprintf(want, sizeof want, "lors_augment: depot 127.0.0.1:%d failed (", T.dep[1].port);
    CU_ASSERT(strncmp(T.err, want, strlen(want)) == 0);
    xnd_t *x = tt_load(xnd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_EQUAL(x->nmaps, 6);
    for (size_t i = 0; i < x->nmaps; i++)
        CU_ASSERT_NOT_EQUAL(tt_cap_port(x->maps[i]->cap[XND_READ]), T.dep[1].port);
    xnd_free(x);
    CU_ASSERT_EQUAL(lns_test_server_kill(&T.dep[4].srv, SIGKILL), 0);
    CU_ASSERT(tt_downloads_equal(&T, xnd, src)); /* from the new copies alone */
    tt_revive(&T);
    tt_free_all(&T, xnd);
}

/* refresh: the stopped depot's mapping fails (exit 8, one line naming it), the other is
 * extended. */
static void test_refresh_stopped(void)
{
    char src[4096], xnd[4096], want[128];
    long long took;
    tt_revive(&T);
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 200000, 12, 2, 1, tt_dlist(&T, 0, 4, -1), NULL, src, xnd),
                          0);
    xnd_t *x0 = tt_load(xnd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x0);
    int stopped = tt_cap_port(x0->maps[0]->cap[XND_READ]) == T.dep[4].port ? 0 : 1;
    int64_t before = (int64_t)time(NULL);
    CU_ASSERT_EQUAL(run_stopped(4, &took, "$B/lors_refresh -T 60s -s 40m '%s'", xnd), 8);
    CU_ASSERT(took < 30000);
    snprintf(want, sizeof want, "lors_refresh: mapping %d (127.0.0.1:%d", stopped, T.dep[4].port);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, want));
    CU_ASSERT_EQUAL(tt_count(T.err, "\n"), 1);
    xnd_t *x1 = tt_load(xnd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x1);
    CU_ASSERT(x1->maps[1 - stopped]->end.epoch >= before + 2399);
    CU_ASSERT_EQUAL(x1->maps[stopped]->end.epoch, x0->maps[stopped]->end.epoch);
    tt_free_all(&T, xnd);
    xnd_free(x0);
    xnd_free(x1);
}

/* trim -u: the stopped depot's mappings count as unreachable and go; the rest downloads. */
static void test_trim_stopped(void)
{
    char src[4096], xnd[4096];
    long long took;
    tt_revive(&T);
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 600000, 13, 2, 2, tt_dlist(&T, 3, 4, -1), NULL, src, xnd),
                          0);
    CU_ASSERT_EQUAL(run_stopped(4, &took, "$B/lors_trim -T 60s -u '%s'", xnd), 0);
    CU_ASSERT(took < 30000);
    CU_ASSERT_EQUAL(T.err[0], 0);
    xnd_t *x = tt_load(xnd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_EQUAL(x->nmaps, 2);
    for (size_t i = 0; i < x->nmaps; i++)
        CU_ASSERT_EQUAL(tt_cap_port(x->maps[i]->cap[XND_READ]), T.dep[3].port);
    xnd_free(x);
    CU_ASSERT(tt_downloads_equal(&T, xnd, src));
    tt_free_all(&T, xnd);
}

/* Leases that all ended (-d 2s, then 3 s later): lors_download says in one line that the
 * file's leases expired and when (the latest end in the exNode), not a byte range; lors_refresh
 * says in one line that nothing was extended because they expired, and exits 6 (no bytes
 * left), not 8 (some mappings, the others extended) after a line per mapping (issue 36).  A
 * file of two fragments whose first was extended: the download names the second's bytes as
 * expired, the refresh extends the first and says the second's lease expired (exit 8). */
static void test_expired_leases(void)
{
    char src[4096], xnd[4096], src2[4096], half[4096], when[32], want[160];
    static const char *const modes[] = {"", "-d 1h", "-s 1h"};
    tt_revive(&T);
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 300000, 11, 2, 4, tt_dlist(&T, 0, 1, -1), "-d 2s", src,
                                    xnd), 0);
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 200000, 12, 1, 2, tt_dlist(&T, 2, -1), "-d 2s", src2,
                                    half), 0);
    /* the first fragment of the second file lives on */
    xnd_t *h = tt_load(half);
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    CU_ASSERT_EQUAL_FATAL(h->nmaps, 2);
    int first = h->maps[0]->exnode_offset == 0 ? 0 : 1;
    unsigned char select[2] = {0, 0};
    select[first] = 1;
    lors_refresh_opts_t ro;
    lors_refresh_opts_init(&ro);
    ro.mode = LORS_REFRESH_FROM_NOW;
    ro.value = 3600;
    ro.select = select;
    CU_ASSERT_EQUAL(lors_refresh(&ro, h, NULL), LORS_OK);
    CU_ASSERT_EQUAL(xnd_write_file(h, half, NULL, 0), XND_OK);
    int64_t half_end = h->maps[1 - first]->end.epoch;
    int64_t half_len = h->maps[first]->logical_length;
    xnd_free(h);

    xnd_t *x = tt_load(xnd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_EQUAL(x->nmaps, 8);
    int64_t last = 0;
    for (size_t i = 0; i < x->nmaps; i++)
        if (x->maps[i]->end.epoch > last)
            last = x->maps[i]->end.epoch;
    xnd_free(x);
    while ((int64_t)time(NULL) <= (last > half_end ? last : half_end) + 1)
        lns_test_sleep_ms(100);

    xnd_time_format(last, when, sizeof when);
    snprintf(want, sizeof want, "the file's leases expired at %s UTC", when);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_download -o \"$D/expired.out\" '%s'", xnd), 6);
    CU_ASSERT_EQUAL(tt_count(T.err, "\n"), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, want));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "expired.out holds none of it\n"));
    if (!strstr(T.err, want))
        fprintf(stderr, "lors_download: %s", T.err);
    for (size_t k = 0; k < sizeof modes / sizeof *modes; k++) {
        CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_refresh %s '%s'", modes[k], xnd), 6);
        CU_ASSERT_EQUAL(tt_count(T.err, "\n"), 1);
        CU_ASSERT(strncmp(T.err, "lors_refresh: ", 14) == 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "nothing extended"));
        CU_ASSERT_PTR_NOT_NULL(strstr(T.err, want));
        if (tt_count(T.err, "\n") != 1 || !strstr(T.err, want))
            fprintf(stderr, "lors_refresh %s: %s", modes[k], T.err);
    }

    /* half of it expired */
    xnd_time_format(half_end, when, sizeof when);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_download -o \"$D/expired.out\" '%s'", half), 6);
    CU_ASSERT_EQUAL(tt_count(T.err, "\n"), 1);
    snprintf(want, sizeof want, ": bytes %lld-199999: the leases of all their copies expired, "
             "the last at %s UTC; ", (long long)half_len, when);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, want));
    if (!strstr(T.err, want))
        fprintf(stderr, "lors_download: %s", T.err);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_refresh -s 30m '%s'", half), 8);
    CU_ASSERT_EQUAL(tt_count(T.err, "\n"), 1);
    snprintf(want, sizeof want, "lors_refresh: mapping %d (127.0.0.1:%d/0): not extended: its "
             "lease expired at %s UTC\n", 1 - first, T.dep[2].port, when);
    CU_ASSERT_STRING_EQUAL(T.err, want);
    unlink(lns_test_path("expired.out"));
    tt_free_all(&T, half);
}

/* An exNode whose size is near INT64_MAX (one mapping of 100000 bytes): lors_augment's
 * arithmetic (pieces, room asked of the L-Bone) must not overflow; in the sanitizer build an
 * overflow is an abort.  The copy is made; the L-Bone of a closed port is exit 5. */
static void test_augment_huge_size(void)
{
    char src[4096], xnd[4096], huge[4096 + 16];
    tt_revive(&T);
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 100000, 2, 1, 1, tt_dlist(&T, 0, -1), NULL, src, xnd), 0);
    xnd_t *x = tt_load(xnd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_EQUAL(xnd_set_size(x, INT64_MAX), XND_OK);
    snprintf(huge, sizeof huge, "%s.huge", xnd);
    CU_ASSERT_EQUAL_FATAL(xnd_write_file(x, huge, NULL, 0), XND_OK);
    xnd_free(x);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_augment -d 10m -H 127.0.0.1 -P 1 '%s'", huge), 5);
    CU_ASSERT_EQUAL(tt_count(T.err, "\n"), 1);
    CU_ASSERT_PTR_NULL(strstr(T.err, "runtime error"));
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_augment -d 10m --depot-list '%s' '%s'",
                          tt_dlist(&T, 1, -1), huge), 0);
    CU_ASSERT_STRING_EQUAL(T.err, "");
    x = tt_load(huge);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_EQUAL(x->nmaps, 2);
    xnd_free(x);
    tt_free_all(&T, huge);
}

static const lns_test_case tests[] = {
    {"augment by SEND; the original depot dies", test_augment_send},
    {"augment -B and -n", test_augment_balance_and_new_only},
    {"augment an exNode of size near INT64_MAX", test_augment_huge_size},
    {"trim -m, --depot", test_trim_numbers_and_depot},
    {"trim -u after a kill, -d frees", test_trim_dead_and_free},
    {"trim refuses the last copy without --force", test_trim_refuses_last_copy},
    {"refresh -s, -d, -a, -m", test_refresh_modes},
    {"refresh with a dead depot: exit 8 naming the mapping", test_refresh_dead_depot},
    {"augment past a stopped depot, promptly", test_augment_stopped},
    {"refresh with a stopped depot, promptly", test_refresh_stopped},
    {"trim -u with a stopped depot, promptly", test_trim_stopped},
    {"expired leases: download and refresh say so in one line", test_expired_leases},
};

TT_MAIN(&T, "lors manage tools", ND, tests)
