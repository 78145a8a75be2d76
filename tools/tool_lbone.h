/* tool_lbone.h -- the LoRS tools and the L-Bone: which depots to use, and what throughput
 * they showed.  Part of the tools' library (built on liblbone, lbone/lbone.h).
 *
 * Where the depots come from, first match wins: --depot-list; the L-Bone when the command
 * line names one or asks for a place (-H, -P, --lbone, -l); DEPOT lines of the rc file; its
 * LBONE_SERVER lines.  The L-Bone servers are -H/--lbone if given, else LBONE_SERVER lines,
 * tried in order until one answers.
 */
#ifndef LNS_TOOL_LBONE_H
#define LNS_TOOL_LBONE_H

#include <stddef.h>
#include <stdint.h>

#include "lors.h"
#include "tool.h"
#include "tool_opt.h"

typedef struct tool_lbone_opts {
    const char *server;   /* -H / --lbone: URL, host:port or host; NULL: the rc file's */
    int port;             /* -P: port of servers named without one; 0: 6767 */
    const char *location; /* -l; NULL: the rc file's LOCATION */
    int count;            /* -m; 0: MAXDEPOTS of the rc file, else 6 (at least the copies) */
    int asked;            /* 1 if -H, -P, --lbone or -l was on the command line */
} tool_lbone_opts_t;

/* The options that set a tool_lbone_opts_t (off: its offset in the settings). */
int tool_lbone_opt(void *s, const tool_opt_t *o, const char *name, const char *val,
                   tool_from from, char *err, size_t errlen);
/* --depot-list into a const char * field, and -m into the tool_lbone_opts_t at lb. */
#define TOOL_OPT_DEPOTS(list, lb) \
    {TOOL_OPT_STR, "depot-list", 0, NULL, list, 0, 0, NULL, "LIST", \
     "depots, \"host[:port][/rid][#sha256:PIN], ...\" (else the\nL-Bone, or DEPOT in the rc " \
     "file); a PIN (the depot's, as its\nlog or ibp_tool status says it) is checked from the " \
     "first\nconnection", NULL}, \
    {TOOL_OPT_FN, "max-depots", 'm', NULL, lb, 1, 1000000, NULL, "N", \
     "use at most N depots (from the L-Bone: ask for N; default\nMAXDEPOTS of the rc file, " \
     "else 6)", tool_lbone_opt}
#define TOOL_OPT_LBONE(off) \
    {TOOL_OPT_FN, "lbone|lbone-host", 'H', NULL, off, 0, 0, NULL, "URL", \
     "https://host:port#sha256:... (as lbone_server logs it),\nhttp://host:port, host:port " \
     "or host (also --lbone-host);\nelse the LBONE_SERVER lines " \
     "of the rc file, in order", tool_lbone_opt}, \
    {TOOL_OPT_FN, "lbone-port", 'P', NULL, off, 1, 65535, NULL, "P", \
     "its port when -H names none (default 6767)", tool_lbone_opt}, \
    {TOOL_OPT_FN, "location", 'l', NULL, off, 0, 0, NULL, "L", \
     "nearest to L first: \"airport= TYS\", \"zip= 37996\", \"lat,lon\",\n" \
     "\"city= Knoxville state= TN\", \"country= NL\"... (rc LOCATION)", tool_lbone_opt}

/* The servers to ask, in order (*out malloc'd strings; *n may be 0).  0, or -1 (no memory). */
int tool_lbone_servers(const tool_lbone_opts_t *lb, const tool_rc_t *rc, char ***out, size_t *n);
void tool_lbone_servers_free(char **servers, size_t n);

/* What is to be placed: `units` pieces of at most `unit` bytes each (fragments x copies),
 * spread round-robin over the depots, on reliability (IBP_HARD or IBP_SOFT) storage for
 * duration_s (< 0: as long as each depot allows). */
typedef struct tool_lbone_need {
    int64_t unit;
    int64_t units;
    int reliability;
    int64_t duration_s;
} tool_lbone_need_t;

