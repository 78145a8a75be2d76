/* tool_opt.h -- every setting of a program declared once: its long name, short letter, rc-file
 * keyword, type, bounds, default and help line, in one table per program.
 *
 * From that table come the command line (getopt_long_only, so LoRS's one-dash long options
 * such as -bs work beside --block-size), the rc file (~/.xndrc: each "KEYWORD value" line
 * goes through the same setter as the flag, as curl feeds .curlrc through the parser of its
 * argv), the defaults, the bounds and their messages, and --help.  Precedence is the table's
 * defaults < rc file < flags.  tests/unit/test_tool_opt.c checks the engine, and each program's
 * man page is checked against its --help.
 *
 * A program's settings struct starts with a tool_common_t, so the options every program has
 * (TOOL_OPT_RC etc. below) can be declared once for all of them.
 */
#ifndef LNS_TOOL_OPT_H
#define LNS_TOOL_OPT_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "tool.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A field that no default, rc line or flag set. */
#define TOOL_UNSET_INT INT_MIN
#define TOOL_UNSET INT64_MIN

/* The off of an entry with no field (--help, --version). */
#define TOOL_NOFIELD ((size_t)-1)

/* The most parallel depot calls (or streams) any tool takes. */
#define TOOL_MAX_THREADS 256

typedef enum tool_opt_type {
    TOOL_OPT_END = 0,   /* ends a table */
    TOOL_OPT_SECTION,   /* a heading in --help: help is its text */
    TOOL_OPT_SWITCH,    /* no value: the int field becomes min (from the rc file: yes/no, on/off,
                           true/false or a number) */
    TOOL_OPT_STR,       /* const char *, kept as given */
    TOOL_OPT_INT,       /* int in [min, max] */
    TOOL_OPT_SIZE,      /* int64_t bytes in [min, max]: digits with K, M, G or T */
    TOOL_OPT_SECONDS,   /* int64_t seconds in [min, max]: digits with s, m, h or d */
    TOOL_OPT_DURATION,  /* int64_t seconds in [min, max], or -1/max: each depot's maximum */
    TOOL_OPT_FN         /* set by the entry's own function */
} tool_opt_type;

typedef struct tool_opt tool_opt_t;

/* Where a value comes from: defaults, the rc file, the command line. */
typedef enum { TOOL_FROM_DEFAULT, TOOL_FROM_RC, TOOL_FROM_ARGV } tool_from;

/* A TOOL_OPT_FN setter: 0, or -1 with "NAME VALUE: why" in err.  name is the option as the
 * user wrote it ("-c", "--copies", "COPIES"); val is NULL for a switch.  A string kept from
 * the rc file lives as long as the program. */
typedef int (*tool_opt_fn)(void *settings, const tool_opt_t *o, const char *name,
                           const char *val, tool_from from, char *err, size_t errlen);

struct tool_opt {
    tool_opt_type type;
    const char *name;   /* long name; aliases after '|' ("bs|block-size"); NULL: rc file only */
    char letter;        /* short option, or 0 */
    const char *rc;     /* the rc file's keyword, or NULL */
    size_t off;         /* offsetof the field in the program's settings */
    int64_t min, max;   /* bounds; a switch's value is min */
    const char *def;    /* the default, as text through the setter; NULL: unset */
    const char *arg;    /* the value's name in --help ("N", "FILE"); NULL: a switch */
    const char *help;   /* one line; '\n' continues it, indented */
    tool_opt_fn fn;     /* TOOL_OPT_FN */
};

/* What every program has, first in its settings struct. */
typedef struct tool_common {
    const char *file;    /* -f: the exNode of the programs that work on one */
    const char *rcfile;  /* --rc */
    int no_rc;           /* --no-rc */
    int verbose;         /* -V, rc VERBOSE */
    int quiet;           /* -q or --quiet */
    int progress;        /* --progress */
    const char *events;  /* --events FILE|fd:N, -D */
    int threads;         /* -t, rc THREADS */
    int64_t timeout;     /* -T, rc TIMEOUT */
    tool_rc_t rc;        /* the rc file's other settings: DEPOT, LBONE_SERVER, LOCATION... */
} tool_common_t;

/* A program: its name, the lines of --help before the options and after them, its table,
 * the size of its settings, and what it checks once every flag is in (its operands argv[first..]
 * too): an exit code after one line on stderr, or TOOL_EXIT_OK.  check may be NULL. */
