/* test_lors_serve.c -- lors_serve on real depots, driven by curl as a user drives it: the
 * index, HEAD, a whole GET, single and multiple ranges equal to the source's bytes, 416 past
 * the end, ETag and 304, 405 for a write, the token, a range with no live copy (502 naming
 * the bytes, and the log line), a depot SIGKILLed during a range read; with ffmpeg/ffprobe and
 * mpv installed, ffprobe on the URL and mpv --start=3 decoding from the middle. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_tools.h"

#define ND 4

static tt_env_t T;
static tt_bg_t srv;
static int port;
static char dir[4096], logp[4200];

static int have(const char *prog)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", prog);
    return system(cmd) == 0;
}

/* Start lors_serve on dir with extra flags (up to 4); 0 once it listens. */
static int start_serve(const char *a1, const char *a2, const char *a3, const char *a4)
{
    char pf[4200];
    snprintf(pf, sizeof pf, "%s/serve.port", lns_test_tmpdir());
    snprintf(logp, sizeof logp, "%s/serve.log", lns_test_tmpdir());
    unlink(pf);
    unlink(logp);
    if (tt_spawn(&T, &srv, "lors_serve", "--no-rc", "-p", "0", "--port-file", pf, "--log", logp,
                 "-T", "3s", dir, a1, a2, a3, a4, (char *)NULL) != 0)
        return -1;
    for (int i = 0; i < 500; i++) {
        FILE *f = fopen(pf, "r");
        if (f) {
            int ok = fscanf(f, "%d", &port) == 1;
            fclose(f);
            if (ok)
                return 0;
        }
        usleep(10000);
    }
    return -1;
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
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "HTTP/1.1 200"));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "Content-Length: 6292455"));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "Accept-Ranges: bytes"));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "Content-Type: application/octet-stream"));
    CU_ASSERT_PTR_NOT_NULL(strstr(T.out, "Last-Modified: "));
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
    CU_ASSERT_EQUAL(tt_wait_lines(logp, "502", 1, 2000), 1);
    CU_ASSERT_EQUAL(tt_wait_lines(logp, want, 1, 2000), 1);
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
    CU_ASSERT_EQUAL_FATAL(start_serve("--token-file", tok, NULL, NULL), 0);
    CU_ASSERT_EQUAL(tt_sh(&T, "curl -s -o /dev/null -w '%%{http_code} ' http://127.0.0.1:%d/; "
                              "curl -s -o /dev/null -w '%%{http_code} ' -H 'Authorization: "
                              "Bearer s3cret-token-0123456789' http://127.0.0.1:%d/; "
                              "curl -s -o /dev/null -w '%%{http_code}' "
                              "'http://127.0.0.1:%d/?token=s3cret-token-0123456789'",
                          port, port, port), 0);
    CU_ASSERT_STRING_EQUAL(T.out, "401 200 200");
    stop_serve();
}

/* A generated video served: ffprobe reads its duration from the URL, and mpv decodes from
 * 3 s in (a seek the gateway answers with a range) without errors. */
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
        CU_ASSERT_EQUAL(tt_wait_lines(logp, "206 bytes=", 1, 2000), 1);
    }
    stop_serve();
    tt_free_all(&T, dst);
}

static const lns_test_case tests[] = {
    {"index, HEAD, GET, ranges, 416, 304, 405, 404, a depot killed", test_http},
    {"no live copy: 502 naming the bytes, logged", test_no_live_copy},
    {"a token; beyond loopback only with one", test_token_and_listen},
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
