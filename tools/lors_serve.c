/* lors_serve.c -- lors_serve: network files over HTTP, with ranges, for players, browsers and
 * anything that seeks.  A thin front end over the gateway layer (serve/serve.h) and the
 * random-access reader (lors_reader, lors.h): options, the token, the port file, signals.
 * Runs until SIGINT or SIGTERM, then closes the listening socket, lets no new request in,
 * stops the fetches and exits 0.
 */
#include <errno.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lns_daemon.h"
#include "lns_err.h"
#include "lors.h"
#include <sys/stat.h>

#include "serve.h"
#include "tool.h"
#include "tool_opt.h"

static const char *TOOL = "lors_serve";

typedef struct settings {
    tool_common_t c;
    const char *listen, *port_file, *token_file, *key_file, *log, *tls_cert, *tls_key;
    int port, max_clients, max_connections, max_per_address, fetches, idle;
    int64_t cache, readahead, request_timeout;
} settings_t;

#define S(field) TOOL_OFF(settings_t, field)

static const tool_opt_t opts[] = {
    {TOOL_OPT_STR, "listen", 'l', NULL, S(listen), 0, 0, "127.0.0.1", "ADDR",
     "the address to listen on (default 127.0.0.1: this machine only;\n"
     "any other needs --token-file and --tls-cert)", NULL},
    {TOOL_OPT_INT, "port", 'p', NULL, S(port), 0, 65535, "8080", "N",
     "the port (0: any free one; see --port-file)", NULL},
    {TOOL_OPT_STR, "port-file", 0, NULL, S(port_file), 0, 0, NULL, "FILE",
     "write the port listened on to FILE once serving", NULL},
    {TOOL_OPT_STR, "token-file", 0, NULL, S(token_file), 0, 0, NULL, "FILE",
     "ask every request for the token in FILE (its first line):\n"
     "\"Authorization: Bearer TOKEN\" or ?token=TOKEN", NULL},
    {TOOL_OPT_STR, "tls-cert", 0, NULL, S(tls_cert), 0, 0, NULL, "FILE",
     "serve HTTPS with this certificate (PEM, its chain after it);\n"
     "a token beyond loopback needs it", NULL},
    {TOOL_OPT_STR, "tls-key", 0, NULL, S(tls_key), 0, 0, NULL, "FILE",
     "the certificate's private key (PEM; mode 0600 or stricter)", NULL},
    {TOOL_OPT_INT, "max-clients", 0, NULL, S(max_clients), 1, 4096, "128", "N",
     "requests whose bytes are read at once; more wait their turn", NULL},
    {TOOL_OPT_INT, "max-connections", 0, NULL, S(max_connections), 0, 1000000, "0", "N",
     "connections open at once (0: the open-file limit less 256);\n"
     "once all but a quarter are open, the oldest unfinished\n"
     "requests are closed to make room", NULL},
    {TOOL_OPT_INT, "max-per-address", 0, NULL, S(max_per_address), -1, 1000000, "-1", "N",
     "of them from one client address (-1: a quarter of\n"
     "--max-connections; 0: no limit)", NULL},
    {TOOL_OPT_SECONDS, "request-timeout", 0, NULL, S(request_timeout), 1, 3600, "10s", "DUR",
     "close a connection that has not sent a whole request within\n"
     "DUR of opening or of its previous answer", NULL},
    {TOOL_OPT_INT, "idle-timeout", 0, NULL, S(idle), 1, 86400, "60", "S",
     "close a connection idle for S seconds", NULL},
    TOOL_OPT_READER(settings_t, "clients"),
    {TOOL_OPT_STR, "log", 0, NULL, S(log), 0, 0, NULL, "FILE",
     "the request log (default stderr): a line per request and\nper failure, naming the bytes",
     NULL},
    TOOL_OPT_THREADS(0, "0", "streams of each download (0: automatic)"),
    TOOL_OPT_TIMEOUT("30s", "longest wait for any one depot"),
    TOOL_OPT_IBP_WIRE,
    TOOL_OPT_QUIET('q'),
    TOOL_OPT_SETTINGS,
    TOOL_OPT_TABLE_END,
};

