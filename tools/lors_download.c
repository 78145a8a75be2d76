/* lors_download.c -- lors_download: a network file's bytes, in order, to a file or stdout.
 *
 * A thin front end over lors_download_fd() (lors.h): settings come from the defaults, then
 * the rc file, then the flags.  The output file is written directly, not through a temporary
 * file, so that what a failed or interrupted run leaves behind is a valid prefix that -R can
 * resume: -R checks that prefix against the exNode's checksums (lors_verify_prefix), cuts it
 * at the first block that does not match and downloads only the rest.  The exNode is read
 * before the output is opened, so a bad exNode leaves no empty output file behind.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
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

static const char *TOOL = "lors_download";

static void usage(FILE *f)
{
    fprintf(f,
"Usage: lors_download [options] EXNODE\n"
"Fetch a network file's bytes from whichever replicas answer best, many streams at once,\n"
"and write them in order to a file or to stdout (so a player can read them as they come).\n"
"\n"
"  -f, --file EXNODE       the exNode (or give it as the argument; - reads stdin)\n"
"  -o, --output OUT        where the bytes go (default -: stdout)\n"
"  -O, --offset N          only the bytes from N on (K, M, G, T)\n"
"  -L, --length N          ... and only N of them\n"
"  -R, --resume            OUT holds a prefix from an earlier run: check it against the\n"
"                          checksums, cut it at the first bad block, fetch the rest\n"
"  -t, --threads N         parallel streams (default 0: automatic, 8 to 64 by the depots\n"
"                          and their latency)\n"
"  -a, --depot-streams N   most streams on one depot at once (default 4)\n"
"  -bs, --block-size N     block size (default 1M; rounded up to the checksum block)\n"
"  -r, --redundancy R      most fetches of one block at once, 1..8 (default 2; 1: none)\n"
"  -p, --progress-count P  later blocks done before a lagging block gets a redundant\n"
"                          fetch (default 3; 0: never)\n"
"  -q, --prebuffer N       bytes ready before the first write (a plain number: blocks)\n"
"  -C, --cache N           reorder buffer of N blocks\n"
"  -M, --memory N          reorder buffer in bytes (default 64M; with -C the smaller wins)\n"
"  -T, --timeout T         longest wait for any progress of one depot read (default 30s)\n"
"      --no-verify         do not check blocks (or the -R prefix) against the checksums\n"
"      --key-file FILE     the aes key of an encrypted file (else $LNS_KEY or\n"
"                          $LNS_KEY_FILE); never on the command line\n"
"  -V, --verbose           print the per-depot report at the end\n"
"      --events FILE|fd:N  write the event stream (docs/events.md); -D, --demo: fd:2\n"
"      --netlog FILE|fd:N  append a NetLogger line per fetch step (docs/netlogger.md)\n"
"      --progress          draw the progress bar even when stderr is not a terminal\n"
"      --quiet             print nothing but errors (-q is the pre-buffer)\n"
"      --lbone URL         the L-Bone to tell each depot's throughput (else the rc\n"
"                          file's LBONE_SERVER lines; neither: no report)\n"
"      --no-report         do not report throughput (also LNS_NO_REPORT=1)\n"
"      --rc FILE           the rc file (default $LNS_RC, else ~/.xndrc); --no-rc: none\n"
"      --help, --version\n"
"\n"
"Exit: 0 ok, 2 usage, 3 exNode, 4 local I/O, 6 some bytes have no live copy,\n"
"7 integrity or key, 9 internal.  See lors_download(1).\n");
}

enum { OPT_NO_VERIFY = 256, OPT_KEY, OPT_EVENTS, OPT_PROGRESS, OPT_QUIET, OPT_RC, OPT_NO_RC,
       OPT_HELP, OPT_VERSION, OPT_BS, OPT_LBONE, OPT_NO_REPORT,
       OPT_NETLOG };

static const struct option longopts[] = {
    {"file", required_argument, NULL, 'f'},
    {"output", required_argument, NULL, 'o'},
    {"offset", required_argument, NULL, 'O'},
    {"length", required_argument, NULL, 'L'},
    {"resume", no_argument, NULL, 'R'},
    {"threads", required_argument, NULL, 't'},
    {"depot-streams", required_argument, NULL, 'a'},
    {"bs", required_argument, NULL, OPT_BS},
    {"block-size", required_argument, NULL, OPT_BS},
    {"redundancy", required_argument, NULL, 'r'},
    {"progress-count", required_argument, NULL, 'p'},
    {"prebuffer", required_argument, NULL, 'q'},
    {"cache", required_argument, NULL, 'C'},
    {"memory", required_argument, NULL, 'M'},
    {"timeout", required_argument, NULL, 'T'},
    {"no-verify", no_argument, NULL, OPT_NO_VERIFY},
    {"key-file", required_argument, NULL, OPT_KEY},
    {"verbose", no_argument, NULL, 'V'},
    {"events", required_argument, NULL, OPT_EVENTS},
    {"netlog", required_argument, NULL, OPT_NETLOG},
    {"demo", no_argument, NULL, 'D'},
    {"progress", no_argument, NULL, OPT_PROGRESS},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"lbone", required_argument, NULL, OPT_LBONE},
    {"no-report", no_argument, NULL, OPT_NO_REPORT},
    {"rc", required_argument, NULL, OPT_RC},
    {"no-rc", no_argument, NULL, OPT_NO_RC},
    {"help", no_argument, NULL, OPT_HELP},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

/* What the flags said; -1 (-2 for sizes) / NULL = not given. */
typedef struct flags {
    const char *file, *output, *events, *rc, *keyfile, *prebuffer, *netlog;
    tool_lbone_opts_t lb;   /* --lbone: where throughput reports go */
    int resume, no_verify, verbose, quiet, progress, no_rc, no_report;
    int threads, depot_cap, redundancy, pcount, cache;
    int64_t offset, length, blocksize, memory, timeout;
} flags_t;

