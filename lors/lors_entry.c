/* lors_entry.c -- the public entry points of upload, download and augment (lors.h), which
 * choose the path and take it: the plain engine (lors_upload_engine.c,
 * lors_download_engine.c), the erasure-coded one (lors_ec_upload.c, the download engine with
 * its codec) or the end-to-end transforms (lors_e2e.c, over the plain engine); for augment,
 * depot-to-depot copies (lors_augment_engine.c) or, for an erasure-coded file, the keeper's
 * repair of its missing pieces (lors_keep_engine.c, which makes a replicated file's copies
 * with the same augment engine).  Each path runs down from here and comes back once: no
 * engine calls up into this file, into the transforms or into the keeper.
 */
#include <stdlib.h>
#include <string.h>

#include "lns_time.h"
#include "lors.h"
#include "lors_augment_int.h"
#include "lors_e2e_int.h"
#include "lors_ec_int.h"
#include "lors_keep_int.h"
#include "lors_manage_int.h"
#include "lors_report.h"

/* ---- download -------------------------------------------------------------------------- */

/* An erasure-coded file (lns_ec present): the engine with the codec. */
static int download_ec(const lors_download_opts_t *o, const xnd_t *x, const lors__out_t *out,
                       lors_dl_report_t *rep)
{
    lors__ec_t ec;
    int present;
    int rc = lors__ec_read(x, &ec, &present, rep->error, sizeof rep->error);
    if (rc != LORS_OK)
        return rc;
    if (xnd_meta_find(&x->meta, LORS_E2E_META)) {
        lors__ec_free(&ec);
        lors__report_error(rep, "the exNode has both %s and %s: this lns reads one or the other",
                           LORS_EC_META, LORS_E2E_META);
        return LORS_E_EXNODE;
    }
    rc = lors__download_ec_to(o, x, &ec, out, rep);
    lors__ec_free(&ec);
    return rc;
}

/* Plain, erasure coded, or through the transforms (lors_e2e.c), to out. */
int lors__download_to(const lors_download_opts_t *o, const xnd_t *x, const lors__out_t *out,
                      lors_dl_report_t *report)
{
    lors__e2e_desc_t d;
    lors_dl_report_t local;
    lors_dl_report_t *rep = report ? report : &local;
    int present = 0;

    if (!o || !x)
        return lors__download_plain_to(o, x, out, report);
    memset(rep, 0, sizeof *rep);
    if (xnd_meta_find(&x->meta, LORS_EC_META)) {
        int rc = download_ec(o, x, out, rep);
        if (!report)
            lors_dl_report_free(&local);
        return rc;
    }
    int rc = lors__e2e_desc_read(x, &d, &present, rep->error, sizeof rep->error);
    if (rc != LORS_OK || !present) {
        if (!report)
            lors_dl_report_free(&local);
        return rc != LORS_OK ? rc : lors__download_plain_to(o, x, out, report);
    }
    rc = lors__download_e2e(o, x, &d, out, rep);
    lors__e2e_desc_free(&d);
    if (!report)
        lors_dl_report_free(&local);
    return rc;
}

/* The public entry point. */
int lors_download_fd(const lors_download_opts_t *o, const xnd_t *x, int out_fd,
                     lors_dl_report_t *report)
{
    lors__out_t out = {.fd = out_fd};
    return lors__download_to(o, x, &out, report);
}

/* ---- upload ---------------------------------------------------------------------------- */

