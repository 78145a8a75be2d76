/* lors_upload.c -- lors_upload: a local file (or stdin) into a network file and its exNode.
 *
 * A thin front end over lors_upload_fd() (lors.h): settings come from the defaults, then the
 * rc file, then the flags; the input is read once, from a file or a pipe; the exNode is
 * written atomically (mode 0600: it holds capabilities) only when every copy of every
 * fragment is complete.  What the upload had to work around (a depot that refused or broke,
 * a copy that moved elsewhere) is one line each on stderr even without -V: a copy on another
 * depot than the one the user picked is something the user must know.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lns_units.h"
#include "lors.h"
#include "tool_lbone.h"
#include "tool.h"

static const char *TOOL = "lors_upload";

#define MIB ((int64_t)1 << 20)

static void usage(FILE *f)
{
    fprintf(f,
"Usage: lors_upload [options] FILE\n"
"       lors_upload [options] -i < INPUT      (or FILE \"-\")\n"
"Store a file on IBP depots, striped in fragments and copied, and write its exNode.\n"
"\n"
"Input and output:\n"
"  -f, --file FILE         the file to upload (or give it as the argument)\n"
"  -i, --stdin             read standard input (length unknown for a pipe)\n"
"  -o, --output XND        the exNode (default FILE.xnd; from stdin: stdout)\n"
"  -O, --offset N          upload the input from byte N on (regular files; K, M, G, T)\n"
"  -L, --length N          ... only N bytes of it\n"
"Where and how:\n"
"      --depot-list LIST   depots, \"host[:port][/rid], ...\" (else the L-Bone, or DEPOT\n"
"                          in the rc file)\n"
"  -m, --max-depots N      use at most N depots (from the L-Bone: ask for N; default\n"
"                          MAXDEPOTS of the rc file, else 6)\n"
"  -c, --copies N          copies of each fragment (default 1)\n"
"  -F, --fragments N       fragments per copy when the length is known (default 4)\n"
"  -bs, --block-size N     fragment size when the length is unknown (default 5M)\n"
"  -d, --duration T        lifetime (s, m, h, d; -1 or max: each depot's maximum),\n"
"                          default 1d\n"
"  -s, --soft / -h, --hard soft or hard storage (default hard)\n"
"  -t, --threads N         parallel depot calls (default 4)\n"
"  -T, --timeout T         longest wait of any one depot call (default 3m)\n"
"  -M, --memory N          bound on the memory held for the data (fewer threads, and\n"
"                          from a pipe smaller fragments, to fit)\n"
"End to end:\n"
"  -k, --checksum ALG      digest per checksum block (default sha256; none)\n"
"  -E, --e2e-block-size N  bytes per checksum block and per transform frame (default 1M)\n"
"  -z, --zlib              compress (zlib); -a, --aes: encrypt (AES-256-GCM); the order on\n"
"                          the command line is the order applied\n"
"      --e2e LIST          the same as a list: \"zlib,aes\"\n"
"  -n, --none              no transforms and no checksum\n"
"      --key-file FILE     the aes key (else $LNS_KEY or $LNS_KEY_FILE); never on the\n"
"                          command line\n"
"Reporting:\n"
"  -V, --verbose           print the layout and what was worked around\n"
"      --bitrate RATE      record a media stream's bits per second (15M: powers of 1000)\n"
"                          in the exNode, for lors_play's pre-buffer\n"
"      --events FILE|fd:N  write the event stream (docs/events.md); -D, --demo: fd:2\n"
"      --progress          draw the progress bar even when stderr is not a terminal\n"
"  -q, --quiet             print nothing but errors\n"
"The L-Bone (depots near a place with room enough, when no --depot-list):\n"
"  -H, --lbone URL         http://host:port, host:port or host (also --lbone-host);\n"
"                          else the LBONE_SERVER lines of the rc file, in order\n"
"  -P, --lbone-port P      its port when -H names none (default 6767)\n"
"  -l, --location L        nearest to L first: \"airport= TYS\", \"zip= 37996\", \"lat,lon\",\n"
"                          \"city= Knoxville state= TN\", \"country= NL\"... (rc LOCATION)\n"
"      --no-report         do not report the depots' throughput to the L-Bone\n"
"                          (also LNS_NO_REPORT=1)\n"
"Settings:\n"
"      --rc FILE           the rc file (default $LNS_RC, else ~/.xndrc); --no-rc: none\n"
"      --help, --version\n"
"\n"
"Exit: 0 ok, 2 usage, 4 local I/O, 5 depots, 7 key, 9 internal.  See lors_upload(1).\n");
}

enum { OPT_DEPOTS = 256, OPT_E2E, OPT_KEY, OPT_EVENTS, OPT_PROGRESS, OPT_RC, OPT_NO_RC,
       OPT_NO_REPORT, OPT_HELP, OPT_VERSION, OPT_BITRATE };

static const struct option longopts[] = {
    {"file", required_argument, NULL, 'f'},
    {"stdin", no_argument, NULL, 'i'},
    {"output", required_argument, NULL, 'o'},
    {"offset", required_argument, NULL, 'O'},
    {"length", required_argument, NULL, 'L'},
    {"depot-list", required_argument, NULL, OPT_DEPOTS},
    {"max-depots", required_argument, NULL, 'm'},
    {"copies", required_argument, NULL, 'c'},
    {"fragments", required_argument, NULL, 'F'},
    {"bs", required_argument, NULL, 'b'},
    {"block-size", required_argument, NULL, 'b'},
    {"duration", required_argument, NULL, 'd'},
    {"soft", no_argument, NULL, 's'},
    {"hard", no_argument, NULL, 'h'},
    {"threads", required_argument, NULL, 't'},
    {"timeout", required_argument, NULL, 'T'},
    {"memory", required_argument, NULL, 'M'},
    {"checksum", required_argument, NULL, 'k'},
    {"e2e-block-size", required_argument, NULL, 'E'},
    {"zlib", no_argument, NULL, 'z'},
    {"aes", no_argument, NULL, 'a'},
    {"e2e", required_argument, NULL, OPT_E2E},
    {"none", no_argument, NULL, 'n'},
    {"des", no_argument, NULL, 'e'},
    {"xor", no_argument, NULL, 'x'},
    {"key-file", required_argument, NULL, OPT_KEY},
    {"verbose", no_argument, NULL, 'V'},
    {"bitrate", required_argument, NULL, OPT_BITRATE},
    {"events", required_argument, NULL, OPT_EVENTS},
    {"demo", no_argument, NULL, 'D'},
    {"progress", no_argument, NULL, OPT_PROGRESS},
    {"quiet", no_argument, NULL, 'q'},
    {"lbone", required_argument, NULL, 'H'},
    {"lbone-host", required_argument, NULL, 'H'},
    {"lbone-port", required_argument, NULL, 'P'},
    {"location", required_argument, NULL, 'l'},
    {"no-report", no_argument, NULL, OPT_NO_REPORT},
    {"rc", required_argument, NULL, OPT_RC},
    {"no-rc", no_argument, NULL, OPT_NO_RC},
    {"help", no_argument, NULL, OPT_HELP},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

/* What the flags said; -1 (-2 where -1 is a value) / NULL = not given. */
typedef struct flags {
    const char *file, *output, *depots, *events, *rc, *keyfile, *checksum;
    tool_lbone_opts_t lb;   /* -H/--lbone, -P, -l, -m */
    int no_report;
    char e2e[64];           /* the chain from -z, -a and --e2e, in command-line order */
    int has_e2e, none, use_stdin, verbose, quiet, progress, no_rc;
    int copies, fragments, threads, reliability, maxdepots;
    int64_t blocksize, duration, timeout, memory, offset, length, e2e_bs;
    int64_t bitrate;        /* --bitrate, bit/s; 0 = not given */
} flags_t;

