/* tool_cli.c -- what the lors_* programs share on the command line: error lines, option
 * values, the exNode argument, reading and writing exNodes, the rc file, depots, and the
 * event feed (--events and the progress bar).
 *
 * The point is that every tool says the same thing the same way: one line on stderr,
 * "lors_NAME: <what failed>: <why>", and the exit code of tool.h.  Each helper that can
 * fail prints its own line and hands back the exit code, so a tool's main() reads as a
 * sequence of steps with "if (rc) goto out".
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lns_time.h"
#include "tool.h"
#include "lns_version.h"

/* "<tool>: <message><tail>\n" on stderr. */
static void line(const char *tool, const char *tail, const char *fmt, va_list ap)
{
    fprintf(stderr, "%s: ", tool);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "%s\n", tail);
}

void tool_error(const char *tool, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    line(tool, "", fmt, ap);
    va_end(ap);
}

int tool_usage(const char *tool, const char *fmt, ...)
{
    char tail[128];
    va_list ap;
    snprintf(tail, sizeof tail, " (try '%s --help')", tool);
    va_start(ap, fmt);
    line(tool, tail, fmt, ap);
    va_end(ap);
    return TOOL_EXIT_USAGE;
}

void tool_version(const char *tool)
{
    printf("%s (lns) %s\n", tool, LNS_VERSION);
}

/* ---- the exNode ---- */

static const char *exnode_arg(const char *tool, const char *fflag, int argc, char **argv,
                              int first)
{
    int npos = argc - first;
    if (npos > 1 || (npos == 1 && fflag)) {
        tool_usage(tool, "one exNode at a time (%s)", npos > 1 ? argv[first + 1]
                                                                   : argv[first]);
        return NULL;
    }
    if (npos == 1)
        return argv[first];
    if (!fflag)
        tool_usage(tool, "no exNode given (-f FILE, or FILE; - for stdin)");
    return fflag;
}

/* Read, parse and check the exNode at path; with digest, also the digest of its bytes. */
static int read_exnode(const char *tool, const char *path, xnd_t **x, xnd_digest_t *digest)
{
    char err[512];
    lors_e2e_info_t info;
    int rc = digest ? xnd_read_file_digest(path, NULL, x, digest, err, sizeof err)
                    : xnd_read_file(path, x, err, sizeof err);
    if (rc == XND_E_NOMEM) {
        tool_error(tool, "%s: out of memory", path);
        return TOOL_EXIT_INTERNAL;
    }
    if (rc != XND_OK) {
        tool_error(tool, "%s", err); /* the line already names the file */
        return TOOL_EXIT_EXNODE;
    }
    /* A transform description we cannot read would make every later step lie about sizes. */
    rc = lors_e2e_info(*x, &info, err, sizeof err);
    if (rc == LORS_OK)
        rc = lors_pins_use(*x, err, sizeof err); /* the depots' pins, for the sealed wire */
    if (rc != LORS_OK) {
        tool_error(tool, "%s: %s", path, err);
        xnd_free(*x);
        *x = NULL;
        return rc == LORS_E_NOMEM ? TOOL_EXIT_INTERNAL : TOOL_EXIT_EXNODE;
    }
    return TOOL_EXIT_OK;
}

int tool_open_exnode(const char *tool, const char *fflag, int argc, char **argv, int first,
                     const char **path, xnd_t **x)
{
    *x = NULL;
    if (!(*path = exnode_arg(tool, fflag, argc, argv, first)))
        return TOOL_EXIT_USAGE;
    return read_exnode(tool, *path, x, NULL);
}

int tool_write_exnode(const char *tool, const xnd_t *x, const char *path)
{
    char err[512];
    int rc = xnd_write_file(x, path, err, sizeof err);
    if (rc == XND_OK)
        return TOOL_EXIT_OK;
    tool_error(tool, "writing the exNode %s: %s", strcmp(path, "-") ? path : "to stdout",
                   err);
    return rc == XND_E_IO ? TOOL_EXIT_IO : TOOL_EXIT_INTERNAL;
}

/* 1 if a and b name the same file (both exist). */
int tool_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

