/* lors_ls.c -- lors_ls: what a network file is made of, and whether it is still there.
 *
 * A thin front end over lors_probe_all() and lors_ls_logical() (lors.h).  Two views, as in
 * LoRS: the physical one, a line per mapping (its allocation's kind, capabilities, read
 * references, depot, range, expiry and whether it answered), and the logical one, the file
 * cut into ranges with the number of live copies of each, "GAP" where there is none and
 * "UNDER" where there are fewer than the file's copy count.  The exit code tells a script what
 * the eye sees: 8 when some byte has no live copy, 10 when some byte has fewer live copies
 * than the file's.  --json gives the same as one document.  --no-probe asks no depot: a
 * mapping is then dead only if the exNode says it has expired.
 *
 * The copy count: no exNode states one, so it is the number of mappings that hold most of
 * the file's bytes, by the exNode alone (on a tie, the larger).  A range a trim or a failed
 * upload left with fewer mappings is under-replicated by the exNode itself (--no-probe sees
 * it); one whose copies died is so only when the depots are asked.
 *
 * Everything printed that comes from the exNode goes through tool_escape: a file name with
 * a newline or a C1 control cannot forge lines or drive the terminal.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lors.h"
#include "tool.h"
#include "tool_opt.h"

static const char *TOOL = "lors_ls";

typedef struct settings {
    tool_common_t c;
    int logical, physical, human, json, no_probe;
} settings_t;

#define S(field) TOOL_OFF(settings_t, field)

static const tool_opt_t opts[] = {
    TOOL_OPT_EXNODE,
    {TOOL_OPT_SWITCH, "logical", 'l', NULL, S(logical), 1, 0, NULL, NULL,
     "the logical view: file ranges and their live copies", NULL},
    {TOOL_OPT_SWITCH, "physical", 'p', NULL, S(physical), 1, 0, NULL, NULL,
     "the physical view: one line per mapping (default: both)", NULL},
    {TOOL_OPT_SWITCH, "human", 'h', NULL, S(human), 1, 0, NULL, NULL,
     "sizes and offsets as ls -lh prints them: 1.5M, 2.0G", NULL},
    {TOOL_OPT_SWITCH, "json", 0, NULL, S(json), 1, 0, NULL, NULL,
     "one JSON document: metadata, e2e, ranges, mappings, probes", NULL},
    TOOL_OPT_THREADS(1, "8", "probes at once"),
    TOOL_OPT_TIMEOUT("10s", "longest wait of any one probe"),
    TOOL_OPT_IBP_WIRE,
    {TOOL_OPT_SWITCH, "no-probe", 0, NULL, S(no_probe), 1, 0, NULL, NULL,
     "ask no depot; only the exNode's expiry times count", NULL},
    TOOL_OPT_SETTINGS,
    TOOL_OPT_TABLE_END,
};

/* Neither view asked for: both. */
static int check(void *sp, int argc, char **argv, int first)
{
    settings_t *f = sp;
    if (!f->logical && !f->physical)
        f->logical = f->physical = 1;
    return TOOL_EXIT_OK;
}

static const tool_cmd_t cmd = {
    "lors_ls",
    "Usage: lors_ls [options] EXNODE\n"
    "Show a network file's mappings and which of them are alive.\n\n",
    "\nPhysical: N FLAGS REFS DEPOT OFFSET LENGTH EXPIRY FUNCTION STATUS, FLAGS = S|H (soft,\n"
    "hard, - not probed), r, w, m (capabilities present), a (byte array); FUNCTION its\n"
    "end-to-end functions in the order applied, - none; STATUS alive or dead: why, and why\n"
    "lns does not read a function it does not understand.\n"
    "Logical: OFFSET LENGTH LIVE (depots with a live copy lns reads), then GAP where none is\n"
    "left, UNDER\n"
    "where fewer than the file's copy count (copies: the number of mappings over most of its\n"
    "bytes).\n"
    "Exit: 0 ok, 2 usage, 3 exNode, 4 stdout, 8 some bytes have no live copy, 9 internal,\n"
    "10 some bytes have fewer live copies than the file's copy count.  See lors_ls(1).\n",
    opts, sizeof(settings_t), check,
};


