/* lifelines_plot.c -- the life-line plot: a tiny RGB rasterizer, a 5x7 bitmap font and
 * a PNG encoder on zlib, so lors_lifelines draws its PNG with no library beyond -lz.
 *
 * The plot: x is time since the first point, y the points of a block's life in order (request
 * sent at the bottom, released at the top); each released block is one polyline through the
 * points it has, coloured by the depot of the fetch that won it; a legend names the colours.
 * The PNG is 8-bit RGB, one IDAT with filter 0 on every row: simple and valid, not small.
 */
#include "lifelines.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* ---- PNG -------------------------------------------------------------------------------- */

static void be32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static int chunk(FILE *fp, const char *type, const unsigned char *data, size_t n)
{
    unsigned char hdr[8];
    be32(hdr, (uint32_t)n);
    memcpy(hdr + 4, type, 4);
    uLong crc = crc32(0L, (const Bytef *)type, 4);
    if (n)
        crc = crc32(crc, data, (uInt)n);
    unsigned char c[4];
    be32(c, (uint32_t)crc);
    return fwrite(hdr, 1, 8, fp) == 8 && (n == 0 || fwrite(data, 1, n, fp) == n) &&
                   fwrite(c, 1, 4, fp) == 4
               ? 0
               : -1;
}

int lors_png_write(const char *path, const unsigned char *rgb, int w, int h)
{
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    size_t row = (size_t)w * 3 + 1, rawlen = row * (size_t)h;
    unsigned char *raw = malloc(rawlen);
    uLongf zlen = compressBound((uLong)rawlen);
    unsigned char *z = malloc(zlen);
    int rc = -1;
    if (!raw || !z) {
        free(raw);
        free(z);
        errno = ENOMEM;
        return -1;
    }
    for (int y = 0; y < h; y++) {
        raw[(size_t)y * row] = 0; /* filter: none */
        memcpy(raw + (size_t)y * row + 1, rgb + (size_t)y * (size_t)w * 3, (size_t)w * 3);
    }
    if (compress2(z, &zlen, raw, (uLong)rawlen, 6) != Z_OK) {
        errno = ENOMEM;
    } else {
        FILE *fp = fopen(path, "wb");
        if (fp) {
            unsigned char ihdr[13];
            be32(ihdr, (uint32_t)w);
            be32(ihdr + 4, (uint32_t)h);
            ihdr[8] = 8;  /* bit depth */
            ihdr[9] = 2;  /* colour type: RGB */
            ihdr[10] = ihdr[11] = ihdr[12] = 0;
            rc = fwrite(sig, 1, 8, fp) == 8 && chunk(fp, "IHDR", ihdr, 13) == 0 &&
                         chunk(fp, "IDAT", z, zlen) == 0 && chunk(fp, "IEND", NULL, 0) == 0
                     ? 0
                     : -1;
            if (fclose(fp) != 0)
                rc = -1;
        }
    }
    free(raw);
    free(z);
    return rc;
}

/* ---- raster ----------------------------------------------------------------------------- */

typedef struct img {
    unsigned char *p;
    int w, h;
} img_t;

static void px(img_t *im, int x, int y, uint32_t c)
{
    if (x < 0 || y < 0 || x >= im->w || y >= im->h)
        return;
    unsigned char *q = im->p + ((size_t)y * (size_t)im->w + (size_t)x) * 3;
    q[0] = (unsigned char)(c >> 16);
    q[1] = (unsigned char)(c >> 8);
    q[2] = (unsigned char)c;
}

static void rect(img_t *im, int x0, int y0, int x1, int y1, uint32_t c)
{
    for (int y = y0; y <= y1; y++)
        for (int x = x0; x <= x1; x++)
            px(im, x, y, c);
}

