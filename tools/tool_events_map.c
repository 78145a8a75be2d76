/* tool_events_map.c -- the BEGIN and MAPPING lines with which lors_trim and lors_refresh open
 * their event streams (docs/events.md).
 *
 * A trim or refresh reports only the mappings it acts on (TRIM, REFRESH, FAILURE).  A reader
 * that draws the file -- the GUI's copy rows -- also needs the ones left alone, so the tool
 * first lists the exNode as it read it, numbered as those events number them.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "tool.h"

int tool_feed_open_exnode(const char *tool, tool_feed_t *f, const char *events, const char *op,
                          lors_event_fn *fn, void **arg, const char *path, const xnd_t *x,
                          const char *fmt, ...)
{
    char file[3 * 4096], rest[512];
    va_list ap;
    int code = tool_feed_open(tool, f, events, op, -1, -1);
    if (code)
        return code;
    tool_feed_attach(f, fn, arg);
    if (!f->es)
        return TOOL_EXIT_OK;
    tool_events_encode(path, file, sizeof file);
    va_start(ap, fmt);
    vsnprintf(rest, sizeof rest, fmt, ap);
    va_end(ap);
    tool_events_printf(f->es, "BEGIN", "op=%s exnode=%s size=%" PRId64 " mappings=%zu %s", op,
                       file, xnd_size(x), x->nmaps, rest);
    tool_events_mappings(f->es, x);
    return TOOL_EXIT_OK;
}

void tool_events_mappings(tool_events_t *es, const xnd_t *x)
{
    for (size_t i = 0; es && x && i < x->nmaps; i++) {
        const xnd_mapping_t *m = x->maps[i];
        char raw[IBP_MAX_HOST + IBP_MAX_RID + 16], dep[3 * sizeof raw], end[24] = "-";
        tool_mapping_depot(m, raw, sizeof raw);
        tool_events_encode(raw, dep, sizeof dep);
        if (m->end.epoch != XND_TIME_UNKNOWN)
            snprintf(end, sizeof end, "%" PRId64, m->end.epoch);
        tool_events_printf(es, "MAPPING", "depot=%s frag=%zu copy=%zu off=%" PRId64
                             " len=%" PRId64 " end=%s", dep, i, i, m->exnode_offset,
                             m->logical_length, end);
    }
}
