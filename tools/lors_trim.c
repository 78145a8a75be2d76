/* lors_trim.c -- lors_trim: remove mappings from a network file, and optionally free them.
 *
 * A thin front end over lors_trim() (lors.h).  The selection is -m numbers, --depot depots
 * and -u (dead ones), united as the library defines.  Safety comes from the library: unless
 * --force, a trim that would leave some byte with no copy at all is refused and the exNode is
 * not touched (not even rewritten).  With -d the exNode is written even when some DECRs
 * fail, since the mappings are gone from it either way; the failures are listed and the exit
 * code is 8.  --events writes BEGIN, the exNode as read (MAPPING lines), one TRIM per removed
 * mapping as the library reports it, and END with the exit code (docs/events.md).  -o
 * never replaces a file other than the input unless --force, checked before any depot call.
 * What -d frees, every copy of the exNode loses: one line on stderr says so and points to
 * lors_share, which hands out exNodes that cannot free the owner's allocations.
 */
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lns_time.h"
#include "lors.h"
#include "tool.h"
#include "tool_opt.h"
#include "lns_err.h"

static const char *TOOL = "lors_trim";

#define MAX_DEPOTS 64
#define MAX_RANGES 1024

typedef struct settings {
    tool_common_t c;
    const char *output;
    int ranges[MAX_RANGES][2]; /* -m: inclusive [lo, hi] */
    size_t nranges;
    lors_depot_t depots[MAX_DEPOTS];
    size_t ndepots;
    int dead, free_allocs, exnode_only, force;
} settings_t;

/* "0,3,5-7" into f->ranges.  Checked against the exNode's size later, once it is read. */
static int set_list(void *sp, const tool_opt_t *o, const char *name, const char *s,
                    tool_from from, char *err, size_t errlen)
{
    settings_t *f = sp;
    const char *p = s;
    while (*p) {
        char *end;
        long lo, hi;
        if (*p < '0' || *p > '9')
            goto bad;
        lo = strtol(p, &end, 10);
        hi = lo;
        if (*end == '-') {
            if (end[1] < '0' || end[1] > '9')
                goto bad;
            hi = strtol(end + 1, &end, 10);
        }
        if (lo > INT_MAX || hi > INT_MAX || hi < lo)
            goto bad;
        if (f->nranges == MAX_RANGES)
            return lns_err_set(err, errlen, "-m: more than %d numbers or ranges", MAX_RANGES);
        f->ranges[f->nranges][0] = (int)lo;
        f->ranges[f->nranges][1] = (int)hi;
        f->nranges++;
        if (*end == ',' && end[1])
            end++;
        else if (*end)
            goto bad;
        p = end;
    }
    if (p == s)
        goto bad;
    return 0;
bad:
    lns_err_set(err, errlen, "-m %s: expected mapping numbers like 0,3,5-7", s);
    return -1;
}

/* --depot, repeatable */
static int set_depot(void *sp, const tool_opt_t *o, const char *name, const char *val,
                     tool_from from, char *err, size_t errlen)
{
    settings_t *f = sp;
    if (f->ndepots == MAX_DEPOTS)
        return lns_err_set(err, errlen, "--depot: at most %d", MAX_DEPOTS);
    if (lors_depot_parse(val, &f->depots[f->ndepots]) != LORS_OK)
        return lns_err_set(err, errlen, "--depot %s: expected host[:port][/rid][#sha256:PIN]",
                           val);
    lors_depot_pins_use(&f->depots[f->ndepots], 1);
    f->ndepots++;
    return 0;
}

#define S(field) TOOL_OFF(settings_t, field)

