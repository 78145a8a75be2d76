/* test_ibp_tool.c -- the ibp_tool program, driven through a shell as a user would.
 *
 * Each run goes through sh -c with stdin, stdout and stderr in files of the test tmpdir,
 * so pipes ("cat f | ibp_tool store ...", "ibp_tool load ... | sha256sum") are exercised as
 * written in the man page.  Checked: output in plain and --json form, data equality, the
 * one-line error format, and the documented exit codes (0 ok, 1 depot refused, 2 usage,
 * 3 network, 4 local I/O). */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ibp.h"
#include "lns_test.h"
#include "test_depot.h"
#include "lns_version.h"

static test_depot_t dA, dB;
static char out[1 << 16], err[1 << 14];

static int suite_init(void)
{
    return td_start(&dA, "--admin-password pw") < 0 || td_start(&dB, NULL) < 0 ? -1 : 0;
}

static int suite_clean(void)
{
    lns_test_server_stop(&dA.srv);
    lns_test_server_stop(&dB.srv);
    return 0;
}

/* Run "sh -c <cmd>" where $T is the ibp_tool binary and $D the tmpdir; stdout and stderr
 * land in out[] and err[].  Returns the exit code (or -1). */
static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int run(const char *fmt, ...)
{
    char cmd[8192], full[8192 + 4 * PATH_MAX + 128], o[PATH_MAX], e[PATH_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    snprintf(o, sizeof o, "%s/run.out", lns_test_tmpdir());
    snprintf(e, sizeof e, "%s/run.err", lns_test_tmpdir());
    snprintf(full, sizeof full, "T='%s/ibp_tool'; D='%s'; (%s) >'%s' 2>'%s' </dev/null",
             lns_test_bindir(), lns_test_tmpdir(), cmd, o, e);
    int st = system(full);
    lns_test_slurp(o, out, sizeof out);
    lns_test_slurp(e, err, sizeof err);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Copy the value of "key":"..." from JSON text into buf. */
static int json_get(const char *json, const char *key, char *buf, size_t size)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":\"", key);
    const char *p = strstr(json, pat), *q;
    if (!p)
        return -1;
    p += strlen(pat);
    q = strchr(p, '"');
    if (!q || (size_t)(q - p) >= size)
        return -1;
    memcpy(buf, p, (size_t)(q - p));
    buf[q - p] = 0;
    return 0;
}

typedef struct caps3 {
    char r[IBP_MAX_CAP], w[IBP_MAX_CAP], m[IBP_MAX_CAP];
} caps3_t;

/* allocate with plain output: three lines */
static int allocate(const test_depot_t *d, const char *size, const char *extra, caps3_t *c)
{
    if (run("$T allocate 127.0.0.1:%d %s %s", d->port, size, extra ? extra : "") != 0)
        return -1;
    return sscanf(out, "%639s %639s %639s", c->r, c->w, c->m) == 3 ? 0 : -1;
}

static void test_allocate_plain_and_json(void)
{
    caps3_t c;
    ibp_cap_t cap;
    CU_ASSERT_EQUAL_FATAL(allocate(&dA, "1M", "--duration 600 --soft", &c), 0);
    CU_ASSERT_EQUAL(ibp_cap_parse(c.r, &cap), IBP_OK);
    CU_ASSERT_EQUAL(cap.type, IBP_READCAP);
    CU_ASSERT_EQUAL(cap.port, dA.port);
    CU_ASSERT_EQUAL(ibp_cap_parse(c.w, &cap), IBP_OK);
    CU_ASSERT_EQUAL(cap.type, IBP_WRITECAP);
    CU_ASSERT_EQUAL(ibp_cap_parse(c.m, &cap), IBP_OK);
    CU_ASSERT_EQUAL(cap.type, IBP_MANAGECAP);
    CU_ASSERT_EQUAL(err[0], 0);

    CU_ASSERT_EQUAL(run("$T probe '%s'", c.m), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "max size:     1048576"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "reliability:  soft"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "current size: 0"));

    CU_ASSERT_EQUAL_FATAL(run("$T --json allocate 127.0.0.1:%d 64K --hard", dA.port), 0);
    char rcap[IBP_MAX_CAP], wcap[IBP_MAX_CAP], mcap[IBP_MAX_CAP];
    CU_ASSERT_EQUAL_FATAL(json_get(out, "read", rcap, sizeof rcap), 0);
    CU_ASSERT_EQUAL_FATAL(json_get(out, "write", wcap, sizeof wcap), 0);
    CU_ASSERT_EQUAL_FATAL(json_get(out, "manage", mcap, sizeof mcap), 0);
    CU_ASSERT_EQUAL(ibp_cap_parse(wcap, &cap), IBP_OK);
    CU_ASSERT_EQUAL(run("$T probe --json '%s'", rcap), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"max_size\":65536"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"reliability\":\"hard\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"read_refs\":1"));
}

