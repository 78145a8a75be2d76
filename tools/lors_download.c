/* lors_download.c -- lors_download: a network file's bytes, in order, to a file or stdout.
 *
 * A thin front end over lors_download_fd() (lors.h): settings come from the defaults, then
 * the rc file, then the flags.  The output file is written directly, not through a temporary
 * file, so that what a failed or interrupted run leaves behind can be resumed: -R checks it
 * against the exNode's checksums (lors_verify_prefix), cuts it at the first block that does
 * not match and downloads only the rest; once the range is all there, what an older, longer
 * file left after it is cut, so OUT ends as the range exactly.  A file whose every mapping
 * has checksums is written in place (each block at its offset as soon as it is checked, in
 * any order, so a slow depot's block holds nothing up), and its control file OUT.lnsdl
 * records which blocks are there: saved now and then on the way, and with exactly the bytes
 * written when the run fails or is interrupted (lors_download_ctl.c).  The exNode is read
 * before the output is opened, so a bad exNode leaves no empty output file behind.
 *
 * What the user must hear even from a run that worked: a copy that failed on the way (lost
 * redundancy: one line, kept under --quiet, as rsync keeps its warnings under -q), and on
 * Ctrl-C which bytes the output holds, as its record says.  Binary data is not written to a
 * terminal unless -o - asks for it, as curl refuses.
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
#include "lors_download_ctl.h"
#include "tool.h"
#include "tool_opt.h"

static const char *TOOL = "lors_download";

/* What the defaults, the rc file and the flags said (tool_opt.h). */
typedef struct settings {
    tool_common_t c;
    const char *output, *keyfile, *prebuffer, *netlog;
    tool_lbone_opts_t lb;   /* --lbone: where throughput reports go */
    int resume, no_verify, no_report;
    int depot_cap, redundancy, pcount, cache;
    int64_t offset, length, blocksize, memory;
} settings_t;

#define S(field) TOOL_OFF(settings_t, field)

/* -q: a size checked now, kept as written: a plain number counts blocks. */
static int set_prebuffer(void *sp, const tool_opt_t *o, const char *name, const char *val,
                         tool_from from, char *err, size_t errlen)
{
    if (tool_opt_check(o, TOOL_OPT_SIZE, name, val, from, err, errlen) < 0)
        return -1;
    ((settings_t *)sp)->prebuffer = val;
    return 0;
}

static const tool_opt_t opts[] = {
    TOOL_OPT_EXNODE,
    {TOOL_OPT_STR, "output", 'o', NULL, S(output), 0, 0, NULL, "OUT",
     "where the bytes go (default -: stdout)", NULL},
    TOOL_OPT_RANGE(S(offset), S(length), "only the bytes from N on (K, M, G, T)",
                   "... and only N of them"),
    {TOOL_OPT_SWITCH, "resume", 'R', NULL, S(resume), 1, 0, NULL, NULL,
     "OUT holds a prefix from an earlier run: check it against the\nchecksums, cut it at the "
     "first bad block, fetch the rest;\nbytes past the range go", NULL},
    TOOL_OPT_THREADS(0, "0", "parallel streams (default 0: automatic, 8 to 64 by the depots\n"
                     "and their latency)"),
    {TOOL_OPT_INT, "depot-streams", 'a', NULL, S(depot_cap), 1, TOOL_MAX_THREADS, "4", "N",
     "most streams on one depot at once", NULL},
    {TOOL_OPT_SIZE, "bs|block-size", 0, "DATA_BLOCKSIZE", S(blocksize), 1, 1 << 30, "1M", "N",
     "block size (default 1M; rounded up to the checksum block)", NULL},
    {TOOL_OPT_INT, "redundancy", 'r', NULL, S(redundancy), 1, 8, "2", "R",
     "most fetches of one block at once, 1..8 (default 2; 1: none)", NULL},
    {TOOL_OPT_INT, "progress-count", 'p', NULL, S(pcount), 0, 1000000, "3", "P",
     "later blocks done before a lagging block gets a redundant\nfetch (default 3; 0: never)",
     NULL},
    {TOOL_OPT_FN, "prebuffer", 'q', NULL, 0, 0, INT64_MAX, NULL, "N",
     "bytes ready before the first write (a plain number: blocks)", set_prebuffer},
    {TOOL_OPT_INT, "cache", 'C', NULL, S(cache), 1, 1000000, NULL, "N",
     "reorder buffer of N blocks", NULL},
    {TOOL_OPT_SIZE, "memory", 'M', "MAX_INTERNAL_BUFFER", S(memory), 1, INT64_MAX, "64M", "N",
     "reorder buffer in bytes (default 64M; with -C the smaller wins)", NULL},
    TOOL_OPT_TIMEOUT("30s", "longest wait for any progress of one depot read"),
    TOOL_OPT_IBP_WIRE,
    {TOOL_OPT_SWITCH, "no-verify", 0, NULL, S(no_verify), 1, 0, NULL, NULL,
     "do not check blocks (or the -R prefix) against the checksums", NULL},
    {TOOL_OPT_STR, "key-file", 0, NULL, S(keyfile), 0, 0, NULL, "FILE",
     "the aes key of an encrypted file (else $LNS_KEY or\n$LNS_KEY_FILE); never on the "
     "command line", NULL},
    TOOL_OPT_VERBOSE("print the per-depot report at the end"),
    TOOL_OPT_EVENTS,
    {TOOL_OPT_STR, "netlog", 0, NULL, S(netlog), 0, 0, NULL, "FILE|fd:N",
     "append a NetLogger line per fetch step (docs/netlogger.md)", NULL},
    TOOL_OPT_PROGRESS,
    TOOL_OPT_QUIET_BUT(0, "print nothing but errors and warnings of lost copies (-q\nis the "
                          "pre-buffer)"),
    {TOOL_OPT_FN, "lbone", 0, NULL, S(lb), 0, 0, NULL, "URL",
     "the L-Bone to tell each depot's throughput (else the rc\nfile's LBONE_SERVER lines; "
     "neither: no report)", tool_lbone_opt},
    {TOOL_OPT_SWITCH, "no-report", 0, NULL, S(no_report), 1, 0, NULL, NULL,
     "do not report throughput (also LNS_NO_REPORT=1)", NULL},
    TOOL_OPT_SETTINGS,
    TOOL_OPT_TABLE_END,
};

