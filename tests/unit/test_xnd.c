/* test_xnd.c -- libexnode: the real DLT sample, round trips, what we do not understand, the
 * metadata API, sorted view, range lookups and coverage.
 *
 * The sample (tests/fuzz/corpus_xnd/, a copy of the reference file written by lors_upload of
 * the DLT build) is read relative to this source file, so run the program from the top of
 * the tree (make and tests/run.sh do). */
#include <CUnit/CUnit.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lns_test.h"
#include "xnd.h"
#include "xnd_same.h"

#define SAMPLE "tests/fuzz/corpus_xnd/lors-2.0-dlt-64MiB-c2-F4.xnd"
#define MiB16 16777216

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;
    if (!f) {
        fprintf(stderr, "\n  cannot open %s (run from the top of the tree)\n", path);
        return NULL;
    }
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[n] = 0;
        *len = (size_t)n;
    }
    return buf;
}

static xnd_t *parse_str(const char *s)
{
    char err[256];
    xnd_t *x = NULL;
    int rc = xnd_parse_buf(s, strlen(s), &x, err, sizeof err);
    if (rc != XND_OK)
        fprintf(stderr, "\n  parse failed: %s\n", err);
    return x;
}

static xnd_t *parse_sample(char **text, size_t *len)
{
    char err[256];
    xnd_t *x = NULL;
    size_t n;
    char *buf = slurp(SAMPLE, &n);
    if (!buf)
        return NULL;
    if (xnd_parse_buf(buf, n, &x, err, sizeof err) != XND_OK)
        fprintf(stderr, "\n  sample: %s\n", err);
    if (text) {
        *text = buf;
        *len = n;
    } else {
        free(buf);
    }
    return x;
}

static int64_t utc(int y, int mo, int d, int h, int mi, int s)
{
    struct tm tm = {.tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d,
                    .tm_hour = h, .tm_min = mi, .tm_sec = s};
    return (int64_t)timegm(&tm);
}

/* ---- the sample ---- */

