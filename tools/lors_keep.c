/* lors_keep.c -- lors_keep: keep network files alive, whole and redundant, past their leases.
 *
 * A front end over lors_keep() (lors.h) for many exNodes: files named on the command line
 * and the *.xnd files under directories named there (looked for again on every pass).  Each
 * pass of a file refreshes its leases that end within the margin, probes it, rebuilds lost
 * copies or pieces on the policy's depots and rewrites the exNode atomically.
 *
 * Without --daemon it makes one pass over every file (cron: --once says so explicitly).  With
 * --daemon it keeps going: a file is due again after --interval, or earlier when its first
 * lease would come within the margin.  SIGINT/SIGTERM end the pass under way cleanly (what
 * it allocated is freed) and the daemon exits 0.
 *
 * The state file (lors_keep_state.c) records each new allocation before data goes into it and
 * each file's schedule; a keeper killed (SIGKILL) mid-repair frees on restart whatever never
 * reached an exNode, so no allocation is leaked, and resumes the schedule.  An exNode changed
 * by someone else during a pass is not overwritten: its new allocations are freed and the file
 * is kept again on the next pass.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lns_array.h"
#include "lns_err.h"
#include "lns_fail.h"
#include "lns_log.h"
#include "lns_time.h"
#include "lors.h"
#include "lors_keep_state.h"
#include "tool.h"
#include "tool_lbone.h"
#include "tool_opt.h"

static const char *TOOL = "lors_keep";

typedef struct settings {
    tool_common_t c;
    const char *depots, *leaving, *state;
    tool_lbone_opts_t lb;
    int copies, min_live, reliability, once, daemon, dry_run, json;
    int64_t margin, duration, interval, provisional;
} settings_t;

#define S(field) TOOL_OFF(settings_t, field)

static const tool_opt_t opts[] = {
    TOOL_OPT_HEADING("Policy:"),
    {TOOL_OPT_INT, "copies", 'c', "COPIES", S(copies), 1, 64, "2", "N",
     "replicated files: live copies wanted of every byte (an\n"
     "erasure-coded file: all K+M pieces of every stripe)", NULL},
    {TOOL_OPT_INT, "min-live", 0, NULL, S(min_live), 1, 1000, NULL, "N",
     "repair only where fewer than N copies (pieces) live\n(default: the target)", NULL},
    {TOOL_OPT_SECONDS, "margin", 0, NULL, S(margin), 0, INT64_MAX, "2d", "T",
     "refresh leases that end within T (s, m, h, d)", NULL},
    TOOL_OPT_DEPOTS(S(depots), S(lb)),
    {TOOL_OPT_STR, "leaving", 0, NULL, S(leaving), 0, 0, NULL, "LIST",
     "depots to move data off (going away): their copies count\n"
     "for nothing and are removed once rebuilt elsewhere", NULL},
    {TOOL_OPT_DURATION, "duration", 'd', NULL, S(duration), 1, INT64_MAX, "max", "T",
     "lifetime of new copies (default max: each depot's maximum)", NULL},
    TOOL_OPT_PROVISIONAL(S(provisional)),
    TOOL_OPT_STORAGE(S(reliability)),
    TOOL_OPT_HEADING("Running:"),
    {TOOL_OPT_SWITCH, "once", 0, NULL, S(once), 1, 0, NULL, NULL,
     "one pass over every file, then exit (the default; for cron)", NULL},
    {TOOL_OPT_SWITCH, "daemon", 0, NULL, S(daemon), 1, 0, NULL, NULL,
     "keep going: each file again after --interval, or sooner\nwhen a lease nears the margin",
     NULL},
    {TOOL_OPT_SECONDS, "interval", 'i', NULL, S(interval), 1, INT64_MAX, "10m", "T",
     "--daemon: the longest time between two passes of a file", NULL},
    {TOOL_OPT_STR, "state", 0, NULL, S(state), 0, 0, NULL, "FILE",
     "the state file (default $XDG_STATE_HOME/lns/lors_keep.db,\n"
     "else ~/.local/state/lns/lors_keep.db)", NULL},
    {TOOL_OPT_SWITCH, "dry-run", 'n', NULL, S(dry_run), 1, 0, NULL, NULL,
     "probe and report what a pass would do; change nothing", NULL},
    {TOOL_OPT_SWITCH, "json", 0, NULL, S(json), 1, 0, NULL, NULL,
     "the report as JSON: one document per pass (one line each)", NULL},
    TOOL_OPT_DEPOT_CALLS("30s"),
    TOOL_OPT_VERBOSE("also report the files that needed nothing"),
    TOOL_OPT_QUIET('q'),
    TOOL_OPT_EVENTS,
    TOOL_OPT_LBONE(S(lb)),
    TOOL_OPT_SETTINGS,
    TOOL_OPT_TABLE_END,
};

static int check(void *sp, int argc, char **argv, int first)
{
    const settings_t *f = sp;
    if (first >= argc)
        return tool_usage(TOOL, "name the exNodes to keep, or directories of them");
    if (f->once && f->daemon)
        return tool_usage(TOOL, "--once and --daemon are alternatives: give one");
    return TOOL_EXIT_OK;
}

static const tool_cmd_t cmd = {
    "lors_keep",
    "Usage: lors_keep [options] EXNODE|DIR...\n"
    "Keep network files alive: refresh their leases before they end, probe every copy,\n"
    "rebuild lost copies and erasure-coded pieces on other depots, and rewrite each exNode\n"
    "atomically.  A directory stands for the *.xnd files under it.\n\n",
    "\nExit: 0 every file meets the policy, 2 usage, 3 an exNode, 4 local I/O (the state\n"
    "file), 5 depots, 8 some leases could not be extended, 9 internal, 11 some bytes are at\n"
    "risk or lost (too few survivors, no depot with room: each range is named), 12 an exNode\n"
    "changed during its pass (not replaced, the new copies freed), 130/143 a pass was\n"
    "interrupted.  --daemon exits 0 on SIGINT/SIGTERM.  See lors_keep(1).\n",
    opts, sizeof(settings_t), check,
};

#define EXIT_AT_RISK 11

/* A report line on o (newline added).  A daemon's lines start with the time, as the depots'
 * and lors_serve's logs do ("2026-11-22T17:40:01Z ", UTC): its output is a log. */