static int check(void *sp, int argc, char **argv, int first)
{
    settings_t *f = sp;
    (void)f;
    if (first >= argc)
        return tool_usage(TOOL, "give one or more directories of exNodes or exNode files");
    return TOOL_EXIT_OK;
}

static const tool_cmd_t cmd = {
    "lors_serve",
    "Usage: lors_serve [options] DIR|EXNODE...\n"
    "Serve network files over HTTP: GET and HEAD with Range (one or many), ETag and\n"
    "Last-Modified, so that players seek and browsers play.  A directory's NAME.xnd is served\n"
    "as /NAME; / lists them.  Read-only.\n\n",
    "\nExit: 0 stopped by SIGINT or SIGTERM, 2 usage, 4 local I/O (port file, token file,\n"
    "log), 5 cannot listen, 7 key, 9 internal.  See lors_serve(1).\n",
    opts, sizeof(settings_t), check,
};

/* 1 if every address addr resolves to is a loopback one (127/8, ::1, or 127/8 mapped into
 * IPv6); a name that does not resolve is not loopback.  "127.evil.example" is a name. */
static int loopback(const char *addr)
{
    struct addrinfo hints = {.ai_flags = AI_PASSIVE, .ai_socktype = SOCK_STREAM}, *res, *a;
    if (getaddrinfo(addr, NULL, &hints, &res) != 0)
        return 0;
    int all = 1;
    for (a = res; a; a = a->ai_next) {
        if (a->ai_family == AF_INET) {
            const struct sockaddr_in *v4 = (const struct sockaddr_in *)a->ai_addr;
            all &= (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
        } else if (a->ai_family == AF_INET6) {
            const struct in6_addr *v6 = &((const struct sockaddr_in6 *)a->ai_addr)->sin6_addr;
            all &= IN6_IS_ADDR_LOOPBACK(v6) || (IN6_IS_ADDR_V4MAPPED(v6) && v6->s6_addr[12] == 127);
        } else {
            all = 0;
        }
    }
    freeaddrinfo(res);
    return all;
}

/* The token: the first line of path, at least 16 characters. */
static int read_token(const char *path, char *tok, size_t size)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        tool_error(TOOL, "--token-file %s: %s", path, strerror(errno));
        return TOOL_EXIT_IO;
    }
    if (!fgets(tok, (int)size, f))
        tok[0] = '\0';
    fclose(f);
    tok[strcspn(tok, "\r\n")] = '\0';
    if (strlen(tok) < 16) {
        tool_error(TOOL, "--token-file %s: the token must be at least 16 characters", path);
        return TOOL_EXIT_USAGE;
    }
    return TOOL_EXIT_OK;
}

/* The whole of a PEM file, malloc'd (NULL after a line).  private: refused when group or
 * others may read or write it. */
static char *read_pem(const char *opt, const char *path, int private)
{
    struct stat st;
    FILE *f = fopen(path, "re");
    char *buf = NULL;
    if (!f || fstat(fileno(f), &st) < 0) {
        tool_error(TOOL, "%s %s: %s", opt, path, strerror(errno));
        goto out;
    }
    if (private && (st.st_mode & 077)) {
        tool_error(TOOL, "%s %s: the key is open to others (mode %04o): make it 0600 (chmod 600 "
                   "%s)", opt, path, (unsigned)(st.st_mode & 07777), path);
        goto out;
    }
    if (st.st_size <= 0 || st.st_size > (1 << 20) || !(buf = calloc(1, (size_t)st.st_size + 1)) ||
        fread(buf, 1, (size_t)st.st_size, f) != (size_t)st.st_size || !strstr(buf, "-----BEGIN ")) {
        tool_error(TOOL, "%s %s: not a PEM file", opt, path);
        free(buf);
        buf = NULL;
    }
out:
    if (f)
        fclose(f);
    return buf;
}