static void test_store_load_file(void)
{
    caps3_t c;
    CU_ASSERT_EQUAL_FATAL(allocate(&dA, "1M", NULL, &c), 0);
    CU_ASSERT_EQUAL_FATAL(run("head -c 300000 /dev/urandom >$D/f1"), 0);
    CU_ASSERT_EQUAL(run("$T store '%s' $D/f1", c.w), 0);
    CU_ASSERT_STRING_EQUAL(out, "stored 300000 bytes\n");
    CU_ASSERT_EQUAL(run("$T --json store '%s' - <$D/f1", c.w), 0); /* stdin, a regular file */
    CU_ASSERT_STRING_EQUAL(out, "{\"stored\":300000}\n");
    CU_ASSERT_EQUAL(run("$T load '%s' -o $D/f1.back && cat $D/f1 $D/f1 | cmp - $D/f1.back", c.r), 0);
    CU_ASSERT_EQUAL(run("$T load '%s' 300000 -o $D/f1.b2 && cmp $D/f1 $D/f1.b2", c.r), 0);
    CU_ASSERT_EQUAL(run("$T load '%s' 1000 24 | cmp - $D/f1 1000 2>/dev/null; "
                        "$T load '%s' 1000 24 | od -An -tx1 >$D/a; "
                        "tail -c +1001 $D/f1 | head -c 24 | od -An -tx1 >$D/b; cmp $D/a $D/b",
                        c.r, c.r), 0);
    CU_ASSERT_EQUAL(run("$T --json load '%s' 0 10 -o $D/ten", c.r), 0);
    CU_ASSERT_STRING_EQUAL(out, "{\"loaded\":10}\n");
    /* write at an offset */
    CU_ASSERT_EQUAL(run("printf hello | $T write '%s' 5", c.w), 0);
    CU_ASSERT_STRING_EQUAL(out, "written 5 bytes\n");
    CU_ASSERT_EQUAL(run("$T load '%s' 5 5", c.r), 0);
    CU_ASSERT_STRING_EQUAL(out, "hello");
}

/* Multi-MiB through pipes both ways: chunked STOREs in, LOAD out, hashes equal. */
static void test_streaming(void)
{
    caps3_t c;
    char want[128], got[128];
    CU_ASSERT_EQUAL_FATAL(allocate(&dA, "12M", NULL, &c), 0);
    CU_ASSERT_EQUAL_FATAL(run("head -c 10485883 /dev/urandom >$D/big && sha256sum <$D/big"), 0);
    snprintf(want, sizeof want, "%.127s", out);
    CU_ASSERT_EQUAL(run("cat $D/big | $T store '%s'", c.w), 0);
    CU_ASSERT_STRING_EQUAL(out, "stored 10485883 bytes\n");
    CU_ASSERT_EQUAL(run("$T probe '%s'", c.r), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "current size: 10485883"));
    CU_ASSERT_EQUAL(run("$T load '%s' -o - | sha256sum", c.r), 0);
    snprintf(got, sizeof got, "%.127s", out);
    CU_ASSERT_STRING_EQUAL(got, want);
    CU_ASSERT_EQUAL(run("$T -0 load '%s' | sha256sum", c.r), 0);
    CU_ASSERT_STRING_EQUAL(out, want);
}

