/* lors_cli.c -- what the lors_* programs share on the command line: error lines, option
 * values, the exNode argument, reading and writing exNodes, the rc file, depots, and the
 * event feed (--events and the progress bar).
 *
 * The point is that every tool says the same thing the same way: one line on stderr,
 * "lors_NAME: <what failed>: <why>", and the exit code of lors_tool.h.  Each helper that can
 * fail prints its own line and hands back the exit code, so a tool's main() reads as a
 * sequence of steps with "if (rc) goto out".
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lns_units.h"
#include "lors_tool.h"

void lors_cli_error(const char *tool, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", tool);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int lors_cli_usage(const char *tool, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: ", tool);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (try '%s --help')\n", tool);
    return LORS_EXIT_USAGE;
}

void lors_cli_version(const char *tool)
{
    printf("%s (lns) %s\n", tool, LNS_VERSION);
}

/* ---- option values ---- */

int lors_cli_int(const char *tool, const char *opt, const char *val, int min, int max,
                 int *out)
{
    char *end;
    errno = 0;
    long v = strtol(val, &end, 10);
    if (errno || end == val || *end || v < min || v > max) {
        lors_cli_usage(tool, "%s %s: expected a whole number from %d to %d", opt, val, min, max);
        return -1;
    }
    *out = (int)v;
    return 0;
}

int lors_cli_size(const char *tool, const char *opt, const char *val, int64_t *out)
{
    uint64_t v;
    if (lns_parse_size(val, &v) < 0) {
        lors_cli_usage(tool, "%s %s: expected a size (digits with an optional K, M, G or T)",
                       opt, val);
        return -1;
    }
    *out = (int64_t)v;
    return 0;
}

int lors_cli_seconds(const char *tool, const char *opt, const char *val, int64_t *out)
{
    if (lns_parse_seconds(val, out) < 0) {
        lors_cli_usage(tool, "%s %s: expected a duration (digits with an optional s, m, h or d)",
                       opt, val);
        return -1;
    }
    return 0;
}

int lors_cli_timeout(const char *tool, const char *val, int64_t *out)
{
    if (lors_cli_seconds(tool, "-T", val, out) < 0)
        return -1;
    if (*out < 1 || *out > 86400) {
        lors_cli_usage(tool, "-T %s: from 1s to 1d", val);
        return -1;
    }
    return 0;
}

int lors_cli_duration(const char *tool, const char *opt, const char *val, int64_t *out)
{
    if (strcmp(val, "-1") == 0 || strcmp(val, "max") == 0) {
        *out = -1;
        return 0;
    }
    if (lns_parse_seconds(val, out) < 0 || *out == 0) {
        lors_cli_usage(tool, "%s %s: expected a duration (s, m, h, d), -1 or max", opt, val);
        return -1;
    }
    return 0;
}

/* ---- the exNode ---- */

const char *lors_cli_exnode_arg(const char *tool, const char *fflag, int argc, char **argv,
                                int first)
{
    int npos = argc - first;
    if (npos > 1 || (npos == 1 && fflag)) {
        lors_cli_usage(tool, "one exNode at a time (%s)", npos > 1 ? argv[first + 1]
                                                                   : argv[first]);
        return NULL;
    }
    if (npos == 1)
        return argv[first];
    if (!fflag)
        lors_cli_usage(tool, "no exNode given (-f FILE, or FILE; - for stdin)");
    return fflag;
}

int lors_cli_read_exnode(const char *tool, const char *path, xnd_t **x)
{
    char err[512];
    lors_e2e_info_t info;
    int rc = xnd_read_file(path, x, err, sizeof err);
    if (rc == XND_E_NOMEM) {
        lors_cli_error(tool, "%s: out of memory", path);
        return LORS_EXIT_INTERNAL;
    }
    if (rc != XND_OK) {
        lors_cli_error(tool, "%s", err); /* the line already names the file */
        return LORS_EXIT_EXNODE;
    }
    /* A transform description we cannot read would make every later step lie about sizes. */
    rc = lors_e2e_info(*x, &info, err, sizeof err);
    if (rc != LORS_OK) {
        lors_cli_error(tool, "%s: %s", path, err);
        xnd_free(*x);
        *x = NULL;
        return rc == LORS_E_NOMEM ? LORS_EXIT_INTERNAL : LORS_EXIT_EXNODE;
    }
    return LORS_EXIT_OK;
}

