/* lifelines.h -- read NetLogger event logs of depots and clients, follow each block's
 * life through them, and sum it up per depot (lors_lifelines, docs/netlogger.md).
 *
 * A client's lines (LORS_*) name their fetch (fetch=); a depot's LOAD lines (IBP_LOAD_*) name
 * the allocation and the range (alloc= off= len=).  A fetch and a depot request are the same
 * LOAD when the client's (alloc, aoff, alen) equals the depot's (alloc, off, len): the n-th
 * fetch of a key, by time of its request, is the n-th depot request of that key.  Times are
 * kept as integer nanoseconds since the epoch, so sums over a hand-written log are exact.
 */
#ifndef LNS_LIFELINES_H
#define LNS_LIFELINES_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The points of a life line, in the order a block lives them. */
enum {
    LORS_LL_REQ_SENT = 0, /* LORS_REQ_SENT: the client sends the LOAD */
    LORS_LL_DEPOT_RECV,   /* IBP_LOAD_RECV: the depot has the request */
    LORS_LL_READ_START,   /* IBP_LOAD_READ_START: the depot starts reading (sendfile) */
    LORS_LL_REPLY,        /* LORS_REPLY: the client has the depot's reply header */
    LORS_LL_SEND_END,     /* IBP_LOAD_SEND_END: the depot has sent the last byte */
    LORS_LL_RECV_END,     /* LORS_RECV_END: the client has the last byte */
    LORS_LL_COMMIT,       /* LORS_COMMIT: verified and taken as the block's copy */
    LORS_LL_RELEASE,      /* LORS_RELEASE: written to the output */
    LORS_LL_NPOINTS
};
extern const char *const lors_ll_point_names[LORS_LL_NPOINTS]; /* "REQ SENT", ... */

typedef struct lors_ll_fetch {
    char id[64];          /* fetch= */
    char depot[96];       /* depot= (host:port) */
    char alloc[24];       /* the correlation key: alloc, aoff, alen */
    int64_t aoff, alen;
    uint32_t block;
    int64_t off, len;     /* the block's bytes in the file */
    int redundant, failed, cancelled, committed;
    int64_t t[LORS_LL_NPOINTS]; /* ns since the epoch; -1: not in the logs */
    int64_t t_stop;       /* LORS_FAIL or LORS_CANCEL: when it was given up; -1 neither */
} lors_ll_fetch_t;

/* How a depot's delay = latency + size / throughput was estimated. */
enum {
    LORS_LL_FIT_NONE = 0, /* not enough to go on: the table prints "-" */
    LORS_LL_FIT_LS,       /* least squares of (REQ_SENT -> RECV_END) on size: old logs whose
                           * sizes span a factor of 2 or more, with a significant slope */
    LORS_LL_FIT_REPLY,    /* latency = median (REQ_SENT -> REPLY), throughput = 1 / median of
                           * (REPLY -> RECV_END) / size: whenever the logs have LORS_REPLY */
};
extern const char *const lors_ll_fit_names[3]; /* "-", "ls", "reply" */

typedef struct lors_ll_depot {
    char name[96];
    uint64_t fetches;     /* fetches sent to it */
    uint64_t blocks;      /* fetches that won their block (committed) */
    uint64_t bytes;       /* ... their blocks' bytes */
    double mbps;          /* bytes / (last RECV_END - first REQ_SENT of those), MB/s (1e6) */
    uint64_t failures;    /* LORS_FAIL */
    uint64_t redundant, redundant_won, wasted; /* redundant fetches; of those won; cancelled */
    int fit_n;            /* fetches in the fit: with REQ_SENT and RECV_END (and REPLY for
                           * LORS_LL_FIT_REPLY) */
    int fit_ok;           /* fit != LORS_LL_FIT_NONE */
    int fit;              /* LORS_LL_FIT_* */
    double latency_s;     /* delay = latency + size / throughput */
    double fit_mbps;      /* throughput, MB/s (1e6) */
} lors_ll_depot_t;

