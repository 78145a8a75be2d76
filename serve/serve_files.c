/* serve_files.c -- the exNodes lors_serve serves: found by URL name in its directories and
 * among the files it was given, opened (a lors_reader on the shared cache) on first use and
 * kept while their exNode file is unchanged.  An exNode rewritten in place (lors_augment,
 * lors_keep) is opened anew at the next request; requests still reading the old one finish
 * on it, and it is freed at the last. */
#include <errno.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <openssl/evp.h>

#include "serve.h"

void serve_name_of(const char *path, char *name, size_t size)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    size_t n = strlen(b);
    if (n > 4 && strcmp(b + n - 4, ".xnd") == 0)
        n -= 4;
    snprintf(name, size, "%.*s", (int)n, b);
}

static int valid_name(const char *name)
{
    return name[0] && name[0] != '.' && !strchr(name, '/') && strlen(name) < 1024;
}

/* The exNode path for name: a single given file, else DIR/name.xnd in a directory.  0 and
 * the path in buf, or -1. */
static int find_path(serve_files_t *t, const char *name, char *buf, size_t size,
                     struct stat *st)
{
    char n[1100];
    for (size_t i = 0; i < t->nsingles; i++) {
        serve_name_of(t->singles[i], n, sizeof n);
        if (strcmp(n, name) == 0 && stat(t->singles[i], st) == 0) {
            snprintf(buf, size, "%s", t->singles[i]);
            return 0;
        }
    }
    for (size_t i = 0; i < t->ndirs; i++) {
        snprintf(buf, size, "%s/%s.xnd", t->dirs[i], name);
        if (stat(buf, st) == 0 && S_ISREG(st->st_mode))
            return 0;
    }
    return -1;
}

static void file_free(serve_file_t *f)
{
    lors_reader_close(f->r);
    xnd_free(f->x);
    free(f->name);
    free(f->path);
    free(f);
}

/* With t->mu: drop the table's reference of open[i].  The file if that was the last one: the
 * caller frees it after unlocking (closing a reader waits for its fetches to stop). */
static serve_file_t *drop_locked(serve_files_t *t, size_t i)
{
    serve_file_t *f = t->open[i];
    t->open[i] = t->open[--t->nopen];
    return --f->refs == 0 ? f : NULL;
}

/* The ETag: the first 128 bits of the exNode's SHA-256, so a rewritten exNode (new
 * mappings, same bytes) is a new tag but an unchanged one keeps it across restarts. */
static int etag_of(const char *path, char *etag, size_t size)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return -1;
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    unsigned char buf[65536], md[EVP_MAX_MD_SIZE];
    size_t n;
    int bad = !c || EVP_DigestInit_ex(c, EVP_sha256(), NULL) != 1;
    while (!bad && (n = fread(buf, 1, sizeof buf, fp)) > 0)
        bad = EVP_DigestUpdate(c, buf, n) != 1;
    bad = bad || ferror(fp) || EVP_DigestFinal_ex(c, md, NULL) != 1;
    EVP_MD_CTX_free(c);
    fclose(fp);
    if (bad)
        return -1;
    int k = snprintf(etag, size, "\"");
    for (int i = 0; i < 16 && k + 3 < (int)size; i++)
        k += snprintf(etag + k, size - (size_t)k, "%02x", md[i]);
    snprintf(etag + k, size - (size_t)k, "\"");
    return 0;
}

serve_file_t *serve_file_get(serve_files_t *t, const char *name, int *status, char *err,
                             size_t errlen)
{
    char path[2200];
    struct stat st;
    *status = 404;
    err[0] = '\0';
    if (!valid_name(name) || find_path(t, name, path, sizeof path, &st) < 0) {
        snprintf(err, errlen, "no such file");
        return NULL;
    }
    serve_file_t *old = NULL;
    pthread_mutex_lock(&t->mu);
    for (size_t i = 0; i < t->nopen; i++) {
        serve_file_t *f = t->open[i];
        if (strcmp(f->name, name) != 0)
            continue;
        if (strcmp(f->path, path) == 0 && f->ino == st.st_ino && f->xsize == st.st_size &&
            f->mtim.tv_sec == st.st_mtim.tv_sec && f->mtim.tv_nsec == st.st_mtim.tv_nsec) {
            f->refs++;
            pthread_mutex_unlock(&t->mu);
            return f;
        }
        old = drop_locked(t, i); /* changed on disk: open it anew */
        break;
    }
    pthread_mutex_unlock(&t->mu);
    if (old)
        file_free(old);
    old = NULL;

    serve_file_t *f = calloc(1, sizeof *f);
    char xerr[512];
    *status = 500;
    if (!f || !(f->name = strdup(name)) || !(f->path = strdup(path))) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    f->mtime = st.st_mtime;
    f->mtim = st.st_mtim;
    f->ino = st.st_ino;
    f->xsize = st.st_size;
    if (etag_of(path, f->etag, sizeof f->etag) < 0) {
        snprintf(err, errlen, "reading the exNode %s: %s", path, strerror(errno));
        goto fail;
    }
    if (xnd_read_file(path, &f->x, xerr, sizeof xerr) != XND_OK) {
        snprintf(err, errlen, "the exNode %s: %s", path, xerr);
        goto fail;
    }
    if (!(f->r = lors_reader_open(&t->ro, f->x, t->cache, xerr, sizeof xerr))) {
        snprintf(err, errlen, "the exNode %s: %s", path, xerr);
        goto fail;
    }
    f->size = lors_reader_size(f->r);
    f->refs = 2; /* the table's and the caller's */
    pthread_mutex_lock(&t->mu);
    for (size_t i = 0; i < t->nopen; i++)
        if (strcmp(t->open[i]->name, name) == 0) { /* another request opened it meanwhile */
            old = drop_locked(t, i);
            break;
        }
    if (t->nopen == t->capopen) {
        size_t cap = t->capopen ? t->capopen * 2 : 16;
        serve_file_t **o = realloc(t->open, cap * sizeof *o);
        if (!o) {
            pthread_mutex_unlock(&t->mu);
            if (old)
                file_free(old);
            f->refs = 1; /* the caller's alone */
            return f;
        }
        t->open = o;
        t->capopen = cap;
    }
    t->open[t->nopen++] = f;
    pthread_mutex_unlock(&t->mu);
    if (old)
        file_free(old);
    return f;
fail:
    if (f)
        file_free(f);
    return NULL;
}

