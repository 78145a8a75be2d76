/* lors_upload.c -- lors_upload: a local file (or stdin) into a network file and its exNode.
 *
 * A thin front end over lors_upload_fd() (lors.h): settings come from the defaults, then the
 * rc file, then the flags; the input is read once, from a file or a pipe; the exNode is
 * written atomically (mode 0600: it holds capabilities) only when every copy of every
 * fragment is complete.  What the upload had to work around (a depot that refused or broke,
 * a copy that moved elsewhere) is one line each on stderr even without -V: a copy on another
 * depot than the one the user picked is something the user must know.
 *
 * Nothing is left stored that no exNode points to: an existing exNode is not replaced without
 * --force (checked before anything is allocated, and again, atomically, when the file is
 * put in place); a failed upload, an interrupt (SIGINT, SIGTERM: exit 130, 143) and an exNode
 * that cannot be written all free what was allocated and say so in one line, unless
 * --keep-partial keeps the complete fragments in a partial exNode.
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
#include "tool_opt.h"
#include "lns_err.h"

static const char *TOOL = "lors_upload";

#define MIB ((int64_t)1 << 20)

/* What the defaults, the rc file and the flags said (tool_opt.h); TOOL_UNSET: not given. */
typedef struct settings {
    tool_common_t c;
    const char *file, *output, *depots, *keyfile, *checksum;
    tool_lbone_opts_t lb;   /* -H/--lbone, -P, -l, -m */
    int no_report, none, use_stdin, copies, fragments, reliability, force, keep_partial;
    int no_outboard;        /* --no-outboard */
    char e2e[64];           /* the chain from -z, -a and --e2e, in command-line order */
    int e2e_from;           /* where e2e came from: TOOL_FROM_RC or TOOL_FROM_ARGV; 0: none */
    int64_t blocksize, duration, memory, offset, length, e2e_bs, provisional;
    int level;              /* --level; TOOL_UNSET_INT: the compressor's default */
    int64_t bitrate;        /* --bitrate, bit/s; 0 = not given */
    int ec_k, ec_m;         /* --ec K+M; 0: replication */
    int64_t ec_piece;
} settings_t;

#define S(field) TOOL_OFF(settings_t, field)

/* -z, -a, --e2e and E2E_ORDER: transforms in the order given (tool_e2e_list).  The command
 * line's chain replaces the rc file's; there, none is -n's job. */
static int set_e2e(void *sp, const tool_opt_t *o, const char *name, const char *val,
                   tool_from from, char *err, size_t errlen)
{
    settings_t *s = sp;
    if (s->e2e_from != (int)from)
        s->e2e[0] = '\0';
    s->e2e_from = (int)from;
    /* -z, --zlib, -a: its name */
    int r = tool_e2e_list(name, val ? val : o->name, from != TOOL_FROM_ARGV, s->e2e,
                          sizeof s->e2e, err, errlen);
    if (r > 0)
        return lns_err_set(err, errlen, "--e2e none: use -n (no transforms and no checksum), "
                           "or leave --e2e out");
    return r;
}

static int set_rejected(void *sp, const tool_opt_t *o, const char *name, const char *val,
                        tool_from from, char *err, size_t errlen)
{
    lns_err_set(err, errlen, "%s", o->letter == 'e'
             ? "-e: DES encryption is not supported (a 56-bit key is no protection); use -a "
               "(AES-256-GCM)"
             : "-x: XOR \"encryption\" is not supported (it hides nothing); use -a (AES-256-GCM)");
    return -1;
}

/* SI multipliers: 15M = 15,000,000 bit/s */
static int set_bitrate(void *sp, const tool_opt_t *o, const char *name, const char *val,
                       tool_from from, char *err, size_t errlen)
{
    double v;
    if (lns_parse_rate(val, &v) < 0) {
        lns_err_set(err, errlen, "%s %s: expected bits per second such as 15M", name, val);
        return -1;
    }
    ((settings_t *)sp)->bitrate = (int64_t)v;
    return 0;
}

