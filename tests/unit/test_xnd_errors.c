/* test_xnd_errors.c -- libexnode: every validation error with its code, message and line,
 * lax mode, and hostile input (entity bombs, external references, truncation, namespaces,
 * nesting, huge numbers, size limits).
 *
 * Cases are data: a document and the code and exact message the parser must give. */
#include <CUnit/CUnit.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lns_test.h"
#include "xnd.h"

#define NS "http://loci.cs.utk.edu/exnode"
#define H "<exnode xmlns:exnode=\"" NS "\">\n" /* line 1 */
#define E "</exnode>\n"
#define SIZE(v) "<exnode:metadata name=\"size\" type=\"integer\">" v "</exnode:metadata>\n"
#define MI(n, v) "<exnode:metadata name=\"" n "\" type=\"integer\">" v "</exnode:metadata>\n"
#define MS(n, v) "<exnode:metadata name=\"" n "\" type=\"string\">" v "</exnode:metadata>\n"
#define MO "<exnode:mapping>\n"
#define MC "</exnode:mapping>\n"
#define RCAP "<exnode:read>ibp://d1.example.org:6714/7#0123abcd/42/READ</exnode:read>\n"
#define WCAP "<exnode:write>ibp://d1.example.org:6714/7#0123abcd/43/WRITE</exnode:write>\n"
/* a valid mapping of [off, off+len) in 7 lines */
#define MAP(off, len) MO MI("exnode_offset", off) MI("logical_length", len) \
    MI("alloc_offset", "0") MI("alloc_length", len) RCAP MC
/* A mapping whose exnode_offset is v, which is not a decimal int64: the case and its message. */
#define BAD_OFFSET(v)                                                                      \
    {H MO MI("exnode_offset", v) MI("logical_length", "1") RCAP MC E, XND_E_NUMBER,        \
     "line 3: mapping 0: metadata 'exnode_offset': \"" v "\" is not a 64-bit decimal integer"}

typedef struct ecase {
    const char *doc;
    int code;
    const char *msg; /* exact */
} ecase_t;

static int parse_opts(const char *doc, const xnd_opts_t *o, char *err, size_t errlen)
{
    xnd_t *x = NULL;
    int rc = xnd_parse_buf_opts(doc, strlen(doc), o, &x, err, errlen);
    if ((rc == XND_OK) != (x != NULL))
        rc = 999; /* the contract: a model exactly when XND_OK */
    xnd_free(x);
    return rc;
}

static void run_cases(const ecase_t *c, size_t n, const xnd_opts_t *o)
{
    for (size_t i = 0; i < n; i++) {
        char err[512] = "";
        int rc = parse_opts(c[i].doc, o, err, sizeof err);
        if (rc != c[i].code || strcmp(err, c[i].msg) != 0)
            fprintf(stderr, "\n  case %zu: want %d \"%s\"\n           got  %d \"%s\"\n", i,
                    c[i].code, c[i].msg, rc, err);
        CU_ASSERT_EQUAL(rc, c[i].code);
        CU_ASSERT_STRING_EQUAL(err, c[i].msg);
    }
}

