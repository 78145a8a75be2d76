/* lns_err.c -- lns_err_set: the libraries' one error setter (see lns_err.h). */
#include <stdio.h>

#include "lns_err.h"

int lns_err_vset(char *err, size_t errlen, const char *fmt, va_list ap)
{
    if (err && errlen) {
        vsnprintf(err, errlen, fmt, ap);
    }
    return -1;
}

int lns_err_set(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    lns_err_vset(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}