static void test_copy(void)
{
    caps3_t src, dst;
    CU_ASSERT_EQUAL_FATAL(allocate(&dA, "1M", NULL, &src), 0);
    CU_ASSERT_EQUAL_FATAL(allocate(&dB, "1M", NULL, &dst), 0);
    CU_ASSERT_EQUAL_FATAL(run("head -c 500000 /dev/urandom >$D/c1 && $T store '%s' $D/c1", src.w), 0);
    CU_ASSERT_EQUAL(run("$T copy '%s' '%s'", src.r, dst.w), 0);
    CU_ASSERT_STRING_EQUAL(out, "copied 500000 bytes\n");
    CU_ASSERT_EQUAL(run("$T --json copy '%s' '%s' 100 50", src.r, dst.w), 0);
    CU_ASSERT_STRING_EQUAL(out, "{\"copied\":50}\n");
    CU_ASSERT_EQUAL(run("$T load '%s' 0 500000 | cmp - $D/c1", dst.r), 0);
    CU_ASSERT_EQUAL(run("$T load '%s' 500000 50 >$D/c2 && tail -c +101 $D/c1 | head -c 50 | cmp - $D/c2",
                        dst.r), 0);
    CU_ASSERT_EQUAL(run("$T copy '%s' '%s' 100", src.r, dst.w), 2);
}

static void test_manage(void)
{
    caps3_t c;
    CU_ASSERT_EQUAL_FATAL(allocate(&dA, "10K", NULL, &c), 0);
    CU_ASSERT_EQUAL(run("$T incr '%s' read", c.m), 0);
    CU_ASSERT_EQUAL(run("$T --json incr '%s' write", c.m), 0);
    CU_ASSERT_STRING_EQUAL(out, "{\"ok\":true}\n");
    CU_ASSERT_EQUAL(run("$T probe '%s'", c.m), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "read refs:    2"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "write refs:   2"));
    CU_ASSERT_EQUAL(run("$T change '%s' --size 20K --duration 1h --soft", c.m), 0);
    CU_ASSERT_EQUAL(run("$T --json probe '%s'", c.m), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"max_size\":20480"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"reliability\":\"soft\""));
    CU_ASSERT_EQUAL(run("head -c 5000 /dev/zero | $T store '%s' && $T truncate '%s' 100", c.w, c.m), 0);
    CU_ASSERT_EQUAL(run("$T probe '%s'", c.m), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "current size: 100"));
    CU_ASSERT_EQUAL(run("$T decr '%s' read && $T decr '%s' read", c.m, c.m), 0);
    /* freed: the depot says the capability is not found */
    CU_ASSERT_EQUAL(run("echo '%s' > \"$D/m.cap\" && $T probe @\"$D/m.cap\"", c.m), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "ibp_tool: probe: "));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, ibp_strerror(IBP_E_CAP_NOT_FOUND)));
    CU_ASSERT_PTR_NULL(strchr(err, '\n') ? strchr(strchr(err, '\n') + 1, '\n') : NULL);
    CU_ASSERT_EQUAL(run("$T --json probe '%s'", c.m), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"name\":\"CAP_NOT_FOUND\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"code\":-4"));
}

