/* test_lors_serve.c -- lors_serve on real depots, driven by curl as a user drives it: the
 * index, HEAD, a whole GET, single and multiple ranges equal to the source's bytes, 416 past
 * the end, ETag and 304, 405 for a write, the token, a range with no live copy (502 naming
 * the bytes, and the log line), a depot SIGKILLed during a range read, an exNode replaced by
 * rename again and again while ranges of it are read (every answer's ETag, Last-Modified and
 * bytes of one and the same file); with ffmpeg/ffprobe and mpv installed, ffprobe on the URL
 * and mpv --start=3 decoding from the middle. */
#include <curl/curl.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test_tools.h"

#define ND 4

static tt_env_t T;
static tt_bg_t srv;
static int port;
static char dir[4096], logp[PATH_MAX];

static int have(const char *prog)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", prog);
    return system(cmd) == 0;
}

/* Start lors_serve on dir with extra flags (up to 4); 0 once it listens. */
static int start_serve(const char *a1, const char *a2, const char *a3, const char *a4)
{
    return tt_serve(&T, &srv, dir, logp, &port, a1, a2, a3, a4);
}

static void stop_serve(void)
{
    if (srv.pid > 0) {
        kill(srv.pid, SIGTERM);
        CU_ASSERT_EQUAL(tt_wait(&T, &srv, 5000), 0);
    }
}

/* A file of n bytes uploaded into dir as NAME.xnd; its source path in src. */
static void put_file(const char *name, size_t n, uint64_t seed, int copies, const char *depots,
                     const char *extra, char *src)
{
    char xnd[4096], dst[8400];
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, n, seed, copies, 4, depots, extra, src, xnd), 0);
    snprintf(dst, sizeof dst, "%s/%s.xnd", dir, name);
    CU_ASSERT_EQUAL_FATAL(rename(xnd, dst), 0);
}

