/* tool.h -- what the command-line programs share: the rc file, exit codes, the event stream
 * (--events) and the progress bar.  The front end's own library (build/.../libtool.a), built
 * only on the public headers of liblors, libexnode and libibp; the engines never call it.
 * See docs/lors-tools.md and docs/events.md.
 */
#ifndef LNS_TOOL_H
#define LNS_TOOL_H

#include <stdint.h>
#include <stdio.h>

#include "lors.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- exit codes (the same for every tool; documented in each man page) ------------------- */

enum {
    TOOL_EXIT_OK = 0,
    TOOL_EXIT_USAGE = 2,     /* bad flags or option values, bad rc file */
    TOOL_EXIT_EXNODE = 3,    /* the exNode cannot be read, does not parse or is invalid */
    TOOL_EXIT_IO = 4,        /* a local file: input unreadable, output unwritable, reader gone */
    TOOL_EXIT_DEPOTS = 5,    /* depots: none given, none usable, data could not be placed */
    TOOL_EXIT_NO_DATA = 6,   /* some bytes have no live copy left (download, augment) */
    TOOL_EXIT_INTEGRITY = 7, /* checksum or decryption failure with no good copy; wrong key */
    TOOL_EXIT_PARTIAL = 8,   /* done, except for what the report lists (refresh, trim -d, ls dead) */
    TOOL_EXIT_INTERNAL = 9,  /* out of memory, threads, a bug */
    TOOL_EXIT_DEGRADED = 10, /* ls: some bytes have fewer live copies than the file's count;
                              * upload: copies on fewer depots than asked */
    TOOL_EXIT_CHANGED = 12   /* the exNode changed since the tool read it, or another program
                              * kept its update lock: nothing written, what the run allocated
                              * freed (11 is lors_keep's "at risk") */
};

/* The exit code for a lors_err (LORS_OK -> 0). */
int tool_exit_code(int lors_err);

/* ---- the rc file ------------------------------------------------------------------------ */

/* The rc file's settings; a field not set in the file is -1 (numbers) or NULL (strings). */
typedef struct tool_rc {
    char path[512];          /* the file read; "" if none */
    char **lbone_servers;    /* LBONE_SERVER host[:port], in order (several allowed) */
    size_t nlbone;
    char *location;          /* LOCATION */
    int64_t duration_s;      /* DURATION (s/m/h/d suffixes) */
    int reliability;         /* STORAGE_TYPE HARD|SOFT -> IBP_HARD|IBP_SOFT */
    int64_t e2e_blocksize;   /* E2E_BLOCKSIZE (K/M/G) */
    char *e2e_order;         /* E2E_ORDER, e.g. "zlib,aes" (also "zlib aes") */
    int64_t data_blocksize;  /* DATA_BLOCKSIZE */
    int fragments;           /* FRAGMENTS_PER_FILE */
    int copies;              /* COPIES */
    int threads;             /* THREADS */
    int maxdepots;           /* MAXDEPOTS */
    int64_t max_buffer;      /* MAX_INTERNAL_BUFFER */
    int timeout_s;           /* TIMEOUT */
    char *depots;            /* DEPOT lines joined with ", " (each line may list several) */
    int verbose;             /* VERBOSE */
} tool_rc_t;

/* Read the rc file: path if not NULL, else $LNS_RC, else ~/.xndrc.  Lines are
 * "KEYWORD value" or "KEYWORD=value"; '#' starts a comment; keywords are case-insensitive.
 * A missing ~/.xndrc is not an error (rc all unset); a missing file named by path or LNS_RC
 * is.  Unknown keywords and bad values are LORS_E_RC with "FILE:LINE: ..." in err. */
int tool_rc_load(const char *path, tool_rc_t *rc, char *err, size_t errlen);
void tool_rc_free(tool_rc_t *rc);
/* The same file with each "KEYWORD value" line handed to fn (tool_opt.c: a program's own
 * settings), which returns LORS_OK or an error with "FILE:LINE: why" in err. */
typedef int (*tool_rc_line_fn)(void *arg, const char *file, int line, const char *kw, char *val,
                               char *err, size_t errlen);
