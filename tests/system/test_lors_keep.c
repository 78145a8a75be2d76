/* test_lors_keep.c -- lors_keep on real depots: a pass that repairs copies and erasure-coded
 * pieces (and a dry run that changes nothing), a keeper SIGKILLed in the middle of a repair
 * that, restarted, finishes with a valid exNode and no leaked allocation, and a daemon that
 * keeps two files alive across several lease lifetimes of 4-second leases while every depot
 * in turn is killed and replaced by a new, empty one -- while the same file without the
 * keeper is gone; and a depot that tells the L-Bone it is leaving has its data moved off by a
 * keeper that takes its depots from that L-Bone.  The state file, which holds manage
 * capabilities, and SQLite's files beside it are the owner's alone.  Rebuilt copies go to the
 * depots holding the fewest of the file's mappings, never beside a live copy of their bytes,
 * to another place than the survivors' when the L-Bone tells places, and a daemon's report
 * lines carry the time. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "lns_time.h"
#include "test_lbone.h"
#include "test_tools.h"

#define ND 8

static tt_env_t T;

static void upload_ec(const char *depots, const char *dur, size_t n, uint64_t seed, char *src,
                      char *xnd)
{
    int id = ++T.seq;
    snprintf(src, 4096, "%s/ec%d.bin", lns_test_tmpdir(), id);
    snprintf(xnd, 4096, "%s/ec%d.xnd", lns_test_tmpdir(), id);
    CU_ASSERT_EQUAL_FATAL(tt_make_file(src, n, seed), 0);
    int rc = tt_sh(&T, "$B/lors_upload --no-rc -q --depot-list '%s' --ec 4+2 --ec-piece 64K "
                       "-d %s -o '%s' '%s'", depots, dur, xnd, src);
    if (rc != 0)
        fprintf(stderr, "lors_upload --ec: %s", T.err);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
}

/* Mappings of the exNode file on depot port. */
static int maps_on(const char *xnd, int port)
{
    xnd_t *x = tt_load(xnd);
    int n = 0;
    for (size_t i = 0; x && i < x->nmaps; i++)
        n += x->maps[i]->cap[XND_READ] && tt_cap_port(x->maps[i]->cap[XND_READ]) == port;
    xnd_free(x);
    return n;
}

static int ls_rc(const char *xnd)
{
    return tt_sh(&T, "$B/lors_ls --no-rc -T 3s '%s'", xnd);
}