static void say(const settings_t *f, FILE *o, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(const settings_t *f, FILE *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (f->daemon) {
        lns_log_line(o, fmt, ap);
    } else {
        vfprintf(o, fmt, ap);
        fputc('\n', o);
    }
    va_end(ap);
}

/* An error line, "lors_keep: message" on stderr (tool_error), the daemon's with the time. */
static void complain(const settings_t *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void complain(const settings_t *f, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fflush(stdout);
    say(f, stderr, "%s: %s", TOOL, msg);
}

/* ---- the files ---------------------------------------------------------------------------- */

typedef struct files {
    char **v;
    size_t n, cap;
} files_t;

static int files_add(files_t *fs, const char *path)
{
    char real[PATH_MAX];
    if (!realpath(path, real))
        return -1;
    for (size_t i = 0; i < fs->n; i++)
        if (strcmp(fs->v[i], real) == 0)
            return 0;
    if (lns_grow(&fs->v, &fs->cap, fs->n + 1, sizeof *fs->v, 16) < 0)
        return -1;
    if (!(fs->v[fs->n] = strdup(real)))
        return -1;
    fs->n++;
    return 0;
}

static void files_free(files_t *fs)
{
    ks_strings_free(fs->v, fs->n);
    memset(fs, 0, sizeof *fs);
}

static int has_suffix(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a > b && strcmp(s + a - b, suf) == 0;
}

/* The *.xnd files under dir (not hidden ones: editors' and xnd_write_file's temporaries). */
static void scan_dir(files_t *fs, const char *dir, int depth)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    if (!d || depth > 32) {
        if (d)
            closedir(d);
        return;
    }
    while ((e = readdir(d))) {
        char p[PATH_MAX];
        struct stat st;
        if (e->d_name[0] == '.' ||
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p ||
            stat(p, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode))
            scan_dir(fs, p, depth + 1);
        else if (S_ISREG(st.st_mode) && has_suffix(e->d_name, ".xnd"))
            files_add(fs, p);
    }
    closedir(d);
}

/* The operands as files; one that is missing is an error line each pass. */
static void collect(const settings_t *f, files_t *fs, int argc, char **argv, int first)
{
    for (int i = first; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            if (!f->c.quiet)
                complain(f, "%s: %s", argv[i], strerror(errno));
            continue;
        }
        if (S_ISDIR(st.st_mode))
            scan_dir(fs, argv[i], 0);
        else
            files_add(fs, argv[i]);
    }
}

