/* ibp_tool.c -- ibp_tool: every IBP operation from the command line, built on libibp only.
 *
 * Like curl's tool, it uses nothing but the public header (ibp.h), so anything it does any
 * program can do.  One table describes the commands; the dispatcher, the per-command
 * --help and the usage errors all come from it.  Data streams: a regular file goes to the
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

#include "ibp.h"

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
} tool_t;

typedef struct command {
    const char *name;
    const char *args;
    const char *help;
    int min_pos, max_pos;
    unsigned opts;
    int (*run)(tool_t *t);
} command_t;

static const command_t *find_command(const char *name);

/* ---- output and errors ---- */

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

static int usage_error(const tool_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int usage_error(const tool_t *t, const char *fmt, ...)
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
static int fail(const tool_t *t, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(const tool_t *t, int err, const char *fmt, ...)
{
    char what[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    fprintf(stderr, "ibp_tool: %s: %s: %s\n", t->cmd->name, what, ibp_strerror(err));
    if (t->json) {
        const char *name = ibp_errname(err);
        printf("{\"error\":{\"code\":%d,\"name\":", err);
        json_str(stdout, name ? name : "UNKNOWN");
        printf(",\"message\":");
        json_str(stdout, ibp_strerror(err));
        printf(",\"what\":");
        json_str(stdout, what);
        printf("}}\n");
    }
    return exit_code(err);
}

static int fail_errno(const tool_t *t, const char *what, const char *path)
{
    fprintf(stderr, "ibp_tool: %s: %s %s: %s\n", t->cmd->name, what, path, strerror(errno));
    return EX_LOCAL;
}

/* ---- argument parsing ---- */

static int parse_size(const char *s, uint64_t *out)
{
    char *end;
    uint64_t mult = 1, v;
    if (!s || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno || end == s)
        return -1;
    switch (*end) {
    case 'k': case 'K': mult = 1ull << 10; end++; break;
    case 'm': case 'M': mult = 1ull << 20; end++; break;
    case 'g': case 'G': mult = 1ull << 30; end++; break;
    case 't': case 'T': mult = 1ull << 40; end++; break;
    default: break;
    }
    if (*end || (v && mult > UINT64_MAX / v) || v * mult > (uint64_t)INT64_MAX)
        return -1;
    *out = v * mult;
    return 0;
}

/* Seconds, with an optional s/m/h/d suffix, or -1 when allow_minus_one. */
static int parse_duration(const char *s, int allow_minus_one, int64_t *out)
{
    char *end;
    long long v, mult = 1;
    if (allow_minus_one && strcmp(s, "-1") == 0) {
        *out = -1;
        return 0;
    }
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno)
        return -1;
    switch (*end) {
    case 's': end++; break;
    case 'm': mult = 60; end++; break;
    case 'h': mult = 3600; end++; break;
    case 'd': mult = 86400; end++; break;
    default: break;
    }
    if (*end || v > INT64_MAX / mult)
        return -1;
    *out = v * mult;
    return 0;
}

/* HOST, HOST:PORT, [V6], [V6]:PORT, or a bare IPv6 literal. */
static int parse_hostport(const char *s, char *host, size_t size, int *port)
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

static int need_cap(tool_t *t, const char *s, ibp_captype kind, const char *what)
{
    ibp_cap_t cap;
    if (ibp_cap_parse(s, &cap) != IBP_OK)
        return usage_error(t, "%s is not a valid capability: %s", what, s);
    if (kind && cap.type != kind)
        return usage_error(t, "%s must be a %s capability, not %s", what, ibp_captype_name(kind),
                           ibp_captype_name(cap.type));
    return EX_OK;
}

/* ---- the commands ---- */

static int cmd_allocate(tool_t *t)
{
    char host[IBP_MAX_HOST];
    int port, rc;
    ibp_attr_t attr = {0, DEFAULT_DURATION, IBP_HARD, IBP_BYTEARRAY};
    ibp_caps_t caps;

    if (parse_hostport(t->pos[0], host, sizeof host, &port) < 0)
        return usage_error(t, "bad depot address '%s'", t->pos[0]);
    if (parse_size(t->pos[1], &attr.size) < 0)
        return usage_error(t, "bad size '%s'", t->pos[1]);
    if (t->duration_set)
        attr.duration_s = t->duration;
    if (t->reliability)
        attr.reliability = t->reliability;
    rc = ibp_allocate(t->client, host, port, t->rid, &attr, &caps);
    if (rc != IBP_OK)
        return fail(t, rc, "ALLOCATE of %" PRIu64 " bytes on %s:%d", attr.size, host, port);
    if (t->json) {
        printf("{\"read\":");
        json_str(stdout, caps.read);
        printf(",\"write\":");
        json_str(stdout, caps.write);
        printf(",\"manage\":");
        json_str(stdout, caps.manage);
        printf("}\n");
    } else {
        printf("%s\n%s\n%s\n", caps.read, caps.write, caps.manage);
    }
    return EX_OK;
}

/* Open the data source: FILE, or stdin for "-" / nothing. */
static int open_input(tool_t *t, const char *path, int *fd)
{
    if (!path || strcmp(path, "-") == 0) {
        *fd = 0;
        return EX_OK;
    }
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    return *fd < 0 ? fail_errno(t, "cannot open", path) : EX_OK;
}

/* Read up to n bytes, stopping early only at EOF.  -1 on error. */
static ssize_t read_chunk(int fd, char *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r == 0)
            break;
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        got += (size_t)r;
    }
    return (ssize_t)got;
}

