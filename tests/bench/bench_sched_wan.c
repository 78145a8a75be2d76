/* bench_sched_wan.c -- the download scheduler (lors_sched) against a simulated WAN scenario.
 *
 * Reads a scenario of the WAN testbed's family (tests/wan/gen_scenario.sh: hosts with a rate
 * and a latency, copies, fragments, events at fractions of the bytes) and plays lors_download's
 * engine against it in simulated time: the placement of lors_upload (copy k of fragment j on
 * host (j * copies + k) mod hosts), the engine's automatic stream count and its connections
 * kept between fetches, and per host a link shared equally by the fetches whose data flows on
 * it.  A run takes milliseconds where the testbed takes a minute, so a scheduler change can be
 * tried on many seeds before the testbed judges it (tests/wan/sim_random.sh); it is a model,
 * not the testbed (docs/wan-testbed.md, "The scheduler simulator").
 *
 * The model is the testbed's: a host's latency delays only the data it sends (Toxiproxy's
 * downstream latency toxic in front of the depot, tests/wan/testbed.sh), so a fetch's first
 * bytes come its host's latency after its request, and TCP's window never limits (the client's
 * connection ends at the proxy, next door).  The data of the fetches that flow on a host share
 * its rate equally.  Progress is reported every 64 KiB, as the engine does.  A killed host
 * fails its fetches after its latency, and new ones at once (refused); a crashed one answers
 * nothing (its fetches fall silent, as do requests on its idle connections; new connections
 * time out after 5 s, as the engine's).  Rates are payload rates (1448 data bytes per
 * 1514-byte frame, as the testbed's limits count them).  A fetch that fails or is withdrawn
 * leaves the whole pieces it received to its block's next fetch, which loads only the rest
 * (lors_sched_resumed; at most 8 blocks keep bytes), and a redundant fetch starts with what
 * the block's fetch in flight has received, as the engine does; --no-keep does neither.
 * A killed host's bytes already on their way are not modelled (the testbed delivers them).
 *
 * Prints the simulated time and, per host, the blocks it won and the fetches it lost; exits 1
 * if the scheduler fails a block or leaves the download stuck.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lors_sched.h"
#include "usage.h"

#define MAXH 16
#define MAXF 64       /* fetches in flight (the engine's AUTO_MAX streams) */
#define MAXEV 16
#define PIECE 65536.0 /* the engine's progress report */
#define CONNECT_NS 5000000000ull
#define TICK_NS 100000000ull /* the engine's writer tick (stall checks) */
#define EFF (1448.0 / 1514.0)
#define MAX_PARTS 8 /* the engine's: blocks holding bytes of failed fetches */
#define STUCK_S 36000.0 /* no scenario of the family takes a simulated 10 h: the scheduler hangs */

typedef struct host {
    double rate;  /* payload bytes/s */
    double lat;   /* s, the delay of what it sends */
    double jit;   /* s, up to this more or less per fetch */
    int dead;     /* 1 killed (resets), 2 crashed (silent) */
    int won, lost;
} host_t;

typedef struct fetch {
    uint64_t id;
    uint32_t block;
    int host;
    double len, got, reported;
    double flow_at; /* data flows from this time on */
    double fail_at; /* >= 0: fails at this time (reset, refused, connect timeout) */
    int replied;
} fetch_t;

typedef struct event {
    double frac;
    int host;
    int kind; /* 0 rate, 1 kill, 2 crash */
    double rate;
    int done;
} event_t;

typedef struct sim {
    host_t h[MAXH];
    int nh, copies, frags;
    uint64_t size, bs;
    event_t ev[MAXEV];
    int nev;
    int npool[MAXH]; /* idle connections per host */
    fetch_t f[MAXF];
    int nf, idle, streams;
    double now, committed;
    double *blen; /* each block's real length */
    double *kept; /* per block: bytes kept from a failed or withdrawn fetch */
    int nkept;
    lors_sched_t *s;
    int pipe, trace, no_withdraw, no_keep;
} sim_t;

static uint64_t ns(double t)
{
    return (uint64_t)(t * 1e9 + 0.5);
}

