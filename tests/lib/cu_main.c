/* cu_main.c -- main() of every test program: run the suites, clean up, print one RESULT line.
 *
 * Child processes (depots) and temporary directories are cleaned up by an atexit handler and
 * by handlers for the fatal signals, so a failing or crashing test leaves nothing behind. */
#include "lns_test.h"

#include <CUnit/Basic.h>
#include <dirent.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lns_net.h"
#include "lns_time.h"

#define MAX_PIDS 256

static char bindir[PATH_MAX];
static char tmpdir[PATH_MAX];
static volatile pid_t pids[MAX_PIDS];
static const char *progname = "test";

const char *lns_test_bindir(void)
{
    return bindir;
}

static void cleanup(void)
{
    for (int i = 0; i < MAX_PIDS; i++) {
        if (pids[i] > 0) {
            kill(pids[i], SIGKILL);
            waitpid(pids[i], NULL, 0);
            pids[i] = 0;
        }
    }
    const char *keep = getenv("LNS_TEST_KEEP");
    if (tmpdir[0] && keep && *keep && strcmp(keep, "0") != 0) {
        fprintf(stderr, "%s: LNS_TEST_KEEP: kept %s\n", progname, tmpdir);
        tmpdir[0] = 0;
    }
    if (tmpdir[0]) {
        char cmd[PATH_MAX + 32];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0)
            fprintf(stderr, "%s: could not remove %s\n", progname, tmpdir);
        tmpdir[0] = 0;
    }
}

static void on_signal(int sig)
{
    for (int i = 0; i < MAX_PIDS; i++)
        if (pids[i] > 0)
            kill(pids[i], SIGKILL);
    signal(sig, SIG_DFL);
    raise(sig);
}

const char *lns_test_tmpdir(void)
{
    if (!tmpdir[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(tmpdir, sizeof tmpdir, "%s/lns-test-XXXXXX", base && *base ? base : "/tmp");
        if (!mkdtemp(tmpdir)) {
            perror("mkdtemp");
            exit(2);
        }
    }
    return tmpdir;
}

const char *lns_test_path(const char *name)
{
    static char buf[16][4096];
    static int i;
    i = (i + 1) % 16;
    snprintf(buf[i], sizeof buf[i], "%s/%s", lns_test_tmpdir(), name);
    return buf[i];
}

void lns_test_slurp(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, size - 1, f) : 0;
    buf[n] = 0;
    if (f)
        fclose(f);
}

void lns_test_has(const char *file, int line, const char *text, ...)
{
    va_list ap;
    va_start(ap, text);
    for (const char *needle; (needle = va_arg(ap, const char *)) != NULL;) {
        char what[512];
        snprintf(what, sizeof what, "the text holds \"%s\"", needle);
        CU_assertImplementation(strstr(text, needle) != NULL, (unsigned)line, what, file, "",
                                CU_FALSE);
    }
    va_end(ap);
}

int64_t lns_test_drain(int fd, int ms)
{
    char buf[4096];
    ssize_t n;
    int64_t total = 0;
    while ((n = lns_read_some(fd, buf, sizeof buf, ms, lns_deadline_ms(ms))) > 0)
        total += n;
    return total;
}

int lns_test_find_file(const char *rel, char *out, size_t size)
{
    char alt[sizeof bindir + 4096];
    snprintf(alt, sizeof alt, "%s/../../../%s", lns_test_bindir(), rel);
    const char *cands[2] = {rel, alt};
    for (int i = 0; i < 2; i++)
        if (access(cands[i], X_OK) == 0) {
            snprintf(out, size, "%s", cands[i]);
            return 0;
        }
    return -1;
}