static void test_validation(void)
{
    static const ecase_t cases[] = {
        /* 0: the good one, with a gap [100,200) and one at the end [300,400) */
        {H SIZE("400") MAP("0", "100") MAP("200", "100") E, XND_OK, ""},
        {H SIZE("1000") MO MI("exnode_offset", "0") MI("logical_length", "-5")
             MI("alloc_offset", "0") MI("alloc_length", "100") RCAP MC E,
         XND_E_NUMBER, "line 5: mapping 0: logical_length is negative (-5)"},
        {H MAP("0", "10") MO MI("exnode_offset", "-1") MI("logical_length", "5") RCAP MC E,
         XND_E_NUMBER, "line 10: mapping 1: exnode_offset is negative (-1)"},
        {H MO MI("exnode_offset", "0") MI("logical_length", "5") MI("alloc_offset", "-3")
             RCAP MC E,
         XND_E_NUMBER, "line 5: mapping 0: alloc_offset is negative (-3)"},
        {H MO MI("exnode_offset", "0") MI("logical_length", "5") MI("e2e_blocksize", "-1")
             RCAP MC E,
         XND_E_NUMBER, "line 5: mapping 0: e2e_blocksize is negative (-1)"},
        /* 5: numbers that are not decimal int64 */
        {H MO MI("exnode_offset", "0") MI("logical_length", "99999999999999999999") RCAP MC E,
         XND_E_NUMBER, "line 4: mapping 0: metadata 'logical_length': \"99999999999999999999\" "
                       "is not a 64-bit decimal integer"},
        BAD_OFFSET("9223372036854775808"),
        BAD_OFFSET("+5"),
        BAD_OFFSET("0x10"),
        BAD_OFFSET("1e3"),
        /* 10 */
        BAD_OFFSET(""),
        BAD_OFFSET("1 2"),
        {H MO MI("exnode_offset", " 7\n") MI("logical_length", "1") MI("alloc_length", "1")
             RCAP MC E, XND_OK, ""}, /* surrounding whitespace is fine */
        {H "<exnode:metadata name=\"lorsversion\" type=\"double\">nan</exnode:metadata>\n" E,
         XND_E_NUMBER, "line 2: metadata 'lorsversion': \"nan\" is not a finite decimal "
                       "number"},
        {H "<exnode:metadata name=\"v\" type=\"double\">0x1p3</exnode:metadata>\n" E,
         XND_E_NUMBER, "line 2: metadata 'v': \"0x1p3\" is not a finite decimal number"},
        /* 15: ranges */
        {H MO MI("exnode_offset", "9223372036854775807") MI("logical_length", "1") RCAP MC E,
         XND_E_RANGE, "line 4: mapping 0: exnode_offset + logical_length overflows"},
        {H SIZE("1000") MO MI("exnode_offset", "900") MI("logical_length", "200")
             MI("alloc_length", "200") RCAP MC E,
         XND_E_RANGE, "line 5: mapping 0: runs past the end of the file (ends at 1100, "
                      "size 1000)"},
        {H MO MI("exnode_offset", "0") MI("logical_length", "100") MI("alloc_offset", "10")
             MI("alloc_length", "100") RCAP MC E,
         XND_E_RANGE, "line 6: mapping 0: alloc_offset 10 + logical_length 100 is past "
                      "alloc_length 100"},
        /* ... unless a function (compression) explains it */
        {H MO MI("exnode_offset", "0") MI("logical_length", "100") MI("alloc_offset", "0")
             MI("alloc_length", "37")
             "<exnode:function name=\"zlib_compress\">\n"
             "<exnode:argument name=\"output_length\" type=\"integer\">37</exnode:argument>\n"
             "</exnode:function>\n" RCAP MC E,
         XND_OK, ""},
        {H SIZE("-1") E, XND_E_NUMBER, "line 2: metadata 'size' is negative (-1)"},
        /* 20 */
        {H MS("size", "12") E, XND_E_NUMBER, "line 2: metadata 'size' has type string, not "
                                             "integer"},
        /* capabilities */
        {H MO MI("exnode_offset", "0") MI("logical_length", "5") MC E, XND_E_CAP,
         "line 2: mapping 0 has no capability (read, write or manage)"},
        {H MO MI("exnode_offset", "0") MI("logical_length", "5")
             "<exnode:read></exnode:read>\n" MC E,
         XND_E_CAP, "line 2: mapping 0 has no capability (read, write or manage)"},
        {H MO MI("exnode_offset", "0") MI("logical_length", "5")
             "<exnode:read>http://example.org/x/READ</exnode:read>\n" MC E,
         XND_E_CAP, "line 5: mapping 0: read capability \"http://example.org/x/READ\" is not "
                    "an IBP capability"},
        {H MO MI("exnode_offset", "0") MI("logical_length", "5")
             "<exnode:read>ibp://d1.example.org:6714/7#0123abcd/43/WRITE</exnode:read>\n" MC E,
         XND_E_CAP, "line 5: mapping 0: read capability ends in /WRITE, not /READ"},
        /* 25 */
        {H MO MI("exnode_offset", "0") MI("logical_length", "5")
             "<exnode:manage>ibp://d1.example.org:99999/7#0123abcd/43/MANAGE</exnode:manage>\n"
             MC E,
         XND_E_CAP, "line 5: mapping 0: manage capability \"ibp://d1.example.org:99999/7#0123"
                    "abcd/43/MANAGE\" is not an IBP capability"},
        {H MO MI("exnode_offset", "0") MI("logical_length", "5") MI("alloc_length", "5") WCAP
             MC E,
         XND_OK, ""}, /* a write capability alone is a capability */
        {H MO MI("exnode_offset", "0") MI("logical_length", "5") RCAP RCAP MC E, XND_E_FORMAT,
         "line 6: mapping 0: a second read capability"},
        /* structure */
        {H MO MI("logical_length", "5") RCAP MC E, XND_E_FORMAT,
         "line 2: mapping 0 has no exnode_offset"},
        {H MAP("0", "5") MO MI("exnode_offset", "5") RCAP MC E, XND_E_FORMAT,
         "line 9: mapping 1 has no logical_length"},
        /* 30 */
        {H MO MI("exnode_offset", "0") MI("exnode_offset", "0") MI("logical_length", "5") RCAP
             MC E,
         XND_E_FORMAT, "line 4: mapping 0: exnode_offset given twice"},
        {H MO MS("exnode_offset", "0") MI("logical_length", "5") RCAP MC E, XND_E_NUMBER,
         "line 3: mapping 0: exnode_offset has type string, not integer"},
        {H MO MI("exnode_offset", "0") MI("logical_length", "5") MI("start", "1") MS("start", "x")
             RCAP MC E,
         XND_E_FORMAT, "line 6: mapping 0: start given twice"},
        {H "<exnode:metadata name=\"x\">1</exnode:metadata>\n" E, XND_E_FORMAT,
         "line 2: metadata 'x' has no type"},
        {H "<exnode:metadata type=\"string\">1</exnode:metadata>\n" E, XND_E_FORMAT,
         "line 2: metadata without a name"},
        /* 35 */
        {H MO MI("exnode_offset", "0") MI("logical_length", "5")
             "<exnode:function name=\"a\"></exnode:function>\n"
             "<exnode:function name=\"b\"></exnode:function>\n" RCAP MC E,
         XND_E_FORMAT, "line 6: mapping 0: a second function"},
        {H MO "<exnode:function></exnode:function>\n" MC E, XND_E_FORMAT,
         "line 3: function without a name"},
        {H "\n  hello\n  there\n" E, XND_E_FORMAT,
         "line 3: text \"hello\" where only elements belong"},
        {H "<exnode:metadata name=\"m\" type=\"string\"><b/></exnode:metadata>\n" E,
         XND_E_FORMAT, "line 2: element <b> inside a value"},
        {H "<exnode:metadata name=\"m\" type=\"meta\"><other/></exnode:metadata>\n" E,
         XND_E_FORMAT, "line 2: <other> inside metadata of type meta"},
        /* 40 */
        {H "<exnode:read>ibp://d1.example.org:6714/7#0123abcd/42/READ</exnode:read>\n" E,
         XND_E_FORMAT, "line 2: <read> does not belong inside <exnode>"},
        {H MO "<exnode:mapping/>\n" MC E, XND_E_FORMAT,
         "line 3: <mapping> does not belong inside <mapping>"},
        {"", XND_E_XML, "empty document"},
        {H, XND_E_XML, "line 1: the document ends inside <exnode> (truncated?)"},
        {H MO MI("exnode_offset", "0"), XND_E_XML,
         "line 3: the document ends inside <exnode:mapping> (truncated?)"},
        {H E "<x/>", XND_E_XML, "line 3: Extra content at the end of the document"},
    };
    run_cases(cases, sizeof cases / sizeof cases[0], NULL);
}