/* STORE (write_at == NULL) or WRITE at *write_at: a regular file in one request, anything
 * else in STREAM_CHUNK pieces. */
static int put_data(tool_t *t, const char *wcap, const uint64_t *write_at, const char *path,
                    uint64_t *total)
{
    const char *op = write_at ? "WRITE" : "STORE";
    struct stat st;
    int fd, rc, ex;
    uint64_t n = 0;

    *total = 0;
    if ((ex = open_input(t, path, &fd)) != EX_OK)
        return ex;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        off_t pos = lseek(fd, 0, SEEK_CUR);
        uint64_t len = pos >= 0 && pos < st.st_size ? (uint64_t)(st.st_size - pos) : 0;
        if (write_at)
            rc = ibp_write_fd(t->client, wcap, *write_at, fd, len, &n);
        else
            rc = ibp_store_file(t->client, wcap, fd, pos >= 0 ? (uint64_t)pos : 0, len, &n);
        if (fd != 0)
            close(fd);
        if (rc != IBP_OK)
            return fail(t, rc, "%s of %" PRIu64 " bytes", op, len);
        *total = n;
        return EX_OK;
    }
    char *buf = malloc(STREAM_CHUNK);
    if (!buf) {
        if (fd != 0)
            close(fd);
        return fail(t, IBP_E_ALLOC_FAILED, "buffer");
    }
    ex = EX_OK;
    for (;;) {
        ssize_t r = read_chunk(fd, buf, STREAM_CHUNK);
        if (r < 0) {
            ex = fail_errno(t, "cannot read", path && strcmp(path, "-") ? path : "stdin");
            break;
        }
        if (r == 0)
            break;
        if (write_at)
            rc = ibp_write(t->client, wcap, *write_at + *total, buf, (uint64_t)r, &n);
        else
            rc = ibp_store(t->client, wcap, buf, (uint64_t)r, &n);
        if (rc != IBP_OK) {
            ex = fail(t, rc, "%s after %" PRIu64 " bytes", op, *total);
            break;
        }
        *total += n;
    }
    free(buf);
    if (fd != 0)
        close(fd);
    return ex;
}

static void print_count(const tool_t *t, const char *key, uint64_t n)
{
    if (t->json)
        printf("{\"%s\":%" PRIu64 "}\n", key, n);
    else
        printf("%s %" PRIu64 " bytes\n", key, n);
}

static int cmd_store(tool_t *t)
{
    uint64_t n;
    int ex;
    if ((ex = need_cap(t, t->pos[0], IBP_WRITECAP, "WCAP")) != EX_OK)
        return ex;
    if ((ex = put_data(t, t->pos[0], NULL, t->npos > 1 ? t->pos[1] : NULL, &n)) != EX_OK)
        return ex;
    print_count(t, "stored", n);
    return EX_OK;
}

static int cmd_write(tool_t *t)
{
    uint64_t off, n;
    int ex;
    if ((ex = need_cap(t, t->pos[0], IBP_WRITECAP, "WCAP")) != EX_OK)
        return ex;
    if (parse_size(t->pos[1], &off) < 0)
        return usage_error(t, "bad offset '%s'", t->pos[1]);
    if ((ex = put_data(t, t->pos[0], &off, t->npos > 2 ? t->pos[2] : NULL, &n)) != EX_OK)
        return ex;
    print_count(t, "written", n);
    return EX_OK;
}

/* Bytes from offset to the current end, for load and copy without a LENGTH. */
static int length_to_end(tool_t *t, const char *cap, uint64_t offset, uint64_t *len)
{
    ibp_probe_t p;
    int rc = ibp_probe(t->client, cap, &p);
    if (rc != IBP_OK)
        return fail(t, rc, "PROBE for the current size");
    if (offset > p.cur_size)
        return fail(t, IBP_E_INVALID_PARAMETER, "offset %" PRIu64 " is past the end (%" PRIu64 ")",
                    offset, p.cur_size);
    *len = p.cur_size - offset;
    return EX_OK;
}