/* The depots for an upload or augment, in order of preference (see above).  From the
 * L-Bone: lb->count depots (at least as many as copies) with room for their share of need,
 * nearest to the location first, each with its place (lors_depot_t.place).  verbose: one
 * line naming the L-Bone, the place and the depots with their distances.  Prints its own error line; returns TOOL_EXIT_OK,
 * TOOL_EXIT_USAGE, TOOL_EXIT_DEPOTS or TOOL_EXIT_INTERNAL.  *out is malloc'd (free it). */
int tool_lbone_depots(const char *tool, const char *list, const tool_rc_t *rc,
                      const tool_lbone_opts_t *lb, const tool_lbone_need_t *need, int copies,
                      int verbose, lors_depot_t **out, size_t *n);

/* How many of n depots a transfer uses: -m, else the rc file's MAXDEPOTS, else all. */
size_t tool_lbone_cap(const tool_lbone_opts_t *lb, const tool_rc_t *rc, size_t n);

/* The depots for an upload of length bytes (-1: unknown) as o describes it (copies or
 * erasure coding, fragments, transforms): tool_lbone_depots with each depot's share of the
 * data as the room asked of the L-Bone, then o->depots and o->ndepots set (capped by
 * tool_lbone_cap).  *owned: the array to free.  Exit codes as tool_lbone_depots. */
int tool_upload_depots(const char *tool, const char *list, const tool_rc_t *rc,
                       const tool_lbone_opts_t *lb, int64_t length, int verbose,
                       lors_upload_opts_t *o, lors_depot_t **owned);

/* 1 if tool_lbone_depots takes the depots from the L-Bone (no list; -H/-P/-l/-m, or the rc
 * file names an L-Bone and no DEPOT). */
int tool_lbone_in_use(const char *list, const tool_rc_t *rc, const tool_lbone_opts_t *lb);

/* The depots the L-Bone lists as down, unreachable or leaving (a query of every status),
 * for lors_keep to move data off.  Prints a warning and returns TOOL_EXIT_DEPOTS when no
 * L-Bone answers (the caller goes on without); TOOL_EXIT_OK with *out malloc'd (maybe
 * empty), TOOL_EXIT_INTERNAL. */
int tool_lbone_unusable(const char *tool, const tool_rc_t *rc, const tool_lbone_opts_t *lb,
                        lors_depot_t **out, size_t *n);

/* ---- throughput reports -------------------------------------------------------------- */

/* 1 when reports are off: the tool's --no-report, or LNS_NO_REPORT=1 in the environment. */
int tool_lbone_reports_off(int no_report_flag);

/* Measures each depot's throughput from a transfer's events: bytes of STORE_END/FETCH_END,
 * over the time from the depot's first START to its last END.  Use tool_lbone_meter_event
 * as a lors_event_fn with the meter as its argument (events come one at a time). */
typedef struct tool_lbone_meter tool_lbone_meter_t;

tool_lbone_meter_t *tool_lbone_meter_new(void);
void tool_lbone_meter_event(void *meter, const lors_event_t *ev);
/* Send what was measured to the first of servers that takes it, with short timeouts.  A
 * report that cannot be sent is only a warning (printed with verbose): the transfer itself
 * went well.  Returns the number of depots reported. */
size_t tool_lbone_meter_send(const char *tool, const tool_lbone_meter_t *m, char **servers,
                             size_t nservers, int verbose);
void tool_lbone_meter_free(tool_lbone_meter_t *m);
/* lors_download's and lors_upload's meter: a new one on tee (the transfer's event feed),
 * unless reports are off (tool_lbone_reports_off(no_report_flag)): then NULL. */
tool_lbone_meter_t *tool_lbone_meter_tee(tool_tee_t *tee, int no_report_flag);
/* Send what m measured (NULL: nothing) to the servers of -H/--lbone, else of the rc file
 * (tool_lbone_servers), as tool_lbone_meter_send. */
void tool_lbone_meter_report(const char *tool, const tool_lbone_meter_t *m,
                             const tool_lbone_opts_t *lb, const tool_rc_t *rc, int verbose);

#endif