static int set_ec(void *sp, const tool_opt_t *o, const char *name, const char *val,
                  tool_from from, char *err, size_t errlen)
{
    settings_t *s = sp;
    if (lors_ec_parse(val, &s->ec_k, &s->ec_m) != LORS_OK) {
        lns_err_set(err, errlen, "%s %s: expected K+M such as 4+2 (K 1..32 data pieces, M "
                    "1..16 parity pieces)", name, val);
        return -1;
    }
    return 0;
}

static const tool_opt_t opts[] = {
    TOOL_OPT_HEADING("Input and output:"),
    {TOOL_OPT_STR, "file", 'f', NULL, S(file), 0, 0, NULL, "FILE",
     "the file to upload (or give it as the argument)", NULL},
    {TOOL_OPT_SWITCH, "stdin", 'i', NULL, S(use_stdin), 1, 0, NULL, NULL,
     "read standard input (length unknown for a pipe)", NULL},
    {TOOL_OPT_STR, "output", 'o', NULL, S(output), 0, 0, NULL, "XND",
     "the exNode (default FILE.xnd; from stdin: stdout)", NULL},
    TOOL_OPT_FORCE(S(force)),
    {TOOL_OPT_SWITCH, "keep-partial", 0, NULL, S(keep_partial), 1, 0, NULL, NULL,
     "if the upload fails or is interrupted, write the exNode of the\nfragments completed "
     "instead of freeing them", NULL},
    TOOL_OPT_RANGE(S(offset), S(length),
                   "upload the input from byte N on (regular files; K, M, G, T)",
                   "... only N bytes of it"),
    TOOL_OPT_HEADING("Where and how:"),
    TOOL_OPT_DEPOTS(S(depots), S(lb)),
    {TOOL_OPT_INT, "copies", 'c', "COPIES", S(copies), 1, 1000, "1", "N",
     "copies of each fragment", NULL},
    {TOOL_OPT_INT, "fragments", 'F', "FRAGMENTS_PER_FILE", S(fragments), 1, 1000000, "4", "N",
     "fragments per copy when the length is known", NULL},
    {TOOL_OPT_FN, "ec", 0, "ERASURE_CODING", 0, 0, 0, NULL, "K+M",
     "erasure coding instead of copies: each stripe's K data and M\nparity pieces on K+M "
     "distinct depots; any K give it back", set_ec},
    {TOOL_OPT_SIZE, "ec-piece", 0, "EC_PIECE_SIZE", S(ec_piece), 4096, 64 << 20, "1M", "N",
     "bytes per piece with --ec (a multiple of 4K)", NULL},
    {TOOL_OPT_SIZE, "bs|block-size", 0, "DATA_BLOCKSIZE", S(blocksize), 1, INT64_MAX, "5M",
     "N", "fragment size when the length is unknown", NULL},
    {TOOL_OPT_DURATION, "duration", 'd', "DURATION", S(duration), 1, INT64_MAX, "1d", "T",
     "lifetime (s, m, h, d; -1 or max: each depot's maximum)", NULL},
    TOOL_OPT_PROVISIONAL(S(provisional)),
    TOOL_OPT_STORAGE(S(reliability)),
    TOOL_OPT_DEPOT_CALLS("3m"),
    {TOOL_OPT_SIZE, "memory", 'M', "MAX_INTERNAL_BUFFER", S(memory), 2 << 20, INT64_MAX, NULL,
     "N", "bound on the memory held for the data (fewer threads, and\nfrom a pipe smaller "
     "fragments, to fit)", NULL},
    TOOL_OPT_HEADING("End to end:"),
    {TOOL_OPT_STR, "checksum", 'k', NULL, S(checksum), 0, 0, NULL, "ALG",
     "digest per checksum block (default blake3; sha256, any OpenSSL\ndigest, or none)", NULL},
    {TOOL_OPT_SWITCH, "no-outboard", 0, NULL, S(no_outboard), 1, 0, NULL, NULL,
     "store no 16 KiB chaining values after the data: a small read\nthen loads its whole "
     "checksum block", NULL},
    {TOOL_OPT_SIZE, "e2e-block-size", 'E', "E2E_BLOCKSIZE", S(e2e_bs), 1, INT64_MAX, NULL, "N",
     "bytes per checksum block and per transform frame (default\n1M; a compressor's frames 4M)",
     NULL},
    {TOOL_OPT_FN, "zstd", 'z', NULL, 0, 0, 0, NULL, NULL,
     "compress (zstd); with -a, the order on the command line is\nthe order applied", set_e2e},
    {TOOL_OPT_FN, "zlib", 0, NULL, 0, 0, 0, NULL, NULL,
     "compress with zlib instead (what -z meant before zstd)", set_e2e},
    {TOOL_OPT_FN, "aes", 'a', NULL, 0, 0, 0, NULL, NULL, "encrypt (AES-256-GCM)", set_e2e},
    {TOOL_OPT_FN, "e2e", 0, "E2E_ORDER", 0, 0, 0, NULL, "LIST",
     "the same as a list: \"zstd,aes\"", set_e2e},
    {TOOL_OPT_INT, "level", 0, NULL, S(level), 1, 99, NULL, "N",
     "the compressor's level: zstd 1-19 (default 3), zlib 1-9\n(default 6)", NULL},
    {TOOL_OPT_SWITCH, "none", 'n', NULL, S(none), 1, 0, NULL, NULL,
     "no transforms and no checksum", NULL},
    {TOOL_OPT_FN, "des", 'e', NULL, 0, 0, 0, NULL, NULL,
     "LoRS's DES: refused (a 56-bit key is no protection)", set_rejected},
    {TOOL_OPT_FN, "xor", 'x', NULL, 0, 0, 0, NULL, NULL,
     "LoRS's XOR: refused (it hides nothing)", set_rejected},
    {TOOL_OPT_STR, "key-file", 0, NULL, S(keyfile), 0, 0, NULL, "FILE",
     "the aes key (else $LNS_KEY or $LNS_KEY_FILE); never on the\ncommand line", NULL},
    TOOL_OPT_HEADING("Reporting:"),
    TOOL_OPT_VERBOSE("print the layout and what was worked around"),
    {TOOL_OPT_FN, "bitrate", 0, NULL, 0, 0, 0, NULL, "RATE",
     "record a media stream's bits per second (15M: powers of 1000)\nin the exNode, for "
     "lors_play's pre-buffer", set_bitrate},
    TOOL_OPT_EVENTS,
    TOOL_OPT_PROGRESS,
    TOOL_OPT_QUIET('q'),
    TOOL_OPT_HEADING("The L-Bone (depots near a place with room enough, when no --depot-list):"),
    TOOL_OPT_LBONE(S(lb)),
    {TOOL_OPT_SWITCH, "no-report", 0, NULL, S(no_report), 1, 0, NULL, NULL,
     "do not report the depots' throughput to the L-Bone\n(also LNS_NO_REPORT=1)", NULL},
    TOOL_OPT_HEADING("Settings:"),
    TOOL_OPT_SETTINGS,
    TOOL_OPT_TABLE_END,
};

