/* test_lbone_page.c -- the L-Bone status page (GET /) as a browser shows it.
 *
 * An lbone_server and three real depots that register themselves (ibp_depot --lbone) at
 * Knoxville, Amsterdam and Narita airports; the Narita depot is then SIGKILLed, so its
 * heartbeats stop and the page must call it down.  Headless Chromium loads the page twice:
 * --dump-dom, whose DOM must hold the three depots in their states, and --screenshot, whose
 * PNG is decoded here (chunk CRCs, zlib stream, row filters) and must have the window's size,
 * more than one colour, and the green of "up" and the red of "down" in it.
 *
 * The screenshot goes into the test tmpdir; with LNS_UPDATE_DOCS=1 (run from the top of the
 * tree) it is also copied to docs/lbone-status.png, which docs/lbone.md shows.  Chromium is
 * a test dependency (scripts/install-deps.sh installs it): when it is missing the test fails
 * and says so rather than passing without having looked at the page.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <openssl/evp.h>
#include <zlib.h>

#include "lns_test.h"
#include "test_chromium.h"
#include "test_depot.h"
#include "test_lbone.h"

#define WIN_W 1200
#define WIN_H 800
#define CHROMIUM_TIMEOUT_MS 90000

enum { TYS, AMS, NRT, ND };

static const char *const place[ND] = {"airport=TYS", "airport=AMS", "airport=NRT"};
static const char *const code[ND] = {"TYS", "AMS", "NRT"};
static const char *const contact[ND] = {"ops@tys.example.org", "ops@ams.example.org",
                                        "ops@nrt.example.org"};

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* The whole file, NUL-terminated (caller frees); NULL if it cannot be read. */
static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    size_t n = 0, cap = 0;
    if (!f)
        return NULL;
    for (;;) {
        if (cap - n < 65536) {
            unsigned char *nb = realloc(buf, cap += 1 << 20);
            if (!nb) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        if (got == 0)
            break;
        n += got;
    }
    fclose(f);
    buf[n] = 0;
    if (len)
        *len = n;
    return buf;
}

/* The table row (<tr>...</tr>) of the depot at port, copied to row; -1 if there is none.
 * Works on the server's HTML and on Chromium's serialised DOM alike. */
static int find_row(const char *html, int port, char *row, size_t size)
{
    char needle[32];
    snprintf(needle, sizeof needle, "127.0.0.1:%d<", port);
    const char *at = strstr(html, needle);
    if (!at || strstr(at + 1, needle))
        return -1; /* absent, or listed twice */
    const char *start = NULL;
    for (const char *p = html; (p = strstr(p, "<tr>")) && p < at; p++)
        start = p;
    const char *end = strstr(at, "</tr>");
    if (!start || !end || (size_t)(end - start) >= size)
        return -1;
    memcpy(row, start, (size_t)(end - start));
    row[end - start] = 0;
    return 0;
}

/* The state shown in a row's first cell: its class, which must also be its text. */
static void row_state(const char *row, char *st, size_t size)
{
    st[0] = 0;
    const char *p = strstr(row, "<td class=\"");
    if (!p)
        return;
    p += strlen("<td class=\"");
    size_t n = strcspn(p, "\"");
    char want[64];
    snprintf(want, sizeof want, "%.*s\">%.*s", (int)n, p, (int)n, p);
    if (n < size && strncmp(p, want, strlen(want)) == 0)
        snprintf(st, size, "%.*s", (int)n, p);
}

/* 1 when the page's rows for all depots show the states in want (NULL: skip that depot). */
static int page_shows(const char *html, const test_depot_t *dep, const char *const *want,
                      int verbose)
{
    char row[4096], st[32];
    for (int i = 0; i < ND; i++) {
        if (!want[i])
            continue;
        st[0] = 0;
        if (find_row(html, dep[i].port, row, sizeof row) == 0)
            row_state(row, st, sizeof st);
        if (strcmp(st, want[i]) != 0) {
            if (verbose)
                fprintf(stderr, "\n  %s depot (port %d) is '%s', not '%s'\n", code[i],
                        dep[i].port, st, want[i]);
            return 0;
        }
    }
    return 1;
}

