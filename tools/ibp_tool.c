/* ibp_tool.c -- ibp_tool: every IBP operation from the command line, built on libibp only.
 *
 * Like curl's tool, it uses nothing but the public header (ibp.h), so anything it does any
 * program can do.  One table describes the commands; the dispatcher, the per-command
 * --help and the usage errors all come from it; the commands themselves are in
 * ibp_tool_cmd.c.  Data streams: a regular file goes to the
 * depot with sendfile (one STORE), a pipe in 4 MiB STOREs or WRITEs, so memory stays flat
 * whatever the size.  Exit codes (also in man/ibp_tool.1): 0 ok, 1 the depot refused,
 * 2 usage, 3 network (connect, reset, timeout), 4 local I/O.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ibp_tool.h"
#include "lns_units.h"
#include "lns_version.h"
#include "tool_opt.h"

static const command_t *find_command(const char *name);

/* ---- output and errors ---- */



int ibp_tool_usage_error(const ibp_tool_t *t, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "ibp_tool: %s%s", t->cmd ? t->cmd->name : "", t->cmd ? ": " : "");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (try 'ibp_tool %s%s--help')\n", t->cmd ? t->cmd->name : "",
            t->cmd ? " " : "");
    return EX_USAGE;
}

static int exit_code(int err)
{
    switch (err) {
    case IBP_E_CONNECTION:
    case IBP_E_SOCK_READ:
    case IBP_E_SOCK_WRITE:
    case IBP_E_CLIENT_TIMEOUT:
    case IBP_E_OUT_OF_SOCKETS:
        return EX_NET;
    case IBP_E_FILE_OPEN:
    case IBP_E_FILE_READ:
    case IBP_E_FILE_WRITE:
    case IBP_E_FILE_ACCESS:
    case IBP_E_FILE_SEEK:
        return EX_LOCAL;
    case IBP_E_WRONG_CAP_FORMAT:
    case IBP_E_INVALID_READ_CAP:
    case IBP_E_INVALID_WRITE_CAP:
    case IBP_E_INVALID_MANAGE_CAP:
    case IBP_E_INV_PAR_HOST:
    case IBP_E_INV_PAR_PORT:
    case IBP_E_INV_PAR_PTR:
        return EX_USAGE;
    default:
        return EX_IBP;
    }
}

/* "ibp_tool: <command>: <what failed>: <why>", plus a JSON error object with --json. */

