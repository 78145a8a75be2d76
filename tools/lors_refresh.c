/* lors_refresh.c -- lors_refresh: extend the lifetime of a network file's allocations.
 *
 * A thin front end over lors_refresh() (lors.h).  Each mapping is changed on its depot and
 * its end in the exNode is set to what the depot then reports, so the exNode never claims
 * more time than the depot granted.  The exNode is written when at least the refresh ran,
 * also when some mappings failed: those that succeeded have new ends worth keeping.  Each
 * failure is one line on stderr naming the mapping, its depot and why; the exit code is 8.
 * --events writes BEGIN, the exNode as read (MAPPING lines), one REFRESH or FAILURE per
 * mapping as its depot answers, and END with the exit code (docs/events.md).
 */
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lns_time.h"
#include "lors.h"
#include "tool.h"

static const char *TOOL = "lors_refresh";

static void usage(FILE *f)
{
    fprintf(f,
"Usage: lors_refresh [options] EXNODE\n"
"Extend the lifetime of every allocation of a network file, and record the new expiry\n"
"times in its exNode.\n"
"\n"
"  -f, --file EXNODE       the exNode (or give it as the argument; - reads stdin)\n"
"  -o, --output FILE       write the result here (default: rewrite EXNODE in place;\n"
"                          from stdin: stdout)\n"
"  -d, --extend T          each mapping's expiry + T (s, m, h, d)\n"
"  -s, --from-now T        expiry = now + T\n"
"  -a, --at TIME           expiry = TIME: \"YYYY-MM-DD HH:MM:SS\" (UTC) or seconds since\n"
"                          the epoch\n"
"  -m, --max               as long as each depot allows (the default)\n"
"  -t, --threads N         parallel depot calls (default 4)\n"
"  -T, --timeout T         longest wait of any one depot call (default 30s)\n"
"  -V, --verbose           print each mapping's old and new expiry\n"
"      --events FILE|fd:N  write the event stream (docs/events.md): BEGIN, MAPPING per\n"
"                          mapping, REFRESH or FAILURE per mapping, END; -D, --demo: fd:2\n"
"      --rc FILE           the rc file (default $LNS_RC, else ~/.xndrc); --no-rc: none\n"
"      --help, --version\n"
"\n"
"Exit: 0 ok, 2 usage, 3 exNode, 4 local I/O (also the events file), 8 some\n"
"mappings could not be extended (each is named on stderr; the others were),\n"
"9 internal.  See lors_refresh(1).\n");
}

enum { OPT_EVENTS = 256, OPT_RC, OPT_NO_RC, OPT_HELP, OPT_VERSION };

static const struct option longopts[] = {
    {"file", required_argument, NULL, 'f'},
    {"output", required_argument, NULL, 'o'},
    {"extend", required_argument, NULL, 'd'},
    {"from-now", required_argument, NULL, 's'},
    {"at", required_argument, NULL, 'a'},
    {"max", no_argument, NULL, 'm'},
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
    int mode, nmodes, verbose, no_rc, threads;
    int64_t value, timeout;
} flags_t;

static int set_mode(flags_t *f, int mode)
{
    if (f->nmodes++ && f->mode != mode)
        return tool_usage(TOOL, "-d, -s, -a and -m are alternatives: give one");
    f->mode = mode;
    return TOOL_EXIT_OK;
}

