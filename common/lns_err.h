/* lns_err.h -- the one way an error message travels through the lns libraries.
 *
 * A function that can explain a failure takes a buffer and its size, always named
 * `char *err, size_t errlen`, and fills it with one line (no trailing newline) through
 * lns_err_set; it returns its library's error code (ibp_*, xnd_*, lbone_*, lors_* each keep
 * their own enum and *_strerror) or -1.  The message names the thing that failed and why,
 * errno's words included, so a caller never reads errno after a library call.  liblors's
 * reports (lors_*_report_t.error) are filled the same way, through lors__report_error.
 */
#ifndef LNS_ERR_H
#define LNS_ERR_H

#include <stdarg.h>
#include <stddef.h>

/* Format the message into err[errlen], always terminated and truncated to fit; a NULL err or
 * a zero errlen is allowed and writes nothing.  Returns -1, so a function that fails with -1
 * can say `return lns_err_set(err, errlen, ...);`. */
int lns_err_set(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int lns_err_vset(char *err, size_t errlen, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

#endif