static void test_http(void)
{
    char src[4096];
    tt_revive(&T);
    snprintf(dir, sizeof dir, "%s/served", lns_test_tmpdir());
    mkdir(dir, 0755);
    put_file("data.bin", 6 * 1024 * 1024 + 999, 21, 2, T.depots, NULL, src);
    CU_ASSERT_EQUAL_FATAL(start_serve(NULL, NULL, NULL, NULL), 0);
    const char *u = "http://127.0.0.1";

    CU_ASSERT_EQUAL(tt_sh(&T, "curl -sf %s:%d/", u, port), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "<a href=\"/data.bin\">data.bin</a>"));
    CU_ASSERT_EQUAL(tt_sh(&T, "curl -sfI %s:%d/data.bin | tr -d '\\r'", u, port), 0);
    LNS_TEST_HAS(T.out, "HTTP/1.1 200", "Content-Length: 6292455", "Accept-Ranges: bytes",
                 "Content-Type: application/octet-stream", "Last-Modified: ");
    const char *et = strstr(T.out, "ETag: \"");
    CU_ASSERT_PTR_NOT_NULL_FATAL(et);
    char etag[64];
    CU_ASSERT_EQUAL(sscanf(et, "ETag: %63s", etag), 1);

    /* the whole file, and ranges, equal the source's bytes */
    CU_ASSERT_EQUAL(tt_sh(&T, "curl -sf %s:%d/data.bin | cmp - '%s'", u, port, src), 0);
    CU_ASSERT_EQUAL(tt_sh(&T, "curl -sf -r 1000000-3000000 %s:%d/data.bin > $D/got && "
                              "tail -c +1000001 '%s' | head -c 2000001 | cmp - $D/got",
                          u, port, src), 0);
    CU_ASSERT_EQUAL(tt_sh(&T, "curl -sf -r -777 %s:%d/data.bin > $D/got && tail -c 777 '%s' | "
                              "cmp - $D/got", u, port, src), 0);
    CU_ASSERT_EQUAL(tt_sh(&T, "curl -sfi -r 5-9 %s:%d/data.bin | tr -d '\\r' | "
                              "grep -E '^(HTTP|Content-Range|Content-Length)'", u, port), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "HTTP/1.1 206"));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "Content-Range: bytes 5-9/6292455"));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "Content-Length: 5"));
    /* two ranges: multipart/byteranges, each part's bytes the source's */
    CU_ASSERT_EQUAL(tt_sh(&T, "curl -sf -D %s/h -r 10-19,4000000-4000009 %s:%d/data.bin | "
                              "od -An -c | tr -d ' \\n'; echo; tr -d '\\r' < %s/h; "
                              "echo; dd if='%s' bs=1 skip=10 count=10 2>/dev/null | "
                              "od -An -c | tr -d ' \\n'; echo; dd if='%s' bs=1 skip=4000000 "
                              "count=10 2>/dev/null | od -An -c | tr -d ' \\n'",
                          lns_test_tmpdir(), u, port, lns_test_tmpdir(), src, src), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "Content-Type: multipart/byteranges; boundary="));
    {
        char body[8192], p1[256], p2[256];
        CU_ASSERT_EQUAL(sscanf(T.out, "%8191s", body), 1);
        const char *l = strrchr(T.out, '\n');
        const char *l2 = l;
        while (l2 > T.out && l2[-1] != '\n')
            l2--;
        const char *l1 = l2 - 1;
        while (l1 > T.out && l1[-1] != '\n')
            l1--;
        CU_ASSERT_EQUAL(sscanf(l1, "%255s", p1), 1);
        CU_ASSERT_EQUAL(sscanf(l2 == l ? l + 1 : l2, "%255s", p2), 1);
        CU_ASSERT_PTR_NOT_NULL(strstr(body, "Content-Range:bytes10-19/6292455"));
        CU_ASSERT_PTR_NOT_NULL(strstr(body, "Content-Range:bytes4000000-4000009/6292455"));
        CU_ASSERT_PTR_NOT_NULL(strstr(body, p1));
        CU_ASSERT_PTR_NOT_NULL(strstr(body, p2));
    }
    /* past the end: 416 with the size */
    CU_ASSERT_EQUAL(tt_sh(&T, "curl -s -o /dev/null -D - -r 7000000- %s:%d/data.bin | "
                              "tr -d '\\r'", u, port), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "HTTP/1.1 416"));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "Content-Range: bytes */6292455"));
    /* the ETag: 304 when the client has it */
    CU_ASSERT_EQUAL(tt_sh(&T, "curl -s -o /dev/null -w '%%{http_code}' -H 'If-None-Match: %s' "
                              "%s:%d/data.bin", etag, u, port), 0);
    CU_ASSERT_STRING_EQUAL(T.out, "304");
    /* read-only, and no such file */
    CU_ASSERT_EQUAL(tt_sh(&T, "curl -s -o /dev/null -w '%%{http_code}' -X PUT -d x "
                              "%s:%d/data.bin", u, port), 0);
    CU_ASSERT_STRING_EQUAL(T.out, "405");
    CU_ASSERT_EQUAL(tt_sh(&T, "curl -s -o /dev/null -w '%%{http_code}' %s:%d/nope; "
                              "curl -s -o /dev/null -w '%%{http_code}' %s:%d/..%%2Fdata.bin",
                          u, port, u, port), 0);
    CU_ASSERT_STRING_EQUAL(T.out, "404404");
    if (strcmp(T.out, "404404") != 0)
        fprintf(stderr, "404s: %s\n", T.out);

    /* the exNode rewritten in place: the next request reads the new file, with a new tag */
    char src2[4096];
    put_file("data.bin", 3 * 1024 * 1024 + 5, 22, 2, T.depots, NULL, src2);
    CU_ASSERT_EQUAL(tt_sh(&T, "curl -sfI %s:%d/data.bin | tr -d '\\r'", u, port), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "Content-Length: 3145733"));
    CU_ASSERT_PTR_NULL(strstr(T.out, etag));
    CU_ASSERT_EQUAL(tt_sh(&T, "curl -sf %s:%d/data.bin | cmp - '%s'", u, port, src2), 0);
    put_file("data.bin", 6 * 1024 * 1024 + 999, 21, 2, T.depots, NULL, src);

    /* a depot SIGKILLed during a range read: the bytes are still right */
    CU_ASSERT_EQUAL(tt_sh(&T, "(sleep 0.05; kill -9 %d) & curl -sf --limit-rate 20M "
                              "-r 100000-6000000 %s:%d/data.bin > $D/got; wait; "
                              "tail -c +100001 '%s' | head -c 5900001 | cmp - $D/got",
                          T.dep[1].srv.pid, u, port, src), 0);
    stop_serve();
    tt_revive(&T);
}

/* A range no live copy holds: 502 naming the bytes, the log names them too; the rest of the
 * file is still served. */