static void line(img_t *im, int x0, int y0, int x1, int y1, uint32_t c)
{
    int dx = abs(x1 - x0), dy = -abs(y1 - y0), sx = x0 < x1 ? 1 : -1, sy = y0 < y1 ? 1 : -1;
    int err = dx + dy;
    for (;;) { /* Bresenham */
        px(im, x0, y0, c);
        if (x0 == x1 && y0 == y1)
            break;
        int e2 = 2 * err;
        if (e2 >= dy) {
            err += dy;
            x0 += sx;
        }
        if (e2 <= dx) {
            err += dx;
            y0 += sy;
        }
    }
}

/* ---- a 5x7 font: 7 rows of 5 bits (bit 4 = left), drawn in 6x8 cells ------------------ */

static const char font_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .:-_()/=%+,[]";
static const unsigned char font_rows[][7] = {
    {0x0E, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11}, {0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E},
    {0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E}, {0x1E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x1E},
    {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F}, {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10},
    {0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F}, {0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11},
    {0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E}, {0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C},
    {0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11}, {0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F},
    {0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11}, {0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11},
    {0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E}, {0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10},
    {0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D}, {0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11},
    {0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E}, {0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04},
    {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E}, {0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04},
    {0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A}, {0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11},
    {0x11, 0x11, 0x0A, 0x04, 0x04, 0x04, 0x04}, {0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F},
    {0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E}, {0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E},
    {0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F}, {0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E},
    {0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02}, {0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E},
    {0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E}, {0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08},
    {0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E}, {0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C},
    {0, 0, 0, 0, 0, 0, 0},                      {0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x0C},
    {0x00, 0x0C, 0x0C, 0x00, 0x0C, 0x0C, 0x00}, {0x00, 0x00, 0x00, 0x1F, 0x00, 0x00, 0x00},
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1F}, {0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02},
    {0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08}, {0x01, 0x01, 0x02, 0x04, 0x08, 0x10, 0x10},
    {0x00, 0x00, 0x1F, 0x00, 0x1F, 0x00, 0x00}, {0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03},
    {0x00, 0x04, 0x04, 0x1F, 0x04, 0x04, 0x00}, {0x00, 0x00, 0x00, 0x00, 0x0C, 0x04, 0x08},
    {0x0E, 0x08, 0x08, 0x08, 0x08, 0x08, 0x0E}, {0x0E, 0x02, 0x02, 0x02, 0x02, 0x02, 0x0E},
};
static const unsigned char font_unknown[7] = {0x0E, 0x11, 0x01, 0x02, 0x04, 0x00, 0x04};

/* Text with its top-left corner at (x, y); lower case is drawn as upper case. */
static void text(img_t *im, int x, int y, const char *s, uint32_t c)
{
    for (; *s; s++, x += 6) {
        char ch = *s >= 'a' && *s <= 'z' ? (char)(*s - 32) : *s;
        const char *at = strchr(font_chars, ch);
        const unsigned char *g = ch && at ? font_rows[at - font_chars] : font_unknown;
        for (int r = 0; r < 7; r++)
            for (int b = 0; b < 5; b++)
                if (g[r] & (0x10 >> b))
                    px(im, x + b, y + r, c);
    }
}

/* ---- the plot --------------------------------------------------------------------------- */

static const uint32_t palette[] = {0x1f77b4, 0xd62728, 0x2ca02c, 0xff7f0e, 0x9467bd,
                                   0x8c564b, 0xe377c2, 0x17becf, 0xbcbd22, 0x7f7f7f};
#define NPAL (sizeof palette / sizeof palette[0])

/* A tick step of 1, 2 or 5 x 10^k seconds giving about 8 ticks over span seconds. */
static double tick_step(double span)
{
    double step = 1e-9;
    while (step * 8 < span) {
        if (step * 2 * 8 >= span)
            return step * 2;
        if (step * 5 * 8 >= span)
            return step * 5;
        step *= 10;
    }
    return step;
}

