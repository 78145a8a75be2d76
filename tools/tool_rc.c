/* tool_rc.c -- the rc file (~/.xndrc, $LNS_RC, --rc FILE): the user's standing settings.
 *
 * Settings come from defaults < rc file < flags, so this file only says what the file sets;
 * the tools decide what applies.  The parse is strict: an unknown keyword or a bad value is
 * an error naming FILE:LINE, because a typo silently ignored ("COPIS 3") is a file stored
 * with fewer copies than the user believes.  The keywords are those of LoRS's .xndrc, and
 * LoRS's "host port" form of DEPOT and LBONE_SERVER is read as "host:port"; LBONE_SERVER also
 * takes an L-Bone's URL (https://HOST:PORT#sha256:..., its key pinned).
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lbone.h"
#include "lns_err.h"
#include "lns_units.h"
#include "tool.h"
#include "tool_opt.h"

typedef struct rcparse {
    tool_rc_t *rc;
    const char *file;
    int line;
    char *err;
    size_t errlen;
    tool_rc_line_fn fn;  /* each "KEYWORD value" line goes here (NULL: keyword()) */
    void *arg;
} rcparse_t;

static int fail(rcparse_t *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(rcparse_t *p, const char *fmt, ...)
{
    char msg[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (p->line > 0)
        lns_err_set(p->err, p->errlen, "%s:%d: %s", p->file, p->line, msg);
    else
        lns_err_set(p->err, p->errlen, "%s: %s", p->file, msg);
    return LORS_E_RC;
}

static void rc_unset(tool_rc_t *rc)
{
    memset(rc, 0, sizeof *rc);
    rc->duration_s = -1;
    rc->reliability = -1;
    rc->e2e_blocksize = -1;
    rc->data_blocksize = -1;
    rc->fragments = -1;
    rc->copies = -1;
    rc->threads = -1;
    rc->maxdepots = -1;
    rc->max_buffer = -1;
    rc->timeout_s = -1;
    rc->verbose = -1;
}

void tool_rc_free(tool_rc_t *rc)
{
    if (!rc)
        return;
    for (size_t i = 0; i < rc->nlbone; i++)
        free(rc->lbone_servers[i]);
    free(rc->lbone_servers);
    free(rc->location);
    free(rc->e2e_order);
    free(rc->depots);
    rc_unset(rc);
}

/* ---- values ---------------------------------------------------------------------------- */

static int parse_int(rcparse_t *p, const char *kw, const char *v, long long min, long long max,
                     long long *out)
{
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (errno || end == v || *end || !isdigit((unsigned char)v[0]) || n < min || n > max)
        return fail(p, "%s %s: expected a whole number from %lld to %lld", kw, v, min, max);
    *out = n;
    return LORS_OK;
}

static int parse_size(rcparse_t *p, const char *kw, const char *v, int64_t *out)
{
    uint64_t n;
    if (lns_parse_size(v, &n) < 0 || n == 0 || n > (uint64_t)INT64_MAX)
        return fail(p, "%s %s: expected a size above 0 (digits with an optional K, M, G or T)",
                    kw, v);
    *out = (int64_t)n;
    return LORS_OK;
}

static int parse_seconds(rcparse_t *p, const char *kw, const char *v, int allow_max,
                         int64_t *out)
{
    if (allow_max && (strcmp(v, "-1") == 0 || strcasecmp(v, "max") == 0)) {
        *out = -1;
        return LORS_OK;
    }
    if (lns_parse_seconds(v, out) < 0 || *out <= 0)
        return fail(p, "%s %s: expected a duration above 0 (digits with an optional s, m, h or "
                       "d)%s", kw, v, allow_max ? ", -1 or max" : "");
    return LORS_OK;
}

/* LoRS wrote "host port"; we write "host:port".  Anything else is left as it is. */
static void host_port_form(char *v)
{
    char *sp = strpbrk(v, " \t");
    if (!sp)
        return;
    char *q = sp;
    while (*q == ' ' || *q == '\t')
        q++;
    if (!*q || strpbrk(q, " \t,") || strchr(v, ',') || memchr(v, ':', (size_t)(sp - v)))
        return;
    for (const char *d = q; *d; d++)
        if (!isdigit((unsigned char)*d))
            return;
    *sp = ':';
    memmove(sp + 1, q, strlen(q) + 1);
}

static int append_str(char **dst, const char *sep, const char *add)
{
    size_t old = *dst ? strlen(*dst) : 0;
    char *n = realloc(*dst, old + strlen(sep) + strlen(add) + 1);
    if (!n)
        return LORS_E_NOMEM;
    if (old)
        strcat(n, sep);
    else
        n[0] = '\0';
    strcat(n, add);
    *dst = n;
    return LORS_OK;
}

static int set_str(char **dst, const char *v)
{
    char *n = strdup(v);
    if (!n)
        return LORS_E_NOMEM;
    free(*dst);
    *dst = n;
    return LORS_OK;
}

static int add_lbone(rcparse_t *p, const char *v)
{
    char **n = realloc(p->rc->lbone_servers, (p->rc->nlbone + 1) * sizeof *n);
    if (!n)
        return LORS_E_NOMEM;
    p->rc->lbone_servers = n;
    if (!(n[p->rc->nlbone] = strdup(v)))
        return LORS_E_NOMEM;
    p->rc->nlbone++;
    return LORS_OK;
}

static int kw_lbone(rcparse_t *p, const char *kw, char *v)
{
    lors_depot_t d;
    char url[512], why[256];
    if (strstr(v, "://")) { /* a URL: "https://HOST:PORT#sha256:...", as lbone_server logs */
        if (lbone_server_url(v, url, sizeof url, why, sizeof why) < 0)
            return fail(p, "%s %s: %s", kw, v, why);
        return add_lbone(p, v);
    }
    host_port_form(v);
    /* same syntax as a depot (host[:port]), without a resource */
    if (strchr(v, '/') || lors_depot_parse(v, &d) != LORS_OK)
        return fail(p, "%s %s: expected host[:port]", kw, v);
    if (v[0] == '[' ? !strstr(v, "]:") : !strchr(v, ':')) {
        char full[IBP_MAX_HOST + 16];
        snprintf(full, sizeof full, "%s:6767", v); /* the L-Bone's port */
        return kw_lbone(p, kw, full);
    }
    return add_lbone(p, v);
}

static int kw_depot(rcparse_t *p, const char *kw, char *v)
{
    lors_depot_t *list = NULL;
    size_t n = 0;
    char why[256];
    host_port_form(v);
    int rc = lors_depot_list_parse(v, &list, &n, why, sizeof why);
    free(list);
    if (rc == LORS_E_NOMEM)
        return rc;
    if (rc != LORS_OK)
        return fail(p, "%s: %s", kw, why);
    return append_str(&p->rc->depots, ", ", v);
}

/* E2E_ORDER: as --e2e takes it (tool_e2e_list), and "none". */
static int kw_e2e(rcparse_t *p, const char *kw, char *v)
{
    char chain[64] = "", why[384];
    if (tool_e2e_list(kw, v, 1, chain, sizeof chain, why, sizeof why) < 0)
        return fail(p, "%s", why);
    return set_str(&p->rc->e2e_order, chain);
}

static int keyword(rcparse_t *p, const char *kw, char *v);

int tool_rc_keyword(tool_rc_t *rc, const char *file, int line, const char *kw, char *val,
                    char *err, size_t errlen)
{
    rcparse_t p = {rc, file, line, err, errlen, NULL, NULL};
    int r = keyword(&p, kw, val);
    if (r == LORS_E_NOMEM)
        fail(&p, "out of memory");
    return r;
}

static int keyword(rcparse_t *p, const char *kw, char *v)
{
    tool_rc_t *rc = p->rc;
    long long n;
    int r;

    if (strcasecmp(kw, "LBONE_SERVER") == 0)
        return kw_lbone(p, kw, v);
    if (strcasecmp(kw, "DEPOT") == 0)
        return kw_depot(p, kw, v);
    if (strcasecmp(kw, "LOCATION") == 0)
        return set_str(&rc->location, v);
    if (strcasecmp(kw, "IBP_VERSION") == 0) { /* for every program that talks to depots */
        char why[256];
        if (tool_ibp_version_pin(v, why, sizeof why) < 0)
            return fail(p, "%s %s: %s", kw, v, why);
        return LORS_OK;
    }
    if (strcasecmp(kw, "TLS") == 0) { /* auto, require or off, for the whole process */
        char why[128];
        if (tool_tls_mode(v, why, sizeof why) < 0)
            return fail(p, "%s %s: %s", kw, v, why);
        return LORS_OK;
    }
    if (strcasecmp(kw, "E2E_ORDER") == 0)
        return kw_e2e(p, kw, v);
    if (strcasecmp(kw, "DURATION") == 0) /* "max" (each depot's maximum) is -1 */
        return parse_seconds(p, kw, v, 1, &rc->duration_s);
    if (strcasecmp(kw, "TIMEOUT") == 0) {
        int64_t s;
        if ((r = parse_seconds(p, kw, v, 0, &s)) != LORS_OK)
            return r;
        if (s > 86400)
            return fail(p, "%s %s: longer than a day", kw, v);
        rc->timeout_s = (int)s;
        return LORS_OK;
    }
    if (strcasecmp(kw, "STORAGE_TYPE") == 0) {
        if (strcasecmp(v, "HARD") == 0)
            rc->reliability = IBP_HARD;
        else if (strcasecmp(v, "SOFT") == 0)
            rc->reliability = IBP_SOFT;
        else
            return fail(p, "%s %s: expected HARD or SOFT", kw, v);
        return LORS_OK;
    }
    if (strcasecmp(kw, "E2E_BLOCKSIZE") == 0)
        return parse_size(p, kw, v, &rc->e2e_blocksize);
    if (strcasecmp(kw, "DATA_BLOCKSIZE") == 0)
        return parse_size(p, kw, v, &rc->data_blocksize);
    if (strcasecmp(kw, "MAX_INTERNAL_BUFFER") == 0)
        return parse_size(p, kw, v, &rc->max_buffer);

    int *field = NULL;
    long long max = 1000000;
    if (strcasecmp(kw, "FRAGMENTS_PER_FILE") == 0)
        field = &rc->fragments;
    else if (strcasecmp(kw, "COPIES") == 0)
        field = &rc->copies, max = 1000;
    else if (strcasecmp(kw, "THREADS") == 0)
        field = &rc->threads, max = TOOL_MAX_THREADS;
    else if (strcasecmp(kw, "MAXDEPOTS") == 0)
        field = &rc->maxdepots;
    if (field) {
        if ((r = parse_int(p, kw, v, 1, max, &n)) != LORS_OK)
            return r;
        *field = (int)n;
        return LORS_OK;
    }
    if (strcasecmp(kw, "VERBOSE") == 0) {
        if (strcasecmp(v, "yes") == 0 || strcasecmp(v, "true") == 0 || strcasecmp(v, "on") == 0)
            n = 1;
        else if (strcasecmp(v, "no") == 0 || strcasecmp(v, "false") == 0 ||
                 strcasecmp(v, "off") == 0)
            n = 0;
        else if ((r = parse_int(p, kw, v, 0, 9, &n)) != LORS_OK)
            return r;
        rc->verbose = (int)n;
        return LORS_OK;
    }
    return fail(p, "unknown keyword %s", kw);
}

/* One line: "KEYWORD value", "KEYWORD=value" or "KEYWORD = value"; a '#' that starts the line
 * or follows a blank starts a comment to the end (one inside a word is a pin: a depot's,
 * "DEPOT host:6714#sha256:...", or an L-Bone's, "https://HOST:PORT#sha256:..."). */
static int parse_line(rcparse_t *p, char *s)
{
    for (char *q = s; *q; q++)
        if (*q == '#' && (q == s || isspace((unsigned char)q[-1]))) {
            *q = '\0';
            break;
        }
    size_t len = strlen(s);
    while (len > 0 && isspace((unsigned char)s[len - 1]))
        s[--len] = '\0';
    while (isspace((unsigned char)*s))
        s++;
    if (!*s)
        return LORS_OK;
    char *kw = s;
    if (!isalpha((unsigned char)*s) && *s != '_')
        return fail(p, "expected KEYWORD value, found \"%.40s\"", s);
    while (isalnum((unsigned char)*s) || *s == '_')
        s++;
    if (*s && *s != '=' && !isspace((unsigned char)*s))
        return fail(p, "expected KEYWORD value, found \"%.40s\"", kw);
    char *end = s;
    while (isspace((unsigned char)*s))
        s++;
    if (*s == '=')
        s++;
    while (isspace((unsigned char)*s))
        s++;
    *end = '\0';
    if (!*s)
        return fail(p, "%s needs a value", kw);
    return p->fn ? p->fn(p->arg, p->file, p->line, kw, s, p->err, p->errlen) : keyword(p, kw, s);
}

int tool_rc_load(const char *path, tool_rc_t *rc, char *err, size_t errlen)
{
    return tool_rc_read(path, rc, NULL, NULL, err, errlen);
}

int tool_rc_read(const char *path, tool_rc_t *rc, tool_rc_line_fn fn, void *arg, char *err,
                 size_t errlen)
{
    char home_rc[512];
    int optional = 0;
    rcparse_t p = {rc, NULL, 0, err, errlen, fn, arg};

    rc_unset(rc);
    if (errlen)
        err[0] = '\0';
    if (!path || !*path) {
        path = getenv("LNS_RC");
        if (!path || !*path) {
            const char *home = getenv("HOME");
            if (!home || !*home)
                return LORS_OK;
            snprintf(home_rc, sizeof home_rc, "%s/.xndrc", home);
            path = home_rc;
            optional = 1;
        }
    }
    p.file = path;
    FILE *f = fopen(path, "r");
    if (!f) {
        if (optional && errno == ENOENT)
            return LORS_OK;
        return fail(&p, "cannot open: %s", strerror(errno));
    }
    snprintf(rc->path, sizeof rc->path, "%s", path);

    char *line = NULL;
    size_t cap = 0;
    int r = LORS_OK;
    while (r == LORS_OK) {
        errno = 0;
        ssize_t n = getline(&line, &cap, f);
        if (n < 0) {
            if (ferror(f))
                r = fail(&p, "reading after line %d: %s", p.line, strerror(errno));
            break;
        }
        p.line++;
        if (memchr(line, '\0', (size_t)n))
            r = fail(&p, "a NUL byte: not a text file");
        else
            r = parse_line(&p, line);
    }
    free(line);
    fclose(f);
    if (r == LORS_E_NOMEM)
        fail(&p, "out of memory");
    if (r != LORS_OK) {
        char keep[sizeof rc->path];
        memcpy(keep, rc->path, sizeof keep);
        tool_rc_free(rc);
        memcpy(rc->path, keep, sizeof keep);
    }
    return r == LORS_OK ? LORS_OK : r == LORS_E_NOMEM ? LORS_E_NOMEM : LORS_E_RC;
}
