/* test_install.c -- make install: the files land under DESTDIR/PREFIX, and for each of the
 * four libraries a program (tests/data/install/use_<lib>.c) built against the installed
 * headers and shared library, found through the installed pkg-config file, runs.  The programs
 * are plain cc builds against the release libraries that make install installs, whichever
 * build this test comes from.  Runs from the top of the source tree, as tests/run.sh does. */
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

/* Build tests/data/install/use_<lib>.c with pkg-config's flags for lib (PKG_CONFIG_PATH into
 * DESTDIR, --define-prefix so the paths point there too), check it needs lib<name>.so.0 (not
 * the static archive) and run it with LD_LIBRARY_PATH.  1 if it built and ran. */
static int use_library(const char *lib)
{
    char cmd[16384];
    snprintf(cmd, sizeof cmd,
             "set -e; src=\"$PWD/tests/data/install/use_%s.c\"; cd '%s'; "
             "export PKG_CONFIG_PATH='%s/opt/lns/lib/pkgconfig' LD_LIBRARY_PATH='%s/opt/lns/lib'; "
             "cc -Wall -Werror -o use_%s \"$src\" $(pkg-config --define-prefix --cflags --libs %s); "
             "readelf -d use_%s | grep -q 'NEEDED.*\\[%s\\.so\\.0\\]'; ./use_%s",
             lib, lns_test_tmpdir(), dest, dest, lib, lib, lib, lib, lib);
    int rc = system(cmd);
    if (rc != 0)
        fprintf(stderr, "\n  failed (%d): %s", rc, cmd);
    return rc == 0;
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
        "/opt/lns/lib/libexnode.a",         "/opt/lns/lib/libexnode.so",
        "/opt/lns/lib/libexnode.so.0",      "/opt/lns/lib/pkgconfig/libexnode.pc",
        "/opt/lns/lib/liblors.a",           "/opt/lns/lib/liblors.so",
        "/opt/lns/lib/liblors.so.0",        "/opt/lns/lib/pkgconfig/liblors.pc",
        "/opt/lns/lib/liblbone.a",          "/opt/lns/lib/liblbone.so",
        "/opt/lns/lib/liblbone.so.0",       "/opt/lns/lib/pkgconfig/liblbone.pc",
        "/opt/lns/include/lns/ibp.h",       "/opt/lns/include/lns/xnd.h",
        "/opt/lns/include/lns/lors.h",      "/opt/lns/include/lns/lbone.h",
        "/opt/lns/share/man/man1/ibp_tool.1",
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

    /* For each library a program built only from what was installed, linked to the .so. */
    static const char *const libs[] = {"libibp", "libexnode", "liblors", "liblbone"};
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++)
        if (!use_library(libs[i])) {
            fprintf(stderr, "\n  (a program against the installed %s)", libs[i]);
            CU_FAIL("a program built against an installed library");
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

LNS_TEST_MAIN("make install", tests)