/* Lax mode: the strict rules off, syntax and numbers still checked. */
static void test_lax(void)
{
    static const ecase_t cases[] = {
        {H SIZE("10") MO MI("exnode_offset", "0") MI("logical_length", "50") MC E, XND_OK, ""},
        {H MO MI("exnode_offset", "0") MI("logical_length", "5")
             "<exnode:read>nonsense</exnode:read>\n" MC E, XND_OK, ""},
        {H "<exnode:metadata name=\"x\">1</exnode:metadata>\n" E, XND_OK, ""},
        {H MO MS("exnode_offset", "3") MI("logical_length", "5") MC E, XND_OK, ""},
        {H MO MI("exnode_offset", "0") MI("logical_length", "-5") MC E, XND_E_NUMBER,
         "line 4: mapping 0: logical_length is negative (-5)"},
        {H MO MI("exnode_offset", "x") MI("logical_length", "5") MC E, XND_E_NUMBER,
         "line 3: mapping 0: metadata 'exnode_offset': \"x\" is not a 64-bit decimal integer"},
        {H MO MI("logical_length", "5") MC E, XND_E_FORMAT,
         "line 2: mapping 0 has no exnode_offset"},
    };
    xnd_opts_t o = {.lax = 1};
    run_cases(cases, sizeof cases / sizeof cases[0], &o);
}

