/* tool_opt.c -- a program's settings from one table: defaults, the rc file, argv, --help.
 *
 * Each value, whatever its source, goes through one setter, so a bound or a message is
 * written once.  argv is read twice: a first pass only finds --rc, --no-rc, --help and
 * --version (the rc file must be read before the flags that override it); the second
 * applies every flag in order.  The rc file (tool_rc.c reads it) is as strict for a
 * program's own keywords as for the others: a bad value is an error naming FILE:LINE.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lns_units.h"
#include "tool_opt.h"
#include "lns_err.h"

#define FIELD(s, o, type) ((type *)((char *)(s) + (o)->off))
#define OPT_ID 256 /* getopt's value for the entry i: OPT_ID + i */

static int is_option(const tool_opt_t *o)
{
    return o->type != TOOL_OPT_SECTION && o->type != TOOL_OPT_END;
}

/* ---- values ---------------------------------------------------------------------------- */

static int bad(char *err, size_t errlen, const char *name, const char *val, const char *why,
               int64_t min, int64_t max)
{
    char range[96] = "";
    if (max == INT64_MAX)
        snprintf(range, sizeof range, ", at least %lld", (long long)min);
    else if (min != max)
        snprintf(range, sizeof range, " from %lld to %lld", (long long)min, (long long)max);
    lns_err_set(err, errlen, "%s %s: expected %s%s", name, val, why, range);
    return -1;
}

static int set_switch(void *s, const tool_opt_t *o, const char *name, const char *val,
                      char *err, size_t errlen)
{
    int v = (int)o->min;
    if (val) { /* from the rc file */
        char *end;
        if (!strcasecmp(val, "yes") || !strcasecmp(val, "true") || !strcasecmp(val, "on")) {
            v = (int)o->min;
        } else if (!strcasecmp(val, "no") || !strcasecmp(val, "false") ||
                   !strcasecmp(val, "off")) {
            v = 0;
        } else {
            long n = strtol(val, &end, 10);
            if (end == val || *end || n < 0 || n > 9)
                return bad(err, errlen, name, val, "yes, no or a number", 0, 9);
            v = (int)n;
        }
    }
    if (o->off != TOOL_NOFIELD)
        *FIELD(s, o, int) = v;
    return 0;
}

int tool_opt_set(void *s, const tool_opt_t *o, const char *name, const char *val,
                 tool_from from, char *err, size_t errlen)
{
    int64_t v;
    uint64_t u;
    char *end;
    switch (o->type) {
    case TOOL_OPT_SWITCH:
        return set_switch(s, o, name, from == TOOL_FROM_ARGV ? NULL : val, err, errlen);
    case TOOL_OPT_STR:
        *FIELD(s, o, const char *) = val;
        return 0;
    case TOOL_OPT_INT:
        errno = 0;
        v = strtoll(val, &end, 10);
        if (errno || end == val || *end || v < o->min || v > o->max)
            return bad(err, errlen, name, val, "a whole number", o->min, o->max);
        *FIELD(s, o, int) = (int)v;
        return 0;
    case TOOL_OPT_SIZE:
        if (lns_parse_size(val, &u) < 0 || u > (uint64_t)INT64_MAX || (int64_t)u < o->min ||
            (int64_t)u > o->max)
            return bad(err, errlen, name, val, "a size (digits with an optional K, M, G or T)",
                       o->min, o->max);
        *FIELD(s, o, int64_t) = (int64_t)u;
        return 0;
    case TOOL_OPT_DURATION:
        if (strcmp(val, "-1") == 0 || strcasecmp(val, "max") == 0) {
            *FIELD(s, o, int64_t) = -1;
            return 0;
        }
        if (lns_parse_seconds(val, &v) < 0 || v < o->min || v > o->max)
            return bad(err, errlen, name, val, "a duration (s, m, h, d), -1 or max", o->min,
                       o->max);
        *FIELD(s, o, int64_t) = v;
        return 0;
    case TOOL_OPT_SECONDS:
        if (lns_parse_seconds(val, &v) < 0 || v < o->min || v > o->max)
            return bad(err, errlen, name, val, "a duration (digits with an optional s, m, h "
                       "or d)", o->min, o->max);
        *FIELD(s, o, int64_t) = v;
        return 0;
    case TOOL_OPT_FN:
        return o->fn(s, o, name, val, from, err, errlen);
    default:
        return 0;
    }
}

