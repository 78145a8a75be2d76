/* lifelines_plot.c -- the life-line plot of a download, drawn with cairo.
 *
 * A Gantt chart of fetches: one lane per depot, each fetch a bar from its request to its end,
 * its colour what became of it (won, redundant, cancelled, failed, no end in the logs), hatched
 * when it did not win.  Bars that overlap in time (several streams on one depot) are stacked in
 * rows inside the lane, the fewest rows that keep them apart, so no bar hides another.
 * The frame (where time and lanes go) is computed by one function for the drawing and for
 * lors_ll_plot_frame, so a reader of the image finds a fetch where the plot put it.  Text is
 * cairo's toy API with a sans-serif face found by fontconfig (DejaVu Sans on Debian).
 */
#include "lifelines.h"
#include "lns_err.h"

#include <cairo.h>
#include <fontconfig/fontconfig.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const uint32_t lors_ll_bar_rgb[LORS_LL_NBARS] = {
    0x1f6fb4, /* won: blue */
    0xf09a1a, /* redundant: orange */
    0x8a8a8a, /* cancelled: grey */
    0xd42a2a, /* failed: red */
    0xb39ddb, /* open: lilac */
};
#define FAILED_EDGE 0x6a0000
#define INK 0x000000
#define GRID 0xe4e4e4
#define LANE_SHADE 0xf4f4f4
#define LANE_RULE 0xc8c8c8
#define FONT "DejaVu Sans"

int lors_ll_bar_kind(const lors_ll_fetch_t *f)
{
    if (f->failed)
        return LORS_LL_BAR_FAILED;
    if (f->redundant)
        return LORS_LL_BAR_REDUNDANT;
    if (f->cancelled)
        return LORS_LL_BAR_CANCELLED;
    return f->committed ? LORS_LL_BAR_WON : LORS_LL_BAR_OPEN;
}

/* Hatched: a fetch that did not deliver its block although it got as far as an outcome. */
static int bar_hatched(const lors_ll_fetch_t *f)
{
    int k = lors_ll_bar_kind(f);
    return !f->committed && k != LORS_LL_BAR_OPEN && k != LORS_LL_BAR_WON;
}

/* The legend's entries: the bar kinds, redundant split into won and not. */
enum { LEG_WON, LEG_RED_WON, LEG_RED_LOST, LEG_CANCELLED, LEG_FAILED, LEG_OPEN, NLEG };
static const char *const leg_text[NLEG] = {
    "won", "redundant, won", "redundant, did not win", "cancelled (lost the race)", "failed",
    "no end in the logs",
};

static int leg_entry(const lors_ll_fetch_t *f)
{
    switch (lors_ll_bar_kind(f)) {
    case LORS_LL_BAR_WON: return LEG_WON;
    case LORS_LL_BAR_REDUNDANT: return f->committed ? LEG_RED_WON : LEG_RED_LOST;
    case LORS_LL_BAR_CANCELLED: return LEG_CANCELLED;
    case LORS_LL_BAR_FAILED: return LEG_FAILED;
    default: return LEG_OPEN;
    }
}

/* A fetch's bar in ns since the epoch: from its request (or its first point) to its commit,
 * its fail or cancel, or its last point.  0 if the logs give it no time at all. */
static int bar_span(const lors_ll_fetch_t *f, int64_t *start, int64_t *end)
{
    int64_t s = -1, e = -1;
    for (int k = 0; k < LORS_LL_NPOINTS; k++) {
        if (f->t[k] < 0)
            continue;
        if (s < 0 || f->t[k] < s)
            s = f->t[k];
        if (f->t[k] > e)
            e = f->t[k];
    }
    if (f->t[LORS_LL_REQ_SENT] >= 0)
        s = f->t[LORS_LL_REQ_SENT];
    if (f->committed && f->t[LORS_LL_COMMIT] >= 0)
        e = f->t[LORS_LL_COMMIT];
    else if (f->t_stop >= 0)
        e = f->t_stop;
    if (s < 0 && f->t_stop >= 0)
        s = f->t_stop;
    if (s < 0)
        return 0;
    *start = s;
    *end = e > s ? e : s;
    return 1;
}

static void rgb(cairo_t *cr, uint32_t c)
{
    cairo_set_source_rgb(cr, (c >> 16 & 0xff) / 255.0, (c >> 8 & 0xff) / 255.0,
                         (c & 0xff) / 255.0);
}

