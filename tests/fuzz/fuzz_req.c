/* fuzz_req.c -- libFuzzer target for the request-line parser (make fuzz).
 *
 * Checks more than "does not crash": whatever the parser accepts must format back into a
 * line that parses to the same command, so parser and formatter cannot drift apart. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ibp_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ibp_req_t req, again;
    char buf[IBP_MAX_LINE + 64];

    if (ibp_req_parse((const char *)data, size, &req) != IBP_OK)
        return 0;
    if (req.cmd == IBP_CMD_MANAGE && req.subcmd == IBP_PROBE)
        req.captype = req.captype < 0 ? 0 : req.captype; /* PROBE ignores it; keep it printable */
    int n = ibp_req_format(&req, buf, sizeof buf);
    if (n <= 0)
        return 0; /* e.g. a key at the length limit plus "rid#": may not fit; not a bug */
    if (ibp_req_parse(buf, (size_t)n - 1, &again) != IBP_OK || again.cmd != req.cmd ||
        again.version != req.version || again.length != req.length ||
        again.offset != req.offset || again.size != req.size ||
        strcmp(again.key, req.key) != 0 || strcmp(again.typekey, req.typekey) != 0)
        abort();
    return 0;
}
