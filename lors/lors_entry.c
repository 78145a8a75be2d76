/* lors_entry.c -- the public entry points of upload and download (lors.h), which choose the
 * path and take it: the plain engine (lors_upload_engine.c, lors_download_engine.c), the
 * erasure-coded one (lors_ec_upload.c, the download engine with its codec) or the end-to-end
 * transforms (lors_e2e.c, over the plain engine).  Each path runs down from here and comes
 * back once: no engine calls up into this file or into the transforms.
 */
#include <string.h>

#include "lors.h"
#include "lors_e2e_int.h"
#include "lors_ec_int.h"
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
    return lors__e2e_chain_parse(o->e2e, c, rep->error, sizeof rep->error);
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