/* --no-probe: what the exNode alone says.  Dead only when its end is past. */
static lors_probe_t *probes_from_exnode(const xnd_t *x)
{
    lors_probe_t *p = calloc(x->nmaps ? x->nmaps : 1, sizeof *p);
    int64_t now = (int64_t)time(NULL);
    for (size_t i = 0; p && i < x->nmaps; i++) {
        const xnd_mapping_t *m = x->maps[i];
        p[i].mapping = (int)i;
        p[i].expires = m->end.epoch;
        p[i].alive = m->end.epoch == XND_TIME_UNKNOWN || m->end.epoch > now;
        if (!p[i].alive)
            snprintf(p[i].why, sizeof p[i].why, "expired");
    }
    return p;
}

static void fmt_size(int64_t v, int human, char *buf, size_t size)
{
    if (human)
        tool_human(v, buf, size);
    else
        snprintf(buf, size, "%" PRId64, v);
}

static void fmt_time(int64_t t, char *buf, size_t size)
{
    if (t == XND_TIME_UNKNOWN)
        snprintf(buf, size, "-");
    else
        xnd_time_format(t, buf, size);
}

static void caps_flags(const xnd_mapping_t *m, char *buf)
{
    buf[0] = m->cap[XND_READ] ? 'r' : '-';
    buf[1] = m->cap[XND_WRITE] ? 'w' : '-';
    buf[2] = m->cap[XND_MANAGE] ? 'm' : '-';
    buf[3] = 0;
}

/* The file's copy count: the number of mappings (dead or alive) over most of its bytes, the
 * larger on a tie; 0 for a file no mapping holds.  all: the coverage of every mapping. */
static size_t copy_count(const xnd_range_t *all, size_t n, size_t nmaps)
{
    int64_t *bytes = calloc(nmaps + 1, sizeof *bytes); /* bytes[c]: held by c mappings */
    size_t best = 0;
    if (!bytes)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (all[i].count <= nmaps)
            bytes[all[i].count] += all[i].length;
    for (size_t c = 1; c <= nmaps; c++)
        if (bytes[c] > 0 && (best == 0 || bytes[c] >= bytes[best]))
            best = c;
    free(bytes);
    return best;
}

/* ---- text ---- */

#define NCOL 9
enum { C_N, C_FLAGS, C_REFS, C_DEPOT, C_OFF, C_LEN, C_EXP, C_FUNC, C_STATUS };

typedef struct cells {
    char v[NCOL][4 * (IBP_MAX_HOST + 96)];
} cells_t;

/* The physical view's cells of mapping i (escaped where they come from outside). */
static void physical_cells(const settings_t *f, const xnd_t *x, const lors_probe_t *pr,
                           char (*where)[IBP_MAX_HOST + 96], const lors_func_info_t *fn,
                           size_t i, cells_t *c)
{
    const xnd_mapping_t *m = x->maps[i];
    const lors_probe_t *p = &pr[i];
    char caps[4], why[sizeof p->why + 320];
    caps_flags(m, caps);
    snprintf(c->v[C_N], sizeof c->v[C_N], "%zu", i);
    snprintf(c->v[C_FLAGS], sizeof c->v[C_FLAGS], "%c%sa",
             !p->probed ? '-' : p->probe.reliability == IBP_SOFT ? 'S' : 'H', caps);
    if (p->probed)
        snprintf(c->v[C_REFS], sizeof c->v[C_REFS], "%d", p->probe.read_refs);
    else
        snprintf(c->v[C_REFS], sizeof c->v[C_REFS], "-");
    tool_escape(where[i], c->v[C_DEPOT], sizeof c->v[C_DEPOT]);
    fmt_size(m->exnode_offset, f->human, c->v[C_OFF], sizeof c->v[C_OFF]);
    fmt_size(m->logical_length, f->human, c->v[C_LEN], sizeof c->v[C_LEN]);
    fmt_time(p->expires, c->v[C_EXP], sizeof c->v[C_EXP]);
    tool_escape(fn[i].name[0] ? fn[i].name : "-", c->v[C_FUNC], sizeof c->v[C_FUNC]);
    if (p->alive && fn[i].kind == LORS_FUNC_UNKNOWN)
        snprintf(why, sizeof why, "%s; not read by lns: %s", f->no_probe ? "not probed" : "alive",
                 fn[i].why);
    else if (p->alive)
        snprintf(why, sizeof why, "%s", f->no_probe ? "not probed" : "alive");
    else
        snprintf(why, sizeof why, "dead: %s", p->why[0] ? p->why : ibp_strerror(p->ibp_err));
    tool_escape(why, c->v[C_STATUS], sizeof c->v[C_STATUS]);
}