static int check(void *sp, int argc, char **argv, int first)
{
    const settings_t *f = sp;
    if (f->resume && (!f->output || strcmp(f->output, "-") == 0))
        return tool_usage(TOOL, "-R resumes a file: give -o FILE");
    if (!f->output && isatty(STDOUT_FILENO))
        return tool_usage(TOOL, "refusing to write binary data to a terminal; give -o FILE, or "
                          "-o - to write it anyway");
    return TOOL_EXIT_OK;
}

/* ---- Ctrl-C ------------------------------------------------------------------------------
 * SIGINT or SIGTERM during the download stops the engine (tool_stop.c), which returns within
 * about 100 ms with every block it wrote recorded: the control file is then saved with
 * exactly those bytes, and the one line names them from that record, not from the file's
 * size (written in place, a file is as long as its furthest block).  Then the tool dies of
 * the signal, so that the shell sees 130 or 143.  A second signal exits at once; the record
 * is then the last one saved, which never claims a byte the disk lacks. */

/* c's bytes, for a message: "12582912 of the 25165824 bytes (bytes 0-6291455,
 * 12582912-18874367)", the first four runs named. */
static void held_text(const dl_ctl_t *c, char *buf, size_t size)
{
    int n = snprintf(buf, size, "%" PRId64 " of the %" PRId64 " bytes", dl_ctl_bytes(c),
                     c->len);
    for (size_t i = 0; i < c->n && i < 4 && n >= 0 && (size_t)n < size; i++)
        n += snprintf(buf + n, size - (size_t)n, "%s%" PRId64 "-%" PRId64,
                      i == 0 ? (c->n == 1 ? " (bytes " : " (in runs: bytes ") : ", ",
                      c->spans[i].off, c->spans[i].off + c->spans[i].len - 1);
    if (c->n > 4 && n >= 0 && (size_t)n < size)
        n += snprintf(buf + n, size - (size_t)n, ", ... %zu runs in all", c->n);
    if (c->n > 0 && n >= 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, ")");
}

/* The line of a stopped download: what OUT holds, from the record saved now when it was
 * written in place.  written: the bytes of the range now in OUT from its start on (in order),
 * or written to stdout; -1: not counted (a transformed file's). */
