/* lors_sched.h -- the download scheduler's decision core: which block, from which replica, when.
 *
 * Internal to liblors.  A pure, deterministic state machine: no sockets, threads, I/O or clock
 * reads.  The caller passes the current monotonic time (ns) into every call that needs one.
 *
 * Locking: the module keeps no lock of its own.  The download engine is expected to hold one
 * mutex around every call (workers asking for work, reporting progress/completion/failure, the
 * writer releasing blocks).  Every call is O(log n) or amortized O(1) in the number of blocks,
 * plus at most O(depots + fetches in flight); only lors_sched_next's first call and a depot's
 * permanent death scan all blocks once (to find blocks that can never be fetched).
 *
 * Use:
 *   lors_sched_cfg_init(&cfg); set off, len, block_size, ndepots, ...;
 *   s = lors_sched_new(&cfg);
 *   lors_sched_add_replica(s, block, depot, mapping, usable) for every block and replica;
 *   workers: lors_sched_next -> fetch -> lors_sched_progress* -> lors_sched_complete | _fail;
 *   writer:  lors_sched_releasable -> write the block -> lors_sched_released.
 * See docs/scheduler.md for the model and the decision order.
 */
#ifndef LNS_LORS_SCHED_H
#define LNS_LORS_SCHED_H

#include <stddef.h>
#include <stdint.h>

/* Most fetches of one block at once (the upper bound of cfg.redundancy). */
#define LORS_SCHED_MAX_R 8

typedef struct lors_sched lors_sched_t;

typedef struct lors_sched_cfg {
    uint64_t off, len;        /* the requested range [off, off+len), len > 0 */
    uint64_t block_size;      /* -bs; the last block may be shorter */
    int ndepots;              /* depots are 0 .. ndepots-1 */
    int depot_cap;            /* -a: most fetches per depot at once (per depot: _depot_cap) */
    int depot_min;            /* 1 .. depot_cap - 1: a depot starts with this many fetches and
                               * gets more, up to its cap, when its latency times its rate is
                               * worth more than a block (docs/scheduler.md, "Streams per
                               * depot"); 0 or >= the cap: always the cap */
    int redundancy;           /* -r R: most fetches of one block at once, 1 .. MAX_R; 1 = none */
    int progress;             /* -p P: later completions before a redundant fetch; 0 = none */
    uint64_t buffer_bytes;    /* -M/-C: done + in-flight unreleased bytes; 0 = unlimited */
    uint64_t prebuffer_bytes; /* -q: contiguous done bytes before the first release */
    int fail_limit;           /* K consecutive failures mark a depot dead; 0 = never */
    uint64_t dead_retry_ns;   /* a depot marked dead by K failures is retried after this; 0 = never */
    uint64_t stall_ns;        /* no progress for this long: stalled; 0 = no stall detection */
    uint64_t silent_ns;       /* the least silence (no reply, no bytes) that makes a depot
                               * suspect, before its own measured pace stretches it
                               * (docs/scheduler.md, "Silent depots"); 0 = only stall_ns */
    double ewma_alpha;        /* weight of the newest throughput sample, (0, 1] */
    int endgame;              /* nothing pending: idle streams duplicate the lowest in-flight block */
    int any_order;            /* the writer takes done blocks in any order (an output it can
                               * write at any offset): releasable gives the lowest done block,
                               * the buffer counts only blocks in flight and done but not yet
                               * written, and there is no pre-buffer */
} lors_sched_cfg_t;

typedef enum lors_sched_err {
    LORS_SCHED_OK = 0,
    LORS_SCHED_E_INVAL = -1, /* argument out of range, or call in the wrong state */
    LORS_SCHED_E_STALE = -2, /* fetch id unknown, finished or cancelled */
    LORS_SCHED_E_NOMEM = -3,
} lors_sched_err_t;

typedef enum lors_sched_action {
    LORS_SCHED_FETCH = 1, /* start the fetch described in lors_sched_fetch_t */
    LORS_SCHED_WAIT,      /* nothing to start now; ask again at wait_until or after an event */
    LORS_SCHED_DONE,      /* every block is fetched; nothing left for this stream */
    LORS_SCHED_FAILED,    /* a block can never be fetched: [failed_off, failed_off+failed_len) */
} lors_sched_action_t;