static int exists_line(const char *tool, const char *path)
{
    tool_error(tool, "%s exists; use --force to overwrite it", path);
    return TOOL_EXIT_IO;
}

int tool_check_output(const char *tool, const char *out, const char *input, int force,
                      int *replace)
{
    struct stat st;
    *replace = force;
    if (force || strcmp(out, "-") == 0 || lstat(out, &st) != 0)
        return TOOL_EXIT_OK;
    if (input && strcmp(input, "-") != 0 && tool_same_file(out, input)) {
        *replace = 1;
        return TOOL_EXIT_OK;
    }
    return exists_line(tool, out);
}

static int in_place(const char *out, const char *path)
{
    return strcmp(path, "-") != 0 && (strcmp(out, path) == 0 || tool_same_file(out, path));
}

int tool_open_exnode_rw(const char *tool, const char *fflag, int argc, char **argv, int first,
                        const char *out, int hold, const char **path, xnd_t **x,
                        tool_rewrite_t *rw)
{
    char err[640];
    memset(rw, 0, sizeof *rw);
    rw->lockfd = -1;
    *x = NULL;
    if (!(*path = exnode_arg(tool, fflag, argc, argv, first)))
        return TOOL_EXIT_USAGE;
    rw->in_place = in_place(out ? out : *path, *path);
    if (rw->in_place && hold &&
        xnd_lock_file(*path, XND_LOCK_WAIT_MS, &rw->lockfd, err, sizeof err) != XND_OK) {
        tool_error(tool, "%s", err);
        return TOOL_EXIT_CHANGED;
    }
    int code = read_exnode(tool, *path, x, rw->in_place ? &rw->was : NULL);
    if (code != TOOL_EXIT_OK)
        tool_rewrite_end(rw);
    return code;
}

int tool_put_exnode(const char *tool, const xnd_t *x, const char *out, int replace,
                    tool_rewrite_t *rw)
{
    char err[600];
    if (!rw || !rw->in_place)
        return tool_save_exnode(tool, x, out, replace);
    int rc = xnd_update_file(x, out, &rw->was, rw->lockfd, &rw->was, err, sizeof err);
    if (rc == XND_OK)
        return TOOL_EXIT_OK;
    if (rc == XND_E_CHANGED || rc == XND_E_BUSY) {
        snprintf(rw->why, sizeof rw->why, "%s", err);
        return TOOL_EXIT_CHANGED;
    }
    tool_error(tool, "writing the exNode %s: %s", out, err);
    return rc == XND_E_IO ? TOOL_EXIT_IO : TOOL_EXIT_INTERNAL;
}

void tool_rewrite_end(tool_rewrite_t *rw)
{
    xnd_unlock_file(rw->lockfd);
    rw->lockfd = -1;
}

void tool_leases_promise(xnd_t *x, const unsigned char *select, const lors_upload_opts_t *up)
{
    int64_t now = lns_now_s();
    for (size_t i = 0; up->duration_s > 0 && i < x->nmaps; i++)
        if (!select || select[i])
            xnd_mapping_set_time(x->maps[i], 1, now + up->duration_s);
}

int tool_leases_extend(const char *tool, xnd_t *x, const unsigned char *select,
                       const lors_upload_opts_t *up, const char *out, tool_rewrite_t *rw)
{
    char err[256];
    xnd_digest_t before, after;
    tool_rewrite_t own;
    int failed = 0, file = strcmp(out, "-") != 0;
    if (file && (!rw || !rw->in_place)) {
        /* a new file: the version to compare with is the one just written */
        memset(&own, 0, sizeof own);
        own.in_place = 1;
        own.lockfd = -1;
        rw = &own;
        if (xnd_digest(x, &own.was, err, sizeof err) != XND_OK)
            file = 0;
    }
    if (file && xnd_digest(x, &before, err, sizeof err) != XND_OK)
        file = 0;
    lors_lease_extend(x, select, up->duration_s, up->provisional_s, up->threads, up->timeout_s,
                      &failed);
    /* unchanged when nothing was provisional; a newer version (a keeper's) is left alone */
    if (file && xnd_digest(x, &after, err, sizeof err) == XND_OK &&
        memcmp(before.sha256, after.sha256, sizeof before.sha256) != 0 &&
        tool_put_exnode(tool, x, out, 1, rw) == TOOL_EXIT_CHANGED)
        file = 0;
    if (failed == 0)
        return TOOL_EXIT_OK;
    tool_error(tool, "warning: %d allocation%s kept %s provisional lease of %" PRId64 " s (the "
               "depot did not answer the extension); lors_refresh %s gives %s the lease asked",
               failed, failed == 1 ? "" : "s", failed == 1 ? "its" : "their", up->provisional_s,
               file ? out : "EXNODE", failed == 1 ? "it" : "them");
    return TOOL_EXIT_PARTIAL;
}