static void test_sample(void)
{
    xnd_t *x = parse_sample(NULL, NULL);
    const char *s;
    int64_t v;
    double d;
    static const int64_t offsets[8] = {3 * MiB16, 3 * MiB16, 2 * MiB16, 2 * MiB16,
                                       MiB16,     MiB16,     0,         0};
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_EQUAL(x->nmaps, 8);
    CU_ASSERT_EQUAL(x->meta.n, 9);

    CU_ASSERT_EQUAL(xnd_meta_get_string(&x->meta, "Version", &s), XND_OK);
    CU_ASSERT_STRING_EQUAL(s, "3.0");
    CU_ASSERT_EQUAL(xnd_meta_get_int(&x->meta, "created", &v), XND_OK);
    CU_ASSERT_EQUAL(v, 1795344053);
    CU_ASSERT_EQUAL(xnd_meta_get_double(&x->meta, "duration", &d), XND_OK);
    CU_ASSERT_DOUBLE_EQUAL(d, 86400.0, 1e-9);
    CU_ASSERT_EQUAL(xnd_meta_get_string(&x->meta, "filename", &s), XND_OK);
    CU_ASSERT_STRING_EQUAL(s, "rand64M.bin");
    CU_ASSERT_EQUAL(xnd_meta_get_double(&x->meta, "lorsversion", &d), XND_OK);
    CU_ASSERT_DOUBLE_EQUAL(d, 2.0, 1e-9);
    CU_ASSERT_EQUAL(xnd_meta_get_string(&x->meta, "mode", &s), XND_OK);
    CU_ASSERT_STRING_EQUAL(s, "file");
    CU_ASSERT_EQUAL(xnd_meta_get_int(&x->meta, "modified", &v), XND_OK);
    CU_ASSERT_EQUAL(v, 1795344053);
    /* the empty parent that crashed the original reader */
    CU_ASSERT_EQUAL(xnd_meta_get_string(&x->meta, "parent", &s), XND_OK);
    CU_ASSERT_STRING_EQUAL(s, "");
    CU_ASSERT_EQUAL(xnd_size(x), 4 * MiB16);
    CU_ASSERT_EQUAL(xnd_meta_get_int(&x->meta, "filename", &v), XND_E_TYPE);
    CU_ASSERT_EQUAL(xnd_meta_get_int(&x->meta, "nosuch", &v), XND_E_NOTFOUND);
    CU_ASSERT_STRING_EQUAL(x->meta.items[0].name, "Version");
    CU_ASSERT_STRING_EQUAL(x->meta.items[8].name, "size");
    CU_ASSERT_EQUAL(x->meta.items[7].line, 10);

    for (size_t i = 0; i < x->nmaps; i++) {
        const xnd_mapping_t *m = x->maps[i];
        CU_ASSERT_EQUAL(m->exnode_offset, offsets[i]);
        CU_ASSERT_EQUAL(m->logical_length, MiB16);
        CU_ASSERT_EQUAL(m->alloc_offset, 0);
        CU_ASSERT_EQUAL(m->alloc_length, MiB16);
        CU_ASSERT_EQUAL(m->e2e_blocksize, 0);
        CU_ASSERT_TRUE(m->has_e2e_blocksize);
        CU_ASSERT_EQUAL(m->meta.n, 0);
        CU_ASSERT_PTR_NULL(m->func);
        for (int k = 0; k < 3; k++)
            CU_ASSERT_PTR_NOT_NULL(m->cap[k]);
        CU_ASSERT_EQUAL(m->line[XND_L_MAPPING], 12 + 12 * (int)i);
    }
    const xnd_mapping_t *m0 = x->maps[0];
    CU_ASSERT_STRING_EQUAL(m0->start.text, "2026-11-22 10:40:50");
    CU_ASSERT_STRING_EQUAL(m0->end.text, "2026-11-23 10:40:50");
    CU_ASSERT_EQUAL(m0->start.type, XND_STRING);
    CU_ASSERT_EQUAL(m0->start.epoch, utc(2026, 11, 22, 10, 40, 50));
    CU_ASSERT_EQUAL(m0->end.epoch, utc(2026, 11, 23, 10, 40, 50));
    CU_ASSERT_EQUAL(x->maps[1]->end.epoch - x->maps[1]->start.epoch, 86400);
    CU_ASSERT_EQUAL(strncmp(m0->cap[XND_READ], "ibp://127.0.0.3:16716/IBP-1139444422", 36), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(m0->cap[XND_READ], "/399394882/READ"));
    CU_ASSERT_PTR_NOT_NULL(strstr(m0->cap[XND_WRITE], "/1419651639/WRITE"));
    CU_ASSERT_PTR_NOT_NULL(strstr(m0->cap[XND_MANAGE], "/2036542192/MANAGE"));
    CU_ASSERT_PTR_NOT_NULL(strstr(x->maps[7]->cap[XND_MANAGE], "/694573/MANAGE"));
    CU_ASSERT_EQUAL(m0->line[XND_L_READ], 20);

    /* two copies of four fragments: everything covered twice, no gap */
    xnd_range_t *r;
    size_t nr;
    CU_ASSERT_EQUAL_FATAL(xnd_coverage(x, NULL, NULL, &r, &nr), XND_OK);
    CU_ASSERT_EQUAL(nr, 1);
    if (nr == 1) {
        CU_ASSERT_EQUAL(r[0].offset, 0);
        CU_ASSERT_EQUAL(r[0].length, 4 * MiB16);
        CU_ASSERT_EQUAL(r[0].count, 2);
    }
    free(r);

    size_t n;
    xnd_mapping_t *const *s8 = xnd_sorted(x, &n);
    CU_ASSERT_EQUAL_FATAL(n, 8);
    for (size_t i = 0; i < n; i++)
        CU_ASSERT_EQUAL(s8[i]->exnode_offset, (int64_t)(i / 2) * MiB16);
    CU_ASSERT_PTR_EQUAL(s8[0], x->maps[6]); /* equal keys keep document order */
    CU_ASSERT_PTR_EQUAL(s8[1], x->maps[7]);

    xnd_mapping_t **f;
    CU_ASSERT_EQUAL(xnd_replicas(x, 0, MiB16, &f, &n), XND_OK);
    CU_ASSERT_EQUAL(n, 2);
    free(f);
    CU_ASSERT_EQUAL(xnd_find(x, MiB16 - 1, 2, &f, &n), XND_OK);
    CU_ASSERT_EQUAL(n, 4);
    free(f);
    CU_ASSERT_EQUAL(xnd_replicas(x, MiB16 - 1, 2, &f, &n), XND_OK);
    CU_ASSERT_EQUAL(n, 0);
    CU_ASSERT_PTR_NULL(f);
    xnd_free(x);
}

/* Serializing the sample gives the sample back, byte for byte; parse(serialize) is the same
 * model. */
