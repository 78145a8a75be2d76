/* test_tool_docs.c -- each program's man page names exactly the long options of its --help,
 * which tools/tool_opt.c writes from the program's option table: a flag added to a table and
 * not described in the man page, or a tagged paragraph of the man page for a flag the
 * program does not have, fails here. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lns_test.h"

#define MAXNAMES 128

typedef struct names {
    char v[MAXNAMES][40];
    int n;
} names_t;

static void add(names_t *s, const char *p, size_t len)
{
    if (len == 0 || len >= sizeof s->v[0] || s->n == MAXNAMES)
        return;
    for (int i = 0; i < s->n; i++)
        if (strlen(s->v[i]) == len && strncmp(s->v[i], p, len) == 0)
            return;
    memcpy(s->v[s->n], p, len);
    s->v[s->n++][len] = '\0';
}

static int has(const names_t *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->v[i], name) == 0)
            return 1;
    return 0;
}

/* Every "--name" in text (roff's "\-" read as "-"). */
static void long_options(const char *text, names_t *s)
{
    for (const char *p = text; (p = strstr(p, "--")); p += 2) {
        const char *q = p + 2;
        if (p > text && (isalnum((unsigned char)p[-1]) || p[-1] == '-'))
            continue;
        while (isalnum((unsigned char)*q) || (*q == '-' && isalnum((unsigned char)q[1])))
            q++;
        add(s, p + 2, (size_t)(q - p - 2));
    }
}

/* The option part of --help: the lines that start with spaces and a dash. */
static void help_options(const char *help, names_t *s)
{
    for (const char *line = help; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        const char *p = line;
        while (*p == ' ')
            p++;
        if (p == line || *p != '-')
            continue;
        /* the left column: up to the first two spaces after the option names, which may
         * be a line of their own ("--lbone-env-connection C, --lbone-env-power P,") */
        size_t len = strcspn(p, "\n");
        const char *gap = strstr(p, "  ");
        if (gap && (size_t)(gap - p) < len)
            len = (size_t)(gap - p);
        char buf[512];
        snprintf(buf, sizeof buf, "%.*s", (int)len, p);
        long_options(buf, s);
    }
}

/* roff's "\-" as "-" */
static void unescape(const char *in, size_t len, char *out, size_t size)
{
    size_t k = 0;
    for (size_t i = 0; i < len && k + 1 < size; i++)
        if (!(in[i] == '\\' && in[i + 1] == '-'))
            out[k++] = in[i];
    out[k] = '\0';
}

/* The man page's tagged paragraphs (the line after each .TP): the options it describes. */
static void man_tags(const char *man, names_t *s)
{
    char buf[1024];
    for (const char *p = man; (p = strstr(p, "\n.TP\n")); p += 4) {
        unescape(p + 5, strcspn(p + 5, "\n"), buf, sizeof buf);
        long_options(buf, s);
    }
}

static void check_tool(const char *tool, int section)
{
    char cmd[1024], raw[65536], man[65536], help[65536], path[512];
    snprintf(path, sizeof path, "man/%s.%d", tool, section);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(path, sizeof path, "%s/../../../man/%s.%d", lns_test_bindir(), tool, section);
        f = fopen(path, "r");
    }
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    size_t n = fread(raw, 1, sizeof raw - 1, f);
    raw[n] = '\0';
    fclose(f);
    unescape(raw, n, man, sizeof man);
    snprintf(cmd, sizeof cmd, "'%s/%s' --help", lns_test_bindir(), tool);
    FILE *p = popen(cmd, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    n = fread(help, 1, sizeof help - 1, p);
    help[n] = '\0';
    CU_ASSERT_EQUAL(pclose(p), 0);

    names_t h = {.n = 0}, m = {.n = 0}, tags = {.n = 0};
    help_options(help, &h);
    long_options(man, &m);
    man_tags(raw, &tags);
    CU_ASSERT(h.n >= 5);
    CU_ASSERT(tags.n >= 5);
    /* every option of --help is described somewhere in the page ... */
    for (int i = 0; i < h.n; i++)
        if (!has(&m, h.v[i])) {
            fprintf(stderr, "%s: --%s is in --help but not in %s\n", tool, h.v[i], path);
            CU_FAIL("an option missing from the man page");
        }
    /* ... and every option the page describes is one the program has */
    for (int i = 0; i < tags.n; i++)
        if (!has(&h, tags.v[i])) {
            fprintf(stderr, "%s: --%s is in %s but not in --help\n", tool, tags.v[i], path);
            CU_FAIL("a man page option the program does not have");
        }
}

