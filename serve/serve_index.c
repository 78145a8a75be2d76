/* serve_index.c -- the HTML index lors_serve answers at "/": a link to every network file
 * shown, names HTML-escaped and percent-encoded in the links. */
#include <stdlib.h>
#include <string.h>

#include "serve.h"

/* s appended to the growing buffer, HTML-escaped if escape; 0 or -1 (out of memory). */
static int put(char **b, size_t *n, size_t *cap, const char *s, int escape)
{
    for (; *s; s++) {
        char tmp[2] = {*s, '\0'};
        const char *p = tmp;
        if (escape && *s == '<')
            p = "&lt;";
        else if (escape && *s == '>')
            p = "&gt;";
        else if (escape && *s == '&')
            p = "&amp;";
        else if (escape && *s == '"')
            p = "&quot;";
        size_t l = strlen(p);
        if (*n + l + 1 > *cap) {
            size_t c = *cap ? *cap * 2 : 4096;
            while (c < *n + l + 1)
                c *= 2;
            char *nb = realloc(*b, c);
            if (!nb)
                return -1;
            *b = nb;
            *cap = c;
        }
        memcpy(*b + *n, p, l);
        *n += l;
        (*b)[*n] = '\0';
    }
    return 0;
}

/* Percent-encode a name for a URL path. */
static void url_encode(const char *s, char *out, size_t size)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t k = 0;
    for (; *s && k + 4 < size; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            strchr("-._~", c)) {
            out[k++] = (char)c;
        } else {
            out[k++] = '%';
            out[k++] = hex[c >> 4];
            out[k++] = hex[c & 15];
        }
    }
    out[k] = '\0';
}

char *serve_index_html(lors_dir_t *d)
{
    size_t nn;
    char **names = lors_dir_names(d, &nn);
    char *b = NULL;
    size_t bn = 0, bc = 0;
    int bad = put(&b, &bn, &bc, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
                                "<title>lors_serve</title></head><body>\n<h1>Network files"
                                "</h1>\n<ul>\n", 0);
    for (size_t i = 0; i < nn; i++) {
        char enc[3400];
        url_encode(names[i], enc, sizeof enc);
        bad |= put(&b, &bn, &bc, "<li><a href=\"/", 0);
        bad |= put(&b, &bn, &bc, enc, 0);
        bad |= put(&b, &bn, &bc, "\">", 0);
        bad |= put(&b, &bn, &bc, names[i], 1);
        bad |= put(&b, &bn, &bc, "</a></li>\n", 0);
    }
    bad |= put(&b, &bn, &bc, "</ul>\n</body></html>\n", 0);
    lors_dir_names_free(names, nn);
    if (bad) {
        free(b);
        return NULL;
    }
    return b;
}
