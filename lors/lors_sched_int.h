/* lors_sched_int.h -- the scheduler's state, shared by its two files.
 *
 * lors_sched.c makes the decisions (next fetch, completion, failure, release);
 * lors_sched_ahead.c the lookahead part of "which block next"; lors_sched_bits.c keeps the
 * set of pending blocks; lors_sched_setup.c builds the state and reports on it.  Internal to
 * liblors.
 */
#ifndef LNS_LORS_SCHED_INT_H
#define LNS_LORS_SCHED_INT_H

#include "lors_sched.h"

#define NONE UINT32_MAX
#define MAX_TRIES 2 /* a replica is tried at most once per round, and there are two rounds */

enum { ST_PENDING, ST_FLIGHT, ST_DONE, ST_RELEASED, ST_FAILED };

typedef struct rep {
    uint32_t next; /* next replica of the same block, or NONE */
    int depot, mapping;
    uint8_t usable, bad, tries;
    uint8_t held;  /* lors_sched_replica_hold: not to be chosen now, but not ruled out */
} rep_t;

typedef struct blk {
    uint32_t rep_head, rep_tail;
    uint32_t fly;  /* index into s->fly while in flight, else NONE */
    uint8_t state;
    uint8_t round; /* replicas with tries < round are eligible */
} blk_t;

typedef struct fetch {
    uint32_t gen;  /* id = gen << 32 | slot; bumped when the slot is freed */
    uint32_t block, rep, next_free;
    int depot;
    uint8_t live, redundant;
    uint8_t blind;   /* started before its depot had shown anything (lors_sched_withdraw) */
    uint64_t start, last, bytes;
    uint64_t base;   /* bytes of its block it started with (lors_sched_resumed): not its depot's */
    uint8_t replied; /* the depot's reply header has come (lors_sched_replied) */
} fetch_t;

typedef struct fly {
    uint32_t block;
    uint32_t ahead; /* later blocks completed since the block's first fetch started */
    int n;
    uint32_t f[LORS_SCHED_MAX_R];
} fly_t;

typedef struct heap {
    uint32_t *v;
    size_t n, cap;
} heap_t;

/* A set of block numbers (lors_sched_bits.c): level 0 one bit per block, each level above one
 * bit per non-empty word of the level below. */
#define BITS_MAXLEV 6
typedef struct bits {
    uint64_t *v[BITS_MAXLEV];
    uint64_t size[BITS_MAXLEV]; /* words per level */
    int nlev;
} bits_t;

typedef struct depot {
    int cap;     /* fetches allowed at once now: cap_max, or adapted to the latency
                    (lors__sched_rates) */
    int cap_max; /* cfg.depot_cap or lors_sched_depot_cap */
    int dead, consec, known; /* known: the EWMAs have at least one sample */
    uint64_t retry_at; /* dead: alive again from this time; 0 = dead for good */
    double ewma_bps;   /* EWMA of the depot's aggregate rate (one fetch's rate x its active) */
    double ewma_fetch; /* EWMA of one fetch's own rate, as the fetches have found it */
    double bps, fetch_bps; /* what decisions use: the EWMAs, lowered by what the fetches in
                            * flight prove (lors__sched_rates) */
    double cut;        /* lors__sched_rates: sum over the fetches in flight of block / age */
    double shown;      /* ... and of bytes so far / (age - lat_ns): the rate they have shown */
    int cut_n;         /* ... their number; -1 when one has just started */
    double owed;       /* ... and the bytes they still lack */
    uint64_t lat_ns;   /* least time from a fetch's start to the depot's reply; 0 = none yet */
    uint64_t gap_ns;   /* EWMA of the time between two reports of bytes from its fetches */
    int mute;          /* fell silent (silence_limit) and not heard from since: no new
                        * fetches but a probe, no redundant ones */
    int probe_ok;      /* mute, idle and its probe time has come (refreshed by find_silent) */
    uint64_t probe_at; /* mute: when a probe may go; UINT64_MAX while one is out */
    uint64_t backoff;  /* mute: the wait before the next probe, doubled by each silent one */
    heap_t pend;
    lors_sched_depot_stats_t st;
} depot_t;

/* A holder class (lors_sched_class.c): the blocks held by the same set of depots. */
#define CLS_MAX 64
#define CLS_HOLDERS 8
typedef struct cls {
    heap_t pend;    /* its pending blocks (lazy: checked at the top) */
    uint32_t npend; /* ... their number, exactly */
    int n;          /* holders */
    int holder[CLS_HOLDERS];
} cls_t;

struct lors_sched {
    lors_sched_cfg_t cfg;
    uint32_t nblocks;
    blk_t *blk;
    rep_t *rep;
    size_t nrep, caprep;
    depot_t *dep;
    fetch_t *fx;
    uint32_t nfx, free_fx;
    size_t capfx;
    fly_t *fly;
    uint32_t nfly;
    size_t capfly;
    uint64_t prebuffer; /* cfg.prebuffer_bytes clamped so that it fits in the buffer */
    uint32_t first_hole, next_release, failed_min, npending;
    bits_t pending; /* the blocks in ST_PENDING, for "lowest pending at or after k" */
    bits_t done;    /* cfg.any_order: the blocks in ST_DONE, for the writer */
    int started, releasing;
    lors_sched_totals_t tot;
    cls_t *cls;     /* cfg.any_order: the holder classes, ncls > 1 of them; else none */
    uint8_t *bcls;  /* ... each block's */
    int ncls;
};

/* Helpers defined in lors_sched.c and used by lors_sched_setup.c. */
uint64_t lors__sched_blk_off(const lors_sched_t *s, uint32_t b);
uint64_t lors__sched_blk_len(const lors_sched_t *s, uint32_t b);
int lors__sched_heap_push(heap_t *h, uint32_t x);
int lors__sched_perm_dead(const depot_t *d);
void lors__sched_scan_failed(lors_sched_t *s);

int lors__sched_rep_in_round(const lors_sched_t *s, const blk_t *bk, const rep_t *r);
int lors__sched_buffer_full(const lors_sched_t *s, uint32_t b);
double lors__sched_best_known_bps(const lors_sched_t *s);
double lors__sched_new_fetch_bps(const lors_sched_t *s, int d, double best_known);
double lors__sched_aggregate_bps(const lors_sched_t *s);
double lors__sched_need_ns(const lors_sched_t *s, uint32_t b, double agg);
uint32_t lors__sched_done_ahead(const lors_sched_t *s);
void lors__sched_rates(lors_sched_t *s, uint64_t now);

/* lors_sched_class.c: holder classes, for cfg.any_order (scarce blocks first). */
void lors__sched_classes_build(lors_sched_t *s);
void lors__sched_classes_free(lors_sched_t *s);
void lors__sched_class_pend(lors_sched_t *s, uint32_t b, int delta); /* pending count += delta */
int lors__sched_class_push(lors_sched_t *s, uint32_t b);              /* b is pending again */

/* lors_sched_ahead.c: given the lowest pending block *b and its best replica *r, maybe a later
 * block or another depot (lookahead). */
void lors__sched_lookahead(const lors_sched_t *s, uint32_t *b, uint32_t *r);

int lors__sched_bits_init(bits_t *t, uint32_t n); /* all clear; -1: out of memory */
void lors__sched_bits_free(bits_t *t);
void lors__sched_bits_set(bits_t *t, uint32_t b);
void lors__sched_bits_clear(bits_t *t, uint32_t b);
uint32_t lors__sched_bits_next(const bits_t *t, uint32_t from); /* lowest set >= from, or NONE */

#endif