static void test_no_live_copy(void)
{
    char src[4096];
    tt_revive(&T);
    snprintf(dir, sizeof dir, "%s/served2", lns_test_tmpdir());
    mkdir(dir, 0755);
    put_file("one.bin", 4 * 1024 * 1024, 23, 1, tt_dlist(&T, 2, 3, -1), NULL, src);
    CU_ASSERT_EQUAL_FATAL(start_serve(NULL, NULL, NULL, NULL), 0);
    xnd_t *x;
    char xp[8400];
    snprintf(xp, sizeof xp, "%s/one.bin.xnd", dir);
    x = tt_load(xp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    /* kill the depot of the first mapping */
    int p = tt_cap_port(x->maps[0]->cap[XND_READ]);
    int64_t a = x->maps[0]->exnode_offset, l = x->maps[0]->logical_length;
    xnd_free(x);
    int victim = T.dep[2].port == p ? 2 : 3;
    CU_ASSERT_EQUAL(lns_test_server_kill(&T.dep[victim].srv, SIGKILL), 0);
    CU_ASSERT_EQUAL(tt_sh(&T, "curl -s -w '\\n%%{http_code}' -r %lld-%lld "
                              "http://127.0.0.1:%d/one.bin",
                          (long long)a, (long long)a + 10, port), 0);
    char want[128];
    snprintf(want, sizeof want, "bytes %lld-", (long long)a);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "502"));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, want));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "no live replica"));
    CU_ASSERT_EQUAL(tt_wait_lines(logp, "502", 1, LNS_TEST_WAIT_MS), 1);
    CU_ASSERT_EQUAL(tt_wait_lines(logp, want, 1, LNS_TEST_WAIT_MS), 1);
    /* the other depot's bytes are served */
    int64_t b = a == 0 ? l : 0;
    CU_ASSERT_EQUAL(tt_sh(&T, "curl -sf -r %lld-%lld http://127.0.0.1:%d/one.bin > $D/got && "
                              "tail -c +%lld '%s' | head -c 1000 | cmp - $D/got",
                          (long long)b, (long long)b + 999, port, (long long)b + 1, src), 0);
    stop_serve();
    tt_revive(&T);
}

static void test_token_and_listen(void)
{
    char tok[4200];
    snprintf(dir, sizeof dir, "%s/served3", lns_test_tmpdir());
    mkdir(dir, 0755);
    snprintf(tok, sizeof tok, "%s/token", lns_test_tmpdir());
    CU_ASSERT_EQUAL_FATAL(tt_write_file(tok, "s3cret-token-0123456789\n", 24), 0);
    /* beyond loopback without a token: refused */
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_serve", "--no-rc", "-l", "0.0.0.0", "-p", "0",
                           dir, (char *)NULL), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "--token-file"));
    /* a name that only starts like a loopback address is judged by what it resolves to */
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_serve", "--no-rc", "-l", "127.evil.example",
                           "-p", "0", dir, (char *)NULL), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "--token-file"));
    CU_ASSERT_EQUAL_FATAL(start_serve("--token-file", tok, NULL, NULL), 0);
    /* "%0a" in a URL, on the 401 path and past it, cannot write a line of its own */
    CU_ASSERT_EQUAL(tt_sh(&T, "curl -s -o /dev/null 'http://127.0.0.1:%d/a%%0aFORGED-1'; "
                              "curl -s -o /dev/null 'http://127.0.0.1:%d/b%%0d%%0aFORGED-2?"
                              "token=s3cret-token-0123456789'", port, port), 0);
    CU_ASSERT_EQUAL(tt_wait_lines(logp, "FORGED-2", 1, LNS_TEST_WAIT_MS), 1);
    char logtext[65536] = "";
    lns_test_slurp(logp, logtext, sizeof logtext);
    CU_ASSERT_PTR_NOT_NULL(strstr(logtext, "/a\\x0aFORGED-1"));
    CU_ASSERT_PTR_NULL(strstr(logtext, "\nFORGED"));
    CU_ASSERT_EQUAL(tt_sh(&T, "curl -s -o /dev/null -w '%%{http_code} ' http://127.0.0.1:%d/; "
                              "curl -s -o /dev/null -w '%%{http_code} ' -H 'Authorization: "
                              "Bearer s3cret-token-0123456789' http://127.0.0.1:%d/; "
                              "curl -s -o /dev/null -w '%%{http_code}' "
                              "'http://127.0.0.1:%d/?token=s3cret-token-0123456789'",
                          port, port, port), 0);
    CU_ASSERT_STRING_EQUAL(T.out, "401 200 200");
    stop_serve();
}

