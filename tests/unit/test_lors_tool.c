/* test_lors_tool.c -- tools/tool.h without depots: the rc file parser, exit codes,
 * the event stream's lines (and its behaviour with a reader that stops reading), the
 * progress bar, the tee, lors_verify_prefix on a hand-made exNode, and the text helpers
 * (sizes for -h, escapes for a terminal). */
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lns_test.h"
#include "lns_time.h"
#include "lors.h"
#include "tool.h"
#include "xnd.h"

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(text, f);
    fclose(f);
}

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *p = malloc(cap);
    size_t k;
    while ((k = fread(p + n, 1, cap - n - 1, f)) > 0) {
        n += k;
        if (cap - n < 2)
            p = realloc(p, cap *= 2);
    }
    p[n] = 0;
    fclose(f);
    return p;
}

/* ---- rc file --------------------------------------------------------------------------- */

static int load_text(const char *text, tool_rc_t *rc, char *err, size_t errlen)
{
    write_text(lns_test_path("rc"), text);
    return tool_rc_load(lns_test_path("rc"), rc, err, errlen);
}

static void test_rc_all_keywords(void)
{
    tool_rc_t rc;
    char err[512];
    int r = load_text("# a LoRS-style .xndrc\n"
                      "LBONE_SERVER lbone.example.org 6767\n"
                      "lbone_server other.example.org:7000   # lower case keyword\n"
                      "LBONE_SERVER third.example.org\n"
                      "LOCATION city= Knoxville state= TN\n"
                      "DURATION 2d\n"
                      "STORAGE_TYPE soft\n"
                      "E2E_BLOCKSIZE=256K\n"
                      "E2E_ORDER zlib_compress aes_encrypt\n"
                      "DATA_BLOCKSIZE = 2M\n"
                      "FRAGMENTS_PER_FILE 6\n"
                      "COPIES 3\n"
                      "THREADS 12\n"
                      "MAXDEPOTS 5\n"
                      "MAX_INTERNAL_BUFFER 48M\n"
                      "TIMEOUT 3m\n"
                      "DEPOT a.example.org 6714\n"
                      "DEPOT b.example.org:6715/2, c.example.org\n"
                      "DEPOT d.example.org#sha256:"
                      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef # pinned\n"
                      "\n   \t\n"
                      "VERBOSE yes\n",
                      &rc, err, sizeof err);
    CU_ASSERT_EQUAL_FATAL(r, LORS_OK);
    CU_ASSERT_STRING_EQUAL(rc.path, lns_test_path("rc"));
    CU_ASSERT_EQUAL_FATAL(rc.nlbone, 3);
    CU_ASSERT_STRING_EQUAL(rc.lbone_servers[0], "lbone.example.org:6767");
    CU_ASSERT_STRING_EQUAL(rc.lbone_servers[1], "other.example.org:7000");
    CU_ASSERT_STRING_EQUAL(rc.lbone_servers[2], "third.example.org:6767");
    CU_ASSERT_STRING_EQUAL(rc.location, "city= Knoxville state= TN");
    CU_ASSERT_EQUAL(rc.duration_s, 2 * 86400);
    CU_ASSERT_EQUAL(rc.reliability, IBP_SOFT);
    CU_ASSERT_EQUAL(rc.e2e_blocksize, 256 * 1024);
    CU_ASSERT_STRING_EQUAL(rc.e2e_order, "zlib,aes");
    CU_ASSERT_EQUAL(rc.data_blocksize, 2 << 20);
    CU_ASSERT_EQUAL(rc.fragments, 6);
    CU_ASSERT_EQUAL(rc.copies, 3);
    CU_ASSERT_EQUAL(rc.threads, 12);
    CU_ASSERT_EQUAL(rc.maxdepots, 5);
    CU_ASSERT_EQUAL(rc.max_buffer, 48 << 20);
    CU_ASSERT_EQUAL(rc.timeout_s, 180);
    CU_ASSERT_STRING_EQUAL(rc.depots, "a.example.org:6714, b.example.org:6715/2, c.example.org, "
                                      "d.example.org#sha256:0123456789abcdef0123456789abcdef"
                                      "0123456789abcdef0123456789abcdef");
    CU_ASSERT_EQUAL(rc.verbose, 1);
    /* the joined DEPOT value is a list the library takes */
    lors_depot_t *d = NULL;
    size_t nd = 0;
    CU_ASSERT_EQUAL(lors_depot_list_parse(rc.depots, &d, &nd, err, sizeof err), LORS_OK);
    CU_ASSERT_EQUAL(nd, 4);
    if (nd == 4) {
        CU_ASSERT_EQUAL(d[0].port, 6714);
        CU_ASSERT_STRING_EQUAL(d[1].rid, "2");
        CU_ASSERT_STRING_EQUAL(d[3].pin, "sha256:0123456789abcdef0123456789abcdef"
                                         "0123456789abcdef0123456789abcdef");
    }
    free(d);
    tool_rc_free(&rc);
    CU_ASSERT_EQUAL(rc.nlbone, 0);
    CU_ASSERT_PTR_NULL(rc.depots);
    tool_rc_free(&rc); /* twice is harmless */
}

