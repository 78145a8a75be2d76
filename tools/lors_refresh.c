/* lors_refresh.c -- lors_refresh: extend the lifetime of a network file's allocations.
 *
 * A thin front end over lors_refresh() (lors.h).  Each mapping is changed on its depot and
 * its end in the exNode is set to what the depot then reports, so the exNode never claims
 * more time than the depot granted.  The exNode is written when at least the refresh ran,
 * also when some mappings failed: those that succeeded have new ends worth keeping.  Each
 * failure is one line on stderr naming the mapping, its depot and why; the exit code is 8.
 * When none could be extended and the exNode says every lease ended already, that is the one
 * line (when they expired, not a line per mapping that the depot no longer knows), exit 6:
 * the file's bytes are gone, as lors_download says for them.
 * --events writes BEGIN, the exNode as read (MAPPING lines), one REFRESH or FAILURE per
 * mapping as its depot answers, and END with the exit code (docs/events.md).  -o never
 * replaces a file other than the input unless --force, checked before any depot call.
 */
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lns_time.h"
#include "lors.h"
#include "tool.h"
#include "tool_opt.h"
#include "lns_err.h"

static const char *TOOL = "lors_refresh";

typedef struct settings {
    tool_common_t c;
    const char *output;
    int mode, nmodes, force;
    int64_t value;
} settings_t;

#define S(field) TOOL_OFF(settings_t, field)

/* -d, -s, -a and -m: one way to say the new expiry. */
static int set_mode(void *sp, const tool_opt_t *o, const char *name, const char *val,
                    tool_from from, char *err, size_t errlen)
{
    settings_t *f = sp;
    int mode;
    if (o->letter == 'd' || o->letter == 's') {
        tool_opt_t as_seconds = *o;
        as_seconds.type = TOOL_OPT_SECONDS;
        as_seconds.off = S(value);
        if (tool_opt_set(f, &as_seconds, name, val, from, err, errlen) < 0)
            return -1;
        mode = o->letter == 'd' ? LORS_REFRESH_ADD : LORS_REFRESH_FROM_NOW;
    } else if (o->letter == 'a') {
        if (xnd_time_parse(val, &f->value) < 0)
            return lns_err_set(err, errlen, "-a %s: expected \"YYYY-MM-DD HH:MM:SS\" (UTC) or "
                            "seconds since the epoch", val);
        mode = LORS_REFRESH_AT;
    } else {
        mode = LORS_REFRESH_MAX;
    }
    if (f->nmodes++ && f->mode != mode)
        return lns_err_set(err, errlen, "-d, -s, -a and -m are alternatives: give one");
    f->mode = mode;
    return 0;
}

static const tool_opt_t opts[] = {
    TOOL_OPT_EXNODE,
    TOOL_OPT_REWRITE(S(output)),
    TOOL_OPT_FORCE(S(force)),
    {TOOL_OPT_FN, "extend", 'd', NULL, 0, 1, INT64_MAX, NULL, "T",
     "each mapping's expiry + T (s, m, h, d)", set_mode},
    {TOOL_OPT_FN, "from-now", 's', NULL, 0, 1, INT64_MAX, NULL, "T", "expiry = now + T",
     set_mode},
    {TOOL_OPT_FN, "at", 'a', NULL, 0, 0, 0, NULL, "TIME",
     "expiry = TIME: \"YYYY-MM-DD HH:MM:SS\" (UTC) or seconds since\nthe epoch", set_mode},
    {TOOL_OPT_FN, "max", 'm', NULL, 0, 0, 0, NULL, NULL,
     "as long as each depot allows (the default; a depot without\n"
     "that request: the maximum its STATUS tells, else not extended)", set_mode},
    TOOL_OPT_DEPOT_CALLS("30s"),
    TOOL_OPT_VERBOSE("print each mapping's old and new expiry"),
    TOOL_OPT_EVENTS,
    TOOL_OPT_SETTINGS,
    TOOL_OPT_TABLE_END,
};

/* No mode given: as long as each depot allows. */
static int check(void *sp, int argc, char **argv, int first)
{
    settings_t *f = sp;
    if (!f->nmodes)
        f->mode = LORS_REFRESH_MAX;
    return TOOL_EXIT_OK;
}

static const tool_cmd_t cmd = {
    "lors_refresh",
    "Usage: lors_refresh [options] EXNODE\n"
    "Extend the lifetime of every allocation of a network file, and record the new expiry\n"
    "times in its exNode.\n\n",
    "\nThe event stream: BEGIN, MAPPING per mapping, REFRESH or FAILURE per mapping, END.\n"
    "Exit: 0 ok, 2 usage, 3 exNode, 4 local I/O (also the events file; -o exists, without\n"
    "--force), 6 nothing extended: every lease had expired (one line says when), 8 some\n"
    "mappings could not be extended (each is named on stderr; the others were), 9 internal,\n"
    "12 another program holds the exNode's update lock or changed it meanwhile (not\n"
    "replaced).  See lors_refresh(1).\n",
    opts, sizeof(settings_t), check,
};