/* HTTPS (--tls-cert, --tls-key): a token beyond loopback needs it; served over TLS, the file's
 * bytes as they are, plain HTTP not answered; a key open to others refused. */
static void test_https(void)
{
    char tok[4200], cert[4200], key[4200], src[4096], xnd[4096], dst[8400], got[4300];
    snprintf(dir, sizeof dir, "%s/served_tls", lns_test_tmpdir());
    mkdir(dir, 0755);
    snprintf(tok, sizeof tok, "%s/token", lns_test_tmpdir());
    CU_ASSERT_EQUAL_FATAL(tt_write_file(tok, "s3cret-token-0123456789\n", 24), 0);
    snprintf(cert, sizeof cert, "%s/serve.crt", lns_test_tmpdir());
    snprintf(key, sizeof key, "%s/serve.key", lns_test_tmpdir());
    CU_ASSERT_EQUAL_FATAL(tt_sh(&T, "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 "
                                    "-nodes -keyout '%s' -out '%s' -days 2 -subj /CN=127.0.0.1 "
                                    "2>/dev/null && chmod 600 '%s'", key, cert, key), 0);
    /* beyond loopback with a token but no TLS: refused, the token would cross in the clear */
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_serve", "--no-rc", "-l", "0.0.0.0", "-p", "0",
                           "--token-file", tok, dir, (char *)NULL), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "in the clear; give --tls-cert and --tls-key"));
    /* a key others can read */
    CU_ASSERT_EQUAL(chmod(key, 0644), 0);
    CU_ASSERT_EQUAL(tt_run(&T, NULL, NULL, "lors_serve", "--no-rc", "-p", "0", "--tls-cert", cert,
                           "--tls-key", key, dir, (char *)NULL), 4);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.err, "the key is open to others (mode 0644)"));
    CU_ASSERT_EQUAL(chmod(key, 0600), 0);
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 300000, 77, 1, 1, T.depots, NULL, src, xnd), 0);
    snprintf(dst, sizeof dst, "%s/f.bin.xnd", dir);
    CU_ASSERT_EQUAL_FATAL(rename(xnd, dst), 0);
    CU_ASSERT_EQUAL_FATAL(start_serve("--tls-cert", cert, "--tls-key", key), 0);
    snprintf(got, sizeof got, "%s.https", src);
    CU_ASSERT_EQUAL(tt_sh(&T, "curl -s --cacert '%s' -o '%s' -w '%%{http_code}' "
                              "https://127.0.0.1:%d/f.bin", cert, got, port), 0);
    CU_ASSERT_STRING_EQUAL(T.out, "200");
    CU_ASSERT(tt_same_file(src, got));
    /* plain HTTP to it: no answer in the clear */
    tt_sh(&T, "curl -s -m 5 -o /dev/null -w '%%{http_code}' http://127.0.0.1:%d/f.bin", port);
    CU_ASSERT_STRING_NOT_EQUAL(T.out, "200");
    stop_serve();
}

/* ---- an exNode replaced by rename while it is served ------------------------------------- */

#define SWAP_SIZE (200 * 1000) /* both files' */
#define SWAP_GETS 1500         /* ranges read while the swapper renames as fast as it can */
#define STOP_GETS 100          /* ... while it renames at each stop at the failpoint */

/* Two files A and B of one size and their exNodes, written in turn over one served name as
 * every lns tool writes an exNode (a temporary file, then rename), each with a modification
 * time of its own; what an answer must then be: the tag, date and bytes of one of them. */
typedef struct swap {
    char path[8400], tmp[8400];
    unsigned char *x[2], *data[2]; /* exNode, file */
    size_t xn[2];
    time_t mtime[2];
    char tag[2][64], lm[2][64];
    int pid;                       /* 0: rename on and on; else lors_serve's, stopped at the
                                    * failpoint dir.read: rename once at each stop */
    atomic_int stop;
    long renames;
} swap_t;

