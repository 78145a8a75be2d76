/* lors_augment.c -- lors_augment: more copies of a network file, copied depot to depot.
 *
 * A thin front end over lors_augment() (lors.h): settings come from the defaults, then the
 * rc file, then the flags; the exNode is read whole, augmented in memory and written back
 * atomically only when every new copy is complete, so a failed run leaves the file as it
 * was.  Where a depot could not SEND and the bytes went through this client instead, that
 * is said on stderr even without -V: the user pays for that bandwidth and must know.
 */
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lors.h"
#include "tool_lbone.h"
#include "tool.h"

static const char *TOOL = "lors_augment";

static void usage(FILE *f)
{
    fprintf(f,
"Usage: lors_augment [options] EXNODE\n"
"Add copies of a network file's data on more depots.  The bytes go depot to depot (IBP\n"
"SEND); where that fails they are relayed through this client and the tool says so.\n"
"\n"
"  -f, --file EXNODE       the exNode (or give it as the argument; - reads stdin)\n"
"  -o, --output FILE       write the result here (default: rewrite EXNODE in place;\n"
"                          from stdin: stdout)\n"
"  -n, --new-only          write only the new copies to -o (which is then required)\n"
"  -B, --balance           add copies only where fewer than -c live copies exist\n"
"  -c, --copies N          copies to add, default 1 (with -B: live copies wanted,\n"
"                          default the rc file's COPIES, else 1)\n"
"      --depot-list LIST   depots for the new copies: \"host[:port][/rid], ...\"\n"
"                          (else the L-Bone, or DEPOT in the rc file)\n"
"  -m, --max-depots N      use at most N depots (from the L-Bone: ask for N; default\n"
"                          MAXDEPOTS of the rc file, else 6)\n"
"  -d, --duration T        lifetime of the new copies (s, m, h, d; -1 or max: each\n"
"                          depot's maximum), default 1d\n"
"  -s, --soft / -h, --hard soft or hard storage (default hard)\n"
"  -t, --threads N         parallel depot calls (default 4)\n"
"  -T, --timeout T         longest wait of any one depot call (default 3m)\n"
"  -O, --offset N          only the pieces holding bytes from N on (K, M, G, T)\n"
"  -L, --length N          ... and before N + this\n"
"      --no-relay          fail a piece whose SEND fails instead of copying it through\n"
"                          this client\n"
"  -V, --verbose           print a report at the end\n"
"      --events FILE|fd:N  write the event stream (docs/events.md); -D, --demo: fd:2\n"
"      --progress          draw the progress bar even when stderr is not a terminal\n"
"  -q, --quiet             print nothing but errors\n"
"  -H, --lbone URL         the L-Bone: http://host:port, host:port or host (also\n"
"                          --lbone-host); else the rc file's LBONE_SERVER lines, in order\n"
"  -P, --lbone-port P      its port when -H names none (default 6767)\n"
"  -l, --location L        new copies nearest to L: \"airport= TYS\", \"zip= 37996\",\n"
"                          \"lat,lon\", \"city= Knoxville state= TN\"... (rc LOCATION)\n"
"      --rc FILE           the rc file (default $LNS_RC, else ~/.xndrc); --no-rc: none\n"
"      --help, --version\n"
"\n"
"Exit: 0 ok, 2 usage, 3 exNode, 4 local I/O, 5 depots, 6 no live copy of some bytes,\n"
"9 internal.  See lors_augment(1).\n");
}

enum { OPT_DEPOTS = 256, OPT_NO_RELAY, OPT_EVENTS, OPT_PROGRESS, OPT_RC, OPT_NO_RC, OPT_HELP,
       OPT_VERSION };