static void test_roundtrip(void)
{
    char *orig, *out, *out2, err[256];
    size_t olen, len, len2;
    xnd_t *x = parse_sample(&orig, &olen), *y = NULL;
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_EQUAL_FATAL(xnd_serialize(x, &out, &len, err, sizeof err), XND_OK);
    CU_ASSERT_EQUAL(len, strlen(out));
    CU_ASSERT_EQUAL(len, olen);
    CU_ASSERT_TRUE(len == olen && memcmp(out, orig, len) == 0);
    CU_ASSERT_EQUAL_FATAL(xnd_parse_buf(out, len, &y, err, sizeof err), XND_OK);
    CU_ASSERT_TRUE(same_model(x, y));
    CU_ASSERT_EQUAL(xnd_serialize(y, &out2, &len2, err, sizeof err), XND_OK);
    CU_ASSERT_TRUE(len == len2 && memcmp(out, out2, len) == 0);
    free(out2);
    free(out);
    free(orig);
    xnd_free(x);
    xnd_free(y);
}

/* An exNode from "another tool": unknown metadata (nested, odd types), an unknown function
 * tree, foreign elements and namespace declarations. */
static const char *const foreign_doc =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<exnode xmlns:exnode=\"http://loci.cs.utk.edu/exnode\" xmlns:dlt=\"urn:example:dlt\"\n"
    "        dlt:origin=\"site &amp; &lt;A&gt; &quot;q&quot;\">\n"
    "  <exnode:metadata name=\"filename\" type=\"string\">a &amp; b &lt;c&gt;.mpg</exnode:metadata>\n"
    "  <exnode:metadata name=\"policy\" type=\"meta\">\n"
    "    <exnode:metadata name=\"copies\" type=\"integer\">3</exnode:metadata>\n"
    "    <exnode:metadata name=\"where\" type=\"meta\">\n"
    "      <exnode:metadata name=\"city\" type=\"string\">Knoxville</exnode:metadata>\n"
    "    </exnode:metadata>\n"
    "  </exnode:metadata>\n"
    "  <exnode:metadata name=\"flag\" type=\"boolean\">true</exnode:metadata>\n"
    "  <exnode:metadata name=\"size\" type=\"integer\">300</exnode:metadata>\n"
    "  <dlt:signature alg=\"x\">abc<dlt:part n=\"1\"/> tail </dlt:signature>\n"
    "  <exnode:mapping>\n"
    "    <exnode:metadata name=\"aaa_first\" type=\"string\">before</exnode:metadata>\n"
    "    <exnode:metadata name=\"exnode_offset\" type=\"integer\">0</exnode:metadata>\n"
    "    <exnode:metadata name=\"logical_length\" type=\"integer\">100</exnode:metadata>\n"
    "    <exnode:metadata name=\"alloc_length\" type=\"integer\">120</exnode:metadata>\n"
    "    <exnode:metadata name=\"alloc_offset\" type=\"integer\">0</exnode:metadata>\n"
    "    <exnode:metadata name=\"start\" type=\"integer\">1700000000</exnode:metadata>\n"
    "    <exnode:metadata name=\"zzz_last\" type=\"double\">1.5e3</exnode:metadata>\n"
    "    <exnode:function name=\"rot13_frobnicate\">\n"
    "      <exnode:argument name=\"rounds\" type=\"integer\">13</exnode:argument>\n"
    "      <exnode:argument name=\"KEY\" type=\"string\">s3cr&amp;t</exnode:argument>\n"
    "      <exnode:metadata name=\"note\" type=\"string\">inner</exnode:metadata>\n"
    "      <exnode:function name=\"checksum\">\n"
    "        <exnode:argument name=\"blocksize\" type=\"integer\">1024</exnode:argument>\n"
    "      </exnode:function>\n"
    "    </exnode:function>\n"
    "    <exnode:read>ibp://d1.example.org:6714/1#k1/11/READ</exnode:read>\n"
    "    <dlt:hint>fast</dlt:hint>\n"
    "  </exnode:mapping>\n"
    "  <exnode:mapping>\n"
    "    <exnode:metadata name=\"exnode_offset\" type=\"integer\">100</exnode:metadata>\n"
    "    <exnode:metadata name=\"logical_length\" type=\"integer\">100</exnode:metadata>\n"
    "    <exnode:metadata name=\"alloc_length\" type=\"integer\">100</exnode:metadata>\n"
    "    <exnode:metadata name=\"alloc_offset\" type=\"integer\">0</exnode:metadata>\n"
    "    <exnode:read>ibp://d2.example.org:6714/2#k2/12/READ</exnode:read>\n"
    "  </exnode:mapping>\n"
    "</exnode>\n";