static void parse(sim_t *m, FILE *in)
{
    char line[512];
    while (fgets(line, sizeof line, in)) {
        double a, b;
        int k;
        char w[64];
        if (sscanf(line, "size %63s", w) == 1)
            m->size = bench_size_arg(w, "size");
        else if (sscanf(line, "copies %d", &k) == 1)
            m->copies = k;
        else if (sscanf(line, "fragments %d", &k) == 1)
            m->frags = k;
        else if (sscanf(line, "host %lfmbit latency=%lfms", &a, &b) == 2 && m->nh < MAXH) {
            double j = 0;
            const char *p = strstr(line, "jitter=");
            if (p)
                j = atof(p + 7);
            m->h[m->nh].rate = a * 1e6 / 8 * EFF;
            m->h[m->nh].lat = b / 1e3;
            m->h[m->nh].jit = j / 1e3;
            m->nh++;
        } else if (sscanf(line, "at %lf%% %63[^\n]", &a, w) == 2 && m->nev < MAXEV) {
            event_t *e = &m->ev[m->nev];
            e->frac = a / 100;
            if (sscanf(w, "host%d rate %lfmbit", &k, &b) == 2) {
                e->kind = 0;
                e->rate = b * 1e6 / 8 * EFF;
            } else if (sscanf(w, "kill host%d", &k) == 1) {
                e->kind = 1;
            } else if (sscanf(w, "crash host%d", &k) == 1) {
                e->kind = 2;
            } else {
                fprintf(stderr, "bench_sched_wan: unknown event: %s", line);
                exit(2);
            }
            if (k < 1 || k > m->nh) {
                fprintf(stderr, "bench_sched_wan: no such host: %s", line);
                exit(2);
            }
            e->host = k - 1;
            m->nev++;
        } else if (!strncmp(line, "at ", 3)) {
            fprintf(stderr, "bench_sched_wan: only events at a share of the bytes: %s", line);
            exit(2);
        }
    }
    if (!m->size || !m->nh || m->copies < 1 || m->frags < 1) {
        fprintf(stderr, "bench_sched_wan: the scenario needs size, copies, fragments and hosts\n");
        exit(2);
    }
}

/* The engine's blocks: each fragment (a mapping) cut into blocks of bs, the last shorter. */
static void place(sim_t *m, int any_order)
{
    uint64_t fsz = (m->size + (uint64_t)m->frags - 1) / (uint64_t)m->frags, nb = 0;
    for (int j = 0; j < m->frags; j++) {
        uint64_t a = (uint64_t)j * fsz, e = a + fsz < m->size ? a + fsz : m->size;
        nb += (e - a + m->bs - 1) / m->bs;
    }
    m->blen = calloc(nb, sizeof *m->blen);
    m->kept = calloc(nb, sizeof *m->kept);
    lors_sched_cfg_t cfg;
    lors_sched_cfg_init(&cfg);
    cfg.off = 0;
    cfg.len = nb * m->bs;
    cfg.block_size = m->bs;
    cfg.ndepots = m->nh;
    cfg.depot_cap = 4;
    int k = (8 + m->nh - 1) / m->nh;
    cfg.depot_min = k > 2 ? k : 2;
    cfg.redundancy = 2;
    cfg.progress = 3;
    cfg.buffer_bytes = 64ull << 20;
    cfg.dead_retry_ns = 0;
    cfg.stall_ns = 10 * 1000000000ull;
    cfg.any_order = any_order;
    m->s = lors_sched_new(&cfg);
    if (!m->s || !m->blen || !m->kept) {
        fprintf(stderr, "bench_sched_wan: out of memory\n");
        exit(1);
    }
    uint32_t b = 0;
    for (int j = 0; j < m->frags; j++) {
        uint64_t a = (uint64_t)j * fsz, e = a + fsz < m->size ? a + fsz : m->size;
        for (uint64_t o = a; o < e; o += m->bs, b++) {
            m->blen[b] = (double)(e - o < m->bs ? e - o : m->bs);
            for (int c = 0; c < m->copies; c++)
                lors_sched_add_replica(m->s, b, (j * m->copies + c) % m->nh, j, 1);
        }
    }
    int n = m->nh * cfg.depot_cap;
    m->streams = n < MAXF ? n : MAXF;
    m->idle = m->streams;
}

