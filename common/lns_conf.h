/* lns_conf.h -- the "key = value" configuration files of the lns daemons.
 *
 * One format for ibp_depot and lbone_server: a setting per line, '#' to the end of a line is
 * a comment, blank lines are skipped, spaces around key and value do not count.  The keys
 * are the long command-line options without their dashes, so a file and flags say the same
 * things; "config" and "check-config" cannot be set from a file.  lns_conf_args takes a
 * daemon's command line the same way: a table of its options, each fed as "key = value" to
 * the setter, in two passes so that flags override the file whatever their order.
 */
#ifndef LNS_CONF_H
#define LNS_CONF_H

#include <stddef.h>

/* Applies one setting: 0, or -1 with one line in err. */
typedef int (*lns_conf_set_fn)(void *arg, const char *key, const char *value, char *err,
                               size_t errlen);

/* A helper for setters (whose errors go through lns_err_set, lns_err.h): copy value into
 * dst[size] (-1 with "KEY: value too long (at most N bytes)" when it does not fit). */
int lns_conf_str(const char *key, const char *value, char *dst, size_t size, char *err,
                 size_t errlen);

/* Read path and apply each setting in order with set(arg, ...).  0, or -1 with
 * "PATH:LINE: why" (or why the file cannot be read) in err; settings before the bad line
 * have been applied. */
int lns_conf_read(const char *path, lns_conf_set_fn set, void *arg, char *err, size_t errlen);

/* A daemon's command-line option; its setting's key is the long name, as in the file. */
typedef struct {
    const char *name; /* long option without "--"; "help", "version", "config" are special */
    char letter;      /* short option, or 0 */
    int has_arg;      /* 1: takes a value; 0: a switch, set to "yes" */
} lns_conf_opt_t;

/* A daemon's command line. */
typedef struct {
    const char *usage;          /* printed to stdout by --help */
    const char *version;        /* printed to stdout by --version */
    const lns_conf_opt_t *opts; /* ends with an entry whose name is NULL */
} lns_conf_cli_t;

/* What lns_conf_args returns. */
enum { LNS_CONF_OK = 0, LNS_CONF_EXIT = 1, LNS_CONF_ERR = -1 };

/* Take argv (--opt=value, --opt value, -x value) in two passes.  Pass 1 checks the arguments
 * in order, stopping at the first error or "help" or "version" option (its text printed:
 * LNS_CONF_EXIT); then set(arg, "config", PATH) once with the last "config" option's value,
 * for the caller to read the file.  Pass 2: set(arg, name, value) for every other option, in
 * order.
 * LNS_CONF_OK, LNS_CONF_EXIT, or LNS_CONF_ERR with one line in err: "unknown option '--x'
 * (see --help)", "option '--x' needs a value", "unexpected argument 'x' (see --help)", or
 * set's own err.  Uses getopt_long, so it is not reentrant. */
int lns_conf_args(const lns_conf_cli_t *cli, int argc, char **argv, lns_conf_set_fn set,
                  void *arg, char *err, size_t errlen);

#endif