/* ---- the journal ------------------------------------------------------------------------- */

typedef struct journal {
    keep_state_t *ks;
    const char *exnode;
} journal_t;

static int journal_alloc(void *arg, const ibp_caps_t *caps)
{
    journal_t *j = arg;
    if (ks_pending_add(j->ks, j->exnode, caps->manage, lns_now_s()) < 0)
        return -1;
    return lns_fail("keep.alloc") < 0 ? -1 : 0; /* tests: die with an allocation pending */
}

/* The pending allocations of path: dropped when its exNode holds them, freed when it does
 * not (or the file is gone).  Returns how many are left (depots that did not answer). */
static size_t reconcile(keep_state_t *ks, ibp_client_t *ibp, const char *path)
{
    char **caps = NULL;
    size_t n = 0, left = 0;
    xnd_t *x = NULL;
    char err[256];
    if (ks_pending_list(ks, path, &caps, &n) < 0 || n == 0)
        return 0;
    int have = xnd_read_file(path, &x, err, sizeof err) == XND_OK &&
               lors_pins_use(x, err, sizeof err) == LORS_OK;
    if (!have && access(path, F_OK) == 0) {
        /* there, but unreadable now: decide later rather than free what it may hold */
        ks_strings_free(caps, n);
        return n;
    }
    for (size_t i = 0; i < n; i++) {
        int in = 0;
        for (size_t m = 0; have && m < x->nmaps && !in; m++)
            in = x->maps[m]->cap[XND_MANAGE] && strcmp(x->maps[m]->cap[XND_MANAGE], caps[i]) == 0;
        int rc = in ? IBP_OK : ibp_decr(ibp, caps[i], IBP_READCAP);
        if (rc == IBP_OK || rc == IBP_E_CAP_NOT_FOUND)
            ks_pending_del(ks, path, caps[i]);
        else
            left++;
    }
    xnd_free(x);
    ks_strings_free(caps, n);
    return left;
}

/* ---- the report -------------------------------------------------------------------------- */


typedef struct outcome {
    const char *status;       /* ok, repaired, at-risk, lost, error */
    int code;
} outcome_t;

static void report_json(FILE *o, const char *path, const outcome_t *oc,
                        const lors_keep_report_t *r, int first)
{
    fprintf(o, "%s{\"exnode\":", first ? "" : ",");
    tool_json_str(o, path);
    fprintf(o, ",\"status\":\"%s\",\"mappings\":%d,\"dead\":%d,\"refreshed\":%d,"
            "\"refresh_failed\":%d,\"added\":%d,\"removed\":%d,\"unfreed\":%d,"
            "\"unread\":%d,\"bytes_sent\":%" PRId64 ",\"bytes_rebuilt\":%" PRId64
            ",\"next_end\":%" PRId64, oc->status, r->mappings, r->dead, r->refreshed,
            r->refresh_failed, r->added, r->removed, r->unfreed, r->unread, r->bytes_sent,
            r->bytes_rebuilt, r->next_end);
    fprintf(o, ",\"would\":{\"refresh\":%d,\"add\":%d,\"remove\":%d}", r->would_refresh,
            r->would_add, r->would_remove);
    fprintf(o, ",\"at_risk\":[");
    for (size_t i = 0; i < r->nrisks; i++)
        fprintf(o, "%s{\"offset\":%" PRId64 ",\"length\":%" PRId64 ",\"live\":%d,\"need\":%d,"
                "\"lost\":%s}", i ? "," : "", r->risks[i].offset, r->risks[i].length,
                r->risks[i].live, r->risks[i].need, r->risks[i].lost ? "true" : "false");
    fprintf(o, "],\"error\":");
    if (r->error[0])
        tool_json_str(o, r->error);
    else
        fputs("null", o);
    fputc('}', o);
}