static void test_billion_laughs(void)
{
    static const char doc[] =
        "<?xml version=\"1.0\"?>\n"
        "<!DOCTYPE exnode [\n"
        " <!ENTITY lol \"lol\">\n"
        " <!ENTITY lol1 \"&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;\">\n"
        " <!ENTITY lol2 \"&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;\">\n"
        " <!ENTITY lol3 \"&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;\">\n"
        " <!ENTITY lol4 \"&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;\">\n"
        " <!ENTITY lol5 \"&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;\">\n"
        " <!ENTITY lol6 \"&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;\">\n"
        " <!ENTITY lol7 \"&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;\">\n"
        " <!ENTITY lol8 \"&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;\">\n"
        " <!ENTITY lol9 \"&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;\">\n"
        "]>\n"
        "<exnode xmlns:exnode=\"" NS "\">\n"
        "<exnode:metadata name=\"filename\" type=\"string\">&lol9;</exnode:metadata>\n"
        "</exnode>\n";
    char err[256];
    double t0 = lns_test_cpu_s();
    int rc = parse_opts(doc, NULL, err, sizeof err);
    double dt = lns_test_cpu_s() - t0;
    CU_ASSERT_EQUAL(rc, XND_E_FORBIDDEN);
    CU_ASSERT_STRING_EQUAL(err, "line 2: DOCTYPE refused: an exNode has no DTD or entities");
    CU_ASSERT_TRUE(dt < 1); /* CPU time: refused, not expanded (seconds and gigabytes) */
}

/* A listening socket nobody should connect to. */
static int listener(int *port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 8) < 0 ||
        getsockname(fd, (struct sockaddr *)&a, &al) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}