int tool_rc_read(const char *path, tool_rc_t *rc, tool_rc_line_fn fn, void *arg, char *err,
                 size_t errlen);
/* One line as tool_rc_load takes it, into rc. */
int tool_rc_keyword(tool_rc_t *rc, const char *file, int line, const char *kw, char *val,
                    char *err, size_t errlen);

/* ---- the event stream (--events FILE|fd:N; docs/events.md) ------------------------------ */

#define TOOL_EVENTS_VERSION 1

typedef struct tool_events tool_events_t;

/* Open the stream: "fd:N" writes to an open descriptor, anything else is a file created or
 * truncated.  Writes the header line "LNS-EVENTS 1 tool=<tool> pid=<pid> time=<epoch>".
 * NULL on failure with err set. */
tool_events_t *tool_events_open(const char *spec, const char *tool, char *err, size_t errlen);
/* One line per library event; usable as a lors_event_fn with the stream as its arg. */
void tool_events_event(void *stream, const lors_event_t *ev);
/* A free-form event line: "<ms> <KIND> <fmt...>"; KIND in capitals (BEGIN, END, INFO...). */
void tool_events_printf(tool_events_t *es, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* lors_trim and lors_refresh, after BEGIN: one MAPPING line per mapping of x, in document
 * order (depot frag copy off len end; frag = copy = the mapping's number).  NULL es: none. */
void tool_events_mappings(tool_events_t *es, const xnd_t *x);
/* Flush and close (a "fd:N" descriptor is not closed).  NULL is fine. */
void tool_events_close(tool_events_t *es);
/* A value as an event line carries it: bytes <= ' ', >= 0x7f and '%' become %XX, so a value
 * never holds a space; "" becomes "-".  out is always terminated (cut if too small). */
void tool_events_encode(const char *in, char *out, size_t size);

/* ---- the progress bar (stderr, only on a terminal unless forced) ------------------------ */

typedef struct tool_progress tool_progress_t;

/* A bar for total bytes (-1 unknown) on fd, labelled label; NULL if fd is not a terminal
 * and force is 0 (then all calls below are no-ops on NULL).  Redrawn at most 10 times a
 * second: bytes done, rate, ETA and each depot's share of the bytes. */
tool_progress_t *tool_progress_new(int fd, const char *label, int64_t total, int force);
/* Feed it library events (a lors_event_fn with the bar as arg): FETCH_END/STORE_END/
 * SEND_END count bytes per depot, WRITE counts bytes done for downloads. */
void tool_progress_event(void *bar, const lors_event_t *ev);
/* Or count bytes directly. */
void tool_progress_add(tool_progress_t *p, int64_t bytes);
/* Draw the final state, end the line, free. */
void tool_progress_finish(tool_progress_t *p);

/* ---- fan-out: several consumers of one event feed ---------------------------------------- */

typedef struct tool_tee {
    lors_event_fn fn[4];
    void *arg[4];
    int n;
} tool_tee_t;

/* Add a consumer (ignored if fn is NULL or the tee is full). */
void tool_tee_add(tool_tee_t *t, lors_event_fn fn, void *arg);
/* A lors_event_fn with the tee as arg: calls each consumer in order. */
void tool_tee_call(void *tee, const lors_event_t *ev);

/* ---- command-line helpers (tool_cli.c) ---------------------------------------------------
 * Each helper that can fail prints one line on stderr, "<tool>: <what failed>: <why>", and
 * returns an exit code (TOOL_EXIT_OK when it did not fail) or -1 where noted. */

/* "<tool>: <fmt...>\n" on stderr. */
void tool_error(const char *tool, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same with " (try '<tool> --help')" appended; returns TOOL_EXIT_USAGE. */
int tool_usage(const char *tool, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "<tool> (lns) LNS_VERSION" on stdout. */
void tool_version(const char *tool);

/* What a tool that works on one exNode does after its options: its path -- -f's value
 * (fflag, may be NULL) or the one operand argv[first..argc), exactly one of them -- then the
 * exNode, read, parsed and checked with its e2e description ("-" = stdin).  TOOL_EXIT_OK with
 * *path and *x set (the caller frees x), or TOOL_EXIT_USAGE, TOOL_EXIT_EXNODE or
 * TOOL_EXIT_INTERNAL after one error line. */
int tool_open_exnode(const char *tool, const char *fflag, int argc, char **argv, int first,
                     const char **path, xnd_t **x);
/* xnd_write_file (atomic; "-" = stdout).  TOOL_EXIT_OK, TOOL_EXIT_IO or TOOL_EXIT_INTERNAL. */
int tool_write_exnode(const char *tool, const xnd_t *x, const char *path);

/* An exNode is the only handle on its allocations: no tool replaces one unless told (--force).
 * Called before any depot is touched: may the exNode be written to out?  Yes for "-", a path
 * where there is no file, the input itself (input: the exNode the tool read, or NULL; the same
 * file is the in-place rewrite), or with force; then *replace says whether an existing file
 * may be replaced.  Else TOOL_EXIT_IO after "<tool>: OUT exists; use --force to overwrite it". */
int tool_check_output(const char *tool, const char *out, const char *input, int force,
                      int *replace);
/* 1 if paths a and b name one existing file (device and inode). */
int tool_same_file(const char *a, const char *b);
/* tool_write_exnode; without replace, a file at path is never replaced, not even one that
 * appeared meanwhile (the same line and TOOL_EXIT_IO as tool_check_output). */
int tool_save_exnode(const char *tool, const xnd_t *x, const char *path, int replace);

/* Writing back the exNode a tool read, when others may write it too (xnd_update_file): the
 * digest of the version read, so that a version someone else wrote meanwhile is never
 * replaced.  in_place: the output is the file read. */
typedef struct tool_rewrite {
    int in_place;
    xnd_digest_t was;    /* the digest of the version read, then of the one last written */
    int lockfd;          /* the update lock when held from the read on; -1 */
    char why[640];       /* after TOOL_EXIT_CHANGED: the one line saying what happened */
} tool_rewrite_t;
/* tool_open_exnode for a tool that writes its exNode back to out (NULL: in place).  In
 * place, rw has the digest of the bytes read and, with hold, the update lock taken before the
 * read and kept until tool_rewrite_end (a tool whose depot calls cannot be taken back, such as
 * trim's frees, holds it); another program holding it longer than XND_LOCK_WAIT_MS is
 * TOOL_EXIT_CHANGED after one line. */
int tool_open_exnode_rw(const char *tool, const char *fflag, int argc, char **argv, int first,
                        const char *out, int hold, const char **path, xnd_t **x,
                        tool_rewrite_t *rw);
/* Write x to out: in place (rw->in_place) as a compare-and-swap against rw->was, which then
 * becomes x's digest; else tool_save_exnode.  TOOL_EXIT_CHANGED, with nothing printed and the
 * line in rw->why, when the file is no longer the version read or stays locked; the caller
 * frees what it allocated and prints the line with what it freed. */
int tool_put_exnode(const char *tool, const xnd_t *x, const char *out, int replace,
                    tool_rewrite_t *rw);
/* Let the update lock go (if held). */
void tool_rewrite_end(tool_rewrite_t *rw);

/* Provisional leases (up->provisional_s, lors_lease_extend).  Before an exNode goes to
 * stdout, which is written once: the ends its mappings with select[i] (NULL: all) will have,
 * now + up->duration_s (-d max: left as they are).  After x was written to out: extend them,
 * and for a file write x again with the ends the depots gave, as a compare-and-swap against
 * the version just written (rw, in place, or NULL for a new file); a newer version someone
 * else wrote is left alone.  TOOL_EXIT_PARTIAL after a warning line when some allocation
 * stays on its provisional lease, else TOOL_EXIT_OK. */
void tool_leases_promise(xnd_t *x, const unsigned char *select, const lors_upload_opts_t *up);
int tool_leases_extend(const char *tool, xnd_t *x, const unsigned char *select,
                       const lors_upload_opts_t *up, const char *out, tool_rewrite_t *rw);

/* ---- interrupts (tool_stop.c) -------------------------------------------------------------
 * From tool_stop_install on, SIGINT or SIGTERM (unless ignored when the program started, as
 * in a script's background job) sets the flag it returns (lors_upload_opts_t.stop) and the
 * engine stops and frees what it allocated; a second signal exits at once (128 + signal)
 * after one line saying what is left: again (kept as given, NULL: what was allocated stays
 * on the depots until it expires). */
const volatile sig_atomic_t *tool_stop_install(const char *tool, const char *again);
/* The signals act again as before tool_stop_install (the flag keeps what came). */
void tool_stop_release(void);
/* 128 + the signal that stopped the program (130 SIGINT, 143 SIGTERM); 0 if none came. */
int tool_stop_exit_code(void);
/* What a failed or stopped call freed, for a message: "freed 6 allocations on 3 depots",
 * with what could not be freed, or "nothing was left allocated". */
void tool_freed_text(const lors_freed_t *f, char *buf, size_t size);

/* The depots: list (--depot-list) if not NULL, else rc->depots.  None: TOOL_EXIT_DEPOTS.  A
 * list that does not parse: TOOL_EXIT_USAGE.  *out is malloc'd (free it).  Depots from the
 * L-Bone: tool_lbone_depots (tool_lbone.h). */
int tool_depots(const char *tool, const char *list, const tool_rc_t *rc, lors_depot_t **out,
                    size_t *n);

/* The event feed of a tool: the --events stream (events NULL: none) and the progress bar
 * (progress: 1 forced, 0 when stderr is a terminal, -1 never), fanned out by a tee, handed
 * to the library by tool_feed_attach. */
typedef struct tool_feed {
    tool_events_t *es;
    tool_progress_t *bar;
    tool_tee_t tee;
} tool_feed_t;

/* TOOL_EXIT_OK or TOOL_EXIT_IO (the events file cannot be opened). */
int tool_feed_open(const char *tool, tool_feed_t *f, const char *events,
                       const char *label, int64_t total, int progress);
/* The library's on_event (NULL when nobody listens) and event_arg (&f->tee), once every
 * consumer is on the tee. */
void tool_feed_attach(tool_feed_t *f, lors_event_fn *fn, void **arg);
void tool_feed_close(tool_feed_t *f);            /* finishes the bar, closes the stream */
/* The END line "bytes=B seconds=S rc=CODE" (if the stream is open), then tool_feed_close. */
void tool_feed_end(tool_feed_t *f, int64_t bytes, double seconds, int code);
/* The feed of lors_trim and lors_refresh (tool_events_map.c): tool_feed_open with no bar
 * (label op), attached to the library's on_event and event_arg, then what the stream says
 * first: BEGIN "op=OP exnode=PATH size=N mappings=M", the rest of the line from fmt, and the
 * MAPPING lines.  TOOL_EXIT_OK or TOOL_EXIT_IO, as tool_feed_open. */
int tool_feed_open_exnode(const char *tool, tool_feed_t *f, const char *events, const char *op,
                          lors_event_fn *fn, void **arg, const char *path, const xnd_t *x,
                          const char *fmt, ...) __attribute__((format(printf, 9, 10)));

/* The aes key, when the transform chain (NULL: none) has aes: loaded from keyfile, else
 * $LNS_KEY or $LNS_KEY_FILE (lors_key_load) into key, *use = key; without aes *use = NULL.
 * TOOL_EXIT_OK, or TOOL_EXIT_INTEGRITY after one error line. */
int tool_key(const char *tool, const char *chain, const char *keyfile,
             unsigned char key[LORS_KEY_BYTES], const unsigned char **use);

/* The transforms of list -- "zstd,aes", "aes zlib", LoRS's "zlib_compress aes_encrypt", or
 * "none" -- added to chain (size bytes, at least 9), which holds the canonical names given so
 * far ("zstd,aes", as lors_upload_opts_t.e2e takes them) or "".  0; 1 when the list names none
 * and none_ok is 0 (the caller says why); -1 with "WHAT: why" in err for a weak (des, xor) or
 * unknown transform, a name already in chain, a second compressor, or none beside a
 * transform.  chain changes only on 0 (tool_e2e.c). */
int tool_e2e_list(const char *what, const char *list, int none_ok, char *chain, size_t size,
                  char *err, size_t errlen);

/* What lors_serve and lors_mount show: the network files of paths (directories of exNodes or
 * exNode files) on one block cache. */
typedef struct tool_files {
    lors_cache_t *cache;
    lors_dir_t *dir;
    unsigned char key[LORS_KEY_BYTES];
} tool_files_t;
/* Open them: every fetch with threads streams (0: automatic) and timeout_s per depot, reading
 * ahead up to readahead bytes, the cache holding cache_bytes with at most fetches running; the
 * aes key from key_file, $LNS_KEY or $LNS_KEY_FILE when one is given (an encrypted file
 * without it fails when it is opened).  TOOL_EXIT_OK, or a code after one error line. */
int tool_files_open(const char *tool, tool_files_t *tf, char **paths, int npaths, int threads,
                    int64_t timeout_s, int64_t readahead, int64_t cache_bytes, int fetches,
                    const char *key_file);
void tool_files_close(tool_files_t *tf);

/* One line on stderr per depot that failed an upload (pieces 0: copies) or an augment
 * (pieces 1: pieces): its first failure and where its copies went ("fragment F copy C" when
 * it was one, else their number), or that no depot was left for them; one line per relayed
 * SEND. */
void tool_print_issues(const char *tool, const lors_report_t *rep, int pieces);

/* After an upload: when some bytes have copies on fewer distinct depots than asked (copies,
 * or fewer if the list names fewer depots), because a depot failed and its copy went to one
 * that already held another, one warning line: "<tool>: warning: depot D failed (OP: why);
 * bytes A-B have copies on N depots, not M; lors_augment can add copies", the other ranges
 * summed up.  Returns 1 if it printed it, else 0. */
int tool_print_spread(const char *tool, xnd_t *x, int copies, const lors_depot_t *depots,
                      size_t ndepots, const lors_report_t *rep);
/* 1 if tool_print_spread would print its warning (which names the failed depots itself). */
int tool_spread_short(xnd_t *x, int copies, const lors_depot_t *depots, size_t ndepots);

/* The download's one warning line when it had to work around failed copies (lost
 * redundancy; the data is right): "<tool>: warning: depot D failed (why); bytes A-B had L of C
 * copies left", naming at most three depots and summing up the other ranges.  Nothing when
 * r lists no degraded bytes. */
void tool_print_degraded(const char *tool, const lors_dl_report_t *r);

/* Each mapping's depot (tool_mapping_depot), taken before a trim or refresh changes the
 * exNode: an array of x->nmaps names (free it), or NULL after an error line. */
typedef char tool_depot_name_t[IBP_MAX_HOST + 96];
tool_depot_name_t *tool_mapping_depots(const char *tool, const xnd_t *x);

/* The depot of a mapping, "host:port[/rid]", from its first capability that parses (read,
 * write, manage); "-" if none does. */
void tool_mapping_depot(const xnd_mapping_t *m, char *buf, size_t size);

/* bytes as ls -lh and df -h print them: "512", "4.0K", "17M", "1.5G" (powers of 1024, one
 * decimal below 10, rounded up) into buf. */
void tool_human(int64_t bytes, char *buf, size_t size);
/* s as a JSON string, quotes and all ('"', '\\' and control bytes escaped), on f. */
void tool_json_str(FILE *f, const char *s);
/* in for a terminal, as ls -b escapes names: \\ \n \t \r, and \xHH for the other control
 * bytes, DEL, the C1 controls U+0080..U+009F (as their UTF-8 bytes) and bytes that are not
 * UTF-8; printable UTF-8 is kept.  out is always terminated (cut at a whole character). */
void tool_escape(const char *in, char *out, size_t size);

#ifdef __cplusplus
}
#endif
#endif