static void report_text(const settings_t *f, const char *path, const outcome_t *oc,
                        const lors_keep_report_t *r)
{
    char sent[16], built[16];
    int busy = r->added || r->removed || r->dead || r->refresh_failed || r->unread ||
               r->nrisks || r->would_add || r->would_remove || r->would_refresh;
    if (!busy && !f->c.verbose && strcmp(oc->status, "error") != 0)
        return;
    tool_human(r->bytes_sent, sent, sizeof sent);
    tool_human(r->bytes_rebuilt, built, sizeof built);
    /* -q: the summary goes, the errors on stderr stay */
    if (!f->c.quiet && f->dry_run)
        say(f, stdout, "%s: %s: %d mappings, %d dead; would refresh %d, add %d, remove %d", path,
            oc->status, r->mappings, r->dead, r->would_refresh, r->would_add, r->would_remove);
    else if (!f->c.quiet)
        say(f, stdout, "%s: %s: %d mappings, %d dead; refreshed %d, added %d (%s sent, %s "
            "rebuilt), removed %d", path, oc->status, r->mappings, r->dead, r->refreshed,
            r->added, sent, built, r->removed);
    for (size_t i = 0; i < r->nrisks; i++) {
        const lors_keep_risk_t *k = &r->risks[i];
        complain(f, "%s: bytes %" PRId64 "-%" PRId64 " %s: %d of %d %s live", path, k->offset,
                 k->offset + k->length - 1, k->lost ? "LOST" : "at risk", k->live, k->need,
                 r->erasure_coded ? "pieces" : "copies");
    }
    if (r->error[0] && (r->nrisks == 0 || strcmp(oc->status, "error") == 0))
        complain(f, "%s: %s", path, r->error);
    if (r->unfreed)
        complain(f, "%s: warning: %d removed mapping%s could not be freed (depot down); the "
                 "lease ends on its own", path, r->unfreed, r->unfreed == 1 ? "" : "s");
    if (r->unread)
        complain(f, "%s: warning: %d mapping%s lns cannot read %s kept, never freed (lors_ls "
                 "says why)", path, r->unread, r->unread == 1 ? "" : "s",
                 r->unread == 1 ? "is" : "are");
}

/* ---- one file ---------------------------------------------------------------------------- */

typedef struct ctx {
    settings_t *f;
    keep_state_t *ks;
    ibp_client_t *ibp;
    lors_keep_opts_t ko;
    const lors_depot_t *asked_leaving; /* --leaving */
    size_t nasked_leaving;
    lors_depot_t *leaving;    /* --leaving and what the L-Bone calls down or leaving */
    tool_feed_t feed;
    const volatile sig_atomic_t *stop;
} ctx_t;

/* The pass's new allocations, provisional until the exNode naming them is on disk, get their
 * duration; the exNode is written again with their ends unless someone wrote a newer one. */
static void extend_written(ctx_t *c, const char *path, xnd_t *x, lors_keep_report_t *r,
                           const xnd_digest_t *mine)
{
    char err[640];
    int failed = 0;
    if (!r->fresh || r->nfresh != x->nmaps)
        return;
    lors_lease_extend(x, r->fresh, c->ko.duration_s, c->ko.provisional_s, c->ko.threads,
                      c->ko.timeout_s, &failed);
    r->refresh_failed += failed;
    if (r->added > 0)
        xnd_update_file(x, path, mine, -1, NULL, err, sizeof err);
}