static const tool_opt_t opts[] = {
    TOOL_OPT_EXNODE,
    TOOL_OPT_REWRITE(S(output)),
    {TOOL_OPT_FN, "mappings", 'm', NULL, 0, 0, 0, NULL, "LIST",
     "these mapping numbers, as lors_ls shows them: \"0,3,5-7\"", set_list},
    {TOOL_OPT_FN, "depot", 0, NULL, 0, 0, 0, NULL, "H:P[/RID]",
     "every mapping on this depot (repeatable)", set_depot},
    {TOOL_OPT_SWITCH, "dead", 'u', NULL, S(dead), 1, 0, NULL, NULL,
     "only mappings whose depot or allocation is gone (alone: all\nof those)", NULL},
    {TOOL_OPT_SWITCH, "free", 'd', NULL, S(free_allocs), 1, 0, NULL, NULL,
     "also free the allocations (DECR of the read count): copies\n"
     "of this exNode (cp) lose those bytes too; share with lors_share", NULL},
    {TOOL_OPT_SWITCH, "exnode-only", 'n', NULL, S(exnode_only), 1, 0, NULL, NULL,
     "only edit the exNode (the default)", NULL},
    /* one --force for both safeguards of lors_trim, as TOOL_OPT_FORCE names it elsewhere */
    {TOOL_OPT_SWITCH, "force", 0, NULL, S(force), 1, 0, NULL, NULL,
     "remove even if some bytes are left with no copy at all; and\noverwrite an existing -o "
     "FILE", NULL},
    TOOL_OPT_DEPOT_CALLS("30s"),
    TOOL_OPT_VERBOSE("print the numbers of the removed mappings"),
    TOOL_OPT_EVENTS,
    TOOL_OPT_SETTINGS,
    TOOL_OPT_TABLE_END,
};

/* -d and -n exclude each other, and something must be chosen. */
static int check(void *sp, int argc, char **argv, int first)
{
    const settings_t *f = sp;
    if (f->free_allocs && f->exnode_only)
        return tool_usage(TOOL, "-d frees the allocations, -n only edits the exNode: "
                                "choose one");
    if (!f->nranges && !f->ndepots && !f->dead)
        return tool_usage(TOOL, "nothing to remove: give -m, --depot or -u");
    return TOOL_EXIT_OK;
}

static const tool_cmd_t cmd = {
    "lors_trim",
    "Usage: lors_trim [options] EXNODE\n"
    "Remove mappings (copies) from a network file's exNode; with -d also free their storage.\n"
    "\n",
    "\nThe event stream: BEGIN, MAPPING per mapping, TRIM per removed one, END.\n"
    "Exit: 0 ok, 2 usage, 3 exNode, 4 local I/O (also the events file; -o exists, without\n"
    "--force), 6 the trim would leave bytes with no copy (nothing changed), 8 removed but\n"
    "some allocations could not be freed, 9 internal, 12 another program holds the exNode's\n"
    "update lock or changed it meanwhile (not replaced).  See lors_trim(1).\n",
    opts, sizeof(settings_t), check,
};



/* The -m ranges as a sorted list of distinct numbers, each checked against the exNode. */
static int expand_list(const settings_t *f, const xnd_t *x, int **out, size_t *n)
{
    unsigned char *sel;
    *out = NULL;
    *n = 0;
    for (size_t i = 0; i < f->nranges; i++)
        if ((size_t)f->ranges[i][1] >= x->nmaps) {
            if (x->nmaps == 0)
                return tool_usage(TOOL, "-m %d: the exNode has no mappings",
                                      f->ranges[i][1]);
            return tool_usage(TOOL, "-m %d: the exNode has %zu mappings (0-%zu)",
                                  f->ranges[i][1], x->nmaps, x->nmaps - 1);
        }
    if (!f->nranges)
        return TOOL_EXIT_OK;
    sel = calloc(x->nmaps, 1);
    *out = malloc(x->nmaps * sizeof **out);
    if (!sel || !*out) {
        free(sel);
        free(*out);
        *out = NULL;
        tool_error(TOOL, "out of memory");
        return TOOL_EXIT_INTERNAL;
    }
    for (size_t i = 0; i < f->nranges; i++)
        for (int k = f->ranges[i][0]; k <= f->ranges[i][1]; k++)
            sel[k] = 1;
    for (size_t k = 0; k < x->nmaps; k++)
        if (sel[k])
            (*out)[(*n)++] = (int)k;
    free(sel);
    return TOOL_EXIT_OK;
}

/* The bytes the removed mappings held (what END calls the bytes the trim handled). */
static int64_t removed_bytes(const lors_trim_report_t *rep, const int64_t *len)
{
    int64_t n = 0;
    for (size_t i = 0; i < rep->nremoved; i++)
        n += len[rep->removed[i]];
    return n;
}