typedef enum lors_sched_fail_kind {
    LORS_SCHED_FAIL_DEPOT = 1, /* depot unreachable or refused: counts toward its death */
    LORS_SCHED_FAIL_BAD_DATA,  /* checksum mismatch or short data: this replica is bad for good */
    LORS_SCHED_FAIL_TIMEOUT,   /* aborted: timed out or stalled; counts toward the depot's death */
} lors_sched_fail_kind_t;

typedef struct lors_sched_fetch {
    uint64_t id;         /* names this fetch in progress/complete/fail; never 0 */
    uint32_t block;      /* block index */
    uint64_t off, len;   /* the block's bytes in the file */
    int depot;           /* replica's depot */
    int mapping;         /* replica's opaque mapping index, as given to _add_replica */
    int redundant;       /* 1: the block already has another fetch in flight */
    uint64_t wait_until; /* WAIT: absolute ns to ask again; 0 = after the next complete/fail/release */
    uint64_t failed_off, failed_len; /* FAILED: the lowest byte range that cannot be fetched */
} lors_sched_fetch_t;

typedef struct lors_sched_depot_stats {
    int active;                 /* fetches in flight now */
    int dead;                   /* 1 if dead at the last call that looked */
    double bps;                 /* EWMA of the depot's aggregate rate, bytes/s; 0 before a sample */
    uint64_t started;           /* fetches started (redundant ones included) */
    uint64_t blocks_won;        /* blocks whose winning fetch came from this depot */
    uint64_t bytes_won;
    uint64_t redundant_started; /* redundant fetches started here */
    uint64_t redundant_won;     /* ... of which won their block */
    uint64_t cancelled;         /* fetches here that lost to another and were cancelled */
    uint64_t withdrawn;         /* fetches here withdrawn for a scarcer class (_withdraw) */
    uint64_t failures;          /* fetches here that failed (any kind) */
    uint64_t bad_data;          /* ... of which delivered bad data */
    uint64_t silences;          /* times the depot fell silent (its fetches rescued elsewhere) */
} lors_sched_depot_stats_t;

typedef struct lors_sched_totals {
    uint32_t blocks, done, released, failed; /* done counts released blocks too */
    uint64_t bytes_done, bytes_released;
    uint64_t buffered;          /* bytes held against buffer_bytes now */
    uint64_t started, redundant_started, cancelled, failures;
    uint64_t withdrawn;
    int in_flight;
} lors_sched_totals_t;

/* Defaults: R 2, P 3, cap 4, K 3, dead retry 30 s, stall 10 s, silence 1 s, alpha 0.3,
 * endgame on. */
void lors_sched_cfg_init(lors_sched_cfg_t *cfg);

/* NULL on a bad configuration (errno EINVAL) or out of memory (ENOMEM). */
lors_sched_t *lors_sched_new(const lors_sched_cfg_t *cfg);
void lors_sched_free(lors_sched_t *s);

uint32_t lors_sched_nblocks(const lors_sched_t *s);
/* The bytes of block b: [*off, *off + *len). */
int lors_sched_block_range(const lors_sched_t *s, uint32_t b, uint64_t *off, uint64_t *len);

/* Replicas are added before the first lors_sched_next, in any order; ones added first win
 * ties.  usable = 0 keeps a replica for reporting but never fetches from it. */
int lors_sched_add_replica(lors_sched_t *s, uint32_t b, int depot, int mapping, int usable);

/* Per-depot connection cap (overrides cfg.depot_cap), >= 1. */
int lors_sched_depot_cap(lors_sched_t *s, int depot, int cap);
/* The caller's verdict on a depot.  dead = 1 with retry_at = 0: dead for good (blocks left
 * with no other replica fail); retry_at > 0: alive again from that time.  dead = 0 revives it.
 * Fetches in flight on it are not touched: the caller aborts them and reports _fail. */
int lors_sched_depot_dead(lors_sched_t *s, int depot, int dead, uint64_t retry_at);

