/* lors_e2e_meta.c -- the frame table of a transformed file, kept in the exNode's lns_e2e metadata.
 *
 * The table says how the plain file was cut (frame_size, plain_size, frames), which chain
 * made the stored bytes, the salt and key id for aes, and the stored length of every frame,
 * without which a sub-range could not be found in the stored bytes.  The lengths are written
 * as "LEN" or "LEN*COUNT" items separated by commas (aes alone: one item for all frames but
 * the last; zlib: about one short number per frame) and kept in memory as the same runs, so
 * memory follows the text and a hostile "frames" count cannot make us allocate.  Reading
 * trusts nothing: every number is bounded by what the chain can produce from its frame, and
 * the lengths must add up to the file's size.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lns_hex.h"
#include "lors_e2e_int.h"
#include "lns_array.h"
#include "lns_err.h"

#define ITEM_MAX 48 /* "LEN*COUNT," with two int64s */

int lors__e2e_desc_add(lors__e2e_desc_t *d, int64_t plain_len, int64_t stored_len)
{
    lors__e2e_run_t *last = d->nruns ? &d->runs[d->nruns - 1] : NULL;
    if (last && last->len == stored_len) {
        last->count++;
    } else {
        if (lns_grow(&d->runs, &d->capruns, d->nruns + 1, sizeof *d->runs, 64) < 0)
            return LORS_E_NOMEM;
        d->runs[d->nruns++] = (lors__e2e_run_t){stored_len, 1, d->frames, d->stored_size};
    }
    d->frames++;
    d->plain_size += plain_len;
    d->stored_size += stored_len;
    return LORS_OK;
}

/* The last run whose first frame (by_off: whose first stored byte) is at or before key, by
 * binary search: both columns grow with the run's index. */
static const lors__e2e_run_t *run_before(const lors__e2e_desc_t *d, int by_off, int64_t key)
{
    size_t lo = 0, hi = d->nruns;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if ((by_off ? d->runs[mid].off0 : d->runs[mid].frame0) <= key)
            lo = mid;
        else
            hi = mid;
    }
    return &d->runs[lo];
}

void lors__e2e_frame_loc(const lors__e2e_desc_t *d, int64_t f, int64_t *off, int64_t *len)
{
    const lors__e2e_run_t *r = run_before(d, 0, f);
    *off = r->off0 + (f - r->frame0) * r->len;
    *len = r->len;
}

int64_t lors__e2e_frame_at(const lors__e2e_desc_t *d, int64_t off)
{
    const lors__e2e_run_t *r = run_before(d, 1, off);
    int64_t f = r->frame0 + (off - r->off0) / r->len;
    return f < d->frames ? f : d->frames - 1;
}

int64_t lors__e2e_frame_plain(const lors__e2e_desc_t *d, int64_t f)
{
    return f < d->frames - 1 ? d->frame_size : d->plain_size - (d->frames - 1) * d->frame_size;
}

void lors__e2e_desc_free(lors__e2e_desc_t *d)
{
    free(d->runs);
    d->runs = NULL;
    d->nruns = d->capruns = 0;
}

/* ---- writing ----------------------------------------------------------------------------- */

int lors__e2e_desc_write(const lors__e2e_desc_t *d, xnd_t *x)
{
    xnd_meta_list_t *l = NULL;
    char *lengths = malloc(d->nruns * ITEM_MAX + 1);
    size_t pos = 0;
    if (!lengths)
        return XND_E_NOMEM;
    lengths[0] = 0;
    for (size_t i = 0; i < d->nruns; i++) {
        const lors__e2e_run_t *r = &d->runs[i];
        pos += (size_t)(r->count > 1
                            ? snprintf(lengths + pos, ITEM_MAX, "%s%lld*%lld", i ? "," : "",
                                       (long long)r->len, (long long)r->count)
                            : snprintf(lengths + pos, ITEM_MAX, "%s%lld", i ? "," : "",
                                       (long long)r->len));
    }
    xnd_meta_remove(&x->meta, LORS_E2E_META);
    int rc = xnd_meta_set_meta(&x->meta, LORS_E2E_META, &l);
    if (rc == XND_OK)
        rc = xnd_meta_set_int(l, "version", LORS_E2E_VERSION);
    if (rc == XND_OK)
        rc = xnd_meta_set_string(l, "chain", d->chain.name);
    if (rc == XND_OK)
        rc = xnd_meta_set_int(l, "frame_size", d->frame_size);
    if (rc == XND_OK)
        rc = xnd_meta_set_int(l, "plain_size", d->plain_size);
    if (rc == XND_OK)
        rc = xnd_meta_set_int(l, "frames", d->frames);
    if (rc == XND_OK && d->chain.has_aes) {
        char salt[2 * LORS_E2E_SALT + 1];
        lns_hex(d->salt, LORS_E2E_SALT, salt);
        rc = xnd_meta_set_string(l, "salt", salt);
        if (rc == XND_OK)
            rc = xnd_meta_set_string(l, "keyid", d->keyid);
    }
    if (rc == XND_OK)
        rc = xnd_meta_set_string(l, "frame_lengths", lengths);
    free(lengths);
    return rc;
}