typedef struct tool_cmd {
    const char *name;
    const char *synopsis;
    const char *epilog;
    const tool_opt_t *opts;
    size_t size;
    int (*check)(void *settings, int argc, char **argv, int first);
} tool_cmd_t;

/* Parse into settings (cmd->size bytes, cleared first): defaults, then the rc file (--rc FILE,
 * else $LNS_RC, else ~/.xndrc; none with --no-rc), then argv, then cmd->check.  --help and
 * --version print and exit 0.  SIGPIPE is ignored from here on: a reader that went away is
 * a write error.  TOOL_EXIT_OK with *first the index of the first operand in
 * argv (reordered: operands last), or the exit code after one line on stderr (nothing then
 * to free).  settings must start with a tool_common_t; free it with tool_opt_free. */
int tool_opt_parse(const tool_cmd_t *cmd, int argc, char **argv, void *settings, int *first);
/* The same for a program that works on one exNode (-f FILE or one operand): then reads it
 * (tool_open_exnode).  TOOL_EXIT_OK with *path and *x set, or the exit code after one line,
 * with nothing left to free. */
int tool_opt_exnode(const tool_cmd_t *cmd, int argc, char **argv, void *settings,
                    const char **path, xnd_t **x);
/* The same for a tool that writes its exNode back (lors_augment, lors_refresh, lors_trim):
 * tool_open_exnode_rw, then tool_check_output for where the result goes.  *output and *force
 * are the settings' -o and --force fields, read after the parse; *out is -o, else the input
 * (rewritten in place, which needs no --force).  TOOL_EXIT_OK with *path, *x, rw, *out and
 * *replace set, or the exit code after one line, with nothing left to free or unlock. */
int tool_opt_exnode_rw(const tool_cmd_t *cmd, int argc, char **argv, void *settings,
                       const char **output, int *force, int hold, const char **path,
                       xnd_t **x, tool_rewrite_t *rw, const char **out, int *replace);
void tool_opt_free(void *settings);

/* --help's text for cmd on f. */
void tool_opt_usage(const tool_cmd_t *cmd, FILE *f);

/* The setters of the plain types, for a TOOL_OPT_FN that adds a check of its own. */
int tool_opt_set(void *settings, const tool_opt_t *o, const char *name, const char *val,
                 tool_from from, char *err, size_t errlen);
/* val checked as a value of type (TOOL_OPT_INT, _SIZE, _SECONDS) within o's bounds, and not
 * stored: for a TOOL_OPT_FN that keeps the text as written.  0, or -1 with why in err. */
int tool_opt_check(const tool_opt_t *o, tool_opt_type type, const char *name, const char *val,
                   tool_from from, char *err, size_t errlen);

#define TOOL_OFF(type, field) offsetof(type, field)
#define TOOL_C(field) offsetof(tool_common_t, field)

/* ---- what every program declares the same way ---------------------------------------- */

#define TOOL_OPT_VERBOSE(help) \
    {TOOL_OPT_SWITCH, "verbose", 'V', "VERBOSE", TOOL_C(verbose), 1, 0, NULL, NULL, help, NULL}
#define TOOL_OPT_QUIET(letter) TOOL_OPT_QUIET_BUT(letter, "print nothing but errors")
/* -q or --quiet, with a help line of its own (what is still printed) */
#define TOOL_OPT_QUIET_BUT(letter, help) \
    {TOOL_OPT_SWITCH, "quiet", letter, NULL, TOOL_C(quiet), 1, 0, NULL, NULL, help, NULL}
#define TOOL_OPT_PROGRESS \
    {TOOL_OPT_SWITCH, "progress", 0, NULL, TOOL_C(progress), 1, 0, NULL, NULL, \
     "draw the progress bar even when stderr is not a terminal", NULL}
#define TOOL_OPT_EVENTS \
    {TOOL_OPT_STR, "events", 0, NULL, TOOL_C(events), 0, 0, NULL, "FILE|fd:N", \
     "write the event stream (docs/events.md)", NULL}, \
    {TOOL_OPT_FN, "demo", 'D', NULL, TOOL_C(events), 0, 0, NULL, NULL, \
     "the event stream on stderr (--events fd:2)", tool_opt_demo}
/* The random-access reader's settings of lors_serve and lors_mount (their settings structs of
 * type `type` have the fields cache, readahead, fetches and key_file); who: "clients", ... */
