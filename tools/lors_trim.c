/* lors_trim.c -- lors_trim: remove mappings from a network file, and optionally free them.
 *
 * A thin front end over lors_trim() (lors.h).  The selection is -m numbers, --depot depots
 * and -u (dead ones), united as the library defines.  Safety comes from the library: unless
 * --force, a trim that would leave some byte with no copy at all is refused and the exNode is
 * not touched (not even rewritten).  With -d the exNode is written even when some DECRs
 * fail, since the mappings are gone from it either way; the failures are listed and the exit
 * code is 8.  --events writes BEGIN, the exNode as read (MAPPING lines), one TRIM per removed
 * mapping as the library reports it, and END with the exit code (docs/events.md).
 */
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lns_time.h"
#include "lors.h"
#include "tool.h"

static const char *TOOL = "lors_trim";

#define MAX_DEPOTS 64
#define MAX_RANGES 1024

static void usage(FILE *f)
{
    fprintf(f,
"Usage: lors_trim [options] EXNODE\n"
"Remove mappings (copies) from a network file's exNode; with -d also free their storage.\n"
"\n"
"  -f, --file EXNODE       the exNode (or give it as the argument; - reads stdin)\n"
"  -o, --output FILE       write the result here (default: rewrite EXNODE in place;\n"
"                          from stdin: stdout)\n"
"  -m, --mappings LIST     these mapping numbers, as lors_ls shows them: \"0,3,5-7\"\n"
"      --depot H:P[/RID]   every mapping on this depot (repeatable)\n"
"  -u, --dead              only mappings whose depot or allocation is gone (alone: all\n"
"                          of those)\n"
"  -d, --free              also free the allocations (DECR of the read count)\n"
"  -n, --exnode-only       only edit the exNode (the default)\n"
"      --force             remove even if some bytes are left with no copy at all\n"
"  -t, --threads N         parallel depot calls (default 4)\n"
"  -T, --timeout T         longest wait of any one depot call (default 30s)\n"
"  -V, --verbose           print the numbers of the removed mappings\n"
"      --events FILE|fd:N  write the event stream (docs/events.md): BEGIN, MAPPING per\n"
"                          mapping, TRIM per removed one, END; -D, --demo: fd:2\n"
"      --rc FILE           the rc file (default $LNS_RC, else ~/.xndrc); --no-rc: none\n"
"      --help, --version\n"
"\n"
"Exit: 0 ok, 2 usage, 3 exNode, 4 local I/O (also the events file), 6 the trim\n"
"would leave bytes with no copy (nothing changed), 8 removed but some allocations\n"
"could not be freed, 9 internal.  See lors_trim(1).\n");
}

enum { OPT_DEPOT = 256, OPT_FORCE, OPT_EVENTS, OPT_RC, OPT_NO_RC, OPT_HELP, OPT_VERSION };

