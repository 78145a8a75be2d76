/* tool_e2e.c -- the transform list of -z, -a, --e2e (lors_upload) and E2E_ORDER (the rc
 * file): one parse, so that a list means and is refused the same wherever it is written.
 *
 * The names kept are the canonical ones of lors_upload_opts_t.e2e ("zstd,aes"); LoRS's
 * "zlib_compress" and "aes_encrypt" are read as zlib and aes, and its weak transforms (des,
 * xor) are refused by name rather than as unknown.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "lns_err.h"
#include "tool.h"

#define SEP ", \t"

/* Whether the canonical list has the name (the names are no part of one another). */
static int has(const char *chain, const char *name)
{
    return strstr(chain, name) != NULL;
}

int tool_e2e_list(const char *what, const char *list, int none_ok, char *chain, size_t size,
                  char *err, size_t errlen)
{
    static const struct {
        const char *word, *name;
    } words[] = {{"zstd", "zstd"}, {"zlib", "zlib"}, {"zlib_compress", "zlib"},
                 {"aes", "aes"},   {"aes_encrypt", "aes"}};
    char out[64];
    int items = 0, none = 0;
    snprintf(out, sizeof out, "%s", chain);
    for (const char *p = list + strspn(list, SEP); *p; p += strspn(p, SEP)) {
        const char *t = p, *name = NULL;
        int n = (int)strcspn(p, SEP);
        p += n;
        items++;
        for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
            if ((size_t)n == strlen(words[i].word) && strncasecmp(t, words[i].word, n) == 0)
                name = words[i].name;
        if (!name && n == 4 && strncasecmp(t, "none", 4) == 0) {
            if (!none_ok)
                return 1;
            none = 1;
            continue;
        }
        if (!name && n >= 3 && (strncasecmp(t, "des", 3) == 0 || strncasecmp(t, "xor", 3) == 0))
            return lns_err_set(err, errlen, "%s: %.*s is not supported (weak); use aes", what,
                               n, t);
        if (!name)
            return lns_err_set(err, errlen, "%s: unknown transform %.*s (expected zstd, zlib%s)",
                               what, n, t, none_ok ? ", aes or none" : " or aes");
        if (has(out, name))
            return lns_err_set(err, errlen, "%s: transform %s named twice", what, name);
        if (strcmp(name, "aes") != 0 && (has(out, "zstd") || has(out, "zlib")))
            return lns_err_set(err, errlen, "%s: one compressor at the most (zstd or zlib)",
                               what);
        strcat(out, out[0] ? "," : ""); /* at most "zstd,aes": one compressor, each once */
        strcat(out, name);
    }
    if (none && items > 1)
        return lns_err_set(err, errlen, "%s: none cannot be combined with transforms", what);
    snprintf(chain, size, "%s", out);
    return 0;
}
