/* test_conf.c -- lns_conf_args: a daemon's command line as settings, in two passes.
 *
 * The setter records every call as "key=value;" so that each test can check which settings
 * arrived, with which values and in which order (the config file first, then the flags).
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lns_conf.h"
#include "lns_test.h"

static const lns_conf_opt_t opts[] = {
    {"config", 'c', 1},  {"port", 'p', 1},     {"listen", 0, 1},   {"daemon", 'd', 0},
    {"check-config", 0, 0}, {"help", 'h', 0}, {"version", 'V', 0}, {NULL, 0, 0}};

static const lns_conf_cli_t cli = {"Usage: prog [options]\n", "prog (lns) 9.9\n", opts};

static char calls[1024];
static const char *reject; /* a key the setter refuses */

static int record(void *arg, const char *key, const char *value, char *why, size_t whylen)
{
    size_t n = strlen(calls);
    (void)arg;
    if (reject && strcmp(key, reject) == 0) {
        snprintf(why, whylen, "%s: '%s' is refused", key, value);
        return -1;
    }
    snprintf(calls + n, sizeof calls - n, "%s=%s;", key, value);
    return 0;
}

/* Run lns_conf_args on the NULL-ended argv; its result, with calls and err filled. */
static int run_argv(char **argv, char *err, size_t errlen)
{
    int argc = 0;
    while (argv[argc])
        argc++;
    calls[0] = 0;
    err[0] = 0;
    return lns_conf_args(&cli, argc, argv, record, NULL, err, errlen);
}

#define RUN(...) run_argv((char *[]){"prog", __VA_ARGS__, NULL}, err, sizeof err)

static void test_value_forms(void)
{
    char err[256];
    CU_ASSERT_EQUAL(RUN("--port=7", "--listen", "127.0.0.1", "-p", "8", "-p9"), LNS_CONF_OK);
    CU_ASSERT_STRING_EQUAL(calls, "port=7;listen=127.0.0.1;port=8;port=9;");
    CU_ASSERT_STRING_EQUAL(err, "");
    /* a value that looks like an option is still the value */
    CU_ASSERT_EQUAL(RUN("--listen", "--port"), LNS_CONF_OK);
    CU_ASSERT_STRING_EQUAL(calls, "listen=--port;");
    CU_ASSERT_EQUAL(run_argv((char *[]){"prog", NULL}, err, sizeof err), LNS_CONF_OK);
    CU_ASSERT_STRING_EQUAL(calls, "");
}

static void test_switches(void)
{
    char err[256];
    CU_ASSERT_EQUAL(RUN("-d", "--check-config"), LNS_CONF_OK);
    CU_ASSERT_STRING_EQUAL(calls, "daemon=yes;check-config=yes;");
    /* a switch takes no value, so the next word is not eaten */
    CU_ASSERT_EQUAL(RUN("--daemon", "extra"), LNS_CONF_ERR);
    CU_ASSERT_STRING_EQUAL(err, "unexpected argument 'extra' (see --help)");
    CU_ASSERT_STRING_EQUAL(calls, "");
    CU_ASSERT_EQUAL(RUN("--daemon=yes"), LNS_CONF_ERR);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "--daemon=yes"));
}

static void test_errors(void)
{
    char err[256];
    /* every error is found before anything is set */
    CU_ASSERT_EQUAL(RUN("--port", "1", "--bogus", "2"), LNS_CONF_ERR);
    CU_ASSERT_STRING_EQUAL(err, "unknown option '--bogus' (see --help)");
    CU_ASSERT_STRING_EQUAL(calls, "");
    CU_ASSERT_EQUAL(RUN("-x"), LNS_CONF_ERR);
    CU_ASSERT_STRING_EQUAL(err, "unknown option '-x' (see --help)");
    CU_ASSERT_EQUAL(RUN("--port", "1", "--listen"), LNS_CONF_ERR);
    CU_ASSERT_STRING_EQUAL(err, "option '--listen' needs a value");
    CU_ASSERT_STRING_EQUAL(calls, "");
    CU_ASSERT_EQUAL(RUN("-p"), LNS_CONF_ERR);
    CU_ASSERT_STRING_EQUAL(err, "option '-p' needs a value");
    CU_ASSERT_EQUAL(RUN("--port", "1", "stray"), LNS_CONF_ERR);
    CU_ASSERT_STRING_EQUAL(err, "unexpected argument 'stray' (see --help)");
    CU_ASSERT_STRING_EQUAL(calls, "");
    /* the setter's own reason is passed through, and the flags after it are not applied */
    reject = "port";
    CU_ASSERT_EQUAL(RUN("--listen", "a", "--port", "5", "--listen", "b"), LNS_CONF_ERR);
    reject = NULL;
    CU_ASSERT_STRING_EQUAL(err, "port: '5' is refused");
    CU_ASSERT_STRING_EQUAL(calls, "listen=a;");
}

static void test_config_first(void)
{
    char err[256];
    CU_ASSERT_EQUAL(RUN("-p", "1", "--config", "a.conf", "-d", "-c", "b.conf"), LNS_CONF_OK);
    CU_ASSERT_STRING_EQUAL(calls, "config=b.conf;port=1;daemon=yes;");
    reject = "config";
    CU_ASSERT_EQUAL(RUN("-p", "1", "-c", "a.conf"), LNS_CONF_ERR);
    reject = NULL;
    CU_ASSERT_STRING_EQUAL(err, "config: 'a.conf' is refused");
    CU_ASSERT_STRING_EQUAL(calls, "");
}

/* run_argv(), with what it printed to stdout caught in out. */
static int run_captured(char **argv, char *out, size_t outlen)
{
    char err[256];
    const char *path = lns_test_path("stdout");
    int saved, rc;
    fflush(stdout);
    saved = dup(1);
    CU_ASSERT_FATAL(saved >= 0 && freopen(path, "w", stdout) != NULL);
    rc = run_argv(argv, err, sizeof err);
    fflush(stdout);
    CU_ASSERT_FATAL(dup2(saved, 1) == 1);
    close(saved);
    lns_test_slurp(path, out, outlen);
    return rc;
}

#define RUN_CAPTURED(...) run_captured((char *[]){"prog", __VA_ARGS__, NULL}, out, sizeof out)

static void test_help_version(void)
{
    char out[256];
    CU_ASSERT_EQUAL(RUN_CAPTURED("-p", "1", "--help", "--bogus"), LNS_CONF_EXIT);
    CU_ASSERT_STRING_EQUAL(out, cli.usage);
    CU_ASSERT_STRING_EQUAL(calls, "");
    CU_ASSERT_EQUAL(RUN_CAPTURED("-c", "x.conf", "-V"), LNS_CONF_EXIT);
    CU_ASSERT_STRING_EQUAL(out, cli.version);
    CU_ASSERT_STRING_EQUAL(calls, "");
    /* an error before --help wins */
    CU_ASSERT_EQUAL(RUN_CAPTURED("--bogus", "-h"), LNS_CONF_ERR);
    CU_ASSERT_STRING_EQUAL(out, "");
}

static const lns_test_case tests[] = {
    {"--opt=value, --opt value, -x value, -xvalue", test_value_forms},
    {"switches without a value", test_switches},
    {"unknown option, missing value, stray argument, setter error", test_errors},
    {"the config file before every flag", test_config_first},
    {"--help and --version", test_help_version},
};

LNS_TEST_MAIN("lns_conf_args", tests)