int ibp_tool_fail(const ibp_tool_t *t, int err, const char *fmt, ...)
{
    char what[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    /* A network failure names the depot; a depot's own refusal needs no address. */
    int net = err == IBP_E_CONNECTION || err == IBP_E_CLIENT_TIMEOUT || err == IBP_E_SOCK_READ ||
              err == IBP_E_SOCK_WRITE || err == IBP_E_OUT_OF_SOCKETS;
    fprintf(stderr, "ibp_tool: %s: %s: %s%s%s\n", t->cmd->name, what, ibp_strerror(err),
            net && t->depot[0] ? " at " : "", net ? t->depot : "");
    if (t->json) {
        const char *name = ibp_errname(err);
        printf("{\"error\":{\"code\":%d,\"name\":", err);
        tool_json_str(stdout, name ? name : "UNKNOWN");
        printf(",\"message\":");
        tool_json_str(stdout, ibp_strerror(err));
        printf(",\"what\":");
        tool_json_str(stdout, what);
        printf("}}\n");
    }
    return exit_code(err);
}

int ibp_tool_fail_errno(const ibp_tool_t *t, const char *what, const char *path)
{
    fprintf(stderr, "ibp_tool: %s: %s %s: %s\n", t->cmd->name, what, path, strerror(errno));
    return EX_LOCAL;
}

/* ---- argument parsing ---- */

/* Seconds, with an optional s/m/h/d suffix, or -1 when allow_minus_one. */
int ibp_tool_parse_duration(const char *s, int allow_minus_one, int64_t *out)
{
    if (allow_minus_one && strcmp(s, "-1") == 0) {
        *out = -1;
        return 0;
    }
    return lns_parse_seconds(s, out);
}

/* HOST, HOST:PORT, [V6], [V6]:PORT, or a bare IPv6 literal. */
int ibp_tool_parse_hostport(const char *s, char *host, size_t size, int *port)
{
    const char *colon = NULL, *hend;
    *port = IBP_DEFAULT_PORT;
    if (s[0] == '[') {
        hend = strchr(s, ']');
        if (!hend || (hend[1] && hend[1] != ':'))
            return -1;
        colon = hend[1] ? hend + 1 : NULL;
        s++;
    } else {
        colon = strchr(s, ':');
        if (colon && strchr(colon + 1, ':'))
            colon = NULL; /* bare IPv6 literal */
        hend = colon ? colon : s + strlen(s);
    }
    if (hend == s || (size_t)(hend - s) >= size)
        return -1;
    memcpy(host, s, (size_t)(hend - s));
    host[hend - s] = 0;
    if (colon) {
        char *end;
        long p = strtol(colon + 1, &end, 10);
        if (!colon[1] || *end || p < 1 || p > 65535)
            return -1;
        *port = (int)p;
    }
    return 0;
}

void ibp_tool_set_depot(ibp_tool_t *t, const char *host, int port)
{
    snprintf(t->depot, sizeof t->depot, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
}

int ibp_tool_need_depot(ibp_tool_t *t, char *host, size_t size, int *port)
{
    if (ibp_tool_parse_hostport(t->pos[0], host, size, port) < 0)
        return ibp_tool_usage_error(t, "bad depot address '%s'", t->pos[0]);
    ibp_tool_set_depot(t, host, *port);
    return EX_OK;
}

int ibp_tool_need_cap(ibp_tool_t *t, const char *s, ibp_captype kind, const char *what)
{
    ibp_cap_t cap;
    if (ibp_cap_parse(s, &cap) != IBP_OK)
        return ibp_tool_usage_error(t, "%s is not a valid capability: %s", what, s);
    if (!t->depot[0]) /* the first capability names the depot we connect to */
        ibp_tool_set_depot(t, cap.host, cap.port);
    if (kind && cap.type != kind)
        return ibp_tool_usage_error(t, "%s must be a %s capability, not %s", what,
                                    ibp_captype_name(kind),
                           ibp_captype_name(cap.type));
    return EX_OK;
}

static const command_t commands[] = {
    {"allocate", "HOST[:PORT] SIZE [--duration S|-1] [--soft|--hard] [--rid R]",
     "Allocate SIZE bytes (K/M/G/T suffixes) on the depot; print the read, write and manage\n"
     "capabilities, one per line.  --duration: lifetime in seconds (s/m/h/d suffixes, -1 for\n"
     "the depot's maximum; default 3600).  --soft/--hard: reliability (default hard).\n"
     "--rid: resource id (default 0).",
     2, 2, O_DURATION | O_RELIAB | O_RID, cmd_allocate},
    {"store", "WCAP [FILE|-]",
     "Append FILE (or stdin) to the allocation.  A regular file goes in one STORE with\n"
     "sendfile; a pipe is streamed in STOREs of 4 MiB.",
     1, 2, 0, cmd_store},
    {"write", "WCAP OFFSET [FILE|-]",
     "Write FILE (or stdin) at OFFSET (version 1 only).", 2, 3, 0, cmd_write},
    {"load", "RCAP [OFFSET [LENGTH]] [-o FILE|-]",
     "Read LENGTH bytes at OFFSET (default: from OFFSET, default 0, to the current end, by a\n"
     "PROBE, or 1-byte LOADs where only a MANAGE capability may PROBE) to FILE or stdout.",
     1, 3, O_OUTPUT, cmd_load},
    {"copy", "RCAP DST_WCAP [OFFSET LENGTH]",
     "Have the depot of RCAP append the bytes (default: all) to the allocation of DST_WCAP\n"
     "on any depot (third-party copy, SEND); the data does not pass through this host.",
     2, 4, 0, cmd_copy},
    {"probe", "CAP", "Show the allocation's sizes, reference counts, time left and reliability.",
     1, 1, 0, cmd_probe},
    {"incr", "MCAP read|write", "Add one to the read or write reference count.", 2, 2, 0,
     cmd_incr},
    {"decr", "MCAP read|write",
     "Take one from the read or write reference count; at read count 0 the allocation is freed.",
     2, 2, 0, cmd_decr},
    {"change", "MCAP [--size N] [--duration S|-1] [--soft|--hard]",
     "Change the maximum size, the lifetime (from now) or the reliability.", 1, 1,
     O_SIZE | O_DURATION | O_RELIAB, cmd_change},
    {"truncate", "MCAP SIZE",
     "Set the maximum size to SIZE: bytes past it are dropped (never grows the data).", 2, 2, 0,
     cmd_truncate},
    {"alias", "MCAP [OFFSET [LENGTH]] [--duration S]",
     "Make an alias: three new capabilities onto LENGTH bytes at OFFSET of the allocation\n"
     "(default: all of it), printed one per line; reads and writes through them count from\n"
     "OFFSET and stop at its end.  Revoked on its own (alias-revoke).  --duration: its\n"
     "lifetime (default: as long as the allocation).  ACCRE 1.4 and lns depots only.",
     1, 3, O_DURATION, cmd_alias},
    {"alias-probe", "ALIAS_MCAP",
     "Show the alias's reference counts, its range on the allocation and seconds left.", 1, 1,
     0, cmd_alias_probe},
    {"alias-revoke", "ALIAS_MCAP MCAP",
     "Revoke the alias (MCAP: the allocation's manage capability); the allocation stays.", 2,
     2, 0, cmd_alias_revoke},
    {"status", "HOST[:PORT] [--rid R] [--password-file F]",
     "Show the depot's capacity, use and limits.\n"
     "An ACCRE 1.4 depot wants its password even for this: from F, else from $IBP_PASSWORD.",
     1, 1, O_RID | O_PASSWORD, cmd_status},
    {"status-change", "HOST[:PORT] --password-file F [--hard N] [--soft N] [--max-duration S]",
     "Change the resource's hard and soft capacity and maximum duration (0 or absent: keep).\n"
     "The admin password is read from F, else from $IBP_PASSWORD, never from the command line.",
     1, 1, O_CAPACITY | O_PASSWORD | O_MAXDUR | O_RID, cmd_status_change},
};

#define NCOMMANDS (sizeof commands / sizeof commands[0])

static const command_t *find_command(const char *name)
{
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

static const char global_help[] =
    "Global options (anywhere on the line):\n"
    "  --json          machine-readable output (one JSON object) for every command\n"
    "  -0, --v0        speak IBP protocol version 0 to every depot\n"
    "  -1, --v1        speak IBP protocol version 1 to every depot (default: version 1, or 0\n"
    "                  where the depot drops version 1 unanswered, as LoCI 1.3 does)\n"
    "  --ibp-version HOST:PORT=V  speak version V (0, 1 or auto) to that depot\n"
    "  --tls MODE      auto (default: TLS to every lns depot, its pin from its STATUS),\n"
    "                  require (no plaintext), off (plaintext to every depot)\n"
    "  --timeout S     connect and I/O timeout in seconds (default 5 s connect, 60 s I/O)\n"
    "  -h, --help      this help, or a command's help after the command\n"
    "  -V, --version   print the version\n"
    "A capability argument may be @FILE (the first line of FILE) or @- (read from stdin):\n"
    "one on the command line can be read by any user of the host (ps), so it gets a warning.\n"
    "Exit codes: 0 ok, 1 the depot refused, 2 usage, 3 network (connect, reset, timeout),\n"
    "4 local I/O.\n";

static void print_help(const command_t *cmd)
{
    if (cmd) {
        printf("usage: ibp_tool [options] %s %s\n\n%s\n\n%s", cmd->name, cmd->args, cmd->help,
               global_help);
        return;
    }
    printf("usage: ibp_tool [options] COMMAND ARGS...\n\nCommands:\n");
    for (size_t i = 0; i < NCOMMANDS; i++)
        printf("  %-14s %s\n", commands[i].name, commands[i].args);
    printf("\n%s\n'ibp_tool COMMAND --help' describes a command; man ibp_tool has examples.\n",
           global_help);
}

/* Split "--opt=value" and fetch an option's value from the next argument if needed. */
static const char *opt_value(ibp_tool_t *t, int argc, char **argv, int *i, const char *eq)
{
    if (eq)
        return eq + 1;
    if (*i + 1 >= argc) {
        ibp_tool_usage_error(t, "%s needs a value", argv[*i]);
        return NULL;
    }
    return argv[++*i];
}

/* 1 when argv[*i] is the global option --name or --name=V, with *v its value (NULL after the
 * usage line when there is none); else 0. */
static int global_opt(ibp_tool_t *t, int argc, char **argv, int *i, const char *name,
                      const char **v)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0 || (a[n] != 0 && a[n] != '='))
        return 0;
    *v = opt_value(t, argc, argv, i, a[n] ? a + n : NULL);
    return 1;
}

/* --ibp-version and --tls: settings of the process that apply(v, why, size) makes.  EX_OK, or
 * EX_USAGE after one line "NAME V: why". */
static int process_setting(ibp_tool_t *t, const char *name, const char *v,
                           int (*apply)(const char *, char *, size_t))
{
    char why[256];
    if (!v)
        return EX_USAGE;
    if (apply(v, why, sizeof why) < 0)
        return ibp_tool_usage_error(t, "%s %s: %s", name, v, why);
    return EX_OK;
}

/* Command options.  EX_OK or EX_USAGE (message printed). */
static int parse_cmd_opt(ibp_tool_t *t, int argc, char **argv, int *i)
{
    char name[64];
    const char *arg = argv[*i], *eq = strchr(arg, '='), *v;
    unsigned o = t->cmd ? t->cmd->opts : 0;
    snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - arg) : (int)strlen(arg), arg);

