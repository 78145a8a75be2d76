/* lors_augment.c -- lors_augment: more copies of a network file, copied depot to depot.
 *
 * A thin front end over lors_augment() (lors.h): settings come from the defaults, then the
 * rc file, then the flags; the exNode is read whole, augmented in memory and written back
 * atomically only when every new copy is complete, so a failed run leaves the file as it
 * was.  Where a depot could not SEND and the bytes went through this client instead, that
 * is said on stderr even without -V: the user pays for that bandwidth and must know.
 *
 * The new copies never outlive a run that cannot record them: a failure, an interrupt
 * (SIGINT, SIGTERM: exit 130, 143) or an exNode that cannot be written frees them, in one
 * line.  -o never replaces an existing file other than the input without --force, checked
 * before anything is allocated.
 */
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lns_err.h"
#include "lors.h"
#include "tool_lbone.h"
#include "tool.h"
#include "tool_opt.h"

static const char *TOOL = "lors_augment";

/* What the defaults, the rc file and the flags said (tool_opt.h). */
typedef struct settings {
    tool_common_t c;
    const char *output, *depots;
    tool_lbone_opts_t lb;   /* -H/--lbone, -P, -l, -m */
    int new_only, balance, no_relay, copies, reliability, force;
    int64_t duration, offset, length, provisional;
    int ec_k, ec_m, ec_off;   /* --ec K+M, --ec off: convert */
    int64_t ec_piece;
} settings_t;

#define S(field) TOOL_OFF(settings_t, field)

static int set_ec(void *sp, const tool_opt_t *o, const char *name, const char *val,
                  tool_from from, char *err, size_t errlen)
{
    settings_t *s = sp;
    s->ec_off = strcasecmp(val, "off") == 0 || strcasecmp(val, "none") == 0;
    if (s->ec_off)
        s->ec_k = s->ec_m = 0;
    else if (lors_ec_parse(val, &s->ec_k, &s->ec_m) != LORS_OK) {
        lns_err_set(err, errlen, "%s %s: expected K+M such as 4+2 (K 1..32 data pieces, M "
                    "1..16 parity pieces), or off", name, val);
        return -1;
    }
    return 0;
}

static const tool_opt_t opts[] = {
    TOOL_OPT_EXNODE,
    TOOL_OPT_REWRITE(S(output)),
    TOOL_OPT_FORCE(S(force)),
    {TOOL_OPT_SWITCH, "new-only", 'n', NULL, S(new_only), 1, 0, NULL, NULL,
     "write only the new copies to -o (which is then required)", NULL},
    {TOOL_OPT_SWITCH, "balance", 'B', NULL, S(balance), 1, 0, NULL, NULL,
     "add copies only where fewer than -c live copies exist", NULL},
    /* no rc keyword: rc COPIES is how many copies a file should have, the target of -B,
     * not a number of copies to add on every run */
    {TOOL_OPT_INT, "copies", 'c', NULL, S(copies), 1, 64, NULL, "N",
     "copies to add, default 1 (with -B: live copies wanted,\ndefault the rc file's COPIES, "
     "else 1)", NULL},
    TOOL_OPT_DEPOTS(S(depots), S(lb)),
    {TOOL_OPT_DURATION, "duration", 'd', "DURATION", S(duration), 1, INT64_MAX, "1d", "T",
     "lifetime of the new copies (s, m, h, d; -1 or max: each\ndepot's maximum)", NULL},
    TOOL_OPT_PROVISIONAL(S(provisional)),
    TOOL_OPT_STORAGE(S(reliability)),
    TOOL_OPT_DEPOT_CALLS("3m"),
    TOOL_OPT_RANGE(S(offset), S(length),
                   "only the pieces holding bytes from N on (K, M, G, T)",
                   "... and before N + this"),
    {TOOL_OPT_SWITCH, "no-relay", 0, NULL, S(no_relay), 1, 0, NULL, NULL,
     "fail a piece whose SEND fails instead of copying it through\nthis client", NULL},
    /* no rc keywords: a conversion is asked for, never a standing setting */
    {TOOL_OPT_FN, "ec", 0, NULL, 0, 0, 0, NULL, "K+M|off",
     "convert: store the file again erasure coded (K data and M\nparity pieces a stripe), "
     "or with --ec off as -c copies\n(default the rc file's COPIES, else 2); the old "
     "copies are\nfreed once the new exNode replaces the input", set_ec},
    {TOOL_OPT_SIZE, "ec-piece", 0, NULL, S(ec_piece), 4096, 64 << 20, "1M", "N",
     "bytes per piece with --ec (a multiple of 4K)", NULL},
    TOOL_OPT_VERBOSE("print a report at the end"),
    TOOL_OPT_EVENTS,
    TOOL_OPT_PROGRESS,
    TOOL_OPT_QUIET('q'),
    TOOL_OPT_LBONE(S(lb)),
    TOOL_OPT_SETTINGS,
    TOOL_OPT_TABLE_END,
};

