/* ibp_tool_cmd.c -- ibp_tool's commands, one function each, over libibp's public API.
 *
 * Each takes the parsed command line (ibp_tool_t), talks to the depot, prints in plain text or
 * JSON, and returns the tool's exit code; errors go through ibp_tool_fail() so every failure is
 * one line on stderr with a distinct exit code (ibp_tool.h). */
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

/* A capability set: three lines, or one JSON object with --json. */
static int print_caps(const ibp_tool_t *t, const ibp_caps_t *caps)
{
    if (t->json) {
        printf("{\"read\":");
        tool_json_str(stdout, caps->read);
        printf(",\"write\":");
        tool_json_str(stdout, caps->write);
        printf(",\"manage\":");
        tool_json_str(stdout, caps->manage);
        printf("}\n");
    } else {
        printf("%s\n%s\n%s\n", caps->read, caps->write, caps->manage);
    }
    return EX_OK;
}

int cmd_allocate(ibp_tool_t *t)
{
    char host[IBP_MAX_HOST];
    int port, rc;
    ibp_attr_t attr = {0, DEFAULT_DURATION, IBP_HARD, IBP_BYTEARRAY};
    ibp_caps_t caps;

    if (ibp_tool_need_depot(t, host, sizeof host, &port) != EX_OK)
        return EX_USAGE;
    if (lns_parse_size(t->pos[1], &attr.size) < 0)
        return ibp_tool_usage_error(t, "bad size '%s'", t->pos[1]);
    if (t->duration_set)
        attr.duration_s = t->duration;
    if (t->reliability)
        attr.reliability = t->reliability;
    rc = ibp_allocate(t->client, host, port, t->rid, &attr, &caps);
    if (rc != IBP_OK)
        return ibp_tool_fail(t, rc, "ALLOCATE of %" PRIu64 " bytes on %s:%d", attr.size, host,
                             port);
    return print_caps(t, &caps);
}

/* Open the data source: FILE, or stdin for "-" / nothing. */
static int open_input(ibp_tool_t *t, const char *path, int *fd)
{
    if (!path || strcmp(path, "-") == 0) {
        *fd = 0;
        return EX_OK;
    }
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    return *fd < 0 ? ibp_tool_fail_errno(t, "cannot open", path) : EX_OK;
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
static int put_data(ibp_tool_t *t, const char *wcap, const uint64_t *write_at, const char *path,
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
            return ibp_tool_fail(t, rc, "%s of %" PRIu64 " bytes", op, len);
        *total = n;
        return EX_OK;
    }
    char *buf = malloc(STREAM_CHUNK);
    if (!buf) {
        if (fd != 0)
            close(fd);
        return ibp_tool_fail(t, IBP_E_ALLOC_FAILED, "buffer");
    }
    ex = EX_OK;
    for (;;) {
        ssize_t r = read_chunk(fd, buf, STREAM_CHUNK);
        if (r < 0) {
            ex = ibp_tool_fail_errno(t, "cannot read", path && strcmp(path, "-") ? path : "stdin");
            break;
        }
        if (r == 0)
            break;
        if (write_at)
            rc = ibp_write(t->client, wcap, *write_at + *total, buf, (uint64_t)r, &n);
        else
            rc = ibp_store(t->client, wcap, buf, (uint64_t)r, &n);
        if (rc != IBP_OK) {
            ex = ibp_tool_fail(t, rc, "%s after %" PRIu64 " bytes", op, *total);
            break;
        }
        *total += n;
    }
    free(buf);
    if (fd != 0)
        close(fd);
    return ex;
}

static void print_count(const ibp_tool_t *t, const char *key, uint64_t n)
{
    if (t->json)
        printf("{\"%s\":%" PRIu64 "}\n", key, n);
    else
        printf("%s %" PRIu64 " bytes\n", key, n);
}

int cmd_store(ibp_tool_t *t)
{
    uint64_t n;
    int ex;
    if ((ex = ibp_tool_need_cap(t, t->pos[0], IBP_WRITECAP, "WCAP")) != EX_OK)
        return ex;
    if ((ex = put_data(t, t->pos[0], NULL, t->npos > 1 ? t->pos[1] : NULL, &n)) != EX_OK)
        return ex;
    print_count(t, "stored", n);
    return EX_OK;
}