static void test_once_and_dry_run(void)
{
    char rs[4096], rx[4096], es[4096], ex[4096], st[4200], before[4200];
    int rc;
    tt_revive(&T);
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 1500000, 7, 2, 3, T.depots, "--no-rc -q", rs, rx), 0);
    upload_ec(T.depots, "1h", 700000, 8, es, ex);
    snprintf(st, sizeof st, "%s/once.db", lns_test_tmpdir());
    snprintf(before, sizeof before, "%s.before", rx);

    /* healthy: nothing to do but refresh (the leases end within the default margin, 2 days) */
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_keep --no-rc --state '%s' --depot-list '%s' -V '%s' '%s'",
                          st, T.depots, rx, ex), 0);
    CU_ASSERT_EQUAL(tt_count(T.out, ": ok: "), 2);
    CU_ASSERT_EQUAL(tt_count(T.out, "refreshed 0"), 0);
    CU_ASSERT_EQUAL(tt_sh(&T, "cp '%s' '%s'", rx, before), 0);

    CU_ASSERT_EQUAL(lns_test_server_kill(&T.dep[1].srv, SIGKILL), 0);
    CU_ASSERT_EQUAL(lns_test_server_kill(&T.dep[4].srv, SIGKILL), 0);
    CU_ASSERT_NOT_EQUAL(ls_rc(rx), 0);

    /* a dry run reports the risk and what it would do, and changes nothing */
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_keep --no-rc --state '%s' --depot-list '%s' -T 3s "
                              "--dry-run --json '%s' '%s'", st, T.depots, rx, ex), 11);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "\"dry_run\":true"));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "\"status\":\"at-risk\""));
    CU_ASSERT_PTR_NULL(strstr(T.out, "\"add\":0,"));
    CU_ASSERT(tt_same_file(rx, before));

    /* the pass: copies sent depot to depot, pieces decoded and stored, dead mappings out */
    rc = tt_sh(&T, "$B/lors_keep --no-rc --state '%s' --depot-list '%s' -T 3s --json '%s' '%s'",
               st, T.depots, rx, ex);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc)
        fprintf(stderr, "%s%s", T.out, T.err);
    CU_ASSERT_EQUAL(tt_count(T.out, "\"status\":\"repaired\""), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "\"at_risk\":[]"));
    CU_ASSERT_EQUAL(ls_rc(rx), 0);
    CU_ASSERT_EQUAL(ls_rc(ex), 0);
    CU_ASSERT_EQUAL(maps_on(rx, T.dep[1].port) + maps_on(rx, T.dep[4].port), 0);
    CU_ASSERT_EQUAL(maps_on(ex, T.dep[1].port) + maps_on(ex, T.dep[4].port), 0);
    CU_ASSERT_EQUAL(tt_downloads_equal(&T, rx, rs), 1);
    CU_ASSERT_EQUAL(tt_downloads_equal(&T, ex, es), 1);

    /* a second pass finds nothing to do */
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_keep --no-rc --state '%s' --depot-list '%s' -T 3s '%s' "
                              "'%s'", st, T.depots, rx, ex), 0);
    CU_ASSERT_EQUAL(T.out[0], '\0');
    tt_revive(&T);
    tt_free_all(&T, rx);
    tt_free_all(&T, ex);
}

/* A stopped depot (SIGSTOP: the kernel accepts connections into its backlog, nothing ever
 * answers) holding one copy of each fragment, -T 60s: the pass gives it up after a short
 * silence, long before -T (each of its calls waited that long before), and makes the copies
 * again on the third depot. */
static void test_stopped_depot(void)
{
    char rs[4096], rx[4096], st[4200];
    tt_revive(&T);
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 1500000, 17, 2, 3, tt_dlist(&T, 0, 1, -1), "--no-rc -q",
                                    rs, rx), 0);
    snprintf(st, sizeof st, "%s/stopped.db", lns_test_tmpdir());
    CU_ASSERT_EQUAL_FATAL(lns_test_server_kill(&T.dep[1].srv, SIGSTOP), 0);
    long long t0 = lns_mono_ms();
    int rc = tt_sh(&T, "$B/lors_keep --no-rc --state '%s' --depot-list '%s' -T 60s '%s'", st,
                   tt_dlist(&T, 0, 1, 2, -1), rx);
    long long took = lns_mono_ms() - t0;
    kill(T.dep[1].pid, SIGCONT);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT(took < 30000);
    if (rc != 0 || took >= 30000)
        fprintf(stderr, "exit %d after %lld ms: %s%s", rc, took, T.out, T.err);
    CU_ASSERT_EQUAL(maps_on(rx, T.dep[1].port), 0);
    CU_ASSERT_EQUAL(maps_on(rx, T.dep[2].port), 3);
    CU_ASSERT_EQUAL(tt_downloads_equal(&T, rx, rs), 1);
    tt_free_all(&T, rx);
}

/* Bytes beyond what the policy can reach: exit 11, the range named. */
static void test_lost_is_loud(void)
{
    char rs[4096], rx[4096], st[4200];
    tt_revive(&T);
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 300000, 9, 1, 1, tt_dlist(&T, 2, -1), "--no-rc -q", rs,
                                    rx), 0);
    snprintf(st, sizeof st, "%s/lost.db", lns_test_tmpdir());
    CU_ASSERT_EQUAL(lns_test_server_kill(&T.dep[2].srv, SIGKILL), 0);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_keep --no-rc --state '%s' --depot-list '%s' -T 3s '%s'",
                          st, T.depots, rx), 11);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "bytes 0-299999 LOST: 0 of 2 copies live"));
    /* the dead mapping holds the only copy: it stays */
    CU_ASSERT_EQUAL(maps_on(rx, T.dep[2].port), 1);
    tt_revive(&T);
    tt_free_all(&T, rx);
}