int tool_save_exnode(const char *tool, const xnd_t *x, const char *path, int replace)
{
    char err[512];
    if (replace || strcmp(path, "-") == 0)
        return tool_write_exnode(tool, x, path);
    int rc = xnd_write_file_excl(x, path, err, sizeof err);
    if (rc == XND_OK)
        return TOOL_EXIT_OK;
    if (rc == XND_E_EXISTS)
        return exists_line(tool, path);
    tool_error(tool, "writing the exNode %s: %s", path, err);
    return rc == XND_E_IO ? TOOL_EXIT_IO : TOOL_EXIT_INTERNAL;
}

/* ---- settings ---- */

int tool_depots(const char *tool, const char *list, const tool_rc_t *rc, lors_depot_t **out,
                    size_t *n)
{
    char err[256];
    const char *from = list ? "--depot-list" : "rc file DEPOT";
    *out = NULL;
    *n = 0;
    if (!list)
        list = rc->depots;
    if (!list) {
        tool_error(tool, "no depots: give --depot-list, DEPOT in the rc file, or an L-Bone "
                             "(-H/--lbone, LBONE_SERVER in the rc file)");
        return TOOL_EXIT_DEPOTS;
    }
    int rcode = lors_depot_list_parse(list, out, n, err, sizeof err);
    if (rcode == LORS_E_NODEPOTS) {
        tool_error(tool, "%s: the list is empty", from);
        return TOOL_EXIT_DEPOTS;
    }
    if (rcode != LORS_OK) {
        tool_error(tool, "%s: %s", from, rcode == LORS_E_NOMEM ? "out of memory" : err);
        return rcode == LORS_E_NOMEM ? TOOL_EXIT_INTERNAL : TOOL_EXIT_USAGE;
    }
    lors_depot_pins_use(*out, *n);
    return TOOL_EXIT_OK;
}

/* ---- the key ---- */

int tool_key(const char *tool, const char *chain, const char *keyfile,
             unsigned char key[LORS_KEY_BYTES], const unsigned char **use)
{
    char err[512];
    *use = NULL;
    if (!chain || !strstr(chain, "aes"))
        return TOOL_EXIT_OK;
    if (lors_key_load(keyfile, key, err, sizeof err) != LORS_OK) {
        tool_error(tool, "the aes key: %s", err);
        return TOOL_EXIT_INTEGRITY;
    }
    *use = key;
    return TOOL_EXIT_OK;
}

/* ---- reports ---- */