static double text_w(cairo_t *cr, const char *s)
{
    cairo_text_extents_t e;
    cairo_text_extents(cr, s, &e);
    return e.x_advance;
}

/* s with its baseline at y; align 0 left of x, 0.5 centred on it, 1 right of it. */
static void text_at(cairo_t *cr, double x, double y, double align, const char *s)
{
    cairo_move_to(cr, x - align * text_w(cr, s), y);
    cairo_show_text(cr, s);
}

/* A tick step of 1, 2 or 5 x 10^k seconds giving at most max_ticks ticks over span seconds. */
static double tick_step(double span, int max_ticks)
{
    double step = pow(10, floor(log10(span / max_ticks)));
    while (span / step > max_ticks)
        step *= span / (step * 2) <= max_ticks ? 2 : span / (step * 5) <= max_ticks ? 5 : 10;
    return step;
}

/* Everything the drawing places, from the frame the tests see to the sizes of text. */
typedef struct layout {
    lors_ll_frame_t fr;
    double fs;          /* font size of labels, px */
    double step;        /* time between ticks, s */
    int decimals;       /* of the tick labels */
    double title_y, legend_y, legend_row_h, axis_y;
    int legend[NLEG];   /* the entries present */
} layout_t;

static void legend_pos(cairo_t *cr, const layout_t *lo, double x0, double x1, int entry,
                       double *x, double *y)
{
    double cx = x0, cy = lo->legend_y;
    for (int i = 0; i < NLEG; i++) {
        if (!lo->legend[i])
            continue;
        double ew = 2.2 * lo->fs + text_w(cr, leg_text[i]) + 1.5 * lo->fs;
        if (cx > x0 && cx + ew > x1) {
            cx = x0;
            cy += lo->legend_row_h;
        }
        if (i == entry) {
            *x = cx;
            *y = cy;
            return;
        }
        cx += ew;
    }
    *x = x0;
    *y = cy; /* entry NLEG: where the next row would start, for the height */
    if (cx > x0)
        *y += lo->legend_row_h;
}

static int lay_out(cairo_t *cr, const lors_ll_t *ll, int w, int h, layout_t *lo, char *err,
                   size_t errlen)
{
    if (w < 320 || h < 200 || w > 8000 || h > 8000) {
        lns_err_set(err, errlen, "plot size %dx%d: from 320x200 to 8000x8000", w, h);
        return -1;
    }
    memset(lo, 0, sizeof *lo);
    double fs = fmin(h / 36.0, w / 70.0);
    lo->fs = fs = fmax(9.0, fmin(fs, 14.0));
    double margin = fs;
    cairo_select_font_face(cr, FONT, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, fs);

    for (size_t i = 0; i < ll->nf; i++) {
        int64_t s, e;
        if (bar_span(&ll->f[i], &s, &e))
            lo->legend[leg_entry(&ll->f[i])] = 1;
    }
    lo->legend[LEG_WON] = 1;

    double label_w = text_w(cr, "depot");
    for (size_t i = 0; i < ll->nd; i++)
        label_w = fmax(label_w, text_w(cr, ll->d[i].name));
    label_w = fmin(label_w, w / 3.0);
    lo->fr.left = margin + 1.6 * fs + label_w + 0.8 * fs; /* the y label, the names, a gap */
    lo->fr.right = w - margin - 1.5 * fs;                 /* half the last tick label */

    lo->title_y = margin + 1.3 * fs;
    lo->legend_y = lo->title_y + 1.1 * fs;
    lo->legend_row_h = 1.5 * fs;
    double lx, ly;
    legend_pos(cr, lo, lo->fr.left, lo->fr.right, NLEG, &lx, &ly);
    lo->fr.top = ly + 0.6 * fs;
    lo->axis_y = h - margin - 2.6 * fs; /* below: ticks, their labels, the axis' label */
    size_t lanes = ll->nd ? ll->nd : 1;
    lo->fr.lane_h = (lo->axis_y - lo->fr.top) / (double)lanes;
    if (lo->fr.lane_h < 1) {
        lns_err_set(err, errlen, "plot size %dx%d: too small for %zu depots", w, h, ll->nd);
        return -1;
    }

    double total = ll->t1 > ll->t0 ? (double)(ll->t1 - ll->t0) / 1e9 : 1e-3;
    char widest[64];
    snprintf(widest, sizeof widest, "%.4f", total);
    int max_ticks = (int)((lo->fr.right - lo->fr.left) / (text_w(cr, widest) + 1.5 * fs));
    lo->step = tick_step(total, max_ticks < 2 ? 2 : max_ticks);
    lo->fr.span_s = ceil(total / lo->step - 1e-9) * lo->step;
    lo->decimals = lo->step >= 1 ? 0 : (int)ceil(-log10(lo->step) - 1e-9);
    return 0;
}