static void check_foreign(const xnd_t *x, size_t first_maps, size_t nmeta)
{
    const xnd_meta_t *p = xnd_meta_find(&x->meta, "policy"), *fl;
    const xnd_mapping_t *m;
    const char *s;
    int64_t v;
    CU_ASSERT_EQUAL_FATAL(x->meta.n, nmeta);
    CU_ASSERT_STRING_EQUAL(x->meta.items[0].name, "filename");
    CU_ASSERT_STRING_EQUAL(x->meta.items[1].name, "policy");
    CU_ASSERT_STRING_EQUAL(x->meta.items[2].name, "flag");
    CU_ASSERT_STRING_EQUAL(x->meta.items[3].name, "size");
    CU_ASSERT_EQUAL(xnd_meta_get_string(&x->meta, "filename", &s), XND_OK);
    CU_ASSERT_STRING_EQUAL(s, "a & b <c>.mpg");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(p->type, XND_META);
    CU_ASSERT_EQUAL(p->sub.n, 2);
    CU_ASSERT_EQUAL(xnd_meta_get_int(&p->sub, "copies", &v), XND_OK);
    CU_ASSERT_EQUAL(v, 3);
    CU_ASSERT_EQUAL_FATAL(p->sub.n, 2);
    CU_ASSERT_EQUAL(xnd_meta_get_string(&p->sub.items[1].sub, "city", &s), XND_OK);
    CU_ASSERT_STRING_EQUAL(s, "Knoxville");
    fl = xnd_meta_find(&x->meta, "flag");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fl);
    CU_ASSERT_EQUAL(fl->type, XND_OTHER);
    CU_ASSERT_STRING_EQUAL(fl->type_name, "boolean");
    CU_ASSERT_STRING_EQUAL(fl->text, "true");

    CU_ASSERT_TRUE_FATAL(x->nmaps >= first_maps && first_maps >= 1);
    m = x->maps[0];
    CU_ASSERT_EQUAL_FATAL(m->meta.n, 2);
    CU_ASSERT_STRING_EQUAL(m->meta.items[0].name, "aaa_first");
    CU_ASSERT_STRING_EQUAL(m->meta.items[1].name, "zzz_last");
    CU_ASSERT_STRING_EQUAL(m->meta.items[1].text, "1.5e3");
    CU_ASSERT_DOUBLE_EQUAL(m->meta.items[1].d, 1500.0, 1e-9);
    CU_ASSERT_EQUAL(m->start.type, XND_INTEGER);
    CU_ASSERT_EQUAL(m->start.epoch, 1700000000);
    CU_ASSERT_PTR_NULL(m->end.text);
    CU_ASSERT_FALSE(m->has_e2e_blocksize);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m->func);
    CU_ASSERT_STRING_EQUAL(m->func->name, "rot13_frobnicate");
    CU_ASSERT_EQUAL(m->func->args.n, 2);
    CU_ASSERT_EQUAL(xnd_meta_get_string(&m->func->args, "KEY", &s), XND_OK);
    CU_ASSERT_STRING_EQUAL(s, "s3cr&t");
    CU_ASSERT_EQUAL(xnd_meta_get_string(&m->func->meta, "note", &s), XND_OK);
    CU_ASSERT_EQUAL_FATAL(m->func->nsubs, 1);
    CU_ASSERT_STRING_EQUAL(m->func->subs[0]->name, "checksum");
    CU_ASSERT_EQUAL(xnd_meta_get_int(&m->func->subs[0]->args, "blocksize", &v), XND_OK);
    CU_ASSERT_EQUAL(v, 1024);
    CU_ASSERT_PTR_NULL(m->cap[XND_WRITE]);
}