/* One input: FILE, -f FILE, or stdin (-i, or FILE "-"); -n excludes transforms. */
static int check(void *sp, int argc, char **argv, int first)
{
    settings_t *f = sp;
    if (f->none && (f->e2e_from == TOOL_FROM_ARGV || f->checksum))
        return tool_usage(TOOL, "-n (no transforms, no checksum) excludes -z, -a, --e2e and "
                                "-k");
    if (first < argc - 1)
        return tool_usage(TOOL, "one file at a time (%s)", argv[first + 1]);
    if (first < argc && f->file)
        return tool_usage(TOOL, "two inputs: -f %s and %s", f->file, argv[first]);
    if (first < argc)
        f->file = argv[first];
    if (f->file && strcmp(f->file, "-") == 0) {
        f->file = NULL;
        f->use_stdin = 1;
    }
    if (f->file && f->use_stdin)
        return tool_usage(TOOL, "two inputs: %s and stdin (-i)", f->file);
    if (!f->file && !f->use_stdin)
        return tool_usage(TOOL, "no input: give FILE, -f FILE, or -i for stdin");
    if (f->level != TOOL_UNSET_INT) {
        const char *compressor;
        int max = lors_e2e_level_max(f->e2e_from && !f->none ? f->e2e : "", &compressor);
        if (max <= 0)
            return tool_usage(TOOL, "--level %d: no compressor to give it to (-z, --zlib)",
                              f->level);
        if (f->level > max)
            return tool_usage(TOOL, "--level %d: %s takes 1 to %d", f->level, compressor, max);
    }
    if (f->ec_k && f->copies > 1)
        return tool_usage(TOOL, "--ec %d+%d replaces copies: leave out -c %d", f->ec_k, f->ec_m,
                          f->copies);
    if (f->ec_k && f->e2e_from && !f->none)
        return tool_usage(TOOL, "--ec does not combine with -z, -a or --e2e yet");
    if (f->ec_k && f->keep_partial)
        return tool_usage(TOOL, "--ec does not combine with --keep-partial");
    if (f->ec_k && f->ec_piece % 4096 != 0)
        return tool_usage(TOOL, "--ec-piece %" PRId64 ": a multiple of 4K", f->ec_piece);
    if (f->keep_partial && f->e2e_from && !f->none)
        return tool_usage(TOOL, "--keep-partial cannot keep transformed data (-z, -a, --e2e, "
                                "rc E2E_ORDER): frames cut short do not decode");
    return TOOL_EXIT_OK;
}