/* ---- where new copies go ------------------------------------------------------------- */

/* Pairs of mappings of xnd holding some byte in common on one depot (each named on stderr);
 * *most: the most mappings any depot holds. */
static int beside(const char *xnd, int *most)
{
    xnd_t *x = tt_load(xnd);
    int n = 0;
    *most = 0;
    for (size_t i = 0; x && i < x->nmaps; i++) {
        const xnd_mapping_t *a = x->maps[i];
        int port = tt_cap_port(a->cap[XND_READ]), on = 0;
        for (size_t j = 0; j < x->nmaps; j++) {
            const xnd_mapping_t *b = x->maps[j];
            if (tt_cap_port(b->cap[XND_READ]) != port)
                continue;
            on++;
            if (j > i && a->exnode_offset < b->exnode_offset + b->logical_length &&
                b->exnode_offset < a->exnode_offset + a->logical_length) {
                fprintf(stderr, "%s: mappings %zu and %zu hold the same bytes on port %d\n",
                        xnd, i, j, port);
                n++;
            }
        }
        if (on > *most)
            *most = on;
    }
    xnd_free(x);
    return n;
}

/* "2026-12-03T10:16:15Z " at the start of every line of text (n: how many lines). */
static int stamped(const char *text, int *n)
{
    int ok = 1;
    *n = 0;
    for (const char *l = text; *l; (*n)++) {
        const char *e = strchr(l, '\n');
        static const char form[] = "dddd-dd-ddTdd:dd:ddZ ";
        for (size_t k = 0; k < sizeof form - 1 && ok; k++)
            ok = form[k] == 'd' ? l[k] >= '0' && l[k] <= '9' : l[k] == form[k];
        if (!ok)
            fprintf(stderr, "no timestamp: %.*s\n", (int)(e ? e - l : (long)strlen(l)), l);
        l = e ? e + 1 : l + strlen(l);
    }
    return ok;
}

/* A 2-copy file of 4 fragments on depots 0-3 (two mappings each); depot 1 lost: its two
 * copies are rebuilt on depots 4 and 5, which hold none -- not both beside the other copies
 * on one depot (4 of the 8 mappings there, as a keeper did).  Then 3 depots, two lost: the
 * survivor holds the only copies and gets no second one beside them (at risk, said, with
 * timestamps on the daemon's lines). */