typedef struct lors_ll_dreq lors_ll_dreq_t; /* a depot's LOAD, internal */

typedef struct lors_ll {
    lors_ll_fetch_t *f;
    size_t nf, capf;
    lors_ll_dreq_t *r;
    size_t nr, capr;
    lors_ll_depot_t *d;   /* after lors_ll_analyze, sorted by name */
    size_t nd;
    size_t lines, used, bad; /* lines read; of those used; malformed */
    size_t matched;       /* fetches given their depot request */
    size_t released;      /* blocks released (fetches with RELEASE) */
    size_t complete;      /* ... with all LORS_LL_NPOINTS points (REPLY only required when
                           * the logs have LORS_REPLY lines: older clients did not write it) */
    size_t replies;       /* LORS_REPLY lines used */
    int64_t t0, t1;       /* first and last time of any point or t_stop */
} lors_ll_t;

void lors_ll_init(lors_ll_t *ll);
void lors_ll_free(lors_ll_t *ll);
/* One log line (no newline needed).  1 used, 0 not a life-line event (ignored), -1 malformed. */
int lors_ll_add_line(lors_ll_t *ll, const char *line);
/* Every line of a file; 0, or -1 with err naming the file and why. */
int lors_ll_add_file(lors_ll_t *ll, const char *path, char *err, size_t errlen);
/* Match depot requests to fetches and compute the per-depot table; 0 or -1 (memory). */
int lors_ll_analyze(lors_ll_t *ll);
/* The table, as text or JSON. */
void lors_ll_print_table(const lors_ll_t *ll, FILE *out);
void lors_ll_print_json(const lors_ll_t *ll, FILE *out);

/* ---- the plot (lifelines_plot.c, drawn with cairo) ----------------------------------------
 * One lane per depot, in ll->d's order, labelled with its name; each fetch a bar in its depot's
 * lane from its request (REQ_SENT) to its end: COMMIT when it won, else LORS_FAIL or
 * LORS_CANCEL, else the last point the logs have.  Fetches that overlap in time share the lane
 * in rows.  The colour says what became of the fetch; a fetch that lost is hatched. */
enum {
    LORS_LL_BAR_WON = 0,   /* committed, not redundant */
    LORS_LL_BAR_REDUNDANT, /* a redundant fetch (LORS_REDUNDANT), won or lost */
    LORS_LL_BAR_CANCELLED, /* lost the race to another fetch of its block (LORS_CANCEL) */
    LORS_LL_BAR_FAILED,    /* LORS_FAIL, also outlined */
    LORS_LL_BAR_OPEN,      /* none of those in the logs: cut off or still running */
    LORS_LL_NBARS
};
extern const uint32_t lors_ll_bar_rgb[LORS_LL_NBARS]; /* 0xRRGGBB, by LORS_LL_BAR_* */
int lors_ll_bar_kind(const lors_ll_fetch_t *f);

/* Where the plot puts time and lanes, for readers of the image (the tests). */
typedef struct lors_ll_frame {
    double left, right; /* x of time ll->t0 and of ll->t0 + span_s */
    double span_s;      /* seconds the time axis covers: (t1 - t0) rounded up to a tick */
    double top, lane_h; /* lane i is y in [top + i * lane_h, top + (i + 1) * lane_h) */
} lors_ll_frame_t;
/* The frame of a w x h plot of ll; 0 or -1 with err (size out of 320x200 .. 8000x8000). */
int lors_ll_plot_frame(const lors_ll_t *ll, int w, int h, lors_ll_frame_t *fr, char *err,
                       size_t errlen);
/* The plot as a w x h PNG (8-bit RGB); 0 or -1 with err. */
int lors_ll_plot_png(const lors_ll_t *ll, const char *path, int w, int h, char *err,
                     size_t errlen);
/* Free what cairo and fontconfig keep for the whole process (font caches, the font
 * configuration), so that a leak checker at exit finds nothing: call once, after the last plot
 * of the process. */
void lors_ll_plot_exit(void);

#endif
