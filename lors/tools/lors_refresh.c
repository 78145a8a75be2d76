/* lors_refresh.c -- lors_refresh: extend the lifetime of a network file's allocations.
 *
 * A thin front end over lors_refresh() (lors.h).  Each mapping is changed on its depot and
 * its end in the exNode is set to what the depot then reports, so the exNode never claims
 * more time than the depot granted.  The exNode is written when at least the refresh ran,
 * also when some mappings failed: those that succeeded have new ends worth keeping.  Each
 * failure is one line on stderr naming the mapping, its depot and why; the exit code is 8.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lors.h"
#include "lors_tool.h"

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
"      --rc FILE           the rc file (default $LNS_RC, else ~/.xndrc); --no-rc: none\n"
"      --help, --version\n"
"\n"
"Exit: 0 ok, 2 usage, 3 exNode, 4 local I/O, 8 some mappings could not be extended\n"
"(each is named on stderr; the others were), 9 internal.  See lors_refresh(1).\n");
}

enum { OPT_RC = 256, OPT_NO_RC, OPT_HELP, OPT_VERSION };

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
    {"rc", required_argument, NULL, OPT_RC},
    {"no-rc", no_argument, NULL, OPT_NO_RC},
    {"help", no_argument, NULL, OPT_HELP},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

typedef struct flags {
    const char *file, *output, *rc;
    int mode, nmodes, verbose, no_rc, threads;
    int64_t value, timeout;
} flags_t;

static int set_mode(flags_t *f, int mode)
{
    if (f->nmodes++ && f->mode != mode)
        return lors_cli_usage(TOOL, "-d, -s, -a and -m are alternatives: give one");
    f->mode = mode;
    return LORS_EXIT_OK;
}

static int parse_flags(int argc, char **argv, flags_t *f)
{
    int c, code = 0;
    memset(f, 0, sizeof *f);
    f->threads = -1;
    f->timeout = -1;
    opterr = 0;
    while ((c = getopt_long_only(argc, argv, ":f:o:d:s:a:mt:T:V", longopts, NULL)) != -1) {
        switch (c) {
        case 'f': f->file = optarg; break;
        case 'o': f->output = optarg; break;
        case 'd':
        case 's':
            if (lors_cli_seconds(TOOL, c == 'd' ? "-d" : "-s", optarg, &f->value) < 0)
                return LORS_EXIT_USAGE;
            if (f->value == 0)
                return lors_cli_usage(TOOL, "-%c %s: give a time longer than 0", c, optarg);
            code = set_mode(f, c == 'd' ? LORS_REFRESH_ADD : LORS_REFRESH_FROM_NOW);
            break;
        case 'a':
            if (xnd_time_parse(optarg, &f->value) < 0)
                return lors_cli_usage(TOOL, "-a %s: expected \"YYYY-MM-DD HH:MM:SS\" (UTC) or "
                                      "seconds since the epoch", optarg);
            code = set_mode(f, LORS_REFRESH_AT);
            break;
        case 'm': code = set_mode(f, LORS_REFRESH_MAX); break;
        case 't':
            if (lors_cli_int(TOOL, "-t", optarg, 1, 256, &f->threads) < 0)
                return LORS_EXIT_USAGE;
            break;
        case 'T':
            if (lors_cli_timeout(TOOL, optarg, &f->timeout) < 0)
                return LORS_EXIT_USAGE;
            break;
        case 'V': f->verbose = 1; break;
        case OPT_RC: f->rc = optarg; break;
        case OPT_NO_RC: f->no_rc = 1; break;
        case OPT_HELP: usage(stdout); exit(LORS_EXIT_OK);
        case OPT_VERSION: lors_cli_version(TOOL); exit(LORS_EXIT_OK);
        case ':': return lors_cli_usage(TOOL, "%s needs a value", argv[optind - 1]);
        default: return lors_cli_usage(TOOL, "unknown option %s", argv[optind - 1]);
        }
        if (code)
            return code;
    }
    if (!f->nmodes)
        f->mode = LORS_REFRESH_MAX;
    return LORS_EXIT_OK;
}

static void fmt_time(int64_t t, char *buf, size_t size)
{
    if (t == XND_TIME_UNKNOWN || t <= 0)
        snprintf(buf, size, "-");
    else
        xnd_time_format(t, buf, size);
}

int main(int argc, char **argv)
{
    flags_t f;
    lors_rc_t rc;
    lors_refresh_opts_t ro;
    lors_refresh_report_t rep;
    xnd_t *x = NULL;
    int code, lrc, rc_loaded = 0;
    char (*where)[IBP_MAX_HOST + 96] = NULL;
    const char *path, *out;

    signal(SIGPIPE, SIG_IGN); /* a reader of the exNode that went away: EPIPE, exit 4 */
    memset(&rep, 0, sizeof rep);
    code = parse_flags(argc, argv, &f);
    if (code)
        return code;
    code = lors_cli_open_exnode(TOOL, f.file, argc, argv, optind, f.rc, f.no_rc, &path, &rc, &x);
    if (code)
        return code;
    rc_loaded = 1;
    out = f.output ? f.output : path;
    where = calloc(x->nmaps ? x->nmaps : 1, sizeof *where);
    if (!where) {
        lors_cli_error(TOOL, "out of memory");
        code = LORS_EXIT_INTERNAL;
        goto done;
    }
    for (size_t i = 0; i < x->nmaps; i++)
        lors_cli_mapping_depot(x->maps[i], where[i], sizeof where[i]);

    lors_refresh_opts_init(&ro);
    ro.mode = (lors_refresh_mode)f.mode;
    ro.value = f.value;
    ro.threads = f.threads > 0 ? f.threads : rc.threads > 0 ? rc.threads : ro.threads;
    ro.timeout_s = f.timeout > 0 ? (int)f.timeout : rc.timeout_s > 0 ? rc.timeout_s
                                                                     : ro.timeout_s;
    if (!f.verbose && rc.verbose > 0)
        f.verbose = 1;

    lrc = lors_refresh(&ro, x, &rep);
    if (lrc != LORS_OK && lrc != LORS_E_PARTIAL) {
        lors_cli_error(TOOL, "%s: %s", path, rep.error[0] ? rep.error : lors_strerror(lrc));
        code = lors_exit_code(lrc);
        goto done;
    }
    code = lors_cli_write_exnode(TOOL, x, out);
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
            lors_cli_error(TOOL, "mapping %d (%s): not extended: %s", it->mapping, dep,
                           it->why[0] ? it->why : ibp_strerror(it->ibp_err));
        else if (f.verbose)
            fprintf(stderr, "%s: mapping %d (%s): %s -> %s\n", TOOL, it->mapping, dep, t0, t1);
    }
    code = lrc == LORS_E_PARTIAL ? LORS_EXIT_PARTIAL : LORS_EXIT_OK;

done:
    lors_refresh_report_free(&rep);
    xnd_free(x);
    free(where);
    if (rc_loaded)
        lors_rc_free(&rc);
    return code;
}
