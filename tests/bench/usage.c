/* usage.c -- the bench programs' usage message and size arguments (usage.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "usage.h"
#include "lns_units.h"
#include "lns_version.h"

static const char *bench_prog = "bench";
static const char *bench_usage_text = "";

void bench_usage_init(const char *prog, const char *text)
{
    bench_prog = prog;
    bench_usage_text = text;
}

const char *bench_command(const char *prog, const char *text, int argc, char **argv)
{
    bench_usage_init(prog, text);
    if (argc < 2)
        bench_usage_exit(NULL);
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        fputs(text, stdout);
        exit(0);
    }
    if (!strcmp(cmd, "--version")) {
        printf("%s %s\n", prog, LNS_VERSION);
        exit(0);
    }
    return cmd;
}

void bench_usage_exit(const char *why)
{
    if (why)
        fprintf(stderr, "%s: %s\n", bench_prog, why);
    fputs(bench_usage_text, stderr);
    exit(BENCH_EXIT_USAGE);
}

uint64_t bench_size_arg(const char *s, const char *what)
{
    uint64_t v;
    if (!s || lns_parse_size(s, &v) < 0)
        bench_usage_exit(what);
    return v;
}

int bench_port_arg(const char *s)
{
    uint64_t p = bench_size_arg(s, "bad port");
    if (p < 1 || p > 65535)
        bench_usage_exit("bad port");
    return (int)p;
}

const char *bench_arg(int argc, char **argv, int *i, const char **pos, int *npos, int max,
                      const char *const *flags, const char **val)
{
    const char *a = argv[*i];
    *val = NULL;
    if (strncmp(a, "--", 2) != 0) {
        if (*npos == max)
            bench_usage_exit("too many arguments");
        pos[(*npos)++] = a;
        return NULL;
    }
    for (const char *const *f = flags; *f; f++)
        if (!strcmp(a, *f))
            return a;
    if (*i + 1 >= argc)
        bench_usage_exit("option needs a value");
    *val = argv[++*i];
    return a;
}
