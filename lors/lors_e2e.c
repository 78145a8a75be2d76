/* lors_e2e.c -- end-to-end transforms (zlib, AES-256-GCM) around the upload and download engines. */
#include "lors_e2e_int.h"

int lors_download_fd(const lors_download_opts_t *o, const xnd_t *x, int out_fd,
                     lors_dl_report_t *report)
{
    return lors__download_plain(o, x, out_fd, report);
}