/* One row of cells: numbers right-aligned, words left-aligned, the last one not padded. */
static void print_row(char (*v)[4 * (IBP_MAX_HOST + 96)], const int *width, const int *right,
                      int ncol)
{
    for (int k = 0; k < ncol; k++) {
        if (k == ncol - 1)
            printf("%s\n", v[k]);
        else
            printf(right[k] ? "%*s " : "%-*s ", width[k], v[k]);
    }
}

static void print_physical(const settings_t *f, const xnd_t *x, const lors_probe_t *pr,
                           char (*where)[IBP_MAX_HOST + 96], const lors_func_info_t *fn)
{
    static const char *head[NCOL] = {"N", "FLAGS", "REFS", "DEPOT", "OFFSET", "LENGTH",
                                     "EXPIRY", "FUNCTION", "STATUS"};
    static const int right[NCOL] = {1, 0, 1, 0, 1, 1, 0, 0, 0};
    int width[NCOL];
    cells_t c; /* 11 KiB */
    for (int k = 0; k < NCOL; k++)
        width[k] = (int)strlen(head[k]);
    for (size_t i = 0; i < x->nmaps; i++) { /* the widths first, then the rows */
        physical_cells(f, x, pr, where, fn, i, &c);
        for (int k = 0; k < NCOL; k++)
            if ((int)strlen(c.v[k]) > width[k])
                width[k] = (int)strlen(c.v[k]);
    }
    for (int k = 0; k < NCOL; k++)
        snprintf(c.v[k], sizeof c.v[k], "%s", head[k]);
    printf("physical:\n");
    print_row(c.v, width, right, NCOL);
    for (size_t i = 0; i < x->nmaps; i++) {
        physical_cells(f, x, pr, where, fn, i, &c);
        print_row(c.v, width, right, NCOL);
    }
}

static void print_logical(const settings_t *f, const xnd_range_t *rg, size_t nrg,
                          size_t copies)
{
    char a[32], b[32], l[32];
    int wa = 6, wb = 6, wl = 4; /* OFFSET, LENGTH, LIVE */
    for (size_t i = 0; i < nrg; i++) {
        fmt_size(rg[i].offset, f->human, a, sizeof a);
        fmt_size(rg[i].length, f->human, b, sizeof b);
        snprintf(l, sizeof l, "%zu", rg[i].count);
        wa = (int)strlen(a) > wa ? (int)strlen(a) : wa;
        wb = (int)strlen(b) > wb ? (int)strlen(b) : wb;
        wl = (int)strlen(l) > wl ? (int)strlen(l) : wl;
    }
    printf("logical:\n%*s %*s %*s\n", wa, "OFFSET", wb, "LENGTH", wl, "LIVE");
    for (size_t i = 0; i < nrg; i++) {
        fmt_size(rg[i].offset, f->human, a, sizeof a);
        fmt_size(rg[i].length, f->human, b, sizeof b);
        printf("%*s %*s %*zu%s\n", wa, a, wb, b, wl, rg[i].count,
               rg[i].count == 0 ? " GAP" : rg[i].count < copies ? " UNDER" : "");
    }
}

/* ---- erasure-coded files: stripes instead of copies ---- */

typedef struct ec_view {
    lors_ec_info_t info;
    lors_ec_stripe_t *st; /* per stripe, counting the live mappings */
    size_t n;
} ec_view_t;