static const tool_cmd_t cmd = {
    "lors_upload",
    "Usage: lors_upload [options] FILE\n"
    "       lors_upload [options] -i < INPUT      (or FILE \"-\")\n"
    "Store a file on IBP depots, striped in fragments and copied, and write its exNode.\n\n",
    "\nExit: 0 ok, 2 usage, 4 local I/O (also: the exNode exists, without --force), 5 depots,\n"
    "7 key, 9 internal, 10 stored, but some copies on fewer depots than asked (a depot\n"
    "failed), 130 SIGINT, 143 SIGTERM.  See lors_upload(1).\n",
    opts, sizeof(settings_t), check,
};

/* The input: open it, position it at -O, and find its length (-1: a pipe, unknown). */
static int open_input(const settings_t *f, int *fd, int64_t *length)
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

/* Fail before uploading anything if the exNode could not be written afterwards (a finished
 * upload whose capabilities are lost can only expire), or would replace another one. */
static int check_output(const char *out, int force, int *replace)
{
    char dir[PATH_MAX + 8];
    *replace = force;
    if (strcmp(out, "-") == 0)
        return TOOL_EXIT_OK;
    snprintf(dir, sizeof dir, "%s", out);
    const char *d = dirname(dir);
    if (access(d, W_OK | X_OK) != 0) {
        tool_error(TOOL, "the exNode %s cannot be written: %s: %s", out, d, strerror(errno));
        return TOOL_EXIT_IO;
    }
    return tool_check_output(TOOL, out, NULL, force, replace);
}

/* "interrupted at 42%" (the share of the copies stored, as the bar shows it) or, when the
 * total is not known, "interrupted after 2.5MiB" (read). */
static void stop_where(const lors_upload_opts_t *o, const lors_report_t *rep, int64_t length,
                       char *buf, size_t size)
{
    char h[32];
    if (length > 0 && !(o->e2e && *o->e2e)) {
        int64_t total = o->ec_k ? length / o->ec_k * (o->ec_k + o->ec_m) : length * o->copies;
        int64_t pct = total > 0 ? rep->bytes_stored * 100 / total : 0;
        snprintf(buf, size, "interrupted at %d%%", (int)(pct > 99 ? 99 : pct));
        return;
    }
    tool_human(rep->bytes_read, h, sizeof h);
    snprintf(buf, size, "interrupted after %s", h);
}

/* After a failed or interrupted upload: write the partial exNode px if --keep-partial gave
 * one (freeing it too if that fails), then one line: where it stopped (stopped only), what
 * was kept, what was freed. */
