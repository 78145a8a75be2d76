/* test_tools.c -- running the LoRS programs as a user runs them, for the CLI system tests.
 *
 * Every run writes the program's stdout and stderr to run.out and run.err in the tmpdir and
 * then reads them into the fixture, so a test judges only what a user would see: the exit
 * code, the text, and the files left behind.
 */
#include "test_tools.h"

#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lns_test.h"
#include "test_json.h"
#include "test_lors.h"

/* The fixture of the program's one tt_add_suite (CUnit's suite hooks take no argument). */
static tt_env_t *tt_suite_env;

static int tt_suite_init(void)
{
    tt_env_t *t = tt_suite_env;
    setenv("HOME", lns_test_tmpdir(), 1);
    unsetenv("LNS_RC");
    unsetenv("LNS_KEY");
    unsetenv("LNS_KEY_FILE");
    if (tl_fleet_start(t->dep, t->ldep, t->n, &t->cli) < 0)
        return -1;
    size_t len = 0;
    for (int i = 0; i < t->n; i++)
        len += (size_t)snprintf(t->depots + len, sizeof t->depots - len, "%s127.0.0.1:%d",
                                i == 0 ? "" : i == 2 ? " " : ",", t->dep[i].port);
    return 0;
}

static int tt_suite_clean(void)
{
    return tl_fleet_stop(tt_suite_env->dep, tt_suite_env->n, tt_suite_env->cli);
}

CU_pSuite tt_add_suite(tt_env_t *t, const char *name, int n, const lns_test_case *tests,
                       size_t ntests)
{
    if (tt_suite_env || n < 1 || n > TT_MAXD)
        return NULL;
    tt_suite_env = t;
    t->n = n;
    return lns_test_add_suite(name, tt_suite_init, tt_suite_clean, tests, ntests);
}

void tt_revive(tt_env_t *t)
{
    for (int i = 0; i < t->n; i++) {
        if (t->dep[i].pid == 0) {
            CU_ASSERT_EQUAL(td_restart(&t->dep[i]), 0);
        } else {
            kill(t->dep[i].pid, SIGCONT); /* one an earlier test stopped */
        }
    }
}

static void tt_collect(tt_env_t *t)
{
    lns_test_slurp(lns_test_path("run.out"), t->out, sizeof t->out);
    lns_test_slurp(lns_test_path("run.err"), t->err, sizeof t->err);
}

/* The path of bin/prog and its argv: prog, then the NULL-ended arguments (at most 62). */
static void program_argv(const char *prog, va_list ap, char path[PATH_MAX], const char *argv[64])
{
    const char *a;
    int argc = 0;
    snprintf(path, PATH_MAX, "%s/%s", lns_test_bindir(), prog);
    argv[argc++] = prog;
    while ((a = va_arg(ap, const char *)) != NULL && argc < 63)
        argv[argc++] = a;
    argv[argc] = NULL;
}