static void keep_file(ctx_t *c, const char *path, lors_keep_report_t *r, outcome_t *oc)
{
    char err[640];
    xnd_digest_t was, mine;
    xnd_t *x = NULL;
    journal_t jn = {c->ks, path};
    lors_keep_opts_t ko = c->ko;

    memset(r, 0, sizeof *r);
    oc->status = "error";
    oc->code = TOOL_EXIT_OK;
    if (!c->f->dry_run)
        reconcile(c->ks, c->ibp, path);
    if (xnd_read_file_digest(path, NULL, &x, &was, err, sizeof err) != XND_OK ||
        lors_pins_use(x, err, sizeof err) != LORS_OK) {
        lns_err_set(r->error, sizeof r->error, "%s", err);
        oc->code = TOOL_EXIT_EXNODE;
        xnd_free(x);
        return;
    }
    ko.on_alloc = journal_alloc;
    ko.alloc_arg = &jn;
    tool_events_printf(c->feed.es, "FILE", "exnode=%s", path);
    int lrc = lors_keep(&ko, x, r);
    if (lrc == LORS_OK || lrc == LORS_E_PARTIAL) {
        if (r->changed && !c->f->dry_run) {
            /* a compare-and-swap: a version another keeper or tool wrote during the pass is
             * never replaced; the reconcile below then frees what this pass allocated */
            int wrc = XND_E_IO;
            size_t pl = strlen(path);
            if (lns_fail("keep.write") < 0)
                snprintf(err, sizeof err, "%s", strerror(errno));
            else
                wrc = xnd_update_file(x, path, &was, -1, &mine, err, sizeof err);
            /* the report line names the file already */
            const char *why = strncmp(err, path, pl) == 0 && strncmp(err + pl, ": ", 2) == 0
                                  ? err + pl + 2 : err;
            if (wrc == XND_E_CHANGED || wrc == XND_E_BUSY) {
                lns_err_set(r->error, sizeof r->error, "%s; this pass's new allocations are "
                            "freed and the next pass keeps it", why);
                oc->code = TOOL_EXIT_CHANGED;
            } else if (wrc != XND_OK) {
                lns_err_set(r->error, sizeof r->error, "writing the exNode: %s", why);
                oc->code = TOOL_EXIT_IO;
            } else {
                extend_written(c, path, x, r, &mine);
            }
            lns_fail("keep.written"); /* tests: die before the journal is cleared */
        }
    }
    if (!c->f->dry_run)
        reconcile(c->ks, c->ibp, path);
    xnd_free(x);
    if (oc->code)
        return;
    if (lrc == LORS_E_STOPPED) {
        oc->code = tool_stop_exit_code() ? tool_stop_exit_code() : 130;
        lns_err_set(r->error, sizeof r->error, "interrupted; what this pass allocated is freed");
        return;
    }
    if (lrc != LORS_OK && lrc != LORS_E_PARTIAL) {
        oc->code = tool_exit_code(lrc);
        return;
    }
    if (r->nrisks > 0) {
        oc->status = r->lost ? "lost" : "at-risk";
        oc->code = EXIT_AT_RISK;
    } else if (r->refresh_failed > 0) {
        oc->status = "at-risk";
        oc->code = TOOL_EXIT_PARTIAL;
    } else {
        oc->status = r->added || r->removed ? "repaired" : "ok";
    }
}

/* ---- passes ------------------------------------------------------------------------------ */

static int worse(int a, int b)
{
    /* at risk outranks everything but a usage error; otherwise the first failure */
    if (a == EXIT_AT_RISK || b == EXIT_AT_RISK)
        return EXIT_AT_RISK;
    return a ? a : b;
}

static int default_state(char *buf, size_t size)
{
    const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
    char dir[PATH_MAX];
    if (xdg && xdg[0])
        snprintf(dir, sizeof dir, "%s/lns", xdg);
    else if (home && home[0])
        snprintf(dir, sizeof dir, "%s/.local/state/lns", home);
    else
        return -1;
    /* mkdir -p */
    for (char *p = dir + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(dir, 0700);
            *p = '/';
        }
    mkdir(dir, 0700);
    return snprintf(buf, size, "%s/lors_keep.db", dir) < (int)size ? 0 : -1;
}