static int cmd_load(tool_t *t)
{
    uint64_t off = 0, len;
    int ex, rc, fd = 1;
    int to_stdout = !t->output || strcmp(t->output, "-") == 0;

    if ((ex = need_cap(t, t->pos[0], IBP_READCAP, "RCAP")) != EX_OK)
        return ex;
    if (t->npos > 1 && parse_size(t->pos[1], &off) < 0)
        return usage_error(t, "bad offset '%s'", t->pos[1]);
    if (t->npos > 2) {
        if (parse_size(t->pos[2], &len) < 0)
            return usage_error(t, "bad length '%s'", t->pos[2]);
    } else if ((ex = length_to_end(t, t->pos[0], off, &len)) != EX_OK) {
        return ex;
    }
    if (!to_stdout) {
        fd = open(t->output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
            return fail_errno(t, "cannot create", t->output);
    }
    rc = ibp_load_fd(t->client, t->pos[0], off, len, fd);
    if (!to_stdout && close(fd) < 0 && rc == IBP_OK)
        rc = IBP_E_FILE_WRITE;
    if (rc != IBP_OK)
        return fail(t, rc, "LOAD of %" PRIu64 " bytes at %" PRIu64, len, off);
    if (t->json) /* the data owns stdout when it goes there */
        fprintf(to_stdout ? stderr : stdout, "{\"loaded\":%" PRIu64 "}\n", len);
    return EX_OK;
}

static int cmd_copy(tool_t *t)
{
    uint64_t off = 0, len, n;
    int ex, rc;
    if ((ex = need_cap(t, t->pos[0], IBP_READCAP, "RCAP")) != EX_OK ||
        (ex = need_cap(t, t->pos[1], IBP_WRITECAP, "DST_WCAP")) != EX_OK)
        return ex;
    if (t->npos == 3)
        return usage_error(t, "give both OFFSET and LENGTH, or neither");
    if (t->npos == 4) {
        if (parse_size(t->pos[2], &off) < 0 || parse_size(t->pos[3], &len) < 0)
            return usage_error(t, "bad offset or length");
    } else if ((ex = length_to_end(t, t->pos[0], 0, &len)) != EX_OK) {
        return ex;
    }
    rc = ibp_send(t->client, t->pos[0], t->pos[1], off, len, &n);
    if (rc != IBP_OK)
        return fail(t, rc, "SEND of %" PRIu64 " bytes at %" PRIu64, len, off);
    print_count(t, "copied", n);
    return EX_OK;
}

static const char *reliability_name(int r)
{
    return r == IBP_HARD ? "hard" : r == IBP_SOFT ? "soft" : "unknown";
}

static int cmd_probe(tool_t *t)
{
    ibp_probe_t p;
    int ex, rc;
    if ((ex = need_cap(t, t->pos[0], 0, "CAP")) != EX_OK)
        return ex;
    if ((rc = ibp_probe(t->client, t->pos[0], &p)) != IBP_OK)
        return fail(t, rc, "PROBE");
    if (t->json) {
        printf("{\"read_refs\":%d,\"write_refs\":%d,\"cur_size\":%" PRIu64 ",\"max_size\":%" PRIu64
               ",\"seconds_left\":%" PRId64 ",\"reliability\":\"%s\",\"type\":%d}\n",
               p.read_refs, p.write_refs, p.cur_size, p.max_size, p.seconds_left,
               reliability_name(p.reliability), p.type);
    } else {
        printf("read refs:    %d\nwrite refs:   %d\ncurrent size: %" PRIu64 "\nmax size:     %" PRIu64
               "\nseconds left: %" PRId64 "\nreliability:  %s\ntype:         %s\n",
               p.read_refs, p.write_refs, p.cur_size, p.max_size, p.seconds_left,
               reliability_name(p.reliability), p.type == IBP_BYTEARRAY ? "byte array" : "other");
    }
    return EX_OK;
}

static int print_ok(const tool_t *t)
{
    if (t->json)
        printf("{\"ok\":true}\n");
    return EX_OK;
}

static int refcount(tool_t *t, int incr)
{
    ibp_captype which;
    int ex, rc;
    if ((ex = need_cap(t, t->pos[0], IBP_MANAGECAP, "MCAP")) != EX_OK)
        return ex;
    if (strcmp(t->pos[1], "read") == 0)
        which = IBP_READCAP;
    else if (strcmp(t->pos[1], "write") == 0)
        which = IBP_WRITECAP;
    else
        return usage_error(t, "say 'read' or 'write', not '%s'", t->pos[1]);
    rc = incr ? ibp_incr(t->client, t->pos[0], which) : ibp_decr(t->client, t->pos[0], which);
    if (rc != IBP_OK)
        return fail(t, rc, "%s of the %s count", incr ? "INCR" : "DECR", t->pos[1]);
    return print_ok(t);
}

static int cmd_incr(tool_t *t)
{
    return refcount(t, 1);
}

static int cmd_decr(tool_t *t)
{
    return refcount(t, 0);
}

static int cmd_change(tool_t *t)
{
    int ex, rc;
    if ((ex = need_cap(t, t->pos[0], IBP_MANAGECAP, "MCAP")) != EX_OK)
        return ex;
    if (!t->size_set && !t->duration_set && !t->reliability)
        return usage_error(t, "nothing to change: give --size, --duration, --soft or --hard");
    if (t->size_set && t->size == 0)
        return usage_error(t, "--size must be at least 1");
    rc = ibp_change(t->client, t->pos[0], t->size_set ? t->size : 0,
                    t->duration_set ? t->duration : 0, t->reliability);
    if (rc != IBP_OK)
        return fail(t, rc, "CHNG");
    return print_ok(t);
}

static int cmd_truncate(tool_t *t)
{
    uint64_t size;
    int ex, rc;
    if ((ex = need_cap(t, t->pos[0], IBP_MANAGECAP, "MCAP")) != EX_OK)
        return ex;
    if (parse_size(t->pos[1], &size) < 0)
        return usage_error(t, "bad size '%s'", t->pos[1]);
    if ((rc = ibp_truncate(t->client, t->pos[0], size)) != IBP_OK)
        return fail(t, rc, "TRUNCATE to %" PRIu64 " bytes", size);
    return print_ok(t);
}

static void print_status(const tool_t *t, const char *host, int port, const ibp_depot_status_t *s)
{
    if (t->json) {
        printf("{\"depot\":");
        json_str(stdout, host);
        printf(",\"port\":%d,\"version\":", port);
        json_str(stdout, s->version);
        printf(",\"rid\":");
        json_str(stdout, s->rid);
        printf(",\"hard_total\":%" PRIu64 ",\"hard_used\":%" PRIu64 ",\"soft_total\":%" PRIu64
               ",\"soft_used\":%" PRIu64 ",\"max_duration\":%" PRId64 ",\"allocations\":%d}\n",
               s->hard_total, s->hard_used, s->soft_total, s->soft_used, s->max_duration_s,
               s->allocations);
        return;
    }
    printf("depot:        %s:%d\nversion:      %s\nresource:     %s\n", host, port,
           s->version[0] ? s->version : "?", s->rid);
    printf("hard:         %" PRIu64 " used of %" PRIu64 " bytes\n", s->hard_used, s->hard_total);
    printf("soft:         %" PRIu64 " used of %" PRIu64 " bytes\n", s->soft_used, s->soft_total);
    printf("max duration: %" PRId64 " s\n", s->max_duration_s);
    if (s->allocations >= 0)
        printf("allocations:  %d\n", s->allocations);
}

static int cmd_status(tool_t *t)
{
    char host[IBP_MAX_HOST];
    ibp_depot_status_t s;
    int port, rc;
    if (parse_hostport(t->pos[0], host, sizeof host, &port) < 0)
        return usage_error(t, "bad depot address '%s'", t->pos[0]);
    rc = ibp_status(t->client, host, port, t->rid, NULL, &s);
    if (rc != IBP_OK)
        return fail(t, rc, "STATUS of %s:%d", host, port);
    print_status(t, host, port, &s);
    return EX_OK;
}

/* The admin password: first line of --password-file, else $IBP_PASSWORD; never argv. */
static int read_password(tool_t *t, char *pw, size_t size)
{
    if (t->password_file) {
        FILE *f = fopen(t->password_file, "r");
        if (!f)
            return fail_errno(t, "cannot open", t->password_file);
        if (!fgets(pw, (int)size, f))
            pw[0] = 0;
        fclose(f);
        pw[strcspn(pw, "\r\n")] = 0;
    } else if (getenv("IBP_PASSWORD")) {
        snprintf(pw, size, "%s", getenv("IBP_PASSWORD"));
    } else {
        return usage_error(t, "give --password-file or set IBP_PASSWORD");
    }
    if (!pw[0])
        return usage_error(t, "the password is empty");
    return EX_OK;
}

static int cmd_status_change(tool_t *t)
{
    char host[IBP_MAX_HOST], pw[256];
    ibp_depot_status_t s;
    int port, rc, ex;
    if (parse_hostport(t->pos[0], host, sizeof host, &port) < 0)
        return usage_error(t, "bad depot address '%s'", t->pos[0]);
    if ((ex = read_password(t, pw, sizeof pw)) != EX_OK)
        return ex;
    rc = ibp_status_change(t->client, host, port, t->rid, pw, t->hard, t->soft, t->max_duration,
                           &s);
    memset(pw, 0, sizeof pw);
    if (rc != IBP_OK)
        return fail(t, rc, "STATUS CHANGE of %s:%d", host, port);
    print_status(t, host, port, &s);
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
     "Read LENGTH bytes at OFFSET (default: from OFFSET, default 0, to the current end) to\n"
     "FILE or stdout.",
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
     "Set the current size: bytes past SIZE are dropped, growing fills with zeros.", 2, 2, 0,
     cmd_truncate},
    {"status", "HOST[:PORT] [--rid R]", "Show the depot's capacity, use and limits.", 1, 1, O_RID,
     cmd_status},
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
    "  -0, --v0        speak IBP protocol version 0 (LoCI 1.3) instead of 1\n"
    "  --timeout S     connect and I/O timeout in seconds (default 5 s connect, 60 s I/O)\n"
    "  -h, --help      this help, or a command's help after the command\n"
    "  -V, --version   print the version\n"
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
static const char *opt_value(tool_t *t, int argc, char **argv, int *i, const char *eq)
{
    if (eq)
        return eq + 1;
    if (*i + 1 >= argc) {
        usage_error(t, "%s needs a value", argv[*i]);
        return NULL;
    }
    return argv[++*i];
}

/* Command options.  EX_OK or EX_USAGE (message printed). */
static int parse_cmd_opt(tool_t *t, int argc, char **argv, int *i)
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
        if (parse_size(v, name[2] == 's' ? &t->soft : &t->hard) < 0)
            return usage_error(t, "bad size '%s'", v);
    } else if ((o & O_DURATION) && !strcmp(name, "--duration")) {
        VALUE();
        if (parse_duration(v, 1, &t->duration) < 0 || t->duration == 0)
            return usage_error(t, "bad duration '%s'", v);
        t->duration_set = 1;
    } else if ((o & O_MAXDUR) && !strcmp(name, "--max-duration")) {
        VALUE();
        if (parse_duration(v, 0, &t->max_duration) < 0)
            return usage_error(t, "bad duration '%s'", v);
    } else if ((o & O_RID) && !strcmp(name, "--rid")) {
        VALUE();
        t->rid = v;
    } else if ((o & O_OUTPUT) && (!strcmp(name, "-o") || !strcmp(name, "--output"))) {
        VALUE();
        t->output = v;
    } else if ((o & O_SIZE) && !strcmp(name, "--size")) {
        VALUE();
        if (parse_size(v, &t->size) < 0)
            return usage_error(t, "bad size '%s'", v);
        t->size_set = 1;
    } else if ((o & O_PASSWORD) && !strcmp(name, "--password-file")) {
        VALUE();
        t->password_file = v;
    } else {
        return usage_error(t, "unknown option '%s'", arg);
    }
