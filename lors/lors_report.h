/* lors_report.h -- internal: how liblors fills a report's error line.
 *
 * Every lors_*_report_t has `char error[512]`; it is written only through these two macros,
 * which are lns_err_set (common/lns_err.h) on that buffer, so a report's message is set one
 * way, always terminated.
 */
#ifndef LORS_REPORT_H
#define LORS_REPORT_H

#include "lns_err.h"

#define lors__report_error(rep, ...) lns_err_set((rep)->error, sizeof (rep)->error, __VA_ARGS__)
#define lors__report_verror(rep, fmt, ap) \
    lns_err_vset((rep)->error, sizeof (rep)->error, (fmt), (ap))

#endif