int cmd_write(ibp_tool_t *t)
{
    uint64_t off, n;
    int ex;
    if ((ex = ibp_tool_need_cap(t, t->pos[0], IBP_WRITECAP, "WCAP")) != EX_OK)
        return ex;
    if (lns_parse_size(t->pos[1], &off) < 0)
        return ibp_tool_usage_error(t, "bad offset '%s'", t->pos[1]);
    if ((ex = put_data(t, t->pos[0], &off, t->npos > 2 ? t->pos[2] : NULL, &n)) != EX_OK)
        return ex;
    print_count(t, "written", n);
    return EX_OK;
}

/* Whether byte k of cap's allocation exists: 1 yes, 0 past the end (the depot refuses a LOAD
 * there: -19 from ACCRE 1.4, -30 from lns in version 1), -1 another error (*rc). */
static int byte_exists(ibp_tool_t *t, const char *cap, uint64_t k, int *rc)
{
    unsigned char b;
    *rc = ibp_load(t->client, cap, k, 1, &b);
    if (*rc == IBP_OK)
        return 1;
    return *rc == IBP_E_WOULD_EXCEED_LIMIT || *rc == IBP_E_INVALID_PARAMETER ? 0 : -1;
}

/* The current size from 1-byte LOADs, for a depot that PROBEs only with a MANAGE capability
 * (ACCRE 1.4) when the user holds a READ one: doubling until a byte is missing, then
 * bisecting; about 2 log2(size) round trips on one pooled connection.  IBP_OK or the error
 * of the first LOAD that failed otherwise. */
static int size_by_loads(ibp_tool_t *t, const char *cap, uint64_t *size)
{
    int rc, e = byte_exists(t, cap, 0, &rc);
    uint64_t lo = 0, hi = 1;
    if (e <= 0) {
        *size = 0;
        return e < 0 ? rc : IBP_OK;
    }
    while ((e = byte_exists(t, cap, hi, &rc)) == 1) {
        lo = hi;
        if (hi > UINT64_C(1) << 62)
            return IBP_E_INVALID_PARAMETER;
        hi *= 2;
    }
    if (e < 0)
        return rc;
    while (hi - lo > 1) { /* byte lo exists, byte hi does not */
        uint64_t mid = lo + (hi - lo) / 2;
        if ((e = byte_exists(t, cap, mid, &rc)) < 0)
            return rc;
        if (e)
            lo = mid;
        else
            hi = mid;
    }
    *size = hi;
    return IBP_OK;
}

/* Bytes from offset to the current end, for load and copy without a LENGTH: a PROBE, or,
 * where the depot PROBEs only with a MANAGE capability (ACCRE 1.4 answers -4 for a READ
 * one), the size found by LOADs. */
static int length_to_end(ibp_tool_t *t, const char *cap, uint64_t offset, uint64_t *len)
{
    ibp_probe_t p;
    int rc = ibp_probe(t->client, cap, &p);
    if (rc == IBP_E_CAP_NOT_FOUND) {
        int lrc = size_by_loads(t, cap, &p.cur_size);
        if (lrc != IBP_OK) /* a LOAD refused too: the capability itself is what is wrong */
            return ibp_tool_fail(t, lrc == IBP_E_CAP_NOT_FOUND ? rc : lrc,
                                 "finding the current size (PROBE, then LOADs)");
        rc = IBP_OK;
    }
    if (rc != IBP_OK)
        return ibp_tool_fail(t, rc, "PROBE for the current size");
    if (offset > p.cur_size)
        return ibp_tool_fail(t, IBP_E_INVALID_PARAMETER,
                             "offset %" PRIu64 " is past the end (%" PRIu64 ")",
                    offset, p.cur_size);
    *len = p.cur_size - offset;
    return EX_OK;
}