/* The end (exclusive) of the run of stripes from i with the same number of live pieces. */
static size_t run_end(const ec_view_t *ec, size_t i)
{
    size_t j = i + 1;
    while (j < ec->n && ec->st[j].alive == ec->st[i].alive)
        j++;
    return j;
}

static void print_stripes(const settings_t *f, const ec_view_t *ec)
{
    char a[32], b[32];
    int n = ec->info.k + ec->info.m;
    printf("\nstripes (pieces alive of %d, and how many more lost depots each survives):\n", n);
    for (size_t i = 0; i < ec->n; i = run_end(ec, i)) {
        size_t j = run_end(ec, i);
        const lors_ec_stripe_t *e = &ec->st[j - 1];
        fmt_size(ec->st[i].offset, f->human, a, sizeof a);
        fmt_size(e->offset + e->length - 1, f->human, b, sizeof b);
        printf("  bytes %s-%s  stripes %zu-%zu  %d/%d  ", a, b, i, j - 1, ec->st[i].alive, n);
        if (ec->st[i].margin < 0)
            printf("LOST: fewer than %d pieces\n", ec->info.k);
        else
            printf("survives %d more\n", ec->st[i].margin);
    }
}

/* complete: no stripe lost; full: every piece alive.  Lines for the user when not. */
static void ec_summary(const ec_view_t *ec, int *complete, int *full, char *gaps, size_t gsize,
                       char *thin, size_t tsize)
{
    int64_t lost = 0, few = 0;
    size_t first_lost = ec->n, first_few = ec->n;
    int least = ec->info.m;
    for (size_t i = 0; i < ec->n; i++) {
        const lors_ec_stripe_t *e = &ec->st[i];
        if (e->margin < 0) {
            lost += e->length;
            first_lost = first_lost < i ? first_lost : i;
        } else if (e->margin < ec->info.m) {
            few += e->length;
            first_few = first_few < i ? first_few : i;
            least = e->margin < least ? e->margin : least;
        }
    }
    *complete = lost == 0;
    *full = lost == 0 && few == 0;
    if (lost)
        snprintf(gaps, gsize, "%" PRId64 " bytes cannot be rebuilt: fewer than %d of the %d "
                 "pieces of their stripes are alive (first: bytes %" PRId64 "-%" PRId64 ", %d "
                 "alive)", lost, ec->info.k, ec->info.k + ec->info.m, ec->st[first_lost].offset,
                 ec->st[first_lost].offset + ec->st[first_lost].length - 1,
                 ec->st[first_lost].alive);
    if (few)
        snprintf(thin, tsize, "%" PRId64 " bytes are in stripes with pieces lost; the weakest "
                 "survives %d more lost depot%s (first: bytes %" PRId64 "-%" PRId64 ")", few,
                 least, least == 1 ? "" : "s", ec->st[first_few].offset,
                 ec->st[first_few].offset + ec->st[first_few].length - 1);
}

static void print_text(const settings_t *f, const xnd_t *x, const lors_e2e_info_t *e2e,
                       const ec_view_t *ec, const lors_probe_t *pr,
                       char (*where)[IBP_MAX_HOST + 96], const lors_func_info_t *fn,
                       const xnd_range_t *rg, size_t nrg, size_t copies)
{
    const char *name = NULL;
    char a[32], b[32], esc[4 * 4096];
    int64_t size = xnd_size(x);

    xnd_meta_get_string(&x->meta, "filename", &name);
    tool_escape(name ? name : "-", esc, sizeof esc);
    printf("file: %s\n", esc);
    if (size >= 0) {
        fmt_size(size, f->human, a, sizeof a);
        printf("size: %s\n", a);
    } else {
        printf("size: -\n");
    }
    printf("mappings: %zu\ncopies: %zu\n", x->nmaps, copies);
    if (e2e->present) {
        fmt_size(e2e->plain_size, f->human, a, sizeof a);
        fmt_size(e2e->frame_size, f->human, b, sizeof b);
        tool_escape(e2e->chain, esc, sizeof esc);
        printf("e2e: %s, plain size %s, %" PRId64 " frames of %s\n", esc, a, e2e->frames, b);
    }
    if (ec->info.present)
        printf("erasure coding: %d+%d in pieces of %s, %" PRId64 " stripes%s\n", ec->info.k,
               ec->info.m, (fmt_size(ec->info.piece_size, 1, a, sizeof a), a),
               ec->info.stripes, ec->info.bound ? "" : " (lns_ec version 1: digests not bound "
               "to the pieces' places)");
    if (f->physical)
        print_physical(f, x, pr, where, fn);
    if (f->logical && ec->info.present)
        print_stripes(f, ec);
    else if (f->logical)
        print_logical(f, rg, nrg, copies);
}

