/* use_libexnode.c -- built by test_install against the installed libexnode (pkg-config
 * libexnode): parse a one-mapping exNode and read it back. */
#include <stdio.h>
#include <string.h>
#include <xnd.h>

static const char doc[] =
    "<exnode xmlns:exnode=\"http://loci.cs.utk.edu/exnode\">\n"
    "  <exnode:metadata name=\"filename\" type=\"string\">f.bin</exnode:metadata>\n"
    "  <exnode:metadata name=\"size\" type=\"integer\">100</exnode:metadata>\n"
    "  <exnode:mapping>\n"
    "    <exnode:metadata name=\"exnode_offset\" type=\"integer\">0</exnode:metadata>\n"
    "    <exnode:metadata name=\"logical_length\" type=\"integer\">100</exnode:metadata>\n"
    "    <exnode:metadata name=\"alloc_length\" type=\"integer\">100</exnode:metadata>\n"
    "    <exnode:metadata name=\"alloc_offset\" type=\"integer\">0</exnode:metadata>\n"
    "    <exnode:read>ibp://d1.example.org:6714/1#k1/11/READ</exnode:read>\n"
    "  </exnode:mapping>\n"
    "</exnode>\n";

int main(void)
{
    xnd_t *x;
    char err[256];
    if (xnd_parse_buf(doc, strlen(doc), &x, err, sizeof err) != XND_OK) {
        fprintf(stderr, "use_libexnode: %s\n", err);
        return 1;
    }
    int rc = x->nmaps == 1 && xnd_size(x) == 100 ? 0 : 2;
    xnd_free(x);
    if (rc == 0)
        puts("installed libexnode works");
    return rc;
}