/* alias, alias-probe, alias-revoke: a read-only share of bytes 10..19 that the owner revokes */
static void test_alias(void)
{
    caps3_t c, a;
    CU_ASSERT_EQUAL_FATAL(allocate(&dA, "1K", "--duration 600", &c), 0);
    CU_ASSERT_EQUAL_FATAL(run("printf 0123456789abcdefghijKLMN | $T store '%s'", c.w), 0);
    CU_ASSERT_EQUAL(run("$T alias '%s' 10 10 --duration 700", c.m), 1); /* longer than it */
    CU_ASSERT_PTR_NOT_NULL(strstr(err, ibp_strerror(IBP_E_LONG_DURATION)));
    CU_ASSERT_EQUAL(run("$T alias '%s' 10 10", c.r), 2);
    CU_ASSERT_EQUAL_FATAL(run("$T alias '%s' 10 10 --duration 300", c.m), 0);
    CU_ASSERT_EQUAL_FATAL(sscanf(out, "%639s %639s %639s", a.r, a.w, a.m), 3);
    CU_ASSERT_EQUAL(run("$T load '%s' 0 10", a.r), 0);
    CU_ASSERT_STRING_EQUAL(out, "abcdefghij");
    CU_ASSERT_EQUAL(run("$T load '%s' 5 10", a.r), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, ibp_strerror(IBP_E_WOULD_EXCEED_LIMIT)));
    CU_ASSERT_EQUAL(run("$T alias-probe '%s'", a.m), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "offset:       10\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "length:       10\n"));
    CU_ASSERT_EQUAL(run("$T --json alias-probe '%s'", a.m), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"read_refs\":1"));
    CU_ASSERT_NOT_EQUAL(run("$T alias-revoke '%s' '%s'", a.m, a.m), 0); /* not the master's */
    CU_ASSERT_PTR_NOT_NULL(strstr(err, ibp_strerror(IBP_E_INVALID_MANAGE_CAP)));
    CU_ASSERT_EQUAL(run("$T --json alias-revoke '%s' '%s'", a.m, c.m), 0);
    CU_ASSERT_STRING_EQUAL(out, "{\"ok\":true}\n");
    CU_ASSERT_EQUAL(run("$T load '%s' 0 10", a.r), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, ibp_strerror(IBP_E_CAP_NOT_FOUND)));
    CU_ASSERT_EQUAL(run("$T load '%s' 0 3", c.r), 0);
    CU_ASSERT_STRING_EQUAL(out, "012");
    CU_ASSERT_EQUAL(run("$T -0 alias '%s'", c.m), 1); /* no alias in version 0 */
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "no alias capabilities"));
    CU_ASSERT_EQUAL(run("$T decr '%s' read", c.m), 0);
}

static void test_status(void)
{
    CU_ASSERT_EQUAL(run("$T status 127.0.0.1:%d", dB.port), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "of 67108864 bytes"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "max duration: 3600 s"));
    CU_ASSERT_EQUAL(run("$T --json status 127.0.0.1:%d --rid 0", dB.port), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"hard_total\":67108864"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"max_duration\":3600"));
    CU_ASSERT_EQUAL(run("$T -0 --json status 127.0.0.1:%d", dB.port), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"soft_total\":67108864"));
    /* the depot's TLS pin, as its log says it; --tls takes auto, require, off */
    char pin[80], line[128];
    CU_ASSERT_EQUAL_FATAL(td_pin(&dB, pin), 0);
    snprintf(line, sizeof line, "tls pin:      %s\n", pin);
    CU_ASSERT_EQUAL(run("$T status 127.0.0.1:%d", dB.port), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, line));
    snprintf(line, sizeof line, "\"pin\":\"%s\"", pin);
    CU_ASSERT_EQUAL(run("$T --tls off --json status 127.0.0.1:%d", dB.port), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, line));
    CU_ASSERT_EQUAL(run("$T --tls maybe status 127.0.0.1:%d", dB.port), 2);

    /* status-change: password from a file or the environment, never argv */
    CU_ASSERT_EQUAL(run("echo nope >$D/pw && $T status-change 127.0.0.1:%d --password-file $D/pw "
                        "--hard 100M", dA.port), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, ibp_strerror(IBP_E_WRONG_PASSWD)));
    CU_ASSERT_EQUAL(run("echo pw >$D/pw && $T --json status-change 127.0.0.1:%d --password-file $D/pw "
                        "--hard 100M --max-duration 2h", dA.port), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"hard_total\":104857600"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"max_duration\":7200"));
    CU_ASSERT_EQUAL(run("IBP_PASSWORD=pw $T status-change 127.0.0.1:%d --hard 64M "
                        "--max-duration 3600", dA.port), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "of 67108864 bytes"));
    CU_ASSERT_EQUAL(run("$T status-change 127.0.0.1:%d --hard 1G", dA.port), 2);
}

