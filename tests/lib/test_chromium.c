/* test_chromium.c -- find and run headless Chromium for the page tests (test_chromium.h). */
#include "test_chromium.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lns_test.h"

#define TC_MAX_EXTRA 16

int tc_find(char *out, size_t size)
{
    static const char *const names[] = {"chromium", "chromium-browser"};
    const char *path = getenv("PATH");
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        const char *p = path ? path : "/usr/bin:/bin";
        while (*p) {
            size_t n = strcspn(p, ":");
            snprintf(out, size, "%.*s/%s", (int)n, p, names[k]);
            if (n && access(out, X_OK) == 0)
                return 0;
            p += n + (p[n] == ':');
        }
    }
    return -1;
}

/* The last 1500 bytes of the browser's log on stderr: why it failed, usually. */
static void print_log_tail(void)
{
    char buf[1501];
    size_t n = 0;
    FILE *f = fopen(lns_test_path("chromium.log"), "r");
    if (f) {
        if (fseek(f, -1500L, SEEK_END) != 0)
            rewind(f);
        n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
    }
    buf[n] = 0;
    fprintf(stderr, "  end of its log (%s):\n%s\n", lns_test_path("chromium.log"),
            n ? buf : "(empty)");
}

int tc_run(const char *bin, const char *const *extra, const char *url, const char *out_file,
           int timeout_ms)
{
    static int runs;
    char name[64], udd[PATH_MAX + 32];
    snprintf(name, sizeof name, "chromium-profile-%d", runs++);
    snprintf(udd, sizeof udd, "--user-data-dir=%s", lns_test_path(name));
    const char *argv[16 + TC_MAX_EXTRA + 2] = {
        bin, "--headless=new", "--no-sandbox", "--disable-gpu", udd, "--no-first-run",
        "--no-default-browser-check", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--disable-quic", "--no-proxy-server"};
    size_t argc = 12;
    for (size_t i = 0; extra && extra[i]; i++) {
        if (i == TC_MAX_EXTRA) {
            fprintf(stderr, "\n  chromium: more than %d extra flags\n", TC_MAX_EXTRA);
            return -1;
        }
        argv[argc++] = extra[i];
    }
    argv[argc++] = url;
    argv[argc] = NULL;

    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        setpgid(0, 0);
        int o = open(out_file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(lns_test_path("chromium.log"), O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (o < 0 || e < 0)
            _exit(126);
        dup2(o, 1);
        dup2(e, 2);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    lns_test_track_pid(pid);
    int st = 0;
    for (int waited = 0;; waited += 50) {
        if (waitpid(pid, &st, WNOHANG) == pid)
            break;
        if (waited >= timeout_ms) {
            fprintf(stderr, "\n  chromium on %s: no exit after %d ms; killed\n", url,
                    timeout_ms);
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            lns_test_untrack_pid(pid);
            print_log_tail();
            return -1;
        }
        lns_test_sleep_ms(50);
    }
    lns_test_untrack_pid(pid);
    kill(-pid, SIGKILL); /* helpers it left behind, if any */
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "\n  chromium on %s: exit status 0x%x\n", url, st);
        print_log_tail();
        return -1;
    }
    return 0;
}
