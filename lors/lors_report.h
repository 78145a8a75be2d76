/* lors_report.h -- internal: how liblors fills a report's error line and its issues' why.
 *
 * Every lors_*_report_t has `char error[512]`; it is written only through these two macros,
 * which are lns_err_set (common/lns_err.h) on that buffer, so a report's message is set one
 * way, always terminated.
 */
#ifndef LORS_REPORT_H
#define LORS_REPORT_H

#include <stdarg.h>
#include <stdio.h>

#include "lns_err.h"
#include "lors.h"

#define lors__report_error(rep, ...) lns_err_set((rep)->error, sizeof (rep)->error, __VA_ARGS__)
#define lors__report_verror(rep, fmt, ap) \
    lns_err_vset((rep)->error, sizeof (rep)->error, (fmt), (ap))

/* The first failure wins: inside a variadic function whose last named parameter is FMT, when
 * SLOT still holds OK, SLOT takes ERR and the report REP (when not NULL) takes the message.
 * The engines' fail_locked functions are this plus what each wakes or stops. */
#define lors__report_first(slot, ok, err, rep, fmt) \
    do { \
        if ((slot) == (ok)) { \
            (slot) = (err); \
            if (rep) { \
                va_list ap_; \
                va_start(ap_, fmt); \
                lors__report_verror(rep, fmt, ap_); \
                va_end(ap_); \
            } \
        } \
    } while (0)

/* The why of an issue whose ibp_err is set, called in the thread whose call failed: libibp
 * keeps a refused handshake's line (the depot, both pins) per thread. */
static inline void lors__issue_why(lors_issue_t *is)
{
    is->why[0] = '\0';
    if (is->ibp_err == IBP_E_TLS_PIN || is->ibp_err == IBP_E_TLS)
        snprintf(is->why, sizeof is->why, "%s", ibp_tls_error());
}

#endif
