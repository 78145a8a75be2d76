/* test_install.c -- make install: the files land under DESTDIR/PREFIX, and for each of the
 * four libraries a program (tests/data/install/use_<lib>.c) built against the installed
 * headers and shared library, found through the installed pkg-config file, runs.  The programs
 * are plain cc builds against the release libraries that make install installs, whichever
 * build this test comes from.  The two systemd units pass systemd-analyze verify (when it is
 * there; SKIP is printed otherwise) and their ExecStart= lines, with the installed default
 * configs, start servers that answer.  Also: make's quiet lines (V=1: the commands).  Runs
 * from the top of the source tree, as tests/run.sh does. */
#include <CUnit/CUnit.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lns_test.h"
#include "test_depot.h"
#include "test_lbone.h"

static char dest[4096];

static int run(const char *fmt, const char *a, const char *b)
{
    char cmd[32768];
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

#define UNITS "/opt/lns/lib/systemd/system/"

/* The first line of the installed unit starting with key (e.g. "ExecStart="), without it,
 * into out; -1 if none. */
static int unit_line(const char *unit, const char *key, char *out, size_t size)
{
    char path[8192], line[4096];
    snprintf(path, sizeof path, "%s" UNITS "%s", dest, unit);
    FILE *f = fopen(path, "r");
    int rc = -1;
    while (f && rc < 0 && fgets(line, sizeof line, f))
        if (strncmp(line, key, strlen(key)) == 0) {
            line[strcspn(line, "\n")] = 0;
            snprintf(out, size, "%s", line + strlen(key));
            rc = 0;
        }
    if (f)
        fclose(f);
    return rc;
}

/* Start the unit's ExecStart= command as systemd would, its /opt/lns paths inside DESTDIR,
 * with more arguments (space-separated; the test's port file, data and port) after it; its
 * output into log.  Waits for portfile: the port, the process in *pid (tracked), or -1. */
static int start_unit(const char *unit, const char *more, const char *portfile, const char *log,
                      int *pid)
{
    char exec[4096], words[8192], *argv[64];
    int argc = 0, n = 0;
    if (unit_line(unit, "ExecStart=", exec, sizeof exec) < 0)
        return -1;
    for (char *w = strtok(exec, " "); w && n < (int)sizeof words; w = strtok(NULL, " "))
        n += snprintf(words + n, sizeof words - (size_t)n, "%s%s ",
                      strncmp(w, "/opt/lns/", 9) == 0 ? dest : "", w);
    snprintf(words + n, sizeof words - (size_t)n, "%s", more);
    for (char *w = strtok(words, " "); w && argc < 63; w = strtok(NULL, " "))
        argv[argc++] = w;
    argv[argc] = NULL;
    unlink(portfile);
    *pid = fork();
    if (*pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        dup2(fd, 1);
        dup2(fd, 2);
        execv(argv[0], argv);
        _exit(127);
    }
    if (*pid < 0)
        return -1;
    lns_test_track_pid(*pid);
    for (int i = 0; i < 1500; i++) {
        char buf[32];
        lns_test_slurp(portfile, buf, sizeof buf);
        if (strchr(buf, '\n'))
            return atoi(buf);
        if (waitpid(*pid, NULL, WNOHANG) == *pid) {
            lns_test_untrack_pid(*pid);
            *pid = 0;
            break;
        }
        lns_test_sleep_ms(10);
    }
    char cat[PATH_MAX + 16];
    fprintf(stderr, "\n  %s did not start; its output:\n", unit);
    snprintf(cat, sizeof cat, "cat '%s'", log);
    lns_test_run_echo(cat);
    if (*pid)
        lns_test_signal_child(pid, SIGKILL);
    return -1;
}

/* The installed units: systemd-analyze verify (with their paths pointed into DESTDIR, and
 * MANPATH there for Documentation=man:), and their commands, as written, start servers that
 * answer with the installed default configs (only the data, port and token go to the test's
 * directory). */
static void test_units(void)
{
    CU_ASSERT_FATAL(dest[0] != 0);
    char tmp[PATH_MAX], log[PATH_MAX + 32], portfile[PATH_MAX + 32], more[5 * PATH_MAX + 128];
    char line[4096];
    int pid;
    snprintf(tmp, sizeof tmp, "%s/units", lns_test_tmpdir());
    mkdir(tmp, 0755);
    if (system("command -v systemd-analyze >/dev/null 2>&1") == 0) {
        CU_ASSERT_EQUAL(run("set -e; cd '%1$s'; for u in ibp_depot lbone_server; do"
                            " sed 's|/opt/lns/|%2$s/opt/lns/|g' '%2$s/opt/lns/lib/systemd/system/'$u.service"
                            " > $u.service;"
                            " MANPATH='%2$s/opt/lns/share/man' systemd-analyze verify ./$u.service; done",
                            tmp, dest),
                        0);
    } else {
        printf("\nSKIP test_install: systemd-analyze verify of the units (no systemd-analyze)\n");
    }

    /* ibp_depot: its config, the installed default, is good as it is */
    CU_ASSERT_EQUAL(run("'%1$s/opt/lns/bin/ibp_depot' --config '%1$s/opt/lns/etc/lns/ibp_depot.conf'"
                        " --check-config >/dev/null%2$s",
                        dest, ""),
                    0);
    /* The installed depot finds the installed gazetteer (share/lns beside its bin/): an
     * unknown place is refused, a known one accepted, and nothing says the data is missing
     * (without the data it would let both pass, and log that). */
    char tokfile[PATH_MAX + 16], cmd0[5 * 4096];
    snprintf(tokfile, sizeof tokfile, "%s/lbtoken", tmp);
    FILE *tf = fopen(tokfile, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(tf);
    fputs("install-test-token-0123456789\n", tf);
    fclose(tf);
    for (int known = 0; known <= 1; known++) {
        snprintf(cmd0, sizeof cmd0, "env -u LNS_GAZETTEER '%s/opt/lns/bin/ibp_depot' --config "
                 "'%s/opt/lns/etc/lns/ibp_depot.conf' --check-config --lbone http://127.0.0.1:1 "
                 "--lbone-token-file '%s' --lbone-place 'airport= %s' >'%s/place.log' 2>&1",
                 dest, dest, tokfile, known ? "TYS" : "QQQ", tmp);
        int rc = system(cmd0);
        CU_ASSERT_EQUAL(WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, known ? 0 : 2);
        snprintf(cmd0, sizeof cmd0, "cat '%s/place.log'", tmp);
        if (rc != (known ? 0 : 2 << 8))
            lns_test_run_echo(cmd0);
        CU_ASSERT_EQUAL(run("! grep -q gazetteer '%s/place.log'%s", tmp, ""), 0);
    }
    snprintf(log, sizeof log, "%s/depot.log", tmp);
    snprintf(portfile, sizeof portfile, "%s/depot.port", tmp);
    snprintf(more, sizeof more, "--listen 127.0.0.1 --port 0 --port-file %s --resource "
             "%s/data,hard=1M,soft=1M", portfile, tmp);
    int port = start_unit("ibp_depot.service", more, portfile, log, &pid);
    CU_ASSERT(port > 0);
    if (port > 0) {
        test_depot_t d = {.port = port};
        int fd = td_connect(&d);
        char reply[512] = "";
        /* raw_reqf appends the KEY:value fields; CH is the hard capacity (ACCRE's keys) */
        CU_ASSERT(fd >= 0 && raw_reqf(fd, reply, sizeof reply, "1 4 0 1 x 30\n") == 1);
        CU_ASSERT(strstr(reply, "CH:1048576 ") != NULL);
        if (fd >= 0)
            close(fd);
        CU_ASSERT_EQUAL(lns_test_signal_child(&pid, SIGTERM), 0);
    }

    /* lbone_server: the unit's first ExecStartPre makes the registry token in its state
     * directory (here the test's), with mode 600 */
    CU_ASSERT_FATAL(unit_line("lbone_server.service", "ExecStartPre=", line, sizeof line) == 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "/var/lib/lbone/token"));
    char cmd[8192], *p;
    size_t n = 0;
    for (p = line; *p && n < sizeof cmd - PATH_MAX; p++) {
        if (strncmp(p, "/var/lib/lbone", 14) == 0) {
            n += (size_t)snprintf(cmd + n, sizeof cmd - n, "%s", tmp);
            p += 13;
        } else {
            cmd[n++] = *p;
        }
    }
    cmd[n] = 0;
    CU_ASSERT_EQUAL(system(cmd), 0);
    char token[PATH_MAX + 16], tok[600];
    struct stat st;
    snprintf(token, sizeof token, "%s/token", tmp);
    CU_ASSERT(stat(token, &st) == 0 && (st.st_mode & 0777) == 0600);
    lns_test_slurp(token, tok, sizeof tok);
    CU_ASSERT(strlen(tok) > 16);
    CU_ASSERT_EQUAL(system(cmd), 0); /* a second start keeps it */
    char again[600];
    lns_test_slurp(token, again, sizeof again);
    CU_ASSERT_STRING_EQUAL(tok, again);
    CU_ASSERT_EQUAL(run("'%1$s/opt/lns/bin/lbone_server' --config '%1$s/opt/lns/etc/lns/lbone_server.conf'"
                        " --token-file '%2$s/token' --check-config >/dev/null",
                        dest, tmp),
                    0);
    snprintf(log, sizeof log, "%s/lbone.log", tmp);
    snprintf(portfile, sizeof portfile, "%s/lbone.port", tmp);
    snprintf(more, sizeof more, "--listen 127.0.0.1 --port 0 --port-file %s --token-file %s "
             "--db %s/lbone.db --pin-file %s/lbone.pin", portfile, token, tmp, tmp);
    port = start_unit("lbone_server.service", more, portfile, log, &pid);
    CU_ASSERT(port > 0);
    if (port > 0) {
        /* HTTPS by default, the key made beside the database, 0600 */
        char *resp = NULL, key[PATH_MAX + 16], pinf[PATH_MAX + 16], pin[128] = "";
        snprintf(key, sizeof key, "%s/lbone.db.key", tmp);
        CU_ASSERT(stat(key, &st) == 0 && (st.st_mode & 0777) == 0600);
        snprintf(pinf, sizeof pinf, "%s/lbone.pin", tmp);
        lns_test_slurp(pinf, pin, sizeof pin);
        pin[strcspn(pin, "\n")] = 0;
        tlb_pin_remember(port, pin);
        CU_ASSERT_EQUAL(tlb_http(port, "GET", "/healthz", NULL, NULL, &resp), 200);
        free(resp);
        CU_ASSERT_EQUAL(lns_test_signal_child(&pid, SIGTERM), 0);
        /* it loaded the installed gazetteer at start, or it would have logged that it could
         * not */
        CU_ASSERT_EQUAL(run("! grep gazetteer '%s'%s", log, ""), 0);
    }
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
        "/opt/lns/lib/systemd/system/ibp_depot.service", "/opt/lns/bin/lbone_server",
        "/opt/lns/share/man/man8/lbone_server.8", "/opt/lns/etc/lns/lbone_server.conf.sample",
        "/opt/lns/lib/systemd/system/lbone_server.service",
        "/opt/lns/share/lns/gazetteer.txt", "/opt/lns/share/lns/world.txt",
        /* the configs the units run with: made from the samples unless there */
        "/opt/lns/etc/lns/ibp_depot.conf", "/opt/lns/etc/lns/lbone_server.conf",
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        if (!exists(files[i]))
            fprintf(stderr, "\n  missing %s\n", files[i]);
        CU_ASSERT(exists(files[i]));
    }
    /* The units must name the installed binaries and configs, not the build tree. */
    CU_ASSERT_EQUAL(run("grep -q 'ExecStart=/opt/lns/bin/lbone_server --config /opt/lns/etc/lns/'"
                        " '%s/opt/lns/lib/systemd/system/lbone_server.service'%s",
                        dest, ""),
                    0);
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
    CU_ASSERT_EQUAL(run("cd '%s/opt/lns/share/man' && for m in man1/ibp_tool.1 man8/ibp_depot.8"
                        " man8/lbone_server.8;"
                        " do out=$(LC_ALL=C.UTF-8 MANWIDTH=80 groff -man -Tutf8 -ww -z $m 2>&1);"
                        " [ -z \"$out\" ] || { echo \"$m: $out\"; exit 1; }; done%s",
                        dest, ""),
                    0);
}