/* Each fetch's rate now: its host's rate shared equally by the fetches flowing on it. */
static void rates(const sim_t *m, double *r)
{
    int on[MAXH] = {0};
    for (int i = 0; i < m->nf; i++) {
        const fetch_t *f = &m->f[i];
        r[i] = 0;
        if (!m->h[f->host].dead && f->fail_at < 0 && m->now >= f->flow_at)
            on[f->host]++;
    }
    for (int i = 0; i < m->nf; i++) {
        const fetch_t *f = &m->f[i];
        if (!m->h[f->host].dead && f->fail_at < 0 && m->now >= f->flow_at)
            r[i] = m->h[f->host].rate / on[f->host];
    }
}

static void take_stream(sim_t *m, const lors_sched_fetch_t *sf)
{
    fetch_t *f = &m->f[m->nf++];
    const host_t *h = &m->h[sf->depot];
    memset(f, 0, sizeof *f);
    f->id = sf->id;
    f->block = sf->block;
    f->host = sf->depot;
    f->len = m->blen[sf->block];
    f->fail_at = -1;
    double most = m->kept[sf->block]; /* the rest of the block: what was kept of it, */
    if (most > 0) {
        m->kept[sf->block] = 0;
        m->nkept--;
    }
    for (int i = 0; i < m->nf - 1 && !m->no_keep; i++) /* or its fetches in flight have */
        if (m->f[i].block == sf->block && m->f[i].reported > most && m->f[i].reported < f->len)
            most = m->f[i].reported;
    if (most > 0) {
        f->got = f->reported = most;
        lors_sched_resumed(m->s, f->id, (uint64_t)(f->got * (double)m->bs / f->len));
    }
    if (m->trace)
        printf("%.3f start host%d block %u%s\n", m->now, f->host + 1, f->block,
               sf->redundant ? " redundant" : "");
    if (m->npool[sf->depot])
        m->npool[sf->depot]--;
    else if (h->dead == 1)
        f->fail_at = m->now; /* refused */
    else if (h->dead == 2)
        f->fail_at = m->now + CONNECT_NS / 1e9;
    /* the scenario's jitter, and up to 1 ms of the depot's own (the seed varies the run) */
    f->flow_at = m->now + h->lat + (2 * drand48() - 1) * h->jit + drand48() * 1e-3;
    if (f->flow_at < m->now)
        f->flow_at = m->now;
    m->idle--;
}

/* The fetch in slot i ends; its connection stays for the next fetch on its host (keep) or is
 * closed (a cancelled or failed fetch). */
static void end_fetch(sim_t *m, int i, int keep, const char *how)
{
    const fetch_t *f = &m->f[i];
    if (!m->no_keep && !keep && strcmp(how, "lost") && f->reported > m->kept[f->block] &&
        f->reported < f->len) { /* failed or withdrawn: its whole pieces serve the next */
        if (m->kept[f->block] > 0)
            m->kept[f->block] = f->reported;
        else if (m->nkept < MAX_PARTS) {
            m->kept[f->block] = f->reported;
            m->nkept++;
        }
    }
    if (m->trace)
        printf("%.3f %s host%d block %u (%.0f of %.0f bytes)\n", m->now, how, m->f[i].host + 1,
               m->f[i].block, m->f[i].got, m->f[i].len);
    if (keep)
        m->npool[m->f[i].host]++;
    m->f[i] = m->f[--m->nf];
    m->idle++;
}

static int find(const sim_t *m, uint64_t id)
{
    for (int i = 0; i < m->nf; i++)
        if (m->f[i].id == id)
            return i;
    return -1;
}

