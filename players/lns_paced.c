/* lns_paced.c -- lns_paced: a stand-in player that reads stdin at a fixed bitrate and records
 * every underrun.  The objective measure of a stall, for tests and benchmarks.
 *
 * The model is a player with a buffer of --buffer bytes.  It reads stdin whenever a chunk
 * (16 KiB, a quarter of a pipe) of that buffer is free (so a slow player pushes back on the
 * writer, as a real one does) and plays the buffer at --rate, checking every --tick while it
 * waits for data.  Between reads it sleeps until the play clock frees the next chunk: a few
 * system calls per chunk, ~0.2% of a core at 15 Mbit/s.  Playback starts once --prebuffer
 * seconds of stream are buffered (or the input ended).  When the play position catches up
 * with the bytes received before the input ended, the player is starved: an underrun starts
 * at the exact moment the buffer ran dry and lasts until one tick's worth of bytes (or the
 * end of the input) is there again.  Like a real player, the clock stops while starved: the
 * underrun delays the rest of the stream rather than skipping it.  The position is a function
 * of time, not of ticks, so the rate is exact whatever the tick; the tick only bounds how
 * late a stall is noticed (never how long it is measured to be: its start is computed, its
 * end is the wake-up on the data's arrival).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ibp.h"
#include "lns_array.h"
#include "lns_io.h"
#include "lns_time.h"
#include "lns_units.h"
#include "lns_version.h"

static const char *TOOL = "lns_paced";

enum { EXIT_OK = 0, EXIT_USAGE = 2, EXIT_IO = 4, EXIT_INTERNAL = 9 };

#define NS 1000000000.0

static void usage(FILE *f)
{
    fprintf(f,
"Usage: lns_paced --rate RATE [options] < STREAM\n"
"Consume standard input at RATE bits per second, as a player would, and record every\n"
"underrun: when it wanted data and none was there, and for how long.\n"
"\n"
"  -r, --rate RATE        bits per second; K, M, G suffixes are powers of 1000 (15M)\n"
"  -p, --prebuffer T      seconds of stream to buffer before playing (default 0; 0.5 ok)\n"
"  -b, --buffer T         the player's buffer, in seconds of stream (default 2, at least\n"
"                         the pre-buffer and 64 KiB)\n"
"  -t, --tick MS          while waiting for data, check every MS milliseconds (default\n"
"                         10); an underrun ends once MS ms of stream are there\n"
"  -o, --output FILE      also write the bytes read to FILE\n"
"  -j, --json[=FILE]      the results as JSON on stdout (or in FILE)\n"
"  -q, --quiet            no summary line on stderr\n"
"      --help, --version\n"
"\n"
"Exit: 0 ok (underruns or not), 2 usage, 4 reading stdin or writing FILE failed.\n"
"See lns_paced(1).\n");
}

static int parse_secs(const char *s, double max, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || (*end && strcmp(end, "s") != 0) || !(v >= 0) || v > max)
        return -1;
    *out = v;
    return 0;
}

typedef struct underrun {
    double at;       /* seconds after playback started (wall clock) */
    int64_t byte;    /* play position when it ran dry */
    double seconds;  /* how long it lasted */
} underrun_t;

typedef struct paced {
    double Bps;                 /* bytes per second */
    int64_t prebuffer, cap;     /* bytes */
    int64_t chunk;              /* bytes: read once this much of the buffer is free */
    int tick_ms;
    int in, out;                /* stdin; --output fd or -1 */
    /* state */
    int64_t t_launch, t_first, t_play; /* ns; t_first/t_play 0 until they happen */
    int64_t stalled;            /* ns of playback clock stopped by underruns so far */
    int64_t recv, pos;          /* bytes read; bytes played */
    int eof, starving;
    int64_t starve_from;        /* ns: when the buffer ran dry */
    int64_t t_end;              /* ns: the last byte played */
    int64_t t_done;             /* ns: when we actually got there (after sleeping) */
    underrun_t *ur;
    size_t nur, urcap;
    double ur_total, ur_max;
} paced_t;