static void test_new_copies_spread(void)
{
    char rs[4096], rx[4096], st[4200];
    int most = 0, rc;
    tt_revive(&T);
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 800000, 31, 2, 4, tt_dlist(&T, 0, 1, 2, 3, -1),
                                    "--no-rc -q", rs, rx), 0);
    CU_ASSERT_EQUAL(beside(rx, &most), 0);
    CU_ASSERT_EQUAL(most, 2);
    CU_ASSERT_EQUAL_FATAL(maps_on(rx, T.dep[1].port), 2);
    snprintf(st, sizeof st, "%s/spread.db", lns_test_tmpdir());
    CU_ASSERT_EQUAL(lns_test_server_kill(&T.dep[1].srv, SIGKILL), 0);
    rc = tt_sh(&T, "$B/lors_keep --no-rc --state '%s' --depot-list '%s' -T 3s '%s'", st,
               tt_dlist(&T, 0, 1, 2, 3, 4, 5, -1), rx);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc)
        fprintf(stderr, "%s%s", T.out, T.err);
    /* a pass that is not a daemon's: lines as before, for cron's mail */
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, rx));
    CU_ASSERT_EQUAL(strncmp(T.out, rx, strlen(rx)), 0);
    CU_ASSERT_EQUAL(beside(rx, &most), 0);
    CU_ASSERT_EQUAL(most, 2);
    CU_ASSERT_EQUAL(maps_on(rx, T.dep[4].port), 1);
    CU_ASSERT_EQUAL(maps_on(rx, T.dep[5].port), 1);
    CU_ASSERT_EQUAL(tt_downloads_equal(&T, rx, rs), 1);
    tt_revive(&T);
    tt_free_all(&T, rx);

    /* the only survivor holds both fragments: nothing goes beside them */
    char ev[4200];
    tt_bg_t bg = {0};
    int lines = 0;
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 300000, 32, 2, 2, tt_dlist(&T, 0, 1, 2, -1),
                                    "--no-rc -q", rs, rx), 0);
    CU_ASSERT_EQUAL_FATAL(maps_on(rx, T.dep[0].port), 2);
    CU_ASSERT_EQUAL(lns_test_server_kill(&T.dep[1].srv, SIGKILL), 0);
    CU_ASSERT_EQUAL(lns_test_server_kill(&T.dep[2].srv, SIGKILL), 0);
    snprintf(ev, sizeof ev, "%s/spread.events", lns_test_tmpdir());
    CU_ASSERT_EQUAL_FATAL(tt_spawn(&T, &bg, "lors_keep", "--no-rc", "--daemon", "--state", st,
                                   "--depot-list", tt_dlist(&T, 0, 1, 2, -1), "-T", "3s",
                                   "--events", ev, rx, NULL), 0);
    CU_ASSERT(tt_wait_lines(ev, "KEPT", 1, 20000));
    kill(bg.pid, SIGTERM);
    CU_ASSERT_EQUAL(tt_wait(&T, &bg, 20000), 0);
    CU_ASSERT_EQUAL(maps_on(rx, T.dep[0].port), 2);
    CU_ASSERT_EQUAL(beside(rx, &most), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, ": at-risk: "));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "at risk: 1 of 2 copies live"));
    CU_ASSERT(stamped(T.out, &lines));
    CU_ASSERT(lines >= 1);
    CU_ASSERT(stamped(T.err, &lines));
    CU_ASSERT(lines >= 1);
    tt_revive(&T);
    tt_free_all(&T, rx);
}

/* Depots 0-2 in Knoxville and 3-5 in Amsterdam, as the L-Bone knows them; a 2-copy file
 * on depots 0 and 3, and depot 3 lost: the new copy goes to Amsterdam (4 or 5), not next to
 * the survivor in Knoxville, though the keeper asks for depots near Knoxville first. */
static void test_new_copies_by_place(void)
{
    test_lbone_t lb;
    char rs[4096], rx[4096], st[4200];
    tt_revive(&T);
    CU_ASSERT_EQUAL_FATAL(tlb_start(&lb, "--probe-interval 0"), 0);
    for (int i = 0; i < 6; i++) {
        char json[1024], id[17], secret[65];
        tlb_depot_json(json, sizeof json, "127.0.0.1", T.dep[i].port, i < 3 ? 35.96 : 52.37,
                       i < 3 ? -83.92 : 4.90, 1ull << 30, 1ull << 30, 3600, "");
        CU_ASSERT_EQUAL(tlb_register(&lb, json, id, secret), 201);
    }
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 200000, 33, 2, 1, tt_dlist(&T, 0, 3, -1), "--no-rc -q",
                                    rs, rx), 0);
    CU_ASSERT_EQUAL(maps_on(rx, T.dep[0].port), 1);
    CU_ASSERT_EQUAL(maps_on(rx, T.dep[3].port), 1);
    CU_ASSERT_EQUAL(lns_test_server_kill(&T.dep[3].srv, SIGKILL), 0);
    snprintf(st, sizeof st, "%s/place.db", lns_test_tmpdir());
    int rc = tt_sh(&T, "$B/lors_keep --no-rc --state '%s' -H %s -m 8 -l 35.96,-83.92 -T 3s '%s'",
                   st, lb.url, rx);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc)
        fprintf(stderr, "%s%s", T.out, T.err);
    CU_ASSERT_EQUAL(maps_on(rx, T.dep[0].port), 1);
    CU_ASSERT_EQUAL(maps_on(rx, T.dep[1].port) + maps_on(rx, T.dep[2].port), 0);
    CU_ASSERT_EQUAL(maps_on(rx, T.dep[4].port) + maps_on(rx, T.dep[5].port), 1);
    CU_ASSERT_EQUAL(tt_downloads_equal(&T, rx, rs), 1);
    lns_test_server_stop(&lb.srv);
    tt_revive(&T);
    tt_free_all(&T, rx);
}