/* What a free stream should do now.  Returns the action and fills *f. */
lors_sched_action_t lors_sched_next(lors_sched_t *s, uint64_t now, lors_sched_fetch_t *f);

/* 1 if lors_sched_next(s, now, ...) would answer FETCH now, else 0; starts nothing.  An
 * engine with idle streams asks this after every event to wake exactly as many of them as
 * there is work for. */
int lors_sched_has_work(lors_sched_t *s, uint64_t now);

/* The depot has answered the fetch's request (its reply header came): now - start is a
 * latency sample for the depot.  Optional; without it the depot keeps depot_min fetches. */
int lors_sched_replied(lors_sched_t *s, uint64_t id, uint64_t now);

/* bytes: the total received so far by this fetch; any increase resets its stall clock. */
int lors_sched_progress(lors_sched_t *s, uint64_t id, uint64_t bytes, uint64_t now);

/* The fetch, just started, begins with `bytes` of its block already there (kept from a failed
 * fetch of the block): its progress starts at bytes, and its depot's rate counts only what
 * it loads after them.  Call before its first lors_sched_progress. */
int lors_sched_resumed(lors_sched_t *s, uint64_t id, uint64_t bytes);

/* The fetch delivered its whole block.  The first completion of a block commits it; the ids
 * of the block's other fetches, which the caller must cancel (abort, discard their data, and
 * not report them again), are written to cancel[] (room for LORS_SCHED_MAX_R - 1) and their
 * number returned.  Negative lors_sched_err_t on a bad or stale id. */
int lors_sched_complete(lors_sched_t *s, uint64_t id, uint64_t now, uint64_t *cancel);

/* The fetch failed.  Returns 0, or 1 if its block has now failed for good (next returns
 * FAILED), or a negative lors_sched_err_t. */
int lors_sched_fail(lors_sched_t *s, uint64_t id, uint64_t now, lors_sched_fail_kind_t kind);

/* The replicas of block b given with this mapping (lors_sched_add_replica): held 1 keeps
 * them from being chosen without ruling them out (the block waits for them if nothing else
 * is left); 0 makes them eligible again; -1 rules them out for good.  For pieces that may
 * stand in for one block at a time (erasure coding).  Fetches in flight are not touched.
 * Returns 0, 1 if the block has now failed for good, or a negative lors_sched_err_t. */
int lors_sched_replica_hold(lors_sched_t *s, uint32_t b, int mapping, int held);

/* Fetches with no progress for cfg.stall_ns: ids written to out[0 .. max), their number
 * returned.  The caller should abort them and report _fail(..., LORS_SCHED_FAIL_TIMEOUT). */
int lors_sched_stalled(const lors_sched_t *s, uint64_t now, uint64_t *out, int max);

/* cfg.any_order: the fetches the scheduler has withdrawn now, ids written to out[0 .. max),
 * their number returned: first fetches sent before their depot had shown its pace, which a
 * scarcer class needs now (docs/scheduler.md, "Scarce blocks first").  They are ended and
 * their blocks pending again; the caller must abort them and never report them again, as
 * it does a loser that lors_sched_complete cancels.  Call it as often as lors_sched_stalled. */
int lors_sched_withdraw(lors_sched_t *s, uint64_t now, uint64_t *out, int max);

/* Writer: 1 and *b = the next block to write, in order, once the pre-buffer is satisfied
 * (cfg.any_order: the lowest done block); 0 if it must wait. */
int lors_sched_releasable(const lors_sched_t *s, uint32_t *b);
/* The writer has written block b (which lors_sched_releasable gave): its bytes leave the buffer. */
int lors_sched_released(lors_sched_t *s, uint32_t b);
/* Blocks 0 .. *return - 1 are all written: the output's whole prefix. */
uint32_t lors_sched_prefix(const lors_sched_t *s);
/* cfg.any_order, before the first lors_sched_next: block b is in the output already (an
 * earlier run wrote it): it is counted released and never fetched. */
int lors_sched_skip(lors_sched_t *s, uint32_t b);

int lors_sched_depot_stats(const lors_sched_t *s, int depot, lors_sched_depot_stats_t *st);
void lors_sched_totals(const lors_sched_t *s, lors_sched_totals_t *t);

#endif