static void fmt_time(int64_t t, char *buf, size_t size)
{
    if (t == XND_TIME_UNKNOWN || t <= 0)
        snprintf(buf, size, "-");
    else
        xnd_time_format(t, buf, size);
}

/* The names of the modes on the event stream's BEGIN line. */
static const char *const modes[] = {"-", "extend", "from-now", "at", "max"};

int main(int argc, char **argv)
{
    settings_t f;
    tool_feed_t feed = {0};
    lors_refresh_opts_t ro;
    lors_refresh_report_t rep = {0};
    xnd_t *x = NULL;
    int code, lrc, replace;
    tool_depot_name_t *where = NULL;
    tool_rewrite_t rw;
    int64_t bytes = 0, start;
    double secs = 0;
    const char *path, *out;

    /* the update lock from the read to the write: what the depots were told (extended
     * leases, freed allocations) cannot be taken back if another program's version won */
    code = tool_opt_exnode_rw(&cmd, argc, argv, &f, &f.output, &f.force, 1, &path, &x, &rw,
                              &out, &replace);
    if (code)
        return code;
    if (!(where = tool_mapping_depots(TOOL, x))) {
        code = TOOL_EXIT_INTERNAL;
        goto done;
    }

    lors_refresh_opts_init(&ro);
    ro.mode = (lors_refresh_mode)f.mode;
    ro.value = f.value;
    ro.threads = f.c.threads;
    ro.timeout_s = (int)f.c.timeout;
    code = tool_feed_open_exnode(TOOL, &feed, f.c.events, "refresh", &ro.on_event, &ro.event_arg,
                                 path, x, "mode=%s value=%" PRId64,
                                 modes[ro.mode >= LORS_REFRESH_ADD && ro.mode <= LORS_REFRESH_MAX
                                           ? ro.mode : 0],
                                 ro.mode == LORS_REFRESH_MAX ? -1 : ro.value);
    if (code)
        goto done;

    start = lns_mono_ns();
    lrc = lors_refresh(&ro, x, &rep);
    secs = (double)(lns_mono_ns() - start) / 1e9;
    for (size_t i = 0; i < rep.n; i++)
        if (rep.items[i].ok && (size_t)rep.items[i].mapping < x->nmaps)
            bytes += x->maps[rep.items[i].mapping]->logical_length;
    if (lrc != LORS_OK && lrc != LORS_E_PARTIAL) {
        tool_error(TOOL, "%s: %s", path, rep.error[0] ? rep.error : lors_strerror(lrc));
        code = tool_exit_code(lrc);
        goto done;
    }
    int64_t now = lns_now_s(), last;
    if (rep.n > 0 && rep.failed == rep.n && lors_leases_expired(x, 0, -1, now, &last)) {
        char when[32];
        fmt_time(last, when, sizeof when);
        tool_error(TOOL, "%s: nothing extended: the file's leases expired at %s UTC; its depots "
                   "no longer hold its %zu allocations", path, when, rep.n);
        code = TOOL_EXIT_NO_DATA;
        goto done;
    }
    code = tool_put_exnode(TOOL, x, out, replace, &rw);
    if (code == TOOL_EXIT_CHANGED)
        tool_error(TOOL, "%s", rw.why);
    if (code)
        goto done;
    for (size_t i = 0; i < rep.n; i++) {
        const lors_refresh_item_t *it = &rep.items[i];
        const xnd_mapping_t *m = it->mapping >= 0 && (size_t)it->mapping < x->nmaps
                                     ? x->maps[it->mapping] : NULL;
        const char *dep = m ? where[it->mapping] : "-";
        char t0[32], t1[32];
        fmt_time(it->old_end, t0, sizeof t0);
        fmt_time(it->new_end, t1, sizeof t1);
        if (!it->ok && it->ibp_err == IBP_E_CAP_NOT_FOUND && m &&
            m->end.epoch != XND_TIME_UNKNOWN && m->end.epoch <= now) {
            fmt_time(m->end.epoch, t0, sizeof t0);
            tool_error(TOOL, "mapping %d (%s): not extended: its lease expired at %s UTC",
                       it->mapping, dep, t0);
        } else if (!it->ok)
            tool_error(TOOL, "mapping %d (%s): not extended: %s", it->mapping, dep,
                           it->why[0] ? it->why : ibp_strerror(it->ibp_err));
        else if (f.c.verbose)
            fprintf(stderr, "%s: mapping %d (%s): %s -> %s\n", TOOL, it->mapping, dep, t0, t1);
    }
    code = lrc == LORS_E_PARTIAL ? TOOL_EXIT_PARTIAL : TOOL_EXIT_OK;

done:
    tool_rewrite_end(&rw);
    tool_feed_end(&feed, bytes, secs, code);
    lors_refresh_report_free(&rep);
    xnd_free(x);
    free(where);
    tool_opt_free(&f);
    return code;
}