static int check(void *sp, int argc, char **argv, int first)
{
    const settings_t *f = sp;
    if (f->new_only && !f->output)
        return tool_usage(TOOL, "-n writes only the new copies: give -o FILE for them");
    if (f->ec_k || f->ec_off) {
        const char *bad = f->new_only ? "-n" : f->balance ? "-B" : f->offset >= 0 ? "-O"
                          : f->length >= 0 ? "-L" : NULL;
        if (bad)
            return tool_usage(TOOL, "--ec converts the whole file: leave out %s", bad);
        if (f->ec_k && f->copies != TOOL_UNSET_INT)
            return tool_usage(TOOL, "--ec %d+%d replaces copies: leave out -c %d", f->ec_k,
                              f->ec_m, f->copies);
    }
    return TOOL_EXIT_OK;
}

static const tool_cmd_t cmd = {
    "lors_augment",
    "Usage: lors_augment [options] EXNODE\n"
    "Add copies of a network file's data on more depots.  The bytes go depot to depot (IBP\n"
    "SEND); where that fails they are relayed through this client and the tool says so.\n"
    "An erasure-coded file gets back its missing pieces instead, decoded from survivors.\n"
    "--ec K+M (or off) converts the file to erasure coding (or back to copies).\n\n",
    "\nExit: 0 ok, 2 usage, 3 exNode, 4 local I/O (also: -o exists, without --force), 5 depots,\n"
    "6 no live copy of some bytes, 9 internal, 12 the exNode changed meanwhile (not replaced,\n"
    "the new copies freed), 130 SIGINT, 143 SIGTERM.  See lors_augment(1).\n",
    opts, sizeof(settings_t), check,
};



/* The event stream's BEGIN line: what this augment is, for a reader that sees nothing else. */
static void begin_line(tool_events_t *es, const char *path, const xnd_t *x,
                       const lors_augment_opts_t *ao)
{
    char file[3 * 4096], list[4096] = "", d[IBP_MAX_HOST + IBP_MAX_RID + 16];
    char enc[3 * sizeof list];
    if (!es)
        return;
    tool_events_encode(path, file, sizeof file);
    for (size_t i = 0; i < ao->up.ndepots && strlen(list) + sizeof d + 2 < sizeof list; i++) {
        lors_depot_format(&ao->up.depots[i], d, sizeof d);
        if (i)
            strcat(list, ",");
        strcat(list, d);
    }
    tool_events_encode(list, enc, sizeof enc);
    tool_events_printf(es, "BEGIN", "op=augment exnode=%s size=%" PRId64 " copies=%d balance=%d "
                         "offset=%" PRId64 " length=%" PRId64 " relay=%d depots=%s", file,
                         xnd_extent(x), ao->up.copies, ao->balance, ao->offset, ao->length,
                         ao->relay, enc);
}

/* The depots for the new copies; from the L-Bone, with room for pieces as large as the
 * largest mapping. */
