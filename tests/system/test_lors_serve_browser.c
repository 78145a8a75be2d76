/* test_lors_serve_browser.c -- a browser's <video> playing a network file from lors_serve,
 * and seeking.
 *
 * A 6 s VP8/WebM clip made by ffmpeg (a keyframe every second, noise so that each second is
 * about 1.4 MB) is uploaded to two real depots and served by lors_serve.  Headless Chromium
 * opens a page (file://, from the tmpdir) whose script waits for the metadata, sets
 * currentTime to 3 s, waits for 'seeked', plays until 3.3 s and writes what the element says
 * (state, times, duration, readyState, error code) into the DOM, which --dump-dom prints.  A
 * second <video> on a name the gateway does not serve must end in an error: the page can
 * report a failure.  The gateway's log must show a 206 whose range starts in the second before
 * the 3 s keyframe: the seek was a range request, not the file read on from the start.  That
 * is why the clip is large (about 8 MB): Chromium's first request reads a megabyte or two
 * ahead, and the 3 s keyframe must lie beyond it (past 3 MiB).
 *
 * --dump-dom prints the DOM at the page's load event.  The page holds that event back with an
 * iframe on a socket that never answers (nothing accepts on it); the script removes the
 * iframe once it has written its result.  If the script never gets there, its own 15 s timer
 * writes "timeout", and Chromium's --timeout is the last resort.
 *
 * Without chromium, ffmpeg or ffprobe the test prints a SKIP line and runs nothing.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_chromium.h"
#include "test_tools.h"

#define ND 2
#define SEEK_TO 3          /* seconds: the keyframe the page seeks to */
#define CLIP_SECONDS 6
#define CHROMIUM_TIMEOUT_MS 40000

static tt_env_t T;
static char chromium[PATH_MAX];

static int have(const char *prog)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", prog);
    return system(cmd) == 0;
}

/* lors_serve on dir: its port, its log in logp (PATH_MAX bytes); -1 if it does not come up. */
static int start_serve(tt_bg_t *srv, const char *dir, char *logp)
{
    int port;
    return tt_serve(&T, srv, dir, logp, &port, NULL, NULL, NULL, NULL) == 0 ? port : -1;
}

/* The byte offsets of the keyframes at second s - 1 and s of the clip (ffprobe); 0 or -1. */
static int keyframe_pos(const char *clip, int s, long long *before, long long *at)
{
    if (tt_sh(&T, "ffprobe -v error -select_streams v -show_entries packet=pts_time,pos,flags "
                  "-of csv=p=0 '%s' | awk -F, '$3 ~ /K/ && ($1 + 0 == %d || $1 + 0 == %d) "
                  "{ print $2 }'", clip, s - 1, s) != 0)
        return -1;
    return sscanf(T.out, "%lld %lld", before, at) == 2 ? 0 : -1;
}

/* The page: the clip, a name not served, the iframe holding the load event, the script. */
static int write_page(const char *path, int port, int hold_port)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f,
            "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>lors_serve video</title>"
            "</head><body>\n"
            "<video id=\"v\" muted preload=\"metadata\" src=\"http://127.0.0.1:%d/clip.webm\">"
            "</video>\n"
            "<video id=\"bad\" muted preload=\"metadata\" src=\"http://127.0.0.1:%d/nope.webm\">"
            "</video>\n"
            "<pre id=\"result\">pending</pre>\n"
            "<iframe id=\"hold\" src=\"http://127.0.0.1:%d/\"></iframe>\n"
            "<script>\n"
            "var T = %d, v = document.getElementById('v'), bad = document.getElementById('bad');\n"
            "var seen = [], main = null, badErr = null, seekedAt = -1;\n"
            "function finish() {\n"
            "  if (main === null || badErr === null) return;\n"
            "  document.getElementById('result').textContent = main + ' bad_error=' + badErr +\n"
            "    ' events=' + seen.join(',');\n"
            "  var h = document.getElementById('hold');\n"
            "  if (h) h.remove();\n"
            "}\n"
            "function report(state) {\n"
            "  if (main !== null) return;\n"
            "  v.pause();\n"
            "  main = 'state=' + state + ' seeked_at=' + seekedAt + ' time=' + v.currentTime +\n"
            "    ' duration=' + v.duration + ' ready=' + v.readyState +\n"
            "    ' error=' + (v.error ? v.error.code : 0);\n"
            "  finish();\n"
            "}\n"
            "['loadedmetadata', 'seeking', 'seeked', 'playing', 'waiting', 'stalled', 'error']"
            ".forEach(function (n) {\n"
            "  v.addEventListener(n, function () { seen.push(n + '@' + v.currentTime); });\n"
            "});\n"
            "v.addEventListener('error', function () { report('error'); });\n"
            "v.addEventListener('loadedmetadata', function () { v.currentTime = T; }, "
            "{once: true});\n"
            "v.addEventListener('seeked', function () {\n"
            "  seekedAt = v.currentTime;\n"
            "  v.addEventListener('timeupdate', function () {\n"
            "    if (v.currentTime >= T + 0.3) report('ok');\n"
            "  });\n"
            "  v.play().catch(function (e) { seen.push('play:' + e.name); report('refused'); });\n"
            "}, {once: true});\n"
            "bad.addEventListener('error', function () { badErr = bad.error.code; finish(); });\n"
            "bad.addEventListener('loadedmetadata', function () { badErr = 0; finish(); });\n"
            "setTimeout(function () {\n"
            "  if (badErr === null) badErr = 'none';\n"
            "  report('timeout');\n"
            "  finish();\n"
            "}, 15000);\n"
            "</script></body></html>\n",
            port, port, hold_port, SEEK_TO);
    return fclose(f) == 0 ? 0 : -1;
}