tool_depot_name_t *tool_mapping_depots(const char *tool, const xnd_t *x)
{
    tool_depot_name_t *where = calloc(x->nmaps ? x->nmaps : 1, sizeof *where);
    if (!where) {
        tool_error(tool, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < x->nmaps; i++)
        tool_mapping_depot(x->maps[i], where[i], sizeof where[i]);
    return where;
}

static int same_depot(const lors_depot_t *a, const lors_depot_t *b)
{
    return a->port == b->port && strcmp(a->host, b->host) == 0 && strcmp(a->rid, b->rid) == 0;
}

/* The issue failed on depot d (a relay is the SEND's, not a depot's failure). */
static int failed_on(const lors_issue_t *is, const lors_depot_t *d)
{
    return !is->relayed && same_depot(&is->depot, d);
}

/* "D1", "D1 and D2", "D1, D2, D3 and 2 more": where the copies that failed on d went. */
static void moved_targets(const lors_report_t *rep, const lors_depot_t *d, char *buf,
                          size_t size)
{
    size_t named = 0, more = 0, n = 0;
    const lors_depot_t *names[3];
    for (size_t i = 0; i < rep->nissues; i++) {
        const lors_issue_t *is = &rep->issues[i];
        if (!is->moved || !failed_on(is, d))
            continue;
        size_t j = 0;
        while (j < i && !(rep->issues[j].moved && failed_on(&rep->issues[j], d) &&
                          same_depot(&rep->issues[j].moved_to, &is->moved_to)))
            j++;
        if (j < i)
            continue;
        if (named < 3)
            names[named++] = &is->moved_to;
        else
            more++;
    }
    buf[0] = '\0';
    for (size_t k = 0; k < named && n < size; k++) {
        char name[IBP_MAX_HOST + IBP_MAX_RID + 16];
        lors_depot_format(names[k], name, sizeof name);
        n += (size_t)snprintf(buf + n, size - n, "%s%s",
                              k == 0 ? "" : k + 1 == named && !more ? " and " : ", ", name);
    }
    if (more && n < size)
        snprintf(buf + n, size - n, " and %zu more", more);
}

/* Why the depot of is failed: a refused handshake's own line (for a pin: the depot and both
 * pins), else the IBP error's words. */
static const char *issue_why(const lors_issue_t *is)
{
    return is->why[0] ? is->why : ibp_strerror(is->ibp_err);
}

void tool_print_issues(const char *tool, const lors_report_t *rep, int pieces)
{
    for (size_t i = 0; i < rep->nissues; i++) {
        const lors_issue_t *is = &rep->issues[i];
        char from[IBP_MAX_HOST + IBP_MAX_RID + 16], to[4 * (IBP_MAX_HOST + IBP_MAX_RID + 16)];
        char what[96];
        lors_depot_format(&is->depot, from, sizeof from);
        long long a = (long long)is->offset, b = (long long)(is->offset + is->length - 1);
        if (pieces)
            snprintf(what, sizeof what, "piece %d (bytes %lld-%lld)", is->fragment, a, b);
        else
            snprintf(what, sizeof what, "fragment %d copy %d (bytes %lld-%lld)", is->fragment,
                     is->copy, a, b);
        if (is->relayed) {
            lors_depot_format(&is->moved_to, to, sizeof to);
            tool_error(tool, "%s: %s from %s to %s failed (%s); relayed through this client",
                       what, is->op, from, to, issue_why(is));
            continue;
        }
        /* one line per failed depot, however many copies it failed: its first failure, and
         * where they all went */
        size_t j = 0, moved = 0, stuck = 0;
        while (j < i && !failed_on(&rep->issues[j], &is->depot))
            j++;
        if (j < i)
            continue;
        for (size_t k = i; k < rep->nissues; k++)
            if (failed_on(&rep->issues[k], &is->depot)) {
                moved += rep->issues[k].moved != 0;
                stuck += rep->issues[k].moved == 0;
            }
        if (moved + stuck > 1)
            snprintf(what, sizeof what, "%zu %s", moved + stuck, pieces ? "pieces" : "copies");
        moved_targets(rep, &is->depot, to, sizeof to);
        if (moved && stuck)
            tool_error(tool, "depot %s failed (%s: %s); of %s, %zu %s %s, %zu found no depot",
                       from, is->op, issue_why(is), what, moved,
                       pieces ? "went to" : "were stored on", to, stuck);
        else if (moved)
            tool_error(tool, "depot %s failed (%s: %s); %s %s %s%s", from, is->op,
                       issue_why(is), what, pieces ? "went to" : "stored on", to,
                       pieces ? "" : " instead");
        else
            tool_error(tool, "depot %s failed (%s: %s); no depot left for %s", from, is->op,
                       issue_why(is), what);
    }
}

/* The distinct depots of a group of mappings: how many of names[0..n) differ. */
static int distinct_names(tool_depot_name_t *names, size_t n)
{
    int d = 0;
    for (size_t i = 0; i < n; i++) {
        size_t j = 0;
        while (j < i && strcmp(names[i], names[j]) != 0)
            j++;
        d += j == i;
    }
    return d;
}

/* "depot D failed (OP: why); " or "depots D1 (OP: why), D2 (...) and K more failed; " from
 * the issues (each depot once, three named at most); "" when there are none. */
static void failed_depots(const lors_report_t *rep, char *buf, size_t size)
{
    char names[3][IBP_MAX_HOST + IBP_MAX_RID + 16];
    const lors_issue_t *first[3];
    size_t nd = 0, n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < rep->nissues; i++) {
        const lors_depot_t *d = &rep->issues[i].depot;
        size_t j = 0;
        while (j < i && !same_depot(&rep->issues[j].depot, d))
            j++;
        if (j < i)
            continue;
        if (nd < 3) {
            lors_depot_format(d, names[nd], sizeof names[nd]);
            first[nd] = &rep->issues[i];
        }
        nd++;
    }
    if (nd == 1) {
        snprintf(buf, size, "depot %s failed (%s: %s); ", names[0], first[0]->op,
                 issue_why(first[0]));
        return;
    }
    for (size_t k = 0; k < nd && k < 3 && n < size; k++)
        n += (size_t)snprintf(buf + n, size - n, "%s%s (%s: %s)", k ? ", " : "depots ",
                              names[k], first[k]->op, issue_why(first[k]));
    if (nd > 3 && n < size)
        n += (size_t)snprintf(buf + n, size - n, " and %zu more", nd - 3);
    if (nd && n < size)
        snprintf(buf + n, size - n, " failed; ");
}