static void test_external_refs(void)
{
    char doc[1024], err[256], *out;
    size_t len;
    int port = 0, lfd = listener(&port);
    xnd_t *x = NULL;
    CU_ASSERT_FATAL(lfd >= 0);

    /* external DTD over the network */
    snprintf(doc, sizeof doc,
             "<?xml version=\"1.0\"?>\n<!DOCTYPE exnode SYSTEM \"http://127.0.0.1:%d/x.dtd\">\n"
             H E, port);
    CU_ASSERT_EQUAL(parse_opts(doc, NULL, err, sizeof err), XND_E_FORBIDDEN);
    /* external entities: a local file and the network */
    snprintf(doc, sizeof doc,
             "<?xml version=\"1.0\"?>\n<!DOCTYPE exnode [\n"
             "<!ENTITY xxe SYSTEM \"file:///etc/passwd\">\n"
             "<!ENTITY net SYSTEM \"http://127.0.0.1:%d/e\">\n]>\n" H
             "<exnode:metadata name=\"f\" type=\"string\">&xxe;&net;</exnode:metadata>\n" E,
             port);
    CU_ASSERT_EQUAL(parse_opts(doc, NULL, err, sizeof err), XND_E_FORBIDDEN);
    CU_ASSERT_PTR_NULL(strstr(err, "root:"));
    /* an entity reference with no DOCTYPE at all */
    snprintf(doc, sizeof doc,
             H "<exnode:metadata name=\"f\" type=\"string\">&xxe;</exnode:metadata>\n" E);
    CU_ASSERT_EQUAL(parse_opts(doc, NULL, err, sizeof err), XND_E_FORBIDDEN);
    CU_ASSERT_STRING_EQUAL(err, "line 2: Entity 'xxe' not defined");
    snprintf(doc, sizeof doc,
             H "<exnode:metadata name=\"&xxe;\" type=\"string\">x</exnode:metadata>\n" E);
    CU_ASSERT_EQUAL(parse_opts(doc, NULL, err, sizeof err), XND_E_FORBIDDEN);
    /* XInclude is not processed: kept as a foreign element, never fetched */
    snprintf(doc, sizeof doc,
             H "<xi:include xmlns:xi=\"http://www.w3.org/2001/XInclude\" "
               "href=\"http://127.0.0.1:%d/inc\" parse=\"text\"/>\n" E, port);
    CU_ASSERT_EQUAL_FATAL(xnd_parse_buf(doc, strlen(doc), &x, err, sizeof err), XND_OK);
    CU_ASSERT_EQUAL(xnd_serialize(x, &out, &len, err, sizeof err), XND_OK);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "<xi:include xmlns:xi="));
    free(out);
    xnd_free(x);

    /* nobody knocked */
    CU_ASSERT_EQUAL(accept(lfd, NULL, NULL), -1);
    CU_ASSERT_TRUE(errno == EAGAIN || errno == EWOULDBLOCK);
    close(lfd);
}

static void test_namespaces(void)
{
    static const ecase_t cases[] = {
        {"<exnode xmlns:exnode=\"http://example.org/other\">\n"
         "<exnode:metadata name=\"a\" type=\"string\">x</exnode:metadata>\n</exnode>\n",
         XND_E_NAMESPACE, "line 1: the exnode element does not declare the namespace " NS},
        {"<exnode>\n<metadata name=\"a\" type=\"string\">x</metadata>\n</exnode>\n",
         XND_E_NAMESPACE, "line 1: the exnode element does not declare the namespace " NS},
        {"<inode xmlns:exnode=\"" NS "\"/>\n", XND_E_NAMESPACE,
         "line 1: root element is <inode>, not an exnode"},
        {"<o:exnode xmlns:o=\"urn:other\" xmlns:exnode=\"" NS "\"/>\n", XND_E_NAMESPACE,
         "line 1: root element is <exnode>, not an exnode"},
        {H "<o:mapping xmlns:o=\"urn:other\"/>\n" E, XND_E_NAMESPACE,
         "line 2: <o:mapping> is not in the exnode namespace"},
        {H "<metadata name=\"a\" type=\"string\">x</metadata>\n" E, XND_E_NAMESPACE,
         "line 2: <metadata> is not in the exnode namespace"},
        {H "<exnode:metadata name=\"a\" type=\"string\">x</exnode:metadata>\n<nons:x/>\n" E,
         XND_E_XML, "line 3: Namespace prefix nons on x is not defined"},
        /* any prefix, and the default namespace, are the same namespace */
        {"<ex:exnode xmlns:ex=\"" NS "\">\n"
         "<ex:metadata name=\"a\" type=\"string\">x</ex:metadata>\n"
         "<ex:mapping><ex:metadata name=\"exnode_offset\" type=\"integer\">0</ex:metadata>"
         "<ex:metadata name=\"logical_length\" type=\"integer\">1</ex:metadata>"
         "<read xmlns=\"" NS "\">ibp://d.example.org:6714/k/1/READ</read></ex:mapping>\n"
         "</ex:exnode>\n",
         XND_OK, ""},
    };
    run_cases(cases, sizeof cases / sizeof cases[0], NULL);
}