int lors_ll_plot_frame(const lors_ll_t *ll, int w, int h, lors_ll_frame_t *fr, char *err,
                       size_t errlen)
{
    cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, 1);
    cairo_t *cr = cairo_create(s);
    layout_t lo;
    int rc = lay_out(cr, ll, w, h, &lo, err, errlen);
    if (rc == 0)
        *fr = lo.fr;
    cairo_destroy(cr);
    cairo_surface_destroy(s);
    return rc;
}

/* A bar's place: its lane (depot), its row in the lane, its times. */
typedef struct bar {
    const lors_ll_fetch_t *f;
    int64_t start, end;
    size_t lane;
    int row;
} bar_t;

static int by_start(const void *a, const void *b)
{
    const bar_t *x = a, *y = b;
    if (x->lane != y->lane)
        return x->lane < y->lane ? -1 : 1;
    return (x->start > y->start) - (x->start < y->start);
}

/* Rows within each lane: the first row whose last bar ended before this one starts (bars
 * sorted by lane, then start).  rows[lane] gets the lane's count.  0 or -1 (memory). */
static int stack_rows(bar_t *b, size_t nb, int *rows, size_t nlanes)
{
    int64_t *row_end = malloc((nb ? nb : 1) * sizeof *row_end);
    if (!row_end)
        return -1;
    for (size_t l = 0; l < nlanes; l++)
        rows[l] = 1;
    for (size_t i = 0, n = 0; i < nb; i++) {
        if (i == 0 || b[i].lane != b[i - 1].lane)
            n = 0;
        size_t r = 0;
        while (r < n && row_end[r] >= b[i].start)
            r++;
        if (r == n)
            n++;
        row_end[r] = b[i].end;
        b[i].row = (int)r;
        if ((int)n > rows[b[i].lane])
            rows[b[i].lane] = (int)n;
    }
    free(row_end);
    return 0;
}

static void draw_hatch(cairo_t *cr, double x, double y, double w, double h, double gap)
{
    cairo_save(cr);
    cairo_rectangle(cr, x, y, w, h);
    cairo_clip(cr);
    for (double d = -h; d < w; d += gap) {
        cairo_move_to(cr, x + d, y + h);
        cairo_line_to(cr, x + d + h, y);
    }
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_set_line_width(cr, gap / 3.5);
    cairo_stroke(cr);
    cairo_restore(cr);
}

/* One bar: fill in its kind's colour, white hatching if it lost, an edge in a darker shade
 * (so that one fetch ending as the next begins still shows two bars), a thicker dark red one if
 * it failed. */
static void draw_bar(cairo_t *cr, const lors_ll_fetch_t *f, double x, double y, double w,
                     double h, double fs)
{
    int kind = lors_ll_bar_kind(f);
    uint32_t c = lors_ll_bar_rgb[kind];
    rgb(cr, c);
    cairo_rectangle(cr, x, y, w, h);
    cairo_fill(cr);
    if (bar_hatched(f) && w > 3 && h > 3)
        draw_hatch(cr, x, y, w, h, fmax(4.0, fs * 0.6));
    double edge = kind == LORS_LL_BAR_FAILED ? 2 : 1;
    if (w > 2 * edge + 1 && h > 2 * edge + 1) {
        if (kind == LORS_LL_BAR_FAILED)
            rgb(cr, FAILED_EDGE);
        else
            rgb(cr, (c >> 1 & 0x7f7f7f) + (c >> 2 & 0x3f3f3f)); /* 3/4 of each channel */
        cairo_set_line_width(cr, edge);
        cairo_rectangle(cr, x + edge / 2, y + edge / 2, w - edge, h - edge);
        cairo_stroke(cr);
    }
}