static void test_unknown_survives(void)
{
    char *out, err[256];
    size_t len;
    xnd_t *x = parse_str(foreign_doc), *y = NULL;
    xnd_mapping_t *m;
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    check_foreign(x, 2, 4);

    /* read-modify-write: drop mapping 1, add a new one, write, read again */
    CU_ASSERT_EQUAL(xnd_remove(x, 1), XND_OK);
    CU_ASSERT_EQUAL(xnd_remove(x, 5), XND_E_NOTFOUND);
    m = xnd_mapping_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    m->exnode_offset = 100;
    m->logical_length = 200;
    m->alloc_length = 200;
    CU_ASSERT_EQUAL(xnd_mapping_set_cap(m, XND_READ, "ibp://d3.example.org:6714/3#k3/13/READ"),
                    XND_OK);
    CU_ASSERT_EQUAL(xnd_mapping_set_cap(m, XND_MANAGE,
                                        "ibp://d3.example.org:6714/3#k3/13/MANAGE"), XND_OK);
    CU_ASSERT_EQUAL(xnd_mapping_set_time(m, 1, utc(2030, 1, 2, 3, 4, 5)), XND_OK);
    CU_ASSERT_STRING_EQUAL(m->end.text, "2030-01-02 03:04:05");
    CU_ASSERT_EQUAL(xnd_append(x, m), XND_OK);
    CU_ASSERT_EQUAL(xnd_validate(x, 0, err, sizeof err), XND_OK);
    CU_ASSERT_EQUAL_FATAL(xnd_serialize(x, &out, &len, err, sizeof err), XND_OK);
    /* the foreign elements, as they were */
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "xmlns:dlt=\"urn:example:dlt\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "dlt:origin=\"site &amp; &lt;A&gt; &quot;q&quot;\""));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(out, "<dlt:signature alg=\"x\">abc<dlt:part n=\"1\"/> tail </dlt:signature>"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "<dlt:hint>fast</dlt:hint>"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "type=\"boolean\">true<"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "lorsversion")); /* added: the model had none */
    CU_ASSERT_EQUAL_FATAL(xnd_parse_buf(out, len, &y, err, sizeof err), XND_OK);
    check_foreign(y, 2, 5); /* + lorsversion */
    CU_ASSERT_STRING_EQUAL(y->meta.items[4].name, "lorsversion");
    CU_ASSERT_EQUAL(y->nmaps, 2);
    CU_ASSERT_EQUAL(y->maps[1]->logical_length, 200);
    CU_ASSERT_EQUAL(y->maps[1]->end.epoch, utc(2030, 1, 2, 3, 4, 5));
    CU_ASSERT_PTR_NULL(y->maps[1]->cap[XND_WRITE]);
    CU_ASSERT_TRUE(same_mapping(x->maps[0], y->maps[0]));
    free(out);
    xnd_free(x);
    xnd_free(y);
}