static void fire_events(sim_t *m)
{
    for (int e = 0; e < m->nev; e++) {
        event_t *ev = &m->ev[e];
        if (ev->done || m->committed < ev->frac * (double)m->size)
            continue;
        ev->done = 1;
        host_t *h = &m->h[ev->host];
        if (h->dead)
            continue;
        if (ev->kind == 0) {
            h->rate = ev->rate;
            continue;
        }
        h->dead = ev->kind;
        if (ev->kind == 2)
            continue; /* crashed: its connections stay, silent */
        m->npool[ev->host] = 0; /* killed: they are reset */
        for (int i = 0; i < m->nf; i++)
            if (m->f[i].host == ev->host && m->f[i].fail_at < 0)
                m->f[i].fail_at = m->now + h->lat;
    }
}

/* Let the streams ask for work; returns the scheduler's wake time (0: none). */
static double ask(sim_t *m, int *done)
{
    double wake = 0;
    while (m->idle > 0) {
        lors_sched_fetch_t sf;
        lors_sched_action_t a = lors_sched_next(m->s, ns(m->now), &sf);
        if (a == LORS_SCHED_FETCH) {
            take_stream(m, &sf);
            continue;
        }
        if (a == LORS_SCHED_WAIT && sf.wait_until)
            wake = (double)sf.wait_until / 1e9;
        if (a == LORS_SCHED_DONE)
            *done = 1;
        if (a == LORS_SCHED_FAILED) {
            fprintf(stderr, "bench_sched_wan: block %llu failed at %.3f s\n",
                    (unsigned long long)(sf.failed_off / m->bs), m->now);
            exit(1);
        }
        break;
    }
    return wake;
}

static void release(sim_t *m)
{
    uint32_t b;
    while (lors_sched_releasable(m->s, &b) == 1)
        lors_sched_released(m->s, b);
}

static double run(sim_t *m)
{
    double r[MAXF], next_tick = 0;
    for (;;) {
        int done = 0;
        release(m);
        double wake = ask(m, &done);
        lors_sched_totals_t t;
        lors_sched_totals(m->s, &t);
        if (t.released == lors_sched_nblocks(m->s))
            return m->now;
        if (done && !m->nf)
            return m->now;
        /* the next moment anything happens */
        rates(m, r);
        double at = next_tick > m->now ? next_tick : m->now + TICK_NS / 1e9;
        if (wake > m->now && wake < at)
            at = wake;
        for (int i = 0; i < m->nf; i++) {
            const fetch_t *f = &m->f[i];
            if (f->fail_at >= 0) {
                if (f->fail_at < at)
                    at = f->fail_at;
                continue;
            }
            if (m->now < f->flow_at) {
                if (f->flow_at < at)
                    at = f->flow_at;
                continue;
            }
            if (r[i] <= 0)
                continue;
            double to = f->len, p = (floor(f->reported / PIECE) + 1) * PIECE;
            if (p < to)
                to = p;
            double dt = (to - f->got) / r[i] + 1e-9; /* past the boundary, not short of it */
            if (m->now + dt < at)
                at = m->now + dt;
        }
        double dt = at - m->now;
        if (m->now > STUCK_S) {
            fprintf(stderr, "bench_sched_wan: stuck: %d fetches in flight, %u of %u blocks done "
                    "after %.0f s\n", m->nf, t.done, t.blocks, m->now);
            for (int h = 0; h < m->nh; h++) {
                lors_sched_depot_stats_t st;
                lors_sched_depot_stats(m->s, h, &st);
                fprintf(stderr, "  host%d: estimate %.0f B/s, %d fetches, %s\n", h + 1, st.bps,
                        st.active, m->h[h].dead ? "dead" : "alive");
            }
            exit(1);
        }
        for (int i = 0; i < m->nf; i++) {
            fetch_t *f = &m->f[i];
            if (r[i] <= 0)
                continue;
            f->got += r[i] * dt;
            if (f->got > f->len - 1e-6)
                f->got = f->len;
        }
        m->now = at;
        if (m->now >= next_tick) {
            next_tick = m->now + TICK_NS / 1e9;
            uint64_t wd[MAXF];
            int nw = m->no_withdraw ? 0 : lors_sched_withdraw(m->s, ns(m->now), wd, MAXF);
            for (int k = 0; k < nw; k++) {
                int i = find(m, wd[k]);
                if (i >= 0)
                    end_fetch(m, i, 0, "withdrawn");
            }
            uint64_t st[64];
            int n = lors_sched_stalled(m->s, ns(m->now), st, 64);
            for (int k = 0; k < n; k++) {
                int i = find(m, st[k]);
                if (i >= 0) {
                    lors_sched_fail(m->s, st[k], ns(m->now), LORS_SCHED_FAIL_TIMEOUT);
                    end_fetch(m, i, 0, "stalled");
                }
            }
        }
        for (int i = 0; i < m->nf; i++) {
            fetch_t *f = &m->f[i];
            if (f->fail_at >= 0 && f->fail_at <= m->now + 1e-12) {
                lors_sched_fail(m->s, f->id, ns(m->now), LORS_SCHED_FAIL_DEPOT);
                end_fetch(m, i, 0, "failed");
                i = -1;
                continue;
            }
            if (!f->replied && m->now >= f->flow_at && m->h[f->host].dead != 2) {
                f->replied = 1;
                lors_sched_replied(m->s, f->id, ns(m->now));
            }
            if (floor(f->got / PIECE) > floor(f->reported / PIECE) && f->got < f->len) {
                f->reported = floor(f->got / PIECE) * PIECE;
                lors_sched_progress(m->s, f->id, (uint64_t)(f->reported * (double)m->bs / f->len),
                                    ns(m->now));
            }
            if (f->got >= f->len) {
                uint64_t cancel[LORS_SCHED_MAX_R];
                int h = f->host, nc = lors_sched_complete(m->s, f->id, ns(m->now), cancel);
                if (m->kept[f->block] > 0) { /* kept by a fetch that failed meanwhile */
                    m->kept[f->block] = 0;
                    m->nkept--;
                }
                m->committed += f->len;
                m->h[h].won++;
                end_fetch(m, i, 1, "won");
                for (int k = 0; k < nc; k++) {
                    int j = find(m, cancel[k]);
                    if (j >= 0) {
                        m->h[m->f[j].host].lost++;
                        end_fetch(m, j, 0, "lost");
                    }
                }
                fire_events(m);
                i = -1;
            }
        }
    }
}