int cmd_load(ibp_tool_t *t)
{
    uint64_t off = 0, len;
    int ex, rc, fd = 1;
    int to_stdout = !t->output || strcmp(t->output, "-") == 0;

    if ((ex = ibp_tool_need_cap(t, t->pos[0], IBP_READCAP, "RCAP")) != EX_OK)
        return ex;
    if (t->npos > 1 && lns_parse_size(t->pos[1], &off) < 0)
        return ibp_tool_usage_error(t, "bad offset '%s'", t->pos[1]);
    if (t->npos > 2) {
        if (lns_parse_size(t->pos[2], &len) < 0)
            return ibp_tool_usage_error(t, "bad length '%s'", t->pos[2]);
    } else if ((ex = length_to_end(t, t->pos[0], off, &len)) != EX_OK) {
        return ex;
    }
    if (!to_stdout) {
        fd = open(t->output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
            return ibp_tool_fail_errno(t, "cannot create", t->output);
    }
    rc = ibp_load_fd(t->client, t->pos[0], off, len, fd);
    if (!to_stdout && close(fd) < 0 && rc == IBP_OK)
        rc = IBP_E_FILE_WRITE;
    if (rc != IBP_OK)
        return ibp_tool_fail(t, rc, "LOAD of %" PRIu64 " bytes at %" PRIu64, len, off);
    if (t->json) /* the data owns stdout when it goes there */
        fprintf(to_stdout ? stderr : stdout, "{\"loaded\":%" PRIu64 "}\n", len);
    return EX_OK;
}

int cmd_copy(ibp_tool_t *t)
{
    uint64_t off = 0, len, n;
    int ex, rc;
    if ((ex = ibp_tool_need_cap(t, t->pos[0], IBP_READCAP, "RCAP")) != EX_OK ||
        (ex = ibp_tool_need_cap(t, t->pos[1], IBP_WRITECAP, "DST_WCAP")) != EX_OK)
        return ex;
    if (t->npos == 3)
        return ibp_tool_usage_error(t, "give both OFFSET and LENGTH, or neither");
    if (t->npos == 4) {
        if (lns_parse_size(t->pos[2], &off) < 0 || lns_parse_size(t->pos[3], &len) < 0)
            return ibp_tool_usage_error(t, "bad offset or length");
    } else if ((ex = length_to_end(t, t->pos[0], 0, &len)) != EX_OK) {
        return ex;
    }
    rc = ibp_send(t->client, t->pos[0], t->pos[1], off, len, &n);
    if (rc != IBP_OK)
        return ibp_tool_fail(t, rc, "SEND of %" PRIu64 " bytes at %" PRIu64, len, off);
    print_count(t, "copied", n);
    return EX_OK;
}

static const char *reliability_name(int r)
{
    return r == IBP_HARD ? "hard" : r == IBP_SOFT ? "soft" : "unknown";
}

int cmd_probe(ibp_tool_t *t)
{
    ibp_probe_t p;
    int ex, rc;
    if ((ex = ibp_tool_need_cap(t, t->pos[0], 0, "CAP")) != EX_OK)
        return ex;
    if ((rc = ibp_probe(t->client, t->pos[0], &p)) != IBP_OK) {
        ibp_cap_t c;
        if (rc == IBP_E_CAP_NOT_FOUND && ibp_cap_parse(t->pos[0], &c) == IBP_OK &&
            c.type != IBP_MANAGECAP)
            return ibp_tool_fail(t, rc, "PROBE (with a %s capability: some depots, ACCRE "
                                 "1.4's, PROBE only with a MANAGE one)", ibp_captype_name(c.type));
        return ibp_tool_fail(t, rc, "PROBE");
    }
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

static int print_ok(const ibp_tool_t *t)
{
    if (t->json)
        printf("{\"ok\":true}\n");
    return EX_OK;
}

static int refcount(ibp_tool_t *t, int incr)
{
    ibp_captype which;
    int ex, rc;
    if ((ex = ibp_tool_need_cap(t, t->pos[0], IBP_MANAGECAP, "MCAP")) != EX_OK)
        return ex;
    if (strcmp(t->pos[1], "read") == 0)
        which = IBP_READCAP;
    else if (strcmp(t->pos[1], "write") == 0)
        which = IBP_WRITECAP;
    else
        return ibp_tool_usage_error(t, "say 'read' or 'write', not '%s'", t->pos[1]);
    rc = incr ? ibp_incr(t->client, t->pos[0], which) : ibp_decr(t->client, t->pos[0], which);
    if (rc != IBP_OK)
        return ibp_tool_fail(t, rc, "%s of the %s count", incr ? "INCR" : "DECR", t->pos[1]);
    return print_ok(t);
}

int cmd_incr(ibp_tool_t *t)
{
    return refcount(t, 1);
}

int cmd_decr(ibp_tool_t *t)
{
    return refcount(t, 0);
}

int cmd_change(ibp_tool_t *t)
{
    int ex, rc;
    if ((ex = ibp_tool_need_cap(t, t->pos[0], IBP_MANAGECAP, "MCAP")) != EX_OK)
        return ex;
    if (!t->size_set && !t->duration_set && !t->reliability)
        return ibp_tool_usage_error(t, "nothing to change: give --size, --duration, --soft or "
                                       "--hard");
    if (t->size_set && t->size == 0)
        return ibp_tool_usage_error(t, "--size must be at least 1");
    rc = ibp_change(t->client, t->pos[0], t->size_set ? t->size : 0,
                    t->duration_set ? t->duration : 0, t->reliability);
    if (rc != IBP_OK)
        return ibp_tool_fail(t, rc, "CHNG");
    return print_ok(t);
}

int cmd_truncate(ibp_tool_t *t)
{
    uint64_t size;
    int ex, rc;
    if ((ex = ibp_tool_need_cap(t, t->pos[0], IBP_MANAGECAP, "MCAP")) != EX_OK)
        return ex;
    if (lns_parse_size(t->pos[1], &size) < 0)
        return ibp_tool_usage_error(t, "bad size '%s'", t->pos[1]);
    if ((rc = ibp_truncate(t->client, t->pos[0], size)) != IBP_OK)
        return ibp_tool_fail(t, rc, "TRUNCATE to %" PRIu64 " bytes", size);
    return print_ok(t);
}

int cmd_alias(ibp_tool_t *t)
{
    uint64_t off = 0, len = 0;
    ibp_caps_t caps;
    int ex, rc;
    if ((ex = ibp_tool_need_cap(t, t->pos[0], IBP_MANAGECAP, "MCAP")) != EX_OK)
        return ex;
    if (t->npos > 1 && lns_parse_size(t->pos[1], &off) < 0)
        return ibp_tool_usage_error(t, "bad offset '%s'", t->pos[1]);
    if (t->npos > 2 && (lns_parse_size(t->pos[2], &len) < 0 || len == 0))
        return ibp_tool_usage_error(t, "bad length '%s'", t->pos[2]);
    if (t->duration_set && t->duration <= 0)
        return ibp_tool_usage_error(t, "--duration must be at least 1 s for an alias");
    rc = ibp_alias_allocate(t->client, t->pos[0], off, len, t->duration_set ? t->duration : 0,
                            &caps);
    if (rc == IBP_E_INVALID_CMD)
        return ibp_tool_fail(t, rc, "ALIAS_ALLOCATE (this depot has no alias capabilities: "
                                    "LoCI 1.3 and lns before 0.2 do not)");
    if (rc != IBP_OK)
        return ibp_tool_fail(t, rc, "ALIAS_ALLOCATE of %" PRIu64 " bytes at %" PRIu64, len, off);
    return print_caps(t, &caps);
}

int cmd_alias_probe(ibp_tool_t *t)
{
    ibp_alias_probe_t p;
    int ex, rc;
    if ((ex = ibp_tool_need_cap(t, t->pos[0], IBP_MANAGECAP, "ALIAS_MCAP")) != EX_OK)
        return ex;
    if ((rc = ibp_alias_probe(t->client, t->pos[0], &p)) != IBP_OK)
        return ibp_tool_fail(t, rc, "ALIAS_MANAGE PROBE");
    if (t->json)
        printf("{\"read_refs\":%d,\"write_refs\":%d,\"offset\":%" PRIu64 ",\"length\":%" PRIu64
               ",\"seconds_left\":%" PRId64 "}\n",
               p.read_refs, p.write_refs, p.offset, p.length, p.seconds_left);
    else
        printf("read refs:    %d\nwrite refs:   %d\noffset:       %" PRIu64
               "\nlength:       %" PRIu64 "%s\nseconds left: %" PRId64 "\n",
               p.read_refs, p.write_refs, p.offset, p.length, p.length ? "" : " (to the end)",
               p.seconds_left);
    return EX_OK;
}

int cmd_alias_revoke(ibp_tool_t *t)
{
    int ex, rc;
    if ((ex = ibp_tool_need_cap(t, t->pos[0], IBP_MANAGECAP, "ALIAS_MCAP")) != EX_OK ||
        (ex = ibp_tool_need_cap(t, t->pos[1], IBP_MANAGECAP, "MCAP")) != EX_OK)
        return ex;
    if ((rc = ibp_alias_revoke(t->client, t->pos[0], t->pos[1])) != IBP_OK)
        return ibp_tool_fail(t, rc, "revoking the alias (ALIAS_MANAGE DECR)");
    return print_ok(t);
}

static void print_status(const ibp_tool_t *t, const char *host, int port,
                         const ibp_depot_status_t *s)
{
    if (t->json) {
        printf("{\"depot\":");
        tool_json_str(stdout, host);
        printf(",\"port\":%d,\"version\":", port);
        tool_json_str(stdout, s->version);
        printf(",\"rid\":");
        tool_json_str(stdout, s->rid);
        printf(",\"hard_total\":%" PRIu64 ",\"hard_used\":%" PRIu64 ",\"soft_total\":%" PRIu64
               ",\"soft_used\":%" PRIu64 ",\"max_duration\":%" PRId64 ",\"allocations\":%d",
               s->hard_total, s->hard_used, s->soft_total, s->soft_used, s->max_duration_s,
               s->allocations);
        if (s->pin[0]) {
            printf(",\"pin\":");
            tool_json_str(stdout, s->pin);
        }
        printf("}\n");
        return;
    }
    printf("depot:        %s:%d\nversion:      %s\nresource:     %s\n", host, port,
           s->version[0] ? s->version : "?", s->rid);
    printf("hard:         %" PRIu64 " used of %" PRIu64 " bytes\n", s->hard_used, s->hard_total);
    printf("soft:         %" PRIu64 " used of %" PRIu64 " bytes\n", s->soft_used, s->soft_total);
    printf("max duration: %" PRId64 " s\n", s->max_duration_s);
    if (s->allocations >= 0)
        printf("allocations:  %d\n", s->allocations);
    if (s->pin[0])
        printf("tls pin:      %s\n", s->pin);
}

/* The admin password: first line of --password-file, else $IBP_PASSWORD; never argv. */
static int read_password(ibp_tool_t *t, char *pw, size_t size)
{
    if (t->password_file) {
        FILE *f = fopen(t->password_file, "r");
        if (!f)
            return ibp_tool_fail_errno(t, "cannot open", t->password_file);
        if (!fgets(pw, (int)size, f))
            pw[0] = 0;
        fclose(f);
        pw[strcspn(pw, "\r\n")] = 0;
    } else if (getenv("IBP_PASSWORD")) {
        snprintf(pw, size, "%s", getenv("IBP_PASSWORD"));
    } else {
        return ibp_tool_usage_error(t, "give --password-file or set IBP_PASSWORD");
    }
    if (!pw[0])
        return ibp_tool_usage_error(t, "the password is empty");
    return EX_OK;
}

/* STATUS (change 0: an inquiry, with the password only when one is given) or STATUS CHANGE
 * (change 1: the password required) of the depot of the first operand, printed. */
static int status_of(ibp_tool_t *t, int change)
{
    char host[IBP_MAX_HOST], pw[256] = "";
    ibp_depot_status_t s;
    int port, rc, ex;
    if ((ex = ibp_tool_need_depot(t, host, sizeof host, &port)) != EX_OK)
        return ex;
    /* lns and LoCI answer an inquiry without the password; ACCRE 1.4 wants it */
    if ((change || t->password_file || getenv("IBP_PASSWORD")) &&
        (ex = read_password(t, pw, sizeof pw)) != EX_OK)
        return ex;
    int given = pw[0] != 0; /* read_password refuses an empty one */
    if (change)
        rc = ibp_status_change(t->client, host, port, t->rid, pw, t->hard, t->soft,
                               t->max_duration, &s);
    else
        rc = ibp_status(t->client, host, port, t->rid, given ? pw : NULL, &s);
    memset(pw, 0, sizeof pw);
    if (rc == IBP_E_WRONG_PASSWD && !given)
        return ibp_tool_fail(t, rc, "STATUS of %s:%d (this depot, as ACCRE 1.4's, wants the "
                             "password even for an inquiry: --password-file F or $IBP_PASSWORD)",
                             host, port);
    if (rc != IBP_OK)
        return ibp_tool_fail(t, rc, "%s of %s:%d", change ? "STATUS CHANGE" : "STATUS", host,
                             port);
    print_status(t, host, port, &s);
    return EX_OK;
}

int cmd_status(ibp_tool_t *t)
{
    return status_of(t, 0);
}

int cmd_status_change(ibp_tool_t *t)
{
    return status_of(t, 1);
}