static const struct option longopts[] = {
    {"file", required_argument, NULL, 'f'},
    {"output", required_argument, NULL, 'o'},
    {"new-only", no_argument, NULL, 'n'},
    {"balance", no_argument, NULL, 'B'},
    {"copies", required_argument, NULL, 'c'},
    {"depot-list", required_argument, NULL, OPT_DEPOTS},
    {"duration", required_argument, NULL, 'd'},
    {"soft", no_argument, NULL, 's'},
    {"hard", no_argument, NULL, 'h'},
    {"threads", required_argument, NULL, 't'},
    {"timeout", required_argument, NULL, 'T'},
    {"offset", required_argument, NULL, 'O'},
    {"length", required_argument, NULL, 'L'},
    {"no-relay", no_argument, NULL, OPT_NO_RELAY},
    {"verbose", no_argument, NULL, 'V'},
    {"events", required_argument, NULL, OPT_EVENTS},
    {"demo", no_argument, NULL, 'D'},
    {"progress", no_argument, NULL, OPT_PROGRESS},
    {"quiet", no_argument, NULL, 'q'},
    {"max-depots", required_argument, NULL, 'm'},
    {"lbone", required_argument, NULL, 'H'},
    {"lbone-host", required_argument, NULL, 'H'},
    {"lbone-port", required_argument, NULL, 'P'},
    {"location", required_argument, NULL, 'l'},
    {"rc", required_argument, NULL, OPT_RC},
    {"no-rc", no_argument, NULL, OPT_NO_RC},
    {"help", no_argument, NULL, OPT_HELP},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

/* What the flags said; -1 / NULL = not given (then the rc file, then the default). */
typedef struct flags {
    const char *file, *output, *depots, *events, *rc;
    tool_lbone_opts_t lb;   /* -H/--lbone, -P, -l, -m */
    int new_only, balance, no_relay, verbose, quiet, progress, no_rc;
    int copies, threads, reliability, maxdepots;
    int64_t duration, timeout, offset, length;
} flags_t;

static int parse_flags(int argc, char **argv, flags_t *f)
{
    int c, port;
    memset(f, 0, sizeof *f);
    f->copies = f->threads = f->reliability = f->maxdepots = -1;
    f->duration = f->timeout = f->offset = f->length = -2;
    opterr = 0;
    while ((c = getopt_long_only(argc, argv, ":f:o:nBc:d:sht:T:O:L:VDqH:P:l:m:", longopts,
                                 NULL)) != -1) {
        switch (c) {
        case 'f': f->file = optarg; break;
        case 'o': f->output = optarg; break;
        case 'n': f->new_only = 1; break;
        case 'B': f->balance = 1; break;
        case 'c':
            if (tool_int(TOOL, "-c", optarg, 1, 64, &f->copies) < 0)
                return TOOL_EXIT_USAGE;
            break;
        case OPT_DEPOTS: f->depots = optarg; break;
        case 'd':
            if (tool_duration(TOOL, "-d", optarg, &f->duration) < 0)
                return TOOL_EXIT_USAGE;
            break;
        case 's': f->reliability = IBP_SOFT; break;
        case 'h': f->reliability = IBP_HARD; break;
        case 't':
            if (tool_int(TOOL, "-t", optarg, 1, 256, &f->threads) < 0)
                return TOOL_EXIT_USAGE;
            break;
        case 'T':
            if (tool_timeout(TOOL, optarg, &f->timeout) < 0)
                return TOOL_EXIT_USAGE;
            break;
        case 'O':
            if (tool_size(TOOL, "-O", optarg, &f->offset) < 0)
                return TOOL_EXIT_USAGE;
            break;
        case 'L':
            if (tool_size(TOOL, "-L", optarg, &f->length) < 0)
                return TOOL_EXIT_USAGE;
            break;
        case OPT_NO_RELAY: f->no_relay = 1; break;
        case 'V': f->verbose = 1; break;
        case OPT_EVENTS: f->events = optarg; break;
        case 'D': f->events = "fd:2"; break;
        case OPT_PROGRESS: f->progress = 1; break;
        case 'q': f->quiet = 1; break;
        case 'H':
            f->lb.server = optarg;
            f->lb.asked = 1;
            break;
        case 'l':
            f->lb.location = optarg;
            f->lb.asked = 1;
            break;
        case 'P':
            if (tool_int(TOOL, "-P", optarg, 1, 65535, &port) < 0)
                return TOOL_EXIT_USAGE;
            f->lb.port = port;
            f->lb.asked = 1;
            break;
        case 'm':
            if (tool_int(TOOL, "-m", optarg, 1, 1000000, &f->maxdepots) < 0)
                return TOOL_EXIT_USAGE;
            f->lb.count = f->maxdepots;
            break;
        case OPT_RC: f->rc = optarg; break;
        case OPT_NO_RC: f->no_rc = 1; break;
        case OPT_HELP: usage(stdout); exit(TOOL_EXIT_OK);
        case OPT_VERSION: tool_version(TOOL); exit(TOOL_EXIT_OK);
        case ':': return tool_usage(TOOL, "%s needs a value", argv[optind - 1]);
        default: return tool_usage(TOOL, "unknown option %s", argv[optind - 1]);
        }
    }
    if (f->new_only && !f->output)
        return tool_usage(TOOL, "-n writes only the new copies: give -o FILE for them");
    return TOOL_EXIT_OK;
}

/* One line per piece that did not go depot to depot, or whose copy moved elsewhere. */
static void print_issues(const lors_report_t *rep)
{
    for (size_t i = 0; i < rep->nissues; i++) {
        const lors_issue_t *is = &rep->issues[i];
        char from[IBP_MAX_HOST + IBP_MAX_RID + 16], to[IBP_MAX_HOST + IBP_MAX_RID + 16];
        lors_depot_format(&is->depot, from, sizeof from);
        lors_depot_format(&is->moved_to, to, sizeof to);
        long long a = (long long)is->offset, b = (long long)(is->offset + is->length - 1);
        if (is->relayed)
            tool_error(TOOL, "piece %d (bytes %lld-%lld): %s from %s to %s failed (%s); "
                           "relayed through this client", is->fragment, a, b, is->op, from, to,
                           ibp_strerror(is->ibp_err));
        else if (is->moved)
            tool_error(TOOL, "piece %d (bytes %lld-%lld): %s on %s failed (%s); the copy "
                           "went to %s", is->fragment, a, b, is->op, from,
                           ibp_strerror(is->ibp_err), to);
        else
            tool_error(TOOL, "piece %d (bytes %lld-%lld): %s on %s failed (%s); no depot "
                           "left for it", is->fragment, a, b, is->op, from,
                           ibp_strerror(is->ibp_err));
    }
}

/* The event stream's BEGIN line: what this augment is, for a reader that sees nothing else. */
static void begin_line(tool_events_t *es, const char *path, const lors_augment_opts_t *ao)
{
    char file[3 * 4096], list[4096] = "", d[IBP_MAX_HOST + IBP_MAX_RID + 16];
    char enc[3 * sizeof list];
    if (!es)
        return;
    tool_events_encode(path, file, sizeof file);
    for (size_t i = 0; i < ao->up.ndepots && strlen(list) + sizeof d + 2 < sizeof list; i++) {
        lors_depot_format(&ao->up.depots[i], d, sizeof d);
        if (i)
            strcat(list, ",");
        strcat(list, d);
    }
    tool_events_encode(list, enc, sizeof enc);
    tool_events_printf(es, "BEGIN", "op=augment exnode=%s copies=%d balance=%d offset=%" PRId64
                         " length=%" PRId64 " relay=%d depots=%s", file, ao->up.copies,
                         ao->balance, ao->offset, ao->length, ao->relay, enc);
}

/* The depots for the new copies; from the L-Bone, with room for pieces as large as the
 * largest mapping. */
static int pick_depots(const flags_t *f, const tool_rc_t *rc, lors_augment_opts_t *ao,
                       const xnd_t *x, lors_depot_t **depots, size_t *ndepots)
{
    tool_lbone_need_t need = {0, 0, ao->up.reliability, ao->up.duration_s};
    for (size_t i = 0; i < x->nmaps; i++)
        if (x->maps[i]->logical_length > need.unit)
            need.unit = x->maps[i]->logical_length;
    int64_t size = xnd_size(x);
    if (need.unit > 0)
        need.units = (size > 0 ? (size + need.unit - 1) / need.unit : 1) * ao->up.copies;
    int code = tool_lbone_depots(TOOL, f->depots, rc, &f->lb, &need, ao->up.copies,
                                 f->verbose && !f->quiet, depots, ndepots);
    if (code)
        return code;
    int maxd = f->maxdepots > 0 ? f->maxdepots : rc->maxdepots > 0 ? rc->maxdepots : 0;
    ao->up.depots = *depots;
    ao->up.ndepots = maxd > 0 && (size_t)maxd < *ndepots ? (size_t)maxd : *ndepots;
    return TOOL_EXIT_OK;
}

int main(int argc, char **argv)
{
    flags_t f;
    tool_rc_t rc;
    tool_feed_t feed;
    lors_augment_opts_t ao;
    lors_report_t rep;
    lors_depot_t *depots = NULL;
    size_t ndepots = 0;
    xnd_t *x = NULL, *added = NULL;
    int code, lrc, rc_loaded = 0;
    const char *path, *out;

    signal(SIGPIPE, SIG_IGN); /* a reader of the exNode that went away: EPIPE, exit 4 */
    memset(&rep, 0, sizeof rep);
    memset(&feed, 0, sizeof feed);
    code = parse_flags(argc, argv, &f);
    if (code)
        return code;
    path = tool_exnode_arg(TOOL, f.file, argc, argv, optind);
    if (!path)
        return TOOL_EXIT_USAGE;
    out = f.output ? f.output : path;
    code = tool_rc(TOOL, f.rc, f.no_rc, &rc);
    if (code)
        return code;
    rc_loaded = 1;

    lors_augment_opts_init(&ao);
    /* rc COPIES is how many copies a file should have: the target of -B, not a number of
     * copies to add on every run */
    ao.up.copies = f.copies > 0 ? f.copies : f.balance && rc.copies > 0 ? rc.copies : 1;
    ao.up.duration_s = f.duration != -2 ? f.duration : rc.duration_s > 0 ? rc.duration_s
                                                                         : ao.up.duration_s;
    ao.up.reliability = f.reliability > 0 ? f.reliability
                        : rc.reliability > 0 ? rc.reliability : ao.up.reliability;
    ao.up.threads = f.threads > 0 ? f.threads : rc.threads > 0 ? rc.threads : ao.up.threads;
    ao.up.timeout_s = f.timeout > 0 ? (int)f.timeout
                      : rc.timeout_s > 0 ? rc.timeout_s : ao.up.timeout_s;
    ao.balance = f.balance;
    ao.offset = f.offset >= 0 ? f.offset : 0;
    ao.length = f.length >= 0 ? f.length : -1;
    ao.relay = !f.no_relay;
    if (!f.quiet && !f.verbose && rc.verbose > 0)
        f.verbose = 1;

    code = tool_read_exnode(TOOL, path, &x);
    if (code)
        goto done;
    code = pick_depots(&f, &rc, &ao, x, &depots, &ndepots);
    if (code)
        goto done;
    code = tool_feed_open(TOOL, &feed, f.events, "augment", -1,
                              f.quiet ? -1 : f.progress);
    if (code)
        goto done;
    ao.up.on_event = tool_feed_fn(&feed);
    ao.up.event_arg = &feed.tee;
    begin_line(feed.es, path, &ao);

    lrc = lors_augment(&ao, x, f.new_only ? &added : NULL, &rep);
    tool_progress_finish(feed.bar); /* end the bar's line before any message */
    feed.bar = NULL;
    if (!f.quiet)
        print_issues(&rep);
    if (lrc != LORS_OK) {
        tool_error(TOOL, "%s: %s", path, rep.error[0] ? rep.error : lors_strerror(lrc));
        code = tool_exit_code(lrc);
        goto done;
    }
    code = tool_write_exnode(TOOL, f.new_only ? added : x, out);
    if (code)
        goto done;
    if (f.verbose && !f.quiet)
        fprintf(stderr, "%s: %d new mapping%s; %" PRId64 " bytes copied depot to depot, %" PRId64
                " relayed through this client; %.2f s\n", TOOL, rep.mappings,
                rep.mappings == 1 ? "" : "s", rep.bytes_sent, rep.bytes_relayed, rep.seconds);

done:
    if (feed.es)
        tool_events_printf(feed.es, "END", "bytes=%" PRId64 " seconds=%.3f rc=%d",
                             rep.bytes_sent + rep.bytes_relayed, rep.seconds, code);
    tool_feed_close(&feed);
    lors_report_free(&rep);
    xnd_free(added);
    xnd_free(x);
    free(depots);
    if (rc_loaded)
        tool_rc_free(&rc);
    return code;
}