#define VALUE() do { if (!(v = opt_value(t, argc, argv, i, eq))) return EX_USAGE; } while (0)
    if ((o & O_RELIAB) && (!strcmp(name, "--soft") || !strcmp(name, "--hard")) && !eq) {
        t->reliability = name[2] == 's' ? IBP_SOFT : IBP_HARD;
    } else if ((o & O_CAPACITY) && (!strcmp(name, "--soft") || !strcmp(name, "--hard"))) {
        VALUE();
        if (lns_parse_size(v, name[2] == 's' ? &t->soft : &t->hard) < 0)
            return ibp_tool_usage_error(t, "bad size '%s'", v);
    } else if ((o & O_DURATION) && !strcmp(name, "--duration")) {
        VALUE();
        if (ibp_tool_parse_duration(v, 1, &t->duration) < 0 || t->duration == 0)
            return ibp_tool_usage_error(t, "bad duration '%s'", v);
        t->duration_set = 1;
    } else if ((o & O_MAXDUR) && !strcmp(name, "--max-duration")) {
        VALUE();
        if (ibp_tool_parse_duration(v, 0, &t->max_duration) < 0)
            return ibp_tool_usage_error(t, "bad duration '%s'", v);
    } else if ((o & O_RID) && !strcmp(name, "--rid")) {
        VALUE();
        t->rid = v;
    } else if ((o & O_OUTPUT) && (!strcmp(name, "-o") || !strcmp(name, "--output"))) {
        VALUE();
        t->output = v;
    } else if ((o & O_SIZE) && !strcmp(name, "--size")) {
        VALUE();
        if (lns_parse_size(v, &t->size) < 0)
            return ibp_tool_usage_error(t, "bad size '%s'", v);
        t->size_set = 1;
    } else if ((o & O_PASSWORD) && !strcmp(name, "--password-file")) {
        VALUE();
        t->password_file = v;
    } else {
        return ibp_tool_usage_error(t, "unknown option '%s'", arg);
    }