/* Allocations on each depot but dead, as the depots count them. */
static void allocs_except(int dead, int *per)
{
    for (int i = 0; i < ND; i++)
        per[i] = i == dead ? 0 : tt_depot_allocs(&T, i);
}

/* Rows of the journal of new allocations not yet in an exNode; -1 if it cannot be read. */
static int pending(const char *state)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *q = NULL;
    int n = -1;
    if (sqlite3_open_v2(state, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, "SELECT count(*) FROM pending", -1, &q, NULL) == SQLITE_OK &&
        sqlite3_step(q) == SQLITE_ROW)
        n = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(db);
    return n;
}

/* The state file and the SQLite side files beside it that are there: how many of them
 * others may read or write (each named on stderr); *present: how many there are. */
static int open_to_others(const char *state, int *present)
{
    static const char *const side[] = {"", "-wal", "-shm", "-journal"};
    int n = 0;
    *present = 0;
    for (size_t i = 0; i < sizeof side / sizeof side[0]; i++) {
        char p[4300];
        struct stat st;
        snprintf(p, sizeof p, "%s%s", state, side[i]);
        if (stat(p, &st) != 0)
            continue;
        ++*present;
        if (st.st_mode & 077) {
            fprintf(stderr, "%s: mode %04o\n", p, (unsigned)(st.st_mode & 07777));
            n++;
        }
    }
    return n;
}

/* Every file of the state made readable by all, as a keeper before 0600 left it. */
static void open_up(const char *state)
{
    static const char *const side[] = {"", "-wal", "-shm", "-journal"};
    for (size_t i = 0; i < sizeof side / sizeof side[0]; i++) {
        char p[4300];
        snprintf(p, sizeof p, "%s%s", state, side[i]);
        if (access(p, F_OK) == 0)
            CU_ASSERT_EQUAL(chmod(p, 0644), 0);
    }
}