int tt_run(tt_env_t *t, const char *env, const char *in, const char *prog, ...)
{
    char path[PATH_MAX];
    const char *argv[64];
    va_list ap;
    va_start(ap, prog);
    program_argv(prog, ap, path, argv);
    va_end(ap);

    pid_t pid = fork();
    if (pid == 0) {
        int i = open(in ? in : "/dev/null", O_RDONLY);
        int o = open(lns_test_path("run.out"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(lns_test_path("run.err"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (i < 0 || o < 0 || e < 0)
            _exit(126);
        dup2(i, 0);
        dup2(o, 1);
        dup2(e, 2);
        if (env)
            putenv((char *)env);
        execv(path, (char *const *)argv);
        _exit(127);
    }
    int st = -1;
    if (pid < 0 || waitpid(pid, &st, 0) < 0)
        return -1;
    tt_collect(t);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int tt_sh(tt_env_t *t, const char *fmt, ...)
{
    char vars[sizeof t->depots + 8];
    snprintf(vars, sizeof vars, "L='%s'", t->depots);
    va_list ap;
    va_start(ap, fmt);
    int rc = lns_test_vsh(vars, fmt, ap);
    va_end(ap);
    tt_collect(t);
    return rc;
}

const char *tt_dlist(tt_env_t *t, int first, ...)
{
    static char buf[4][512];
    static int k;
    char *b = buf[k++ % 4];
    va_list ap;
    size_t n = 0;
    b[0] = 0;
    va_start(ap, first);
    for (int i = first; i >= 0 && i < t->n; i = va_arg(ap, int))
        n += (size_t)snprintf(b + n, sizeof buf[0] - n, "%s127.0.0.1:%d", n ? "," : "",
                              t->dep[i].port);
    va_end(ap);
    return b;
}

int tt_cap_port(const char *cap)
{
    ibp_cap_t c;
    return cap && ibp_cap_parse(cap, &c) == IBP_OK ? c.port : -1;
}

int tt_port_of(const char *depot)
{
    const char *c = strrchr(depot, ':');
    return c ? atoi(c + 1) : -1;
}

int tt_count(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

int tt_write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    int ok = fwrite(p, 1, n, f) == n;
    return fclose(f) == 0 && ok ? 0 : -1;
}

int tt_make_file(const char *path, size_t n, uint64_t seed)
{
    unsigned char *p = malloc(n ? n : 1);
    if (!p)
        return -1;
    lns_test_fill(p, n, seed);
    int rc = tt_write_file(path, p, n);
    free(p);
    return rc;
}

unsigned char *tt_read_whole(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *p = malloc(len > 0 ? (size_t)len : 1);
    *n = p ? fread(p, 1, (size_t)len, f) : 0;
    fclose(f);
    return p;
}

int tt_same_file(const char *a, const char *b)
{
    size_t na = 0, nb = 0;
    unsigned char *pa = tt_read_whole(a, &na), *pb = tt_read_whole(b, &nb);
    int same = pa && pb && na == nb && memcmp(pa, pb, na) == 0;
    free(pa);
    free(pb);
    return same;
}

xnd_t *tt_load(const char *path)
{
    xnd_t *x = NULL;
    char e[256];
    if (xnd_read_file(path, &x, e, sizeof e) != XND_OK)
        fprintf(stderr, "%s: %s\n", path, e);
    return x;
}

void tt_free_all(tt_env_t *t, const char *xnd)
{
    xnd_t *x = tt_load(xnd);
    for (size_t i = 0; x && i < x->nmaps; i++)
        ibp_decr(t->cli, x->maps[i]->cap[XND_MANAGE], IBP_READCAP);
    xnd_free(x);
}

int tt_upload(tt_env_t *t, size_t n, uint64_t seed, int copies, int frags, const char *depots,
              const char *extra, char *src, char *xnd)
{
    int id = ++t->seq;
    snprintf(src, 4096, "%s/f%d.bin", lns_test_tmpdir(), id);
    snprintf(xnd, 4096, "%s/f%d.xnd", lns_test_tmpdir(), id);
    if (tt_make_file(src, n, seed) < 0)
        return -1;
    int rc = tt_sh(t, "$B/lors_upload --depot-list '%s' -c %d -F %d -d 10m %s -o '%s' '%s'",
                   depots, copies, frags, extra ? extra : "", xnd, src);
    if (rc != 0)
        fprintf(stderr, "lors_upload exit %d: %s\n", rc, t->err);
    return rc;
}

int tt_downloads_equal(tt_env_t *t, const char *xnd, const char *src)
{
    char got[4096];
    snprintf(got, sizeof got, "%s/got%d.bin", lns_test_tmpdir(), ++t->seq);
    int rc = tt_sh(t, "$B/lors_download -o '%s' '%s'", got, xnd);
    if (rc != 0)
        fprintf(stderr, "lors_download exit %d: %s\n", rc, t->err);
    return rc == 0 && tt_same_file(got, src);
}

/* The mappings of the lors_ls --json document json into m; their number, or -1. */
static int tt_ls_maps(const char *json, tt_lsmap_t *m)
{
    const char *p = strstr(json, "\"mappings\":[");
    int n = 0;
    if (!p || !tj_valid(json))
        return -1;
    for (; n < TT_MAXM && (p = strstr(p, "{\"n\":")) != NULL; p++, n++) {
        const char *d = strstr(p, "\"depot\":\"");
        if (!d || sscanf(d + 9, "%127[^\"]", m[n].depot) != 1)
            return -1;
        m[n].off = tj_nth_int(p, "offset", 0);
        m[n].len = tj_nth_int(p, "length", 0);
        m[n].expires = tj_nth_int(p, "expires", 0);
    }
    return n;
}

int tt_ls_json(tt_env_t *t, const char *xnd, tt_lsmap_t *m)
{
    /* lors_ls exits non-zero for a file with dead mappings, but still prints the document */
    return tt_sh(t, "$B/lors_ls --json '%s'", xnd) == 0 || t->out[0] == '{'
               ? tt_ls_maps(t->out, m) : -1;
}

long long tt_ev_int(const char *line, const char *key)
{
    char pat[40];
    snprintf(pat, sizeof pat, " %s=", key);
    const char *p = strstr(line, pat);
    return p && p[strlen(pat)] != '-' ? strtoll(p + strlen(pat), NULL, 10) : LLONG_MIN;
}

/* ---- programs in the background ---- */

int tt_spawn(tt_env_t *t, tt_bg_t *bg, const char *prog, ...)
{
    char path[PATH_MAX];
    const char *argv[64];
    int p[2];
    va_list ap;
    (void)t;
    bg->pid = 0;
    bg->in = -1;
    va_start(ap, prog);
    program_argv(prog, ap, path, argv);
    va_end(ap);
    if (pipe(p) != 0) {
        perror("tt_spawn: pipe");
        return -1;
    }
    /* files of its own: two programs in the background at once keep their outputs apart */
    snprintf(bg->out, sizeof bg->out, "%s", lns_test_path("bg.out"));
    snprintf(bg->err, sizeof bg->err, "%s", lns_test_path("bg.err"));
    pid_t pid = fork();
    if (pid == 0) {
        char num[24];
        snprintf(num, sizeof num, ".%d", (int)getpid());
        strncat(bg->out, num, sizeof bg->out - strlen(bg->out) - 1);
        strncat(bg->err, num, sizeof bg->err - strlen(bg->err) - 1);
        int o = open(bg->out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(bg->err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (o < 0 || e < 0)
            _exit(126);
        dup2(p[0], 0);
        dup2(o, 1);
        dup2(e, 2);
        close(p[0]);
        close(p[1]);
        /* as from a terminal, even when the tests run in a background job (SIGINT ignored) */
        signal(SIGPIPE, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        execv(path, (char *const *)argv);
        _exit(127);
    }
    close(p[0]);
    if (pid < 0) {
        close(p[1]);
        perror("tt_spawn: fork");
        return -1;
    }
    lns_test_track_pid(pid);
    bg->pid = pid;
    bg->in = p[1];
    char num[24];
    snprintf(num, sizeof num, ".%d", (int)pid);
    strncat(bg->out, num, sizeof bg->out - strlen(bg->out) - 1);
    strncat(bg->err, num, sizeof bg->err - strlen(bg->err) - 1);
    return 0;
}

int tt_wait(tt_env_t *t, tt_bg_t *bg, int ms)
{
    int st = 0, rc = -1;
    if (bg->in >= 0)
        close(bg->in);
    bg->in = -1;
    if (bg->pid <= 0)
        return -1;
    for (int waited = 0;; waited += 10) {
        pid_t r = waitpid(bg->pid, &st, WNOHANG);
        if (r == bg->pid)
            break;
        if (r < 0 || waited >= ms) {
            fprintf(stderr, "tt_wait: pid %d still running after %d ms: killed\n", bg->pid, ms);
            kill(bg->pid, SIGKILL);
            waitpid(bg->pid, &st, 0);
            st = -1;
            break;
        }
        lns_test_sleep_ms(10);
    }
    lns_test_untrack_pid(bg->pid);
    bg->pid = 0;
    lns_test_slurp(bg->out, t->out, sizeof t->out);
    lns_test_slurp(bg->err, t->err, sizeof t->err);
    if (st != -1)
        rc = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? TT_SIGNALLED + WTERMSIG(st) : -1;
    return rc;
}

int tt_wait_lines(const char *path, const char *needle, int n, int ms)
{
    static char buf[1 << 18];
    for (int waited = 0; waited <= ms; waited += 10) {
        lns_test_slurp(path, buf, sizeof buf);
        if (tt_count(buf, needle) >= n)
            return 1;
        lns_test_sleep_ms(10);
    }
    return 0;
}

int tt_depot_allocs(tt_env_t *t, int i)
{
    ibp_depot_status_t s;
    if (ibp_status(t->cli, "127.0.0.1", t->dep[i].port, NULL, NULL, &s) != IBP_OK)
        return -1;
    return s.allocations;
}

int tt_serve(tt_env_t *t, tt_bg_t *bg, const char *dir, char *log, int *port, const char *a1,
             const char *a2, const char *a3, const char *a4)
{
    char pf[PATH_MAX];
    snprintf(pf, sizeof pf, "%s/serve.port", lns_test_tmpdir());
    snprintf(log, PATH_MAX, "%s/serve.log", lns_test_tmpdir());
    unlink(pf);
    unlink(log);
    if (tt_spawn(t, bg, "lors_serve", "--no-rc", "-p", "0", "--port-file", pf, "--log", log,
                 "-T", "3s", dir, a1, a2, a3, a4, (char *)NULL) != 0)
        return -1;
    int64_t end = lns_test_deadline(LNS_TEST_WAIT_MS);
    do {
        FILE *f = fopen(pf, "r");
        if (f) {
            int ok = fscanf(f, "%d", port) == 1;
            fclose(f);
            if (ok)
                return 0;
        }
        if (bg->pid > 0 && kill(bg->pid, 0) != 0)
            break;
    } while (lns_test_poll(end));
    return -1;
}