#undef VALUE
    return EX_OK;
}

/* Capabilities are bearer secrets, and a command line is readable by every user of the host
 * (ps, /proc/PID/cmdline).  An argument "@FILE" is the first line of FILE ("@-": of stdin);
 * a capability given on the command line itself still works, with one warning, and is
 * copied off argv and blanked there, so it stays visible only while the tool starts. */
static int secret_args(ibp_tool_t *t)
{
    int warned = 0, stdin_used = 0;
    for (int i = 0; i < t->npos; i++) {
        char *a = t->pos[i];
        char *buf = t->posbuf[i];
        if (a[0] == '@') {
            const char *path = a + 1;
            if (strcmp(path, "-") == 0) {
                if (stdin_used++)
                    return ibp_tool_usage_error(t, "@- can be given only once");
                if (!fgets(buf, IBP_MAX_CAP + 2, stdin))
                    return ibp_tool_usage_error(t, "@-: nothing on stdin");
            } else {
                FILE *f = fopen(path, "r");
                if (!f) {
                    fprintf(stderr, "ibp_tool: %s: cannot read %s: %s\n", t->cmd->name, path,
                            strerror(errno));
                    return EX_LOCAL;
                }
                char *got = fgets(buf, IBP_MAX_CAP + 2, f);
                fclose(f);
                if (!got)
                    return ibp_tool_usage_error(t, "%s is empty", path);
            }
            buf[strcspn(buf, "\r\n")] = 0;
            t->pos[i] = buf;
            continue;
        }
        ibp_cap_t cap;
        if (strlen(a) > IBP_MAX_CAP || ibp_cap_parse(a, &cap) != IBP_OK)
            continue;
        if (!warned++)
            fprintf(stderr, "ibp_tool: warning: a capability on the command line can be read "
                            "by any user of this host (ps); give @FILE or @- instead\n");
        snprintf(buf, IBP_MAX_CAP + 2, "%s", a);
        memset(a, 'x', strlen(a));
        t->pos[i] = buf;
    }
    if (stdin_used)
        for (int i = 0; i < t->npos; i++)
            if (strcmp(t->pos[i], "-") == 0)
                return ibp_tool_usage_error(t, "stdin cannot be both @- and the data");
    return EX_OK;
}

