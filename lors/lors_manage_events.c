/* lors_manage_events.c -- the MAPPING lines with which lors_trim and lors_refresh open their
 * event streams (docs/events.md).
 *
 * A trim or refresh reports only the mappings it acts on (TRIM, REFRESH, FAILURE).  A reader
 * that draws the file -- the GUI's copy rows -- also needs the ones left alone, so the tool
 * first lists the exNode as it read it, numbered as those events number them.
 */
#include <inttypes.h>
#include <stdio.h>

#include "lors_manage_int.h"
#include "lors_tool.h"

void lors_evstream_mappings(lors_evstream_t *es, const xnd_t *x)
{
    for (size_t i = 0; es && x && i < x->nmaps; i++) {
        const xnd_mapping_t *m = x->maps[i];
        lors_depot_t d;
        char raw[IBP_MAX_HOST + IBP_MAX_RID + 16], dep[3 * sizeof raw], end[24] = "-";
        if (lors__map_depot(m, &d) == 0)
            lors_depot_format(&d, raw, sizeof raw);
        else
            raw[0] = '\0';
        lors_evstream_encode(raw, dep, sizeof dep);
        if (m->end.epoch != XND_TIME_UNKNOWN)
            snprintf(end, sizeof end, "%" PRId64, m->end.epoch);
        lors_evstream_printf(es, "MAPPING", "depot=%s frag=%zu copy=%zu off=%" PRId64
                             " len=%" PRId64 " end=%s", dep, i, i, m->exnode_offset,
                             m->logical_length, end);
    }
}