/* The bytes of x on fewer distinct depots than asked (copies, or as many as the list names):
 * the first such range [*first_off, *first_end) on *first_n depots, how many ranges and bytes
 * in all, and the count wanted.  0 when there are none. */
typedef struct spread {
    int64_t first_off, first_end, all;
    int first_n, want;
    size_t nranges;
} spread_t;

static int spread_scan(xnd_t *x, int copies, const lors_depot_t *depots, size_t ndepots,
                       spread_t *sp)
{
    memset(sp, 0, sizeof *sp);
    sp->first_off = sp->first_end = -1;
    tool_depot_name_t *names = calloc(ndepots ? ndepots : 1, sizeof *names);
    if (!names)
        return 0;
    for (size_t i = 0; i < ndepots; i++)
        lors_depot_format(&depots[i], names[i], sizeof names[i]);
    int want = distinct_names(names, ndepots);
    free(names);
    if (copies < want)
        want = copies;
    sp->want = want;
    size_t nm = 0;
    xnd_mapping_t *const *m = xnd_sorted(x, &nm);
    tool_depot_name_t *g = calloc(nm ? nm : 1, sizeof *g);
    if (want <= 1 || !m || !g) {
        free(g);
        return 0;
    }
    for (size_t i = 0; i < nm;) {
        size_t j = i;
        while (j < nm && m[j]->exnode_offset == m[i]->exnode_offset &&
               m[j]->logical_length == m[i]->logical_length) {
            tool_mapping_depot(m[j], g[j - i], sizeof g[0]);
            j++;
        }
        int n = distinct_names(g, j - i);
        int64_t off = m[i]->exnode_offset, end = off + m[i]->logical_length;
        if (n < want) {
            sp->all += end - off;
            if (sp->first_off < 0) {
                sp->first_off = off, sp->first_end = end, sp->first_n = n, sp->nranges = 1;
            } else if (sp->nranges == 1 && off == sp->first_end && n == sp->first_n) {
                sp->first_end = end;
            } else if (off != sp->first_end || n != sp->first_n || sp->nranges > 1) {
                sp->nranges++;
            }
        }
        i = j;
    }
    free(g);
    return sp->first_off >= 0;
}

int tool_spread_short(xnd_t *x, int copies, const lors_depot_t *depots, size_t ndepots)
{
    spread_t sp;
    return spread_scan(x, copies, depots, ndepots, &sp);
}