static void say_interrupted(const char *path, const char *out, int to_stdout, dl_ctl_t *ctl,
                            int in_place, int64_t off, int64_t written)
{
    char held[256];
    if (to_stdout && written >= 0)
        tool_error(TOOL, "%s: interrupted after %" PRId64 " bytes written to stdout", path,
                   written);
    else if (to_stdout)
        tool_error(TOOL, "%s: interrupted", path);
    else if (in_place) {
        held_text(ctl, held, sizeof held);
        if (dl_ctl_save(ctl) < 0)
            tool_error(TOOL, "%s: interrupted; %s holds %s, but %s cannot be written (%s): -R "
                       "will check %s against the checksums", path, out, held, ctl->path,
                       strerror(errno), out);
        else
            tool_error(TOOL, "%s: interrupted; %s holds %s, which %s records (resume with -R)",
                       path, out, held, ctl->path);
        ctl->err = 0; /* said, or the record is now whole */
    } else if (written > 0) {
        tool_error(TOOL, "%s: interrupted; %s holds bytes %" PRId64 "-%" PRId64 " (resume with "
                   "-R)", path, out, off, off + written - 1);
    } else {
        tool_error(TOOL, "%s: interrupted; %s holds none of it", path, out);
    }
}

static const tool_cmd_t cmd = {
    "lors_download",
    "Usage: lors_download [options] EXNODE\n"
    "Fetch a network file's bytes from whichever replicas answer best, many streams at once,\n"
    "and write them in order to a file or to stdout (so a player can read them as they come).\n"
    "\n",
    "\nExit: 0 ok (a line on stderr if some copies failed on the way), 2 usage (also: stdout\n"
    "is a terminal and no -o), 3 exNode, 4 local I/O, 6 some bytes have no live copy,\n"
    "7 integrity or key, 9 internal; Ctrl-C: 130.  See lors_download(1).\n",
    opts, sizeof(settings_t), check,
};


/* Every mapping's bytes have lns_checksum digests: what -R needs to find the holes an
 * interrupted in-place download leaves. */
static int all_checksummed(const xnd_t *x)
{
    for (size_t i = 0; i < x->nmaps; i++) {
        const xnd_func_t *fn = x->maps[i]->func;
        if (x->maps[i]->logical_length > 0 &&
            (!fn || strcmp(fn->name, LORS_CHECKSUM_FUNC) != 0))
            return 0;
    }
    return x->nmaps > 0;
}

static int has_checksums(const xnd_t *x)
{
    const char *d;
    for (size_t i = 0; i < x->nmaps; i++) {
        const xnd_func_t *fn = x->maps[i]->func;
        if (fn && (strcmp(fn->name, LORS_CHECKSUM_FUNC) == 0 ||
                   (strcmp(fn->name, LORS_EC_META) == 0 &&
                    xnd_meta_get_string(&fn->args, "digests", &d) == XND_OK && *d)))
            return 1;
    }
    return 0;
}

