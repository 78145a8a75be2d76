/* test_tool_opt.c -- tools/tool_opt: one table gives the defaults, the rc file's settings and
 * the flags, in that order of precedence, through the same setters and bounds. */
#include <CUnit/CUnit.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lns_test.h"
#include "tool_opt.h"

typedef struct settings {
    tool_common_t c;
    int copies, reliability;
    int64_t blocksize, duration;
    const char *name;
} settings_t;

#define S(f) TOOL_OFF(settings_t, f)

static const tool_opt_t opts[] = {
    {TOOL_OPT_INT, "copies", 'c', "COPIES", S(copies), 1, 10, "1", "N", "copies", NULL},
    {TOOL_OPT_SIZE, "bs|block-size", 0, "DATA_BLOCKSIZE", S(blocksize), 1, 1 << 30, "5M", "N",
     "block size", NULL},
    {TOOL_OPT_DURATION, "duration", 'd', "DURATION", S(duration), 1, INT64_MAX, "1d", "T",
     "lifetime", NULL},
    {TOOL_OPT_SWITCH, "soft", 's', NULL, S(reliability), IBP_SOFT, 0, NULL, NULL, "soft", NULL},
    {TOOL_OPT_FN, NULL, 0, "STORAGE_TYPE", S(reliability), 0, 0, NULL, NULL, NULL,
     tool_opt_storage},
    {TOOL_OPT_STR, "name", 'n', NULL, S(name), 0, 0, NULL, "NAME", "a name", NULL},
    TOOL_OPT_VERBOSE("say more"),
    TOOL_OPT_THREADS(1, "4", "threads"),
    TOOL_OPT_EVENTS,
    TOOL_OPT_SETTINGS,
    TOOL_OPT_TABLE_END,
};

static const tool_cmd_t cmd = {"test_tool", "Usage: test_tool [options]\n", NULL, opts,
                               sizeof(settings_t), NULL};

/* Parse argv (a NULL-ended list) with the rc file holding rc (NULL: --no-rc). */
static int parse(const char *rc, settings_t *s, int *first, ...)
{
    char *argv[16];
    int argc = 0;
    va_list ap;
    argv[argc++] = "test_tool";
    if (rc) {
        FILE *f = fopen(lns_test_path("rc"), "w");
        fputs(rc, f);
        fclose(f);
        argv[argc++] = "--rc";
        argv[argc++] = (char *)lns_test_path("rc");
    } else {
        argv[argc++] = "--no-rc";
    }
    va_start(ap, first);
    for (char *a; argc < 15 && (a = va_arg(ap, char *));)
        argv[argc++] = a;
    va_end(ap);
    argv[argc] = NULL;
    memset(s, 0, sizeof *s);
    return tool_opt_parse(&cmd, argc, argv, s, first);
}

static void test_precedence(void)
{
    settings_t s;
    int first;
    /* defaults */
    CU_ASSERT_EQUAL_FATAL(parse(NULL, &s, &first, NULL), TOOL_EXIT_OK);
    CU_ASSERT_EQUAL(s.copies, 1);
    CU_ASSERT_EQUAL(s.blocksize, 5 << 20);
    CU_ASSERT_EQUAL(s.duration, 86400);
    CU_ASSERT_EQUAL(s.c.threads, 4);
    CU_ASSERT_EQUAL(s.reliability, 0);
    CU_ASSERT_PTR_NULL(s.name);
    CU_ASSERT_EQUAL(s.c.timeout, 0); /* no TIMEOUT entry: untouched */
    tool_opt_free(&s);
    /* the rc file over the defaults, a flag over the rc file, whatever the order */
    CU_ASSERT_EQUAL_FATAL(parse("COPIES 3\nDATA_BLOCKSIZE 2M\nSTORAGE_TYPE soft\nVERBOSE yes\n"
                                "THREADS 9\nDURATION max\nDEPOT a.example.org:6714\n",
                                &s, &first, "-c", "5", "file", "-bs=1K", NULL),
                          TOOL_EXIT_OK);
    CU_ASSERT_EQUAL(s.copies, 5);
    CU_ASSERT_EQUAL(s.blocksize, 1024);
    CU_ASSERT_EQUAL(s.duration, -1);
    CU_ASSERT_EQUAL(s.reliability, IBP_SOFT);
    CU_ASSERT_EQUAL(s.c.verbose, 1);
    CU_ASSERT_EQUAL(s.c.threads, 9);
    CU_ASSERT_STRING_EQUAL(s.c.rc.depots, "a.example.org:6714"); /* another program's setting */
    CU_ASSERT_EQUAL(first, 6); /* the operand, moved after the 6 words before it */
    tool_opt_free(&s);
    /* -D is --events fd:2; a switch from the rc file can be turned off */
    CU_ASSERT_EQUAL_FATAL(parse("VERBOSE off\n", &s, &first, "-D", "--name=x", NULL),
                          TOOL_EXIT_OK);
    CU_ASSERT_STRING_EQUAL(s.c.events, "fd:2");
    CU_ASSERT_STRING_EQUAL(s.name, "x");
    CU_ASSERT_EQUAL(s.c.verbose, 0);
    tool_opt_free(&s);
}

static void test_errors(void)
{
    static const struct {
        const char *rc;
        const char *flag, *value;
    } bad[] = {
        {NULL, "-c", "0"},          /* below the bound */
        {NULL, "-c", "11"},         /* above it */
        {NULL, "--copies", "2x"},
        {NULL, "-bs", "2G"},
        {NULL, "-d", "0"},
        {NULL, "-t", "257"},        /* TOOL_MAX_THREADS for every program */
        {NULL, "--bogus", NULL},
        {NULL, "-c", NULL},         /* needs a value */
        {"COPIES 11\n", NULL, NULL},
        {"COPIS 3\n", NULL, NULL},  /* unknown keyword */
        {"STORAGE_TYPE medium\n", NULL, NULL},
        {"VERBOSE maybe\n", NULL, NULL},
        {"THREADS 0\n", NULL, NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        settings_t s;
        int first;
        int r = parse(bad[i].rc, &s, &first, bad[i].flag, bad[i].value, NULL);
        if (r != TOOL_EXIT_USAGE) {
            fprintf(stderr, "case %zu: %d\n", i, r);
            CU_FAIL("a bad value was taken");
        }
    }
}

static void test_usage(void)
{
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    tool_opt_usage(&cmd, f);
    fclose(f);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "  -c, --copies N          copies (default 1)\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "  -bs, --block-size N     block size (default 5M)\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "  -D, --demo "));
    CU_ASSERT_PTR_NULL(strstr(text, "STORAGE_TYPE")); /* rc-file-only entries are not flags */
    free(text);
}

static const lns_test_case tests[] = {
    {"defaults < rc file < flags", test_precedence},
    {"bad values and keywords", test_errors},
    {"--help from the table", test_usage},
};

LNS_TEST_MAIN("tool_opt", tests)