/* Which path: plain, or transforms (chain parsed into c). */
static int upload_path(const lors_upload_opts_t *o, lors__e2e_chain_t *c, xnd_t **out,
                       lors_report_t *rep)
{
    memset(rep, 0, sizeof *rep);
    if (out)
        *out = NULL;
    if (!o || !o->e2e || !*o->e2e) {
        c->n = 0;
        return LORS_OK;
    }
    int rc = lors__e2e_chain_parse(o->e2e, c, rep->error, sizeof rep->error);
    if (rc != LORS_OK || !o->e2e_level)
        return rc;
    int max = lors__e2e_level_max(c);
    if (o->e2e_level < 1 || o->e2e_level > max) {
        if (max)
            lors__report_error(rep, "e2e level %d: %s takes 1 to %d", o->e2e_level, c->name, max);
        else
            lors__report_error(rep, "e2e level %d: the chain \"%s\" has no compressor",
                               o->e2e_level, c->name);
        return LORS_E_INVAL;
    }
    c->level = o->e2e_level;
    return LORS_OK;
}

/* lors_upload_fd and lors_upload_buf: one front for both sources (mem: buf and length, else
 * fd and length), each checked the way its public call promises. */
static int upload_src(const lors_upload_opts_t *o, int mem, int fd, const void *buf,
                      int64_t length, const char *filename, xnd_t **out, lors_report_t *report)
{
    lors_report_t local;
    lors_report_t *rep = report ? report : &local;
    lors__e2e_chain_t c;
    int rc = upload_path(o, &c, out, rep);
    int ec = rc == LORS_OK && o->ec_k > 0;
    if (rc == LORS_OK && c.n == 0 && !ec) {
        rc = mem ? lors__upload_plain_buf(o, buf, (size_t)length, filename, out, rep)
                 : lors__upload_plain_fd(o, fd, length, filename, out, rep);
        rep->plain_size = rep->size;
    } else if (rc == LORS_OK && !mem && (fd < 0 || length < -1)) {
        lors__report_error(rep, "upload: bad file descriptor or length");
        rc = LORS_E_INVAL;
    } else if (rc == LORS_OK && mem && !buf && length != 0) {
        lors__report_error(rep, "upload: no buffer");
        rc = LORS_E_INVAL;
    } else if (rc == LORS_OK && !out) {
        lors__report_error(rep, "upload: no place for the exNode");
        rc = LORS_E_INVAL;
    } else if (rc == LORS_OK && ec) {
        rc = lors__upload_ec(o, mem ? -1 : fd, mem ? (buf ? buf : (const void *)"") : NULL,
                             length, filename, out, rep);
    } else if (rc == LORS_OK) {
        rc = lors__upload_e2e(o, &c, mem ? -1 : fd, mem ? (buf ? buf : (const void *)"") : NULL,
                              length, filename, out, rep);
    }
    if (!report)
        lors_report_free(&local);
    return rc;
}

int lors_upload_fd(const lors_upload_opts_t *o, int fd, int64_t length, const char *filename,
                   xnd_t **out, lors_report_t *report)
{
    return upload_src(o, 0, fd, NULL, length, filename, out, report);
}

int lors_upload_buf(const lors_upload_opts_t *o, const void *buf, size_t len,
                    const char *filename, xnd_t **out, lors_report_t *report)
{
    return upload_src(o, 1, -1, buf, (int64_t)len, filename, out, report);
}

/* ---- augment --------------------------------------------------------------------------- */

/* The keeper's repair without its refresh and its prune (lors_keep_ec.c): each column of a
 * stripe group that no live mapping holds is decoded from any k survivors and stored on a
 * depot that no live column of those stripes uses; the dead mappings stay (lors_trim -u
 * takes them out).  All or nothing, as a replicated augment: if some stripe is still short
 * afterwards, the new pieces are freed and x is left as it was. */