int tool_opt_check(const tool_opt_t *o, tool_opt_type type, const char *name, const char *val,
                   tool_from from, char *err, size_t errlen)
{
    union {
        int i;
        int64_t n;
    } v; /* room for the value of any of those types, at offset 0 */
    tool_opt_t as = *o;
    as.type = type;
    as.off = 0;
    return tool_opt_set(&v, &as, name, val, from, err, errlen);
}

int tool_opt_demo(void *s, const tool_opt_t *o, const char *name, const char *val,
                  tool_from from, char *err, size_t errlen)
{
    *FIELD(s, o, const char *) = "fd:2";
    return 0;
}

int tool_ibp_version_pin(const char *val, char *err, size_t errlen)
{
    char host[IBP_MAX_HOST];
    const char *eq = strrchr(val, '='), *colon;
    int port = IBP_DEFAULT_PORT, v;
    size_t hlen;
    if (!eq)
        return lns_err_set(err, errlen, "expected HOST:PORT=V");
    if (strcmp(eq + 1, "0") == 0)
        v = 0;
    else if (strcmp(eq + 1, "1") == 0)
        v = 1;
    else if (strcasecmp(eq + 1, "auto") == 0)
        v = -1;
    else
        return lns_err_set(err, errlen, "version %s: expected 0, 1 or auto", eq + 1);
    colon = memchr(val, ':', (size_t)(eq - val));
    hlen = (size_t)((colon ? colon : eq) - val);
    if (colon) {
        char *end;
        long n = strtol(colon + 1, &end, 10);
        if (end != eq || n < 1 || n > 65535)
            return lns_err_set(err, errlen, "port %.*s: expected 1..65535",
                               (int)(eq - colon - 1), colon + 1);
        port = (int)n;
    }
    if (hlen == 0 || hlen >= sizeof host)
        return lns_err_set(err, errlen, "expected HOST:PORT=V");
    memcpy(host, val, hlen);
    host[hlen] = 0;
    if (ibp_version_pin(host, port, v) != IBP_OK)
        return lns_err_set(err, errlen, "cannot pin %s", val);
    return 0;
}

int tool_tls_mode(const char *val, char *err, size_t errlen)
{
    int m = strcasecmp(val, "auto") == 0      ? IBP_TLS_AUTO
            : strcasecmp(val, "require") == 0 ? IBP_TLS_REQUIRE
            : strcasecmp(val, "off") == 0     ? IBP_TLS_OFF
                                              : -1;
    if (m < 0)
        return lns_err_set(err, errlen, "expected auto, require or off");
    ibp_tls_mode(m);
    return 0;
}

/* The setter of a process-wide setting that apply(val, why, size) makes or refuses: 0, or -1
 * with "NAME VALUE: why". */
static int set_process(int (*apply)(const char *, char *, size_t), const char *name,
                       const char *val, char *err, size_t errlen)
{
    char why[256];
    if (apply(val, why, sizeof why) < 0)
        return lns_err_set(err, errlen, "%s %s: %s", name, val, why);
    return 0;
}

int tool_opt_tls(void *s, const tool_opt_t *o, const char *name, const char *val,
                 tool_from from, char *err, size_t errlen)
{
    return set_process(tool_tls_mode, name, val, err, errlen);
}

int tool_opt_ibp_version(void *s, const tool_opt_t *o, const char *name, const char *val,
                         tool_from from, char *err, size_t errlen)
{
    return set_process(tool_ibp_version_pin, name, val, err, errlen);
}

int tool_opt_storage(void *s, const tool_opt_t *o, const char *name, const char *val,
                     tool_from from, char *err, size_t errlen)
{
    if (strcasecmp(val, "HARD") == 0)
        *FIELD(s, o, int) = IBP_HARD;
    else if (strcasecmp(val, "SOFT") == 0)
        *FIELD(s, o, int) = IBP_SOFT;
    else
        return lns_err_set(err, errlen, "%s %s: expected HARD or SOFT", name, val);
    return 0;
}

/* ---- the rc file ----------------------------------------------------------------------- */

/* The rc file's text, kept while the program runs: string settings point into it. */
static char **rc_texts;
static size_t rc_ntexts;