/* The value of key=VALUE in the result line, copied to out ("" if absent). */
static const char *field(const char *result, const char *key, char *out, size_t size)
{
    char k[64];
    snprintf(k, sizeof k, " %s=", key);
    const char *p = strstr(result, k);
    out[0] = 0;
    if (p) {
        p += strlen(k);
        size_t n = strcspn(p, " <");
        snprintf(out, size, "%.*s", (int)(n < size ? n : size - 1), p);
    }
    return out;
}

/* What the gateway's log says: a 206 of the clip whose range starts in (lo, hi], the 404 of
 * the name not served, and 5xx answers. */
static void scan_log(const char *logp, long long lo, long long hi, int *seek_range, int *not_found,
                     int *server_errors)
{
    char line[1024], method[16], name[256], range[128];
    int status;
    FILE *f = fopen(logp, "r");
    *seek_range = *not_found = *server_errors = 0;
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        range[0] = 0;
        if (sscanf(line, "%*s %*s %15s %255s %d %127s", method, name, &status, range) < 3)
            continue;
        long long start;
        if (status == 206 && strcmp(name, "/clip.webm") == 0 &&
            sscanf(range, "bytes=%lld-", &start) == 1 && start > lo && start <= hi)
            (*seek_range)++;
        if (status == 404 && strcmp(name, "/nope.webm") == 0)
            (*not_found)++;
        if (status >= 500)
            (*server_errors)++;
    }
    fclose(f);
}

