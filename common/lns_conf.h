/* lns_conf.h -- the "key = value" configuration files of the lns daemons.
 *
 * One format for ibp_depot and lbone_server: a setting per line, '#' to the end of a line is
 * a comment, blank lines are skipped, spaces around key and value do not count.  The keys
 * are the long command-line options without their dashes, so a file and flags say the same
 * things; "config" and "check-config" cannot be set from a file.  lns_conf_args takes a
 * daemon's command line the same way: a table of its options, each fed as "key = value" to
 * the setter, in two passes so that flags override the file whatever their order.
 *
 * A daemon declares each setting once, in a table of lns_conf_setting_t (name, letter, type,
 * field, bounds): lns_conf_set stores a value through it, lns_conf_daemon_args makes the
 * command line of it, so a key, its flag and its checks cannot drift apart.
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

/* The same for a yes/no value: yes, true, 1 or no, false, 0 into *out ("KEY: 'V' is not yes
 * or no"). */
int lns_conf_bool(const char *key, const char *value, int *out, char *err, size_t errlen);

/* For a setting that names a file holding a secret: the first line of path, without its line
 * end, into line[size] (cut to size - 1 bytes; "" for an empty file).  0, or -1 with "KEY:
 * cannot open PATH: why". */
int lns_conf_first_line(const char *key, const char *path, char *line, size_t size, char *err,
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

/* How a setting's value is read, and what its field (at off in the daemon's config) holds. */
typedef enum {
    LNS_CONF_STR,   /* char[size]: the value, copied (lns_conf_str) */
    LNS_CONF_INT,   /* int: decimal digits, from lo to hi */
    LNS_CONF_SECS,  /* int: a duration (lns_parse_seconds), from lo to hi seconds */
    LNS_CONF_BOOL,  /* int: yes, true, 1 or no, false, 0; a switch on the command line */
    LNS_CONF_LEVEL, /* int: error, warn, info or debug (lns_log_level_parse) */
    LNS_CONF_FUNC,  /* fn(config, key, value, err, errlen) checks and stores it */
    LNS_CONF_FILE,  /* char[size]: a config file, read then and there (command line only) */
    LNS_CONF_CMD    /* a switch without a field: help, version (command line only) */
} lns_conf_type_t;

typedef struct {
    const char *name;     /* the key; the long option without "--"; NULL ends a table */
    char letter;          /* short option, or 0 */
    lns_conf_type_t type;
    size_t off, size;     /* the field: LNS_CONF_FIELD(config type, member) */
    long long lo, hi;     /* LNS_CONF_INT, LNS_CONF_SECS: the bounds */
    lns_conf_set_fn fn;   /* LNS_CONF_FUNC */
} lns_conf_setting_t;

#define LNS_CONF_FIELD(T, member) .off = offsetof(T, member), .size = sizeof(((T *)0)->member)

/* What ends every daemon's table: --check-config (into T's int check_config), --help,
 * --version. */
#define LNS_CONF_TABLE_END(T)                                                \
    {"check-config", 0, LNS_CONF_BOOL, LNS_CONF_FIELD(T, check_config)},     \
    {"help", 'h', .type = LNS_CONF_CMD},                                     \
    {"version", 'V', .type = LNS_CONF_CMD},                                  \
    {.name = NULL}

/* Apply one setting to cfg through the table: 0, or -1 with one line in err ("unknown
 * setting 'KEY'", "KEY: 'V' is not a whole number from LO to HI", ...). */
int lns_conf_set(const lns_conf_setting_t *settings, void *cfg, const char *key,
                 const char *value, char *err, size_t errlen);

/* Read path through the table, as lns_conf_read. */
int lns_conf_file(const lns_conf_setting_t *settings, void *cfg, const char *path, char *err,
                  size_t errlen);

/* A daemon: its --help and --version texts and its settings. */
typedef struct {
    const char *usage;
    const char *version;
    const lns_conf_setting_t *settings;
} lns_conf_daemon_t;

/* lns_conf_args with the options of d's table (LNS_CONF_BOOL and LNS_CONF_CMD are switches):
 * each setting goes to set(arg, ...), or with set NULL to lns_conf_set(d->settings, arg, ...). */
int lns_conf_daemon_args(const lns_conf_daemon_t *d, int argc, char **argv, lns_conf_set_fn set,
                         void *arg, char *err, size_t errlen);

#endif
