/* lors_ls.c -- lors_ls: what a network file is made of, and whether it is still there.
 *
 * A thin front end over lors_probe_all() and lors_ls_logical() (lors.h).  Two views, as in
 * LoRS: the physical one, a line per mapping (its allocation's kind, capabilities, read
 * references, depot, range, expiry and whether it answered), and the logical one, the file
 * cut into ranges with the number of live copies of each, "GAP" where there is none.  The
 * exit code tells a script what the eye sees: 8 when some byte has no live copy.  --json
 * gives the same as one document.  --no-probe asks no depot: a mapping is then dead only if
 * the exNode says it has expired.
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
     "sizes as KiB, MiB, GiB", NULL},
    {TOOL_OPT_SWITCH, "json", 0, NULL, S(json), 1, 0, NULL, NULL,
     "one JSON document: metadata, e2e, ranges, mappings, probes", NULL},
    TOOL_OPT_THREADS(1, "8", "probes at once"),
    TOOL_OPT_TIMEOUT("10s", "longest wait of any one probe"),
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
    "\nPhysical: N FLAGS REFS DEPOT OFFSET LENGTH EXPIRY STATUS, FLAGS = S|H (soft, hard, - not\n"
    "probed), r, w, m (capabilities present), a (byte array); STATUS alive or dead: why.\n"
    "Logical: OFFSET LENGTH LIVE_COPIES, and GAP where no live copy is left.\n"
    "Exit: 0 ok, 2 usage, 3 exNode, 8 some bytes have no live copy, 9 internal.\n"
    "See lors_ls(1).\n",
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

/* ---- text ---- */

static void print_text(const settings_t *f, const xnd_t *x, const lors_e2e_info_t *e2e,
                       const lors_probe_t *pr, char (*where)[IBP_MAX_HOST + 96],
                       const xnd_range_t *rg, size_t nrg)
{
    const char *name = NULL;
    char a[32], b[32], t[32], caps[4];
    int64_t size = xnd_size(x);

    xnd_meta_get_string(&x->meta, "filename", &name);
    printf("file: %s\n", name ? name : "-");
    if (size >= 0) {
        fmt_size(size, f->human, a, sizeof a);
        printf("size: %s\n", a);
    } else {
        printf("size: -\n");
    }
    printf("mappings: %zu\n", x->nmaps);
    if (e2e->present) {
        fmt_size(e2e->plain_size, f->human, a, sizeof a);
        fmt_size(e2e->frame_size, f->human, b, sizeof b);
        printf("e2e: %s, plain size %s, %" PRId64 " frames of %s\n", e2e->chain, a,
               e2e->frames, b);
    }
    if (f->physical) {
        printf("physical:\n");
        for (size_t i = 0; i < x->nmaps; i++) {
            const xnd_mapping_t *m = x->maps[i];
            const lors_probe_t *p = &pr[i];
            char refs[16];
            caps_flags(m, caps);
            if (p->probed)
                snprintf(refs, sizeof refs, "%d", p->probe.read_refs);
            else
                snprintf(refs, sizeof refs, "-");
            snprintf(a, sizeof a, "%" PRId64, m->exnode_offset);
            fmt_size(m->logical_length, f->human, b, sizeof b);
            fmt_time(p->expires, t, sizeof t);
            printf("%zu %c%sa %s %s %s %s %s ", i,
                   !p->probed ? '-' : p->probe.reliability == IBP_SOFT ? 'S' : 'H', caps, refs,
                   where[i], a, b, t);
            if (p->alive)
                printf("%s\n", f->no_probe ? "not probed" : "alive");
            else
                printf("dead: %s\n", p->why[0] ? p->why : ibp_strerror(p->ibp_err));
        }
    }
    if (f->logical) {
        printf("logical:\n");
        for (size_t i = 0; i < nrg; i++) {
            fmt_size(rg[i].length, f->human, b, sizeof b);
            printf("%" PRId64 " %s %zu%s\n", rg[i].offset, b, rg[i].count,
                   rg[i].count ? "" : " GAP");
        }
    }
}

/* ---- JSON ---- */

static void json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            printf("\\%c", ch);
        else if (ch < 0x20)
            printf("\\u%04x", ch);
        else
            putchar(ch);
    }
    putchar('"');
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
                       const lors_e2e_info_t *e2e, const lors_probe_t *pr,
                       char (*where)[IBP_MAX_HOST + 96], const xnd_range_t *rg, size_t nrg,
                       int complete)
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
    printf(",\"probed\":%s,\"complete\":%s,\"logical\":[", f->no_probe ? "false" : "true",
           complete ? "true" : "false");
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

/* 1 if no range is a gap; else 0 and a line for the user: how many bytes, where the first. */
static int gap_summary(const xnd_range_t *rg, size_t nrg, char *buf, size_t size)
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
    snprintf(buf, size, "%" PRId64 " bytes in %zu range%s have no live copy (first: bytes %"
             PRId64 "-%" PRId64 ")", lost, ngaps, ngaps == 1 ? "" : "s", first_off,
             first_off + first_len - 1);
    return 0;
}

int main(int argc, char **argv)
{
    settings_t f;
    lors_e2e_info_t e2e;
    lors_probe_t *pr = NULL;
    xnd_range_t *rg = NULL;
    size_t nrg = 0;
    xnd_t *x = NULL;
    int code, lrc, complete = 1;
    tool_depot_name_t *where = NULL;
    char err[256], gaps[160];
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
    if (lrc != LORS_OK) {
        tool_error(TOOL, "%s: probing the mappings: %s", path, lors_strerror(lrc));
        code = tool_exit_code(lrc);
        goto done;
    }
    complete = gap_summary(rg, nrg, gaps, sizeof gaps);

    if (f.json)
        print_json(path, &f, x, &e2e, pr, where, rg, nrg, complete);
    else
        print_text(&f, x, &e2e, pr, where, rg, nrg);
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
    code = TOOL_EXIT_OK;

done:
    free(pr);
    free(rg);
    free(where);
    xnd_free(x);
    tool_opt_free(&f);
    return code;
}