int main(int argc, char **argv)
{
    bench_usage_init(argv[0],
                     "usage: bench_sched_wan [--pipe] [--trace] [--no-withdraw] [--no-keep] "
                     "[--seed N] "
                     "[-bs SIZE] SCENARIO\n"
                     "  plays lors_download's scheduler against a scenario of gen_scenario.sh\n"
                     "  in simulated time; prints the time and per host the blocks won and the\n"
                     "  fetches lost.  --pipe: in order (to a pipe); --trace: every fetch;\n"
                     "  --no-withdraw: never lors_sched_withdraw; --no-keep: a failed fetch's\n"
                     "  bytes are dropped, a redundant one loads its whole block; --seed: the\n"
                     "  jitter's random seed\n");
    sim_t m;
    memset(&m, 0, sizeof m);
    m.bs = 1 << 20;
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--pipe"))
            m.pipe = 1;
        else if (!strcmp(argv[i], "--trace"))
            m.trace = 1;
        else if (!strcmp(argv[i], "--no-withdraw"))
            m.no_withdraw = 1;
        else if (!strcmp(argv[i], "--no-keep"))
            m.no_keep = 1;
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            srand48(atol(argv[++i]));
        else if (!strcmp(argv[i], "-bs") && i + 1 < argc)
            m.bs = bench_size_arg(argv[++i], "-bs");
        else if (argv[i][0] != '-' && !path)
            path = argv[i];
        else
            bench_usage_exit("unknown argument");
    }
    if (!path)
        bench_usage_exit("no scenario");
    FILE *in = fopen(path, "r");
    if (!in) {
        perror(path);
        return 1;
    }
    parse(&m, in);
    fclose(in);
    place(&m, !m.pipe);
    double t = run(&m);
    printf("time %.3f\n", t);
    for (int h = 0; h < m.nh; h++)
        printf("host%d won %d lost %d\n", h + 1, m.h[h].won, m.h[h].lost);
    lors_sched_free(m.s);
    free(m.blen);
    free(m.kept);
    return 0;
}