int tool_print_spread(const char *tool, xnd_t *x, int copies, const lors_depot_t *depots,
                      size_t ndepots, const lors_report_t *rep)
{
    spread_t sp;
    if (!spread_scan(x, copies, depots, ndepots, &sp))
        return 0;
    char failed[1024], more[160] = "";
    failed_depots(rep, failed, sizeof failed);
    if (sp.nranges > 1)
        snprintf(more, sizeof more, ", and %zu more range%s below %d (%lld bytes in all)",
                 sp.nranges - 1, sp.nranges == 2 ? "" : "s", sp.want, (long long)sp.all);
    tool_error(tool, "warning: %sbytes %lld-%lld have copies on %d depot%s, not %d%s; "
               "lors_augment can add copies", failed,
               (long long)sp.first_off, (long long)(sp.first_end - 1), sp.first_n,
               sp.first_n == 1 ? "" : "s", sp.want, more);
    return 1;
}

void tool_print_degraded(const char *tool, const lors_dl_report_t *r)
{
    char line[1024];
    size_t n = 0, nd = 0, shown = 0;
    if (!r->ndegraded)
        return;
    for (size_t i = 0; i < r->ndepots; i++)
        nd += r->depots[i].failed[0] != 0;
    n += (size_t)snprintf(line + n, sizeof line - n, "warning: %s", nd == 1 ? "depot " :
                          nd ? "depots " : "some copies failed");
    for (size_t i = 0; i < r->ndepots && shown < 3 && n < sizeof line; i++) {
        char d[IBP_MAX_HOST + IBP_MAX_RID + 16];
        if (!r->depots[i].failed[0])
            continue;
        lors_depot_format(&r->depots[i].depot, d, sizeof d);
        n += (size_t)snprintf(line + n, sizeof line - n, nd == 1 ? "%s%s failed (%s)"
                              : "%s%s (%s)", shown ? ", " : "", d, r->depots[i].failed);
        shown++;
    }
    if (nd > shown && n < sizeof line)
        n += (size_t)snprintf(line + n, sizeof line - n, " and %zu more", nd - shown);
    const lors_dl_degraded_t *g = &r->degraded[0];
    if (n < sizeof line)
        n += (size_t)snprintf(line + n, sizeof line - n, "%s; bytes %lld-%lld had %d of %d "
                              "%s left", nd > 1 ? " failed" : "", (long long)g->offset,
                              (long long)(g->offset + g->length - 1), g->left, g->copies,
                              r->erasure_coded ? "pieces" : g->copies == 1 ? "copy" : "copies");
    if (r->ndegraded > 1 && n < sizeof line) {
        long long all = 0;
        for (size_t i = 0; i < r->ndegraded; i++)
            all += (long long)r->degraded[i].length;
        snprintf(line + n, sizeof line - n, ", and %zu more range%s below their %s count "
                 "(%lld bytes in all)", r->ndegraded - 1, r->ndegraded == 2 ? "" : "s",
                 r->erasure_coded ? "piece" : "copy", all);
    }
    tool_error(tool, "%s", line);
}

/* ---- the event feed ---- */

int tool_feed_open(const char *tool, tool_feed_t *f, const char *events,
                       const char *label, int64_t total, int progress)
{
    char err[256];
    memset(f, 0, sizeof *f);
    if (events) {
        f->es = tool_events_open(events, tool, err, sizeof err);
        if (!f->es) {
            tool_error(tool, "--events %s: %s", events, err);
            return TOOL_EXIT_IO;
        }
        tool_tee_add(&f->tee, tool_events_event, f->es);
    }
    if (progress >= 0) {
        f->bar = tool_progress_new(STDERR_FILENO, label, total, progress > 0);
        if (f->bar)
            tool_tee_add(&f->tee, tool_progress_event, f->bar);
    }
    return TOOL_EXIT_OK;
}

static lors_event_fn feed_fn(const tool_feed_t *f)
{
    return f->tee.n ? tool_tee_call : NULL;
}