static void test_sigkill_mid_repair(void)
{
    char rs[4096], rx[4096], es[4096], ex[4096], st[4200];
    int base[ND], after[ND], held[ND];
    tt_revive(&T);
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 2000000, 11, 2, 4, T.depots, "--no-rc -q", rs, rx), 0);
    upload_ec(T.depots, "1h", 900000, 12, es, ex);
    snprintf(st, sizeof st, "%s/crash.db", lns_test_tmpdir());
    CU_ASSERT_EQUAL(lns_test_server_kill(&T.dep[3].srv, SIGKILL), 0);
    allocs_except(3, base);
    for (int i = 0; i < ND; i++)
        held[i] = maps_on(rx, T.dep[i].port) + maps_on(ex, T.dep[i].port);

    /* killed with its second new allocation made and journaled, its exNode not written (one thread:
     * no other ALLOCATE in flight, which only the provisional lease would bound) */
    mode_t mask = umask(022); /* a usual umask: what the keeper's own modes must overrule */
    int rc = tt_sh(&T, "LNS_FAILPOINTS=keep.alloc=kill@2 $B/lors_keep --no-rc -t 1 --state '%s' "
                       "--depot-list '%s' -T 3s '%s' '%s'", st, T.depots, rx, ex);
    CU_ASSERT_EQUAL(rc, 128 + SIGKILL);
    CU_ASSERT(pending(st) >= 1); /* the copy's file was done and written: the piece's */
    /* the manage capabilities it journaled are the owner's alone: the database and the WAL
     * files a kill leaves beside it */
    int present;
    CU_ASSERT_EQUAL(open_to_others(st, &present), 0);
    CU_ASSERT(present >= 2);
    /* killed after writing a repaired exNode, before its journal was cleared; its state
     * files open to all when it starts, as an older keeper left them: made private, said */
    open_up(st);
    rc = tt_sh(&T, "LNS_FAILPOINTS=keep.written=kill $B/lors_keep --no-rc -t 1 --state '%s' "
                   "--depot-list '%s' -T 3s '%s' '%s'", st, T.depots, rx, ex);
    CU_ASSERT_EQUAL(rc, 128 + SIGKILL);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "warning: state file"));
    CU_ASSERT(pending(st) >= 1);
    CU_ASSERT_EQUAL(ls_rc(rx), 0);
    CU_ASSERT_EQUAL(open_to_others(st, &present), 0);
    CU_ASSERT(present >= 2);
    umask(mask);

    /* restarted: it finishes and frees what no exNode holds */
    rc = tt_sh(&T, "$B/lors_keep --no-rc --state '%s' --depot-list '%s' -T 3s '%s' '%s'", st,
               T.depots, rx, ex);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc)
        fprintf(stderr, "%s%s", T.out, T.err);
    CU_ASSERT_EQUAL(pending(st), 0);
    CU_ASSERT_EQUAL(open_to_others(st, &present), 0);
    CU_ASSERT_EQUAL(ls_rc(rx), 0);
    CU_ASSERT_EQUAL(ls_rc(ex), 0);
    CU_ASSERT_EQUAL(tt_downloads_equal(&T, rx, rs), 1);
    CU_ASSERT_EQUAL(tt_downloads_equal(&T, ex, es), 1);
    /* no leak: each live depot holds what it held before plus the new mappings on it */
    allocs_except(3, after);
    for (int i = 0; i < ND; i++) {
        int now = maps_on(rx, T.dep[i].port) + maps_on(ex, T.dep[i].port);
        if (i == 3)
            continue;
        CU_ASSERT_EQUAL(after[i], base[i] + now - held[i]);
        if (after[i] != base[i] + now - held[i])
            fprintf(stderr, "depot %d: %d allocations, was %d; mappings %d, were %d\n", i,
                    after[i], base[i], now, held[i]);
    }
    tt_revive(&T);
    tt_free_all(&T, rx);
    tt_free_all(&T, ex);
}

/* ---- the daemon against short leases --------------------------------------------------- */

#define NS 7
#define LEASE "4"