static const struct option longopts[] = {
    {"file", required_argument, NULL, 'f'},
    {"output", required_argument, NULL, 'o'},
    {"mappings", required_argument, NULL, 'm'},
    {"depot", required_argument, NULL, OPT_DEPOT},
    {"dead", no_argument, NULL, 'u'},
    {"free", no_argument, NULL, 'd'},
    {"exnode-only", no_argument, NULL, 'n'},
    {"force", no_argument, NULL, OPT_FORCE},
    {"threads", required_argument, NULL, 't'},
    {"timeout", required_argument, NULL, 'T'},
    {"verbose", no_argument, NULL, 'V'},
    {"events", required_argument, NULL, OPT_EVENTS},
    {"demo", no_argument, NULL, 'D'},
    {"rc", required_argument, NULL, OPT_RC},
    {"no-rc", no_argument, NULL, OPT_NO_RC},
    {"help", no_argument, NULL, OPT_HELP},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

typedef struct flags {
    const char *file, *output, *rc, *events;
    int ranges[MAX_RANGES][2]; /* -m: inclusive [lo, hi] */
    size_t nranges;
    lors_depot_t depots[MAX_DEPOTS];
    size_t ndepots;
    int dead, free_allocs, exnode_only, force, verbose, no_rc, threads;
    int64_t timeout;
} flags_t;

/* "0,3,5-7" into f->ranges.  Checked against the exNode's size later, once it is read. */
static int parse_list(flags_t *f, const char *s)
{
    const char *p = s;
    while (*p) {
        char *end;
        long lo, hi;
        if (*p < '0' || *p > '9')
            goto bad;
        lo = strtol(p, &end, 10);
        hi = lo;
        if (*end == '-') {
            if (end[1] < '0' || end[1] > '9')
                goto bad;
            hi = strtol(end + 1, &end, 10);
        }
        if (lo > INT_MAX || hi > INT_MAX || hi < lo)
            goto bad;
        if (f->nranges == MAX_RANGES)
            return tool_usage(TOOL, "-m: more than %d numbers or ranges", MAX_RANGES);
        f->ranges[f->nranges][0] = (int)lo;
        f->ranges[f->nranges][1] = (int)hi;
        f->nranges++;
        if (*end == ',' && end[1])
            end++;
        else if (*end)
            goto bad;
        p = end;
    }
    if (p == s)
        goto bad;
    return TOOL_EXIT_OK;
bad:
    return tool_usage(TOOL, "-m %s: expected mapping numbers like 0,3,5-7", s);
}

static int parse_flags(int argc, char **argv, flags_t *f)
{
    int c, code;
    memset(f, 0, sizeof *f);
    f->threads = -1;
    f->timeout = -1;
    opterr = 0;
    while ((c = getopt_long_only(argc, argv, ":f:o:m:udnt:T:VD", longopts, NULL)) != -1) {
        switch (c) {
        case 'f': f->file = optarg; break;
        case 'o': f->output = optarg; break;
        case 'm':
            if ((code = parse_list(f, optarg)) != 0)
                return code;
            break;
        case OPT_DEPOT:
            if (f->ndepots == MAX_DEPOTS)
                return tool_usage(TOOL, "--depot: at most %d", MAX_DEPOTS);
            if (lors_depot_parse(optarg, &f->depots[f->ndepots]) != LORS_OK)
                return tool_usage(TOOL, "--depot %s: expected host[:port][/rid]", optarg);
            f->ndepots++;
            break;
        case 'u': f->dead = 1; break;
        case 'd': f->free_allocs = 1; break;
        case 'n': f->exnode_only = 1; break;
        case OPT_FORCE: f->force = 1; break;
        case 't':
            if (tool_int(TOOL, "-t", optarg, 1, 256, &f->threads) < 0)
                return TOOL_EXIT_USAGE;
            break;
        case 'T':
            if (tool_timeout(TOOL, optarg, &f->timeout) < 0)
                return TOOL_EXIT_USAGE;
            break;
        case 'V': f->verbose = 1; break;
        case OPT_EVENTS: f->events = optarg; break;
        case 'D': f->events = "fd:2"; break;
        case OPT_RC: f->rc = optarg; break;
        case OPT_NO_RC: f->no_rc = 1; break;
        case OPT_HELP: usage(stdout); exit(TOOL_EXIT_OK);
        case OPT_VERSION: tool_version(TOOL); exit(TOOL_EXIT_OK);
        case ':': return tool_usage(TOOL, "%s needs a value", argv[optind - 1]);
        default: return tool_usage(TOOL, "unknown option %s", argv[optind - 1]);
        }
    }
    if (f->free_allocs && f->exnode_only)
        return tool_usage(TOOL, "-d frees the allocations, -n only edits the exNode: "
                              "choose one");
    if (!f->nranges && !f->ndepots && !f->dead)
        return tool_usage(TOOL, "nothing to remove: give -m, --depot or -u");
    return TOOL_EXIT_OK;
}

/* The -m ranges as a sorted list of distinct numbers, each checked against the exNode. */
static int expand_list(const flags_t *f, const xnd_t *x, int **out, size_t *n)
{
    unsigned char *sel;
    *out = NULL;
    *n = 0;
    for (size_t i = 0; i < f->nranges; i++)
        if ((size_t)f->ranges[i][1] >= x->nmaps) {
            if (x->nmaps == 0)
                return tool_usage(TOOL, "-m %d: the exNode has no mappings",
                                      f->ranges[i][1]);
            return tool_usage(TOOL, "-m %d: the exNode has %zu mappings (0-%zu)",
                                  f->ranges[i][1], x->nmaps, x->nmaps - 1);
        }
    if (!f->nranges)
        return TOOL_EXIT_OK;
    sel = calloc(x->nmaps, 1);
    *out = malloc(x->nmaps * sizeof **out);
    if (!sel || !*out) {
        free(sel);
        free(*out);
        *out = NULL;
        tool_error(TOOL, "out of memory");
        return TOOL_EXIT_INTERNAL;
    }
    for (size_t i = 0; i < f->nranges; i++)
        for (int k = f->ranges[i][0]; k <= f->ranges[i][1]; k++)
            sel[k] = 1;
    for (size_t k = 0; k < x->nmaps; k++)
        if (sel[k])
            (*out)[(*n)++] = (int)k;
    free(sel);
    return TOOL_EXIT_OK;
}

/* The event stream's BEGIN line: what this trim is, for a reader that sees nothing else. */
static void begin_line(tool_events_t *es, const char *path, const xnd_t *x,
                       const lors_trim_opts_t *to)
{
    char file[3 * 4096];
    tool_events_encode(path, file, sizeof file);
    tool_events_printf(es, "BEGIN", "op=trim exnode=%s size=%" PRId64 " mappings=%zu "
                         "selected=%zu depots=%zu dead=%d free=%d force=%d", file, xnd_size(x),
                         x->nmaps, to->nmappings, to->ndepots, to->dead, to->free_allocs,
                         to->force);
}

/* The bytes the removed mappings held (what END calls the bytes the trim handled). */
static int64_t removed_bytes(const lors_trim_report_t *rep, const int64_t *len)
{
    int64_t n = 0;
    for (size_t i = 0; i < rep->nremoved; i++)
        n += len[rep->removed[i]];
    return n;
}

int main(int argc, char **argv)
{
    flags_t f;
    tool_rc_t rc;
    tool_feed_t feed;
    lors_trim_opts_t to;
    lors_trim_report_t rep;
    xnd_t *x = NULL;
    int *nums = NULL, code, lrc, rc_loaded = 0;
    size_t nnums = 0;
    char (*where)[IBP_MAX_HOST + 96] = NULL;
    int64_t *len = NULL, t0;
    double secs = 0;
    const char *path, *out;

    signal(SIGPIPE, SIG_IGN); /* a reader of the exNode that went away: EPIPE, exit 4 */
    memset(&rep, 0, sizeof rep);
    memset(&feed, 0, sizeof feed);
    code = parse_flags(argc, argv, &f);
    if (code)
        return code;
    code = tool_open_exnode(TOOL, f.file, argc, argv, optind, f.rc, f.no_rc, &path, &rc, &x);
    if (code)
        return code;
    rc_loaded = 1;
    out = f.output ? f.output : path;
    code = expand_list(&f, x, &nums, &nnums);
    if (code)
        goto done;
    /* the depots and lengths of the mappings, taken before they leave the exNode, for the
     * messages and the END line */
    where = calloc(x->nmaps ? x->nmaps : 1, sizeof *where);
    len = calloc(x->nmaps ? x->nmaps : 1, sizeof *len);
    if (!where || !len) {
        tool_error(TOOL, "out of memory");
        code = TOOL_EXIT_INTERNAL;
        goto done;
    }
    for (size_t i = 0; i < x->nmaps; i++) {
        tool_mapping_depot(x->maps[i], where[i], sizeof where[i]);
        len[i] = x->maps[i]->logical_length;
    }

    lors_trim_opts_init(&to);
    to.mappings = nums;
    to.nmappings = nnums;
    to.depots = f.depots;
    to.ndepots = f.ndepots;
    to.dead = f.dead;
    to.free_allocs = f.free_allocs;
    to.force = f.force;
    to.threads = f.threads > 0 ? f.threads : rc.threads > 0 ? rc.threads : to.threads;
    to.timeout_s = f.timeout > 0 ? (int)f.timeout : rc.timeout_s > 0 ? rc.timeout_s
                                                                     : to.timeout_s;
    if (!f.verbose && rc.verbose > 0)
        f.verbose = 1;
    code = tool_feed_open(TOOL, &feed, f.events, "trim", -1, -1);
    if (code)
        goto done;
    to.on_event = tool_feed_fn(&feed);
    to.event_arg = &feed.tee;
    if (feed.es) {
        begin_line(feed.es, path, x, &to);
        tool_events_mappings(feed.es, x);
    }

    t0 = lns_mono_ns();
    lrc = lors_trim(&to, x, &rep);
    secs = (double)(lns_mono_ns() - t0) / 1e9;
    if (lrc != LORS_OK && lrc != LORS_E_PARTIAL) {
        tool_error(TOOL, "%s: %s", path, rep.error[0] ? rep.error : lors_strerror(lrc));
        code = tool_exit_code(lrc);
        goto done;
    }
    /* nothing removed and the output is the input file: leave the file alone */
    if (rep.nremoved > 0 || f.output || strcmp(out, "-") == 0) {
        code = tool_write_exnode(TOOL, x, out);
        if (code)
            goto done;
    }
    for (size_t i = 0; i < rep.nunfreed; i++) {
        int k = rep.unfreed[i];
        tool_error(TOOL, "mapping %d (%s): removed from the exNode, but its allocation "
                       "could not be freed", k, k >= 0 && (size_t)k < x->nmaps + rep.nremoved
                                                    ? where[k] : "-");
    }
    if (f.verbose) {
        fprintf(stderr, "%s: removed%s:", TOOL, f.free_allocs ? " and freed" : "");
        for (size_t i = 0; i < rep.nremoved; i++)
            fprintf(stderr, " %d", rep.removed[i]);
        fprintf(stderr, "%s\n", rep.nremoved ? "" : " none");
    }
    code = lrc == LORS_E_PARTIAL ? TOOL_EXIT_PARTIAL : TOOL_EXIT_OK;

done:
    if (feed.es)
        tool_events_printf(feed.es, "END", "bytes=%" PRId64 " seconds=%.3f rc=%d",
                             len ? removed_bytes(&rep, len) : 0, secs, code);
    tool_feed_close(&feed);
    lors_trim_report_free(&rep);
    xnd_free(x);
    free(nums);
    free(where);
    free(len);
    if (rc_loaded)
        tool_rc_free(&rc);
    return code;
}