static void after_failure(const lors_upload_opts_t *o, lors_report_t *rep, int64_t length,
                          xnd_t *px, const char *out, int replace, int stopped)
{
    char where[64] = "", kept[PATH_MAX + 128] = "", freed[160] = "";
    int any = rep->freed.freed + rep->freed.unfreed;
    if (stopped)
        stop_where(o, rep, length, where, sizeof where);
    if (px) {
        int frags = rep->mappings / o->copies;
        if (strcmp(out, "-") == 0)
            tool_leases_promise(px, NULL, o);
        if (tool_save_exnode(TOOL, px, out, replace) == TOOL_EXIT_OK) {
            tool_leases_extend(TOOL, px, NULL, o, out, NULL);
            snprintf(kept, sizeof kept, "kept %d complete fragment%s (%d mapping%s) in %s",
                     frags, frags == 1 ? "" : "s", rep->mappings, rep->mappings == 1 ? "" : "s",
                     strcmp(out, "-") ? out : "the exNode on stdout");
        } else {
            lors_freed_t more;
            lors_discard(px, o->threads, o->timeout_s, &more);
            rep->freed.freed += more.freed;
            rep->freed.unfreed += more.unfreed;
            /* the same depots, as a rule: the larger count is the closer one */
            rep->freed.depots = rep->freed.depots > more.depots ? rep->freed.depots
                                                                 : more.depots;
            any = 1;
        }
    }
    if (!stopped && !kept[0] && !any)
        return; /* nothing was allocated: the error line said it all */
    if (any || !kept[0])
        tool_freed_text(&rep->freed, freed, sizeof freed);
    fprintf(stderr, "%s: %s%s%s%s%s\n", TOOL, where, where[0] ? "; " : "", kept,
            kept[0] && freed[0] ? "; " : "", freed);
}


