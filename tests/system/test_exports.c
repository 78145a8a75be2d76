/* test_exports.c -- each shared library exports exactly the functions its public header declares.
 *
 * The build compiles everything with -fvisibility=hidden and the public headers re-open the
 * default visibility around their declarations, so `nm -D --defined-only lib<name>.so` must
 * list the header's functions and nothing else: no common/ helper (lns_*), no internal name
 * (lors__*, ibp_pool_*, lbone_json_*, ...).  A function the header declares but the library
 * hides is an error too.  Runs from the top of the source tree (headers) against the build's
 * lib/ (beside its bin/). */
#include <CUnit/CUnit.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lns_test.h"

#define MAX_NAMES 512

typedef struct names {
    char *v[MAX_NAMES];
    size_t n;
} names_t;

static int names_has(const names_t *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[i], name) == 0)
            return 1;
    return 0;
}

static void names_add(names_t *s, const char *name, size_t len)
{
    char buf[256];
    if (len >= sizeof buf || s->n == MAX_NAMES)
        return;
    memcpy(buf, name, len);
    buf[len] = 0;
    if (!names_has(s, buf))
        s->v[s->n++] = strdup(buf);
}

static void names_free(names_t *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    s->n = 0;
}

/* The header's text without comments and preprocessor lines (with their continuations). */
static char *header_code(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *src = NULL;
    size_t cap = 0;
    ssize_t len = getdelim(&src, &cap, 0, f);
    fclose(f);
    if (len < 0) {
        free(src);
        return NULL;
    }
    char *out = malloc((size_t)len + 1), *o = out;
    int bol = 1;
    for (const char *p = src; *p;) {
        if (p[0] == '/' && p[1] == '*') {
            const char *e = strstr(p + 2, "*/");
            p = e ? e + 2 : p + strlen(p);
            *o++ = ' ';
        } else if (p[0] == '/' && p[1] == '/') {
            p += strcspn(p, "\n");
        } else if (bol && *p == '#') {
            while (*p && !(*p == '\n' && p[-1] != '\\'))
                p++;
        } else {
            if (*p == '\n')
                bol = 1;
            else if (!isspace((unsigned char)*p))
                bol = 0;
            *o++ = *p++;
        }
    }
    *o = 0;
    free(src);
    return out;
}

/* Functions declared: prefix_name followed by '(' but not "(*prefix_name)" (a function pointer
 * type or parameter). */
static int declared(const char *header, const char *prefix, names_t *out)
{
    char *code = header_code(header);
    if (!code)
        return -1;
    size_t plen = strlen(prefix);
    for (const char *p = code; *p; p++) {
        int inside = p > code && (isalnum((unsigned char)p[-1]) || p[-1] == '_');
        if (inside || strncmp(p, prefix, plen) != 0)
            continue;
        const char *e = p;
        while (isalnum((unsigned char)*e) || *e == '_')
            e++;
        const char *q = e;
        while (isspace((unsigned char)*q))
            q++;
        const char *b = p;
        int fnptr = 0;
        while (b > code && isspace((unsigned char)b[-1]))
            b--;
        if (b > code && b[-1] == '*') {
            for (b--; b > code && isspace((unsigned char)b[-1]); b--)
                ;
            fnptr = b > code && b[-1] == '(';
        }
        if (*q == '(' && !fnptr)
            names_add(out, p, (size_t)(e - p));
        p = e - 1;
    }
    free(code);
    return 0;
}

static int exported(const char *so, names_t *out)
{
    char cmd[8300];
    snprintf(cmd, sizeof cmd, "nm -D --defined-only '%s'", so);
    FILE *f = popen(cmd, "r");
    if (!f)
        return -1;
    char line[1024], addr[128], type[8], name[512];
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "%127s %7s %511s", addr, type, name) == 3)
            names_add(out, name, strlen(name));
    return pclose(f) == 0 ? 0 : -1;
}

static int find_header(const char *rel, char *out, size_t size)
{
    snprintf(out, size, "%s", rel);
    if (access(out, R_OK) == 0)
        return 0;
    snprintf(out, size, "%s/../../../%s", lns_test_bindir(), rel);
    return access(out, R_OK);
}

/* lib<name>.so against its header: every export declared, every declaration exported. */
static void check_library(const char *lib, const char *prefix, const char *header)
{
    char so[8192], path[8192];
    names_t decl = {0}, exp = {0};
    snprintf(so, sizeof so, "%s/../lib/%s.so", lns_test_bindir(), lib);
    CU_ASSERT_FATAL(access(so, R_OK) == 0);
    CU_ASSERT_FATAL(find_header(header, path, sizeof path) == 0);
    CU_ASSERT_FATAL(declared(path, prefix, &decl) == 0);
    CU_ASSERT_FATAL(exported(so, &exp) == 0);
    CU_ASSERT(decl.n > 0);
    CU_ASSERT(exp.n > 0);
    int bad = 0;
    for (size_t i = 0; i < exp.n; i++) {
        const char *s = exp.v[i];
        int internal = strncmp(s, prefix, strlen(prefix)) != 0 || strstr(s, "__") != NULL;
        if (internal || !names_has(&decl, s)) {
            fprintf(stderr, "\n  %s.so exports %s%s", lib, s,
                    internal ? " (an internal name)" : ", which its header does not declare");
            bad++;
        }
    }
    for (size_t i = 0; i < decl.n; i++)
        if (!names_has(&exp, decl.v[i])) {
            fprintf(stderr, "\n  %s.so does not export %s, which %s declares", lib, decl.v[i],
                    header);
            bad++;
        }
    CU_ASSERT_EQUAL(bad, 0);
    names_free(&decl);
    names_free(&exp);
}

static void test_libibp(void) { check_library("libibp", "ibp_", "ibp/ibp.h"); }
static void test_libexnode(void) { check_library("libexnode", "xnd_", "exnode/xnd.h"); }
static void test_liblors(void) { check_library("liblors", "lors_", "lors/lors.h"); }
static void test_liblbone(void) { check_library("liblbone", "lbone_", "lbone/lbone.h"); }

/* No client resolves place names (the L-Bone does), so the gazetteer, its code and its
 * data, stays out of liblbone: in liblbone_geo.a and share/lns/gazetteer.txt, for the daemons
 * (issue 38: it was 98.9% of the library).  nm without -D: hidden and local symbols too. */
static void test_liblbone_no_gazetteer(void)
{
    char so[8192], cmd[16384];
    struct stat st;
    snprintf(so, sizeof so, "%s/../lib/liblbone.so", lns_test_bindir());
    CU_ASSERT_FATAL(stat(so, &st) == 0);
    CU_ASSERT(st.st_size < 1024 * 1024);
    if (st.st_size >= 1024 * 1024)
        fprintf(stderr, "\n  %s: %lld bytes, 1 MiB at most", so, (long long)st.st_size);
    snprintf(cmd, sizeof cmd, "nm '%s' | grep lbone_geo_", so);
    CU_ASSERT_NOT_EQUAL(system(cmd), 0);
}

static const lns_test_case tests[] = {
    {"libibp.so: only ibp.h", test_libibp},
    {"libexnode.so: only xnd.h", test_libexnode},
    {"liblors.so: only lors.h", test_liblors},
    {"liblbone.so: only lbone.h", test_liblbone},
    {"liblbone.so: no gazetteer, under 1 MiB", test_liblbone_no_gazetteer},
};

LNS_TEST_MAIN("shared library exports", tests)
