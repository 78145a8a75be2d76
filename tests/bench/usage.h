/* usage.h -- what the bench programs share for their command lines: the usage message
 * on a bad argument (exit 2) and sizes with K, M, G, T suffixes.
 */
#ifndef BENCH_USAGE_H
#define BENCH_USAGE_H

#include <stdint.h>

enum { BENCH_EXIT_USAGE = 2 };

/* The program's name (for "NAME: why") and usage text; main sets them before any argument. */
void bench_usage_init(const char *prog, const char *text);

/* Prints "NAME: why" (when why is not NULL) and the usage text on stderr; exits 2. */
void bench_usage_exit(const char *why) __attribute__((noreturn));

/* s as a size (lns_parse_size); a missing or bad one is a usage error naming what. */
uint64_t bench_size_arg(const char *s, const char *what);

#endif
