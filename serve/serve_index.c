/* serve_index.c -- the HTML index lors_serve answers at "/": a row for every network file
 * shown, with its size, its type and a link to play, view or download it (names HTML-escaped,
 * percent-encoded in the links); a file whose exNode cannot be read says so in its row. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lns_buf.h"
#include "lns_units.h"
#include "serve.h"

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
    lns_buf_t b;
    lns_buf_init(&b);
    lns_buf_puts(&b, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>lors_serve"
                     "</title></head><body>\n<h1>Network files</h1>\n<table>\n<tr><th>name</th>"
                     "<th>size</th><th>type</th><th></th></tr>\n");
    for (size_t i = 0; i < nn; i++) {
        char enc[3400], size[64], err[600];
        int rc;
        url_encode(names[i], enc, sizeof enc);
        lors_dir_file_t *f = lors_dir_get(d, names[i], &rc, err, sizeof err);
        const char *type = serve_content_type(names[i]), *verb = verb_of(type);
        lns_buf_printf(&b, "<tr><td><a href=\"/%s\">", enc);
        lns_buf_html(&b, names[i]);
        lns_buf_puts(&b, "</a></td><td");
        if (f) {
            lns_format_size(f->size, size, sizeof size);
            lns_buf_printf(&b, " title=\"%lld bytes\">%s</td><td>%s</td><td><a href=\"/%s\"%s>"
                           "%s</a></td></tr>\n", (long long)f->size, size, type, enc,
                           strcmp(verb, "download") == 0 ? " download" : "", verb);
            lors_dir_put(d, f);
        } else {
            lns_buf_puts(&b, " colspan=\"3\">cannot be read</td></tr>\n");
        }
    }
    lns_buf_puts(&b, "</table>\n</body></html>\n");
    lors_dir_names_free(names, nn);
    return lns_buf_take(&b, NULL);
}