void tool_feed_attach(tool_feed_t *f, lors_event_fn *fn, void **arg)
{
    *fn = feed_fn(f);
    *arg = &f->tee;
}

void tool_feed_end(tool_feed_t *f, int64_t bytes, double seconds, int code)
{
    if (f->es)
        tool_events_printf(f->es, "END", "bytes=%" PRId64 " seconds=%.3f rc=%d", bytes, seconds,
                           code);
    tool_feed_close(f);
}

void tool_feed_close(tool_feed_t *f)
{
    tool_progress_finish(f->bar);
    tool_events_close(f->es);
    f->bar = NULL;
    f->es = NULL;
    f->tee.n = 0;
}

/* ---- output ---- */

void tool_human(int64_t bytes, char *buf, size_t size)
{
    static const char unit[] = "KMGTPE";
    uint64_t v = bytes > 0 ? (uint64_t)bytes : 0, div = 1024;
    int u = 0;
    if (bytes < 1024) {
        snprintf(buf, size, "%lld", (long long)bytes);
        return;
    }
    while (u < 5 && v / div >= 1024) {
        div *= 1024;
        u++;
    }
    /* rounded up, as ls and df do: a size is never shown smaller than it is */
    uint64_t q = v / div, r = v % div;
    if (q < 10) {
        uint64_t tenths = q * 10 + (r * 10 + div - 1) / div;
        if (tenths < 100) {
            snprintf(buf, size, "%llu.%llu%c", (unsigned long long)(tenths / 10),
                     (unsigned long long)(tenths % 10), unit[u]);
            return;
        }
        q = 10;
    } else if (r) {
        q++;
    }
    if (q >= 1024 && u < 5)
        snprintf(buf, size, "1.0%c", unit[u + 1]);
    else
        snprintf(buf, size, "%llu%c", (unsigned long long)q, unit[u]);
}

/* The length of the UTF-8 sequence at s that is a printable character (U+00A0 and up, no
 * surrogate, no overlong form), or 0. */
static size_t utf8_printable(const unsigned char *s)
{
    unsigned char c = s[0];
    size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3
             : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if ((c == 0xc2 && s[1] < 0xa0) || (c == 0xe0 && s[1] < 0xa0) ||
        (c == 0xed && s[1] > 0x9f) || (c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] > 0x8f))
        return 0;
    return n;
}

void tool_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

void tool_escape(const char *in, char *out, size_t size)
{
    const unsigned char *s = (const unsigned char *)in;
    size_t k = 0;
    if (size == 0)
        return;
    while (*s) {
        char e[8];
        size_t n = 1;
        const char *piece = e;
        if (*s == '\\')
            snprintf(e, sizeof e, "\\\\");
        else if (*s == '\n')
            snprintf(e, sizeof e, "\\n");
        else if (*s == '\t')
            snprintf(e, sizeof e, "\\t");
        else if (*s == '\r')
            snprintf(e, sizeof e, "\\r");
        else if (*s < 0x20 || *s == 0x7f || (*s >= 0x80 && !(n = utf8_printable(s)))) {
            snprintf(e, sizeof e, "\\x%02x", *s);
            n = 1;
        } else {
            piece = NULL;
        }
        size_t len = piece ? strlen(piece) : n;
        if (k + len >= size)
            break;
        memcpy(out + k, piece ? piece : (const char *)s, len);
        k += len;
        s += n;
    }
    out[k] = 0;
}

void tool_mapping_depot(const xnd_mapping_t *m, char *buf, size_t size)
{
    static const xnd_capkind order[] = {XND_READ, XND_WRITE, XND_MANAGE};
    for (int i = 0; i < 3; i++) {
        ibp_cap_t c;
        lors_depot_t d;
        if (!m->cap[order[i]] || ibp_cap_parse(m->cap[order[i]], &c) != IBP_OK)
            continue;
        memset(&d, 0, sizeof d);
        snprintf(d.host, sizeof d.host, "%s", c.host);
        d.port = c.port;
        snprintf(d.rid, sizeof d.rid, "%s", c.rid);
        lors_depot_format(&d, buf, size);
        return;
    }
    snprintf(buf, size, "-");
}