static int add_transform(flags_t *f, const char *name)
{
    if (strcmp(name, "none") == 0)
        return tool_usage(TOOL, "--e2e none: use -n (no transforms and no checksum), or "
                                    "leave --e2e out");
    if (strcmp(name, "zlib") != 0 && strcmp(name, "aes") != 0)
        return tool_usage(TOOL, "transform %s: expected zlib or aes", name);
    for (char *p = strstr(f->e2e, name); p; p = strstr(p + 1, name))
        if ((p == f->e2e || p[-1] == ',') && (p[strlen(name)] == '\0' || p[strlen(name)] == ','))
            return tool_usage(TOOL, "transform %s named twice", name);
    if (f->e2e[0])
        strcat(f->e2e, ",");
    strcat(f->e2e, name);
    f->has_e2e = 1;
    return TOOL_EXIT_OK;
}

static int parse_flags(int argc, char **argv, flags_t *f)
{
    int c, port, code;
    memset(f, 0, sizeof *f);
    f->copies = f->fragments = f->threads = f->reliability = f->maxdepots = -1;
    f->blocksize = f->duration = f->timeout = f->memory = f->offset = f->length = -2;
    f->e2e_bs = -2;
    opterr = 0;
    while ((c = getopt_long_only(argc, argv, ":f:io:O:L:m:c:F:d:sht:T:M:k:E:zanexVDqH:P:l:",
                                 longopts, NULL)) != -1) {
        switch (c) {
        case 'f': f->file = optarg; break;
        case 'i': f->use_stdin = 1; break;
        case 'o': f->output = optarg; break;
        case 'O':
            if (tool_size(TOOL, "-O", optarg, &f->offset) < 0)
                return TOOL_EXIT_USAGE;
            break;
        case 'L':
            if (tool_size(TOOL, "-L", optarg, &f->length) < 0)
                return TOOL_EXIT_USAGE;
            break;
        case OPT_DEPOTS: f->depots = optarg; break;
        case 'm':
            if (tool_int(TOOL, "-m", optarg, 1, 1000000, &f->maxdepots) < 0)
                return TOOL_EXIT_USAGE;
            break;
        case 'c':
            if (tool_int(TOOL, "-c", optarg, 1, 1000, &f->copies) < 0)
                return TOOL_EXIT_USAGE;
            break;
        case 'F':
            if (tool_int(TOOL, "-F", optarg, 1, 1000000, &f->fragments) < 0)
                return TOOL_EXIT_USAGE;
            break;
        case 'b':
            if (tool_size(TOOL, "-bs", optarg, &f->blocksize) < 0)
                return TOOL_EXIT_USAGE;
            if (f->blocksize < 1)
                return tool_usage(TOOL, "-bs %s: must be above 0", optarg);
            break;
        case 'd':
            if (tool_duration(TOOL, "-d", optarg, &f->duration) < 0)
                return TOOL_EXIT_USAGE;
            break;
        case 's': f->reliability = IBP_SOFT; break;
        case 'h': f->reliability = IBP_HARD; break;
        case 't':
            if (tool_int(TOOL, "-t", optarg, 1, 1024, &f->threads) < 0)
                return TOOL_EXIT_USAGE;
            break;
        case 'T':
            if (tool_timeout(TOOL, optarg, &f->timeout) < 0)
                return TOOL_EXIT_USAGE;
            break;
        case 'M':
            if (tool_size(TOOL, "-M", optarg, &f->memory) < 0)
                return TOOL_EXIT_USAGE;
            if (f->memory < 2 * MIB)
                return tool_usage(TOOL, "-M %s: at least 2M", optarg);
            break;
        case 'k': f->checksum = optarg; break;
        case 'E':
            if (tool_size(TOOL, "-E", optarg, &f->e2e_bs) < 0)
                return TOOL_EXIT_USAGE;
            if (f->e2e_bs < 1)
                return tool_usage(TOOL, "-E %s: must be above 0", optarg);
            break;
        case 'z':
        case 'a':
            if ((code = add_transform(f, c == 'z' ? "zlib" : "aes")) != 0)
                return code;
            break;
        case OPT_E2E: {
            char list[256];
            snprintf(list, sizeof list, "%s", optarg);
            for (char *s = NULL, *t = strtok_r(list, ", \t", &s); t; t = strtok_r(NULL, ", \t", &s))
                if ((code = add_transform(f, t)) != 0)
                    return code;
            break;
        }
        case 'n': f->none = 1; break;
        case 'e':
            return tool_usage(TOOL, "-e: DES encryption is not supported (a 56-bit key is "
                                        "no protection); use -a (AES-256-GCM)");
        case 'x':
            return tool_usage(TOOL, "-x: XOR \"encryption\" is not supported (it hides "
                                        "nothing); use -a (AES-256-GCM)");
        case OPT_KEY: f->keyfile = optarg; break;
        case 'V': f->verbose = 1; break;
        case OPT_BITRATE: { /* SI multipliers: 15M = 15,000,000 bit/s */
            double v;
            if (lns_parse_rate(optarg, &v) < 0)
                return tool_usage(TOOL, "--bitrate %s: expected bits per second such as 15M",
                                      optarg);
            f->bitrate = (int64_t)v;
            break;
        }
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
        case OPT_NO_REPORT: f->no_report = 1; break;
        case OPT_RC: f->rc = optarg; break;
        case OPT_NO_RC: f->no_rc = 1; break;
        case OPT_HELP: usage(stdout); exit(TOOL_EXIT_OK);
        case OPT_VERSION: tool_version(TOOL); exit(TOOL_EXIT_OK);
        case ':': return tool_usage(TOOL, "%s needs a value", argv[optind - 1]);
        default: return tool_usage(TOOL, "unknown option %s", argv[optind - 1]);
        }
    }
    if (f->none && (f->has_e2e || f->checksum))
        return tool_usage(TOOL, "-n (no transforms, no checksum) excludes -z, -a, --e2e "
                                    "and -k");
    if (optind < argc - 1)
        return tool_usage(TOOL, "one file at a time (%s)", argv[optind + 1]);
    if (optind < argc) {
        if (f->file)
            return tool_usage(TOOL, "two inputs: -f %s and %s", f->file, argv[optind]);
        f->file = argv[optind];
    }
    if (f->file && strcmp(f->file, "-") == 0) {
        f->file = NULL;
        f->use_stdin = 1;
    }
    if (f->file && f->use_stdin)
        return tool_usage(TOOL, "two inputs: %s and stdin (-i)", f->file);
    if (!f->file && !f->use_stdin)
        return tool_usage(TOOL, "no input: give FILE, -f FILE, or -i for stdin");
    return TOOL_EXIT_OK;
}