static void test_exit_codes(void)
{
    caps3_t c;
    CU_ASSERT_EQUAL(run("$T"), 2);
    CU_ASSERT_EQUAL(run("$T frobnicate"), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "unknown command"));
    CU_ASSERT_EQUAL(run("$T allocate 127.0.0.1:%d", dA.port), 2);
    CU_ASSERT_EQUAL(run("$T allocate 127.0.0.1:%d 12Q", dA.port), 2);
    CU_ASSERT_EQUAL(run("$T allocate 127.0.0.1:99999 1M"), 2);
    CU_ASSERT_EQUAL(run("$T allocate 127.0.0.1:%d 1M --bogus", dA.port), 2);
    CU_ASSERT_EQUAL(run("$T allocate 127.0.0.1:%d 1M --duration 0", dA.port), 2);
    CU_ASSERT_EQUAL(run("$T probe not-a-cap"), 2);
    CU_ASSERT_EQUAL(run("$T incr 'ibp://h:1/0#k/1/MANAGE' both"), 2);
    CU_ASSERT_EQUAL(run("$T --timeout 0 status 127.0.0.1"), 2);
    CU_ASSERT_EQUAL(run("$T --help"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "status-change"));
    CU_ASSERT_EQUAL(run("$T load --help"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "usage: ibp_tool [options] load RCAP"));
    CU_ASSERT_EQUAL(run("$T help copy"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "DST_WCAP"));
    CU_ASSERT_EQUAL(run("$T -V"), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, LNS_VERSION));

    CU_ASSERT_EQUAL_FATAL(allocate(&dA, "100", NULL, &c), 0);
    /* wrong kind of capability */
    CU_ASSERT_EQUAL(run("$T load '%s'", c.w), 2);
    CU_ASSERT_EQUAL(run("echo x | $T store '%s'", c.r), 2);
    /* refused by the depot: too big, past the end */
    CU_ASSERT_EQUAL(run("head -c 101 /dev/zero | $T store '%s'", c.w), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "ibp_tool: store: "));
    CU_ASSERT_EQUAL(run("$T load '%s' 0 10", c.r), 1);
    CU_ASSERT_EQUAL(run("$T allocate 127.0.0.1:%d 1G", dA.port), 1);
    /* nobody there */
    CU_ASSERT_EQUAL(run("$T status 127.0.0.1:1"), 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, ibp_strerror(IBP_E_CONNECTION)));
    /* a network failure names the depot: the one of the capability */
    CU_ASSERT_EQUAL(run("$T load 'ibp://127.0.0.1:1/0#0011/1/READ' 0 10"), 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, " at 127.0.0.1:1\n"));
    /* a depot's own refusal does not */
    CU_ASSERT_EQUAL(run("$T load '%s' 0 10", c.r), 1);
    CU_ASSERT_PTR_NULL(strstr(err, " at 127.0.0.1:"));
    /* local I/O */
    CU_ASSERT_EQUAL(run("$T store '%s' $D/does-not-exist", c.w), 4);
    CU_ASSERT_EQUAL(run("echo abc | $T store '%s' && $T load '%s' -o $D/no/such/dir/x", c.w, c.r), 4);
    /* version 0 has no WRITE */
    CU_ASSERT_EQUAL(run("echo x | $T -0 write '%s' 0", c.w), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, ibp_strerror(IBP_E_INVALID_CMD)));
}