int lns_test_run_echo(const char *cmd)
{
    FILE *f = popen(cmd, "r");
    if (!f)
        return -1;
    char line[1024];
    while (fgets(line, sizeof line, f))
        printf("    %s", line);
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int lns_test_vsh(const char *vars, const char *fmt, va_list ap)
{
    char cmd[8192], full[8192 + 4 * PATH_MAX + 1024];
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    snprintf(full, sizeof full, "B='%s'; D='%s'; %s; (%s) >'%s' 2>'%s' </dev/null",
             lns_test_bindir(), lns_test_tmpdir(), vars, cmd, lns_test_path("run.out"),
             lns_test_path("run.err"));
    int st = system(full);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

void lns_test_script(const char *path, const char *skip_why)
{
    char cmd[3 * PATH_MAX];
    snprintf(cmd, sizeof cmd, "'%s' '%s' 2>&1", path, lns_test_bindir());
    int rc = lns_test_run_echo(cmd);
    if (rc == 77)
        printf("%s\n", skip_why);
    CU_ASSERT_EQUAL(rc, 0);
}

void lns_test_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int64_t lns_test_deadline(int ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + ms;
}

int lns_test_poll(int64_t deadline)
{
    if (lns_test_deadline(0) >= deadline)
        return 0;
    lns_test_sleep_ms(10);
    return 1;
}

double lns_test_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* kill() only queues SIGSTOP: wait until every thread of pid has stopped (2 s at most).
 * 0, or -1. */
static int wait_stopped(int pid)
{
    char path[64];
    for (int tries = 0; tries < 200; tries++) {
        int running = 0;
        snprintf(path, sizeof path, "/proc/%d/task", pid);
        DIR *dir = opendir(path);
        struct dirent *e;
        if (!dir)
            return -1;
        while ((e = readdir(dir)) != NULL) {
            char stat[320], buf[512], *rp;
            if (e->d_name[0] == '.')
                continue;
            snprintf(stat, sizeof stat, "/proc/%d/task/%s/stat", pid, e->d_name);
            FILE *f = fopen(stat, "r");
            if (!f)
                continue;
            if (fgets(buf, sizeof buf, f) && (rp = strrchr(buf, ')')) && rp[1] && rp[2] != 'T')
                running++;
            fclose(f);
        }
        closedir(dir);
        if (!running)
            return 0;
        lns_test_sleep_ms(10);
    }
    return -1;
}

int lns_test_signal_child(int *pid, int sig)
{
    if (*pid <= 0 || kill(*pid, sig) < 0)
        return -1;
    if (sig == SIGSTOP)
        return wait_stopped(*pid);
    if (sig == SIGKILL || sig == SIGTERM || sig == SIGINT) {
        int st;
        for (int i = 0; i < 1000; i++) {
            if (waitpid(*pid, &st, WNOHANG) == *pid)
                break;
            if (i == 999) {
                kill(*pid, SIGKILL);
                waitpid(*pid, &st, 0);
            }
            lns_test_sleep_ms(10);
        }
        lns_test_untrack_pid(*pid);
        *pid = 0;
    }
    return 0;
}

int lns_test_log_clean(const char *path)
{
    char line[4096];
    int bad = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return 1;
    int shown = 0;
    while (fgets(line, sizeof line, f)) {
        if (strstr(line, "Sanitizer") || strstr(line, "runtime error")) {
            if (!bad++)
                fprintf(stderr, "\n  %s has sanitizer lines; the report:\n", path);
            shown = 1;
        }
        if (shown && shown <= 40) /* the report's first lines: what and where */
            fprintf(stderr, "    | %s", line), shown++;
    }
    fclose(f);
    if (bad)
        fprintf(stderr, "  %s: %d sanitizer lines\n", path, bad);
    return bad == 0;
}

uint64_t lns_test_rand(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

void lns_test_fill(void *buf, size_t n, uint64_t seed)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
    unsigned char *p = buf;
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(lns_test_rand(&x) >> 24);
}

void lns_test_add_tests(CU_pSuite s, const lns_test_case *tests, size_t n)
{
    const char *only = getenv("LNS_TEST_ONLY"); /* run only the tests whose name has this */
    for (size_t i = 0; i < n; i++)
        if (!only || !*only || strstr(tests[i].name, only))
            CU_add_test(s, tests[i].name, tests[i].fn);
}

CU_pSuite lns_test_add_suite(const char *name, CU_InitializeFunc init, CU_CleanupFunc clean,
                             const lns_test_case *tests, size_t n)
{
    CU_pSuite s = CU_add_suite(name, init, clean);
    lns_test_add_tests(s, tests, n);
    return s;
}

void lns_test_track_pid(int pid)
{
    for (int i = 0; i < MAX_PIDS; i++)
        if (pids[i] == 0) {
            pids[i] = pid;
            return;
        }
}

void lns_test_untrack_pid(int pid)
{
    for (int i = 0; i < MAX_PIDS; i++)
        if (pids[i] == pid)
            pids[i] = 0;
}

int main(int argc, char **argv)
{
    char self[PATH_MAX];
    const char *env = getenv("LNS_BIN");

    (void)argc;
    progname = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
    if (env && *env) {
        snprintf(bindir, sizeof bindir, "%s", env);
    } else {
        snprintf(self, sizeof self, "%s", argv[0]);
        snprintf(bindir, sizeof bindir, "%s/../bin", dirname(self));
    }
    signal(SIGPIPE, SIG_IGN);
    atexit(cleanup);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGSEGV, on_signal);
    signal(SIGABRT, on_signal);

    if (CU_initialize_registry() != CUE_SUCCESS)
        return 2;
    lns_test_register();
    CU_basic_set_mode(getenv("LNS_TEST_VERBOSE") ? CU_BRM_VERBOSE : CU_BRM_NORMAL);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_tests_failed();
    unsigned run = CU_get_number_of_tests_run();
    unsigned fails_registry = CU_get_error() != CUE_SUCCESS;
    printf("\nRESULT %s %u %u\n", progname, run - failed, failed + fails_registry);
    CU_cleanup_registry();
    return failed || fails_registry ? 1 : 0;
}
