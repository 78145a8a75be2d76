/* play_gateway.c -- lors_play --start: the private lors_serve child and its lifetime.
 *
 * A pipe cannot seek, so to start a player in the middle of a file lors_play runs lors_serve
 * on 127.0.0.1 (port 0: any free one, read back from --port-file) serving just that exNode,
 * and points the player at its URL with the player's own start option.  Everything the
 * gateway needs lives in one mkdtemp directory (mode 0700), removed at the end.  The gateway
 * decrypts with the file's key, so it asks every request for a random token of the session,
 * read from a file of mode 0600 in that directory (never in an argv, which `ps` shows every
 * user); the player sends it as a header from an option file there (mpv, mplayer) or in the
 * URL's query (vlc, commands).  The one idea: the
 * gateway must never outlive the player, whatever ends the session -- the player exiting or
 * dying, SIGINT or SIGTERM to lors_play (blocked, and taken with sigtimedwait so that the
 * cleanup runs in the main flow, not in a handler), or lors_play itself dying (the child
 * asks for SIGTERM when its parent goes, PR_SET_PDEATHSIG).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "lns_err.h"
#include "lns_hex.h"
#include "play_gateway.h"

int play_parse_pos(const char *s, double *secs)
{
    double parts[3];
    int n = 0;
    const char *p = s;
    if (!*s)
        return -1;
    for (;;) {
        char *end;
        if (n == 3 || !(*p >= '0' && *p <= '9'))
            return -1;
        errno = 0;
        parts[n] = strtod(p, &end);
        if (errno || end == p)
            return -1;
        n++;
        if (*end == ':') {
            /* only the seconds may have a fraction */
            if (memchr(p, '.', (size_t)(end - p)))
                return -1;
            p = end + 1;
            continue;
        }
        if (*end)
            return -1;
        break;
    }
    double v = 0;
    for (int i = 0; i < n; i++) {
        if (i > 0 && parts[i] >= 60)
            return -1;
        v = v * 60 + parts[i];
    }
    if (!(v >= 0) || v > 1e9)
        return -1;
    *secs = v;
    return 0;
}

void play_format_secs(double secs, char *buf, size_t size)
{
    snprintf(buf, size, "%.3f", secs);
    char *dot = strchr(buf, '.');
    if (!dot)
        return;
    char *e = buf + strlen(buf) - 1;
    while (e > dot && *e == '0')
        *e-- = '\0';
    if (e == dot)
        *e = '\0';
}

void play_signals_block(void)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGINT);
    sigaddset(&s, SIGTERM);
    sigaddset(&s, SIGCHLD);
    sigprocmask(SIG_BLOCK, &s, NULL);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* The exit status of a reaped child: its code, or 128 + the signal that killed it. */
static int status_of(int st)
{
    return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
}

/* SIGTERM, then SIGKILL after 3 s; reaped.  Its status. */
static int stop_child(pid_t pid)
{
    int st;
    kill(pid, SIGTERM);
    for (int i = 0; i < 300; i++) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid)
            return status_of(st);
        if (r < 0 && errno != EINTR)
            return -1;
        sleep_ms(10);
    }
    kill(pid, SIGKILL);
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return status_of(st);
}

static void path_in(const play_gateway_t *g, const char *name, char *buf, size_t size)
{
    snprintf(buf, size, "%s/%s", g->dir, name);
}

/* path, created new with mode 0600, holding a then b.  0 or -1 (errno). */
static int write_private(const char *path, const char *a, const char *b)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        return -1;
    }
    int ok = fputs(a, f) >= 0 && fputs(b, f) >= 0;
    if (fclose(f) != 0 || !ok)
        return -1;
    return 0;
}

int play_gateway_player_conf(const play_gateway_t *g, const char *text, char *path,
                             size_t size)
{
    path_in(g, "player.conf", path, size);
    unlink(path);
    return write_private(path, text, "");
}