/* Depots for new copies: the list, else the L-Bone (asked again each pass), else rc DEPOT. */
static int depots(ctx_t *c, lors_depot_t **list, size_t *n)
{
    tool_lbone_need_t need = {0, 0, c->ko.reliability, c->ko.duration_s};
    lors_depot_t *fresh = NULL;
    size_t nf = 0;
    int code = tool_lbone_depots(TOOL, c->f->depots, &c->f->c.rc, &c->f->lb, &need,
                                 c->ko.copies, c->f->c.verbose && !c->f->c.quiet, &fresh, &nf);
    if (code)
        return code;
    free(*list);
    *list = fresh;
    *n = nf;
    /* depots the L-Bone calls down, unreachable or leaving: data moves off them */
    lors_depot_t *gone = NULL;
    size_t ng = 0;
    if (tool_lbone_in_use(c->f->depots, &c->f->c.rc, &c->f->lb) &&
        tool_lbone_unusable(TOOL, &c->f->c.rc, &c->f->lb, &gone, &ng) == TOOL_EXIT_INTERNAL)
        return TOOL_EXIT_INTERNAL;
    lors_depot_t *all = malloc((c->nasked_leaving + ng + 1) * sizeof *all);
    if (!all) {
        free(gone);
        return TOOL_EXIT_INTERNAL;
    }
    if (c->nasked_leaving)
        memcpy(all, c->asked_leaving, c->nasked_leaving * sizeof *all);
    if (ng)
        memcpy(all + c->nasked_leaving, gone, ng * sizeof *all);
    free(gone);
    free(c->leaving);
    c->leaving = all;
    c->ko.leaving = all;
    c->ko.nleaving = c->nasked_leaving + ng;
    return TOOL_EXIT_OK;
}

static int pass(ctx_t *c, int argc, char **argv, int first, int64_t *wake)
{
    files_t fs = {0};
    int code = TOOL_EXIT_OK, nfirst = 1;
    int64_t now = lns_now_s();
    collect(c->f, &fs, argc, argv, first);
    if (c->f->json)
        printf("{\"time\":%" PRId64 ",\"dry_run\":%s,\"files\":[", now,
               c->f->dry_run ? "true" : "false");
    *wake = now + c->f->interval;
    for (size_t i = 0; i < fs.n && !(c->stop && *c->stop); i++) {
        int64_t due = c->f->daemon ? ks_file_due(c->ks, fs.v[i]) : 0;
        if (due > now) {
            if (due < *wake)
                *wake = due;
            continue;
        }
        lors_keep_report_t r;
        outcome_t oc;
        keep_file(c, fs.v[i], &r, &oc);
        tool_events_printf(c->feed.es, "KEPT",
                           "status=%s mappings=%d dead=%d refreshed=%d added=%d removed=%d "
                           "risks=%zu rc=%d", oc.status, r.mappings, r.dead, r.refreshed,
                           r.added, r.removed, r.nrisks, oc.code);
        if (c->f->json) {
            report_json(stdout, fs.v[i], &oc, &r, nfirst);
            nfirst = 0;
        } else {
            report_text(c->f, fs.v[i], &oc, &r);
        }
        /* due again after the interval, or when the first lease nears the margin (a file
         * that is not healthy: sooner, to try again) */
        int64_t next = lns_now_s() + c->f->interval;
        if (r.next_end > 0 && r.next_end - c->ko.margin_s < next)
            next = r.next_end - c->ko.margin_s;
        if (oc.code && next > lns_now_s() + 60)
            next = lns_now_s() + 60;
        if (next < lns_now_s() + 1)
            next = lns_now_s() + 1;
        if (!c->f->dry_run)
            ks_file_put(c->ks, fs.v[i], oc.status, now, next);
        if (next < *wake)
            *wake = next;
        code = worse(code, oc.code);
        lors_keep_report_free(&r);
    }
    if (c->f->json)
        printf("]}\n");
    fflush(stdout);
    files_free(&fs);
    return code;
}