static int pick_depots(const settings_t *f, lors_augment_opts_t *ao,
                       const xnd_t *x, lors_depot_t **depots, size_t *ndepots)
{
    tool_lbone_need_t need = {0, 0, ao->up.reliability, ao->up.duration_s};
    for (size_t i = 0; i < x->nmaps; i++)
        if (x->maps[i]->logical_length > need.unit)
            need.unit = x->maps[i]->logical_length;
    int64_t size = xnd_size(x);
    /* checked: an exNode may claim a size near INT64_MAX (then the L-Bone has no room) */
    if (need.unit > 0) {
        int64_t pieces = size > 0 ? size / need.unit + (size % need.unit != 0) : 1;
        if (__builtin_mul_overflow(pieces, (int64_t)ao->up.copies, &need.units))
            need.units = INT64_MAX;
    }
    int code = tool_lbone_depots(TOOL, f->depots, &f->c.rc, &f->lb, &need, ao->up.copies,
                                 f->c.verbose && !f->c.quiet, depots, ndepots);
    if (code)
        return code;
    ao->up.depots = *depots;
    ao->up.ndepots = tool_lbone_cap(&f->lb, &f->c.rc, *ndepots);
    return TOOL_EXIT_OK;
}

/* --ec K+M / --ec off: the file stored again in the other layout (lors_convert); the new
 * exNode goes to out, and when that replaces the input the old allocations are freed, since
 * no exNode names them any more. */
/* The exNode could not be written (code; TOOL_EXIT_CHANGED: another writer's version came
 * first): free the new allocations of nx and say so, with why, in one line. */
static void unwritten(int code, const tool_rewrite_t *rw, const xnd_t *nx,
                      const lors_upload_opts_t *up, lors_freed_t *fr)
{
    char freed[256];
    lors_discard(nx, up->threads, up->timeout_s, fr);
    tool_freed_text(fr, freed, sizeof freed);
    if (code == TOOL_EXIT_CHANGED)
        tool_error(TOOL, "%s; %s", rw->why, freed);
    else
        tool_error(TOOL, "%s", freed);
}

