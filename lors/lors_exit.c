/* lors_exit.c -- lors_exit_code: one exit code per kind of failure, the same in every tool.
 *
 * A script tells "the exNode is bad" (3) from "my disk is full" (4) from "the depots are
 * gone" (5, 6) from "the data is corrupt or the key wrong" (7) without parsing messages.
 * The table below is the whole policy; docs/lors-tools.md lists it for users.
 */
#include "lors_tool.h"

int lors_exit_code(int err)
{
    switch (err) {
    case LORS_OK:
        return LORS_EXIT_OK;
    case LORS_E_INVAL:   /* a bad option value reached the library */
    case LORS_E_DEPOT:   /* a depot address that does not parse is a bad option value */
    case LORS_E_RC:
        return LORS_EXIT_USAGE;
    case LORS_E_EXNODE:
        return LORS_EXIT_EXNODE;
    case LORS_E_READ:
    case LORS_E_SHORT:
    case LORS_E_WRITE:
        return LORS_EXIT_IO;
    case LORS_E_NODEPOTS:
    case LORS_E_PLACE:
        return LORS_EXIT_DEPOTS;
    case LORS_E_NO_REPLICA:
    case LORS_E_UNSAFE:  /* trim refused: it would leave bytes with no copy */
        return LORS_EXIT_NO_DATA;
    case LORS_E_DIGEST:
    case LORS_E_KEY:
    case LORS_E_E2E:
        return LORS_EXIT_INTEGRITY;
    case LORS_E_PARTIAL:
        return LORS_EXIT_PARTIAL;
    case LORS_E_NOMEM:
    case LORS_E_THREAD:
    default:
        return LORS_EXIT_INTERNAL;
    }
}
