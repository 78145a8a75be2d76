/* ibp_proto.h -- the IBP request line: one struct, a strict parser and a formatter.
 *
 * The depot parses every request with ibp_req_parse(); libibp builds every request with
 * ibp_req_format().  Keeping both directions in one module means the unit tests can check
 * that format(parse(x)) round-trips, and the fuzzer has one entry point.  The parser trusts
 * nothing: it takes a buffer that may hold anything and either fills an ibp_req or says
 * which IBP error to answer (docs/ibp-protocol.md, "Parsing rules").
 *
 * Internal to libibp and ibp_depot; not installed.
 */
#ifndef LNS_IBP_PROTO_H
#define LNS_IBP_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "ibp.h"

#define IBP_MAX_LINE 4096      /* longest line libibp formats or reads, '\n' included */
/* The longest request line the depot takes, '\n' included: ACCRE 1.4 clients send vector
 * requests of thousands of offset/length pairs (14,694 and ~30,000 bytes in its ibp_test). */
#define IBP_MAX_REQ_LINE 65536
#define IBP_MAX_PASSWORD 128
/* The most ranges a vector request (VEC_WRITE 33, VEC_READ 35) may name (ACCRE 1.4's
 * IOVEC_MAX). */
#define IBP_MAX_VEC 4096

/* STATUS sub-commands of ACCRE 1.4 beyond INQ and CHANGE: "1 4 3 T" lists the resources,
 * "1 4 5 T" asks the version text. */
#define IBP_ST_RES 3
#define IBP_ST_VERSION 5
/* MANAGE CHNG, version 1: a duration of IBP_DUR_MAX asks for the resource's maximum (ours;
 * ACCRE reads every negative duration as "unchanged"). */
#define IBP_DUR_MAX (-2)

typedef struct ibp_req {
    int version;               /* 0 or 1 */
    int cmd;                   /* enum ibp_cmd */
    int subcmd;                /* MANAGE: enum ibp_mcmd; STATUS: enum ibp_scmd */

    /* the capability the request acts on (STORE, WRITE, LOAD, SEND, MANAGE) */
    char rid[IBP_MAX_RID];     /* ALLOCATE / STATUS resource; "<rid>" of a "<rid>#<key>" key */
    char key[IBP_MAX_KEY];     /* key without the rid# prefix */
    char typekey[IBP_MAX_KEY];

    /* ALLOCATE, CHNG */
    int reliability;
    int type;
    int64_t duration;          /* seconds; -1 = depot maximum (ALLOCATE); CHNG: 0 unchanged,
                                  -1 (version 0) or IBP_DUR_MAX (version 1) depot maximum */
    uint64_t size;             /* ALLOCATE/CHNG max size; TRUNCATE new size */

    /* STORE, WRITE, LOAD, SEND */
    uint64_t offset;
    uint64_t length;

    /* VEC_WRITE, VEC_READ: nvec ranges, written as text at vec[0..vec_len) of the parsed
     * line (read them with ibp_req_vec while the line is still there); length is their total,
     * offset the end of the last byte any range touches. */
    int nvec;
    const char *vec;
    size_t vec_len;
    const struct ibp_vec *ranges; /* VEC_READ, formatting: its nvec ranges */

    /* MANAGE */
    int captype;               /* INCR/DECR/PROBE/CHNG: 1 READ, 2 WRITE, 3 MANAGE */

    /* SEND */
    char target_cap[IBP_MAX_CAP];
    int src_timeout;
    int dst_timeout;
    int dst_client_timeout;
    char target_pin[IBP_PIN_LEN]; /* lns: the pin the target's key must have, "" not named */

    /* STATUS */
    char password[IBP_MAX_PASSWORD];
    int timeout_next_line;     /* version 0 STATUS whose password ended in a newline (the LoCI
                                  1.3.1 client's default "ibp\n"): the timeout is on the next
                                  line, which the depot still has to read */

    int timeout;               /* srv_timeout, seconds (last field) */
} ibp_req_t;

/* Parse one request line.  line[0..len) must not include the '\n' (a trailing '\r' is
 * accepted and ignored).  Fields are separated by runs of spaces; leading and trailing
 * spaces are ignored.  Returns IBP_OK and fills *req, or the negative IBP error to answer:
 *   IBP_E_PROT_VERS      first field not 0 or 1
 *   IBP_E_INVALID_CMD    unknown or unsupported command or MANAGE sub-command
 *   IBP_E_BAD_FORMAT     wrong number of fields, a field that is not what it should be,
 *                        NUL or control bytes, an overlong field
 *   IBP_E_INV_PAR_*      a well-formed number out of range (size, duration, reliability...)
 *   IBP_E_TYPE_NOT_SUPPORTED  ALLOCATE of a type other than BYTEARRAY
 * On error, req->version and req->cmd hold what could be read (or -1). */
int ibp_req_parse(const char *line, size_t len, ibp_req_t *req);

/* One range of a vector request. */
typedef struct ibp_vec {
    uint64_t off;
    uint64_t len;
} ibp_vec_t;

/* The ranges of a parsed vector request into v[0..req->nvec).  IBP_OK (the parser has
 * checked them already). */
int ibp_req_vec(const ibp_req_t *req, ibp_vec_t *v);

/* Format a request line, '\n' included, into buf.  Returns the length, or -1 if it does not
 * fit or the request cannot be expressed in req->version (e.g. WRITE in version 0). */
int ibp_req_format(const ibp_req_t *req, char *buf, size_t size);

/* Parse a number field of a reply: strict decimal, optional leading '-'.  Returns 0 on
 * success, -1 on junk or overflow. */
int ibp_parse_i64(const char *s, size_t len, int64_t *out);
int ibp_parse_u64(const char *s, size_t len, uint64_t *out);

/* One field of a request line: where it starts and its length. */
typedef struct ibp_field {
    const char *p;
    size_t n;
} ibp_field_t;
/* Split a request line on runs of spaces into f[0..max) (an empty field is two spaces, as
 * ACCRE's version-1 SEND has): the field count, or max + 1 if there are more (the first max
 * filled).  The one tokenizer of request lines, ibp_req_parse's and the depot's own. */
int ibp_req_split(const char *line, size_t len, ibp_field_t *f, int max);

/* Split a reply line into at most max fields (separated by runs of white space; leading and
 * trailing white space ignored).  Fields are NUL-terminated in place.  Returns the number
 * of fields, or -1 if there are more than max. */
int ibp_split_fields(char *line, char **fields, int max);

#endif