static void test_rc_unset_and_sources(void)
{
    tool_rc_t rc;
    char err[512];
    /* comments only: everything unset */
    CU_ASSERT_EQUAL(load_text("# nothing\n\n", &rc, err, sizeof err), LORS_OK);
    CU_ASSERT_EQUAL(rc.copies, -1);
    CU_ASSERT_EQUAL(rc.duration_s, -1);
    CU_ASSERT_EQUAL(rc.reliability, -1);
    CU_ASSERT_EQUAL(rc.max_buffer, -1);
    CU_ASSERT_EQUAL(rc.verbose, -1);
    CU_ASSERT_PTR_NULL(rc.depots);
    CU_ASSERT_PTR_NULL(rc.e2e_order);
    tool_rc_free(&rc);

    /* no path: $LNS_RC, else ~/.xndrc, which may be missing */
    write_text(lns_test_path("env.rc"), "COPIES 4\n");
    setenv("LNS_RC", lns_test_path("env.rc"), 1);
    CU_ASSERT_EQUAL(tool_rc_load(NULL, &rc, err, sizeof err), LORS_OK);
    CU_ASSERT_EQUAL(rc.copies, 4);
    tool_rc_free(&rc);
    unsetenv("LNS_RC");
    setenv("HOME", lns_test_tmpdir(), 1);
    unlink(lns_test_path(".xndrc"));
    CU_ASSERT_EQUAL(tool_rc_load(NULL, &rc, err, sizeof err), LORS_OK);
    CU_ASSERT_STRING_EQUAL(rc.path, "");
    CU_ASSERT_EQUAL(rc.copies, -1);
    tool_rc_free(&rc);
    write_text(lns_test_path(".xndrc"), "THREADS 7\n");
    CU_ASSERT_EQUAL(tool_rc_load(NULL, &rc, err, sizeof err), LORS_OK);
    CU_ASSERT_EQUAL(rc.threads, 7);
    tool_rc_free(&rc);
    unlink(lns_test_path(".xndrc"));

    /* a file named but missing is an error, from a path or from LNS_RC */
    CU_ASSERT_EQUAL(tool_rc_load(lns_test_path("nope.rc"), &rc, err, sizeof err), LORS_E_RC);
    CU_ASSERT(strstr(err, "nope.rc") != NULL);
    setenv("LNS_RC", lns_test_path("nope.rc"), 1);
    CU_ASSERT_EQUAL(tool_rc_load(NULL, &rc, err, sizeof err), LORS_E_RC);
    unsetenv("LNS_RC");
    /* /dev/null (what --no-rc amounts to) is an empty file */
    CU_ASSERT_EQUAL(tool_rc_load("/dev/null", &rc, err, sizeof err), LORS_OK);
    CU_ASSERT_EQUAL(rc.copies, -1);
    tool_rc_free(&rc);
}