static void test_timeout(void)
{
    test_depot_t d;
    CU_ASSERT_EQUAL_FATAL(td_start(&d, NULL), 0);
    lns_test_server_kill(&d.srv, SIGSTOP); /* (waits until it has stopped) */
    time_t t0 = time(NULL);
    CU_ASSERT_EQUAL(run("$T --timeout 1 status 127.0.0.1:%d", d.port), 3);
    CU_ASSERT(time(NULL) - t0 <= 30); /* the 1 s, not the default 60 s (30: a busy machine) */
    CU_ASSERT_PTR_NOT_NULL(strstr(err, ibp_strerror(IBP_E_CLIENT_TIMEOUT)));
    lns_test_server_kill(&d.srv, SIGCONT);
    CU_ASSERT_EQUAL(run("$T --timeout 5 status 127.0.0.1:%d", d.port), 0);
    lns_test_server_stop(&d.srv);
}

/* Capabilities off the command line: @FILE and @- read them, one on argv gets one warning
 * and is blanked in /proc/PID/cmdline while the tool is still running. */
static void test_caps_off_argv(void)
{
    caps3_t c;
    CU_ASSERT_EQUAL_FATAL(allocate(&dA, "1M", NULL, &c), 0);
    CU_ASSERT_EQUAL_FATAL(run("echo '%s' > $D/w.cap; echo '%s' > $D/r.cap", c.w, c.r), 0);
    CU_ASSERT_EQUAL(run("printf hello | $T store @$D/w.cap -"), 0);
    CU_ASSERT_STRING_EQUAL(err, "");
    CU_ASSERT_EQUAL(run("$T load @- < $D/r.cap"), 0);
    CU_ASSERT_STRING_EQUAL(out, "hello");
    CU_ASSERT_STRING_EQUAL(err, "");
    CU_ASSERT_EQUAL(run("$T load @$D/nothing-here"), 4);
    CU_ASSERT_EQUAL(run("$T store @- - < $D/w.cap"), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "both @- and the data"));

    /* on argv: it works, says so once, and the key is gone from the process's command line
     * while it waits for its data (a fifo held open until its command line is read, so a
     * slow start on a busy machine only waits longer) */
    const char *key = strchr(c.w, '#') + 1;
    char k16[17];
    snprintf(k16, sizeof k16, "%s", key);
    CU_ASSERT_EQUAL(run("rm -f $D/in; mkfifo $D/in; $T store '%s' - < $D/in & p=$!; "
                        "exec 3>$D/in; "
                        "i=0; while [ $i -lt 600 ] && ! grep -q warning $D/run.err; do "
                        "sleep 0.1; i=$((i+1)); done; "
                        "tr '\\0' ' ' < /proc/$p/cmdline > $D/cmdline; exec 3>&-; wait $p",
                        c.w), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "warning: a capability on the command line"));
    CU_ASSERT_PTR_NULL(strchr(err, '\n') ? strchr(strchr(err, '\n') + 1, '\n') : NULL);
    char cmdline[4096] = "";
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/cmdline", lns_test_tmpdir());
    lns_test_slurp(path, cmdline, sizeof cmdline);
    CU_ASSERT_PTR_NOT_NULL(strstr(cmdline, "store"));
    CU_ASSERT_PTR_NULL(strstr(cmdline, k16));
}

static const lns_test_case tests[] = {
    {"allocate, probe (plain and --json)", test_allocate_plain_and_json},
    {"store, load, write with files", test_store_load_file},
    {"10 MiB through pipes", test_streaming},
    {"copy", test_copy},
    {"incr, decr, change, truncate", test_manage},
    {"alias, alias-probe, alias-revoke", test_alias},
    {"status, status-change", test_status},
    {"exit codes", test_exit_codes},
    {"timeout", test_timeout},
    {"capabilities from @FILE and @-, a warning on argv", test_caps_off_argv},
};

LNS_TEST_MAIN_WITH("ibp_tool", suite_init, suite_clean, tests)