/* The configs the units run with are the admin's once installed: a second make install
 * keeps them (and refreshes the samples), make uninstall removes the rest but not them. */
static void test_reinstall_uninstall(void)
{
    CU_ASSERT_FATAL(dest[0] != 0);
    CU_ASSERT_EQUAL(run("set -e; cd '%s/opt/lns/etc/lns'; for c in ibp_depot lbone_server; do"
                        " echo '# edited by the admin' >> $c.conf; rm $c.conf.sample; done%s",
                        dest, ""),
                    0);
    CU_ASSERT_EQUAL_FATAL(run("make -s install DESTDIR='%s' PREFIX=/opt/lns SYSCONFDIR=/opt/lns/etc"
                              " >'%s/install2.log' 2>&1", dest, lns_test_tmpdir()),
                          0);
    CU_ASSERT_EQUAL(run("set -e; cd '%s/opt/lns/etc/lns'; for c in ibp_depot lbone_server; do"
                        " grep -q '^# edited by the admin' $c.conf; test -f $c.conf.sample; done%s",
                        dest, ""),
                    0);
    CU_ASSERT_EQUAL_FATAL(run("make -s uninstall DESTDIR='%s' PREFIX=/opt/lns SYSCONFDIR=/opt/lns/etc"
                              " >'%s/uninstall.log' 2>&1", dest, lns_test_tmpdir()),
                          0);
    CU_ASSERT(!exists(UNITS "ibp_depot.service") && !exists(UNITS "lbone_server.service"));
    CU_ASSERT(!exists("/opt/lns/bin/lbone_server") && !exists("/opt/lns/etc/lns/ibp_depot.conf.sample"));
    CU_ASSERT(exists("/opt/lns/etc/lns/ibp_depot.conf") && exists("/opt/lns/etc/lns/lbone_server.conf"));
}