/* ---- JSON ---- */

static void json_str(const char *s)
{
    tool_json_str(stdout, s);
}

/* A metadata list as an object; a repeated name keeps its first value, as lookups do. */
static void json_meta(const xnd_meta_list_t *l)
{
    int first = 1;
    putchar('{');
    for (size_t i = 0; i < l->n; i++) {
        const xnd_meta_t *m = &l->items[i];
        if (xnd_meta_find(l, m->name) != m)
            continue;
        if (!first)
            putchar(',');
        first = 0;
        json_str(m->name);
        putchar(':');
        switch (m->type) {
        case XND_INTEGER: printf("%" PRId64, m->i); break;
        case XND_DOUBLE: printf("%.17g", m->d); break;
        case XND_META: json_meta(&m->sub); break;
        default: json_str(m->text ? m->text : ""); break;
        }
    }
    putchar('}');
}

static void json_time(int64_t t)
{
    char buf[32];
    if (t == XND_TIME_UNKNOWN) {
        printf("null,\"expires_utc\":null");
        return;
    }
    xnd_time_format(t, buf, sizeof buf);
    printf("%" PRId64 ",\"expires_utc\":\"%s\"", t, buf);
}

static void print_json(const char *path, const settings_t *f, const xnd_t *x,
                       const lors_e2e_info_t *e2e, const ec_view_t *ec, const lors_probe_t *pr,
                       char (*where)[IBP_MAX_HOST + 96], const lors_func_info_t *fn,
                       const xnd_range_t *rg, size_t nrg, int complete, size_t copies,
                       int under)
{
    char caps[4];
    printf("{\"exnode\":");
    json_str(path);
    printf(",\"size\":");
    if (xnd_size(x) >= 0)
        printf("%" PRId64, xnd_size(x));
    else
        printf("null");
    printf(",\"metadata\":");
    json_meta(&x->meta);
    printf(",\"e2e\":");
    if (e2e->present) {
        printf("{\"chain\":");
        json_str(e2e->chain);
        printf(",\"plain_size\":%" PRId64 ",\"frame_size\":%" PRId64 ",\"frames\":%" PRId64 "}",
               e2e->plain_size, e2e->frame_size, e2e->frames);
    } else {
        printf("null");
    }
    printf(",\"ec\":");
    if (ec->info.present) {
        printf("{\"k\":%d,\"m\":%d,\"piece_size\":%" PRId64 ",\"stripes\":%" PRId64
               ",\"runs\":[", ec->info.k, ec->info.m, ec->info.piece_size, ec->info.stripes);
        for (size_t i = 0; i < ec->n; i = run_end(ec, i)) {
            size_t j = run_end(ec, i);
            const lors_ec_stripe_t *e = &ec->st[j - 1];
            printf("%s{\"offset\":%" PRId64 ",\"length\":%" PRId64 ",\"first\":%zu,"
                   "\"last\":%zu,\"alive\":%d,\"survives\":%d}", i ? "," : "",
                   ec->st[i].offset, e->offset + e->length - ec->st[i].offset, i, j - 1,
                   ec->st[i].alive, ec->st[i].margin);
        }
        printf("],\"version\":%d,\"bound\":%s}", ec->info.version,
               ec->info.bound ? "true" : "false");
    } else {
        printf("null");
    }
    printf(",\"probed\":%s,\"complete\":%s,\"copies\":%zu,\"under_replicated\":%s,"
           "\"logical\":[", f->no_probe ? "false" : "true", complete ? "true" : "false", copies,
           under ? "true" : "false");
    for (size_t i = 0; i < nrg; i++)
        printf("%s{\"offset\":%" PRId64 ",\"length\":%" PRId64 ",\"live\":%zu}", i ? "," : "",
               rg[i].offset, rg[i].length, rg[i].count);
    printf("],\"mappings\":[");
    for (size_t i = 0; i < x->nmaps; i++) {
        const xnd_mapping_t *m = x->maps[i];
        const lors_probe_t *p = &pr[i];
        caps_flags(m, caps);
        printf("%s{\"n\":%zu,\"depot\":", i ? "," : "", i);
        json_str(where[i]);
        printf(",\"offset\":%" PRId64 ",\"length\":%" PRId64 ",\"alloc_offset\":%" PRId64
               ",\"alloc_length\":%" PRId64 ",\"caps\":\"%s\",\"expires\":",
               m->exnode_offset, m->logical_length, m->alloc_offset, m->alloc_length, caps);
        json_time(p->expires);
        printf(",\"alive\":%s,\"why\":", p->alive ? "true" : "false");
        if (p->alive)
            printf("null");
        else
            json_str(p->why[0] ? p->why : ibp_strerror(p->ibp_err));
        printf(",\"function\":");
        if (fn[i].name[0])
            json_str(fn[i].name);
        else
            printf("null");
        printf(",\"readable\":%s,\"unreadable_why\":",
               fn[i].kind == LORS_FUNC_UNKNOWN ? "false" : "true");
        if (fn[i].kind == LORS_FUNC_UNKNOWN)
            json_str(fn[i].why);
        else
            printf("null");
        if (p->probed)
            printf(",\"probe\":{\"reliability\":\"%s\",\"read_refs\":%d,\"write_refs\":%d,"
                   "\"cur_size\":%" PRIu64 ",\"max_size\":%" PRIu64 ",\"seconds_left\":%" PRId64
                   "}}",
                   p->probe.reliability == IBP_SOFT ? "soft" : "hard", p->probe.read_refs,
                   p->probe.write_refs, p->probe.cur_size, p->probe.max_size,
                   p->probe.seconds_left);
        else
            printf(",\"probe\":null}");
    }
    printf("]}\n");
}