static void test_truncated(void)
{
    static const char doc[] = "<?xml version=\"1.0\"?>\n" H SIZE("20") MAP("0", "10")
        MO MI("exnode_offset", "10") MI("logical_length", "10")
        "<exnode:function name=\"f\"><exnode:argument name=\"a\" type=\"integer\">1"
        "</exnode:argument></exnode:function>\n" RCAP WCAP MC E;
    size_t n = strlen(doc), bad = 0;
    char err[256];
    xnd_t *x = NULL;
    CU_ASSERT_EQUAL_FATAL(xnd_parse_buf(doc, n, &x, err, sizeof err), XND_OK);
    xnd_free(x);
    /* every cut before the end of the root element fails cleanly (no crash, no leak) */
    for (size_t cut = 0; cut < n - 2; cut++) {
        x = NULL;
        int rc = xnd_parse_buf(doc, cut, &x, err, sizeof err);
        if (rc == XND_OK || x || !err[0]) {
            fprintf(stderr, "\n  cut at %zu: rc %d\n", cut, rc);
            bad++;
        }
        xnd_free(x);
    }
    CU_ASSERT_EQUAL(bad, 0);
}

static void test_nesting(void)
{
    size_t depth = 100000, len = 0;
    char *doc = malloc(depth * 80 + 200), err[256];
    xnd_t *x = NULL;
    CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
    len += (size_t)sprintf(doc + len, H);
    for (size_t i = 0; i < depth; i++)
        len += (size_t)sprintf(doc + len, "<exnode:metadata name=\"m\" type=\"meta\">");
    for (size_t i = 0; i < depth; i++)
        len += (size_t)sprintf(doc + len, "</exnode:metadata>");
    len += (size_t)sprintf(doc + len, "\n" E);
    double t0 = lns_test_cpu_s();
    CU_ASSERT_EQUAL(xnd_parse_buf(doc, len, &x, err, sizeof err), XND_E_LIMIT);
    CU_ASSERT_TRUE(lns_test_cpu_s() - t0 < 2); /* in CPU time, with a wide margin */
    CU_ASSERT_STRING_EQUAL(err, "line 2: elements nested deeper than 32");

    /* within the limit it parses; a larger limit can be asked for */
    len = (size_t)sprintf(doc, H);
    for (size_t i = 0; i < 30; i++)
        len += (size_t)sprintf(doc + len, "<exnode:metadata name=\"m\" type=\"meta\">");
    for (size_t i = 0; i < 30; i++)
        len += (size_t)sprintf(doc + len, "</exnode:metadata>");
    len += (size_t)sprintf(doc + len, "\n" E);
    CU_ASSERT_EQUAL(xnd_parse_buf(doc, len, &x, err, sizeof err), XND_OK);
    xnd_free(x);
    xnd_opts_t o = {.max_depth = 10};
    CU_ASSERT_EQUAL(xnd_parse_buf_opts(doc, len, &o, &x, err, sizeof err), XND_E_LIMIT);
    free(doc);
}

static void test_limits(void)
{
    static const char doc[] = H SIZE("20") MAP("0", "10") E;
    char err[256], *big;
    xnd_t *x = NULL;
    xnd_opts_t o = {.max_size = 64};
    CU_ASSERT_EQUAL(xnd_parse_buf_opts(doc, strlen(doc), &o, &x, err, sizeof err), XND_E_LIMIT);
    CU_ASSERT_PTR_NULL(x);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "larger than the limit of 64"));
    o.max_size = strlen(doc);
    CU_ASSERT_EQUAL(xnd_parse_buf_opts(doc, strlen(doc), &o, &x, err, sizeof err), XND_OK);
    xnd_free(x);
    x = NULL;
    /* the default limit, without reading the bytes */
    big = malloc(1);
    CU_ASSERT_EQUAL(xnd_parse_buf(big, (size_t)XND_DEFAULT_MAX_SIZE + 1, &x, err, sizeof err),
                    XND_E_LIMIT);
    free(big);
    /* binary junk, NUL bytes, bad UTF-8 */
    CU_ASSERT_EQUAL(xnd_parse_buf("\0\0\0\0", 4, &x, err, sizeof err), XND_E_XML);
    static const char nul[] = H "<exnode:metadata name=\"a\" type=\"string\">a\0b</exnode:metadata>" E;
    CU_ASSERT_EQUAL(xnd_parse_buf(nul, sizeof nul - 1, &x, err, sizeof err), XND_E_XML);
    static const char utf[] = H "<exnode:metadata name=\"a\" type=\"string\">\xff\xfe</exnode:metadata>" E;
    CU_ASSERT_EQUAL(xnd_parse_buf(utf, sizeof utf - 1, &x, err, sizeof err), XND_E_XML);
    /* bad arguments */
    CU_ASSERT_EQUAL(xnd_parse_buf(NULL, 5, &x, err, sizeof err), XND_E_INVAL);
    CU_ASSERT_EQUAL(xnd_parse_buf(doc, strlen(doc), NULL, err, sizeof err), XND_E_INVAL);
    CU_ASSERT_EQUAL(xnd_parse_buf(doc, strlen(doc), &x, NULL, 0), XND_OK); /* no message */
    xnd_free(x);
    CU_ASSERT_STRING_EQUAL(xnd_strerror(XND_E_FORBIDDEN),
                           "DOCTYPE, entity or external reference refused");
    CU_ASSERT_STRING_EQUAL(xnd_strerror(12345), "unknown error");
}