static void test_daemon_outlives_leases(void)
{
    test_depot_t d[NS];
    char res[NS][PATH_MAX], extra[PATH_MAX + 96], list[NS * 24] = "";
    char rs[4096], rx[4096], cs[4096], cx[4096], es[4096], ex[4096], st[4200], ev[4200];
    tt_bg_t bg = {0};
    int up = 0;
    memset(d, 0, sizeof d);
    for (int i = 0; i < NS; i++, up++) {
        snprintf(res[i], sizeof res[i], "%s/short%d", lns_test_tmpdir(), i);
        snprintf(extra, sizeof extra, "--resource %s,hard=64M,soft=64M,max-duration=" LEASE,
                 res[i]);
        if (tt_sh(&T, "mkdir -p '%s'", res[i]) != 0 || td_start(&d[i], extra) != 0)
            break;
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s127.0.0.1:%d",
                 i ? "," : "", d[i].port);
    }
    CU_ASSERT_EQUAL_FATAL(up, NS);
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 1200000, 21, 2, 3, list, "--no-rc -q -d " LEASE, rs, rx),
                          0);
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 1200000, 21, 2, 3, list, "--no-rc -q -d " LEASE, cs, cx),
                          0);
    upload_ec(list, LEASE, 600000, 22, es, ex);
    snprintf(st, sizeof st, "%s/daemon.db", lns_test_tmpdir());
    snprintf(ev, sizeof ev, "%s/daemon.events", lns_test_tmpdir());
    CU_ASSERT_EQUAL_FATAL(tt_spawn(&T, &bg, "lors_keep", "--no-rc", "--daemon", "--margin", "3s",
                                   "--interval", "1s", "--provisional", "2s", "-T", "2s", "--state", st, "--depot-list",
                                   list, "--events", ev, rx, ex, NULL), 0);
    /* each depot in turn: SIGKILLed, its storage gone, a new empty depot in its place -- with
     * the same TLS key (kept apart from the data, as an operator backs it up): a depot with
     * another key is not the same depot, and the keeper refuses it */
    int ok = 1;
    for (int round = 0; round < NS; round++) {
        lns_test_sleep_ms(2500);
        int i = round % NS;
        CU_ASSERT_EQUAL(lns_test_server_kill(&d[i].srv, SIGKILL), 0);
        CU_ASSERT_EQUAL(tt_sh(&T, "cd '%s' && find . -mindepth 1 -maxdepth 1 ! -name tls.key "
                                  "-exec rm -rf {} +", res[i]), 0);
        CU_ASSERT_EQUAL(td_restart(&d[i]), 0);
        if (round % 2 == 1) {
            ok &= tt_downloads_equal(&T, rx, rs);
            ok &= tt_downloads_equal(&T, ex, es);
        }
    }
    lns_test_sleep_ms(2500);
    CU_ASSERT(ok);
    /* ~20 s: five lease lifetimes, every depot replaced once */
    CU_ASSERT_EQUAL(tt_downloads_equal(&T, rx, rs), 1);
    CU_ASSERT_EQUAL(tt_downloads_equal(&T, ex, es), 1);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_download --no-rc --quiet -T 2s -o '%s.got' '%s'", cx, cx),
                    6);
    kill(bg.pid, SIGTERM);
    CU_ASSERT_EQUAL(tt_wait(&T, &bg, 20000), 0);
    CU_ASSERT(tt_wait_lines(ev, "REBUILD", 1, 10));
    CU_ASSERT(tt_wait_lines(ev, "SEND_END", 1, 10));
    CU_ASSERT(tt_wait_lines(ev, "REFRESH", 10, 10));
    for (int i = 0; i < NS; i++)
        lns_test_server_stop(&d[i].srv);
}

/* A depot that says in its heartbeats that it is leaving (ibp_depot --lbone-leaving yes):
 * the L-Bone lists it as "leaving" (status=any) and hands it out no more, and a keeper that
 * takes its depots from that L-Bone moves the data off it -- SEND while it still answers --
 * with no --leaving given. */