static void test_video_seek(void)
{
    char clip[PATH_MAX], xnd[PATH_MAX], dir[PATH_MAX], dst[PATH_MAX + 32], logp[PATH_MAX];
    char page[PATH_MAX], url[PATH_MAX + 16], dom_file[PATH_MAX];
    long long lo = 0, hi = 0;
    tt_bg_t srv = {.pid = 0, .in = -1};

    snprintf(clip, sizeof clip, "%s", lns_test_path("clip.webm"));
    snprintf(xnd, sizeof xnd, "%s", lns_test_path("clip.xnd"));
    snprintf(dir, sizeof dir, "%s", lns_test_path("served"));
    snprintf(page, sizeof page, "%s", lns_test_path("page.html"));
    snprintf(dom_file, sizeof dom_file, "%s", lns_test_path("dom.html"));
    snprintf(dst, sizeof dst, "%s/clip.webm.xnd", dir);
    CU_ASSERT_EQUAL_FATAL(mkdir(dir, 0755), 0);

    /* VP8 in WebM: what every Chromium build plays (H.264 is not in every build, Theora is
     * deprecated in Chromium).  The noise keeps the encoder from making the frames small. */
    CU_ASSERT_EQUAL_FATAL(tt_sh(&T, "ffmpeg -v error -y -f lavfi -i testsrc2=size=320x240:rate=25 "
                                    "-t %d -vf noise=alls=80:allf=t -c:v libvpx -deadline "
                                    "realtime -cpu-used 8 -qmin 8 -qmax 20 -b:v 8M -g 25 "
                                    "-keyint_min 25 '%s'", CLIP_SECONDS, clip), 0);
    CU_ASSERT_EQUAL_FATAL(keyframe_pos(clip, SEEK_TO, &lo, &hi), 0);
    CU_ASSERT_FATAL(hi > 3 * 1024 * 1024); /* past what Chromium reads ahead of a seek */
    CU_ASSERT_EQUAL_FATAL(tt_sh(&T, "$B/lors_upload --no-rc -q --depot-list '%s' -c 2 -d 1h "
                                    "--force -o '%s' '%s'", T.depots, xnd, clip), 0);
    CU_ASSERT_EQUAL_FATAL(rename(xnd, dst), 0);

    int port = start_serve(&srv, dir, logp);
    CU_ASSERT_FATAL(port > 0);
    int hold_port = 0, hold = raw_listen_loopback(&hold_port), ran = -1;
    CU_ASSERT(hold >= 0);
    if (hold >= 0 && write_page(page, port, hold_port) == 0) {
        snprintf(url, sizeof url, "file://%s", page);
        /* The clip is muted, which the default policy lets play too; the flag makes the test
         * independent of that policy. */
        const char *const flags[] = {"--autoplay-policy=no-user-gesture-required",
                                     "--timeout=25000", "--dump-dom", NULL};
        ran = tc_run(chromium, flags, url, dom_file, CHROMIUM_TIMEOUT_MS);
    }
    if (hold >= 0)
        close(hold);
    kill(srv.pid, SIGTERM);
    CU_ASSERT_EQUAL(tt_wait(&T, &srv, 5000), 0);
    CU_ASSERT_FATAL(ran == 0);

    char dom[16384], result[4096], v[256];
    lns_test_slurp(dom_file, dom, sizeof dom);
    const char *r = strstr(dom, "<pre id=\"result\">");
    snprintf(result, sizeof result, " %s", r ? r + strlen("<pre id=\"result\">") : "(no result)");
    char *end = strstr(result, "</pre>");
    if (end)
        *end = 0;
    printf("\n  page: %s\n", result + 1);

    CU_ASSERT_STRING_EQUAL(field(result, "state", v, sizeof v), "ok");
    CU_ASSERT_STRING_EQUAL(field(result, "error", v, sizeof v), "0");
    double seeked_at = atof(field(result, "seeked_at", v, sizeof v));
    double t = atof(field(result, "time", v, sizeof v));
    double duration = atof(field(result, "duration", v, sizeof v));
    CU_ASSERT(seeked_at >= SEEK_TO && seeked_at < SEEK_TO + 0.1);
    CU_ASSERT(t >= SEEK_TO + 0.3 && t < SEEK_TO + 3);
    CU_ASSERT(duration > CLIP_SECONDS - 0.1 && duration < CLIP_SECONDS + 0.1);
    CU_ASSERT(atoi(field(result, "ready", v, sizeof v)) >= 2); /* HAVE_CURRENT_DATA */
    /* the name not served: MEDIA_ERR_SRC_NOT_SUPPORTED */
    CU_ASSERT_STRING_EQUAL(field(result, "bad_error", v, sizeof v), "4");

    int seek_range, not_found, server_errors;
    scan_log(logp, lo, hi, &seek_range, &not_found, &server_errors);
    if (seek_range == 0) {
        char log[8192];
        lns_test_slurp(logp, log, sizeof log);
        fprintf(stderr, "\n  no 206 starting in (%lld, %lld] in the gateway's log:\n%s\n", lo,
                hi, log);
    }
    CU_ASSERT(seek_range >= 1);
    CU_ASSERT(not_found >= 1);
    CU_ASSERT_EQUAL(server_errors, 0);
    CU_ASSERT(lns_test_log_clean(srv.err));
    tt_free_all(&T, dst);
}

static const lns_test_case tests[] = {
    {"Chromium <video>: seek to 3 s by a range, play on; a bad name errs", test_video_seek},
};

void lns_test_register(void)
{
    if (tc_find(chromium, sizeof chromium) != 0 || !have("ffmpeg") || !have("ffprobe")) {
        printf("SKIP test_lors_serve_browser: chromium, ffmpeg or ffprobe not installed\n");
        return;
    }
    tt_add_suite(&T, "lors_serve_browser", ND, tests, sizeof tests / sizeof tests[0]);
}