/* The URL path of an exNode's served name: its bytes outside the unreserved set as %XX. */
static void url_name(const char *path, char *buf, size_t size)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    size_t n = strlen(b), o = 0;
    if (n > 4 && strcmp(b + n - 4, ".xnd") == 0)
        n -= 4;
    for (size_t i = 0; i < n && o + 4 < size; i++) {
        unsigned char c = (unsigned char)b[i];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            strchr("-._~", c))
            buf[o++] = (char)c;
        else
            o += (size_t)snprintf(buf + o, size - o, "%%%02X", c);
    }
    buf[o] = '\0';
}

/* The first line of lors_serve's stderr, for the error message. */
static void first_err_line(const play_gateway_t *g, char *buf, size_t size)
{
    char p[sizeof g->dir + 16];
    path_in(g, "serve.err", p, sizeof p);
    buf[0] = '\0';
    FILE *f = fopen(p, "r");
    if (f) {
        if (!fgets(buf, (int)size, f))
            buf[0] = '\0';
        fclose(f);
    }
    buf[strcspn(buf, "\n")] = '\0';
}

int play_gateway_start(play_gateway_t *g, const char *serve_bin, const char *path,
                       const xnd_t *x, const char *const *extra, char *err, size_t errlen)
{
    char portf[sizeof g->dir + 16], logf[sizeof g->dir + 16], errf[sizeof g->dir + 16];
    char xp[sizeof g->dir + 16], name[3 * 256 + 1], xerr[256];
    const char *argv[32];
    int n = 0;

    memset(g, 0, sizeof *g);
    const char *tmp = getenv("TMPDIR");
    snprintf(g->dir, sizeof g->dir, "%s/lors_play-XXXXXX",
             tmp && *tmp && strlen(tmp) < sizeof g->dir - 64 ? tmp : "/tmp");
    if (!mkdtemp(g->dir)) {
        lns_err_set(err, errlen, "a temporary directory in %s: %s", g->dir, strerror(errno));
        g->dir[0] = '\0';
        return -1;
    }
    /* the token: 16 random bytes in hex, into a file only we can read */
    unsigned char rnd[16];
    char tokf[sizeof g->dir + 16];
    if (RAND_bytes(rnd, sizeof rnd) != 1) {
        lns_err_set(err, errlen, "no random token for the gateway: OpenSSL's RAND_bytes failed");
        return -1;
    }
    lns_hex(rnd, sizeof rnd, g->token);
    memset(rnd, 0, sizeof rnd);
    path_in(g, "token", tokf, sizeof tokf);
    if (write_private(tokf, g->token, "\n") < 0) {
        lns_err_set(err, errlen, "the gateway's token file %s: %s", tokf, strerror(errno));
        return -1;
    }
    path_in(g, "port", portf, sizeof portf);
    path_in(g, "serve.log", logf, sizeof logf);
    path_in(g, "serve.err", errf, sizeof errf);
    if (strcmp(path, "-") == 0) {
        path_in(g, "stdin.xnd", xp, sizeof xp);
        if (xnd_write_file(x, xp, xerr, sizeof xerr) != XND_OK) {
            lns_err_set(err, errlen, "the exNode from stdin into %s: %s", xp, xerr);
            return -1;
        }
        path = xp;
    }
    argv[n++] = serve_bin;
    argv[n++] = "-q";
    argv[n++] = "--listen";
    argv[n++] = "127.0.0.1";
    argv[n++] = "--port";
    argv[n++] = "0";
    argv[n++] = "--port-file";
    argv[n++] = portf;
    argv[n++] = "--log";
    argv[n++] = logf;
    argv[n++] = "--token-file";
    argv[n++] = tokf;
    for (int i = 0; extra && extra[i] && n < 28; i++)
        argv[n++] = extra[i];
    argv[n++] = "--";
    argv[n++] = path;
    argv[n] = NULL;

    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        lns_err_set(err, errlen, "starting %s: %s", serve_bin, strerror(errno));
        return -1;
    }
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(1);
        int in = open("/dev/null", O_RDWR);
        int e = open(errf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (in < 0 || e < 0 || dup2(in, 0) < 0 || dup2(in, 1) < 0 || dup2(e, 2) < 0)
            _exit(126);
        execvp(serve_bin, (char *const *)argv);
        fprintf(stderr, "%s: %s\n", serve_bin, strerror(errno));
        _exit(127);
    }
    g->pid = pid;
    for (int i = 0; i < 1500; i++) {
        int port = 0, st;
        FILE *f = fopen(portf, "r");
        if (f) {
            int ok = fscanf(f, "%d", &port) == 1 && port > 0;
            fclose(f);
            if (ok) {
                url_name(path, name, sizeof name);
                snprintf(g->url, sizeof g->url, "http://127.0.0.1:%d/%s", port, name);
                snprintf(g->token_url, sizeof g->token_url, "%s?token=%s", g->url, g->token);
                return 0;
            }
        }
        if (waitpid(pid, &st, WNOHANG) == pid) {
            char line[512];
            g->pid = 0;
            g->status = status_of(st);
            first_err_line(g, line, sizeof line);
            lns_err_set(err, errlen, "the gateway (%s) exited with status %d before it served%s%s",
                     serve_bin, g->status, line[0] ? ": " : "", line);
            return -1;
        }
        sleep_ms(10);
    }
    lns_err_set(err, errlen, "the gateway (%s) did not listen within 15 s", serve_bin);
    return -1;
}