static void test_lbone_leaving(void)
{
    test_lbone_t lb;
    test_depot_t d;
    char args[3 * 4096], rs[4096], rx[4096], st[4200], *body = NULL;
    tt_revive(&T);
    CU_ASSERT_EQUAL_FATAL(tlb_start(&lb, "--probe-interval 0"), 0);
    /* the fixture's depots, registered by hand: up for the default 3 minutes */
    for (int i = 0; i < ND; i++) {
        char json[1024], id[17], secret[65];
        tlb_depot_json(json, sizeof json, "127.0.0.1", T.dep[i].port, 35.9, -83.9, 1ull << 30,
                       1ull << 30, 3600, "");
        CU_ASSERT_EQUAL(tlb_register(&lb, json, id, secret), 201);
    }
    /* a real depot that announces itself as leaving */
    snprintf(args, sizeof args, "--lbone %s --lbone-token-file %s "
             "--lbone-place zip=37996 --lbone-interval 1 --lbone-leaving yes", lb.url,
             lb.token_file);
    CU_ASSERT_EQUAL_FATAL(td_start(&d, args), 0);
    char needle[64];
    snprintf(needle, sizeof needle, "\"port\":%d,", d.port);
    int listed = 0;
    for (int waited = 0; waited < 10000 && !listed; waited += 100) {
        free(body);
        body = NULL;
        if (tlb_http(lb.port, "GET", "/v1/depots?status=any&count=100", NULL, NULL, &body) ==
                200 && body) {
            const char *p = strstr(body, needle), *e = p ? strchr(p, '}') : NULL;
            const char *stt = p ? strstr(p, "\"status\":\"leaving\"") : NULL;
            listed = stt && stt < e;
        }
        if (!listed)
            lns_test_sleep_ms(100);
    }
    CU_ASSERT_FATAL(listed);
    free(body);
    body = NULL;
    /* not handed out */
    CU_ASSERT_EQUAL(tlb_http(lb.port, "GET", "/v1/depots?count=100", NULL, NULL, &body), 200);
    CU_ASSERT_PTR_NULL(body ? strstr(body, needle) : "no body");
    free(body);
    /* lbone_query --all shows it with its status; without --all it is not there */
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d ", d.port);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lbone_query -H %s --all -m 100", lb.url), 0);
    const char *line = strstr(T.out, addr), *eol = line ? strchr(line, '\n') : NULL;
    const char *lv = line ? strstr(line, " leaving ") : NULL;
    CU_ASSERT(lv && lv < eol);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lbone_query -H %s -m 100", lb.url), 0);
    CU_ASSERT_PTR_NULL(strstr(T.out, addr));

    /* a 2-copy file on depot 0 and the leaving one */
    char list[128];
    snprintf(list, sizeof list, "127.0.0.1:%d,127.0.0.1:%d", T.dep[0].port, d.port);
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 400000, 12, 2, 2, list, "--no-rc -q", rs, rx), 0);
    xnd_t *x = tt_load(rx);
    int on_leaving = 0;
    for (size_t i = 0; x && i < x->nmaps; i++)
        on_leaving += tt_cap_port(x->maps[i]->cap[XND_READ]) == d.port;
    xnd_free(x);
    CU_ASSERT(on_leaving > 0);
    snprintf(st, sizeof st, "%s/leaving.db", lns_test_tmpdir());
    int rc = tt_sh(&T, "$B/lors_keep --no-rc --state '%s' -H %s -m 8 -T 3s --json '%s'", st,
                   lb.url, rx);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc)
        fprintf(stderr, "%s%s", T.out, T.err);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "\"status\":\"repaired\""));
    x = tt_load(rx);
    on_leaving = 0;
    for (size_t i = 0; x && i < x->nmaps; i++)
        on_leaving += tt_cap_port(x->maps[i]->cap[XND_READ]) == d.port;
    xnd_free(x);
    CU_ASSERT_EQUAL(on_leaving, 0);
    /* the data went depot to depot while the leaving one still answered; now it can go */
    lns_test_server_stop(&d.srv);
    CU_ASSERT_EQUAL(tt_downloads_equal(&T, rx, rs), 1);
    CU_ASSERT_EQUAL(tt_sh(&T, "$B/lors_ls --no-rc -T 3s '%s'", rx), 0);
    lns_test_server_stop(&lb.srv);
    tt_free_all(&T, rx);
}

static const lns_test_case tests[] = {
    {"a depot leaving by the L-Bone: the keeper moves its data off", test_lbone_leaving},
    {"one pass repairs copies and pieces; a dry run changes nothing", test_once_and_dry_run},
    {"bytes with no survivor: exit 11, the range named, the mapping kept", test_lost_is_loud},
    {"a stopped depot: given up promptly, its copies made again", test_stopped_depot},
    {"SIGKILL mid-repair: the restart finishes, nothing leaked, the state private",
     test_sigkill_mid_repair},
    {"the daemon keeps files alive across leases and depots", test_daemon_outlives_leases},
    {"new copies: the least loaded depots, never beside a live copy; stamped daemon lines",
     test_new_copies_spread},
    {"new copies: to another place than the live copy's, when the L-Bone tells places",
     test_new_copies_by_place},
};

TT_MAIN(&T, "lors_keep", ND, tests)
