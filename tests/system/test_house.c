/* test_house.c -- the house's rules that a reader of the source can check, checked over the
 * source (like test_exports over the libraries): a rule broken in a new line fails here, with
 * the file and line, before a reviewer has to find it.
 *
 * - Errors: a message for a caller's `char *err, size_t errlen` is set through lns_err_set
 *   (common/lns_err.h), the one setter, never by an snprintf of its own.
 *
 * Runs from the top of the source tree, over the C files of every layer (not tests/).
 */
#include <CUnit/CUnit.h>
#include <dirent.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lns_test.h"

static const char *const layers[] = {"common", "ibp_depot", "ibp", "exnode", "lors", "lbone",
                                     "serve", "mount", "players", "tools", "gui"};

typedef struct scan {
    regex_t re;
    const char *except; /* the one file allowed to do it, or NULL */
    int files, hits;
} scan_t;

static void scan_file(scan_t *s, const char *path)
{
    FILE *f = fopen(path, "r");
    char line[4096];
    int no = 0;
    if (!f)
        return;
    s->files++;
    while (fgets(line, sizeof line, f)) {
        no++;
        if (regexec(&s->re, line, 0, NULL, 0) == 0 &&
            !(s->except && strcmp(path, s->except) == 0)) {
            printf("\n  %s:%d: %s", path, no, line);
            s->hits++;
        }
    }
    fclose(f);
}

static void scan_dir(scan_t *s, const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    if (!d)
        return;
    while ((e = readdir(d))) {
        char path[PATH_MAX];
        struct stat st;
        size_t n = strlen(e->d_name);
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (stat(path, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode))
            scan_dir(s, path);
        else if (n > 2 && strcmp(e->d_name + n - 2, ".c") == 0)
            scan_file(s, path);
    }
    closedir(d);
}

/* Every line of the layers' C files matching pattern (an extended regex), but in except. */
static int scan(const char *pattern, const char *except, int *files)
{
    scan_t s = {.except = except};
    CU_ASSERT_EQUAL_FATAL(regcomp(&s.re, pattern, REG_EXTENDED | REG_NOSUB), 0);
    for (size_t i = 0; i < sizeof layers / sizeof layers[0]; i++)
        scan_dir(&s, layers[i]);
    regfree(&s.re);
    *files = s.files;
    return s.hits;
}

static void test_err_set(void)
{
    int files = 0;
    /* snprintf(err, errlen, ...), snprintf(p->err, p->errlen, ...), and the like */
    int hits = scan("snprintf *\\( *[A-Za-z_>.-]*err[A-Za-z_]* *, *[A-Za-z_>.-]*errlen",
                    "common/lns_err.c", &files);
    CU_ASSERT(files > 100); /* the tree was found: run from its top */
    CU_ASSERT_EQUAL(hits, 0);
}

static const lns_test_case tests[] = {
    {"a caller's error message is set by lns_err_set only", test_err_set},
};

LNS_TEST_MAIN("house rules", tests)
