/* lors_e2e_int.h -- internal to liblors: the engines under the end-to-end transforms.
 *
 * lors_download_fd (lors_e2e.c) undoes an exNode's transforms around lors__download_plain,
 * which moves the stored bytes of a range exactly as they are on the depots.
 */
#ifndef LNS_LORS_E2E_INT_H
#define LNS_LORS_E2E_INT_H

#include "lors.h"

/* lors_download_fd's contract, on the stored bytes: no transforms undone. */
int lors__download_plain(const lors_download_opts_t *o, const xnd_t *x, int out_fd,
                         lors_dl_report_t *report);

#endif