static void test_rc_errors(void)
{
    static const struct {
        const char *text;
        int line;
        const char *word;
    } bad[] = {
        {"COPIES 2\nCOPIS 3\n", 2, "unknown keyword COPIS"},
        {"COPIES 0\n", 1, "COPIES 0"},
        {"COPIES 2x\n", 1, "COPIES"},
        {"COPIES -1\n", 1, "COPIES"},
        {"THREADS 99999\n", 1, "THREADS"},
        {"DURATION forever\n", 1, "DURATION"},
        {"TIMEOUT 2d\n", 1, "TIMEOUT"},
        {"DURATION 0\n", 1, "DURATION"},
        {"STORAGE_TYPE medium\n", 1, "HARD or SOFT"},
        {"DATA_BLOCKSIZE 5Q\n", 1, "DATA_BLOCKSIZE"},
        {"\n\nDEPOT host:99999\n", 3, "DEPOT"},
        {"LBONE_SERVER a b c\n", 1, "LBONE_SERVER"},
        {"E2E_ORDER zlib des\n", 1, "not supported"},
        {"E2E_ORDER zlib zlib\n", 1, "twice"},
        {"E2E_ORDER zstd aes zlib\n", 1, "one compressor at the most"},
        {"E2E_ORDER rot13\n", 1, "rot13"},
        {"COPIES\n", 1, "needs a value"},
        {"= 5\n", 1, "expected KEYWORD value"},
        {"COPIES: 5\n", 1, "expected KEYWORD value"},
        {"VERBOSE maybe\n", 1, "VERBOSE"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tool_rc_t rc;
        char err[512], where[4200];
        int r = load_text(bad[i].text, &rc, err, sizeof err);
        CU_ASSERT_EQUAL(r, LORS_E_RC);
        snprintf(where, sizeof where, "%s:%d: ", lns_test_path("rc"), bad[i].line);
        if (strncmp(err, where, strlen(where)) != 0 || !strstr(err, bad[i].word)) {
            fprintf(stderr, "case %zu: %s\n", i, err);
            CU_FAIL("message does not name file:line and the problem");
        }
        CU_ASSERT_PTR_NULL(rc.depots); /* nothing half-loaded */
        CU_ASSERT_EQUAL(rc.copies, -1);
        tool_rc_free(&rc);
    }
    /* zstd in E2E_ORDER, either side of aes */
    static const char *good[][2] = {{"E2E_ORDER aes ZSTD\n", "aes,zstd"},
                                    {"E2E_ORDER zstd,aes_encrypt\n", "zstd,aes"}};
    for (size_t i = 0; i < 2; i++) {
        tool_rc_t rc;
        char err[512];
        CU_ASSERT_EQUAL(load_text(good[i][0], &rc, err, sizeof err), LORS_OK);
        CU_ASSERT(rc.e2e_order && strcmp(rc.e2e_order, good[i][1]) == 0);
        tool_rc_free(&rc);
    }
}

static void test_exit_codes(void)
{
    static const struct {
        int code, exit;
    } cases[] = {
        {LORS_OK, 0},
        {LORS_E_INVAL, TOOL_EXIT_USAGE},
        {LORS_E_RC, TOOL_EXIT_USAGE},
        {LORS_E_EXNODE, TOOL_EXIT_EXNODE},
        {LORS_E_READ, TOOL_EXIT_IO},
        {LORS_E_WRITE, TOOL_EXIT_IO},
        {LORS_E_NODEPOTS, TOOL_EXIT_DEPOTS},
        {LORS_E_PLACE, TOOL_EXIT_DEPOTS},
        {LORS_E_NO_REPLICA, TOOL_EXIT_NO_DATA},
        {LORS_E_KEY, TOOL_EXIT_INTEGRITY},
        {LORS_E_E2E, TOOL_EXIT_INTEGRITY},
        {LORS_E_DIGEST, TOOL_EXIT_INTEGRITY},
        {LORS_E_PARTIAL, TOOL_EXIT_PARTIAL},
        {LORS_E_NOMEM, TOOL_EXIT_INTERNAL},
        {-999, TOOL_EXIT_INTERNAL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int got = tool_exit_code(cases[i].code);
        if (got != cases[i].exit)
            fprintf(stderr, "tool_exit_code(%d) = %d, not %d\n", cases[i].code, got,
                    cases[i].exit);
        CU_ASSERT_EQUAL(got, cases[i].exit);
    }
}

/* ---- the event stream ------------------------------------------------------------------ */

static void test_encode(void)
{
    char b[64];
    tool_events_encode("plain:6714/rid", b, sizeof b);
    CU_ASSERT_STRING_EQUAL(b, "plain:6714/rid");
    tool_events_encode("a b%c\n\x80", b, sizeof b);
    CU_ASSERT_STRING_EQUAL(b, "a%20b%25c%0A%80");
    tool_events_encode("", b, sizeof b);
    CU_ASSERT_STRING_EQUAL(b, "-");
    tool_events_encode(NULL, b, sizeof b);
    CU_ASSERT_STRING_EQUAL(b, "-");
    tool_events_encode("ab  ", b, 6); /* never cut inside an escape */
    CU_ASSERT_STRING_EQUAL(b, "ab%20");
}

/* The lines after the header, without their time stamps. */
static char *strip_ms(const char *text, char *first_line, size_t fl)
{
    const char *nl = strchr(text, '\n');
    size_t n = nl ? (size_t)(nl - text) : strlen(text);
    snprintf(first_line, fl, "%.*s", (int)n, text);
    char *outp = malloc(strlen(text) + 1), *o = outp;
    for (const char *p = nl ? nl + 1 : text + n; *p;) {
        const char *sp = strchr(p, ' ');
        CU_ASSERT_PTR_NOT_NULL_FATAL(sp);
        for (const char *q = p; q < sp; q++)
            CU_ASSERT(*q >= '0' && *q <= '9');
        const char *e = strchr(sp, '\n');
        size_t k = e ? (size_t)(e - sp) : strlen(sp);
        memcpy(o, sp + 1, k);
        o += k;
        p = e ? e + 1 : sp + k + 1;
    }
    *o = 0;
    return outp;
}

/* The stream in file path must be want, without its time stamps; its header into header. */
static void expect_stream(const char *path, const char *want, char *header, size_t hl)
{
    char *text = read_all(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    char *body = strip_ms(text, header, hl);
    CU_ASSERT_STRING_EQUAL(body, want);
    if (strcmp(body, want) != 0)
        fprintf(stderr, "got:\n%s\nwant:\n%s", body, want);
    free(body);
    free(text);
}

static void test_event_lines(void)
{
    char err[256], header[256];
    lors_depot_t a = {.host = "a.example.org", .port = 6714, .rid = ""};
    lors_depot_t b = {.host = "b c", .port = 7000, .rid = "r1"};
    tool_events_t *es = tool_events_open(lns_test_path("ev"), "lors_test", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(es);
    tool_events_printf(es, "BEGIN", "op=upload file=%s size=%d", "x", 10);
    lors_event_t ev = {.kind = LORS_EV_ALLOCATE, .depot = &a, .fragment = 1, .copy = 0,
                       .offset = 100, .length = 50};
    tool_events_event(es, &ev);
    ev = (lors_event_t){.kind = LORS_EV_FAILURE, .depot = &a, .moved_to = &b, .fragment = 2,
                        .copy = 1, .offset = 0, .length = 7, .ibp_err = IBP_E_CAP_NOT_FOUND,
                        .op = "STORE"};
    tool_events_event(es, &ev);
    ev.moved_to = NULL;
    tool_events_event(es, &ev);
    ev = (lors_event_t){.kind = LORS_EV_FETCH_FAIL, .depot = &b, .fragment = 3, .copy = 5,
                        .offset = 9, .length = 1, .ibp_err = 0, .op = "CHECKSUM"};
    tool_events_event(es, &ev);
    ev = (lors_event_t){.kind = LORS_EV_WRITE, .fragment = 3, .copy = -1, .offset = 9,
                        .length = 1};
    tool_events_event(es, &ev);
    ev = (lors_event_t){.kind = LORS_EV_SEND_END, .depot = &a, .moved_to = &b, .fragment = 0,
                        .copy = 2, .offset = 0, .length = 4096};
    tool_events_event(es, &ev);
    ev.kind = (lors_event_kind)99; /* unknown kinds are not written */
    tool_events_event(es, &ev);
    tool_events_printf(es, "END", "bytes=%d seconds=%.3f rc=%d", 10, 0.5, 0);
    tool_events_close(es);

    const char *nf = ibp_strerror(IBP_E_CAP_NOT_FOUND);
    char why[256];
    tool_events_encode(nf, why, sizeof why);
    char want[2048];
    snprintf(want, sizeof want,
             "BEGIN op=upload file=x size=10\n"
             "ALLOCATE depot=a.example.org:6714 frag=1 copy=0 off=100 len=50\n"
             "FAILURE depot=a.example.org:6714 frag=2 copy=1 off=0 len=7 op=STORE err=%d "
             "why=%s to=b%%20c:7000/r1\n"
             "FAILURE depot=a.example.org:6714 frag=2 copy=1 off=0 len=7 op=STORE err=%d "
             "why=%s to=-\n"
             "FETCH_FAIL depot=b%%20c:7000/r1 frag=3 copy=5 off=9 len=1 op=CHECKSUM err=0\n"
             "WRITE frag=3 off=9 len=1\n"
             "SEND_END depot=a.example.org:6714 frag=0 copy=2 off=0 len=4096 "
             "to=b%%20c:7000/r1\n"
             "END bytes=10 seconds=0.500 rc=0 dropped=0\n",
             IBP_E_CAP_NOT_FOUND, why, IBP_E_CAP_NOT_FOUND, why);
    expect_stream(lns_test_path("ev"), want, header, sizeof header);
    int pid = 0;
    long long t = 0;
    CU_ASSERT_EQUAL(sscanf(header, "LNS-EVENTS 1 tool=lors_test pid=%d time=%lld", &pid, &t), 2);
    CU_ASSERT_EQUAL(pid, getpid());
    CU_ASSERT(llabs(t - (long long)time(NULL)) < 60);

    /* fd:N writes to an open descriptor and leaves it open; bad specs fail */
    int fd = open(lns_test_path("ev2"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    char spec[32];
    snprintf(spec, sizeof spec, "fd:%d", fd);
    es = tool_events_open(spec, "t", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(es);
    tool_events_close(es);
    CU_ASSERT(write(fd, "more\n", 5) == 5); /* still open */
    close(fd);
    char *text = read_all(lns_test_path("ev2"));
    CU_ASSERT(text && strncmp(text, "LNS-EVENTS 1 tool=t pid=", 24) == 0 &&
              strstr(text, "\nmore\n") != NULL);
    free(text);
    CU_ASSERT_PTR_NULL(tool_events_open("fd:x", "t", err, sizeof err));
    CU_ASSERT_PTR_NULL(tool_events_open("fd:987", "t", err, sizeof err));
    CU_ASSERT(strstr(err, "987") != NULL);
    CU_ASSERT_PTR_NULL(tool_events_open(lns_test_path("no/such/dir"), "t", err, sizeof err));
    tool_events_close(NULL);
}

/* The lines of lors_trim and lors_refresh: MAPPING (the exNode as read), TRIM, REFRESH, and a
 * refresh's FAILURE.  Their own keys come last; "-" stands for what is not known or not asked. */
static void test_event_lines_manage(void)
{
    char err[256], header[256];
    lors_depot_t a = {.host = "a.example.org", .port = 6714, .rid = "0"};
    tool_events_t *es = tool_events_open(lns_test_path("evm"), "lors_trim", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(es);

    /* two mappings: one with a manage capability and an end, one with neither */
    xnd_t *x = xnd_new();
    xnd_mapping_t *m = xnd_mapping_new();
    m->logical_length = 100;
    CU_ASSERT_EQUAL(xnd_mapping_set_cap(m, XND_MANAGE, "ibp://a.example.org:6714/0#k3y/t1/MANAGE"),
                    XND_OK);
    CU_ASSERT_EQUAL(xnd_mapping_set_time(m, 1, 1795386450), XND_OK);
    CU_ASSERT_EQUAL(xnd_append(x, m), XND_OK);
    m = xnd_mapping_new();
    m->exnode_offset = 100;
    m->logical_length = 50;
    CU_ASSERT_EQUAL(xnd_mapping_set_cap(m, XND_READ, "not a capability"), XND_OK);
    CU_ASSERT_EQUAL(xnd_append(x, m), XND_OK);
    tool_events_mappings(es, x);
    tool_events_mappings(NULL, x); /* no stream: nothing, no crash */
    xnd_free(x);

    /* TRIM: freed=- (no -d), 1, and 0 with the step and error; no depot when none parses */
    lors_event_t ev = {.kind = LORS_EV_TRIM, .depot = &a, .fragment = 0, .copy = 0,
                       .offset = 0, .length = 100, .freed = -1};
    tool_events_event(es, &ev);
    ev.freed = 1;
    tool_events_event(es, &ev);
    ev.freed = 0;
    ev.op = "DECR";
    ev.ibp_err = IBP_E_CAP_NOT_FOUND;
    tool_events_event(es, &ev);
    ev = (lors_event_t){.kind = LORS_EV_TRIM, .fragment = 1, .copy = 1, .offset = 100,
                        .length = 50, .freed = 0, .op = "NOCAP"};
    tool_events_event(es, &ev);

    /* REFRESH: an old end not known, then both; a refresh that failed is a FAILURE, to=- */
    ev = (lors_event_t){.kind = LORS_EV_REFRESH, .depot = &a, .fragment = 0, .copy = 0,
                        .offset = 0, .length = 100, .old_end = XND_TIME_UNKNOWN,
                        .new_end = 1795390050};
    tool_events_event(es, &ev);
    ev.old_end = 1795386450;
    tool_events_event(es, &ev);
    ev.new_end = XND_TIME_UNKNOWN;
    tool_events_event(es, &ev);
    ev = (lors_event_t){.kind = LORS_EV_FAILURE, .depot = &a, .fragment = 0, .copy = 0,
                        .offset = 0, .length = 100, .op = "CHANGE",
                        .ibp_err = IBP_E_CAP_NOT_FOUND};
    tool_events_event(es, &ev);
    tool_events_printf(es, "END", "bytes=%d seconds=%.3f rc=%d", 100, 0.25, 8);
    tool_events_close(es);

    char why[256], want[2048];
    tool_events_encode(ibp_strerror(IBP_E_CAP_NOT_FOUND), why, sizeof why);
    snprintf(want, sizeof want,
             "MAPPING depot=a.example.org:6714/0 frag=0 copy=0 off=0 len=100 end=1795386450\n"
             "MAPPING depot=- frag=1 copy=1 off=100 len=50 end=-\n"
             "TRIM depot=a.example.org:6714/0 frag=0 copy=0 off=0 len=100 freed=-\n"
             "TRIM depot=a.example.org:6714/0 frag=0 copy=0 off=0 len=100 freed=1\n"
             "TRIM depot=a.example.org:6714/0 frag=0 copy=0 off=0 len=100 op=DECR err=%d "
             "why=%s freed=0\n"
             "TRIM frag=1 copy=1 off=100 len=50 op=NOCAP err=0 freed=0\n"
             "REFRESH depot=a.example.org:6714/0 frag=0 copy=0 off=0 len=100 old_end=- "
             "new_end=1795390050\n"
             "REFRESH depot=a.example.org:6714/0 frag=0 copy=0 off=0 len=100 "
             "old_end=1795386450 new_end=1795390050\n"
             "REFRESH depot=a.example.org:6714/0 frag=0 copy=0 off=0 len=100 "
             "old_end=1795386450 new_end=-\n"
             "FAILURE depot=a.example.org:6714/0 frag=0 copy=0 off=0 len=100 op=CHANGE err=%d "
             "why=%s to=-\n"
             "END bytes=100 seconds=0.250 rc=8 dropped=0\n",
             IBP_E_CAP_NOT_FOUND, why, IBP_E_CAP_NOT_FOUND, why);
    expect_stream(lns_test_path("evm"), want, header, sizeof header);
    CU_ASSERT(strncmp(header, "LNS-EVENTS 1 tool=lors_trim pid=", 32) == 0);
}

typedef struct feeder {
    tool_events_t *es;
    int n;
} feeder_t;

static void *feed_events(void *arg)
{
    feeder_t *f = arg;
    lors_depot_t d = {.host = "127.0.0.1", .port = 6714, .rid = ""};
    for (int i = 0; i < f->n; i++) {
        lors_event_t ev = {.kind = LORS_EV_FETCH_END, .depot = &d, .fragment = i, .copy = 0,
                           .offset = (int64_t)i * 1000, .length = 1000};
        tool_events_event(f->es, &ev);
    }
    return NULL;
}

/* A reader that stops reading: the writers never stall, lines are dropped whole and counted,
 * and END (written once the reader reads again) says how many. */
static void test_event_slow_reader(void)
{
    int p[2];
    char err[256], spec[32];
    CU_ASSERT_EQUAL_FATAL(pipe(p), 0);
    snprintf(spec, sizeof spec, "fd:%d", p[1]);
    tool_events_t *es = tool_events_open(spec, "t", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(es);

    enum { THREADS = 4, EACH = 50000 };
    pthread_t t[THREADS];
    feeder_t f = {es, EACH};
    int64_t t0 = lns_mono_ms();
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, feed_events, &f);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    int64_t took = lns_mono_ms() - t0;
    /* 200000 events into a pipe nobody reads: no stall (a hang bound only: a writer that
     * waited for the reader would wait for ever, or the close grace per line) */
    CU_ASSERT(took < 30000);

    /* now read everything, while END goes out */
    FILE *r = fdopen(p[0], "r");
    tool_events_printf(es, "END", "rc=0");
    char line[512];
    long lines = 0, dropped = -1, bad = 0;
    int saw_end = 0;
    while (!saw_end && fgets(line, sizeof line, r)) {
        if (strncmp(line, "LNS-EVENTS", 10) == 0)
            continue;
        char *e = strstr(line, " END rc=0 dropped=");
        if (e) {
            dropped = atol(e + 18);
            saw_end = 1;
        } else if (!strstr(line, " FETCH_END depot=127.0.0.1:6714 frag=") ||
                   line[strlen(line) - 1] != '\n') {
            bad++; /* a line cut or mixed with another */
        } else {
            lines++;
        }
    }
    tool_events_close(es);
    fclose(r);
    close(p[1]);
    CU_ASSERT(saw_end);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(dropped > 0);
    CU_ASSERT_EQUAL(lines + dropped, (long)THREADS * EACH);
}

/* A reader that is gone: writes fail (no SIGPIPE death), close returns promptly. */
static void test_event_reader_gone(void)
{
    int p[2];
    char err[256], spec[32];
    CU_ASSERT_EQUAL_FATAL(pipe(p), 0);
    close(p[0]);
    snprintf(spec, sizeof spec, "fd:%d", p[1]);
    tool_events_t *es = tool_events_open(spec, "t", err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(es);
    feeder_t f = {es, 1000};
    feed_events(&f);
    int64_t t0 = lns_mono_ms();
    tool_events_close(es);
    CU_ASSERT(lns_mono_ms() - t0 < 2000);
    close(p[1]);
}

/* ---- progress and tee ------------------------------------------------------------------ */

static void test_progress(void)
{
    int p[2];
    CU_ASSERT_EQUAL_FATAL(pipe(p), 0);
    CU_ASSERT_PTR_NULL(tool_progress_new(p[1], "x", 100, 0)); /* not a terminal */
    tool_progress_event(NULL, NULL);
    tool_progress_add(NULL, 5);
    tool_progress_finish(NULL);

    tool_progress_t *bar = tool_progress_new(p[1], "download", 4000, 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(bar);
    lors_depot_t a = {.host = "a", .port = 6714, .rid = ""};
    lors_depot_t b = {.host = "b", .port = 6714, .rid = ""};
    lors_event_t ev = {.kind = LORS_EV_FETCH_END, .depot = &a, .offset = 0, .length = 3000};
    tool_progress_event(bar, &ev);
    ev.depot = &b;
    ev.length = 1000;
    tool_progress_event(bar, &ev);
    ev = (lors_event_t){.kind = LORS_EV_WRITE, .offset = 0, .length = 4000};
    tool_progress_event(bar, &ev);
    tool_progress_finish(bar);
    close(p[1]);
    char buf[8192];
    ssize_t n = read(p[0], buf, sizeof buf - 1);
    close(p[0]);
    CU_ASSERT_FATAL(n > 0);
    buf[n] = 0;
    char *last = strrchr(buf, '\r');
    CU_ASSERT_PTR_NOT_NULL_FATAL(last);
    CU_ASSERT(strstr(last, "download 100%") != NULL);
    CU_ASSERT(strstr(last, "a:6714 75% b:6714 25%") != NULL);
    CU_ASSERT(strstr(last, "MB/s") != NULL);
    CU_ASSERT_EQUAL(buf[n - 1], '\n');
}

static int calls[3];
static void count_a(void *arg, const lors_event_t *ev)
{
    calls[0]++;
    calls[2] = calls[2] * 10 + *(int *)arg;
}

static void test_tee(void)
{
    tool_tee_t t = {0};
    int one = 1, two = 2;
    lors_event_t ev = {.kind = LORS_EV_WRITE};
    tool_tee_add(&t, count_a, &one);
    tool_tee_add(&t, NULL, &two); /* ignored */
    tool_tee_add(&t, count_a, &two);
    tool_tee_call(&t, &ev);
    CU_ASSERT_EQUAL(calls[0], 2);
    CU_ASSERT_EQUAL(calls[2], 12); /* in order */
    for (int i = 0; i < 10; i++)
        tool_tee_add(&t, count_a, &one);
    CU_ASSERT_EQUAL(t.n, 4); /* full: the rest ignored */
}

/* ---- lors_verify_prefix ----------------------------------------------------------------- */

#define VBS 4096

static void hex_digests(const unsigned char *p, size_t n, char *out)
{
    for (size_t off = 0; off < n; off += VBS) {
        unsigned char md[32];
        unsigned int l;
        EVP_Digest(p + off, n - off < VBS ? n - off : VBS, md, &l, EVP_sha256(), NULL);
        for (unsigned int i = 0; i < l; i++)
            out += sprintf(out, "%02x", md[i]);
    }
    *out = 0;
}

static void add_mapping(xnd_t *x, int64_t off, const unsigned char *data, int64_t len,
                        int spoil)
{
    xnd_mapping_t *m = xnd_mapping_new();
    char *hex = malloc((size_t)(len / VBS + 2) * 64 + 1);
    hex_digests(data + off, (size_t)len, hex);
    if (spoil)
        hex[0] = hex[0] == '0' ? '1' : '0';
    m->exnode_offset = off;
    m->logical_length = len;
    m->alloc_length = len;
    xnd_func_t *f = xnd_func_new(LORS_CHECKSUM_FUNC);
    xnd_meta_set_string(&f->args, "algorithm", "sha256");
    xnd_meta_set_int(&f->args, "blocksize", VBS);
    xnd_meta_set_string(&f->args, "digests", hex);
    xnd_mapping_set_func(m, f);
    CU_ASSERT_EQUAL(xnd_append(x, m), XND_OK);
    free(hex);
}

static int verify(const xnd_t *x, const unsigned char *file, int64_t off, int64_t len)
{
    int fd = open(lns_test_path("vp"), O_RDWR | O_CREAT | O_TRUNC, 0600);
    CU_ASSERT(write(fd, file, (size_t)len) == len);
    int64_t good = -1;
    int rc = lors_verify_prefix(x, fd, off, len, &good);
    close(fd);
    CU_ASSERT_EQUAL(rc, LORS_OK);
    return (int)good;
}

static void test_verify_prefix(void)
{
    enum { N = 10 * VBS + 100 };
    unsigned char *src = malloc(N), *f = malloc(N);
    lns_test_fill(src, N, 42);
    xnd_t *x = xnd_new();
    /* two fragments: [0, 6 blocks) and [6 blocks, N); the first also as a spoiled replica */
    add_mapping(x, 0, src, 6 * VBS, 1);
    add_mapping(x, 0, src, 6 * VBS, 0);
    add_mapping(x, 6 * VBS, src, N - 6 * VBS, 0);

    memcpy(f, src, N);
    CU_ASSERT_EQUAL(verify(x, f, 0, N), N);              /* all of it, the short last block too */
    CU_ASSERT_EQUAL(verify(x, f, 0, N - 1), 10 * VBS);   /* the last block incomplete */
    CU_ASSERT_EQUAL(verify(x, f, 0, 7 * VBS + 5), 7 * VBS);
    CU_ASSERT_EQUAL(verify(x, f, 0, 0), 0);
    f[3 * VBS + 17] ^= 1;                                /* damage in block 3 */
    CU_ASSERT_EQUAL(verify(x, f, 0, N), 3 * VBS);
    memcpy(f, src, N);
    f[8 * VBS] ^= 0x80;                                  /* block 8, second fragment */
    CU_ASSERT_EQUAL(verify(x, f, 0, N), 8 * VBS);
    /* a sub-range: the file holds bytes from 2 blocks on */
    CU_ASSERT_EQUAL(verify(x, src + 2 * VBS, 2 * VBS, N - 2 * VBS), N - 2 * VBS);
    /* starting inside a checksum block: nothing can be checked */
    CU_ASSERT_EQUAL(verify(x, src + 100, 100, 3 * VBS), 0);

    /* bytes no checksum covers end the prefix */
    xnd_t *y = xnd_new();
    add_mapping(y, 0, src, 2 * VBS, 0);
    CU_ASSERT_EQUAL(verify(y, src, 0, 5 * VBS), 2 * VBS);
    xnd_free(y);

    /* a file shorter than it is said to be: a read error, the prefix checked so far */
    int fd = open(lns_test_path("vp"), O_RDWR | O_CREAT | O_TRUNC, 0600);
    CU_ASSERT(write(fd, src, 2 * VBS) == 2 * VBS);
    int64_t good = -1;
    CU_ASSERT_EQUAL(lors_verify_prefix(x, fd, 0, 4 * VBS, &good), LORS_E_READ);
    CU_ASSERT_EQUAL(good, 2 * VBS);
    CU_ASSERT_EQUAL(lors_verify_prefix(x, fd, -1, 4, &good), LORS_E_INVAL);
    close(fd);

    xnd_free(x);
    free(src);
    free(f);
}

/* Sizes as ls -lh prints them, rounded up, at every unit boundary. */
static void test_human(void)
{
    static const struct {
        int64_t v;
        const char *want;
    } cases[] = {
        {0, "0"}, {1023, "1023"}, {1024, "1.0K"}, {1025, "1.1K"}, {10239, "10K"},
        {10240, "10K"}, {100000, "98K"}, {1048575, "1.0M"}, {1572864, "1.5M"},
        {3145728, "3.0M"}, {(int64_t)2 << 30, "2.0G"}, {INT64_MAX, "8.0E"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[32];
        tool_human(cases[i].v, buf, sizeof buf);
        CU_ASSERT_STRING_EQUAL(buf, cases[i].want);
    }
}

/* Text for a terminal: controls, DEL, C1 and broken UTF-8 escaped, printable UTF-8 kept,
 * a cut only at a whole character. */
static void test_escape(void)
{
    char out[64];
    tool_escape("a\\b\nc\td\re\x1b[0m\x7f", out, sizeof out);
    CU_ASSERT_STRING_EQUAL(out, "a\\\\b\\nc\\td\\re\\x1b[0m\\x7f");
    tool_escape("\xc2\x9b" "1m \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", out, sizeof out);
    CU_ASSERT_STRING_EQUAL(out, "\\xc2\\x9b1m \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    tool_escape("\xff \xc3 \xe0\x80\x80 \xed\xa0\x80", out, sizeof out); /* bad, cut, overlong, surrogate */
    CU_ASSERT_STRING_EQUAL(out, "\\xff \\xc3 \\xe0\\x80\\x80 \\xed\\xa0\\x80");
    tool_escape("abc\n", out, 5); /* room for "abc" and not for half of "\n" */
    CU_ASSERT_STRING_EQUAL(out, "abc");
}

/* The transform list of -z, -a, --e2e and E2E_ORDER: added to what is there, canonical
 * names, and each refusal's line (the same for the command line and the rc file). */
static void test_e2e_list(void)
{
    static const struct {
        const char *had, *list;
        int none_ok, rc;
        const char *want; /* the chain after (rc 0 or 1: unchanged) or the error line */
    } cases[] = {
        {"", "zstd,aes", 0, 0, "zstd,aes"},
        {"", " ZLIB_compress\taes_encrypt ", 0, 0, "zlib,aes"},
        {"aes", "zstd", 0, 0, "aes,zstd"},
        {"", "", 0, 0, ""},
        {"", "none", 1, 0, ""},
        {"zstd", "none", 0, 1, "zstd"},
        {"", "zstd,none", 0, 1, ""},
        {"", "zlib des", 1, -1, "W: des is not supported (weak); use aes"},
        {"", "xor3", 0, -1, "W: xor3 is not supported (weak); use aes"},
        {"", "rot13", 0, -1, "W: unknown transform rot13 (expected zstd, zlib or aes)"},
        {"", "de", 1, -1, "W: unknown transform de (expected zstd, zlib, aes or none)"},
        {"", "zlib zlib", 1, -1, "W: transform zlib named twice"},
        {"aes", "aes", 0, -1, "W: transform aes named twice"},
        {"zstd", "zlib", 0, -1, "W: one compressor at the most (zstd or zlib)"},
        {"", "zstd aes zlib", 1, -1, "W: one compressor at the most (zstd or zlib)"},
        {"", "none aes", 1, -1, "W: none cannot be combined with transforms"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char chain[64], err[256] = "";
        snprintf(chain, sizeof chain, "%s", cases[i].had);
        int rc = tool_e2e_list("W", cases[i].list, cases[i].none_ok, chain, sizeof chain, err,
                               sizeof err);
        const char *got = rc < 0 ? err : rc > 0 && strcmp(chain, cases[i].had) ? "changed"
                                                                               : chain;
        if (rc != cases[i].rc || strcmp(got, cases[i].want) != 0) {
            fprintf(stderr, "case %zu (%s): %d \"%s\"\n", i, cases[i].list, rc, got);
            CU_FAIL("tool_e2e_list");
        }
    }
}

static const lns_test_case tests[] = {
    {"rc: every keyword", test_rc_all_keywords},
    {"rc: unset fields and where the file comes from", test_rc_unset_and_sources},
    {"rc: errors name file:line", test_rc_errors},
    {"the e2e transform list", test_e2e_list},
    {"exit codes", test_exit_codes},
    {"events: value encoding", test_encode},
    {"events: one line per event", test_event_lines},
    {"events: MAPPING, TRIM, REFRESH lines", test_event_lines_manage},
    {"events: a reader that stops reading", test_event_slow_reader},
    {"events: a reader that is gone", test_event_reader_gone},
    {"progress bar", test_progress},
    {"event tee", test_tee},
    {"verify a prefix against checksums", test_verify_prefix},
    {"sizes as ls -lh prints them", test_human},
    {"escaping text for a terminal", test_escape},
};

LNS_TEST_MAIN("lors_tool", tests)