/* 1 if no range is a gap; else 0 and a line for the user: how many bytes, where the first
 * (unread: some mapping has a function lns does not read, which counts as no copy). */
static int gap_summary(const xnd_range_t *rg, size_t nrg, int unread, char *buf, size_t size)
{
    int64_t lost = 0, first_off = 0, first_len = 0;
    size_t ngaps = 0;
    for (size_t i = 0; i < nrg; i++)
        if (rg[i].count == 0) {
            if (!ngaps++) {
                first_off = rg[i].offset;
                first_len = rg[i].length;
            }
            lost += rg[i].length;
        }
    if (!ngaps)
        return 1;
    snprintf(buf, size, "%" PRId64 " bytes in %zu range%s have no live copy%s (first: bytes %"
             PRId64 "-%" PRId64 ")", lost, ngaps, ngaps == 1 ? "" : "s",
             unread ? " that lns reads" : "", first_off, first_off + first_len - 1);
    return 0;
}

/* 1 if no range has live copies but fewer than copies; else 0 and a line for the user. */
static int under_summary(const xnd_range_t *rg, size_t nrg, size_t copies, char *buf,
                         size_t size)
{
    int64_t thin = 0;
    size_t n = 0, first = 0;
    for (size_t i = 0; i < nrg; i++)
        if (rg[i].count > 0 && rg[i].count < copies) {
            if (!n++)
                first = i;
            thin += rg[i].length;
        }
    if (!n)
        return 1;
    snprintf(buf, size, "%" PRId64 " bytes in %zu range%s have fewer than %zu live copies "
             "(first: bytes %" PRId64 "-%" PRId64 ", %zu live)", thin, n, n == 1 ? "" : "s",
             copies, rg[first].offset, rg[first].offset + rg[first].length - 1,
             rg[first].count);
    return 0;
}