/* Integer metadata at the edges of int64 (not LoRS fields, so negatives are fine). */
static void test_huge_numbers(void)
{
    static const char doc[] = H
        "<exnode:metadata name=\"min\" type=\"integer\">-9223372036854775808</exnode:metadata>\n"
        "<exnode:metadata name=\"max\" type=\"integer\">9223372036854775807</exnode:metadata>\n"
        "<exnode:metadata name=\"zeros\" type=\"integer\">000000000000000000000000042</exnode:metadata>\n"
        "<exnode:metadata name=\"big\" type=\"double\">1e308</exnode:metadata>\n" E;
    static const ecase_t cases[] = {
        {H "<exnode:metadata name=\"m\" type=\"integer\">-9223372036854775809</exnode:metadata>"
           E, XND_E_NUMBER, "line 2: metadata 'm': \"-9223372036854775809\" is not a 64-bit "
                            "decimal integer"},
        {H "<exnode:metadata name=\"m\" type=\"integer\">-</exnode:metadata>" E, XND_E_NUMBER,
         "line 2: metadata 'm': \"-\" is not a 64-bit decimal integer"},
        {H "<exnode:metadata name=\"m\" type=\"double\">1e309</exnode:metadata>" E,
         XND_E_NUMBER, "line 2: metadata 'm': \"1e309\" is not a finite decimal number"},
        {H "<exnode:metadata name=\"m\" type=\"integer\">18446744073709551616</exnode:metadata>"
           E, XND_E_NUMBER, "line 2: metadata 'm': \"18446744073709551616\" is not a 64-bit "
                            "decimal integer"},
    };
    char err[256];
    xnd_t *x = NULL;
    int64_t v;
    CU_ASSERT_EQUAL_FATAL(xnd_parse_buf(doc, strlen(doc), &x, err, sizeof err), XND_OK);
    CU_ASSERT_EQUAL(xnd_meta_get_int(&x->meta, "min", &v), XND_OK);
    CU_ASSERT_EQUAL(v, INT64_MIN);
    CU_ASSERT_EQUAL(xnd_meta_get_int(&x->meta, "max", &v), XND_OK);
    CU_ASSERT_EQUAL(v, INT64_MAX);
    CU_ASSERT_EQUAL(xnd_meta_get_int(&x->meta, "zeros", &v), XND_OK);
    CU_ASSERT_EQUAL(v, 42);
    xnd_free(x);
    run_cases(cases, sizeof cases / sizeof cases[0], NULL);
}

static const lns_test_case tests[] = {
    {"validation: code, message, line", test_validation},
    {"lax mode", test_lax},
    {"billion laughs refused quickly", test_billion_laughs},
    {"external entities and DTDs never fetched", test_external_refs},
    {"namespaces", test_namespaces},
    {"every truncation fails cleanly", test_truncated},
    {"nesting depth limit", test_nesting},
    {"size limit, junk, arguments", test_limits},
    {"huge numbers", test_huge_numbers},
};

LNS_TEST_MAIN("exnode errors", tests)
