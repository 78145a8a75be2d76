/* ibp_tool.h -- what the two halves of ibp_tool share: the parsed command line, the command
 * table's shape, the exit codes and the helpers for errors, output and arguments.
 * ibp_tool.c parses and dispatches; ibp_tool_cmd.c holds one function per command.
 * Internal to the tool; not installed. */
#ifndef LNS_IBP_TOOL_H
#define LNS_IBP_TOOL_H

#include <stdint.h>
#include <stdio.h>

#include "ibp.h"
#include "tool.h" /* tool_json_str */

enum { EX_OK = 0, EX_IBP = 1, EX_USAGE = 2, EX_NET = 3, EX_LOCAL = 4 };

#define STREAM_CHUNK (4u << 20)
#define DEFAULT_DURATION 3600

/* Options a command accepts (bit mask). */
enum {
    O_DURATION = 1 << 0,  /* --duration S */
    O_RELIAB = 1 << 1,    /* --soft / --hard as flags */
    O_RID = 1 << 2,       /* --rid R */
    O_OUTPUT = 1 << 3,    /* -o FILE */
    O_SIZE = 1 << 4,      /* --size N */
    O_CAPACITY = 1 << 5,  /* --hard N / --soft N with values */
    O_PASSWORD = 1 << 6,  /* --password-file F */
    O_MAXDUR = 1 << 7     /* --max-duration S */
};

typedef struct tool {
    const struct command *cmd;
    int json;
    ibp_client_opts_t opts;
    ibp_client_t *client;
    char *pos[8];
    int npos;
    char posbuf[8][IBP_MAX_CAP + 2]; /* capabilities read from @FILE or copied off argv */
    int64_t duration;
    int duration_set;
    int reliability;
    const char *rid;
    const char *output;
    uint64_t size;
    int size_set;
    uint64_t hard, soft;
    int64_t max_duration;
    const char *password_file;
    char depot[IBP_MAX_HOST + 16]; /* the depot talked to, for error messages */
} ibp_tool_t;

typedef struct command {
    const char *name;
    const char *args;
    const char *help;
    int min_pos, max_pos;
    unsigned opts;
    int (*run)(ibp_tool_t *t);
} command_t;

/* ---- helpers (ibp_tool.c) ---- */
int ibp_tool_usage_error(const ibp_tool_t *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int ibp_tool_fail(const ibp_tool_t *t, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int ibp_tool_fail_errno(const ibp_tool_t *t, const char *what, const char *path);
int ibp_tool_parse_duration(const char *s, int allow_minus_one, int64_t *out);
int ibp_tool_parse_hostport(const char *s, char *host, size_t size, int *port);
/* Remember host:port as the depot this command talks to (named in network errors). */
void ibp_tool_set_depot(ibp_tool_t *t, const char *host, int port);
int ibp_tool_need_cap(ibp_tool_t *t, const char *s, ibp_captype kind, const char *what);
/* The depot HOST[:PORT] of the first operand into host and *port, named as the command's
 * depot (ibp_tool_set_depot): EX_OK, or EX_USAGE after one line. */
int ibp_tool_need_depot(ibp_tool_t *t, char *host, size_t size, int *port);

/* ---- the commands (ibp_tool_cmd.c) ---- */
int cmd_allocate(ibp_tool_t *t);
int cmd_store(ibp_tool_t *t);
int cmd_write(ibp_tool_t *t);
int cmd_load(ibp_tool_t *t);
int cmd_copy(ibp_tool_t *t);
int cmd_probe(ibp_tool_t *t);
int cmd_incr(ibp_tool_t *t);
int cmd_decr(ibp_tool_t *t);
int cmd_change(ibp_tool_t *t);
int cmd_truncate(ibp_tool_t *t);
int cmd_alias(ibp_tool_t *t);
int cmd_alias_probe(ibp_tool_t *t);
int cmd_alias_revoke(ibp_tool_t *t);
int cmd_status(ibp_tool_t *t);
int cmd_status_change(ibp_tool_t *t);

#endif
