/* lors_report.h -- internal: how liblors fills a report's error line and its issues' why.
 *
 * Every lors_*_report_t has `char error[512]`; it is written only through these two macros,
 * which are lns_err_set (common/lns_err.h) on that buffer, so a report's message is set one
 * way, always terminated.
 */
#ifndef LORS_REPORT_H
#define LORS_REPORT_H

#include <stdio.h>

#include "lns_err.h"
#include "lors.h"

#define lors__report_error(rep, ...) lns_err_set((rep)->error, sizeof (rep)->error, __VA_ARGS__)
#define lors__report_verror(rep, fmt, ap) \
    lns_err_vset((rep)->error, sizeof (rep)->error, (fmt), (ap))

/* The why of an issue whose ibp_err is set, called in the thread whose call failed: libibp
 * keeps a refused handshake's line (the depot, both pins) per thread. */
static inline void lors__issue_why(lors_issue_t *is)
{
    is->why[0] = '\0';
    if (is->ibp_err == IBP_E_TLS_PIN || is->ibp_err == IBP_E_TLS)
        snprintf(is->why, sizeof is->why, "%s", ibp_tls_error());
}

#endif