/* The play clock runs from t_play, stopped while starving. */
static int64_t due_at(const paced_t *p, int64_t now)
{
    double d = (double)(now - p->t_play - p->stalled) / NS * p->Bps;
    return d < 0 ? 0 : d > (double)INT64_MAX / 2 ? INT64_MAX / 2 : (int64_t)d;
}

/* The moment the play position reaches byte b (not starving). */
static int64_t time_of(const paced_t *p, int64_t b)
{
    return p->t_play + p->stalled + (int64_t)((double)b / p->Bps * NS);
}

static int record(paced_t *p, int64_t now)
{
    if (lns_grow(&p->ur, &p->urcap, p->nur + 1, sizeof *p->ur, 16) < 0)
        return -1;
    underrun_t *u = &p->ur[p->nur++];
    u->at = (double)(p->starve_from - p->t_play) / NS;
    u->byte = p->pos;
    u->seconds = (double)(now - p->starve_from) / NS;
    p->ur_total += u->seconds;
    if (u->seconds > p->ur_max)
        p->ur_max = u->seconds;
    p->stalled += now - p->starve_from;
    p->starving = 0;
    return 0;
}

/* Advance the play position to now; 1 when the stream is over. */
static int play(paced_t *p, int64_t now)
{
    if (!p->t_play) {
        if ((p->recv < p->prebuffer || p->recv == 0) && !p->eof)
            return 0; /* waiting for the first bytes is the start delay, not an underrun */
        p->t_play = now;
    }
    if (p->starving) {
        int64_t resume = (int64_t)(p->Bps * p->tick_ms / 1000.0);
        if (resume > p->cap) /* a --buffer shorter than the tick would never resume */
            resume = p->cap;
        if (p->recv - p->pos >= (resume > 0 ? resume : 1))
            return record(p, now) < 0 ? -1 : 0;
        if (p->eof) { /* nothing more will come: that was the end, not a stall */
            p->t_end = p->starve_from;
            return 1;
        }
        return 0;
    }
    int64_t due = due_at(p, now);
    if (due < p->recv) {
        p->pos = due;
        return 0;
    }
    p->pos = p->recv;
    if (p->eof) {
        p->t_end = time_of(p, p->recv);
        return 1;
    }
    p->starving = 1;
    p->starve_from = time_of(p, p->recv);
    return 0;
}

