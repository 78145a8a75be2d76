/* usage.c -- the bench programs' usage message and size arguments (usage.h). */
#include <stdio.h>
#include <stdlib.h>

#include "usage.h"
#include "lns_units.h"

static const char *bench_prog = "bench";
static const char *bench_usage_text = "";

void bench_usage_init(const char *prog, const char *text)
{
    bench_prog = prog;
    bench_usage_text = text;
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