static int convert(settings_t *f, const char *path, const char *out, int replace, const xnd_t *x,
                   tool_rewrite_t *rw)
{
    lors_convert_opts_t co;
    lors_report_t rep = {0};
    lors_ec_info_t ec;
    tool_feed_t feed = {0};
    lors_depot_t *depots = NULL;
    xnd_t *nx = NULL;
    char err[256], freed[160];
    int code;

    if (lors_ec_info(x, &ec, err, sizeof err) != LORS_OK) {
        tool_error(TOOL, "%s: %s", path, err);
        return TOOL_EXIT_EXNODE;
    }
    lors_convert_opts_init(&co);
    if (f->ec_k) {
        co.up.ec_k = f->ec_k;
        co.up.ec_m = f->ec_m;
        co.up.ec_piece = f->ec_piece > 0 ? f->ec_piece : LORS_EC_DEFAULT_PIECE;
        if (ec.present && ec.k == f->ec_k && ec.m == f->ec_m && ec.piece_size == co.up.ec_piece) {
            tool_error(TOOL, "%s is already erasure coded %d+%d with %" PRId64 "-byte pieces",
                       path, ec.k, ec.m, ec.piece_size);
            return TOOL_EXIT_USAGE;
        }
    } else {
        if (!ec.present) {
            tool_error(TOOL, "%s is not erasure coded: nothing to convert (add copies without "
                       "--ec)", path);
            return TOOL_EXIT_USAGE;
        }
        co.up.copies = f->copies != TOOL_UNSET_INT ? f->copies
                       : f->c.rc.copies > 0 ? f->c.rc.copies : 2;
    }
    co.up.duration_s = f->duration;
    co.up.provisional_s = f->provisional;
    co.up.reliability = f->reliability ? f->reliability : IBP_HARD;
    co.up.threads = f->c.threads;
    co.up.timeout_s = (int)f->c.timeout;

    int64_t size = ec.present ? ec.size : xnd_size(x);
    int spread = co.up.ec_k ? co.up.ec_k + co.up.ec_m : co.up.copies;
    code = tool_upload_depots(TOOL, f->depots, &f->c.rc, &f->lb, size,
                              f->c.verbose && !f->c.quiet, &co.up, &depots);
    if (code)
        goto done;

    code = tool_feed_open(TOOL, &feed, f->c.events, "augment",
                          co.up.ec_k ? size / co.up.ec_k * spread : size * co.up.copies,
                          f->c.quiet ? -1 : f->c.progress);
    if (code)
        goto done;
    tool_feed_attach(&feed, &co.up.on_event, &co.up.event_arg);
    if (feed.es) {
        char file[3 * 4096];
        tool_events_encode(path, file, sizeof file);
        tool_events_printf(feed.es, "BEGIN", "op=convert exnode=%s from=%s to=%s", file,
                           ec.present ? "ec" : "copies", co.up.ec_k ? "ec" : "copies");
    }
    co.up.stop = tool_stop_install(TOOL, NULL);
    int lrc = lors_convert(&co, x, &nx, &rep);
    tool_progress_finish(feed.bar);
    feed.bar = NULL;
    if (!f->c.quiet)
        tool_print_issues(TOOL, &rep, 0);
    if (lrc != LORS_OK) {
        tool_freed_text(&rep.freed, freed, sizeof freed);
        if (lrc == LORS_E_STOPPED) {
            tool_error(TOOL, "interrupted; %s", freed);
            code = tool_stop_exit_code();
        } else {
            tool_error(TOOL, "%s: %s; %s", path, rep.error[0] ? rep.error : lors_strerror(lrc),
                       freed);
            code = tool_exit_code(lrc);
        }
        goto done;
    }
    if (strcmp(out, "-") == 0)
        tool_leases_promise(nx, NULL, &co.up);
    code = tool_put_exnode(TOOL, nx, out, replace, rw);
    if (code) {
        unwritten(code, rw, nx, &co.up, &rep.freed);
        goto done;
    }
    code = tool_leases_extend(TOOL, nx, NULL, &co.up, out, rw);
    lors_freed_t old = {0};
    if (rw->in_place && lors_discard(x, co.up.threads, co.up.timeout_s > 10 ? 10 : co.up.timeout_s,
                                 &old) != LORS_OK && !f->c.quiet)
        tool_error(TOOL, "warning: %d old allocation%s could not be freed (depot down); they "
                   "end with their leases", old.unfreed, old.unfreed == 1 ? "" : "s");
    if (f->c.verbose && !f->c.quiet)
        fprintf(stderr, "%s: %s -> %s: %" PRId64 " bytes stored in %d mapping%s; %d old "
                "allocation%s freed; %.2f s\n", TOOL, ec.present ? "erasure coded" : "copies",
                co.up.ec_k ? "erasure coded" : "copies", rep.bytes_stored, rep.mappings,
                rep.mappings == 1 ? "" : "s", old.freed, old.freed == 1 ? "" : "s",
                rep.seconds);
done:
    tool_feed_end(&feed, rep.bytes_stored, rep.seconds, code);
    lors_report_free(&rep);
    xnd_free(nx);
    free(depots);
    return code;
}