/* Sleep until the monotonic time t (ns), whatever signals come. */
static void sleep_until(int64_t t)
{
    int64_t d = t - lns_mono_ns();
    if (d <= 0)
        return;
    struct timespec ts = {d / 1000000000, d % 1000000000};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* The loop sleeps whenever there is nothing to do, and wakes only when there is: a chunk of
 * room in the buffer to fill (computed from the play clock), data on stdin after room opened,
 * a tick while waiting for data (to notice a stall), the last byte's time after the input
 * ended.  Reading whenever any room opened made it a busy loop: the play position moves every
 * nanosecond, so each pass found a few bytes of room and read a few bytes from the full pipe,
 * ~95% of a core at 15 Mbit/s, nearly all system time. */
static int run(paced_t *p)
{
    static char buf[1 << 16];
    int64_t tick = (int64_t)p->tick_ms * 1000000;
    int64_t next = lns_mono_ns() + tick;
    for (;;) {
        int64_t now = lns_mono_ns();
        int r = play(p, now);
        if (r < 0)
            return EXIT_INTERNAL;
        if (r > 0)
            break;
        if (now >= next)
            next = now + tick;
        int64_t room = p->cap - (p->recv - p->pos);
        if (p->eof) { /* playing (play() started it): nothing to do until the last byte */
            sleep_until(time_of(p, p->recv));
            continue;
        }
        if (p->t_play && !p->starving && room < p->chunk) {
            /* the buffer is full: come back when a chunk of it has played (one byte more,
             * so the clock's rounding cannot leave the room a byte short) */
            sleep_until(time_of(p, p->recv + p->chunk - p->cap + 1));
            continue;
        }
        if (room <= 0) {
            sleep_until(next);
            continue;
        }
        struct pollfd pf = {p->in, POLLIN, 0};
        int n = poll(&pf, 1, (int)((next - now + 999999) / 1000000));
        if (n < 0 && errno != EINTR) {
            fprintf(stderr, "%s: waiting for stdin: %s\n", TOOL, strerror(errno));
            return EXIT_IO;
        }
        if (n <= 0)
            continue;
        ssize_t got = read(p->in, buf, room < (int64_t)sizeof buf ? (size_t)room : sizeof buf);
        if (got < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            fprintf(stderr, "%s: reading stdin: %s\n", TOOL, strerror(errno));
            return EXIT_IO;
        }
        if (got == 0) {
            p->eof = 1;
            continue;
        }
        if (!p->t_first)
            p->t_first = lns_mono_ns();
        p->recv += got;
        if (p->out >= 0 && lns_fd_write_all(p->out, buf, (size_t)got, -1) < 0) {
            fprintf(stderr, "%s: writing the output: %s\n", TOOL, strerror(errno));
            return EXIT_IO;
        }
    }
    /* the last bytes take their time to play, as they would in a player */
    sleep_until(p->t_end);
    p->t_done = lns_mono_ns();
    return EXIT_OK;
}

static double secs(int64_t from, int64_t to)
{
    return from && to ? (double)(to - from) / NS : -1;
}

static void print_json(FILE *f, const paced_t *p)
{
    double played = p->t_play ? secs(p->t_play, p->t_end) : 0;
    /* measured on the wall clock, stalls excluded: what the pacing really achieved */
    double playing = p->t_done ? secs(p->t_play, p->t_done) - p->ur_total : 0;
    fprintf(f, "{\"bytes\": %" PRId64 ", \"seconds\": %.6f, \"rate_bps\": %.0f, "
            "\"measured_bps\": %.0f, \"first_byte_s\": %.6f, \"start_delay_s\": %.6f, "
            "\"prebuffer_bytes\": %" PRId64 ", \"buffer_bytes\": %" PRId64 ",\n"
            " \"underruns\": {\"count\": %zu, \"total_s\": %.6f, \"max_s\": %.6f, \"list\": [",
            p->recv, played, p->Bps * 8, playing > 0 ? (double)p->recv * 8 / playing : 0,
            secs(p->t_launch, p->t_first), secs(p->t_launch, p->t_play), p->prebuffer, p->cap,
            p->nur, p->ur_total, p->ur_max);
    for (size_t i = 0; i < p->nur; i++)
        fprintf(f, "%s\n  {\"at_s\": %.6f, \"byte\": %" PRId64 ", \"seconds\": %.6f}",
                i ? "," : "", p->ur[i].at, p->ur[i].byte, p->ur[i].seconds);
    fprintf(f, "]}}\n");
}

enum { OPT_HELP = 256, OPT_VERSION };

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"rate", required_argument, NULL, 'r'},
        {"prebuffer", required_argument, NULL, 'p'},
        {"buffer", required_argument, NULL, 'b'},
        {"tick", required_argument, NULL, 't'},
        {"output", required_argument, NULL, 'o'},
        {"json", optional_argument, NULL, 'j'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, OPT_HELP},
        {"version", no_argument, NULL, OPT_VERSION},
        {NULL, 0, NULL, 0},
    };
    paced_t p;
    double rate = 0, pre = 0, bufs = 2;
    const char *output = NULL, *json = NULL;
    int c, quiet = 0, want_json = 0;

    memset(&p, 0, sizeof p);
    p.t_launch = lns_mono_ns();
    p.tick_ms = 10;
    p.out = -1;
    p.in = STDIN_FILENO;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":r:p:b:t:o:j::q", longopts, NULL)) != -1) {
        switch (c) {
        case 'r':
            if (lns_parse_rate(optarg, &rate) < 0) {
                fprintf(stderr, "%s: --rate %s: expected bits per second such as 15M "
                        "(try '%s --help')\n", TOOL, optarg, TOOL);
                return EXIT_USAGE;
            }
            break;
        case 'p':
        case 'b':
            if (parse_secs(optarg, 3600, c == 'p' ? &pre : &bufs) < 0) {
                fprintf(stderr, "%s: %s %s: expected seconds from 0 to 3600 (try '%s --help')\n",
                        TOOL, c == 'p' ? "--prebuffer" : "--buffer", optarg, TOOL);
                return EXIT_USAGE;
            }
            break;
        case 't': {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (end == optarg || *end || v < 1 || v > 1000) {
                fprintf(stderr, "%s: --tick %s: expected 1 to 1000 ms (try '%s --help')\n", TOOL,
                        optarg, TOOL);
                return EXIT_USAGE;
            }
            p.tick_ms = (int)v;
            break;
        }
        case 'o': output = optarg; break;
        case 'j': want_json = 1; json = optarg; break;
        case 'q': quiet = 1; break;
        case OPT_HELP: usage(stdout); return EXIT_OK;
        case OPT_VERSION: printf("%s (lns) %s\n", TOOL, LNS_VERSION); return EXIT_OK;
        case ':':
            fprintf(stderr, "%s: %s needs a value (try '%s --help')\n", TOOL, argv[optind - 1],
                    TOOL);
            return EXIT_USAGE;
        default:
            fprintf(stderr, "%s: unknown option %s (try '%s --help')\n", TOOL, argv[optind - 1],
                    TOOL);
            return EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "%s: unexpected argument %s: the stream comes on stdin (try '%s --help')\n",
                TOOL, argv[optind], TOOL);
        return EXIT_USAGE;
    }
    if (rate <= 0) {
        fprintf(stderr, "%s: --rate is required (try '%s --help')\n", TOOL, TOOL);
        return EXIT_USAGE;
    }
    p.Bps = rate / 8;
    p.prebuffer = (int64_t)(pre * p.Bps);
    p.cap = (int64_t)(bufs * p.Bps);
    if (p.cap < p.prebuffer)
        p.cap = p.prebuffer;
    if (p.cap < 65536)
        p.cap = 65536;
    /* a quarter of a default pipe per read: ~115 reads a second at 15 Mbit/s, and a writer
     * kept ahead of us still leaves the pipe 3/4 full (reading a whole pipe's worth at once
     * emptied it ~30 times a second, which lors_play's monitor counted as "pipe empty") */
    p.chunk = p.cap / 2 < 16384 ? p.cap / 2 : 16384;
    if (output && (p.out = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
        fprintf(stderr, "%s: %s: %s\n", TOOL, output, strerror(errno));
        return EXIT_IO;
    }

    int code = run(&p);
    if (p.out >= 0 && close(p.out) < 0 && code == EXIT_OK) {
        fprintf(stderr, "%s: %s: %s\n", TOOL, output, strerror(errno));
        code = EXIT_IO;
    }
    if (code == EXIT_OK && !p.t_end)
        p.t_end = lns_mono_ns();
    if (!quiet) {
        double played = p.t_play ? secs(p.t_play, p.t_end) : 0;
        fprintf(stderr, "%s: %" PRId64 " bytes in %.3f s at %.3f Mbit/s: %zu underruns, "
                "%.3f s in all, longest %.3f s", TOOL, p.recv, played, p.Bps * 8 / 1e6, p.nur,
                p.ur_total, p.ur_max);
        if (p.t_first)
            fprintf(stderr, "; first byte after %.3f s, playing after %.3f s",
                    secs(p.t_launch, p.t_first), secs(p.t_launch, p.t_play));
        fprintf(stderr, "\n");
    }
    if (want_json) {
        FILE *f = json ? fopen(json, "w") : stdout;
        if (!f) {
            fprintf(stderr, "%s: %s: %s\n", TOOL, json, strerror(errno));
            code = code ? code : EXIT_IO;
        } else {
            print_json(f, &p);
            if ((json ? fclose(f) : fflush(f)) != 0 && !code) {
                fprintf(stderr, "%s: %s: %s\n", TOOL, json ? json : "stdout", strerror(errno));
                code = EXIT_IO;
            }
        }
    }
    free(p.ur);
    return code;
}