/* Exnode i over the served name, with its modification time: 0 or -1. */
static int swap_put(swap_t *s, int i)
{
    int fd = open(s->tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    struct timespec ts[2] = {{s->mtime[i], 0}, {s->mtime[i], 0}};
    int ok = fd >= 0 && write(fd, s->x[i], s->xn[i]) == (ssize_t)s->xn[i] &&
             futimens(fd, ts) == 0;
    if (fd >= 0)
        close(fd);
    if (!ok || rename(s->tmp, s->path) != 0) {
        fprintf(stderr, "test_lors_serve: %s: cannot replace it\n", s->path);
        return -1;
    }
    return 0;
}

static void *swapper(void *arg)
{
    swap_t *s = arg;
    int i = 1;
    while (!atomic_load(&s->stop)) {
        if (s->pid) { /* lors_serve has opened the exNode and stopped before reading it */
            int st;
            pid_t p = waitpid(s->pid, &st, WUNTRACED | WNOHANG);
            if (p == 0) {
                lns_test_sleep_ms(1);
                continue;
            }
            if (p != s->pid || !WIFSTOPPED(st)) {
                fprintf(stderr, "test_lors_serve: lors_serve ended, not stopped\n");
                break;
            }
        }
        int bad = swap_put(s, i) < 0;
        if (s->pid)
            kill(s->pid, SIGCONT);
        if (bad)
            break;
        s->renames++;
        i ^= 1;
    }
    return NULL;
}

/* The ETag lors_serve gives an exNode of these bytes: the first 128 bits of their SHA-256. */
static void tag_of_bytes(const unsigned char *p, size_t n, char *tag)
{
    unsigned char md[32];
    EVP_Digest(p, n, md, NULL, EVP_sha256(), NULL);
    int k = sprintf(tag, "\"");
    for (int i = 0; i < 16; i++)
        k += sprintf(tag + k, "%02x", md[i]);
    sprintf(tag + k, "\"");
}

typedef struct answer {
    char etag[256], lm[256];
    unsigned char *body;
    size_t n, cap;
} answer_t;

static size_t on_header(char *p, size_t size, size_t nitems, void *arg)
{
    answer_t *a = arg;
    size_t n = size * nitems;
    char line[256];
    snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1), p);
    line[strcspn(line, "\r\n")] = '\0';
    if (strncasecmp(line, "ETag: ", 6) == 0)
        snprintf(a->etag, sizeof a->etag, "%s", line + 6);
    else if (strncasecmp(line, "Last-Modified: ", 15) == 0)
        snprintf(a->lm, sizeof a->lm, "%s", line + 15);
    return n;
}

static size_t on_body(char *p, size_t size, size_t nitems, void *arg)
{
    answer_t *a = arg;
    size_t n = size * nitems;
    if (a->n + n > a->cap) {
        size_t c = a->cap ? a->cap : 65536;
        while (c < a->n + n)
            c *= 2;
        unsigned char *b = realloc(a->body, c);
        if (!b)
            return 0;
        a->body = b;
        a->cap = c;
    }
    memcpy(a->body + a->n, p, n);
    a->n += n;
    return n;
}

/* n random ranges of the served name read over one connection while the swapper runs, every
 * other one with "If-Range: <A's tag>" as a client resuming A sends it: the answers with the
 * tag of one file and the bytes or date of the other (*bytes: with its bytes), those that
 * failed (not 206, or 200 where If-Range did not call for it, or a tag of neither file), and
 * how often each tag was seen. */