int main(int argc, char **argv)
{
    settings_t f;
    lors_e2e_info_t e2e;
    ec_view_t ec = {0};
    lors_probe_t *pr = NULL;
    xnd_range_t *rg = NULL, *all = NULL;
    size_t nrg = 0, nall = 0, copies = 0;
    xnd_t *x = NULL;
    int code, lrc, complete = 1, full = 1;
    tool_depot_name_t *where = NULL;
    lors_func_info_t *fn = NULL;
    char err[256], gaps[256], thin[256];
    const char *path;

    code = tool_opt_exnode(&cmd, argc, argv, &f, &path, &x);
    if (code)
        return code;
    if (lors_e2e_info(x, &e2e, err, sizeof err) != LORS_OK) { /* checked on reading */
        tool_error(TOOL, "%s: %s", path, err);
        code = TOOL_EXIT_EXNODE;
        goto done;
    }
    if (!(where = tool_mapping_depots(TOOL, x))) {
        code = TOOL_EXIT_INTERNAL;
        goto done;
    }

    if (f.no_probe) {
        pr = probes_from_exnode(x);
        lrc = pr ? LORS_OK : LORS_E_NOMEM;
    } else {
        int threads = f.c.threads, timeout = (int)f.c.timeout;
        lrc = lors_probe_all(x, threads, timeout, &pr);
    }
    if (lrc == LORS_OK)
        lrc = lors_ls_logical(x, pr, &rg, &nrg);
    if (lrc == LORS_OK && xnd_coverage(x, NULL, NULL, &all, &nall) != XND_OK)
        lrc = LORS_E_NOMEM; /* the copies asked for: mappings, even two on one depot */
    if (lrc != LORS_OK) {
        tool_error(TOOL, "%s: probing the mappings: %s", path, lors_strerror(lrc));
        code = tool_exit_code(lrc);
        goto done;
    }
    copies = copy_count(all, nall, x->nmaps);
    /* what each mapping's function means, once for every view */
    if (!(fn = calloc(x->nmaps ? x->nmaps : 1, sizeof *fn))) {
        code = TOOL_EXIT_INTERNAL;
        goto done;
    }
    int unread = 0;
    for (size_t i = 0; i < x->nmaps; i++) {
        lors_func_info(x, i, &fn[i]);
        unread |= fn[i].kind == LORS_FUNC_UNKNOWN;
    }
    complete = gap_summary(rg, nrg, unread, gaps, sizeof gaps);
    full = under_summary(rg, nrg, copies, thin, sizeof thin);
    if (lors_ec_info(x, &ec.info, err, sizeof err) != LORS_OK) {
        tool_error(TOOL, "%s: %s", path, err);
        code = TOOL_EXIT_EXNODE;
        goto done;
    }
    if (ec.info.present) { /* pieces per stripe, not copies, say what is left */
        if ((lrc = lors_ec_stripes(x, pr, &ec.st, &ec.n)) != LORS_OK) {
            tool_error(TOOL, "%s: stripes: %s", path, lors_strerror(lrc));
            code = tool_exit_code(lrc);
            goto done;
        }
        copies = 1;
        ec_summary(&ec, &complete, &full, gaps, sizeof gaps, thin, sizeof thin);
    }

    if (f.json)
        print_json(path, &f, x, &e2e, &ec, pr, where, fn, rg, nrg, complete, copies, !full);
    else
        print_text(&f, x, &e2e, &ec, pr, where, fn, rg, nrg, copies);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        tool_error(TOOL, "writing to stdout failed");
        code = TOOL_EXIT_IO;
        goto done;
    }
    if (!complete) {
        tool_error(TOOL, "%s: %s", path, gaps);
        code = TOOL_EXIT_PARTIAL;
        goto done;
    }
    if (!full) {
        tool_error(TOOL, "%s: %s", path, thin);
        code = TOOL_EXIT_DEGRADED;
        goto done;
    }
    code = TOOL_EXIT_OK;

done:
    free(fn);
    free(ec.st);
    free(pr);
    free(rg);
    free(all);
    free(where);
    xnd_free(x);
    tool_opt_free(&f);
    return code;
}