/* The input: open it, position it at -O, and find its length (-1: a pipe, unknown). */
static int open_input(const flags_t *f, int *fd, int64_t *length)
{
    struct stat st;
    const char *name = f->file ? f->file : "stdin";
    *fd = f->file ? open(f->file, O_RDONLY | O_CLOEXEC) : STDIN_FILENO;
    if (*fd < 0 || fstat(*fd, &st) < 0) {
        tool_error(TOOL, "%s: %s", name, strerror(errno));
        return TOOL_EXIT_IO;
    }
    if (S_ISDIR(st.st_mode)) {
        tool_error(TOOL, "%s: is a directory", name);
        return TOOL_EXIT_IO;
    }
    *length = -1;
    if (!S_ISREG(st.st_mode)) {
        if (f->offset >= 0 || f->length >= 0)
            return tool_usage(TOOL, "-O/-L need a regular file; %s is a pipe or device",
                                  name);
        return TOOL_EXIT_OK;
    }
    int64_t off = f->offset >= 0 ? f->offset : 0;
    if (off > st.st_size)
        return tool_usage(TOOL, "-O %" PRId64 ": %s has only %lld bytes", off, name,
                              (long long)st.st_size);
    if (f->length >= 0 && f->length > st.st_size - off)
        return tool_usage(TOOL, "-L %" PRId64 ": %s has only %lld bytes from %" PRId64,
                              f->length, name, (long long)(st.st_size - off), off);
    *length = f->length >= 0 ? f->length : st.st_size - off;
    /* from stdin, -O counts from where the caller left the descriptor: the file's start */
    if (lseek(*fd, off, SEEK_SET) < 0) {
        tool_error(TOOL, "%s: seeking to %" PRId64 ": %s", name, off, strerror(errno));
        return TOOL_EXIT_IO;
    }
    return TOOL_EXIT_OK;
}