static int wait_page(const test_lbone_t *l, const test_depot_t *dep, const char *const *want,
                     int ms)
{
    for (int waited = 0;; waited += 200) {
        char *html = NULL;
        int ok = tlb_http(l->port, "GET", "/", NULL, NULL, &html) == 200 &&
                 page_shows(html, dep, want, waited >= ms);
        free(html);
        if (ok)
            return 1;
        if (waited >= ms)
            return 0;
        sleep_ms(200);
    }
}

/* ---- PNG ---- */

typedef struct png_stats {
    uint32_t w, h;
    uint64_t off_bg;   /* pixels that differ from the top-left one */
    uint64_t green;    /* clearly green pixels ("up") */
    uint64_t red;      /* clearly red pixels ("down") */
} png_stats_t;

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int paeth(int a, int b, int c)
{
    int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
    return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/* Undo the per-row filters in place; raw holds h rows of 1 filter byte + stride bytes. */
static int unfilter(unsigned char *raw, uint32_t h, size_t stride, int bpp)
{
    for (uint32_t y = 0; y < h; y++) {
        unsigned char *row = raw + y * (stride + 1), *cur = row + 1;
        const unsigned char *prev = y ? row - stride : NULL;
        for (size_t x = 0; x < stride; x++) {
            int a = x >= (size_t)bpp ? cur[x - bpp] : 0, b = prev ? prev[x] : 0;
            int c = prev && x >= (size_t)bpp ? prev[x - bpp] : 0;
            switch (row[0]) {
            case 0: break;
            case 1: cur[x] = (unsigned char)(cur[x] + a); break;
            case 2: cur[x] = (unsigned char)(cur[x] + b); break;
            case 3: cur[x] = (unsigned char)(cur[x] + (a + b) / 2); break;
            case 4: cur[x] = (unsigned char)(cur[x] + paeth(a, b, c)); break;
            default: return -1;
            }
        }
    }
    return 0;
}

/* Decode an 8-bit RGB or RGBA, non-interlaced PNG and count its pixels; 0, or -1 with why. */
static int png_stats(const char *path, png_stats_t *s, char *why, size_t wlen)
{
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    size_t len = 0, zlen = 0;
    unsigned char *f = slurp(path, &len), *z = NULL, *raw = NULL;
    int bpp = 0, rc = -1, ended = 0;

    memset(s, 0, sizeof *s);
    if (!f) {
        snprintf(why, wlen, "cannot read it: %s", strerror(errno));
        return -1;
    }
    if (len < 8 || memcmp(f, sig, 8) != 0) {
        snprintf(why, wlen, "no PNG signature");
        goto out;
    }
    z = malloc(len);
    if (!z) {
        snprintf(why, wlen, "out of memory");
        goto out;
    }
    for (size_t p = 8; !ended;) {
        if (len - p < 12) {
            snprintf(why, wlen, "truncated at byte %zu", p);
            goto out;
        }
        uint32_t n = be32(f + p);
        const unsigned char *type = f + p + 4, *data = f + p + 8;
        if (n > len - p - 12) {
            snprintf(why, wlen, "chunk at byte %zu runs past the end", p);
            goto out;
        }
        if (crc32(crc32(0, NULL, 0), type, n + 4) != be32(data + n)) {
            snprintf(why, wlen, "bad CRC in chunk %.4s", (const char *)type);
            goto out;
        }
        if (memcmp(type, "IHDR", 4) == 0 && n == 13) {
            s->w = be32(data);
            s->h = be32(data + 4);
            bpp = data[9] == 2 ? 3 : data[9] == 6 ? 4 : 0;
            if (data[8] != 8 || !bpp || data[12] != 0) {
                snprintf(why, wlen, "depth %d, colour type %d, interlace %d: not 8-bit RGB(A)",
                         data[8], data[9], data[12]);
                goto out;
            }
        } else if (memcmp(type, "IDAT", 4) == 0) {
            memcpy(z + zlen, data, n);
            zlen += n;
        } else if (memcmp(type, "IEND", 4) == 0) {
            ended = 1;
        }
        p += 12 + (size_t)n;
    }
    if (!bpp || !s->w || !s->h || s->w > 10000 || s->h > 10000) {
        snprintf(why, wlen, "no usable IHDR (%ux%u)", s->w, s->h);
        goto out;
    }
    size_t stride = (size_t)s->w * bpp;
    uLongf rawlen = (uLongf)((stride + 1) * s->h), want = rawlen;
    raw = malloc(rawlen);
    if (!raw || uncompress(raw, &rawlen, z, zlen) != Z_OK || rawlen != want) {
        snprintf(why, wlen, "image data does not inflate to %ux%u pixels", s->w, s->h);
        goto out;
    }
    if (unfilter(raw, s->h, stride, bpp) < 0) {
        snprintf(why, wlen, "unknown row filter");
        goto out;
    }
    const unsigned char *bg = raw + 1;
    for (uint32_t y = 0; y < s->h; y++) {
        const unsigned char *px = raw + y * (stride + 1) + 1;
        for (uint32_t x = 0; x < s->w; x++, px += bpp) {
            int r = px[0], g = px[1], b = px[2];
            s->off_bg += memcmp(px, bg, 3) != 0;
            s->green += g > r + 60 && g > b + 60;
            s->red += r > g + 80 && r > b + 80;
        }
    }
    rc = 0;
out:
    free(raw);
    free(z);
    free(f);
    return rc;
}

static int copy_file(const char *from, const char *to)
{
    size_t n;
    unsigned char *buf = slurp(from, &n);
    FILE *f = buf ? fopen(to, "wb") : NULL;
    int ok = f && fwrite(buf, 1, n, f) == n;
    if (f && fclose(f) != 0)
        ok = 0;
    free(buf);
    return ok ? 0 : -1;
}

/* ---- the test ---- */

static void test_status_page_in_chromium(void)
{
    char chromium[PATH_MAX], args[3 * PATH_MAX], why[256], row[4096], win[64];
    test_lbone_t l;
    test_depot_t dep[ND];
    static const char *const all_up[ND] = {"up", "up", "up"};
    static const char *const nrt_down[ND] = {"up", "up", "down"};

    if (tc_find(chromium, sizeof chromium) < 0) {
        fprintf(stderr, "\n  chromium not found in PATH: this test needs the Debian package "
                        "'chromium' (scripts/install-deps.sh installs it)\n");
        CU_FAIL_FATAL("chromium is not installed");
    }
    /* Heartbeat every second and down after three missed ones; probes on, so "up" means the
     * depot answered IBP STATUS too. */
    CU_ASSERT_FATAL(tlb_start(&l, "--heartbeat 1 --down-after 3 --probe-interval 1 "
                                  "--probe-timeout 2") == 0);
    for (int i = 0; i < ND; i++) {
        snprintf(args, sizeof args,
                 "--lbone %s --lbone-token-file %s --lbone-place %s "
                 "--lbone-contact %s",
                 l.url, l.token_file, place[i], contact[i]);
        CU_ASSERT_FATAL(td_start(&dep[i], args) == 0);
    }
    CU_ASSERT_FATAL(wait_page(&l, dep, all_up, 15000));
    CU_ASSERT_FATAL(lns_test_server_kill(&dep[NRT].srv, SIGKILL) == 0);
    CU_ASSERT_FATAL(wait_page(&l, dep, nrt_down, 10000));

    /* Both runs in one window size, without scrollbars (they would vary the picture). */
    snprintf(win, sizeof win, "--window-size=%d,%d", WIN_W, WIN_H);

    /* The page over HTTPS, as the server serves by default: the browser takes the
     * self-signed certificate for the pinned key only (Chromium's SPKI list is the same
     * SHA-256 of the public key, in base64). */
    char url[96], spki[128];
    unsigned char bin[32];
    for (int i = 0; i < 32; i++) {
        unsigned v;
        sscanf(l.pin + 7 + 2 * i, "%2x", &v);
        bin[i] = (unsigned char)v;
    }
    snprintf(spki, sizeof spki, "--ignore-certificate-errors-spki-list=");
    EVP_EncodeBlock((unsigned char *)spki + strlen(spki), bin, 32);
    snprintf(url, sizeof url, "https://127.0.0.1:%d/", l.port);

    /* What the browser built from the page: the three depots, each in its state, at its
     * place. */
    char dom_file[PATH_MAX];
    snprintf(dom_file, sizeof dom_file, "%s", lns_test_path("dom.html"));
    const char *const dump[] = {win, "--hide-scrollbars", spki, "--dump-dom", NULL};
    CU_ASSERT_FATAL(tc_run(chromium, dump, url, dom_file, CHROMIUM_TIMEOUT_MS) == 0);
    char *dom = (char *)slurp(dom_file, NULL);
    CU_ASSERT_FATAL(dom != NULL);
    CU_ASSERT(strstr(dom, "<title>L-Bone depot registry</title>") != NULL);
    CU_ASSERT(strstr(dom, "3 depots registered: 2 up, 1 down") != NULL);
    CU_ASSERT(page_shows(dom, dep, nrt_down, 1));
    for (int i = 0; i < ND; i++) {
        int found = find_row(dom, dep[i].port, row, sizeof row) == 0;
        CU_ASSERT(found);
        if (found)
            CU_ASSERT(strstr(row, code[i]) != NULL); /* the place, as resolved */
    }
    free(dom);

    /* The picture: the window's size, not blank, and both state colours on it. */
    char png[PATH_MAX], flag[PATH_MAX + 16];
    snprintf(png, sizeof png, "%s", lns_test_path("lbone-status.png"));
    snprintf(flag, sizeof flag, "--screenshot=%s", png);
    const char *const shot[] = {win, "--hide-scrollbars", spki, flag, NULL};
    CU_ASSERT_FATAL(
        tc_run(chromium, shot, url, lns_test_path("screenshot.out"), CHROMIUM_TIMEOUT_MS) == 0);
    png_stats_t s;
    int decoded = png_stats(png, &s, why, sizeof why) == 0;
    if (!decoded)
        fprintf(stderr, "\n  %s: %s\n", png, why);
    CU_ASSERT_FATAL(decoded);
    printf("\n  screenshot %ux%u: %llu pixels off the background, %llu green, %llu red\n", s.w,
           s.h, (unsigned long long)s.off_bg, (unsigned long long)s.green,
           (unsigned long long)s.red);
    CU_ASSERT(s.w == WIN_W && s.h == WIN_H);
    CU_ASSERT(s.off_bg > (uint64_t)WIN_W * WIN_H / 200); /* text and table: well over 0.5% */
    CU_ASSERT(s.green >= 20 && s.red >= 20);

    const char *update = getenv("LNS_UPDATE_DOCS");
    if (update && strcmp(update, "1") == 0) {
        struct stat st;
        int at_top = stat("docs/lbone.md", &st) == 0;
        if (!at_top)
            fprintf(stderr, "\n  LNS_UPDATE_DOCS=1: run from the top of the tree (no "
                            "docs/lbone.md here)\n");
        CU_ASSERT(at_top);
        if (at_top) {
            CU_ASSERT(copy_file(png, "docs/lbone-status.png") == 0);
            printf("  wrote docs/lbone-status.png\n");
        }
    }

    for (int i = 0; i < ND; i++) {
        if (i != NRT)
            CU_ASSERT(lns_test_server_log_clean(&dep[i].srv));
        lns_test_server_stop(&dep[i].srv);
    }
    lns_test_server_finish(&l.srv);
}

static int suite_init(void)
{
    /* Chromium keeps caches and crash reports under $HOME; give it the tmpdir. */
    setenv("HOME", lns_test_tmpdir(), 1);
    return 0;
}

static const lns_test_case tests[] = {
    {"status page in headless Chromium: DOM and screenshot", test_status_page_in_chromium},
};

LNS_TEST_MAIN_WITH("lbone_page", suite_init, NULL, tests)
