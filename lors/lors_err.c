/* lors_err.c -- lors_strerror: words for liblors error codes. */
#include <stdio.h>

#include "lors.h"

const char *lors_strerror(int err)
{
    switch (err) {
    case LORS_OK: return "success";
    case LORS_E_NOMEM: return "out of memory";
    case LORS_E_INVAL: return "invalid argument";
    case LORS_E_DEPOT: return "bad depot address";
    case LORS_E_NODEPOTS: return "no depots given";
    case LORS_E_READ: return "cannot read the input";
    case LORS_E_SHORT: return "the input is shorter than its length";
    case LORS_E_PLACE: return "a fragment could not be stored on any depot";
    case LORS_E_DIGEST: return "checksum failure";
    case LORS_E_EXNODE: return "cannot build the exNode";
    case LORS_E_THREAD: return "cannot start a thread";
    case LORS_E_NO_REPLICA: return "some bytes have no live replica left";
    case LORS_E_WRITE: return "cannot write the output";
    case LORS_E_KEY: return "missing, malformed or wrong key";
    case LORS_E_E2E: return "transformed data does not decode (tag or decompression failure)";
    case LORS_E_UNSAFE: return "would leave bytes with no copy at all";
    case LORS_E_PARTIAL: return "some mappings could not be handled";
    case LORS_E_RC: return "the rc file does not parse";
    case LORS_E_STOPPED: return "stopped (interrupted)";
    case LORS_E_NOTFOUND: return "no such network file";
    default: return "unknown liblors error";
    }
}
