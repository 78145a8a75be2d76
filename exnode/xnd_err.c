/* xnd_err.c -- error codes into words, and the one-line messages with their source line. */
#include "xnd_internal.h"

#include <stdio.h>
#include <string.h>

#include "lns_err.h"

const char *xnd_strerror(int err)
{
    switch (err) {
    case XND_OK: return "success";
    case XND_E_NOMEM: return "out of memory";
    case XND_E_INVAL: return "invalid argument";
    case XND_E_NOTFOUND: return "not found";
    case XND_E_TYPE: return "metadata of another type";
    case XND_E_XML: return "not well-formed XML";
    case XND_E_FORBIDDEN: return "DOCTYPE, entity or external reference refused";
    case XND_E_NAMESPACE: return "not an exNode (namespace)";
    case XND_E_FORMAT: return "malformed exNode";
    case XND_E_NUMBER: return "bad number";
    case XND_E_RANGE: return "mapping out of range";
    case XND_E_CAP: return "missing or malformed capability";
    case XND_E_LIMIT: return "exNode too large or too deep";
    case XND_E_IO: return "I/O error";
    case XND_E_EXISTS: return "the file exists";
    case XND_E_CHANGED: return "the file changed since it was read";
    case XND_E_BUSY: return "another process is updating the file";
    default: return "unknown error";
    }
}

int xnd_seterr(char *err, size_t errlen, int code, int line, const char *fmt, ...)
{
    va_list ap;
    size_t n = 0;
    if (!err || errlen == 0)
        return code;
    if (line > 0) {
        lns_err_set(err, errlen, "line %d: ", line);
        n = strlen(err);
    }
    va_start(ap, fmt);
    lns_err_vset(err + n, errlen - n, fmt, ap);
    va_end(ap);
    return code;
}