#define TOOL_OPT_READER(type, who) \
    {TOOL_OPT_SIZE, "cache", 0, NULL, offsetof(type, cache), 4 << 20, INT64_MAX, "64M", "SIZE", \
     "memory for file blocks, shared by all " who, NULL}, \
    {TOOL_OPT_SIZE, "readahead", 0, NULL, offsetof(type, readahead), 0, INT64_MAX, "16M", \
     "SIZE", "the most a sequential reader is read ahead (0: none)", NULL}, \
    {TOOL_OPT_INT, "fetches", 0, NULL, offsetof(type, fetches), 1, 1024, "16", "N", \
     "downloads from the depots at once, for all " who, NULL}, \
    {TOOL_OPT_STR, "key-file", 0, NULL, offsetof(type, key_file), 0, 0, NULL, "FILE", \
     "the aes key of encrypted files (else $LNS_KEY or $LNS_KEY_FILE)", NULL}
#define TOOL_OPT_THREADS(min, def, help) \
    {TOOL_OPT_INT, "threads", 't', "THREADS", TOOL_C(threads), min, TOOL_MAX_THREADS, def, "N", \
     help, NULL}
#define TOOL_OPT_TIMEOUT(def, help) \
    {TOOL_OPT_SECONDS, "timeout", 'T', "TIMEOUT", TOOL_C(timeout), 1, 86400, def, "T", help, NULL}
/* --ibp-version HOST[:PORT]=0|1|auto (repeatable): the IBP protocol version spoken to one
 * depot, pinned for the process (ibp_version_pin) instead of found out (version 1, then 0 if
 * the depot drops it: LoCI 1.3).  The rc file's IBP_VERSION lines (tool_rc.c) do the same for
 * every program that reads it, before the flags. */
#define TOOL_OPT_IBP_VERSION \
    {TOOL_OPT_FN, "ibp-version", 0, NULL, TOOL_NOFIELD, 0, 0, NULL, "HOST:PORT=V", \
     "speak IBP version V (0, 1 or auto) to that depot (default auto:\n" \
     "1, or 0 where the depot drops version 1, as LoCI 1.3 does)", tool_opt_ibp_version}
/* --tls auto|require|off: the sealed wire to the depots (ibp_tls_mode), for the whole process;
 * the rc file's TLS line does the same before the flags. */
#define TOOL_OPT_TLS \
    {TOOL_OPT_FN, "tls", 0, NULL, TOOL_NOFIELD, 0, 0, NULL, "MODE", \
     "auto (default): TLS to every lns depot, and never plaintext\n" \
     "to one whose pin is known; require: no plaintext at all;\n" \
     "off: plaintext to every depot (benchmarks)", tool_opt_tls}
/* How a program speaks to depots: --ibp-version and --tls. */
#define TOOL_OPT_IBP_WIRE TOOL_OPT_IBP_VERSION, TOOL_OPT_TLS
/* The depot calls of the tools that make many (augment, keep, refresh, trim, upload): -t
 * parallel calls (default 4), -T the longest wait of one (default timeout), and the wire. */
#define TOOL_OPT_DEPOT_CALLS(timeout) \
    TOOL_OPT_THREADS(1, "4", "parallel depot calls"), \
    TOOL_OPT_TIMEOUT(timeout, "longest wait of any one depot call"), \
    TOOL_OPT_IBP_WIRE
/* -O N and -L N: a range of the file's bytes, into int64_t fields (unset: TOOL_UNSET). */
#define TOOL_OPT_RANGE(offset, length, offset_help, length_help) \
    {TOOL_OPT_SIZE, "offset", 'O', NULL, offset, 0, INT64_MAX, NULL, "N", offset_help, NULL}, \
    {TOOL_OPT_SIZE, "length", 'L', NULL, length, 0, INT64_MAX, NULL, "N", length_help, NULL}
/* --help and --version; with --rc and --no-rc for the programs that read the rc file (a
 * program whose table has no "rc" entry reads none). */
#define TOOL_OPT_HELP \
    {TOOL_OPT_SWITCH, "help", 0, NULL, TOOL_NOFIELD, 0, 0, NULL, NULL, "this text", NULL}, \
    {TOOL_OPT_SWITCH, "version", 0, NULL, TOOL_NOFIELD, 0, 0, NULL, NULL, "the version", NULL}