#undef VALUE
    return EX_OK;
}

int main(int argc, char **argv)
{
    tool_t t;
    int help = 0, only_pos = 0, ex;

    memset(&t, 0, sizeof t);
    ibp_client_opts_init(&t.opts);
    signal(SIGPIPE, SIG_IGN); /* a closed pipe or socket must be an error, not death */

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
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
                return usage_error(&t, "too many arguments");
            }
        } else if (!strcmp(a, "--")) {
            only_pos = 1;
        } else if (!strcmp(a, "--json")) {
            t.json = 1;
        } else if (!strcmp(a, "-0") || !strcmp(a, "--v0")) {
            t.opts.version = 0;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            help = 1;
        } else if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
            printf("ibp_tool (lns) %s\n", LNS_VERSION);
            return EX_OK;
        } else if (!strncmp(a, "--timeout", 9) && (a[9] == 0 || a[9] == '=')) {
            const char *v = opt_value(&t, argc, argv, &i, a[9] ? a + 9 : NULL);
            int64_t s;
            if (!v)
                return EX_USAGE;
            if (parse_duration(v, 0, &s) < 0 || s < 1 || s > 86400)
                return usage_error(&t, "bad timeout '%s'", v);
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
        return usage_error(&t, "usage: ibp_tool %s %s", t.cmd->name, t.cmd->args);
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