int lors_ll_plot_png(const lors_ll_t *ll, const char *path, int w, int h, char *err,
                     size_t errlen)
{
    if (w < 320 || h < 200 || w > 8000 || h > 8000) {
        snprintf(err, errlen, "plot size %dx%d: from 320x200 to 8000x8000", w, h);
        return -1;
    }
    img_t im = {calloc((size_t)w * (size_t)h, 3), w, h};
    if (!im.p) {
        snprintf(err, errlen, "plot: out of memory");
        return -1;
    }
    memset(im.p, 0xff, (size_t)w * (size_t)h * 3);
    const uint32_t ink = 0x000000, grid = 0xdddddd;
    int legend_w = 0;
    for (size_t i = 0; i < ll->nd; i++) {
        int lw = (int)strlen(ll->d[i].name) * 6 + 24;
        if (lw > legend_w)
            legend_w = lw;
    }
    if (legend_w > w / 3)
        legend_w = w / 3;
    int L = 12 * 6 + 12, R = w - legend_w - 16, T = 28, Bm = h - 40;
    double span = ll->t1 > ll->t0 ? (double)(ll->t1 - ll->t0) / 1e9 : 1e-3;

    text(&im, L, 8, "LIFE LINES OF BLOCKS (ONE LINE PER BLOCK, COLOUR = DEPOT)", ink);
    /* y: one row per point */
    for (int k = 0; k < LORS_LL_NPOINTS; k++) {
        int y = Bm - (Bm - T) * k / (LORS_LL_NPOINTS - 1);
        for (int x = L; x <= R; x += 2)
            px(&im, x, y, grid);
        text(&im, 4, y - 3, lors_ll_point_names[k], ink);
    }
    /* x: ticks in seconds */
    double step = tick_step(span);
    for (int i = 0; i * step <= span * 1.0000001; i++) {
        int x = L + (int)((double)(R - L) * (i * step) / span);
        line(&im, x, Bm, x, Bm + 4, ink);
        char lab[32];
        snprintf(lab, sizeof lab, "%.4g", i * step);
        text(&im, x - (int)strlen(lab) * 3, Bm + 7, lab, ink);
    }
    text(&im, (L + R) / 2 - 4 * 6, h - 14, "TIME (S)", ink);
    line(&im, L, T - 4, L, Bm, ink);
    line(&im, L, Bm, R, Bm, ink);

    /* the lines, then the legend over them */
    for (size_t i = 0; i < ll->nf; i++) {
        const lors_ll_fetch_t *f = &ll->f[i];
        if (f->t[LORS_LL_RELEASE] < 0)
            continue;
        size_t di = 0;
        while (di < ll->nd && strcmp(ll->d[di].name, f->depot[0] ? f->depot : "-") != 0)
            di++;
        uint32_t c = palette[di % NPAL];
        int px0 = -1, py0 = -1;
        for (int k = 0; k < LORS_LL_NPOINTS; k++) {
            if (f->t[k] < 0)
                continue;
            int x = L + (int)((double)(R - L) * ((double)(f->t[k] - ll->t0) / 1e9) / span);
            int y = Bm - (Bm - T) * k / (LORS_LL_NPOINTS - 1);
            if (px0 >= 0)
                line(&im, px0, py0, x, y, c);
            rect(&im, x - 1, y - 1, x + 1, y + 1, c);
            px0 = x;
            py0 = y;
        }
    }
    int lx = R + 12, ly = T;
    text(&im, lx, ly, "DEPOTS", ink);
    for (size_t i = 0; i < ll->nd; i++) {
        int y = ly + 14 + (int)i * 12;
        if (y + 8 > h)
            break;
        rect(&im, lx, y, lx + 10, y + 6, palette[i % NPAL]);
        text(&im, lx + 16, y, ll->d[i].name, ink);
    }

    int rc = lors_png_write(path, im.p, w, h);
    if (rc < 0)
        snprintf(err, errlen, "writing %s: %s", path, strerror(errno));
    free(im.p);
    return rc;
}