static void test_copy(void)
{
    xnd_t *x = parse_str(foreign_doc), *y = xnd_new();
    xnd_mapping_t *c;
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_PTR_NOT_NULL_FATAL(y);
    CU_ASSERT_EQUAL(xnd_meta_list_copy(&y->meta, &x->meta), XND_OK);
    for (size_t i = 0; i < x->nmaps; i++) {
        c = xnd_mapping_copy(x->maps[i]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT_EQUAL(xnd_append(y, c), XND_OK);
    }
    CU_ASSERT_TRUE(same_model(x, y));
    xnd_free(x);
    xnd_free(y);
}

/* ---- the metadata API ---- */

static void test_meta_api(void)
{
    xnd_meta_list_t l = {0}, *sub, *sub2;
    const char *s;
    int64_t v;
    double d;
    CU_ASSERT_EQUAL(xnd_meta_set_string(&l, "a", "x"), XND_OK);
    CU_ASSERT_EQUAL(xnd_meta_set_int(&l, "b", -42), XND_OK);
    CU_ASSERT_EQUAL(xnd_meta_set_double(&l, "c", 0.1), XND_OK);
    CU_ASSERT_EQUAL(xnd_meta_set_int(&l, "big", INT64_MIN), XND_OK);
    CU_ASSERT_EQUAL(l.n, 4);
    CU_ASSERT_STRING_EQUAL(l.items[1].text, "-42");
    CU_ASSERT_STRING_EQUAL(l.items[2].text, "0.1");
    CU_ASSERT_STRING_EQUAL(l.items[3].text, "-9223372036854775808");
    CU_ASSERT_EQUAL(xnd_meta_get_int(&l, "b", &v), XND_OK);
    CU_ASSERT_EQUAL(v, -42);
    CU_ASSERT_EQUAL(xnd_meta_get_double(&l, "b", &d), XND_OK); /* integers read as doubles */
    CU_ASSERT_DOUBLE_EQUAL(d, -42.0, 0);
    CU_ASSERT_EQUAL(xnd_meta_get_double(&l, "c", &d), XND_OK);
    CU_ASSERT_EQUAL(d, 0.1);
    CU_ASSERT_EQUAL(xnd_meta_get_string(&l, "b", &s), XND_E_TYPE);
    CU_ASSERT_EQUAL(xnd_meta_get_double(&l, "a", &d), XND_E_TYPE);
    CU_ASSERT_EQUAL(xnd_meta_set_double(&l, "c", 1.0 / 3.0), XND_OK);
    CU_ASSERT_EQUAL(xnd_meta_get_double(&l, "c", &d), XND_OK);
    CU_ASSERT_EQUAL(d, 1.0 / 3.0);
    CU_ASSERT_EQUAL(xnd_meta_set_double(&l, "c", 1.0 / 0.0), XND_E_INVAL);

    /* replacing keeps the position; a new type replaces the old one */
    CU_ASSERT_EQUAL(xnd_meta_set_string(&l, "b", "now a string"), XND_OK);
    CU_ASSERT_EQUAL(l.n, 4);
    CU_ASSERT_STRING_EQUAL(l.items[1].name, "b");
    CU_ASSERT_EQUAL(l.items[1].type, XND_STRING);
    CU_ASSERT_EQUAL(xnd_meta_get_string(&l, "b", &s), XND_OK);
    CU_ASSERT_STRING_EQUAL(s, "now a string");

    CU_ASSERT_EQUAL(xnd_meta_set_meta(&l, "nest", &sub), XND_OK);
    CU_ASSERT_EQUAL(xnd_meta_set_int(sub, "depth", 1), XND_OK);
    CU_ASSERT_EQUAL(xnd_meta_set_meta(sub, "deeper", &sub2), XND_OK);
    CU_ASSERT_EQUAL(xnd_meta_set_string(sub2, "leaf", "yes"), XND_OK);
    CU_ASSERT_EQUAL(xnd_meta_get_meta(&l, "nest", &sub), XND_OK);
    CU_ASSERT_EQUAL(xnd_meta_get_meta(sub, "deeper", &sub2), XND_OK);
    CU_ASSERT_EQUAL(xnd_meta_get_string(sub2, "leaf", &s), XND_OK);
    CU_ASSERT_STRING_EQUAL(s, "yes");
    CU_ASSERT_EQUAL(xnd_meta_get_meta(&l, "a", &sub), XND_E_TYPE);

    CU_ASSERT_EQUAL(xnd_meta_remove(&l, "a"), XND_OK);
    CU_ASSERT_EQUAL(xnd_meta_remove(&l, "a"), XND_E_NOTFOUND);
    CU_ASSERT_EQUAL(l.n, 4);
    CU_ASSERT_STRING_EQUAL(l.items[0].name, "b");

    /* into an exNode, out as XML, back in */
    xnd_t *x = xnd_new(), *y = NULL;
    char *out, err[256];
    size_t len;
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_EQUAL(xnd_meta_list_copy(&x->meta, &l), XND_OK);
    CU_ASSERT_EQUAL(xnd_meta_set_string(&x->meta, "odd", "tab\there\r\nline \"q\" 'a' <&>"),
                    XND_OK);
    CU_ASSERT_EQUAL(xnd_set_size(x, 0), XND_OK);
    CU_ASSERT_EQUAL(xnd_serialize(x, &out, &len, err, sizeof err), XND_OK);
    CU_ASSERT_EQUAL_FATAL(xnd_parse_buf(out, len, &y, err, sizeof err), XND_OK);
    CU_ASSERT_EQUAL(xnd_meta_get_string(&y->meta, "odd", &s), XND_OK);
    CU_ASSERT_STRING_EQUAL(s, "tab\there\r\nline \"q\" 'a' <&>");
    CU_ASSERT_EQUAL(xnd_meta_get_meta(&y->meta, "nest", &sub), XND_OK);
    CU_ASSERT_EQUAL(xnd_meta_get_meta(sub, "deeper", &sub2), XND_OK);
    CU_ASSERT_EQUAL(xnd_meta_get_string(sub2, "leaf", &s), XND_OK);
    CU_ASSERT_EQUAL(xnd_size(y), 0);
    free(out);
    xnd_free(y);

    /* what XML cannot carry is refused, not written */
    CU_ASSERT_EQUAL(xnd_meta_set_string(&x->meta, "bad", "bell\a"), XND_OK);
    CU_ASSERT_EQUAL(xnd_serialize(x, &out, &len, err, sizeof err), XND_E_INVAL);
    CU_ASSERT_EQUAL(xnd_meta_set_string(&x->meta, "bad", "\xff\xfe"), XND_OK);
    CU_ASSERT_EQUAL(xnd_serialize(x, &out, &len, err, sizeof err), XND_E_INVAL);
    CU_ASSERT_EQUAL(xnd_meta_set_string(&x->meta, "bad", "caf\xc3\xa9 \xe2\x82\xac"), XND_OK);
    CU_ASSERT_EQUAL(xnd_serialize(x, &out, &len, err, sizeof err), XND_OK);
    free(out);
    xnd_free(x);
    xnd_meta_list_clear(&l);
}

/* ---- ranges and coverage ---- */

static xnd_mapping_t *mk(int64_t off, int64_t len)
{
    xnd_mapping_t *m = xnd_mapping_new();
    char cap[128];
    if (!m)
        return NULL;
    m->exnode_offset = off;
    m->logical_length = len;
    m->alloc_length = len;
    snprintf(cap, sizeof cap, "ibp://d.example.org:6714/%" PRId64 "#k/1/READ", off);
    xnd_mapping_set_cap(m, XND_READ, cap);
    return m;
}

/* Two groups: the mappings below offset 100, and the others. */
static size_t group_low(const xnd_mapping_t *m, void *arg)
{
    (void)arg;
    return m->exnode_offset < 100 ? 0 : 1;
}

static int odd_only(const xnd_mapping_t *m, void *arg)
{
    (void)arg;
    return (m->exnode_offset / 50) % 2 == 1;
}

/* The ranges r[0..n) (freed here) are want[0..nwant). */
static void ranges_are(xnd_range_t *r, size_t n, const xnd_range_t *want, size_t nwant)
{
    CU_ASSERT_EQUAL_FATAL(n, nwant);
    for (size_t i = 0; i < n; i++) {
        CU_ASSERT_EQUAL(r[i].offset, want[i].offset);
        CU_ASSERT_EQUAL(r[i].length, want[i].length);
        CU_ASSERT_EQUAL(r[i].count, want[i].count);
    }
    free(r);
}

static void test_coverage(void)
{
    xnd_t *x = xnd_new();
    xnd_range_t *r;
    xnd_mapping_t **f;
    size_t n;
    char err[256];
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_EQUAL(xnd_set_size(x, 400), XND_OK);
    xnd_append(x, mk(200, 100));
    xnd_append(x, mk(50, 100));
    xnd_append(x, mk(0, 100));
    CU_ASSERT_EQUAL(xnd_validate(x, 0, err, sizeof err), XND_OK); /* gaps are allowed */

    CU_ASSERT_EQUAL_FATAL(xnd_coverage(x, NULL, NULL, &r, &n), XND_OK);
    static const xnd_range_t want[] = {{0, 50, 1},    {50, 50, 2},   {100, 50, 1},
                                       {150, 50, 0},  {200, 100, 1}, {300, 100, 0}};
    ranges_are(r, n, want, 6);

    /* only the mappings that count (e.g. the live ones) */
    CU_ASSERT_EQUAL_FATAL(xnd_coverage(x, odd_only, NULL, &r, &n), XND_OK);
    static const xnd_range_t odd[] = {{0, 50, 0}, {50, 100, 1}, {150, 250, 0}};
    ranges_are(r, n, odd, 3);

    /* grouped: the mappings at 50 and 0 in one group (one depot) count once where they overlap */
    CU_ASSERT_EQUAL_FATAL(xnd_coverage_by(x, NULL, group_low, NULL, &r, &n), XND_OK);
    static const xnd_range_t grouped[] = {{0, 150, 1}, {150, 50, 0}, {200, 100, 1},
                                          {300, 100, 0}};
    ranges_are(r, n, grouped, 4);

    CU_ASSERT_EQUAL(xnd_find(x, 120, 100, &f, &n), XND_OK); /* [120,220) */
    CU_ASSERT_EQUAL_FATAL(n, 2);
    CU_ASSERT_EQUAL(f[0]->exnode_offset, 50);
    CU_ASSERT_EQUAL(f[1]->exnode_offset, 200);
    free(f);
    CU_ASSERT_EQUAL(xnd_find(x, 150, 50, &f, &n), XND_OK); /* the gap */
    CU_ASSERT_EQUAL(n, 0);
    CU_ASSERT_EQUAL(xnd_find(x, 0, 0, &f, &n), XND_OK);
    CU_ASSERT_EQUAL(n, 0);
    CU_ASSERT_EQUAL(xnd_find(x, -1, 10, &f, &n), XND_E_INVAL);
    CU_ASSERT_EQUAL(xnd_find(x, INT64_MAX, 10, &f, &n), XND_E_INVAL);
    CU_ASSERT_EQUAL(xnd_replicas(x, 60, 30, &f, &n), XND_OK);
    CU_ASSERT_EQUAL_FATAL(n, 2);
    CU_ASSERT_EQUAL(f[0]->exnode_offset, 0);
    CU_ASSERT_EQUAL(f[1]->exnode_offset, 50);
    free(f);

    /* edits: the sorted view follows */
    x->maps[0]->exnode_offset = 150; /* [150,250) now fills the gap */
    xnd_changed(x);
    CU_ASSERT_EQUAL(xnd_find(x, 150, 50, &f, &n), XND_OK);
    CU_ASSERT_EQUAL(n, 1);
    free(f);
    CU_ASSERT_EQUAL(xnd_remove(x, 0), XND_OK);
    CU_ASSERT_EQUAL(xnd_find(x, 150, 50, &f, &n), XND_OK);
    CU_ASSERT_EQUAL(n, 0);
    CU_ASSERT_EQUAL(xnd_sorted(x, &n)[0]->exnode_offset, 0);
    CU_ASSERT_EQUAL(n, 2);

    /* a long mapping early on must still be found from far later offsets */
    xnd_append(x, mk(10, 390));
    xnd_append(x, mk(20, 5));
    CU_ASSERT_EQUAL(xnd_find(x, 390, 5, &f, &n), XND_OK);
    CU_ASSERT_EQUAL_FATAL(n, 1);
    CU_ASSERT_EQUAL(f[0]->exnode_offset, 10);
    free(f);

    /* an empty exNode of a known size is one gap */
    xnd_t *e = xnd_new();
    CU_ASSERT_EQUAL(xnd_set_size(e, 10), XND_OK);
    CU_ASSERT_EQUAL_FATAL(xnd_coverage(e, NULL, NULL, &r, &n), XND_OK);
    CU_ASSERT_EQUAL_FATAL(n, 1);
    CU_ASSERT_EQUAL(r[0].count, 0);
    CU_ASSERT_EQUAL(r[0].length, 10);
    free(r);
    CU_ASSERT_PTR_NOT_NULL(xnd_sorted(e, &n));
    CU_ASSERT_EQUAL(n, 0);
    xnd_free(e);
    xnd_free(x);
}

static void test_time(void)
{
    int64_t t;
    char buf[32];
    CU_ASSERT_EQUAL(xnd_time_parse("1970-01-01 00:00:00", &t), 0);
    CU_ASSERT_EQUAL(t, 0);
    CU_ASSERT_EQUAL(xnd_time_parse("2000-02-29 23:59:59", &t), 0);
    CU_ASSERT_EQUAL(t, utc(2000, 2, 29, 23, 59, 59));
    CU_ASSERT_EQUAL(xnd_time_parse("1795344053", &t), 0);
    CU_ASSERT_EQUAL(t, 1795344053);
    CU_ASSERT_EQUAL(xnd_time_parse("1900-02-29 00:00:00", &t), -1);
    CU_ASSERT_EQUAL(xnd_time_parse("2026-13-01 00:00:00", &t), -1);
    CU_ASSERT_EQUAL(xnd_time_parse("2026-11-22T10:40:50", &t), -1);
    CU_ASSERT_EQUAL(xnd_time_parse("2026-11-22 10:40", &t), -1);
    CU_ASSERT_EQUAL(xnd_time_parse("", &t), -1);
    xnd_time_format(utc(2026, 11, 22, 10, 40, 50), buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "2026-11-22 10:40:50");
}

/* xnd_extent: the size when there is one, else the end of the last mapping, else 0. */
static void test_extent(void)
{
    xnd_t *x = xnd_new();
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_EQUAL(xnd_extent(NULL), 0);
    CU_ASSERT_EQUAL(xnd_extent(x), 0);
    int64_t at[] = {100, 0, 40};
    for (int i = 0; i < 3; i++) {
        xnd_mapping_t *m = xnd_mapping_new();
        CU_ASSERT_PTR_NOT_NULL_FATAL(m);
        m->exnode_offset = at[i];
        m->logical_length = 50;
        CU_ASSERT_EQUAL(xnd_append(x, m), XND_OK);
    }
    CU_ASSERT_EQUAL(xnd_size(x), -1);
    CU_ASSERT_EQUAL(xnd_extent(x), 150);
    CU_ASSERT_EQUAL(xnd_set_size(x, 120), XND_OK);
    CU_ASSERT_EQUAL(xnd_extent(x), 120);
    xnd_free(x);
}

static const lns_test_case tests[] = {
    {"the DLT sample", test_sample},
    {"sample round trip, byte for byte", test_roundtrip},
    {"unknown metadata, functions, elements survive", test_unknown_survives},
    {"deep copies", test_copy},
    {"typed metadata API", test_meta_api},
    {"sorted view, find, replicas, coverage", test_coverage},
    {"dates", test_time},
    {"xnd_extent: size, else the last mapping's end", test_extent},
};

LNS_TEST_MAIN("exnode", tests)