static void test_man_pages(void)
{
    static const char *tools[] = {"lors_upload", "lors_download", "lors_augment", "lors_trim",
                                  "lors_refresh", "lors_ls", "lors_share", "lors_play", "lors_serve", "lors_mount",
                                  "lbone_query"};
    for (size_t i = 0; i < sizeof tools / sizeof tools[0]; i++)
        check_tool(tools[i], 1);
}

/* The daemons and the daemon modes: their pages are where an operator looks. */
static void test_daemon_man_pages(void)
{
    check_tool("ibp_depot", 8);
    check_tool("lbone_server", 8);
    check_tool("lors_keep", 1);
}

/* ibp_tool has commands rather than options: each one its --help lists has its entry
 * ("\fBNAME\fR" at the start of a .TP tag) in the man page, and the reverse. */
static void test_ibp_tool_commands(void)
{
    char cmd[1024], help[65536], raw[65536], man[65536], tag[128];
    FILE *f = fopen("man/ibp_tool.1", "r");
    if (!f) {
        snprintf(cmd, sizeof cmd, "%s/../../../man/ibp_tool.1", lns_test_bindir());
        f = fopen(cmd, "r");
    }
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    size_t n = fread(raw, 1, sizeof raw - 1, f);
    fclose(f);
    unescape(raw, n, man, sizeof man);
    snprintf(cmd, sizeof cmd, "'%s/ibp_tool' --help", lns_test_bindir());
    FILE *p = popen(cmd, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    n = fread(help, 1, sizeof help - 1, p);
    help[n] = '\0';
    CU_ASSERT_EQUAL(pclose(p), 0);
    const char *c = strstr(help, "Commands:\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    int seen = 0;
    for (c = strchr(c, '\n') + 1; strncmp(c, "  ", 2) == 0; c = strchr(c, '\n') + 1) {
        char name[64];
        if (sscanf(c, " %63s", name) != 1)
            break;
        seen++;
        snprintf(tag, sizeof tag, "\n.TP\n\\fB%s\\fR", name);
        if (!strstr(man, tag)) {
            fprintf(stderr, "ibp_tool: command %s is in --help but not in its man page\n", name);
            CU_FAIL("an ibp_tool command missing from the man page");
        }
    }
    CU_ASSERT(seen >= 10);
    const char *cs = strstr(man, ".SH COMMANDS"), *ce = cs ? strstr(cs, "\n.SH ") : NULL;
    CU_ASSERT_PTR_NOT_NULL_FATAL(ce);
    for (const char *t = cs; (t = strstr(t, "\n.TP\n\\fB")) && t < ce; t += 4) {
        char name[64], line[80];
        if (sscanf(t + 8, "%63[^\\]", name) != 1)
            continue;
        snprintf(line, sizeof line, "\n  %s ", name);
        if (!strstr(help, line)) {
            fprintf(stderr, "ibp_tool: command %s is in the man page but not in --help\n", name);
            CU_FAIL("a man page command ibp_tool does not have");
        }
    }
}

static const lns_test_case tests[] = {
    {"man pages name the options of --help", test_man_pages},
    {"daemon man pages name the options of --help", test_daemon_man_pages},
    {"ibp_tool's man page names the commands of --help", test_ibp_tool_commands},
};

LNS_TEST_MAIN("tool_docs", tests)