static void swap_gets(swap_t *s, int n, int *mixed, int *bytes, int *failed, int seen[2])
{
    CURL *h = curl_easy_init();
    CU_ASSERT_PTR_NOT_NULL_FATAL(h);
    char url[128], ifr[96];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/swap.bin", port);
    snprintf(ifr, sizeof ifr, "If-Range: %s", s->tag[0]);
    struct curl_slist *with_ifr = curl_slist_append(NULL, ifr);
    answer_t a = {0};
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &a);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &a);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 30L);
    pthread_t th;
    atomic_store(&s->stop, 0);
    s->renames = 0;
    CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, swapper, s), 0);
    *mixed = *bytes = *failed = seen[0] = seen[1] = 0;
    uint64_t rs = 35;
    for (int i = 0; i < n; i++) {
        int64_t len = 1 + (int64_t)(lns_test_rand(&rs) % 20000);
        int64_t off = (int64_t)(lns_test_rand(&rs) % (uint64_t)(SWAP_SIZE - len));
        char range[64];
        snprintf(range, sizeof range, "%lld-%lld", (long long)off, (long long)(off + len - 1));
        a.n = 0;
        a.etag[0] = a.lm[0] = '\0';
        curl_easy_setopt(h, CURLOPT_RANGE, range);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, i % 2 ? with_ifr : NULL);
        long code = 0;
        if (curl_easy_perform(h) != CURLE_OK ||
            curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code) != CURLE_OK ||
            (code != 206 && code != 200)) {
            if (!(*failed)++)
                fprintf(stderr, "GET %s bytes=%s: HTTP %ld\n", url, range, code);
            continue;
        }
        int k = strcmp(a.etag, s->tag[0]) == 0 ? 0 : strcmp(a.etag, s->tag[1]) == 0 ? 1 : -1;
        if (k < 0 || (code == 200 && (i % 2 == 0 || k == 0))) {
            if (!(*failed)++)
                fprintf(stderr, "GET %s bytes=%s: HTTP %ld, ETag %s\n", url, range, code,
                        a.etag);
            continue;
        }
        seen[k]++;
        if (code == 200) /* If-Range named the other file: the whole of this one */
            off = 0, len = SWAP_SIZE;
        int other = a.n != (size_t)len || memcmp(a.body, s->data[k] + off, (size_t)len) != 0;
        *bytes += other;
        *mixed += other || strcmp(a.lm, s->lm[k]) != 0;
    }
    atomic_store(&s->stop, 1);
    pthread_join(th, NULL);
    curl_slist_free_all(with_ifr);
    curl_easy_cleanup(h);
    free(a.body);
}

/* A's and B's exNodes renamed in turn over one served name while ranges of it are read:
 * every answer is all of one file, its bytes and Last-Modified those of the file its ETag
 * names.  First the renames run free (any window between two looks at the file); then
 * lors_serve stops at the failpoint dir.read each time it has opened the exNode and not yet
 * read it, and each stop gets a rename, so every answer has one in that window.  (The gateway
 * once opened the exNode for the tag and again for the mappings, and served A's tag with B's
 * bytes.) */
