/* lors_download_ctl.c -- the control file of a download written in place, OUT.lnsdl, as
 * aria2 keeps OUT.aria2: the bytes already in OUT, so that -R after a failure, a Ctrl-C, a
 * SIGKILL or a crash fetches none of them again.
 *
 * A save writes OUT.lnsdl.tmp and renames it over OUT.lnsdl, so the file is always one whole
 * record, old or new; neither it nor OUT is synced (nothing waits for the disk, so writing in
 * place costs what writing to stdout does).  What makes -R safe is that it trusts nothing it
 * has not checked: a file is written in place only when every mapping has lns_checksum
 * digests, and -R checks every run the record names against them (dl_ctl_check) before it
 * skips a byte, so a run that a crash of the machine lost from the page cache, or that
 * something else overwrote, is fetched again.  A crash of the program loses at most what was
 * placed since the last save (a second or 64 MiB of blocks); a failure or a Ctrl-C ends with
 * one more save, of exactly the blocks written (the download engine).  The record names the
 * exNode's data (an id over its size and every mapping's place and read capability) and the
 * range: -R with another exNode or range ignores it.
 *
 *   lns_download 1
 *   exnode <64 hex digits>
 *   range <off> <len>
 *   have <off> <len>          one line per run of written bytes, file offsets, in order
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <openssl/evp.h>

#include "lns_hex.h"
#include "lns_time.h"
#include "lors_download_ctl.h"

#define SAVE_EVERY_NS 1000000000LL
#define SAVE_EVERY_BYTES ((int64_t)64 << 20)

/* The id of x's data: SHA-256 over its size and each mapping's offset, length, allocation
 * offset and read capability. */
static void exnode_id(const xnd_t *x, char id[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    char line[128];
    int ok = c && EVP_DigestInit_ex(c, EVP_sha256(), NULL) == 1;
    snprintf(line, sizeof line, "%" PRId64 "\n", xnd_extent(x));
    ok = ok && EVP_DigestUpdate(c, line, strlen(line)) == 1;
    for (size_t i = 0; ok && i < x->nmaps; i++) {
        const xnd_mapping_t *m = x->maps[i];
        const char *cap = m->cap[XND_READ] ? m->cap[XND_READ] : "-";
        snprintf(line, sizeof line, "%" PRId64 " %" PRId64 " %" PRId64 " ", m->exnode_offset,
                 m->logical_length, m->alloc_offset);
        ok = EVP_DigestUpdate(c, line, strlen(line)) == 1 &&
             EVP_DigestUpdate(c, cap, strlen(cap) + 1) == 1;
    }
    ok = ok && EVP_DigestFinal_ex(c, md, &n) == 1;
    EVP_MD_CTX_free(c);
    if (!ok)
        n = 0;
    if (n < 32)
        memset(md + n, 0, 32 - n);
    lns_hex(md, 32, id);
}

void dl_ctl_init(dl_ctl_t *c, const char *out, int out_fd, const xnd_t *x, int64_t off,
                 int64_t len)
{
    memset(c, 0, sizeof *c);
    snprintf(c->path, sizeof c->path, "%s.lnsdl", out);
    c->out_fd = out_fd;
    c->off = off;
    c->len = len;
    c->saved_ns = lns_mono_ns();
    exnode_id(x, c->id);
}

/* Add [off, off+len) to the sorted, merged spans.  0, or -1 (out of memory). */
static int add_span(dl_ctl_t *c, int64_t off, int64_t len)
{
    size_t i = 0;
    while (i < c->n && c->spans[i].off + c->spans[i].len < off)
        i++;
    if (i < c->n && c->spans[i].off <= off + len) { /* touches span i: merge into it */
        int64_t a = c->spans[i].off < off ? c->spans[i].off : off;
        int64_t b = c->spans[i].off + c->spans[i].len > off + len ? c->spans[i].off +
                                                                          c->spans[i].len
                                                                    : off + len;
        c->spans[i].off = a;
        c->spans[i].len = b - a;
        while (i + 1 < c->n && c->spans[i + 1].off <= b) { /* ... and those it reaches */
            int64_t e = c->spans[i + 1].off + c->spans[i + 1].len;
            if (e > b)
                b = e;
            c->spans[i].len = b - a;
            memmove(&c->spans[i + 1], &c->spans[i + 2], (c->n - i - 2) * sizeof *c->spans);
            c->n--;
        }
        return 0;
    }
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 16;
        lors_span_t *v = realloc(c->spans, cap * sizeof *v);
        if (!v)
            return -1;
        c->spans = v;
        c->cap = cap;
    }
    memmove(&c->spans[i + 1], &c->spans[i], (c->n - i) * sizeof *c->spans);
    c->spans[i] = (lors_span_t){off, len};
    c->n++;
    return 0;
}