static char *keep_text(const char *s)
{
    char **n = realloc(rc_texts, (rc_ntexts + 1) * sizeof *n);
    if (!n)
        return NULL;
    rc_texts = n;
    char *d = strdup(s);
    if (d)
        rc_texts[rc_ntexts++] = d;
    return d;
}

static const tool_opt_t *find_rc(const tool_opt_t *opts, const char *kw)
{
    for (const tool_opt_t *o = opts; o->type != TOOL_OPT_END; o++)
        if (o->rc && strcasecmp(o->rc, kw) == 0)
            return o;
    return NULL;
}

typedef struct rcctx {
    const tool_cmd_t *cmd;
    void *settings;
} rcctx_t;

/* An rc line: the program's own setting through its setter; any other keyword is read (and
 * checked) into the tool_rc_t, where the L-Bone and depot settings live. */
static int rc_line(void *arg, const char *file, int line, const char *kw, char *val, char *err,
                   size_t errlen)
{
    rcctx_t *x = arg;
    tool_common_t *c = x->settings;
    const tool_opt_t *o = find_rc(x->cmd->opts, kw);
    char why[512];
    if (!o)
        return tool_rc_keyword(&c->rc, file, line, kw, val, err, errlen);
    const char *v = keep_text(val);
    if (!v) {
        lns_err_set(err, errlen, "%s:%d: out of memory", file, line);
        return LORS_E_NOMEM;
    }
    if (tool_opt_set(x->settings, o, o->rc, v, TOOL_FROM_RC, why, sizeof why) < 0) {
        lns_err_set(err, errlen, "%s:%d: %s", file, line, why);
        return LORS_E_RC;
    }
    return LORS_OK;
}

/* ---- argv ------------------------------------------------------------------------------ */

typedef struct argtab {
    struct option *longopts;
    char shortopts[256];
} argtab_t;

static int argtab_build(const tool_opt_t *opts, argtab_t *t)
{
    size_t n = 0, k = 0, sp = 0;
    for (const tool_opt_t *o = opts; o->type != TOOL_OPT_END; o++)
        for (const char *a = o->name; a; a = strchr(a, '|') ? strchr(a, '|') + 1 : NULL)
            n++;
    if (!(t->longopts = calloc(n + 1, sizeof *t->longopts)))
        return -1;
    t->shortopts[sp++] = ':';
    for (const tool_opt_t *o = opts; o->type != TOOL_OPT_END; o++) {
        int has_arg = o->type != TOOL_OPT_SWITCH && !(o->type == TOOL_OPT_FN && !o->arg);
        for (const char *a = o->name; a; a = strchr(a, '|') ? strchr(a, '|') + 1 : NULL) {
            size_t len = strcspn(a, "|");
            t->longopts[k].name = strndup(a, len);
            t->longopts[k].has_arg = has_arg ? required_argument : no_argument;
            t->longopts[k].val = OPT_ID + (int)(o - opts);
            k++;
        }
        if (o->letter && sp + 3 < sizeof t->shortopts) {
            t->shortopts[sp++] = o->letter;
            if (has_arg)
                t->shortopts[sp++] = ':';
        }
    }
    t->shortopts[sp] = '\0';
    return 0;
}

static void argtab_free(argtab_t *t)
{
    for (size_t i = 0; t->longopts && t->longopts[i].name; i++)
        free((char *)t->longopts[i].name);
    free(t->longopts);
}

static const tool_opt_t *entry_of(const tool_opt_t *opts, int c)
{
    if (c >= OPT_ID)
        return &opts[c - OPT_ID];
    for (const tool_opt_t *o = opts; o->type != TOOL_OPT_END; o++)
        if (o->letter == c)
            return o;
    return NULL;
}

/* The option as the user wrote it, without its value: "-c", "--copies", "-bs". */
static void written(int argc, char **argv, char *buf, size_t size)
{
    const char *a = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
    if (optarg && optarg == a && optind >= 2)
        a = argv[optind - 2];
    size_t n = strcspn(a, "=");
    if (a[0] == '-' && a[1] != '-' && optarg && optarg > a && optarg < a + strlen(a) &&
        a[n] != '=')
        n = 2; /* -c0 */
    snprintf(buf, size, "%.*s", (int)n, a);
}

static int named(const tool_opt_t *o, const char *want)
{
    return o->name && strcmp(o->name, want) == 0;
}