/* -R: how much of OUT to keep.  *skip: bytes of the range already there and trusted. */
static int resume_point(const settings_t *f, const xnd_t *x, int e2e, int fd, int64_t off,
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
    /* a file of the full size is checked too: an in-place run that was killed leaves one
     * with holes */
    int64_t have = st.st_size < len ? st.st_size : len;
    int64_t good = have;
    if (have > 0 && !f->no_verify) {
        if (e2e) {
            if (!f->c.quiet)
                tool_error(TOOL, "%s: a transformed file's bytes cannot be checked against "
                               "its checksums; keeping its %" PRId64 " bytes as they are",
                               f->output, have);
        } else if (!has_checksums(x)) {
            if (!f->c.quiet)
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
        if (!f->c.quiet)
            tool_error(TOOL, "%s: the first %" PRId64 " of its %" PRId64 " bytes match the "
                           "checksums, the rest failed or could not be checked; cut it there and "
                           "resuming from byte %" PRId64, f->output, good, have, off + good);
    }
    *skip = good;
    return TOOL_EXIT_OK;
}

/* -R and OUT holds the range's len bytes: what an older, longer file left after them goes, so
 * that OUT ends as the range exactly, as a run without -R (which truncates OUT) leaves it.
 * The bytes cut in *cut.  TOOL_EXIT_OK, or TOOL_EXIT_IO after a line. */
static int cut_past_range(const char *out, int fd, int64_t len, int64_t *cut)
{
    struct stat st;
    *cut = 0;
    if (fstat(fd, &st) < 0 ||
        (S_ISREG(st.st_mode) && st.st_size > len && ftruncate(fd, len) < 0)) {
        tool_error(TOOL, "%s: cutting it to the %" PRId64 " bytes asked for: %s", out, len,
                   strerror(errno));
        return TOOL_EXIT_IO;
    }
    if (S_ISREG(st.st_mode) && st.st_size > len) /* a device has no end to move */
        *cut = st.st_size - len;
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

/* The engine's options from the command line's. */
static void opts_of(const settings_t *f, lors_download_opts_t *o)
{
    lors_download_opts_init(o);
    o->threads = f->c.threads;
    o->depot_cap = f->depot_cap;
    o->blocksize = f->blocksize;
    o->redundancy = f->redundancy;
    o->progress = f->pcount;
    o->timeout_ms = (int)(1000 * f->c.timeout);
    o->verify = !f->no_verify;
    int64_t cache = f->cache > 0 ? f->cache * o->blocksize : INT64_MAX;
    o->buffer_bytes = f->memory < cache ? f->memory : cache;
    if (f->prebuffer) { /* a plain number counts blocks; with a suffix, bytes */
        uint64_t v = 0;
        lns_parse_size(f->prebuffer, &v); /* checked by set_prebuffer */
        o->prebuffer_bytes = strspn(f->prebuffer, "0123456789") == strlen(f->prebuffer)
                                 ? (int64_t)v * o->blocksize : (int64_t)v;
    }
}

/* -O and -L within the file's size bytes: the range, or the usage error's exit code. */
static int range_of(const settings_t *f, int64_t size, int64_t *off, int64_t *len)
{
    *off = f->offset >= 0 ? f->offset : 0;
    if (*off > size)
        return tool_usage(TOOL, "-O %" PRId64 ": the file has only %" PRId64 " bytes", *off,
                          size);
    if (f->length >= 0 && f->length > size - *off)
        return tool_usage(TOOL, "-L %" PRId64 ": the file has only %" PRId64 " bytes from %"
                          PRId64, f->length, size - *off, *off);
    *len = f->length >= 0 ? f->length : size - *off;
    return TOOL_EXIT_OK;
}

/* stdout for "-", else the file (truncated unless resuming); -1 said in one line. */
static int open_output(const char *out, int resume)
{
    if (strcmp(out, "-") == 0)
        return STDOUT_FILENO;
    int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (resume ? 0 : O_TRUNC);
    int fd = open(out, resume ? (flags & ~O_WRONLY) | O_RDWR : flags, 0666);
    if (fd < 0)
        tool_error(TOOL, "%s: %s", out, strerror(errno));
    return fd;
}

/* A file written in place: its control file (OUT.lnsdl), loaded when resuming (a stale one
 * removed otherwise).  How many spans it records (<= 0: none to trust). */
static int control_open(dl_ctl_t *ctl, const settings_t *f, const char *out, int fd,
                        const xnd_t *x, int64_t off, int64_t len)
{
    char err[512];
    int have = 0;
    dl_ctl_init(ctl, out, fd, x, off, len);
    if (!f->resume) {
        dl_ctl_remove(ctl); /* a stale one, of the file just truncated */
    } else if ((have = dl_ctl_load(ctl, err, sizeof err)) < 0) {
        if (!f->c.quiet)
            tool_error(TOOL, "%s; checking %s against the checksums instead", err, out);
        dl_ctl_remove(ctl);
    } else if (have > 0) {
        /* nothing it names is taken on trust: each run is checked against the digests */
        int64_t dropped = dl_ctl_check(ctl, x);
        if (dl_ctl_bytes(ctl) + dropped > 0 && !f->c.quiet)
            tool_error(TOOL, "%s: %" PRId64 " of the %" PRId64 " bytes are there already "
                           "(%s, checked)%s; fetching the rest", out, dl_ctl_bytes(ctl), len,
                           ctl->path, dropped ? "; the others it names do not match" : "");
    }
    return have;
}

/* -R without a control file: the output's prefix that matches the checksums is kept (skip),
 * the output positioned after it.  *finished: it holds the whole range already (cut to it). */
static int resume_at(const settings_t *f, const xnd_t *x, int e2e, const char *out, int fd,
                     int64_t off, int64_t len, dl_ctl_t *ctl, int64_t *skip, int *finished)
{
    int code = resume_point(f, x, e2e, fd, off, len, skip);
    if (code)
        return code;
    if (ctl && *skip > 0)
        dl_ctl_placed(ctl, off, *skip); /* the prefix just checked is there too */
    if (*skip >= len) {
        int64_t cut;
        *finished = 1;
        code = cut_past_range(out, fd, len, &cut);
        if (!code && !f->c.quiet && cut > 0)
            tool_error(TOOL, "%s: already holds the %" PRId64 " bytes asked for; cut the %"
                           PRId64 " bytes after them", out, len, cut);
        else if (!code && !f->c.quiet)
            tool_error(TOOL, "%s: already holds the %" PRId64 " bytes asked for; nothing "
                           "to do", out, len);
        return code;
    }
    if (lseek(fd, *skip, SEEK_SET) < 0) {
        tool_error(TOOL, "%s: %s", out, strerror(errno));
        return TOOL_EXIT_IO;
    }
    return TOOL_EXIT_OK;
}

/* The events stream's BEGIN line. */
static void say_begin(tool_events_t *es, const char *path, const char *out, int64_t size,
                      const lors_download_opts_t *o, int64_t skip, const char *chain)
{
    char xp[3 * PATH_MAX], op[3 * PATH_MAX];
    tool_events_encode(path, xp, sizeof xp);
    tool_events_encode(out, op, sizeof op);
    tool_events_printf(es, "BEGIN", "op=download exnode=%s size=%" PRId64 " off=%" PRId64
                       " len=%" PRId64 " resumed=%" PRId64 " out=%s e2e=%s", xp, size,
                       o->offset, o->length, skip, op, chain);
}

/* A failed download in one line: why, and what the output holds (kept: the bytes from the
 * range's start, off; written in place, ctl: also the blocks after them, recorded for -R). */
static void say_failed(const char *path, const char *out, int to_stdout, dl_ctl_t *ctl,
                       int64_t off, int64_t kept, const char *why)
{
    int64_t more = ctl ? dl_ctl_bytes(ctl) - kept : 0;
    if (ctl && dl_ctl_save(ctl) < 0 && !ctl->err)
        ctl->err = errno;
    char after[sizeof ctl->path + 256] = "";
    if (more > 0)
        snprintf(after, sizeof after, " and %" PRId64 " bytes after them, which %s records",
                 more, ctl->path);
    if (to_stdout)
        tool_error(TOOL, "%s: %s", path, why);
    else if (kept == 0 && more <= 0)
        tool_error(TOOL, "%s: %s; %s holds none of it", path, why, out);
    else if (kept == 0)
        tool_error(TOOL, "%s: %s; %s holds %" PRId64 " bytes of it, which %s records "
                       "(resume with -R)", path, why, out, more, ctl->path);
    else
        tool_error(TOOL, "%s: %s; %s holds bytes %" PRId64 "-%" PRId64 "%s (resume with "
                       "-R)", path, why, out, off, off + kept - 1, after);
}

int main(int argc, char **argv)
{
    settings_t f;
    tool_feed_t feed = {0};
    lors_download_opts_t o;
    lors_dl_report_t rep = {0};
    lors_e2e_info_t e2e;
    xnd_t *x = NULL;
    tool_lbone_meter_t *meter = NULL;
    unsigned char key[LORS_KEY_BYTES];
    char err[512];
    int code, lrc = LORS_OK, fd = -1, in_place = 0;
    int64_t size, off = 0, len = 0, skip = 0;
    const char *path, *out;
    dl_ctl_t ctl = {0};

    code = tool_opt_exnode(&cmd, argc, argv, &f, &path, &x);
    if (code)
        return code;
    out = f.output ? f.output : "-";
    if (lors_e2e_info(x, &e2e, err, sizeof err) != LORS_OK) {
        tool_error(TOOL, "%s: %s", path, err);
        code = TOOL_EXIT_EXNODE;
        goto done;
    }

    opts_of(&f, &o);

    /* the range, in the file's (plain) bytes */
    size = e2e.present ? e2e.plain_size : xnd_extent(x);
    if ((code = range_of(&f, size, &off, &len)))
        goto done;

    code = tool_key(TOOL, e2e.present ? e2e.chain : NULL, f.keyfile, key, &o.key);
    if (code != TOOL_EXIT_OK)
        goto done;

    if ((fd = open_output(out, f.resume)) < 0) {
        code = TOOL_EXIT_IO;
        goto done;
    }
    /* a file with checksums is written in place: a slow block holds nothing up; its control
     * file (OUT.lnsdl) says which bytes are there for -R */
    in_place = fd != STDOUT_FILENO && !e2e.present && !f.no_verify && all_checksummed(x);
    int have = in_place ? control_open(&ctl, &f, out, fd, x, off, len) : 0;
    if (f.resume && have <= 0) {
        int finished = 0;
        code = resume_at(&f, x, e2e.present, out, fd, off, len, in_place ? &ctl : NULL, &skip,
                         &finished);
        if (code || finished)
            goto done;
    }
    o.offset = off + skip;
    o.length = len - skip;
    o.in_place = in_place;
    if (in_place) {
        o.have = ctl.spans;
        o.nhave = ctl.n;
        o.on_placed = dl_ctl_placed;
        o.placed_arg = &ctl;
    }

    /* Ctrl-C from here on stops the engine (the -R check above it kills: nothing is written) */
    static char again[PATH_MAX + 96];
    if (in_place)
        snprintf(again, sizeof again, "-R takes the bytes %s recorded last", ctl.path);
    else
        snprintf(again, sizeof again, "%s holds what was written of it", out);
    o.stop = tool_stop_install(TOOL, again);

    /* the engine's events count stored bytes: for a transformed file, not the plain ones */
    code = tool_feed_open(TOOL, &feed, f.c.events, "download", e2e.present ? -1 : o.length,
                              f.c.quiet ? -1 : f.c.progress);
    if (code)
        goto done;
    meter = tool_lbone_meter_tee(&feed.tee, f.no_report);
    o.netlog_path = f.netlog;
    tool_feed_attach(&feed, &o.on_event, &o.event_arg);
    if (feed.es)
        say_begin(feed.es, path, out, size, &o, skip, e2e.present ? e2e.chain : "-");

    lrc = lors_download_fd(&o, x, fd, &rep);
    tool_stop_release();
    tool_progress_finish(feed.bar); /* end the bar's line before any message */
    feed.bar = NULL;
    if (lrc == LORS_OK)
        tool_print_degraded(TOOL, &rep);
    if (lrc == LORS_OK && f.resume) {
        int64_t cut;
        code = cut_past_range(out, fd, len, &cut);
        if (!code && !f.c.quiet && cut > 0)
            tool_error(TOOL, "%s: cut the %" PRId64 " bytes after the %" PRId64 " asked for",
                       out, cut, len);
    }
    if (lrc == LORS_E_STOPPED) {
        code = tool_stop_exit_code();
        /* in order, the file's position is after its bytes (plain ones, also transformed) */
        off_t at = fd == STDOUT_FILENO || in_place ? -1 : lseek(fd, 0, SEEK_CUR);
        say_interrupted(path, out, fd == STDOUT_FILENO, &ctl, in_place, off,
                        at >= 0 ? (int64_t)at : e2e.present ? -1 : rep.bytes_written);
    } else if (lrc != LORS_OK) {
        code = tool_exit_code(lrc);
        say_failed(path, out, fd == STDOUT_FILENO, in_place ? &ctl : NULL, off,
                   skip + rep.bytes_prefix, rep.error[0] ? rep.error : lors_strerror(lrc));
    } else if (in_place) {
        dl_ctl_remove(&ctl); /* complete: nothing to resume */
    }
    if (in_place && ctl.err && !f.c.quiet)
        tool_error(TOOL, "warning: %s: %s; -R would check %s against the checksums instead",
                   ctl.path, strerror(ctl.err), out);
    if (fd != STDOUT_FILENO) {
        int cfd = fd;
        fd = -1;
        if (close(cfd) < 0 && code == TOOL_EXIT_OK) {
            tool_error(TOOL, "%s: %s", out, strerror(errno));
            code = TOOL_EXIT_IO;
        }
    }
    if (f.c.verbose && !f.c.quiet)
        print_report(&rep);
    if (lrc == LORS_OK) /* the depots' measured rates, after a download that worked */
        tool_lbone_meter_report(TOOL, meter, &f.lb, &f.c.rc, f.c.verbose && !f.c.quiet);

done:
    dl_ctl_free(&ctl);
    tool_feed_end(&feed, rep.bytes_written, rep.seconds, code);
    tool_lbone_meter_free(meter); /* it listened on the feed */
    memset(key, 0, sizeof key);
    if (fd > STDOUT_FILENO)
        close(fd);
    lors_dl_report_free(&rep);
    xnd_free(x);
    tool_opt_free(&f);
    if (lrc == LORS_E_STOPPED && code > 128) { /* die of the signal, as the shell expects */
        signal(code - 128, SIG_DFL);
        raise(code - 128);
    }
    return code;
}