static int parse_flags(int argc, char **argv, flags_t *f)
{
    int c;
    memset(f, 0, sizeof *f);
    f->threads = f->depot_cap = f->redundancy = f->pcount = f->cache = -1;
    f->offset = f->length = f->blocksize = f->memory = f->timeout = -2;
    opterr = 0;
    while ((c = getopt_long_only(argc, argv, ":f:o:O:L:Rt:a:r:p:q:C:M:T:VD", longopts,
                                 NULL)) != -1) {
        switch (c) {
        case 'f': f->file = optarg; break;
        case 'o': f->output = optarg; break;
        case 'O':
            if (tool_size(TOOL, "-O", optarg, &f->offset) < 0)
                return TOOL_EXIT_USAGE;
            break;
        case 'L':
            if (tool_size(TOOL, "-L", optarg, &f->length) < 0)
                return TOOL_EXIT_USAGE;
            break;
        case 'R': f->resume = 1; break;
        case 't':
            if (tool_int(TOOL, "-t", optarg, 0, 256, &f->threads) < 0)
                return TOOL_EXIT_USAGE;
            break;
        case 'a':
            if (tool_int(TOOL, "-a", optarg, 1, 256, &f->depot_cap) < 0)
                return TOOL_EXIT_USAGE;
            break;
        case OPT_BS:
            if (tool_size(TOOL, "-bs", optarg, &f->blocksize) < 0)
                return TOOL_EXIT_USAGE;
            if (f->blocksize < 1 || f->blocksize > ((int64_t)1 << 30))
                return tool_usage(TOOL, "-bs %s: from 1 byte to 1G", optarg);
            break;
        case 'r':
            if (tool_int(TOOL, "-r", optarg, 1, 8, &f->redundancy) < 0)
                return TOOL_EXIT_USAGE;
            break;
        case 'p':
            if (tool_int(TOOL, "-p", optarg, 0, 1000000, &f->pcount) < 0)
                return TOOL_EXIT_USAGE;
            break;
        case 'q': {
            int64_t v;
            if (tool_size(TOOL, "-q", optarg, &v) < 0)
                return TOOL_EXIT_USAGE;
            f->prebuffer = optarg;
            break;
        }
        case 'C':
            if (tool_int(TOOL, "-C", optarg, 1, 1000000, &f->cache) < 0)
                return TOOL_EXIT_USAGE;
            break;
        case 'M':
            if (tool_size(TOOL, "-M", optarg, &f->memory) < 0)
                return TOOL_EXIT_USAGE;
            if (f->memory < 1)
                return tool_usage(TOOL, "-M %s: must be above 0", optarg);
            break;
        case 'T':
            if (tool_timeout(TOOL, optarg, &f->timeout) < 0)
                return TOOL_EXIT_USAGE;
            break;
        case OPT_NO_VERIFY: f->no_verify = 1; break;
        case OPT_KEY: f->keyfile = optarg; break;
        case 'V': f->verbose = 1; break;
        case OPT_EVENTS: f->events = optarg; break;
        case OPT_NETLOG: f->netlog = optarg; break;
        case 'D': f->events = "fd:2"; break;
        case OPT_PROGRESS: f->progress = 1; break;
        case OPT_QUIET: f->quiet = 1; break;
        case OPT_LBONE: f->lb.server = optarg; break;
        case OPT_NO_REPORT: f->no_report = 1; break;
        case OPT_RC: f->rc = optarg; break;
        case OPT_NO_RC: f->no_rc = 1; break;
        case OPT_HELP: usage(stdout); exit(TOOL_EXIT_OK);
        case OPT_VERSION: tool_version(TOOL); exit(TOOL_EXIT_OK);
        case ':': return tool_usage(TOOL, "%s needs a value", argv[optind - 1]);
        default: return tool_usage(TOOL, "unknown option %s", argv[optind - 1]);
        }
    }
    if (f->resume && (!f->output || strcmp(f->output, "-") == 0))
        return tool_usage(TOOL, "-R resumes a file: give -o FILE");
    return TOOL_EXIT_OK;
}