static const char *plain_tool;
static int plain_quiet;

/* At exit: one line naming the depots spoken to in plaintext (they speak no TLS). */
static void plain_warning(void)
{
    char list[400];
    size_t n = ibp_tls_plain_depots(list, sizeof list);
    if (n && !plain_quiet)
        fprintf(stderr, "%s: warning: %s speak%s no TLS (%s): capabilities and data crossed "
                "to %s in plaintext\n", plain_tool, list, n == 1 ? "s" : "",
                n == 1 ? "an old IBP depot" : "old IBP depots", n == 1 ? "it" : "them");
}

void tool_tls_warn_at_exit(const char *tool, int quiet)
{
    if (plain_tool)
        return;
    plain_tool = tool;
    plain_quiet = quiet;
    atexit(plain_warning);
}

int tool_opt_parse(const tool_cmd_t *cmd, int argc, char **argv, void *s, int *first)
{
    tool_common_t *c = s;
    argtab_t t;
    char err[640], name[64];
    int code = TOOL_EXIT_OK, ch;

    memset(s, 0, cmd->size);
    signal(SIGPIPE, SIG_IGN); /* a reader that went away (exNode, data, player) is EPIPE, exit 4 */
    if (argtab_build(cmd->opts, &t) < 0) {
        tool_error(cmd->name, "out of memory");
        return TOOL_EXIT_INTERNAL;
    }
    /* the defaults: numbers not given are TOOL_UNSET*, everything else is cleared above */
    for (const tool_opt_t *o = cmd->opts; o->type != TOOL_OPT_END; o++) {
        if (o->type == TOOL_OPT_INT)
            *FIELD(s, o, int) = TOOL_UNSET_INT;
        else if (o->type == TOOL_OPT_SIZE || o->type == TOOL_OPT_SECONDS ||
                 o->type == TOOL_OPT_DURATION)
            *FIELD(s, o, int64_t) = TOOL_UNSET;
    }
    for (const tool_opt_t *o = cmd->opts; o->type != TOOL_OPT_END; o++)
        if (is_option(o) && o->def &&
            tool_opt_set(s, o, o->name, o->def, TOOL_FROM_DEFAULT, err, sizeof err) < 0) {
            tool_error(cmd->name, "internal: default %s", err);
            code = TOOL_EXIT_INTERNAL;
            goto out;
        }

    /* pass 1: --help, --version, --rc, --no-rc */
    opterr = 0;
    optind = 0;
    while ((ch = getopt_long_only(argc, argv, t.shortopts, t.longopts, NULL)) != -1) {
        const tool_opt_t *o = entry_of(cmd->opts, ch);
        if (!o)
            continue;
        if (named(o, "help")) {
            tool_opt_usage(cmd, stdout);
            argtab_free(&t);
            exit(TOOL_EXIT_OK);
        }
        if (named(o, "version")) {
            tool_version(cmd->name);
            argtab_free(&t);
            exit(TOOL_EXIT_OK);
        }
        if (named(o, "rc"))
            c->rcfile = optarg;
        if (named(o, "no-rc"))
            c->no_rc = 1;
    }
    rcctx_t x = {cmd, s};
    int reads_rc = 0;
    for (const tool_opt_t *o = cmd->opts; o->type != TOOL_OPT_END; o++)
        reads_rc |= named(o, "rc");
    if (reads_rc && tool_rc_read(c->no_rc ? "/dev/null" : c->rcfile, &c->rc, rc_line, &x, err,
                                 sizeof err) != LORS_OK) {
        tool_error(cmd->name, "rc file: %s", err);
        code = TOOL_EXIT_USAGE;
        goto out;
    }

    /* pass 2: every flag, in order */
    optind = 0;
    while ((ch = getopt_long_only(argc, argv, t.shortopts, t.longopts, NULL)) != -1) {
        if (ch == ':') {
            code = tool_usage(cmd->name, "%s needs a value", argv[optind - 1]);
            goto out;
        }
        const tool_opt_t *o = entry_of(cmd->opts, ch);
        if (!o || ch == '?') {
            code = tool_usage(cmd->name, "unknown option %s", argv[optind - 1]);
            goto out;
        }
        written(argc, argv, name, sizeof name);
        if (tool_opt_set(s, o, name, optarg, TOOL_FROM_ARGV, err, sizeof err) < 0) {
            code = tool_usage(cmd->name, "%s", err);
            goto out;
        }
    }
    *first = optind;
    if (cmd->check)
        code = cmd->check(s, argc, argv, optind);
    if (code == TOOL_EXIT_OK)
        tool_tls_warn_at_exit(cmd->name, c->quiet);
out:
    argtab_free(&t);
    if (code != TOOL_EXIT_OK)
        tool_opt_free(s);
    return code;
}