/* Fail before uploading anything if the exNode could not be written afterwards: a finished
 * upload whose capabilities are lost can only expire. */
static int check_output(const char *out)
{
    char dir[PATH_MAX + 8];
    if (strcmp(out, "-") == 0)
        return TOOL_EXIT_OK;
    snprintf(dir, sizeof dir, "%s", out);
    const char *d = dirname(dir);
    if (access(d, W_OK | X_OK) != 0) {
        tool_error(TOOL, "the exNode %s cannot be written: %s: %s", out, d, strerror(errno));
        return TOOL_EXIT_IO;
    }
    return TOOL_EXIT_OK;
}

static void print_issues(const lors_report_t *rep)
{
    for (size_t i = 0; i < rep->nissues; i++) {
        const lors_issue_t *is = &rep->issues[i];
        char from[IBP_MAX_HOST + IBP_MAX_RID + 16], to[IBP_MAX_HOST + IBP_MAX_RID + 16];
        lors_depot_format(&is->depot, from, sizeof from);
        lors_depot_format(&is->moved_to, to, sizeof to);
        long long a = (long long)is->offset, b = (long long)(is->offset + is->length - 1);
        if (is->moved)
            tool_error(TOOL, "fragment %d copy %d (bytes %lld-%lld): %s on %s failed (%s); "
                           "stored on %s instead", is->fragment, is->copy, a, b, is->op, from,
                           ibp_strerror(is->ibp_err), to);
        else
            tool_error(TOOL, "fragment %d copy %d (bytes %lld-%lld): %s on %s failed (%s); "
                           "no depot left for it", is->fragment, is->copy, a, b, is->op, from,
                           ibp_strerror(is->ibp_err));
    }
}