/* ---- reading ----------------------------------------------------------------------------- */

int lors__e2e_from_hex(const char *s, size_t len, unsigned char *out, size_t n)
{
    return lns_unhex(s, len, out, n, 1);
}

/* A positive decimal of at most 18 digits, no sign, no leading zero; advances *p. */
static int64_t parse_pos(const char **p)
{
    const char *s = *p;
    int64_t v = 0;
    int n = 0;
    if (*s < '1' || *s > '9')
        return -1;
    while (*s >= '0' && *s <= '9') {
        if (++n > 18)
            return -1;
        v = v * 10 + (*s++ - '0');
    }
    *p = s;
    return v;
}

static int bad(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int bad(char *err, size_t errlen, const char *fmt, ...)
{
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    lns_err_set(err, errlen, "%s metadata: %s", LORS_E2E_META, what);
    return LORS_E_EXNODE;
}

/* Parse frame_lengths into d->runs and check each length against what the chain makes of
 * its frame: at most lors__e2e_max_stored, and exactly plain + 16 per aes without a compressor. */
static int parse_lengths(lors__e2e_desc_t *d, const char *s, char *err, size_t errlen)
{
    int64_t last_plain = d->frames ? lors__e2e_frame_plain(d, d->frames - 1) : 0;
    int64_t max_full = lors__e2e_max_stored(&d->chain, d->frame_size);
    int64_t max_last = lors__e2e_max_stored(&d->chain, last_plain);
    int exact = !LORS__E2E_PACKS(d->chain.steps[0]) && !LORS__E2E_PACKS(d->chain.steps[1]);
    int64_t total = 0;
    const char *p = s;

    while (*p) {
        int64_t len = parse_pos(&p), count = 1;
        if (len > 0 && *p == '*') {
            p++;
            count = parse_pos(&p);
        }
        if (len < 0 || count < 0 || (*p && *p != ','))
            return bad(err, errlen, "frame_lengths: malformed at character %ld",
                       (long)(p - s) + 1);
        if (*p == ',' && !*++p)
            return bad(err, errlen, "frame_lengths: ends with a comma");
        if (count > d->frames - total)
            return bad(err, errlen, "frame_lengths lists more than %lld frames",
                       (long long)d->frames);
        int has_last = total + count == d->frames;
        int64_t lim = has_last && count == 1 ? max_last : max_full;
        if (len > lim || (has_last && len > max_last))
            return bad(err, errlen, "frame %lld: %lld stored bytes, more than \"%s\" makes of "
                       "its plain bytes", (long long)total, (long long)len, d->chain.name);
        if (exact && (has_last ? len != max_last || (count > 1 && len != max_full)
                               : len != max_full))
            return bad(err, errlen, "frame %lld: %lld stored bytes where \"%s\" makes exactly "
                       "%lld", (long long)total, (long long)len, d->chain.name,
                       (long long)(has_last && count == 1 ? max_last : max_full));
        if (lns_grow(&d->runs, &d->capruns, d->nruns + 1, sizeof *d->runs, 64) < 0)
            return LORS_E_NOMEM;
        d->runs[d->nruns++] = (lors__e2e_run_t){len, count, total, d->stored_size};
        d->stored_size += len * count;
        total += count;
    }
    if (total != d->frames)
        return bad(err, errlen, "frame_lengths lists %lld frames, not %lld", (long long)total,
                   (long long)d->frames);
    return LORS_OK;
}

static int get_int(const xnd_meta_list_t *l, const char *name, int64_t lo, int64_t hi,
                   int64_t *out, char *err, size_t errlen)
{
    if (xnd_meta_get_int(l, name, out) != XND_OK)
        return bad(err, errlen, "no integer \"%s\"", name);
    if (*out < lo || *out > hi)
        return bad(err, errlen, "%s %lld is out of range (%lld..%lld)", name, (long long)*out,
                   (long long)lo, (long long)hi);
    return LORS_OK;
}

static int read_desc(const xnd_meta_t *m, int64_t size, lors__e2e_desc_t *d, char *err,
                     size_t errlen)
{
    const xnd_meta_list_t *l = &m->sub;
    const char *chain = NULL, *lengths = NULL, *salt = NULL, *keyid = NULL;
    int64_t version = 0;
    char why[200];
    int rc;

    if (m->type != XND_META)
        return bad(err, errlen, "not a metadata list");
    if ((rc = get_int(l, "version", 0, INT32_MAX, &version, err, errlen)) != LORS_OK)
        return rc;
    if (version != LORS_E2E_VERSION)
        return bad(err, errlen, "version %lld is not supported (only %d)", (long long)version,
                   LORS_E2E_VERSION);
    if (xnd_meta_get_string(l, "chain", &chain) != XND_OK)
        return bad(err, errlen, "no string \"chain\"");
    if (lors__e2e_chain_parse(chain, &d->chain, why, sizeof why) != LORS_OK)
        return bad(err, errlen, "%s", why);
    if (d->chain.n == 0)
        return bad(err, errlen, "an empty chain");
    if ((rc = get_int(l, "frame_size", 1, LORS_E2E_MAX_FRAME, &d->frame_size, err, errlen)) ||
        (rc = get_int(l, "plain_size", 0, INT64_MAX, &d->plain_size, err, errlen)) ||
        (rc = get_int(l, "frames", 0, LORS_E2E_MAX_FRAMES, &d->frames, err, errlen)))
        return rc;
    if (d->frames != d->plain_size / d->frame_size + (d->plain_size % d->frame_size != 0))
        return bad(err, errlen, "%lld frames cannot hold %lld bytes in frames of %lld",
                   (long long)d->frames, (long long)d->plain_size, (long long)d->frame_size);
    if (d->chain.has_aes) {
        if (xnd_meta_get_string(l, "salt", &salt) != XND_OK ||
            lors__e2e_from_hex(salt, strlen(salt), d->salt, LORS_E2E_SALT) != 0)
            return bad(err, errlen, "the chain has aes but no salt of %d hex digits",
                       2 * LORS_E2E_SALT);
        unsigned char kid[8];
        if (xnd_meta_get_string(l, "keyid", &keyid) != XND_OK ||
            lors__e2e_from_hex(keyid, strlen(keyid), kid, 8) != 0)
            return bad(err, errlen, "the chain has aes but no keyid of 16 hex digits");
        lns_hex(kid, 8, d->keyid);
    }
    if (xnd_meta_get_string(l, "frame_lengths", &lengths) != XND_OK)
        return bad(err, errlen, "no string \"frame_lengths\"");
    if ((rc = parse_lengths(d, lengths, err, errlen)) != LORS_OK)
        return rc;
    if (d->stored_size != size)
        return bad(err, errlen, "the frames hold %lld stored bytes but the file's size is %lld",
                   (long long)d->stored_size, (long long)size);
    return LORS_OK;
}

int lors__e2e_desc_read(const xnd_t *x, lors__e2e_desc_t *d, int *present, char *err,
                        size_t errlen)
{
    memset(d, 0, sizeof *d);
    *present = 0;
    const xnd_meta_t *m = xnd_meta_find(&x->meta, LORS_E2E_META);
    if (!m)
        return LORS_OK;
    int rc = read_desc(m, xnd_size(x), d, err, errlen);
    if (rc != LORS_OK) {
        lors__e2e_desc_free(d);
        memset(d, 0, sizeof *d);
        return rc;
    }
    *present = 1;
    return LORS_OK;
}

int lors_e2e_info(const xnd_t *x, lors_e2e_info_t *info, char *err, size_t errlen)
{
    lors__e2e_desc_t d;
    int present = 0;
    char dummy[8];
    if (!err || errlen == 0) {
        err = dummy;
        errlen = sizeof dummy;
    }
    if (info)
        memset(info, 0, sizeof *info);
    if (!x || !info) {
        lns_err_set(err, errlen, "lors_e2e_info: no exNode or no place for the answer");
        return LORS_E_INVAL;
    }
    int rc = lors__e2e_desc_read(x, &d, &present, err, errlen);
    if (rc != LORS_OK || !present)
        return rc;
    info->present = 1;
    snprintf(info->chain, sizeof info->chain, "%s", d.chain.name);
    info->plain_size = d.plain_size;
    info->frame_size = d.frame_size;
    info->frames = d.frames;
    lors__e2e_desc_free(&d);
    return LORS_OK;
}
