/* lors_convert.c -- a network file in another layout: replicated <-> erasure coded.
 *
 * Changing the layout changes what every allocation holds (pieces and parity against plain
 * copies), so nothing can be copied depot to depot: the file is read through the download
 * engine (any live copy or any k pieces, every block checked against its digests) and
 * written by the upload engine in the new layout, the one feeding the other through a pipe,
 * so memory holds only the two engines' buffers whatever the file's size.  The new file is
 * a new exNode; x and its allocations are left alone (the caller frees them once the new
 * exNode is safely written: lors_discard).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lors.h"
#include "lors_feed.h"
#include "lors_report.h"

void lors_convert_opts_init(lors_convert_opts_t *o)
{
    memset(o, 0, sizeof *o);
    lors_upload_opts_init(&o->up);
    lors_download_opts_init(&o->down);
}

int lors_convert(const lors_convert_opts_t *o, const xnd_t *x, xnd_t **out,
                 lors_report_t *report)
{
    lors_report_t local;
    lors_report_t *rep = report ? report : &local;
    lors_e2e_info_t e2e;
    lors_ec_info_t ec;
    const char *name = NULL;
    int64_t bitrate = 0;
    int in, rc;

    memset(rep, 0, sizeof *rep);
    if (out)
        *out = NULL;
    if (!o || !x || !out) {
        lors__report_error(rep, "convert: missing options, exNode or result");
        return LORS_E_INVAL;
    }
    if ((rc = lors_e2e_info(x, &e2e, rep->error, sizeof rep->error)) != LORS_OK ||
        (rc = lors_ec_info(x, &ec, rep->error, sizeof rep->error)) != LORS_OK)
        goto done;
    if (e2e.present) {
        /* the transforms would be undone by the read and not done again by the write */
        lors__report_error(rep, "convert: the file is %s (%s); its layout cannot be changed "
                           "without storing it plain", strstr(e2e.chain, "aes")
                           ? "encrypted" : "compressed", e2e.chain);
        rc = LORS_E_INVAL;
        goto done;
    }
    if (o->down.offset != 0 || o->down.length != -1) {
        lors__report_error(rep, "convert: the whole file is converted, not a range");
        rc = LORS_E_INVAL;
        goto done;
    }
    int64_t size = ec.present ? ec.size : xnd_size(x);
    (void)xnd_meta_get_string(&x->meta, "filename", &name);
    (void)xnd_meta_get_int(&x->meta, "bitrate", &bitrate);
    lors__feed_t r = {.o = o->down, .x = x, .run = lors_download_fd};
    if ((rc = lors__feed_start(&r, &in, rep->error, sizeof rep->error)) != LORS_OK)
        goto done;
    rc = lors_upload_fd(&o->up, in, size, name, out, rep);
    close(in); /* a feeder still writing gets EPIPE and ends */
    lors__feed_join(&r);
    if (r.rc != LORS_OK && rc != LORS_E_STOPPED &&
        !(r.rc == LORS_E_WRITE && rc != LORS_OK)) {
        /* the read failed first: that is the reason (the write saw a short input) */
        if (rc == LORS_OK) { /* cannot be: the upload read size bytes; be safe */
            lors_discard(*out, o->up.threads, o->up.timeout_s, &rep->freed);
            xnd_free(*out);
            *out = NULL;
        }
        lors__report_error(rep, "convert: reading the file: %s",
                           r.rep.error[0] ? r.rep.error : lors_strerror(r.rc));
        rc = r.rc;
    } else if (rc != LORS_OK && !rep->error[0]) {
        lors__report_error(rep, "convert: %s", lors_strerror(rc));
    }
    if (rc == LORS_OK && bitrate > 0 && xnd_meta_set_int(&(*out)->meta, "bitrate", bitrate) !=
        XND_OK) {
        lors_discard(*out, o->up.threads, o->up.timeout_s, &rep->freed);
        xnd_free(*out);
        *out = NULL;
        rc = LORS_E_NOMEM;
    }
    lors_dl_report_free(&r.rep);
done:
    if (!report)
        lors_report_free(&local);
    return rc;
}