/* make is quiet by default, one "  CC  FILE.o" line per object, and the compiler's warnings
 * still show; V=1 prints the command.  The object goes to a build directory of the test's own
 * (B=), so the tree's builds are not touched. */
static void test_quiet_build(void)
{
    char cmd[8192], out[8192];
    const char *t = lns_test_tmpdir();
    for (int v = 0; v <= 1; v++) {
        snprintf(cmd, sizeof cmd,
                 "make V=%d B='%s/b%d' '%s/b%d/obj/tests/data/make/warn.o' >'%s/make%d.log' 2>&1",
                 v, t, v, t, v, t, v);
        CU_ASSERT_EQUAL(system(cmd), 0);
        snprintf(cmd, sizeof cmd, "%s/make%d.log", t, v);
        FILE *f = fopen(cmd, "r");
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        size_t n = fread(out, 1, sizeof out - 1, f);
        fclose(f);
        out[n] = 0;
        char line[4096];
        snprintf(line, sizeof line, "  CC  %s/b%d/obj/tests/data/make/warn.o\n", t, v);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, "warning: unused variable"));
        if (v == 0) {
            CU_ASSERT_EQUAL(strncmp(out, line, strlen(line)), 0);
            CU_ASSERT_PTR_NULL(strstr(out, "-c tests/data/make/warn.c"));
        } else {
            CU_ASSERT_PTR_NOT_NULL(strstr(out, "-c tests/data/make/warn.c"));
            CU_ASSERT_PTR_NULL(strstr(out, "  CC  "));
        }
        if (!CU_get_number_of_failures())
            continue;
        fprintf(stderr, "\n  make V=%d printed:\n%s", v, out);
    }
}

static const lns_test_case tests[] = {
    {"make: quiet lines by default, the commands with V=1", test_quiet_build},
    {"install under DESTDIR and build against it", test_install},
    {"systemd units: verify, and their commands start", test_units},
    {"reinstall keeps the configs, uninstall leaves them", test_reinstall_uninstall},
};

LNS_TEST_MAIN("make install", tests)