static void print_report(const lors_upload_opts_t *o, const lors_report_t *rep,
                         const char *out, const char *notes)
{
    char sz[32];
    int e2e = o->e2e && *o->e2e;
    int64_t plain = e2e ? rep->plain_size : rep->size;
    tool_human(plain, sz, sizeof sz);
    fprintf(stderr, "%s: %s: %" PRId64 " bytes (%s) in %d fragment%s x %d cop%s = %d mappings "
            "on %zu depot%s\n", TOOL, strcmp(out, "-") ? out : "stdout", plain, sz,
            rep->fragments, rep->fragments == 1 ? "" : "s", o->copies,
            o->copies == 1 ? "y" : "ies", rep->mappings, o->ndepots, o->ndepots == 1 ? "" : "s");
    fprintf(stderr, "%s: checksum %s", TOOL, o->checksum);
    if (strcmp(o->checksum, "none") != 0)
        fprintf(stderr, " per %" PRId64 " bytes", o->checksum_blocksize);
    if (e2e)
        fprintf(stderr, ", transforms %s per %" PRId64 " bytes (%" PRId64 " bytes stored)",
                o->e2e, o->e2e_blocksize > 0 ? o->e2e_blocksize : MIB, rep->size);
    fprintf(stderr, ", %s, duration %s%" PRId64 "s, %d threads\n",
            o->reliability == IBP_SOFT ? "soft" : "hard", o->duration_s < 0 ? "max " : "",
            o->duration_s < 0 ? 0 : o->duration_s, o->threads);
    double mbps = rep->seconds > 0 ? (double)rep->bytes_stored / rep->seconds / 1e6 : 0;
    fprintf(stderr, "%s: read %" PRId64 " bytes (%" PRId64 " again), stored %" PRId64
            " bytes in %.2f s (%.1f MB/s); %zu issue%s worked around\n", TOOL, rep->bytes_read,
            rep->bytes_reread, rep->bytes_stored, rep->seconds, mbps, rep->nissues,
            rep->nissues == 1 ? "" : "s");
    if (notes[0])
        fprintf(stderr, "%s: %s\n", TOOL, notes);
}

/* The event stream's BEGIN line: what this upload is, for a reader that sees nothing else. */
static void begin_line(tool_events_t *es, const flags_t *f, const lors_upload_opts_t *o,
                       int64_t length)
{
    char file[3 * PATH_MAX], list[4096] = "", d[IBP_MAX_HOST + IBP_MAX_RID + 16];
    char enc[3 * sizeof list];
    if (!es)
        return;
    tool_events_encode(f->file ? f->file : "-", file, sizeof file);
    for (size_t i = 0; i < o->ndepots && strlen(list) + sizeof d + 2 < sizeof list; i++) {
        lors_depot_format(&o->depots[i], d, sizeof d);
        if (i)
            strcat(list, ",");
        strcat(list, d);
    }
    tool_events_encode(list, enc, sizeof enc);
    tool_events_printf(es, "BEGIN", "op=upload file=%s size=%" PRId64 " copies=%d "
                         "fragments=%d blocksize=%" PRId64 " checksum=%s e2e=%s depots=%s",
                         file, length, o->copies, o->fragments, o->blocksize, o->checksum,
                         o->e2e && *o->e2e ? o->e2e : "-", enc);
}