#define TOOL_OPT_SETTINGS \
    {TOOL_OPT_STR, "rc", 0, NULL, TOOL_C(rcfile), 0, 0, NULL, "FILE", \
     "the rc file (default $LNS_RC, else ~/.xndrc)", NULL}, \
    {TOOL_OPT_SWITCH, "no-rc", 0, NULL, TOOL_C(no_rc), 1, 0, NULL, NULL, "read no rc file", NULL}, \
    TOOL_OPT_HELP
/* -s, -h and STORAGE_TYPE into an int field: IBP_SOFT or IBP_HARD (0: not said, hard). */
#define TOOL_OPT_STORAGE(off) \
    {TOOL_OPT_SWITCH, "soft", 's', NULL, off, IBP_SOFT, 0, NULL, NULL, "soft storage", NULL}, \
    {TOOL_OPT_SWITCH, "hard", 'h', NULL, off, IBP_HARD, 0, NULL, NULL, \
     "hard storage (the default)", NULL}, \
    {TOOL_OPT_FN, NULL, 0, "STORAGE_TYPE", off, 0, 0, NULL, NULL, NULL, tool_opt_storage}
/* --provisional T: upload, augment and keep (docs/lors-tools.md, "Never losing the handle"). */
#define TOOL_OPT_PROVISIONAL(off) \
    {TOOL_OPT_SECONDS, "provisional", 0, NULL, off, 0, INT64_MAX, "10m", "T", \
     "new allocations live T until the exNode naming them is\n" \
     "written (kept alive meanwhile), then get -d: one a killed\n" \
     "run never recorded ends by itself; 0: -d at once", NULL}
/* -f EXNODE, and -o FILE for the programs that rewrite the exNode they read. */
#define TOOL_OPT_EXNODE \
    {TOOL_OPT_STR, "file", 'f', NULL, TOOL_C(file), 0, 0, NULL, "EXNODE", \
     "the exNode (or give it as the argument; - reads stdin)", NULL}
#define TOOL_OPT_REWRITE(off) \
    {TOOL_OPT_STR, "output", 'o', NULL, off, 0, 0, NULL, "FILE", \
     "write the result here (default: rewrite EXNODE in place;\nfrom stdin: stdout)", NULL}
/* --force: replace an existing exNode at the output path (default: refused before any depot is
 * touched; tool_check_output).  No rc keyword: a safeguard is waived run by run, not for all. */
#define TOOL_OPT_FORCE(off) \
    {TOOL_OPT_SWITCH, "force", 0, NULL, off, 1, 0, NULL, NULL, \
     "overwrite an existing exNode file (default: refuse)", NULL}
#define TOOL_OPT_HEADING(text) {TOOL_OPT_SECTION, NULL, 0, NULL, TOOL_NOFIELD, 0, 0, NULL, NULL, text, NULL}
#define TOOL_OPT_TABLE_END {TOOL_OPT_END, NULL, 0, NULL, TOOL_NOFIELD, 0, 0, NULL, NULL, NULL, NULL}

/* Setters of the entries above. */
/* STORAGE_TYPE HARD|SOFT into an int field (IBP_HARD, IBP_SOFT). */
int tool_opt_storage(void *s, const tool_opt_t *o, const char *name, const char *val,
                     tool_from from, char *err, size_t errlen);
int tool_opt_demo(void *s, const tool_opt_t *o, const char *name, const char *val,
                  tool_from from, char *err, size_t errlen);
/* HOST[:PORT]=0|1|auto: pins (or unpins) the depot's version with ibp_version_pin. */
int tool_opt_tls(void *s, const tool_opt_t *o, const char *name, const char *val,
                 tool_from from, char *err, size_t errlen);
/* "auto", "require" or "off" for the process (ibp_tls_mode); 0, or -1 with why. */
int tool_tls_mode(const char *val, char *err, size_t errlen);
/* At exit, one line naming the depots spoken to in plaintext (none when quiet); once per
 * process (tool_opt_parse does it for the programs it parses for). */
void tool_tls_warn_at_exit(const char *tool, int quiet);
int tool_opt_ibp_version(void *s, const tool_opt_t *o, const char *name, const char *val,
                         tool_from from, char *err, size_t errlen);
/* The same for a program without a table (ibp_tool): 0, or -1 with the reason in err. */
int tool_ibp_version_pin(const char *val, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