int main(int argc, char **argv)
{
    settings_t f;
    ctx_t c;
    int first, code;
    char statepath[PATH_MAX], lockpath[PATH_MAX + 8], err[512];
    lors_depot_t *dl = NULL, *leaving = NULL;
    size_t ndl = 0, nleaving = 0;
    int lockfd = -1;

    memset(&c, 0, sizeof c);
    code = tool_opt_parse(&cmd, argc, argv, &f, &first);
    if (code)
        return code;
    c.f = &f;
    lors_keep_opts_init(&c.ko);
    c.ko.copies = f.copies;
    c.ko.min_live = f.min_live != TOOL_UNSET_INT ? f.min_live : 0;
    c.ko.margin_s = f.margin;
    c.ko.duration_s = f.duration;
    c.ko.provisional_s = f.provisional;
    c.ko.defer_extend = 1; /* extended once the exNode naming them is written */
    c.ko.reliability = f.reliability ? f.reliability : IBP_HARD;
    c.ko.threads = f.c.threads;
    c.ko.timeout_s = (int)f.c.timeout;
    c.ko.dry_run = f.dry_run;
    if (f.leaving && lors_depot_list_parse(f.leaving, &leaving, &nleaving, err, sizeof err) !=
                         LORS_OK) {
        code = tool_usage(TOOL, "--leaving %s: %s", f.leaving, err);
        goto done;
    }
    lors_depot_pins_use(leaving, nleaving);
    c.ko.leaving = c.asked_leaving = leaving;
    c.ko.nleaving = c.nasked_leaving = nleaving;

    if (f.state)
        snprintf(statepath, sizeof statepath, "%s", f.state);
    else if (default_state(statepath, sizeof statepath) < 0) {
        tool_error(TOOL, "no state file: give --state FILE (neither XDG_STATE_HOME nor HOME)");
        code = TOOL_EXIT_IO;
        goto done;
    }
    /* one keeper per state file: two would free each other's pending allocations */
    snprintf(lockpath, sizeof lockpath, "%s.lock", statepath);
    if ((lockfd = open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0 ||
        flock(lockfd, LOCK_EX | LOCK_NB) != 0) {
        tool_error(TOOL, "%s: %s", lockpath, errno == EWOULDBLOCK
                   ? "another lors_keep uses this state file" : strerror(errno));
        code = TOOL_EXIT_IO;
        goto done;
    }
    int opened = ks_open(statepath, &c.ks, err, sizeof err);
    if (opened < 0) {
        tool_error(TOOL, "state file %s", err);
        code = TOOL_EXIT_IO;
        goto done;
    }
    if (opened > 0)
        tool_error(TOOL, "warning: state file %s", err);
    ibp_client_opts_t io;
    ibp_client_opts_init(&io);
    io.connect_timeout_ms = io.io_timeout_ms = (int)(f.c.timeout * 1000);
    io.stall_ms = LORS_STALL_MS; /* as the engines' calls: a stopped depot holds no round */
    if (io.connect_timeout_ms > LORS_STALL_MS)
        io.connect_timeout_ms = LORS_STALL_MS;
    if (!(c.ibp = ibp_client_new(&io))) {
        code = TOOL_EXIT_INTERNAL;
        goto done;
    }
    if ((code = tool_feed_open(TOOL, &c.feed, f.c.events, "keep", -1, -1)))
        goto done;
    tool_feed_attach(&c.feed, &c.ko.on_event, &c.ko.event_arg);
    tool_events_printf(c.feed.es, "BEGIN", "op=keep copies=%d min_live=%d margin=%" PRId64
                       " daemon=%d dry_run=%d", f.copies, c.ko.min_live, f.margin, f.daemon,
                       f.dry_run);
    c.stop = c.ko.stop = tool_stop_install(TOOL, NULL);

    for (;;) {
        int64_t wake;
        code = depots(&c, &dl, &ndl);
        if (code && !f.daemon)
            goto done; /* the daemon goes on with the depots it had */
        c.ko.depots = dl;
        c.ko.ndepots = ndl;
        int pc = pass(&c, argc, argv, first, &wake);
        code = f.daemon ? TOOL_EXIT_OK : pc;
        if (!f.daemon || *c.stop)
            break;
        while (!*c.stop && lns_now_s() < wake)
            nanosleep(&(struct timespec){0, 200 * 1000 * 1000}, NULL);
        if (*c.stop)
            break;
    }
    if (f.daemon && *c.stop)
        code = TOOL_EXIT_OK;

done:
    tool_feed_end(&c.feed, 0, 0, code);
    if (c.ibp)
        ibp_client_free(c.ibp);
    ks_close(c.ks);
    if (lockfd >= 0)
        close(lockfd);
    free(dl);
    free(leaving);
    free(c.leaving);
    tool_opt_free(&f);
    return code;
}