static void test_replaced_by_rename(void)
{
    char src[2][4096], xnd[2][4096];
    size_t dn;
    swap_t s = {0};
    tt_revive(&T);
    snprintf(dir, sizeof dir, "%s/served5", lns_test_tmpdir());
    mkdir(dir, 0755);
    for (int i = 0; i < 2; i++) {
        CU_ASSERT_EQUAL_FATAL(tt_upload(&T, SWAP_SIZE, 51 + (uint64_t)i, 1, 2, T.depots, NULL,
                                        src[i], xnd[i]), 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(s.data[i] = tt_read_whole(src[i], &dn));
        CU_ASSERT_EQUAL_FATAL(dn, SWAP_SIZE);
        CU_ASSERT_PTR_NOT_NULL_FATAL(s.x[i] = tt_read_whole(xnd[i], &s.xn[i]));
        tag_of_bytes(s.x[i], s.xn[i], s.tag[i]);
        s.mtime[i] = 1000000000 + i * 86400;
        struct tm tm;
        strftime(s.lm[i], sizeof s.lm[i], "%a, %d %b %Y %H:%M:%S GMT",
                 gmtime_r(&s.mtime[i], &tm));
    }
    CU_ASSERT_STRING_NOT_EQUAL_FATAL(s.tag[0], s.tag[1]);
    snprintf(s.path, sizeof s.path, "%s/swap.bin.xnd", dir);
    snprintf(s.tmp, sizeof s.tmp, "%s/.swap.bin.xnd.tmp", dir);

    static const char *const how[2] = {"renamed freely", "renamed at each stop at dir.read"};
    for (int phase = 0; phase < 2; phase++) {
        CU_ASSERT_EQUAL_FATAL(swap_put(&s, 0), 0);
        if (phase)
            setenv("LNS_FAILPOINTS", "dir.read=stop@1+", 1);
        int started = start_serve(NULL, NULL, NULL, NULL);
        unsetenv("LNS_FAILPOINTS");
        CU_ASSERT_EQUAL_FATAL(started, 0);
        s.pid = phase ? srv.pid : 0;
        int n = phase ? STOP_GETS : SWAP_GETS, mixed, bytes, failed, seen[2];
        swap_gets(&s, n, &mixed, &bytes, &failed, seen);
        if (mixed || failed)
            fprintf(stderr, "test_lors_serve: of %d ranges read while the exNode was %s (%ld "
                            "times), %d answers mixed two files (%d with the other's bytes, "
                            "the rest with its date) and %d failed\n",
                    n, how[phase], s.renames, mixed, bytes, failed);
        CU_ASSERT_EQUAL(mixed, 0);
        CU_ASSERT_EQUAL(failed, 0);
        CU_ASSERT(seen[0] > 0 && seen[1] > 0); /* the renames were seen: the test tested them */
        stop_serve();
    }
    for (int i = 0; i < 2; i++) {
        tt_free_all(&T, xnd[i]);
        free(s.data[i]);
        free(s.x[i]);
    }
}

/* A generated video served: ffprobe reads its duration from the URL, and mpv decodes from
 * 3 s in (a seek the gateway answers with a range) without errors. */
/* The request line and the directory as nginx would judge them: an absolute-form target is
 * served (RFC 9112 3.2.2), HTTP/1.1 without Host is a 400 (3.2) and HTTP/1.0 without it is
 * not; a symbolic link that leads out of the served directory is neither listed nor served
 * (one inside it is); an unreadable exNode is a 500 that names it but not the server's paths;
 * the index gives each file's size and type; a client that goes away in the middle of a body
 * (a player seeking) is no error in the log. */
static void test_request_line_and_dir(void)
{
    char src[4096], xnd[4096], out[4200], path[8400];
    tt_revive(&T);
    snprintf(dir, sizeof dir, "%s/served5", lns_test_tmpdir());
    mkdir(dir, 0755);
    put_file("data.bin", 300000, 24, 1, T.depots, NULL, src);
    put_file("big.bin", 8 * 1024 * 1024, 26, 1, T.depots, NULL, src);
    /* out/: an exNode outside dir, named by a link in it; in.xnd: a link to one inside */
    snprintf(out, sizeof out, "%s/outside5", lns_test_tmpdir());
    mkdir(out, 0755);
    CU_ASSERT_EQUAL_FATAL(tt_upload(&T, 1000, 25, 1, 1, T.depots, NULL, src, xnd), 0);
    snprintf(path, sizeof path, "%s/secret.xnd", out);
    CU_ASSERT_EQUAL_FATAL(rename(xnd, path), 0);
    CU_ASSERT_EQUAL(tt_sh(&T, "ln -s '%s' '%s/out.xnd' && ln -s data.bin.xnd '%s/in.xnd' && "
                              "echo '<exnode' > '%s/bad.xnd'", path, dir, dir, dir), 0);
    CU_ASSERT_EQUAL_FATAL(start_serve(NULL, NULL, NULL, NULL), 0);
    const char *u = "http://127.0.0.1";

    CU_ASSERT_EQUAL(tt_sh(&T, "curl -s -o /dev/null -w '%%{http_code}' --request-target "
                              "http://127.0.0.1:%d/data.bin %s:%d/", port, u, port), 0);
    CU_ASSERT_STRING_EQUAL(T.out, "200");
    CU_ASSERT_EQUAL(tt_sh(&T, "curl -s -o /dev/null -w '%%{http_code}' -H 'Host:' %s:%d/data.bin; "
                              "curl -s -0 -o /dev/null -w '%%{http_code}' -H 'Host:' "
                              "%s:%d/data.bin", u, port, u, port), 0);
    CU_ASSERT_STRING_EQUAL(T.out, "400200");
    /* the links */
    CU_ASSERT_EQUAL(tt_sh(&T, "curl -s -w ' %%{http_code}' %s:%d/out; curl -s -o /dev/null -w "
                              "' %%{http_code}' %s:%d/in", u, port, u, port), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, " 404 200"));
    CU_ASSERT_PTR_NULL(strstr(T.out, lns_test_tmpdir()));
    /* the bad exNode: 500 naming it, and no path of the server's */
    CU_ASSERT_EQUAL(tt_sh(&T, "curl -s -w ' %%{http_code}' %s:%d/bad", u, port), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, " 500"));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "bad"));
    CU_ASSERT_PTR_NULL(strstr(T.out, lns_test_tmpdir()));
    if (strstr(T.out, lns_test_tmpdir()))
        fprintf(stderr, "\n  500 body: %s\n", T.out);
    /* the index: names, sizes and types; the link out not listed */
    CU_ASSERT_EQUAL(tt_sh(&T, "curl -sf %s:%d/", u, port), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "<a href=\"/data.bin\">data.bin</a>"));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "300000"));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "application/octet-stream"));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "\"/in\""));
    CU_ASSERT_PTR_NULL(strstr(T.out, "\"/out\""));
    /* a client that reads 1000 bytes of a body and goes away */
    CU_ASSERT_EQUAL(tt_sh(&T, "curl -s %s:%d/big.bin | head -c 1000 | wc -c", u, port), 0);
    CU_ASSERT_EQUAL(atoi(T.out), 1000);
    CU_ASSERT_EQUAL(tt_sh(&T, "curl -sf -o /dev/null %s:%d/in", u, port), 0);
    stop_serve();
    static char log[1 << 16];
    lns_test_slurp(logp, log, sizeof log);
    CU_ASSERT_PTR_NULL(strstr(log, "forcibly"));
    CU_ASSERT_PTR_NULL(strstr(log, "rror"));
    if (strstr(log, "forcibly") || strstr(log, "rror"))
        fprintf(stderr, "\n  log:\n%s\n", log);
    CU_ASSERT_PTR_NOT_NULL(strstr(log, "GET /out 404 a symbolic link that leads out"));
    CU_ASSERT_PTR_NOT_NULL(strstr(log, "GET /big.bin: the client closed the connection before"));
}