int tool_opt_exnode(const tool_cmd_t *cmd, int argc, char **argv, void *s,
                    const char **path, xnd_t **x)
{
    int first, code = tool_opt_parse(cmd, argc, argv, s, &first);
    *x = NULL;
    if (code == TOOL_EXIT_OK &&
        (code = tool_open_exnode(cmd->name, ((tool_common_t *)s)->file, argc, argv, first,
                                 path, x)) != TOOL_EXIT_OK)
        tool_opt_free(s);
    return code;
}

int tool_opt_exnode_rw(const tool_cmd_t *cmd, int argc, char **argv, void *s,
                       const char **output, int *force, int hold, const char **path,
                       xnd_t **x, tool_rewrite_t *rw, const char **out, int *replace)
{
    int first, code = tool_opt_parse(cmd, argc, argv, s, &first);
    *x = NULL;
    *replace = 0;
    rw->lockfd = -1;
    if (code != TOOL_EXIT_OK)
        return code;
    code = tool_open_exnode_rw(cmd->name, ((tool_common_t *)s)->file, argc, argv, first,
                               *output, hold, path, x, rw);
    if (code == TOOL_EXIT_OK) {
        /* the in-place rewrite (no -o) is the input itself: no --force needed */
        *out = *output ? *output : *path;
        code = tool_check_output(cmd->name, *out, *path, *force || !*output, replace);
        if (code != TOOL_EXIT_OK) {
            tool_rewrite_end(rw);
            xnd_free(*x);
            *x = NULL;
        }
    }
    if (code != TOOL_EXIT_OK)
        tool_opt_free(s);
    return code;
}

void tool_opt_free(void *s)
{
    tool_rc_free(&((tool_common_t *)s)->rc);
}

/* ---- --help ---------------------------------------------------------------------------- */

void tool_opt_usage(const tool_cmd_t *cmd, FILE *f)
{
    fputs(cmd->synopsis, f);
    for (const tool_opt_t *o = cmd->opts; o->type != TOOL_OPT_END; o++) {
        char left[64] = "", *p = left;
        size_t room = sizeof left;
        if (o->type == TOOL_OPT_SECTION) {
            fprintf(f, "%s\n", o->help);
            continue;
        }
        if (!o->name || !o->help)
            continue; /* rc file only */
        /* LoRS's two-letter one-dash options (-bs) stand first, before their long alias */
        int dash1 = !o->letter && strchr(o->name, '|') && strcspn(o->name, "|") <= 2;
        int w = o->letter ? snprintf(p, room, "  -%c, ", o->letter)
                          : snprintf(p, room, dash1 ? "  " : "      ");
        p += w, room -= (size_t)w;
        for (const char *a = o->name; a && room > 1;
             a = strchr(a, '|') ? strchr(a, '|') + 1 : NULL) {
            int len = (int)strcspn(a, "|");
            w = snprintf(p, room, "%s%s%.*s", a == o->name ? "" : ", ",
                         dash1 && a == o->name ? "-" : "--", len, a);
            p += w, room -= (size_t)w;
        }
        if (o->arg && room > 1)
            snprintf(p, room, " %s", o->arg);
        const char *h = o->help;
        fprintf(f, "%-26s", left);
        if (strlen(left) >= 26)
            fprintf(f, "\n%-26s", "");
        for (const char *nl; (nl = strchr(h, '\n')); h = nl + 1)
            fprintf(f, "%.*s\n%-26s", (int)(nl - h), h, "");
        fprintf(f, "%s", h);
        if (o->def && o->type != TOOL_OPT_SWITCH && !strstr(o->help, "default"))
            fprintf(f, " (default %s)", o->def);
        fputc('\n', f);
    }
    if (cmd->epilog)
        fputs(cmd->epilog, f);
}
