/* tool_progress.c -- the progress bar on stderr, and the tee that feeds it beside the event
 * stream.
 *
 * One line, redrawn in place with "\r" at most 10 times a second: percent, bytes, rate,
 * ETA and the top depots' shares of the bytes moved, e.g.
 *   download  41%  12.0MiB/29.3MiB  45.2 MB/s  ETA 0:02  a:6714 41% b:6714 33% c:6714 26%
 * The engine calls us from its worker threads (one call at a time, but the tool may add
 * bytes from its own thread too), so a mutex guards the counts.  Drawing is a single
 * write(2) of the whole line, so other output on stderr never lands inside one.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "lns_array.h"
#include "lns_time.h"
#include "lns_units.h"
#include "tool.h"

#define REDRAW_NS 100000000LL /* 10 per second */
#define TOP_DEPOTS 3

typedef struct pdepot {
    char name[IBP_MAX_HOST + IBP_MAX_RID + 16];
    int64_t bytes;
} pdepot_t;

struct tool_progress {
    int fd, tty;
    char label[32];
    int64_t total, done;
    int64_t t0_ns, last_draw_ns;
    size_t last_len;          /* the previous line's width, to blank what a shorter one leaves */
    pdepot_t *depots;
    size_t nd, cap;
    int64_t depot_bytes;
    pthread_mutex_t mu;
};

tool_progress_t *tool_progress_new(int fd, const char *label, int64_t total, int force)
{
    int tty = isatty(fd);
    if (!tty && !force)
        return NULL;
    tool_progress_t *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->fd = fd;
    p->tty = tty;
    snprintf(p->label, sizeof p->label, "%s", label ? label : "");
    p->total = total;
    p->t0_ns = lns_mono_ns();
    pthread_mutex_init(&p->mu, NULL);
    return p;
}

static void clock_fmt(double s, char *buf, size_t size)
{
    long t = s > 359999 ? 359999 : (long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, size, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, size, "%ld:%02ld", t / 60, t % 60);
}

static int by_bytes_desc(const void *a, const void *b)
{
    const pdepot_t *x = a, *y = b;
    return (x->bytes < y->bytes) - (x->bytes > y->bytes);
}

/* Draw the line; end it with '\n' when final.  Called with p->mu held. */
static void draw_locked(tool_progress_t *p, int64_t now, int final)
{
    char line[1024], a[32], b[32], t[32];
    double secs = (double)(now - p->t0_ns) / 1e9;
    double rate = secs > 0 ? (double)p->done / secs : 0;
    size_t n = 0;

#define ADD(...)                                                                        \
    do {                                                                                \
        int w_ = snprintf(line + n, sizeof line - n, __VA_ARGS__);                      \
        if (w_ > 0)                                                                     \
            n += (size_t)w_ < sizeof line - n ? (size_t)w_ : sizeof line - n - 1;       \
    } while (0)

    lns_format_size(p->done, a, sizeof a);
    ADD("\r%s", p->label);
    if (p->total > 0) {
        int pct = (int)(p->done >= p->total ? 100 : p->done * 100 / p->total);
        lns_format_size(p->total, b, sizeof b);
        ADD(" %3d%%  %s/%s", pct, a, b);
    } else {
        ADD("  %s", a);
    }
    ADD("  %.1f MB/s", rate / 1e6);
    if (final) {
        clock_fmt(secs, t, sizeof t);
        ADD("  in %s", t);
    } else if (p->total > 0 && rate > 0 && p->done < p->total) {
        clock_fmt((double)(p->total - p->done) / rate, t, sizeof t);
        ADD("  ETA %s", t);
    }
    if (p->depot_bytes > 0) {
        pdepot_t top[TOP_DEPOTS];
        qsort(p->depots, p->nd, sizeof *p->depots, by_bytes_desc);
        size_t k = p->nd < TOP_DEPOTS ? p->nd : TOP_DEPOTS;
        memcpy(top, p->depots, k * sizeof *top);
        ADD(" ");
        for (size_t i = 0; i < k; i++)
            ADD(" %s %d%%", top[i].name, (int)(top[i].bytes * 100 / p->depot_bytes));
        if (p->nd > k)
            ADD(" +%zu", p->nd - k);
    }

    /* on a terminal, never wrap (a wrapped line cannot be redrawn with "\r") */
    struct winsize ws;
    if (p->tty && ioctl(p->fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 8 && n > ws.ws_col)
        n = ws.ws_col; /* the "\r" takes no column */
    size_t width = n;
    while (n < p->last_len && n < sizeof line - 2)
        line[n++] = ' ';
    p->last_len = width;
    if (final)
        line[n++] = '\n';
#undef ADD
    ssize_t w = write(p->fd, line, n);
    (void)w; /* a progress bar that cannot be drawn is not worth failing for */
    p->last_draw_ns = now;
}

static void count_depot_locked(tool_progress_t *p, const lors_depot_t *d, int64_t bytes)
{
    char name[sizeof p->depots[0].name];
    lors_depot_format(d, name, sizeof name);
    size_t i;
    for (i = 0; i < p->nd; i++)
        if (strcmp(p->depots[i].name, name) == 0)
            break;
    if (i == p->nd) {
        if (lns_grow(&p->depots, &p->cap, p->nd + 1, sizeof *p->depots, 16) < 0)
            return;
        memcpy(p->depots[i].name, name, sizeof name);
        p->depots[i].bytes = 0;
        p->nd++;
    }
    p->depots[i].bytes += bytes;
    p->depot_bytes += bytes;
}

static void maybe_draw_locked(tool_progress_t *p)
{
    int64_t now = lns_mono_ns();
    if (now - p->last_draw_ns >= REDRAW_NS)
        draw_locked(p, now, 0);
}

void tool_progress_event(void *bar, const lors_event_t *ev)
{
    tool_progress_t *p = bar;
    if (!p || !ev)
        return;
    pthread_mutex_lock(&p->mu);
    switch (ev->kind) {
    case LORS_EV_FETCH_END: /* the bytes count as done when they are written (WRITE) */
        if (ev->depot)
            count_depot_locked(p, ev->depot, ev->length);
        break;
    case LORS_EV_STORE_END:
    case LORS_EV_SEND_END:
        if (ev->depot)
            count_depot_locked(p, ev->kind == LORS_EV_SEND_END && ev->moved_to ? ev->moved_to
                                                                               : ev->depot,
                               ev->length);
        p->done += ev->length;
        break;
    case LORS_EV_WRITE:
        p->done += ev->length;
        break;
    default:
        break;
    }
    maybe_draw_locked(p);
    pthread_mutex_unlock(&p->mu);
}

void tool_progress_add(tool_progress_t *p, int64_t bytes)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->done += bytes;
    maybe_draw_locked(p);
    pthread_mutex_unlock(&p->mu);
}

void tool_progress_finish(tool_progress_t *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    draw_locked(p, lns_mono_ns(), 1);
    pthread_mutex_unlock(&p->mu);
    pthread_mutex_destroy(&p->mu);
    free(p->depots);
    free(p);
}

/* ---- the tee ------------------------------------------------------------------------------ */

void tool_tee_add(tool_tee_t *t, lors_event_fn fn, void *arg)
{
    if (!t || !fn || t->n >= (int)(sizeof t->fn / sizeof t->fn[0]))
        return;
    t->fn[t->n] = fn;
    t->arg[t->n] = arg;
    t->n++;
}

void tool_tee_call(void *tee, const lors_event_t *ev)
{
    tool_tee_t *t = tee;
    for (int i = 0; t && i < t->n; i++)
        t->fn[i](t->arg[i], ev);
}
