/* tool_exit.c -- tool_exit_code: one exit code per kind of failure, the same in every tool.
 *
 * A script tells "the exNode is bad" (3) from "my disk is full" (4) from "the depots are
 * gone" (5, 6) from "the data is corrupt or the key wrong" (7) without parsing messages.
 * The table below is the whole policy; docs/lors-tools.md lists it for users.  Exit 10
 * (TOOL_EXIT_DEGRADED) is no library error: lors_ls finds it in what it prints.
 */
#include "tool.h"

int tool_exit_code(int err)
{
    switch (err) {
    case LORS_OK:
        return TOOL_EXIT_OK;
    case LORS_E_INVAL:   /* a bad option value reached the library */
    case LORS_E_DEPOT:   /* a depot address that does not parse is a bad option value */
    case LORS_E_RC:
        return TOOL_EXIT_USAGE;
    case LORS_E_EXNODE:
        return TOOL_EXIT_EXNODE;
    case LORS_E_READ:
    case LORS_E_SHORT:
    case LORS_E_WRITE:
        return TOOL_EXIT_IO;
    case LORS_E_NODEPOTS:
    case LORS_E_PLACE:
        return TOOL_EXIT_DEPOTS;
    case LORS_E_NO_REPLICA:
    case LORS_E_UNSAFE:  /* trim refused: it would leave bytes with no copy */
        return TOOL_EXIT_NO_DATA;
    case LORS_E_DIGEST:
    case LORS_E_KEY:
    case LORS_E_E2E:
        return TOOL_EXIT_INTEGRITY;
    case LORS_E_PARTIAL:
        return TOOL_EXIT_PARTIAL;
    case LORS_E_NOMEM:
    case LORS_E_THREAD:
    default:
        return TOOL_EXIT_INTERNAL;
    }
}
