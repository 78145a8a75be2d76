/* serve_index.c -- the HTML index lors_serve answers at "/": a row for every network file
 * shown, with its size, its type and a link to play, view or download it (names HTML-escaped,
 * percent-encoded in the links); a file whose exNode cannot be read says so in its row. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lns_units.h"
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

/* What a browser does with a type: "play", "view" or "download". */
static const char *verb_of(const char *type)
{
    if (strncmp(type, "video/", 6) == 0 || strncmp(type, "audio/", 6) == 0)
        return "play";
    if (strncmp(type, "image/", 6) == 0 || strncmp(type, "text/", 5) == 0 ||
        strcmp(type, "application/pdf") == 0)
        return "view";
    return "download";
}

char *serve_index_html(lors_dir_t *d)
{
    size_t nn;
    char **names = lors_dir_names(d, &nn);
    char *b = NULL;
    size_t bn = 0, bc = 0;
    int bad = put(&b, &bn, &bc, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
                                "<title>lors_serve</title></head><body>\n<h1>Network files"
                                "</h1>\n<table>\n<tr><th>name</th><th>size</th><th>type</th>"
                                "<th></th></tr>\n", 0);
    for (size_t i = 0; i < nn; i++) {
        char enc[3400], size[64], exact[64], err[600];
        int rc;
        url_encode(names[i], enc, sizeof enc);
        lors_dir_file_t *f = lors_dir_get(d, names[i], &rc, err, sizeof err);
        const char *type = serve_content_type(names[i]), *verb = verb_of(type);
        if (f) {
            lns_format_size(f->size, size, sizeof size);
            snprintf(exact, sizeof exact, "%lld bytes", (long long)f->size);
            lors_dir_put(d, f);
        }
        bad |= put(&b, &bn, &bc, "<tr><td><a href=\"/", 0);
        bad |= put(&b, &bn, &bc, enc, 0);
        bad |= put(&b, &bn, &bc, "\">", 0);
        bad |= put(&b, &bn, &bc, names[i], 1);
        bad |= put(&b, &bn, &bc, "</a></td><td", 0);
        if (f) {
            bad |= put(&b, &bn, &bc, " title=\"", 0);
            bad |= put(&b, &bn, &bc, exact, 0);
            bad |= put(&b, &bn, &bc, "\">", 0);
            bad |= put(&b, &bn, &bc, size, 0);
            bad |= put(&b, &bn, &bc, "</td><td>", 0);
            bad |= put(&b, &bn, &bc, type, 0);
            bad |= put(&b, &bn, &bc, "</td><td><a href=\"/", 0);
            bad |= put(&b, &bn, &bc, enc, 0);
            bad |= put(&b, &bn, &bc, strcmp(verb, "download") == 0 ? "\" download>" : "\">", 0);
            bad |= put(&b, &bn, &bc, verb, 0);
            bad |= put(&b, &bn, &bc, "</a></td></tr>\n", 0);
        } else {
            bad |= put(&b, &bn, &bc, " colspan=\"3\">cannot be read</td></tr>\n", 0);
        }
    }
    bad |= put(&b, &bn, &bc, "</table>\n</body></html>\n", 0);
    lors_dir_names_free(names, nn);
    if (bad) {
        free(b);
        return NULL;
    }
    return b;
}