static void draw_legend(cairo_t *cr, const layout_t *lo)
{
    static const struct {
        int kind, committed, redundant, cancelled, failed;
    } as[NLEG] = {
        [LEG_WON] = {LORS_LL_BAR_WON, 1, 0, 0, 0},
        [LEG_RED_WON] = {LORS_LL_BAR_REDUNDANT, 1, 1, 0, 0},
        [LEG_RED_LOST] = {LORS_LL_BAR_REDUNDANT, 0, 1, 1, 0},
        [LEG_CANCELLED] = {LORS_LL_BAR_CANCELLED, 0, 0, 1, 0},
        [LEG_FAILED] = {LORS_LL_BAR_FAILED, 0, 0, 0, 1},
        [LEG_OPEN] = {LORS_LL_BAR_OPEN, 0, 0, 0, 0},
    };
    for (int i = 0; i < NLEG; i++) {
        if (!lo->legend[i])
            continue;
        double x, y;
        legend_pos(cr, lo, lo->fr.left, lo->fr.right, i, &x, &y);
        lors_ll_fetch_t f;
        memset(&f, 0, sizeof f);
        f.committed = as[i].committed;
        f.redundant = as[i].redundant;
        f.cancelled = as[i].cancelled;
        f.failed = as[i].failed;
        draw_bar(cr, &f, x, y + 0.2 * lo->fs, 1.8 * lo->fs, 0.9 * lo->fs, lo->fs);
        rgb(cr, INK);
        text_at(cr, x + 2.2 * lo->fs, y + 1.0 * lo->fs, 0, leg_text[i]);
    }
}

static void draw_axes(cairo_t *cr, const lors_ll_t *ll, const layout_t *lo, int w, int h)
{
    const lors_ll_frame_t *fr = &lo->fr;
    double fs = lo->fs, bottom = lo->axis_y;
    /* lanes: shaded every other one, ruled between, named on the left */
    for (size_t i = 0; i < (ll->nd ? ll->nd : 1); i++) {
        double y = fr->top + (double)i * fr->lane_h;
        if (i % 2) {
            rgb(cr, LANE_SHADE);
            cairo_rectangle(cr, fr->left, y, fr->right - fr->left, fr->lane_h);
            cairo_fill(cr);
        }
        if (i < ll->nd) {
            cairo_save(cr);
            cairo_rectangle(cr, 0, y, fr->left - 0.5 * fs, fr->lane_h);
            cairo_clip(cr);
            rgb(cr, INK);
            text_at(cr, fr->left - 0.6 * fs, y + fr->lane_h / 2 + 0.35 * fs, 1, ll->d[i].name);
            cairo_restore(cr);
        }
    }
    /* time: a grid line and a tick per step */
    cairo_set_line_width(cr, 1);
    int nticks = (int)floor(fr->span_s / lo->step + 1e-6);
    for (int i = 0; i <= nticks; i++) {
        double x = round(fr->left + (fr->right - fr->left) * (i * lo->step) / fr->span_s) + 0.5;
        rgb(cr, GRID);
        cairo_move_to(cr, x, fr->top);
        cairo_line_to(cr, x, bottom);
        cairo_stroke(cr);
        rgb(cr, INK);
        cairo_move_to(cr, x, bottom);
        cairo_line_to(cr, x, bottom + 0.4 * fs);
        cairo_stroke(cr);
        char lab[32];
        snprintf(lab, sizeof lab, "%.*f", lo->decimals, i * lo->step);
        text_at(cr, x, bottom + 1.4 * fs, 0.5, lab);
    }
    rgb(cr, LANE_RULE);
    for (size_t i = 1; i < ll->nd; i++) {
        double y = round(fr->top + (double)i * fr->lane_h) + 0.5;
        cairo_move_to(cr, fr->left, y);
        cairo_line_to(cr, fr->right, y);
        cairo_stroke(cr);
    }
    rgb(cr, INK);
    cairo_move_to(cr, fr->left - 0.5, fr->top);
    cairo_line_to(cr, fr->left - 0.5, bottom + 0.5);
    cairo_line_to(cr, fr->right, bottom + 0.5);
    cairo_stroke(cr);
    text_at(cr, (fr->left + fr->right) / 2, h - fs, 0.5, "time since the first event (s)");
    cairo_save(cr);
    cairo_move_to(cr, fs + 0.9 * fs, (fr->top + bottom) / 2 + text_w(cr, "depot") / 2);
    cairo_rotate(cr, -M_PI / 2);
    cairo_show_text(cr, "depot");
    cairo_restore(cr);

    char title[160];
    snprintf(title, sizeof title, "Fetches per depot: %zu fetches, %zu blocks released, %zu depots",
             ll->nf, ll->released, ll->nd);
    cairo_select_font_face(cr, FONT, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_BOLD);
    cairo_set_font_size(cr, fs * 1.2);
    double tw = text_w(cr, title);
    if (tw > w - 2 * fs) /* a narrow plot: the title shrinks to fit */
        cairo_set_font_size(cr, fs * 1.2 * (w - 2 * fs) / tw);
    text_at(cr, w / 2.0, lo->title_y, 0.5, title);
    cairo_select_font_face(cr, FONT, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, fs);
}