static int parse_flags(int argc, char **argv, flags_t *f)
{
    int c, code = 0;
    memset(f, 0, sizeof *f);
    f->threads = -1;
    f->timeout = -1;
    opterr = 0;
    while ((c = getopt_long_only(argc, argv, ":f:o:d:s:a:mt:T:VD", longopts, NULL)) != -1) {
        switch (c) {
        case 'f': f->file = optarg; break;
        case 'o': f->output = optarg; break;
        case 'd':
        case 's':
            if (tool_seconds(TOOL, c == 'd' ? "-d" : "-s", optarg, &f->value) < 0)
                return TOOL_EXIT_USAGE;
            if (f->value == 0)
                return tool_usage(TOOL, "-%c %s: give a time longer than 0", c, optarg);
            code = set_mode(f, c == 'd' ? LORS_REFRESH_ADD : LORS_REFRESH_FROM_NOW);
            break;
        case 'a':
            if (xnd_time_parse(optarg, &f->value) < 0)
                return tool_usage(TOOL, "-a %s: expected \"YYYY-MM-DD HH:MM:SS\" (UTC) or "
                                      "seconds since the epoch", optarg);
            code = set_mode(f, LORS_REFRESH_AT);
            break;
        case 'm': code = set_mode(f, LORS_REFRESH_MAX); break;
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
        if (code)
            return code;
    }
    if (!f->nmodes)
        f->mode = LORS_REFRESH_MAX;
    return TOOL_EXIT_OK;
}

static void fmt_time(int64_t t, char *buf, size_t size)
{
    if (t == XND_TIME_UNKNOWN || t <= 0)
        snprintf(buf, size, "-");
    else
        xnd_time_format(t, buf, size);
}

/* The event stream's BEGIN line: what this refresh is, for a reader that sees nothing else. */
static void begin_line(tool_events_t *es, const char *path, const xnd_t *x,
                       const lors_refresh_opts_t *ro)
{
    static const char *const mode[] = {"-", "extend", "from-now", "at", "max"};
    char file[3 * 4096];
    tool_events_encode(path, file, sizeof file);
    tool_events_printf(es, "BEGIN", "op=refresh exnode=%s size=%" PRId64 " mappings=%zu "
                         "mode=%s value=%" PRId64, file, xnd_size(x), x->nmaps,
                         mode[ro->mode >= LORS_REFRESH_ADD && ro->mode <= LORS_REFRESH_MAX
                                  ? ro->mode : 0],
                         ro->mode == LORS_REFRESH_MAX ? -1 : ro->value);
}

int main(int argc, char **argv)
{
    flags_t f;
    tool_rc_t rc;
    tool_feed_t feed;
    lors_refresh_opts_t ro;
    lors_refresh_report_t rep;
    xnd_t *x = NULL;
    int code, lrc, rc_loaded = 0;
    char (*where)[IBP_MAX_HOST + 96] = NULL;
    int64_t bytes = 0, start;
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
    where = calloc(x->nmaps ? x->nmaps : 1, sizeof *where);
    if (!where) {
        tool_error(TOOL, "out of memory");
        code = TOOL_EXIT_INTERNAL;
        goto done;
    }
    for (size_t i = 0; i < x->nmaps; i++)
        tool_mapping_depot(x->maps[i], where[i], sizeof where[i]);

    lors_refresh_opts_init(&ro);
    ro.mode = (lors_refresh_mode)f.mode;
    ro.value = f.value;
    ro.threads = f.threads > 0 ? f.threads : rc.threads > 0 ? rc.threads : ro.threads;
    ro.timeout_s = f.timeout > 0 ? (int)f.timeout : rc.timeout_s > 0 ? rc.timeout_s
                                                                     : ro.timeout_s;
    if (!f.verbose && rc.verbose > 0)
        f.verbose = 1;
    code = tool_feed_open(TOOL, &feed, f.events, "refresh", -1, -1);
    if (code)
        goto done;
    ro.on_event = tool_feed_fn(&feed);
    ro.event_arg = &feed.tee;
    if (feed.es) {
        begin_line(feed.es, path, x, &ro);
        tool_events_mappings(feed.es, x);
    }

    start = lns_mono_ns();
    lrc = lors_refresh(&ro, x, &rep);
    secs = (double)(lns_mono_ns() - start) / 1e9;
    for (size_t i = 0; i < rep.n; i++)
        if (rep.items[i].ok && (size_t)rep.items[i].mapping < x->nmaps)
            bytes += x->maps[rep.items[i].mapping]->logical_length;
    if (lrc != LORS_OK && lrc != LORS_E_PARTIAL) {
        tool_error(TOOL, "%s: %s", path, rep.error[0] ? rep.error : lors_strerror(lrc));
        code = tool_exit_code(lrc);
        goto done;
    }
    code = tool_write_exnode(TOOL, x, out);
    if (code)
        goto done;
    for (size_t i = 0; i < rep.n; i++) {
        const lors_refresh_item_t *it = &rep.items[i];
        const char *dep = it->mapping >= 0 && (size_t)it->mapping < x->nmaps
                              ? where[it->mapping] : "-";
        char t0[32], t1[32];
        fmt_time(it->old_end, t0, sizeof t0);
        fmt_time(it->new_end, t1, sizeof t1);
        if (!it->ok)
            tool_error(TOOL, "mapping %d (%s): not extended: %s", it->mapping, dep,
                           it->why[0] ? it->why : ibp_strerror(it->ibp_err));
        else if (f.verbose)
            fprintf(stderr, "%s: mapping %d (%s): %s -> %s\n", TOOL, it->mapping, dep, t0, t1);
    }
    code = lrc == LORS_E_PARTIAL ? TOOL_EXIT_PARTIAL : TOOL_EXIT_OK;

done:
    if (feed.es)
        tool_events_printf(feed.es, "END", "bytes=%" PRId64 " seconds=%.3f rc=%d", bytes,
                             secs, code);
    tool_feed_close(&feed);
    lors_refresh_report_free(&rep);
    xnd_free(x);
    free(where);
    if (rc_loaded)
        tool_rc_free(&rc);
    return code;
}