int main(int argc, char **argv)
{
    settings_t f;
    tool_feed_t feed = {0};
    lors_augment_opts_t ao;
    lors_report_t rep = {0};
    lors_depot_t *depots = NULL;
    size_t ndepots = 0;
    xnd_t *x = NULL, *added = NULL;
    tool_rewrite_t rw;
    int code, lrc, replace;
    const char *path, *out;
    char freed[160];

    /* no lock held while copying (that may take long): the write is a compare-and-swap */
    code = tool_opt_exnode_rw(&cmd, argc, argv, &f, &f.output, &f.force, 0, &path, &x, &rw,
                              &out, &replace);
    if (code)
        return code;

    if (f.ec_k || f.ec_off) {
        code = convert(&f, path, out, replace, x, &rw);
        goto done;
    }
    lors_ec_info_t ec;
    char err[256];
    if (lors_ec_info(x, &ec, err, sizeof err) != LORS_OK) {
        tool_error(TOOL, "%s: %s", path, err);
        code = TOOL_EXIT_EXNODE;
        goto done;
    }
    if (ec.present && (f.copies != TOOL_UNSET_INT || f.offset >= 0 || f.length >= 0)) {
        code = tool_usage(TOOL, "%s is erasure coded: lors_augment brings back its missing "
                          "pieces; -c, -O and -L do not apply (--ec off converts it to copies)",
                          path);
        goto done;
    }
    lors_augment_opts_init(&ao);
    ao.up.copies = f.copies != TOOL_UNSET_INT ? f.copies
                   : f.balance && f.c.rc.copies > 0 ? f.c.rc.copies : 1;
    ao.up.duration_s = f.duration;
    ao.up.provisional_s = f.provisional;
    ao.up.reliability = f.reliability ? f.reliability : IBP_HARD;
    ao.up.threads = f.c.threads;
    ao.up.timeout_s = (int)f.c.timeout;
    ao.balance = f.balance;
    ao.offset = f.offset >= 0 ? f.offset : 0;
    ao.length = f.length >= 0 ? f.length : -1;
    ao.relay = !f.no_relay;

    code = pick_depots(&f, &ao, x, &depots, &ndepots);
    if (code)
        goto done;
    code = tool_feed_open(TOOL, &feed, f.c.events, "augment", -1,
                              f.c.quiet ? -1 : f.c.progress);
    if (code)
        goto done;
    tool_feed_attach(&feed, &ao.up.on_event, &ao.up.event_arg);
    begin_line(feed.es, path, x, &ao);

    ao.up.stop = tool_stop_install(TOOL, NULL);
    /* the new mappings alone, also without -n: what to free if the exNode cannot be written */
    lrc = lors_augment(&ao, x, &added, &rep);
    tool_progress_finish(feed.bar); /* end the bar's line before any message */
    feed.bar = NULL;
    if (!f.c.quiet)
        tool_print_issues(TOOL, &rep, 1);
    if (lrc == LORS_E_STOPPED) {
        tool_freed_text(&rep.freed, freed, sizeof freed);
        tool_error(TOOL, "interrupted; %s", freed);
        code = tool_stop_exit_code();
        goto done;
    }
    if (lrc != LORS_OK) {
        tool_error(TOOL, "%s: %s", path, rep.error[0] ? rep.error : lors_strerror(lrc));
        code = tool_exit_code(lrc);
        if (rep.freed.freed + rep.freed.unfreed > 0) {
            tool_freed_text(&rep.freed, freed, sizeof freed);
            tool_error(TOOL, "%s", freed);
        }
        goto done;
    }
    /* the new mappings: appended to x, or all of added */
    size_t n0 = x->nmaps - (added ? added->nmaps : 0);
    unsigned char *fresh = calloc(x->nmaps ? x->nmaps : 1, 1);
    if (!fresh) {
        tool_error(TOOL, "out of memory");
        code = TOOL_EXIT_INTERNAL;
        lors_discard(added, ao.up.threads, ao.up.timeout_s, &rep.freed);
        goto done;
    }
    for (size_t i = n0; i < x->nmaps; i++)
        fresh[i] = 1;
    if (strcmp(out, "-") == 0)
        tool_leases_promise(f.new_only ? added : x, f.new_only ? NULL : fresh, &ao.up);
    code = f.new_only ? tool_save_exnode(TOOL, added, out, replace)
                      : tool_put_exnode(TOOL, x, out, replace, &rw);
    if (code == TOOL_EXIT_OK)
        code = f.new_only ? tool_leases_extend(TOOL, added, NULL, &ao.up, out, NULL)
                          : tool_leases_extend(TOOL, x, fresh, &ao.up, out, &rw);
    free(fresh);
    if (code == TOOL_EXIT_PARTIAL)
        goto done;
    if (code) {
        unwritten(code, &rw, added, &ao.up, &rep.freed);
        goto done;
    }
    if (f.c.verbose && !f.c.quiet)
        fprintf(stderr, "%s: %d new mapping%s; %" PRId64 " bytes copied depot to depot, %" PRId64
                " %s; %.2f s\n", TOOL, rep.mappings, rep.mappings == 1 ? "" : "s",
                rep.bytes_sent, ec.present ? rep.bytes_rebuilt : rep.bytes_relayed,
                ec.present ? "decoded from surviving pieces" : "relayed through this client",
                rep.seconds);

done:
    tool_feed_end(&feed, rep.bytes_sent + rep.bytes_relayed, rep.seconds, code);
    lors_report_free(&rep);
    xnd_free(added);
    xnd_free(x);
    free(depots);
    tool_opt_free(&f);
    return code;
}