static size_t lane_of(const lors_ll_t *ll, const lors_ll_fetch_t *f)
{
    const char *name = f->depot[0] ? f->depot : "-";
    for (size_t i = 0; i < ll->nd; i++)
        if (strcmp(ll->d[i].name, name) == 0)
            return i;
    return 0; /* every fetch's depot is in ll->d after lors_ll_analyze */
}

static int draw(cairo_t *cr, const lors_ll_t *ll, const layout_t *lo, int w, int h)
{
    const lors_ll_frame_t *fr = &lo->fr;
    size_t nl = ll->nd ? ll->nd : 1, nb = 0;
    bar_t *b = malloc((ll->nf ? ll->nf : 1) * sizeof *b);
    int *rows = malloc(nl * sizeof *rows);
    if (!b || !rows) {
        free(b);
        free(rows);
        return -1;
    }
    for (size_t i = 0; i < ll->nf; i++)
        if (bar_span(&ll->f[i], &b[nb].start, &b[nb].end)) {
            b[nb].f = &ll->f[i];
            b[nb].lane = lane_of(ll, &ll->f[i]);
            nb++;
        }
    qsort(b, nb, sizeof *b, by_start);
    if (stack_rows(b, nb, rows, nl) < 0) {
        free(b);
        free(rows);
        return -1;
    }

    rgb(cr, 0xffffff);
    cairo_paint(cr);
    draw_axes(cr, ll, lo, w, h);
    double px_per_s = (fr->right - fr->left) / fr->span_s;
    for (size_t i = 0; i < nb; i++) {
        double row_h = fr->lane_h / rows[b[i].lane];
        double pad = row_h > 6 ? fmin(row_h * 0.15, 0.3 * lo->fs) : 0;
        double x0 = fr->left + (double)(b[i].start - ll->t0) / 1e9 * px_per_s;
        double x1 = fr->left + (double)(b[i].end - ll->t0) / 1e9 * px_per_s;
        double y = fr->top + (double)b[i].lane * fr->lane_h + b[i].row * row_h + pad;
        draw_bar(cr, b[i].f, x0, y, fmax(x1 - x0, 1.5), row_h - 2 * pad, lo->fs);
    }
    draw_legend(cr, lo);
    free(b);
    free(rows);
    return 0;
}

int lors_ll_plot_png(const lors_ll_t *ll, const char *path, int w, int h, char *err,
                     size_t errlen)
{
    int ok = w >= 320 && h >= 200 && w <= 8000 && h <= 8000; /* else lay_out says why */
    cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, ok ? w : 1, ok ? h : 1);
    cairo_t *cr = cairo_create(s);
    layout_t lo;
    int rc = lay_out(cr, ll, w, h, &lo, err, errlen);
    if (rc == 0 && draw(cr, ll, &lo, w, h) < 0) {
        lns_err_set(err, errlen, "plot: out of memory");
        rc = -1;
    }
    cairo_status_t st = cairo_status(cr);
    if (rc == 0 && st != CAIRO_STATUS_SUCCESS) {
        lns_err_set(err, errlen, "plot: %s", cairo_status_to_string(st));
        rc = -1;
    }
    if (rc == 0 && (st = cairo_surface_write_to_png(s, path)) != CAIRO_STATUS_SUCCESS) {
        lns_err_set(err, errlen, "writing %s: %s", path, cairo_status_to_string(st));
        rc = -1;
    }
    cairo_destroy(cr);
    cairo_surface_destroy(s);
    return rc;
}

void lors_ll_plot_exit(void)
{
    cairo_debug_reset_static_data();
    FcFini();
}