static int augment_ec(const lors_augment_opts_t *o, xnd_t *x, xnd_t **added, lors_report_t *rep)
{
    lors_keep_opts_t ko;
    lors_keep_report_t kr;
    size_t n0 = x->nmaps;
    lors_keep_opts_init(&ko);
    ko.margin_s = 0;          /* no refresh: that is lors_refresh's */
    ko.depots = o->up.depots;
    ko.ndepots = o->up.ndepots;
    ko.duration_s = o->up.duration_s;
    ko.provisional_s = o->up.provisional_s;
    ko.defer_extend = 1;      /* the caller extends them once its exNode is written */
    ko.reliability = o->up.reliability;
    ko.threads = o->up.threads;
    ko.timeout_s = o->up.timeout_s;
    ko.on_event = o->up.on_event;
    ko.event_arg = o->up.event_arg;
    ko.on_alloc = o->on_alloc;
    ko.alloc_arg = o->alloc_arg;
    ko.stop = o->up.stop;
    int rc = lors__keep_pass(&ko, x, &kr, 0);
    if (rc == LORS_OK && x->nmaps > n0 && added) {
        xnd_t *ad = xnd_new();
        int xr = ad ? xnd_meta_list_copy(&ad->meta, &x->meta) : XND_E_NOMEM;
        for (size_t i = n0; xr == XND_OK && i < x->nmaps; i++) {
            xnd_mapping_t *m = xnd_mapping_copy(x->maps[i]);
            xr = m ? xnd_append(ad, m) : XND_E_NOMEM;
            if (xr != XND_OK)
                xnd_mapping_free(m);
        }
        if (xr != XND_OK) {
            xnd_free(ad);
            ad = NULL;
            rc = LORS_E_NOMEM;
        }
        *added = ad;
    }
    if (rc != LORS_OK) {
        /* some stripe is still short (kr.risks), or the pass failed: undo what it made */
        const char **caps = malloc((x->nmaps - n0 + 1) * sizeof *caps);
        size_t nc = 0;
        for (size_t i = n0; caps && i < x->nmaps; i++)
            if (x->maps[i]->cap[XND_MANAGE])
                caps[nc++] = x->maps[i]->cap[XND_MANAGE];
        if (caps)
            lors__release(caps, nc, o->up.threads, o->up.timeout_s, &rep->freed);
        else
            rep->freed.unfreed = (int)(x->nmaps - n0);
        free(caps);
        while (x->nmaps > n0)
            xnd_remove(x, x->nmaps - 1);
        if (rc == LORS_E_PARTIAL) {
            /* the pieces no k survivors give back, or no depot took */
            rc = kr.lost ? LORS_E_NO_REPLICA : LORS_E_NODEPOTS;
            char b[64];
            lors__bytes(kr.risks[0].offset, kr.risks[0].length, b, sizeof b);
            lors__report_error(rep, "augment: %s: %s", b, kr.lost
                               ? "fewer than k pieces of these stripes are alive; nothing to "
                                 "rebuild them from"
                               : "no depot of the list could take their missing pieces (each "
                                 "needs one that holds no other piece of the stripe)");
        } else {
            lors__report_error(rep, "%s", kr.error);
        }
    } else {
        rep->mappings = kr.added;
        rep->bytes_sent = kr.bytes_sent;
        rep->bytes_rebuilt = kr.bytes_rebuilt;
    }
    lors_keep_report_free(&kr);
    return rc;
}

int lors_augment(const lors_augment_opts_t *o, xnd_t *x, xnd_t **added, lors_report_t *report)
{
    lors_report_t local;
    lors_report_t *rep = report ? report : &local;
    lors_ec_info_t ec;
    char err[sizeof rep->error];
    int64_t t0 = lns_mono_ns();
    int rc;
    /* bad arguments are the copies engine's to say, as a replicated file's augment is */
    if (!o || !x || lors__augment_check(o, err, sizeof err) != LORS_OK)
        return lors__augment_copies(o, x, added, report);
    if ((rc = lors_ec_info(x, &ec, err, sizeof err)) == LORS_OK && !ec.present)
        return lors__augment_copies(o, x, added, report);
    memset(rep, 0, sizeof *rep);
    if (added)
        *added = NULL;
    if (rc != LORS_OK) {
        lors__report_error(rep, "%s", err);
    } else {
        rep->size = xnd_size(x);
        rc = augment_ec(o, x, added, rep);
        rep->seconds = (double)(lns_mono_ns() - t0) / 1e9;
    }
    if (!report)
        lors_report_free(&local);
    return rc;
}