int dl_ctl_load(dl_ctl_t *c, char *why, size_t whylen)
{
    FILE *f = fopen(c->path, "r");
    if (!f)
        return 0;
    char id[80] = "";
    int64_t off, len, a, b;
    int bad = fscanf(f, "lns_download 1 exnode %79s range %" SCNd64 " %" SCNd64, id, &off,
                     &len) != 3;
    if (!bad && (strcmp(id, c->id) != 0 || off != c->off || len != c->len)) {
        snprintf(why, whylen, "%s describes another exNode or range", c->path);
        fclose(f);
        return -1;
    }
    int r;
    while (!bad && (r = fscanf(f, " have %" SCNd64 " %" SCNd64, &a, &b)) == 2)
        bad = a < c->off || b < 0 || a + b > c->off + c->len || add_span(c, a, b) < 0;
    bad = bad || !feof(f);
    fclose(f);
    if (bad) {
        snprintf(why, whylen, "%s does not parse", c->path);
        c->n = 0;
        return -1;
    }
    return 1;
}

int dl_ctl_save(dl_ctl_t *c)
{
    char tmp[PATH_MAX + 16];
    snprintf(tmp, sizeof tmp, "%s.tmp", c->path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    fprintf(f, "lns_download 1\nexnode %s\nrange %" PRId64 " %" PRId64 "\n", c->id, c->off,
            c->len);
    for (size_t i = 0; i < c->n; i++)
        fprintf(f, "have %" PRId64 " %" PRId64 "\n", c->spans[i].off, c->spans[i].len);
    int bad = fflush(f) != 0;
    bad = fclose(f) != 0 || bad;
    if (bad || rename(tmp, c->path) < 0) {
        int e = errno;
        unlink(tmp);
        errno = e;
        return -1;
    }
    c->unsaved = 0;
    c->saved_ns = lns_mono_ns();
    return 0;
}

int64_t dl_ctl_check(dl_ctl_t *c, const xnd_t *x)
{
    int64_t dropped = 0;
    size_t k = 0;
    for (size_t i = 0; i < c->n; i++) {
        lors_span_t s = c->spans[i];
        int64_t good = 0;
        lors_verify_at(x, c->out_fd, s.off - c->off, s.off, s.len, &good);
        dropped += s.len - good;
        if (good > 0)
            c->spans[k++] = (lors_span_t){s.off, good};
    }
    c->n = k;
    return dropped;
}

void dl_ctl_placed(void *arg, int64_t off, int64_t len)
{
    dl_ctl_t *c = arg;
    if (len > 0 && add_span(c, off, len) < 0) {
        if (!c->err)
            c->err = ENOMEM;
        return;
    }
    c->unsaved += len;
    if (c->unsaved > 0 &&
        (c->unsaved >= SAVE_EVERY_BYTES || lns_mono_ns() - c->saved_ns >= SAVE_EVERY_NS) &&
        dl_ctl_save(c) < 0 && !c->err)
        c->err = errno;
}

void dl_ctl_remove(const dl_ctl_t *c)
{
    unlink(c->path);
}

int64_t dl_ctl_bytes(const dl_ctl_t *c)
{
    int64_t n = 0;
    for (size_t i = 0; i < c->n; i++)
        n += c->spans[i].len;
    return n;
}

void dl_ctl_free(dl_ctl_t *c)
{
    free(c->spans);
    c->spans = NULL;
    c->n = c->cap = 0;
}