int main(int argc, char **argv)
{
    settings_t f;
    int first, code, port = 0;
    char token[512], err[512];
    tool_files_t tf;
    serve_cfg_t cfg;
    serve_http_t *d = NULL;
    FILE *log = NULL;
    char *tls_cert = NULL, *tls_key = NULL;

    memset(&tf, 0, sizeof tf);
    code = tool_opt_parse(&cmd, argc, argv, &f, &first);
    if (code)
        return code;
    memset(&cfg, 0, sizeof cfg);
    if (f.token_file && (code = read_token(f.token_file, token, sizeof token)))
        goto done;
    if (!loopback(f.listen) && !f.token_file) {
        code = tool_usage(TOOL, "--listen %s serves beyond this machine: give --token-file",
                          f.listen);
        goto done;
    }
    if (!f.tls_cert != !f.tls_key) {
        code = tool_usage(TOOL, "--tls-cert and --tls-key go together");
        goto done;
    }
    if (!loopback(f.listen) && !f.tls_cert) {
        code = tool_usage(TOOL, "--listen %s serves beyond this machine: its token would cross "
                          "the network in the clear; give --tls-cert and --tls-key", f.listen);
        goto done;
    }
    if (f.tls_cert && (!(tls_cert = read_pem("--tls-cert", f.tls_cert, 0)) ||
                       !(tls_key = read_pem("--tls-key", f.tls_key, 1)))) {
        code = TOOL_EXIT_IO;
        goto done;
    }
    if ((code = tool_files_open(TOOL, &tf, argv + first, argc - first, f.c.threads, f.c.timeout,
                                f.readahead, f.cache, f.fetches, f.key_file)))
        goto done;
    if (f.log && !(log = fopen(f.log, "a"))) {
        tool_error(TOOL, "--log %s: %s", f.log, strerror(errno));
        code = TOOL_EXIT_IO;
        goto done;
    }
    cfg.listen = f.listen;
    cfg.port = f.port;
    cfg.token = f.token_file ? token : NULL;
    cfg.tls_cert = tls_cert;
    cfg.tls_key = tls_key;
    cfg.max_clients = f.max_clients;
    cfg.max_connections = f.max_connections;
    if (!cfg.max_connections) {
        long n = lns_daemon_nofile() - 256;
        cfg.max_connections = n < 64 ? 64 : n > 1000000 ? 1000000 : (int)n;
    }
    cfg.max_per_address = f.max_per_address;
    cfg.request_timeout_s = (int)f.request_timeout;
    cfg.idle_timeout_s = f.idle;
    cfg.quiet = f.c.quiet;
    cfg.log = log ? log : stderr;

    /* SIGINT and SIGTERM are waited for by this thread alone */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    if (!(d = serve_http_start(&cfg, tf.dir, &port, err, sizeof err))) {
        tool_error(TOOL, "%s", err);
        code = TOOL_EXIT_DEPOTS;
        goto done;
    }
    if (f.port_file) {
        char tmp[4200];
        snprintf(tmp, sizeof tmp, "%s.tmp", f.port_file);
        FILE *pf = fopen(tmp, "w");
        if (!pf || fprintf(pf, "%d\n", port) < 0 || fclose(pf) != 0 ||
            rename(tmp, f.port_file) != 0) {
            tool_error(TOOL, "--port-file %s: %s", f.port_file, strerror(errno));
            code = TOOL_EXIT_IO;
            goto done;
        }
    }
    if (!f.c.quiet) {
        size_t ndirs, nfiles;
        lors_dir_counts(tf.dir, &ndirs, &nfiles);
        fprintf(stderr, "%s: serving %zu director%s and %zu file%s on http%s://%s%s%s:%d/\n",
                TOOL, ndirs, ndirs == 1 ? "y" : "ies", nfiles, nfiles == 1 ? "" : "s",
                tls_cert ? "s" : "",
                strchr(f.listen, ':') ? "[" : "", f.listen, strchr(f.listen, ':') ? "]" : "",
                port);
    }
    int sig;
    sigwait(&sigs, &sig);
    if (!f.c.quiet)
        fprintf(stderr, "%s: %s: stopping\n", TOOL, strsignal(sig));
    code = TOOL_EXIT_OK;

done:
    serve_http_stop(d);
    tool_files_close(&tf);
    if (log)
        fclose(log);
    free(tls_cert);
    if (tls_key) { /* a secret: not left in freed memory */
        memset(tls_key, 0, strlen(tls_key));
        free(tls_key);
    }
    tool_opt_free(&f);
    return code;
}