int lors_cli_open_exnode(const char *tool, const char *fflag, int argc, char **argv, int first,
                         const char *rcpath, int no_rc, const char **path, lors_rc_t *rc,
                         xnd_t **x)
{
    int code;
    *x = NULL;
    if (!(*path = lors_cli_exnode_arg(tool, fflag, argc, argv, first)))
        return LORS_EXIT_USAGE;
    if ((code = lors_cli_rc(tool, rcpath, no_rc, rc)) != LORS_EXIT_OK)
        return code;
    if ((code = lors_cli_read_exnode(tool, *path, x)) != LORS_EXIT_OK)
        lors_rc_free(rc);
    return code;
}

int lors_cli_write_exnode(const char *tool, const xnd_t *x, const char *path)
{
    char err[512];
    int rc = xnd_write_file(x, path, err, sizeof err);
    if (rc == XND_OK)
        return LORS_EXIT_OK;
    lors_cli_error(tool, "writing the exNode %s: %s", strcmp(path, "-") ? path : "to stdout",
                   err);
    return rc == XND_E_IO ? LORS_EXIT_IO : LORS_EXIT_INTERNAL;
}

/* ---- settings ---- */

int lors_cli_rc(const char *tool, const char *path, int skip, lors_rc_t *rc)
{
    char err[512];
    /* --no-rc reads an empty file: "all unset", exactly as lors_rc_load leaves it */
    if (skip)
        path = "/dev/null";
    if (lors_rc_load(path, rc, err, sizeof err) != LORS_OK) {
        lors_cli_error(tool, "rc file: %s", err);
        return LORS_EXIT_USAGE;
    }
    return LORS_EXIT_OK;
}

int lors_cli_depots(const char *tool, const char *list, const lors_rc_t *rc, lors_depot_t **out,
                    size_t *n)
{
    char err[256];
    const char *from = list ? "--depot-list" : "rc file DEPOT";
    *out = NULL;
    *n = 0;
    if (!list)
        list = rc->depots;
    if (!list) {
        lors_cli_error(tool, "no depots: give --depot-list, DEPOT in the rc file, or an L-Bone "
                             "(-H/--lbone, LBONE_SERVER in the rc file)");
        return LORS_EXIT_DEPOTS;
    }
    int rcode = lors_depot_list_parse(list, out, n, err, sizeof err);
    if (rcode == LORS_E_NODEPOTS) {
        lors_cli_error(tool, "%s: the list is empty", from);
        return LORS_EXIT_DEPOTS;
    }
    if (rcode != LORS_OK) {
        lors_cli_error(tool, "%s: %s", from, rcode == LORS_E_NOMEM ? "out of memory" : err);
        return rcode == LORS_E_NOMEM ? LORS_EXIT_INTERNAL : LORS_EXIT_USAGE;
    }
    return LORS_EXIT_OK;
}

/* ---- the event feed ---- */

int lors_cli_feed_open(const char *tool, lors_cli_feed_t *f, const char *events,
                       const char *label, int64_t total, int progress)
{
    char err[256];
    memset(f, 0, sizeof *f);
    if (events) {
        f->es = lors_evstream_open(events, tool, err, sizeof err);
        if (!f->es) {
            lors_cli_error(tool, "--events %s: %s", events, err);
            return LORS_EXIT_IO;
        }
        lors_event_tee_add(&f->tee, lors_evstream_event, f->es);
    }
    if (progress >= 0) {
        f->bar = lors_progress_new(STDERR_FILENO, label, total, progress > 0);
        if (f->bar)
            lors_event_tee_add(&f->tee, lors_progress_event, f->bar);
    }
    return LORS_EXIT_OK;
}

lors_event_fn lors_cli_feed_fn(const lors_cli_feed_t *f)
{
    return f->tee.n ? lors_event_tee_call : NULL;
}

void lors_cli_feed_close(lors_cli_feed_t *f)
{
    lors_progress_finish(f->bar);
    lors_evstream_close(f->es);
    f->bar = NULL;
    f->es = NULL;
    f->tee.n = 0;
}

/* ---- output ---- */

void lors_cli_human(int64_t bytes, char *buf, size_t size)
{
    static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = (double)bytes;
    int u = 0;
    if (bytes < 1024) {
        snprintf(buf, size, "%lldB", (long long)bytes);
        return;
    }
    while (v >= 1024 && u < 6) {
        v /= 1024;
        u++;
    }
    snprintf(buf, size, v < 10 ? "%.1f%s" : "%.0f%s", v, unit[u]);
}

void lors_cli_mapping_depot(const xnd_mapping_t *m, char *buf, size_t size)
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