int play_gateway_wait(play_gateway_t *g, pid_t player, int *pstatus)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGINT);
    sigaddset(&s, SIGTERM);
    sigaddset(&s, SIGCHLD);
    for (;;) {
        struct timespec ts = {1, 0};
        int sig = sigtimedwait(&s, NULL, &ts), st;
        if (sig == SIGINT || sig == SIGTERM) {
            *pstatus = stop_child(player);
            return sig;
        }
        /* SIGCHLD, or a second gone by: look at both children */
        if (waitpid(player, &st, WNOHANG) == player) {
            *pstatus = status_of(st);
            return PLAY_PLAYER_DONE;
        }
        if (g->pid > 0 && waitpid(g->pid, &st, WNOHANG) == g->pid) {
            g->pid = 0;
            g->status = status_of(st);
            *pstatus = stop_child(player);
            return PLAY_GATEWAY_DIED;
        }
    }
}

void play_gateway_stats(const play_gateway_t *g, int *requests, int64_t *bytes)
{
    char p[sizeof g->dir + 16], line[2048];
    *requests = 0;
    *bytes = 0;
    path_in(g, "serve.log", p, sizeof p);
    FILE *f = fopen(p, "r");
    if (!f)
        return;
    /* "TIME WHO GET /NAME CODE [RANGE ]N bytes" (serve_http.c) */
    while (fgets(line, sizeof line, f)) {
        char who[256], method[16];
        size_t len = strlen(line);
        if (sscanf(line, "%*s %255s %15s", who, method) != 2 || strcmp(method, "GET") != 0 ||
            len < 8 || strcmp(line + len - 7, " bytes\n") != 0)
            continue;
        char *e = line + len - 7, *b = e;
        while (b > line && b[-1] >= '0' && b[-1] <= '9')
            b--;
        if (b == e || b[-1] != ' ')
            continue;
        (*requests)++;
        *bytes += strtoll(b, NULL, 10);
    }
    fclose(f);
}

void play_gateway_stop(play_gateway_t *g)
{
    static const char *const files[] = {"port", "port.tmp", "serve.log", "serve.err",
                                        "stdin.xnd", "token", "player.conf"};
    if (g->pid > 0) {
        g->status = stop_child(g->pid);
        g->pid = 0;
    }
    if (!g->dir[0])
        return;
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char p[sizeof g->dir + 16];
        path_in(g, files[i], p, sizeof p);
        unlink(p);
    }
    rmdir(g->dir);
    g->dir[0] = '\0';
    memset(g->token, 0, sizeof g->token);
    memset(g->token_url, 0, sizeof g->token_url);
}