int main(int argc, char **argv)
{
    ibp_tool_t t;
    int help = 0, only_pos = 0, ex;

    memset(&t, 0, sizeof t);
    ibp_client_opts_init(&t.opts);
    signal(SIGPIPE, SIG_IGN); /* a closed pipe or socket must be an error, not death */

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        if (only_pos || a[0] != '-' || !a[1]) {
            if (!t.cmd && !help && strcmp(a, "help") == 0) {
                help = 1;
            } else if (!t.cmd) {
                if (!(t.cmd = find_command(a))) {
                    fprintf(stderr, "ibp_tool: unknown command '%s' (try 'ibp_tool --help')\n", a);
                    return EX_USAGE;
                }
            } else if (t.npos < (int)(sizeof t.pos / sizeof t.pos[0])) {
                t.pos[t.npos++] = argv[i];
            } else {
                return ibp_tool_usage_error(&t, "too many arguments");
            }
        } else if (!strcmp(a, "--")) {
            only_pos = 1;
        } else if (!strcmp(a, "--json")) {
            t.json = 1;
        } else if (!strcmp(a, "-0") || !strcmp(a, "--v0")) {
            t.opts.version = 0;
        } else if (!strcmp(a, "-1") || !strcmp(a, "--v1")) {
            t.opts.version = 1;
        } else if (global_opt(&t, argc, argv, &i, "--ibp-version", &v)) {
            if ((ex = process_setting(&t, "--ibp-version", v, tool_ibp_version_pin)) != EX_OK)
                return ex;
        } else if (global_opt(&t, argc, argv, &i, "--tls", &v)) {
            if ((ex = process_setting(&t, "--tls", v, tool_tls_mode)) != EX_OK)
                return ex;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            help = 1;
        } else if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
            printf("ibp_tool (lns) %s\n", LNS_VERSION);
            return EX_OK;
        } else if (global_opt(&t, argc, argv, &i, "--timeout", &v)) {
            int64_t s;
            if (!v)
                return EX_USAGE;
            if (ibp_tool_parse_duration(v, 0, &s) < 0 || s < 1 || s > 86400)
                return ibp_tool_usage_error(&t, "bad timeout '%s'", v);
            t.opts.connect_timeout_ms = t.opts.io_timeout_ms = (int)(s * 1000);
        } else if (t.cmd) {
            if (parse_cmd_opt(&t, argc, argv, &i) != EX_OK)
                return EX_USAGE;
        } else {
            fprintf(stderr, "ibp_tool: unknown option '%s' (try 'ibp_tool --help')\n", a);
            return EX_USAGE;
        }
    }
    if (help) {
        print_help(t.cmd);
        return EX_OK;
    }
    if (!t.cmd) {
        print_help(NULL);
        return EX_USAGE;
    }
    if (t.npos < t.cmd->min_pos || t.npos > t.cmd->max_pos)
        return ibp_tool_usage_error(&t, "usage: ibp_tool %s %s", t.cmd->name, t.cmd->args);
    if ((ex = secret_args(&t)) != EX_OK)
        return ex;
    tool_tls_warn_at_exit("ibp_tool", 0);
    if (!(t.client = ibp_client_new(&t.opts))) {
        fprintf(stderr, "ibp_tool: %s: out of memory\n", t.cmd->name);
        return EX_LOCAL;
    }
    ex = t.cmd->run(&t);
    ibp_client_free(t.client);
    if (fflush(stdout) != 0 && ex == EX_OK) {
        fprintf(stderr, "ibp_tool: %s: cannot write output: %s\n", t.cmd->name, strerror(errno));
        ex = EX_LOCAL;
    }
    return ex;
}
