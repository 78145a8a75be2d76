/* test_install.c -- make install: the files land under DESTDIR/PREFIX, and a program built
 * against the installed header and library (found through the installed pkg-config file)
 * runs.  Runs from the top of the source tree, as tests/run.sh does. */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lns_test.h"

static char dest[4096];

static int run(const char *fmt, const char *a, const char *b)
{
    char cmd[16384];
    snprintf(cmd, sizeof cmd, fmt, a, b);
    int rc = system(cmd);
    if (rc != 0)
        fprintf(stderr, "\n  command failed (%d): %s\n", rc, cmd);
    return rc;
}

static int exists(const char *rel)
{
    char p[8192];
    struct stat st;
    snprintf(p, sizeof p, "%s%s", dest, rel);
    return stat(p, &st) == 0;
}

static void test_install(void)
{
    snprintf(dest, sizeof dest, "%s/dest", lns_test_tmpdir());
    if (access("Makefile", R_OK) != 0) {
        CU_FAIL("run from the top of the source tree");
        return;
    }
    CU_ASSERT_EQUAL_FATAL(run("make -s install DESTDIR='%s' PREFIX=/opt/lns SYSCONFDIR=/opt/lns/etc"
                              " >'%s/install.log' 2>&1", dest, lns_test_tmpdir()),
                          0);
    static const char *files[] = {
        "/opt/lns/bin/ibp_depot",           "/opt/lns/bin/ibp_tool",
        "/opt/lns/lib/libibp.a",            "/opt/lns/lib/libibp.so",
        "/opt/lns/lib/libibp.so.0",         "/opt/lns/lib/pkgconfig/libibp.pc",
        "/opt/lns/include/lns/ibp.h",       "/opt/lns/share/man/man1/ibp_tool.1",
        "/opt/lns/share/man/man8/ibp_depot.8", "/opt/lns/etc/lns/ibp_depot.conf.sample",
        "/opt/lns/lib/systemd/system/ibp_depot.service",
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        if (!exists(files[i]))
            fprintf(stderr, "\n  missing %s\n", files[i]);
        CU_ASSERT(exists(files[i]));
    }
    /* The unit must name the installed binary and config, not the build tree. */
    CU_ASSERT_EQUAL(run("grep -q 'ExecStart=/opt/lns/bin/ibp_depot --config /opt/lns/etc/lns/'"
                        " '%s/opt/lns/lib/systemd/system/ibp_depot.service'%s",
                        dest, ""),
                    0);
    /* The sample config is accepted by the installed depot. */
    char conf[8192];
    snprintf(conf, sizeof conf, "%s/opt/lns/etc/lns/ibp_depot.conf.sample", dest);
    CU_ASSERT_EQUAL(run("'%s/opt/lns/bin/ibp_depot' --config '%s' --check-config >/dev/null",
                        dest, conf),
                    0);

    /* A program built only from what was installed. */
    char src[8192];
    snprintf(src, sizeof src, "%s/prog.c", lns_test_tmpdir());
    FILE *f = fopen(src, "w");
    CU_ASSERT_FATAL(f != NULL);
    fputs("#include <ibp.h>\n#include <stdio.h>\n#include <string.h>\n"
          "int main(void) {\n"
          "  ibp_cap_t c;\n"
          "  if (ibp_cap_parse(\"ibp://h:6714/0#abc/5/READ\", &c) != IBP_OK) return 1;\n"
          "  if (strcmp(ibp_errname(IBP_E_CAP_NOT_FOUND), \"CAP_NOT_FOUND\")) return 2;\n"
          "  ibp_client_t *cl = ibp_client_new(NULL); if (!cl) return 3;\n"
          "  ibp_client_free(cl); puts(\"installed libibp works\"); return 0; }\n",
          f);
    fclose(f);
    char cmd[16384];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && export PKG_CONFIG_PATH='%s/opt/lns/lib/pkgconfig' && "
             "cc -o prog prog.c $(pkg-config --define-prefix --cflags --libs libibp) "
             "-Wl,-rpath,'%s/opt/lns/lib' && ./prog",
             lns_test_tmpdir(), dest, dest);
    if (system(cmd) != 0) {
        fprintf(stderr, "\n  failed: %s\n", cmd);
        CU_FAIL("a program built against the installed libibp");
    }

    /* Man pages render without warnings. */
    CU_ASSERT_EQUAL(run("cd '%s/opt/lns/share/man' && for m in man1/ibp_tool.1 man8/ibp_depot.8;"
                        " do out=$(LC_ALL=C.UTF-8 MANWIDTH=80 groff -man -Tutf8 -ww -z $m 2>&1);"
                        " [ -z \"$out\" ] || { echo \"$m: $out\"; exit 1; }; done%s",
                        dest, ""),
                    0);
}

static const lns_test_case tests[] = {
    {"install under DESTDIR and build against it", test_install},
};

void lns_test_register(void)
{
    LNS_TEST_SUITE("make install", NULL, NULL, tests);
}