static void test_players(void)
{
    char src[4096], xnd[4096], dst[8400];
    tt_revive(&T);
    snprintf(dir, sizeof dir, "%s/served4", lns_test_tmpdir());
    mkdir(dir, 0755);
    snprintf(src, sizeof src, "%s/clip.mp4", lns_test_tmpdir());
    CU_ASSERT_EQUAL_FATAL(tt_sh(&T, "ffmpeg -v error -y -f lavfi -i testsrc=size=320x240:rate=25 "
                                    "-t 6 -c:v libx264 -preset ultrafast -g 25 -pix_fmt yuv420p "
                                    "'%s'", src), 0);
    snprintf(xnd, sizeof xnd, "%s/clip.xnd", lns_test_tmpdir());
    CU_ASSERT_EQUAL_FATAL(tt_sh(&T, "$B/lors_upload --no-rc -q --depot-list '%s' -c 2 -d 1h "
                                    "--force -o '%s' '%s'", T.depots, xnd, src), 0);
    snprintf(dst, sizeof dst, "%s/clip.mp4.xnd", dir);
    CU_ASSERT_EQUAL_FATAL(rename(xnd, dst), 0);
    CU_ASSERT_EQUAL_FATAL(start_serve(NULL, NULL, NULL, NULL), 0);
    CU_ASSERT_EQUAL(tt_sh(&T, "ffprobe -v error -show_entries format=duration -of csv=p=0 "
                              "http://127.0.0.1:%d/clip.mp4", port), 0);
    CU_ASSERT(atof(T.out) > 5.9 && atof(T.out) < 6.1);
    if (have("mpv")) {
        CU_ASSERT_EQUAL(tt_sh(&T, "mpv --no-config --vo=null --ao=null --start=3 --frames=25 "
                                  "--msg-level=all=warn http://127.0.0.1:%d/clip.mp4 2>&1",
                              port), 0);
        CU_ASSERT_PTR_NULL(strstr(T.out, "rror"));
        /* the seek was a range request past the start */
        CU_ASSERT_EQUAL(tt_wait_lines(logp, "206 bytes=", 1, LNS_TEST_WAIT_MS), 1);
    }
    stop_serve();
    tt_free_all(&T, dst);
}

static const lns_test_case tests[] = {
    {"index, HEAD, GET, ranges, 416, 304, 405, 404, a depot killed", test_http},
    {"no live copy: 502 naming the bytes, logged", test_no_live_copy},
    {"a token; beyond loopback only with one", test_token_and_listen},
    {"HTTPS: --tls-cert and --tls-key; a token beyond loopback needs them", test_https},
    {"absolute-form, Host, links out of the directory, 500 bodies, the index, a client gone",
     test_request_line_and_dir},
    {"an exNode replaced by rename while served: ETag, date and bytes of one file",
     test_replaced_by_rename},
};

void lns_test_register(void)
{
    CU_pSuite s = tt_add_suite(&T, "lors_serve", ND, tests, sizeof tests / sizeof tests[0]);
    if (!s)
        return;
    if (have("ffmpeg") && have("ffprobe"))
        CU_add_test(s, "ffprobe and mpv --start on the URL", test_players);
    else
        printf("test_lors_serve: SKIP: ffmpeg/ffprobe not installed: the player test does not "
               "run\n");
}