static void print_report(const lors_upload_opts_t *o, const lors_report_t *rep,
                         const char *out, const char *notes)
{
    char sz[32];
    int e2e = o->e2e && *o->e2e;
    int64_t plain = e2e ? rep->plain_size : rep->size;
    tool_human(plain, sz, sizeof sz);
    if (o->ec_k)
        fprintf(stderr, "%s: %s: %" PRId64 " bytes (%s), erasure coded %d+%d in pieces of %"
                PRId64 " bytes: %d segment%s x %d pieces = %d mappings on %zu depot%s (%.2f "
                "bytes stored per byte)\n", TOOL, strcmp(out, "-") ? out : "stdout", plain, sz,
                o->ec_k, o->ec_m, o->ec_piece ? o->ec_piece : LORS_EC_DEFAULT_PIECE,
                rep->fragments, rep->fragments == 1 ? "" : "s", o->ec_k + o->ec_m,
                rep->mappings, o->ndepots, o->ndepots == 1 ? "" : "s",
                plain > 0 ? (double)rep->bytes_stored / (double)plain : 0.0);
    else
        fprintf(stderr, "%s: %s: %" PRId64 " bytes (%s) in %d fragment%s x %d cop%s = %d "
                "mappings on %zu depot%s\n", TOOL, strcmp(out, "-") ? out : "stdout", plain, sz,
                rep->fragments, rep->fragments == 1 ? "" : "s", o->copies,
                o->copies == 1 ? "y" : "ies", rep->mappings, o->ndepots,
                o->ndepots == 1 ? "" : "s");
    fprintf(stderr, "%s: checksum %s", TOOL, o->checksum);
    if (strcmp(o->checksum, "none") != 0)
        fprintf(stderr, " per %" PRId64 " bytes", o->checksum_blocksize);
    if (e2e)
        fprintf(stderr, ", transforms %s per %" PRId64 " bytes (%" PRId64 " bytes stored)",
                o->e2e, rep->frame_size, rep->size);
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
static void begin_line(tool_events_t *es, const settings_t *f, const lors_upload_opts_t *o,
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
    char ec[24] = "-";
    if (o->ec_k)
        snprintf(ec, sizeof ec, "%d+%d", o->ec_k, o->ec_m);
    tool_events_printf(es, "BEGIN", "op=upload file=%s size=%" PRId64 " copies=%d "
                         "fragments=%d blocksize=%" PRId64 " checksum=%s e2e=%s ec=%s depots=%s",
                         file, length, o->copies, o->fragments, o->blocksize, o->checksum,
                         o->e2e && *o->e2e ? o->e2e : "-", ec, enc);
}

/* The engine's options from the command line's. */
static void opts_of(const settings_t *f, lors_upload_opts_t *o)
{
    lors_upload_opts_init(o);
    o->copies = f->copies;
    o->fragments = f->fragments;
    o->blocksize = f->blocksize;
    o->duration_s = f->duration;
    o->provisional_s = f->provisional;
    o->reliability = f->reliability ? f->reliability : IBP_HARD;
    o->threads = f->c.threads;
    o->timeout_s = (int)f->c.timeout;
    o->ec_k = f->ec_k;
    o->ec_m = f->ec_m;
    o->ec_piece = f->ec_piece;
    if (f->e2e_bs != TOOL_UNSET)
        o->checksum_blocksize = o->e2e_blocksize = f->e2e_bs;
    if (f->none) {
        o->checksum = "none";
        o->e2e = NULL;
    } else {
        if (f->checksum)
            o->checksum = f->checksum;
        o->e2e = f->e2e_from ? f->e2e : NULL;
    }
    o->e2e_level = f->level != TOOL_UNSET_INT ? f->level : 0;
    o->outboard = !f->no_outboard;
}

/* -M mem: the engine holds about 2 x threads x 1 MiB, and from a pipe (length < 0) two
 * fragments more; fewer threads or smaller fragments, said in notes. */
static void fit_memory(int64_t mem, int64_t length, lors_upload_opts_t *o, char *notes,
                       size_t size)
{
    int fit = (int)(mem / (2 * MIB) > 1024 ? 1024 : mem / (2 * MIB));
    if (fit < 1)
        fit = 1;
    if (o->threads > fit) {
        snprintf(notes, size, "-M %" PRId64 ": %d threads instead of %d", mem, fit, o->threads);
        o->threads = fit;
    }
    if (length < 0 && 2 * o->blocksize + MIB > mem) {
        int64_t bs = (mem - MIB) / 2;
        size_t nl = strlen(notes);
        snprintf(notes + nl, size - nl, "%s-M %" PRId64 ": fragments of %" PRId64
                 " bytes instead of %" PRId64, nl ? "; " : "", mem, bs, o->blocksize);
        o->blocksize = bs;
    }
}

int main(int argc, char **argv)
{
    settings_t f;
    tool_feed_t feed = {0};
    lors_upload_opts_t o;
    lors_report_t rep = {0};
    lors_depot_t *depots = NULL;
    tool_lbone_meter_t *meter = NULL;
    xnd_t *x = NULL;
    unsigned char key[LORS_KEY_BYTES];
    char notes[256] = "", xndpath[PATH_MAX + 8], namebuf[PATH_MAX];
    int code, lrc, first, in = -1, replace = 0;
    int64_t length = -1;
    const char *out;

    code = tool_opt_parse(&cmd, argc, argv, &f, &first);
    if (code)
        return code;

    opts_of(&f, &o);
    int verbose = f.c.verbose && !f.c.quiet;

    if ((code = tool_key(TOOL, o.e2e, f.keyfile, key, &o.key)) != TOOL_EXIT_OK)
        goto done;

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
    code = check_output(out, f.force, &replace);
    if (code)
        goto done;

    if (f.memory > 0)
        fit_memory(f.memory, length, &o, notes, sizeof notes);

    /* The depots, now that the size is known: the L-Bone is asked for room enough. */
    int spread = o.ec_k ? o.ec_k + o.ec_m : o.copies; /* distinct depots wanted */
    code = tool_upload_depots(TOOL, f.depots, &f.c.rc, &f.lb, length, verbose, &o, &depots);
    if (code)
        goto done;
    if (!o.ec_k && o.copies > (int)o.ndepots && !f.c.quiet)
        tool_error(TOOL, "warning: %d copies on %zu depot%s: some copies share a depot",
                       o.copies, o.ndepots, o.ndepots == 1 ? "" : "s");

    code = tool_feed_open(TOOL, &feed, f.c.events, "upload",
                              length >= 0 && !(o.e2e && *o.e2e)
                                  ? (o.ec_k ? length / o.ec_k * spread : length * o.copies)
                                  : -1,
                              f.c.quiet ? -1 : f.c.progress);
    if (code)
        goto done;
    meter = tool_lbone_meter_tee(&feed.tee, f.no_report);
    tool_feed_attach(&feed, &o.on_event, &o.event_arg);
    begin_line(feed.es, &f, &o, length);

    const char *name = NULL;
    if (f.file) {
        snprintf(namebuf, sizeof namebuf, "%s", f.file);
        name = basename(namebuf);
    }
    o.stop = tool_stop_install(TOOL, NULL);
    o.keep_partial = f.keep_partial;
    lrc = lors_upload_fd(&o, in, length, name, &x, &rep);
    tool_progress_finish(feed.bar); /* end the bar's line before any message */
    feed.bar = NULL;
    /* the failed depots once: when copies ended up on fewer depots than asked, the warning
     * after the save names them, with what that cost */
    if (!f.c.quiet && !(lrc == LORS_OK && !o.ec_k &&
                        tool_spread_short(x, o.copies, o.depots, o.ndepots)))
        tool_print_issues(TOOL, &rep, 0);
    if (lrc == LORS_E_STOPPED) {
        after_failure(&o, &rep, length, x, out, replace, 1);
        code = tool_stop_exit_code();
        goto done;
    }
    if (lrc != LORS_OK) {
        tool_error(TOOL, "%s: %s", f.file ? f.file : "stdin",
                       rep.error[0] ? rep.error : lors_strerror(lrc));
        /* the engine names a digest it does not know before it stores anything */
        code = lrc == LORS_E_DIGEST ? TOOL_EXIT_USAGE : tool_exit_code(lrc);
        after_failure(&o, &rep, length, x, out, replace, 0);
        goto done;
    }
    if (f.bitrate > 0 && xnd_meta_set_int(&x->meta, "bitrate", f.bitrate) != XND_OK) {
        tool_error(TOOL, "recording the bitrate: out of memory");
        code = TOOL_EXIT_INTERNAL;
    }
    if (code == TOOL_EXIT_OK && strcmp(out, "-") == 0)
        tool_leases_promise(x, NULL, &o); /* stdout is written once */
    if (code == TOOL_EXIT_OK)
        code = tool_save_exnode(TOOL, x, out, replace);
    if (code != TOOL_EXIT_OK) {
        /* the upload is complete, but no exNode will point to it */
        lors_discard(x, o.threads, o.timeout_s, &rep.freed);
        after_failure(&o, &rep, length, NULL, out, replace, 0);
        goto done;
    }
    /* the exNode is safe: the provisional leases get -d */
    int leases = tool_leases_extend(TOOL, x, NULL, &o, out, NULL);
    if (verbose)
        print_report(&o, &rep, out, notes);
    /* every byte is stored, but not with the redundancy asked: said under -q too (a warning
     * about the data, as lors_download's lost copies), and in the exit code (as lors_ls) */
    if (!o.ec_k && tool_print_spread(TOOL, x, o.copies, o.depots, o.ndepots, &rep))
        code = TOOL_EXIT_DEGRADED;
    if (code == TOOL_EXIT_OK)
        code = leases;
    tool_lbone_meter_report(TOOL, meter, &f.lb, &f.c.rc, f.c.verbose && !f.c.quiet);

done:
    tool_feed_end(&feed, rep.bytes_read, rep.seconds, code);
    memset(key, 0, sizeof key);
    if (in > STDIN_FILENO)
        close(in);
    lors_report_free(&rep);
    xnd_free(x);
    free(depots);
    tool_lbone_meter_free(meter);
    tool_opt_free(&f);
    return code;
}