int main(int argc, char **argv)
{
    settings_t f;
    const char *path, *out;
    xnd_t *x = NULL;
    tool_rewrite_t rw;
    int *nums = NULL, code, lrc, replace;
    size_t nnums = 0;
    lors_trim_opts_t to;
    lors_trim_report_t rep = {0};
    tool_feed_t feed = {0};
    tool_depot_name_t *where = NULL;
    int64_t *len = NULL, t0;
    double secs = 0;

    /* the update lock from the read to the write: what the depots were told (extended
     * leases, freed allocations) cannot be taken back if another program's version won */
    code = tool_opt_exnode_rw(&cmd, argc, argv, &f, &f.output, &f.force, 1, &path, &x, &rw,
                              &out, &replace);
    if (code)
        return code;
    code = expand_list(&f, x, &nums, &nnums);
    if (code)
        goto done;
    /* the depots and lengths of the mappings, taken before they leave the exNode, for the
     * messages and the END line */
    len = calloc(x->nmaps ? x->nmaps : 1, sizeof *len);
    if (!len) {
        tool_error(TOOL, "out of memory");
        code = TOOL_EXIT_INTERNAL;
        goto done;
    }
    if (!(where = tool_mapping_depots(TOOL, x))) {
        code = TOOL_EXIT_INTERNAL;
        goto done;
    }
    for (size_t i = 0; i < x->nmaps; i++)
        len[i] = x->maps[i]->logical_length;

    lors_trim_opts_init(&to);
    to.mappings = nums;
    to.nmappings = nnums;
    to.depots = f.depots;
    to.ndepots = f.ndepots;
    to.dead = f.dead;
    to.free_allocs = f.free_allocs;
    to.force = f.force;
    to.threads = f.c.threads;
    to.timeout_s = (int)f.c.timeout;
    code = tool_feed_open_exnode(TOOL, &feed, f.c.events, "trim", &to.on_event, &to.event_arg,
                                 path, x, "selected=%zu depots=%zu dead=%d free=%d force=%d",
                                 to.nmappings, to.ndepots, to.dead, to.free_allocs, to.force);
    if (code)
        goto done;

    t0 = lns_mono_ns();
    lrc = lors_trim(&to, x, &rep);
    secs = (double)(lns_mono_ns() - t0) / 1e9;
    if (lrc != LORS_OK && lrc != LORS_E_PARTIAL) {
        tool_error(TOOL, "%s: %s", path, rep.error[0] ? rep.error : lors_strerror(lrc));
        code = tool_exit_code(lrc);
        goto done;
    }
    /* nothing removed and the output is the input file: leave the file alone */
    if (rep.nremoved > 0 || f.output || strcmp(out, "-") == 0) {
        code = tool_put_exnode(TOOL, x, out, replace, &rw);
        if (code == TOOL_EXIT_CHANGED)
            tool_error(TOOL, "%s", rw.why);
        if (code)
            goto done;
    }
    /* an exNode is a set of keys: cp of it names the same allocations, and nothing on the
     * depot tells the copies apart (issue 36) */
    size_t freed = f.free_allocs ? rep.nremoved - rep.nunfreed : 0;
    if (freed > 0)
        tool_error(TOOL, "freed %zu allocation%s: copies of this exNode (cp) lose %s bytes "
                   "too; to give others a file, share it with lors_share", freed,
                   freed == 1 ? "" : "s", freed == 1 ? "its" : "their");
    for (size_t i = 0; i < rep.nunfreed; i++) {
        int k = rep.unfreed[i];
        tool_error(TOOL, "mapping %d (%s): removed from the exNode, but its allocation "
                       "could not be freed", k, k >= 0 && (size_t)k < x->nmaps + rep.nremoved
                                                    ? where[k] : "-");
    }
    if (f.c.verbose) {
        fprintf(stderr, "%s: removed%s:", TOOL, f.free_allocs ? " and freed" : "");
        for (size_t i = 0; i < rep.nremoved; i++)
            fprintf(stderr, " %d", rep.removed[i]);
        fprintf(stderr, "%s\n", rep.nremoved ? "" : " none");
    }
    code = lrc == LORS_E_PARTIAL ? TOOL_EXIT_PARTIAL : TOOL_EXIT_OK;

done:
    tool_rewrite_end(&rw);
    tool_feed_end(&feed, len ? removed_bytes(&rep, len) : 0, secs, code);
    lors_trim_report_free(&rep);
    xnd_free(x);
    free(nums);
    free(where);
    free(len);
    tool_opt_free(&f);
    return code;
}