void serve_file_put(serve_files_t *t, serve_file_t *f)
{
    pthread_mutex_lock(&t->mu);
    int last = --f->refs == 0;
    pthread_mutex_unlock(&t->mu);
    if (last)
        file_free(f);
}

/* HTML-escaped s appended to the growing buffer; 0 or -1 (out of memory). */
static int put(char **b, size_t *n, size_t *cap, const char *s, int escape)
{
    for (; *s; s++) {
        char tmp[8];
        const char *p = tmp;
        if (escape && *s == '<')
            p = "&lt;";
        else if (escape && *s == '>')
            p = "&gt;";
        else if (escape && *s == '&')
            p = "&amp;";
        else if (escape && *s == '"')
            p = "&quot;";
        else
            tmp[0] = *s, tmp[1] = '\0';
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

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

char *serve_index_html(serve_files_t *t)
{
    char **names = NULL;
    size_t nn = 0, cap = 0;
    char n[1100];
    for (size_t i = 0; i < t->nsingles + t->ndirs; i++) {
        DIR *d = NULL;
        struct dirent *e = NULL;
        if (i >= t->nsingles && !(d = opendir(t->dirs[i - t->nsingles])))
            continue;
        for (;;) {
            if (d) {
                if (!(e = readdir(d)))
                    break;
                size_t l = strlen(e->d_name);
                if (l <= 4 || strcmp(e->d_name + l - 4, ".xnd") != 0)
                    continue;
                serve_name_of(e->d_name, n, sizeof n);
            } else {
                serve_name_of(t->singles[i], n, sizeof n);
            }
            if (valid_name(n) && (nn < cap || (names = realloc(names, (cap = cap * 2 + 16) *
                                                                          sizeof *names))))
                names[nn++] = strdup(n);
            if (!d)
                break;
        }
        if (d)
            closedir(d);
    }
    if (nn)
        qsort(names, nn, sizeof *names, cmp_str);
    char *b = NULL;
    size_t bn = 0, bc = 0;
    int bad = put(&b, &bn, &bc, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
                                "<title>lors_serve</title></head><body>\n<h1>Network files"
                                "</h1>\n<ul>\n", 0);
    for (size_t i = 0; i < nn; i++) {
        char enc[3400];
        if (!names[i] || (i > 0 && names[i - 1] && strcmp(names[i], names[i - 1]) == 0))
            continue;
        url_encode(names[i], enc, sizeof enc);
        bad |= put(&b, &bn, &bc, "<li><a href=\"/", 0);
        bad |= put(&b, &bn, &bc, enc, 0);
        bad |= put(&b, &bn, &bc, "\">", 0);
        bad |= put(&b, &bn, &bc, names[i], 1);
        bad |= put(&b, &bn, &bc, "</a></li>\n", 0);
    }
    bad |= put(&b, &bn, &bc, "</ul>\n</body></html>\n", 0);
    for (size_t i = 0; i < nn; i++)
        free(names[i]);
    free(names);
    if (bad) {
        free(b);
        return NULL;
    }
    return b;
}

void serve_files_free(serve_files_t *t)
{
    pthread_mutex_lock(&t->mu);
    while (t->nopen) {
        serve_file_t *f = drop_locked(t, t->nopen - 1);
        pthread_mutex_unlock(&t->mu);
        if (f)
            file_free(f);
        pthread_mutex_lock(&t->mu);
    }
    pthread_mutex_unlock(&t->mu);
    free(t->open);
    t->open = NULL;
}