/* Tell the L-Bone (-H/--lbone, else the rc file's) what throughput each depot gave. */
static void report_throughput(const flags_t *f, const tool_rc_t *rc,
                              const tool_lbone_meter_t *meter)
{
    char **servers;
    size_t n;
    if (!meter || tool_lbone_servers(&f->lb, rc, &servers, &n) < 0)
        return;
    tool_lbone_meter_send(TOOL, meter, servers, n, f->verbose && !f->quiet);
    tool_lbone_servers_free(servers, n);
}

int main(int argc, char **argv)
{
    flags_t f;
    tool_rc_t rc;
    tool_feed_t feed;
    lors_upload_opts_t o;
    lors_report_t rep;
    lors_depot_t *depots = NULL;
    size_t ndepots = 0;
    tool_lbone_meter_t *meter = NULL;
    xnd_t *x = NULL;
    unsigned char key[LORS_KEY_BYTES];
    char notes[256] = "", xndpath[PATH_MAX + 8], namebuf[PATH_MAX], err[512];
    int code, lrc, rc_loaded = 0, in = -1;
    int64_t length = -1;
    const char *out;

    signal(SIGPIPE, SIG_IGN); /* a reader of the exNode that went away: EPIPE, exit 4 */
    memset(&rep, 0, sizeof rep);
    memset(&feed, 0, sizeof feed);
    code = parse_flags(argc, argv, &f);
    if (code)
        return code;
    code = tool_rc(TOOL, f.rc, f.no_rc, &rc);
    if (code)
        return code;
    rc_loaded = 1;

    lors_upload_opts_init(&o);
    o.copies = f.copies > 0 ? f.copies : rc.copies > 0 ? rc.copies : o.copies;
    o.fragments = f.fragments > 0 ? f.fragments : rc.fragments > 0 ? rc.fragments : o.fragments;
    o.blocksize = f.blocksize > 0 ? f.blocksize
                  : rc.data_blocksize > 0 ? rc.data_blocksize : o.blocksize;
    o.duration_s = f.duration != -2 ? f.duration : rc.duration_s > 0 ? rc.duration_s
                                                                     : o.duration_s;
    o.reliability = f.reliability > 0 ? f.reliability
                    : rc.reliability > 0 ? rc.reliability : o.reliability;
    o.threads = f.threads > 0 ? f.threads : rc.threads > 0 ? rc.threads : o.threads;
    o.timeout_s = f.timeout > 0 ? (int)f.timeout : rc.timeout_s > 0 ? rc.timeout_s : o.timeout_s;
    int64_t ebs = f.e2e_bs > 0 ? f.e2e_bs : rc.e2e_blocksize > 0 ? rc.e2e_blocksize : 0;
    if (ebs > 0)
        o.checksum_blocksize = o.e2e_blocksize = ebs;
    if (f.none) {
        o.checksum = "none";
        o.e2e = NULL;
    } else {
        if (f.checksum)
            o.checksum = f.checksum;
        o.e2e = f.has_e2e ? f.e2e : rc.e2e_order;
    }
    if (!f.quiet && !f.verbose && rc.verbose > 0)
        f.verbose = 1;

    if (o.e2e && strstr(o.e2e, "aes")) {
        if (lors_key_load(f.keyfile, key, err, sizeof err) != LORS_OK) {
            tool_error(TOOL, "the aes key: %s", err);
            code = TOOL_EXIT_INTEGRITY;
            goto done;
        }
        o.key = key;
    }

    code = open_input(&f, &in, &length);
    if (code)
        goto done;
    if (f.output) {
        out = f.output;
    } else if (f.file) {
        snprintf(xndpath, sizeof xndpath, "%s.xnd", f.file);
        out = xndpath;
    } else {
        out = "-";
    }
    code = check_output(out);
    if (code)
        goto done;

    /* -M: the engine holds about 2 x threads x 1 MiB, and from a pipe two fragments more */
    int64_t mem = f.memory > 0 ? f.memory : rc.max_buffer > 0 ? rc.max_buffer : 0;
    if (mem > 0) {
        int fit = (int)(mem / (2 * MIB) > 1024 ? 1024 : mem / (2 * MIB));
        if (fit < 1)
            fit = 1;
        if (o.threads > fit) {
            snprintf(notes, sizeof notes, "-M %" PRId64 ": %d threads instead of %d", mem, fit,
                     o.threads);
            o.threads = fit;
        }
        if (length < 0 && 2 * o.blocksize + MIB > mem) {
            int64_t bs = (mem - MIB) / 2;
            size_t nl = strlen(notes);
            snprintf(notes + nl, sizeof notes - nl, "%s-M %" PRId64 ": fragments of %" PRId64
                     " bytes instead of %" PRId64, nl ? "; " : "", mem, bs, o.blocksize);
            o.blocksize = bs;
        }
    }

    /* The depots, now that the size is known: the L-Bone is asked for room enough. */
    tool_lbone_need_t need = {o.blocksize, 1, o.reliability, o.duration_s};
    if (length >= 0) {
        /* transforms may grow the data a little: AES tags, zlib on incompressible bytes */
        int64_t stored = o.e2e && *o.e2e ? length + length / 512 + 65536 : length;
        need.unit = (stored + o.fragments - 1) / o.fragments;
        need.units = (int64_t)o.fragments * o.copies;
    }
    f.lb.count = f.maxdepots > 0 ? f.maxdepots : 0;
    code = tool_lbone_depots(TOOL, f.depots, &rc, &f.lb, &need, o.copies, f.verbose && !f.quiet,
                             &depots, &ndepots);
    if (code)
        goto done;
    int maxd = f.maxdepots > 0 ? f.maxdepots : rc.maxdepots > 0 ? rc.maxdepots : 0;
    o.depots = depots;
    o.ndepots = maxd > 0 && (size_t)maxd < ndepots ? (size_t)maxd : ndepots;
    if (o.copies > (int)o.ndepots && !f.quiet)
        tool_error(TOOL, "warning: %d copies on %zu depot%s: some copies share a depot",
                       o.copies, o.ndepots, o.ndepots == 1 ? "" : "s");

    code = tool_feed_open(TOOL, &feed, f.events, "upload",
                              length >= 0 && !(o.e2e && *o.e2e) ? length * o.copies : -1,
                              f.quiet ? -1 : f.progress);
    if (code)
        goto done;
    if (!tool_lbone_reports_off(f.no_report)) {
        meter = tool_lbone_meter_new();
        tool_tee_add(&feed.tee, tool_lbone_meter_event, meter);
    }
    o.on_event = tool_feed_fn(&feed);
    o.event_arg = &feed.tee;
    begin_line(feed.es, &f, &o, length);

    const char *name = NULL;
    if (f.file) {
        snprintf(namebuf, sizeof namebuf, "%s", f.file);
        name = basename(namebuf);
    }
    lrc = lors_upload_fd(&o, in, length, name, &x, &rep);
    tool_progress_finish(feed.bar); /* end the bar's line before any message */
    feed.bar = NULL;
    if (!f.quiet)
        print_issues(&rep);
    if (lrc != LORS_OK) {
        tool_error(TOOL, "%s: %s", f.file ? f.file : "stdin",
                       rep.error[0] ? rep.error : lors_strerror(lrc));
        /* the engine names a digest it does not know before it stores anything */
        code = lrc == LORS_E_DIGEST ? TOOL_EXIT_USAGE : tool_exit_code(lrc);
        goto done;
    }
    if (f.bitrate > 0 && xnd_meta_set_int(&x->meta, "bitrate", f.bitrate) != XND_OK) {
        tool_error(TOOL, "recording the bitrate: out of memory");
        code = TOOL_EXIT_INTERNAL;
        goto done;
    }
    code = tool_write_exnode(TOOL, x, out);
    if (code == TOOL_EXIT_OK && f.verbose && !f.quiet)
        print_report(&o, &rep, out, notes);
    report_throughput(&f, &rc, meter);

done:
    if (feed.es)
        tool_events_printf(feed.es, "END", "bytes=%" PRId64 " seconds=%.3f rc=%d",
                             rep.bytes_read, rep.seconds, code);
    tool_feed_close(&feed);
    memset(key, 0, sizeof key);
    if (in > STDIN_FILENO)
        close(in);
    lors_report_free(&rep);
    xnd_free(x);
    free(depots);
    tool_lbone_meter_free(meter);
    if (rc_loaded)
        tool_rc_free(&rc);
    return code;
}
