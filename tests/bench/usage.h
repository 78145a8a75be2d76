/* usage.h -- what the bench programs share for their command lines: the usage message
 * on a bad argument (exit 2) and sizes with K, M, G, T suffixes.
 */
#ifndef BENCH_USAGE_H
#define BENCH_USAGE_H

#include <stdint.h>

enum { BENCH_EXIT_USAGE = 2 };

/* The program's name (for "NAME: why") and usage text; main sets them before any argument. */
void bench_usage_init(const char *prog, const char *text);

/* main's start: bench_usage_init, then --help or -h (the usage text on stdout) and --version
 * answered with exit 0; the command, argv[1] (none is a usage error). */
const char *bench_command(const char *prog, const char *text, int argc, char **argv);

/* Prints "NAME: why" (when why is not NULL) and the usage text on stderr; exits 2. */
void bench_usage_exit(const char *why) __attribute__((noreturn));

/* s as a size (lns_parse_size); a missing or bad one is a usage error naming what. */
uint64_t bench_size_arg(const char *s, const char *what);

/* s as a TCP port (1..65535); anything else is a usage error. */
int bench_port_arg(const char *s);

/* argv[*i] of a command line of operands and "--name value" options, where the options named
 * in flags (NULL-terminated) take no value: an operand goes into pos[*npos] (a usage error past
 * max of them) and NULL is returned; an option's name is returned with its value in *val (NULL
 * for a flag; a missing one is a usage error) and *i moved onto the value. */
const char *bench_arg(int argc, char **argv, int *i, const char **pos, int *npos, int max,
                      const char *const *flags, const char **val);

#endif