static int has_checksums(const xnd_t *x)
{
    for (size_t i = 0; i < x->nmaps; i++)
        if (x->maps[i]->func && strcmp(x->maps[i]->func->name, LORS_CHECKSUM_FUNC) == 0)
            return 1;
    return 0;
}

/* -R: how much of OUT to keep.  *skip: bytes of the range already there and trusted. */
static int resume_point(const flags_t *f, const xnd_t *x, int e2e, int fd, int64_t off,
                        int64_t len, int64_t *skip)
{
    struct stat st;
    *skip = 0;
    if (fstat(fd, &st) < 0) {
        tool_error(TOOL, "%s: %s", f->output, strerror(errno));
        return TOOL_EXIT_IO;
    }
    if (!S_ISREG(st.st_mode))
        return tool_usage(TOOL, "-R: %s is not a regular file", f->output);
    int64_t have = st.st_size;
    if (have >= len) {
        *skip = len;
        return TOOL_EXIT_OK;
    }
    int64_t good = have;
    if (have > 0 && !f->no_verify) {
        if (e2e) {
            if (!f->quiet)
                tool_error(TOOL, "%s: a transformed file's bytes cannot be checked against "
                               "its checksums; keeping its %" PRId64 " bytes as they are",
                               f->output, have);
        } else if (!has_checksums(x)) {
            if (!f->quiet)
                tool_error(TOOL, "%s: the exNode has no checksums; keeping its %" PRId64
                               " bytes unchecked", f->output, have);
        } else {
            int rc = lors_verify_prefix(x, fd, off, have, &good);
            if (rc != LORS_OK) {
                tool_error(TOOL, "%s: checking the first %" PRId64 " bytes: %s", f->output,
                               have, rc == LORS_E_READ ? strerror(errno) : lors_strerror(rc));
                return rc == LORS_E_READ ? TOOL_EXIT_IO : tool_exit_code(rc);
            }
        }
    }
    if (good < have) {
        if (ftruncate(fd, good) < 0) {
            tool_error(TOOL, "%s: cutting it to %" PRId64 " bytes: %s", f->output, good,
                           strerror(errno));
            return TOOL_EXIT_IO;
        }
        if (!f->quiet)
            tool_error(TOOL, "%s: the first %" PRId64 " of its %" PRId64 " bytes match the "
                           "checksums, the rest failed or could not be checked; cut it there and "
                           "resuming from byte %" PRId64, f->output, good, have, off + good);
    }
    *skip = good;
    return TOOL_EXIT_OK;
}

static void print_report(const lors_dl_report_t *r)
{
    double mbps = r->seconds > 0 ? (double)r->bytes_written / r->seconds / 1e6 : 0;
    fprintf(stderr, "%s: bytes %" PRId64 "-%" PRId64 ": %" PRId64 " written in %.2f s "
            "(%.1f MB/s), %u blocks of %" PRId64 ", %" PRId64 " fetched, peak buffer %" PRId64
            "\n", TOOL, r->offset, r->offset + r->length - (r->length > 0), r->bytes_written,
            r->seconds, mbps, r->blocks, r->blocksize, r->bytes_fetched, r->peak_buffered);
    fprintf(stderr, "%-24s %7s %12s %8s %7s %6s %5s %9s %6s\n", "depot", "blocks", "bytes",
            "MB/s", "fetches", "failed", "bad", "redundant", "wasted");
    for (size_t i = 0; i < r->ndepots; i++) {
        const lors_dl_depot_t *d = &r->depots[i];
        char name[IBP_MAX_HOST + IBP_MAX_RID + 16], red[32];
        lors_depot_format(&d->depot, name, sizeof name);
        snprintf(red, sizeof red, "%" PRIu64 "/%" PRIu64, d->redundant_won, d->redundant_started);
        fprintf(stderr, "%-24s %7" PRIu64 " %12" PRIu64 " %8.1f %7" PRIu64 " %6" PRIu64
                " %5" PRIu64 " %9s %6" PRIu64 "\n", name, d->blocks, d->bytes, d->mbps,
                d->fetches, d->failures, d->bad_data, red, d->wasted);
    }
    for (size_t i = 0; i < r->nbad; i++)
        fprintf(stderr, "%s: mapping %d delivered bytes that fail its checksum\n", TOOL,
                r->bad_mappings[i]);
}

int main(int argc, char **argv)
{
    flags_t f;
    tool_rc_t rc;
    tool_feed_t feed;
    lors_download_opts_t o;
    lors_dl_report_t rep;
    lors_e2e_info_t e2e;
    xnd_t *x = NULL;
    tool_lbone_meter_t *meter = NULL;
    unsigned char key[LORS_KEY_BYTES];
    char err[512];
    int code, lrc, rc_loaded = 0, fd = -1;
    int64_t size, off, len, skip = 0;
    const char *path, *out;

    signal(SIGPIPE, SIG_IGN); /* a reader that went away is a write error: exit 4 */
    memset(&rep, 0, sizeof rep);
    memset(&feed, 0, sizeof feed);
    code = parse_flags(argc, argv, &f);
    if (code)
        return code;
    code = tool_open_exnode(TOOL, f.file, argc, argv, optind, f.rc, f.no_rc, &path, &rc, &x);
    if (code)
        return code;
    rc_loaded = 1;
    out = f.output ? f.output : "-";
    if (lors_e2e_info(x, &e2e, err, sizeof err) != LORS_OK) {
        tool_error(TOOL, "%s: %s", path, err);
        code = TOOL_EXIT_EXNODE;
        goto done;
    }

    lors_download_opts_init(&o);
    o.threads = f.threads > 0 ? f.threads : rc.threads > 0 ? (rc.threads > 256 ? 256 : rc.threads)
                                                           : o.threads;
    o.depot_cap = f.depot_cap > 0 ? f.depot_cap : o.depot_cap;
    o.blocksize = f.blocksize > 0 ? f.blocksize
                  : rc.data_blocksize > 0 ? rc.data_blocksize : o.blocksize;
    o.redundancy = f.redundancy > 0 ? f.redundancy : o.redundancy;
    o.progress = f.pcount >= 0 ? f.pcount : o.progress;
    if (f.timeout > 0 || rc.timeout_s > 0)
        o.timeout_ms = (int)(1000 * (f.timeout > 0 ? f.timeout : rc.timeout_s > 86400 ? 86400
                                                                                 : rc.timeout_s));
    o.verify = !f.no_verify;
    int64_t mem = f.memory > 0 ? f.memory : rc.max_buffer > 0 ? rc.max_buffer : 0;
    if (mem > 0 || f.cache > 0) {
        int64_t cache = f.cache > 0 ? f.cache * o.blocksize : INT64_MAX;
        o.buffer_bytes = mem > 0 && mem < cache ? mem : cache;
    }
    if (f.prebuffer) { /* a plain number counts blocks; with a suffix, bytes */
        uint64_t v = 0;
        lns_parse_size(f.prebuffer, &v); /* checked in parse_flags */
        o.prebuffer_bytes = strspn(f.prebuffer, "0123456789") == strlen(f.prebuffer)
                                ? (int64_t)v * o.blocksize : (int64_t)v;
    }
    if (!f.quiet && !f.verbose && rc.verbose > 0)
        f.verbose = 1;

    /* the range, in the file's (plain) bytes */
    size = e2e.present ? e2e.plain_size : xnd_size(x);
    if (size < 0) {
        size = 0;
        for (size_t i = 0; i < x->nmaps; i++)
            if (x->maps[i]->exnode_offset + x->maps[i]->logical_length > size)
                size = x->maps[i]->exnode_offset + x->maps[i]->logical_length;
    }
    off = f.offset >= 0 ? f.offset : 0;
    if (off > size) {
        code = tool_usage(TOOL, "-O %" PRId64 ": the file has only %" PRId64 " bytes", off,
                              size);
        goto done;
    }
    if (f.length >= 0 && f.length > size - off) {
        code = tool_usage(TOOL, "-L %" PRId64 ": the file has only %" PRId64 " bytes from %"
                              PRId64, f.length, size - off, off);
        goto done;
    }
    len = f.length >= 0 ? f.length : size - off;

    if (e2e.present && strstr(e2e.chain, "aes")) {
        if (lors_key_load(f.keyfile, key, err, sizeof err) != LORS_OK) {
            tool_error(TOOL, "the aes key: %s", err);
            code = TOOL_EXIT_INTEGRITY;
            goto done;
        }
        o.key = key;
    }

    if (strcmp(out, "-") == 0) {
        fd = STDOUT_FILENO;
    } else {
        int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (f.resume ? 0 : O_TRUNC);
        fd = open(out, f.resume ? (flags & ~O_WRONLY) | O_RDWR : flags, 0666);
        if (fd < 0) {
            tool_error(TOOL, "%s: %s", out, strerror(errno));
            code = TOOL_EXIT_IO;
            goto done;
        }
    }
    if (f.resume) {
        code = resume_point(&f, x, e2e.present, fd, off, len, &skip);
        if (code)
            goto done;
        if (skip >= len) {
            if (!f.quiet)
                tool_error(TOOL, "%s: already holds the %" PRId64 " bytes asked for; nothing "
                               "to do", out, len);
            goto done;
        }
        if (lseek(fd, skip, SEEK_SET) < 0) {
            tool_error(TOOL, "%s: %s", out, strerror(errno));
            code = TOOL_EXIT_IO;
            goto done;
        }
    }
    o.offset = off + skip;
    o.length = len - skip;

    /* the engine's events count stored bytes: for a transformed file, not the plain ones */
    code = tool_feed_open(TOOL, &feed, f.events, "download", e2e.present ? -1 : o.length,
                              f.quiet ? -1 : f.progress);
    if (code)
        goto done;
    if (!tool_lbone_reports_off(f.no_report)) {
        meter = tool_lbone_meter_new();
        tool_tee_add(&feed.tee, tool_lbone_meter_event, meter);
    }
    o.on_event = tool_feed_fn(&feed);
    o.netlog_path = f.netlog;
    o.event_arg = &feed.tee;
    if (feed.es) {
        char xp[3 * PATH_MAX], op[3 * PATH_MAX];
        tool_events_encode(path, xp, sizeof xp);
        tool_events_encode(out, op, sizeof op);
        tool_events_printf(feed.es, "BEGIN", "op=download exnode=%s size=%" PRId64 " off=%"
                             PRId64 " len=%" PRId64 " resumed=%" PRId64 " out=%s e2e=%s", xp,
                             size, o.offset, o.length, skip, op,
                             e2e.present ? e2e.chain : "-");
    }

    lrc = lors_download_fd(&o, x, fd, &rep);
    tool_progress_finish(feed.bar); /* end the bar's line before any message */
    feed.bar = NULL;
    if (lrc != LORS_OK) {
        code = tool_exit_code(lrc);
        int64_t kept = skip + rep.bytes_written;
        const char *why = rep.error[0] ? rep.error : lors_strerror(lrc);
        if (fd == STDOUT_FILENO)
            tool_error(TOOL, "%s: %s", path, why);
        else if (kept == 0)
            tool_error(TOOL, "%s: %s; %s holds none of it", path, why, out);
        else
            tool_error(TOOL, "%s: %s; %s holds bytes %" PRId64 "-%" PRId64 " (resume with "
                           "-R)", path, why, out, off, off + kept - 1);
    }
    if (fd != STDOUT_FILENO) {
        int cfd = fd;
        fd = -1;
        if (close(cfd) < 0 && code == TOOL_EXIT_OK) {
            tool_error(TOOL, "%s: %s", out, strerror(errno));
            code = TOOL_EXIT_IO;
        }
    }
    if (f.verbose && !f.quiet)
        print_report(&rep);
    if (lrc == LORS_OK && meter) {
        char **servers;
        size_t n;
        if (tool_lbone_servers(&f.lb, &rc, &servers, &n) == 0) {
            tool_lbone_meter_send(TOOL, meter, servers, n, f.verbose && !f.quiet);
            tool_lbone_servers_free(servers, n);
        }
    }

done:
    if (feed.es)
        tool_events_printf(feed.es, "END", "bytes=%" PRId64 " seconds=%.3f rc=%d",
                             rep.bytes_written, rep.seconds, code);
    tool_feed_close(&feed);
    memset(key, 0, sizeof key);
    if (fd > STDOUT_FILENO)
        close(fd);
    lors_dl_report_free(&rep);
    tool_lbone_meter_free(meter);
    xnd_free(x);
    if (rc_loaded)
        tool_rc_free(&rc);
    return code;
}
