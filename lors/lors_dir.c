/* lors_dir.c -- a directory of network files: the exNodes lors_serve serves and lors_mount
 * shows, found by name in the directories and among the single files given (in the order
 * given: the first that has a name wins), opened (a lors_reader on the shared cache) on first
 * use and kept while their exNode file is unchanged.
 *
 * Unchanged means the same path, inode, size and modification time to the nanosecond: an
 * exNode rewritten in place (lors_augment, lors_keep) or replaced by rename is opened anew at
 * the next lookup, and holders of the old one finish on it.  A file is freed when its last
 * reference goes, always outside the table's lock: closing a reader waits for its fetches.
 *
 * The table is a hash of names with an LRU order and keeps at most LORS_DIR_KEEP files: a
 * listing of 100,000 exNodes (a getattr of each) finds each by hash, and the least recently
 * used leave the table as new ones come (their holders go on reading them).  Without the
 * bound every file ever looked at stayed parsed; without the hash each lookup scanned them.
 *
 * What a file shows (its identity, its tag and time, its mappings) comes from one open of the
 * exNode file, read once: tools write exNodes by rename, and two opens could find two files.
 *
 * A listing's size and time (lors_dir_stat) come from a scan of the exNode's bytes where they
 * say the size plainly, without a parse or a reader; the others are opened as by a lookup. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <openssl/evp.h>

#include "lns_array.h"
#include "lns_err.h"
#include "lns_fail.h"
#include "lns_hex.h"
#include "lors.h"

typedef struct dfile {
    lors_dir_file_t pub;   /* first: a lors_dir_file_t * is a dfile_t * */
    char *name, *path;
    xnd_t *x;
    ino_t ino;             /* with path, size and mtime: changed on disk or replaced? */
    off_t xsize;
    int refs;              /* the table's (while current) and each holder's; dir->mu */
    uint32_t hash;         /* of name */
    struct dfile *hnext;   /* the bucket's chain, while in the table; dir->mu */
    struct dfile *newer, *older; /* the LRU order, while in the table; dir->mu */
} dfile_t;

#define NBUCKET 2048       /* a power of two, about twice LORS_DIR_KEEP */

typedef struct source {
    char *path;
    char *real; /* a directory's realpath: what its symbolic links may lead into */
    int is_dir;
} source_t;

struct lors_dir {
    pthread_mutex_t mu;
    source_t *src;         /* as added; not changed after the first lookup */
    size_t nsrc, ndirs;
    dfile_t *bucket[NBUCKET]; /* mu */
    dfile_t *newest, *oldest; /* mu */
    size_t nopen;          /* in the table, at most LORS_DIR_KEEP; mu */
    lors_cache_t *cache;
    lors_reader_opts_t ro;
};

void lors_dir_name_of(const char *path, char *name, size_t size)
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

lors_dir_t *lors_dir_new(const lors_reader_opts_t *ro, lors_cache_t *cache)
{
    lors_dir_t *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    pthread_mutex_init(&d->mu, NULL);
    d->ro = *ro;
    d->cache = cache;
    return d;
}

int lors_dir_add(lors_dir_t *d, const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        lns_err_set(err, errlen, "%s: %s", path, strerror(errno));
        return LORS_E_READ;
    }
    if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
        lns_err_set(err, errlen, "%s: neither a directory nor an exNode file", path);
        return LORS_E_READ;
    }
    source_t *s = realloc(d->src, (d->nsrc + 1) * sizeof *s);
    if (!s)
        return LORS_E_NOMEM;
    d->src = s;
    s[d->nsrc].real = NULL;
    if (!(s[d->nsrc].path = strdup(path)))
        return LORS_E_NOMEM;
    s[d->nsrc].is_dir = S_ISDIR(st.st_mode);
    if (s[d->nsrc].is_dir && !(s[d->nsrc].real = realpath(path, NULL))) {
        lns_err_set(err, errlen, "%s: %s", path, strerror(errno));
        free(s[d->nsrc].path);
        return errno == ENOMEM ? LORS_E_NOMEM : LORS_E_READ;
    }
    d->ndirs += (size_t)s[d->nsrc].is_dir;
    d->nsrc++;
    return LORS_OK;
}

void lors_dir_counts(const lors_dir_t *d, size_t *dirs, size_t *files)
{
    *dirs = d->ndirs;
    *files = d->nsrc - d->ndirs;
}

/* 1 if the entry at path of directory s is a regular file, or a symbolic link to one inside
 * s (as nginx's disable_symlinks would have it, a link may not lead a client out of what is
 * served: /etc, another user's exNodes); *out 1 for one that leads out.  st: the file's. */
static int inside(const source_t *s, const char *path, struct stat *st, int *out)
{
    *out = 0;
    if (lstat(path, st) != 0)
        return 0;
    if (!S_ISLNK(st->st_mode))
        return S_ISREG(st->st_mode);
    char *real = realpath(path, NULL);
    size_t l = strlen(s->real);
    int in = real && strncmp(real, s->real, l) == 0 && (real[l] == '/' || l == 1);
    free(real);
    if (!in) {
        *out = 1;
        return 0;
    }
    return stat(path, st) == 0 && S_ISREG(st->st_mode);
}

/* The exNode path shown as name: 0 with the path in buf and its stat, or -1 (*out 1 when the
 * name is a symbolic link that leads out of its directory). */
static int find_path(lors_dir_t *d, const char *name, char *buf, size_t size, struct stat *st,
                     int *out)
{
    char n[1100];
    *out = 0;
    for (size_t i = 0; i < d->nsrc; i++) {
        if (d->src[i].is_dir) {
            int o;
            snprintf(buf, size, "%s/%s.xnd", d->src[i].path, name);
            if (inside(&d->src[i], buf, st, &o))
                return 0;
            *out |= o;
            continue;
        }
        lors_dir_name_of(d->src[i].path, n, sizeof n);
        if (strcmp(n, name) == 0 && stat(d->src[i].path, st) == 0) {
            snprintf(buf, size, "%s", d->src[i].path);
            return 0;
        }
    }
    return -1;
}

static void file_free(dfile_t *f)
{
    lors_reader_close(f->pub.r);
    xnd_free(f->x);
    free(f->name);
    free(f->path);
    free(f);
}

static uint32_t hash_of(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* With d->mu: the table's file named name (its hash h), or NULL. */
static dfile_t *find_locked(lors_dir_t *d, const char *name, uint32_t h)
{
    for (dfile_t *f = d->bucket[h & (NBUCKET - 1)]; f; f = f->hnext)
        if (f->hash == h && strcmp(f->name, name) == 0)
            return f;
    return NULL;
}

static void lru_unlink(lors_dir_t *d, dfile_t *f)
{
    if (f->newer)
        f->newer->older = f->older;
    else
        d->newest = f->older;
    if (f->older)
        f->older->newer = f->newer;
    else
        d->oldest = f->newer;
    f->newer = f->older = NULL;
}

static void lru_push(lors_dir_t *d, dfile_t *f)
{
    f->older = d->newest;
    f->newer = NULL;
    if (d->newest)
        d->newest->newer = f;
    else
        d->oldest = f;
    d->newest = f;
}

/* With d->mu: take f out of the table and drop the table's reference.  The file if that was
 * the last one: the caller frees it after unlocking. */
static dfile_t *drop_locked(lors_dir_t *d, dfile_t *f)
{
    dfile_t **p = &d->bucket[f->hash & (NBUCKET - 1)];
    while (*p != f)
        p = &(*p)->hnext;
    *p = f->hnext;
    f->hnext = NULL;
    lru_unlink(d, f);
    d->nopen--;
    return --f->refs == 0 ? f : NULL;
}

/* With d->mu: f into the table (with a reference of its own) as the newest.  The oldest file
 * if that passed the bound and it was its last reference: the caller frees it after
 * unlocking. */
static dfile_t *insert_locked(lors_dir_t *d, dfile_t *f)
{
    dfile_t **b = &d->bucket[f->hash & (NBUCKET - 1)];
    f->hnext = *b;
    *b = f;
    lru_push(d, f);
    f->refs++;
    if (++d->nopen <= LORS_DIR_KEEP)
        return NULL;
    return drop_locked(d, d->oldest);
}

/* The tag: the first 128 bits of the SHA-256 of the exNode's bytes, so a rewritten exNode
 * (new mappings, same bytes) gets a new tag but an unchanged one keeps it across restarts. */
static int tag_of(const char *bytes, size_t n, char *tag, size_t size)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    char hex[33];
    if (EVP_Digest(bytes, n, md, NULL, EVP_sha256(), NULL) != 1)
        return -1;
    snprintf(tag, size, "\"%s\"", lns_hex(md, 16, hex));
    return 0;
}

static int unchanged(const dfile_t *f, const char *path, const struct stat *st)
{
    return strcmp(f->path, path) == 0 && f->ino == st->st_ino && f->xsize == st->st_size &&
           f->pub.mtime.tv_sec == st->st_mtim.tv_sec &&
           f->pub.mtime.tv_nsec == st->st_mtim.tv_nsec;
}

/* A new file for name at path, with one reference (the caller's); NULL with *rc and err.
 * One open gives everything: the identity unchanged() compares (fstat), the tag and the
 * mappings (the bytes read once), so a rename over path meanwhile cannot give one file's tag
 * or time to another's bytes. */
static dfile_t *file_open(lors_dir_t *d, const char *name, const char *path, int *rc,
                          char *err, size_t errlen)
{
    dfile_t *f = calloc(1, sizeof *f);
    char xerr[512], *bytes = NULL;
    size_t nbytes = 0;
    struct stat st;
    int fd = -1;
    *rc = LORS_E_NOMEM;
    if (!f || !(f->name = strdup(name)) || !(f->path = strdup(path))) {
        lns_err_set(err, errlen, "out of memory");
        goto fail;
    }
    f->pub.name = f->name;
    f->pub.path = f->path;
    *rc = LORS_E_READ;
    /* the failpoint dir.read: tests stop here and rename another exNode over path */
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 || fstat(fd, &st) < 0 ||
        lns_fail("dir.read") < 0) {
        lns_err_set(err, errlen, "reading the exNode %s: %s", path, strerror(errno));
        goto fail;
    }
    f->pub.mtime = st.st_mtim;
    f->ino = st.st_ino;
    f->xsize = st.st_size;
    int xrc = xnd_read_fd_opts(fd, NULL, &f->x, &bytes, &nbytes, xerr, sizeof xerr);
    close(fd);
    fd = -1;
    if (xrc == XND_OK && lors_pins_use(f->x, xerr, sizeof xerr) != LORS_OK)
        xrc = XND_E_FORMAT;
    if (xrc != XND_OK) {
        *rc = xrc == XND_E_IO ? LORS_E_READ : LORS_E_EXNODE;
        lns_err_set(err, errlen, "the exNode %s: %s", path, xerr);
        goto fail;
    }
    int tagged = tag_of(bytes, nbytes, f->pub.tag, sizeof f->pub.tag);
    free(bytes);
    bytes = NULL;
    *rc = LORS_E_NOMEM;
    if (tagged < 0) {
        lns_err_set(err, errlen, "the exNode %s: no SHA-256 for its tag", path);
        goto fail;
    }
    f->pub.x = f->x;
    *rc = LORS_E_EXNODE;
    if (!(f->pub.r = lors_reader_open(&d->ro, f->x, d->cache, xerr, sizeof xerr))) {
        lns_err_set(err, errlen, "the exNode %s: %s", path, xerr);
        goto fail;
    }
    f->pub.size = lors_reader_size(f->pub.r);
    f->refs = 1;
    *rc = LORS_OK;
    return f;
fail:
    free(bytes);
    if (fd >= 0)
        close(fd);
    if (f)
        file_free(f);
    return NULL;
}

/* ---- the size of a plain exNode without parsing it ------------------------------------ */

/* The tag at p ('<' at p): 1 start tag, 2 end tag, 3 empty-element tag, with *end just past
 * its '>'; 0 for what this scan does not read (a comment, CDATA, a DOCTYPE, no '>').  The
 * first '>' ends the tag: lns and libxml2 write one inside an attribute value as "&gt;"; a
 * writer that does not may leave this scan unbalanced, and then the parse decides. */
static int tag_at(const char *p, const char *e, const char **end)
{
    if (p + 1 >= e || p[1] == '!')
        return 0;
    const char *gt = memchr(p + 1, '>', (size_t)(e - p - 1));
    if (!gt)
        return 0;
    *end = gt + 1;
    if (p[1] == '?')
        return gt[-1] == '?' ? 3 : 0; /* <?xml ...?>: nothing opened */
    return p[1] == '/' ? 2 : gt[-1] == '/' ? 3 : 1;
}

/* 1 if the start tag [p, e) is a metadata element (any namespace prefix) whose attributes
 * are exactly name="size" type="integer", in the form every lns and LoRS writer gives. */
static int is_size_tag(const char *p, const char *e)
{
    static const char want[] = "metadata name=\"size\" type=\"integer\">";
    const size_t n = sizeof want - 1;
    const char *t = p + 1;
    size_t len = (size_t)(e - t);
    const char *colon = memchr(t, ':', len), *sp = memchr(t, ' ', len);
    if (colon && (!sp || colon < sp)) {
        len -= (size_t)(colon + 1 - t);
        t = colon + 1;
    }
    return len == n && memcmp(t, want, n) == 0;
}

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* The network file's size from the exNode's bytes when they say it plainly: well-formed as
 * far as this scan reads (tags balanced; no comment, CDATA or DOCTYPE), a "size" integer
 * metadata among the root's children, and neither an lns_e2e nor an lns_ec description
 * (whose plain size comes from their frames or their coding).  -1 otherwise: then only the
 * parse and the reader can say.  What the reader would find: the "size" metadata is the
 * file's length when there is one (xnd_extent). */
static int64_t plain_size(const char *b, size_t n)
{
    const char *p = b, *e = b + n, *end;
    int depth = 0;
    int64_t size = -1;
    if (memmem(b, n, "\"lns_e", 6)) /* name="lns_e2e" or "lns_ec" (or one like them) */
        return -1;
    while ((p = memchr(p, '<', (size_t)(e - p)))) {
        int kind = tag_at(p, e, &end);
        if (kind == 0)
            return -1;
        if (kind == 1 && depth == 1 && size < 0 && is_size_tag(p, end)) {
            const char *v = end, *ve = memchr(v, '<', (size_t)(e - v));
            if (!ve || ve + 1 >= e || ve[1] != '/')
                return -1;
            while (v < ve && is_space(*v))
                v++;
            while (ve > v && is_space(ve[-1]))
                ve--;
            if (v == ve || ve - v > 18) /* no sign, no overflow */
                return -1;
            for (size = 0; v < ve; v++) {
                if (*v < '0' || *v > '9')
                    return -1;
                size = size * 10 + (*v - '0');
            }
        }
        if (kind == 1)
            depth++;
        else if (kind == 2 && --depth < 0)
            return -1;
        p = end;
    }
    return depth == 0 ? size : -1;
}

/* The exNode at path read whole, st its stat from the lookup: its bytes (malloc'd) and *n, or
 * NULL (unreadable, or no longer of st's size: then the parse decides).  Without touching its
 * access time where that is allowed (a listing would write 100,000 inodes). */
static char *read_whole(const char *path, const struct stat *st, size_t *n)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOATIME);
    if (fd < 0 && errno == EPERM) /* O_NOATIME: the owner's, or CAP_FOWNER */
        fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t want = (size_t)st->st_size, got = 0;
    char *b = st->st_size < ((off_t)1 << 30) ? malloc(want + 1) : NULL;
    ssize_t r = 1;
    while (b && got <= want && (r = read(fd, b + got, want + 1 - got)) > 0)
        got += (size_t)r;
    close(fd);
    if (b && (r < 0 || got != want)) {
        free(b);
        b = NULL;
    }
    *n = got;
    return b;
}

/* The file name names inside d, its path and stat: 0, or -1 with *rc LORS_E_NOTFOUND and why
 * in err (also a link that leads out of the directory). */
static int locate(lors_dir_t *d, const char *name, char *path, size_t size, struct stat *st,
                  int *rc, char *err, size_t errlen)
{
    int out = 0;
    err[0] = '\0';
    *rc = LORS_E_NOTFOUND;
    if (!valid_name(name) || find_path(d, name, path, size, st, &out) < 0) {
        lns_err_set(err, errlen, out ? "a symbolic link that leads out of its directory"
                                  : "no such file");
        return -1;
    }
    return 0;
}

int lors_dir_stat(lors_dir_t *d, const char *name, int64_t *size, struct timespec *mtime,
                  int *rc, char *err, size_t errlen)
{
    char path[2200];
    struct stat st;
    if (locate(d, name, path, sizeof path, &st, rc, err, errlen) < 0)
        return -1;
    uint32_t h = hash_of(name);
    pthread_mutex_lock(&d->mu);
    dfile_t *f = find_locked(d, name, h);
    if (f && unchanged(f, path, &st)) {
        *size = f->pub.size;
        *mtime = f->pub.mtime;
        pthread_mutex_unlock(&d->mu);
        *rc = LORS_OK;
        return 0;
    }
    pthread_mutex_unlock(&d->mu);
    size_t n;
    char *b = read_whole(path, &st, &n);
    int64_t s = b ? plain_size(b, n) : -1;
    free(b);
    if (s >= 0) {
        *size = s;
        *mtime = st.st_mtim;
        *rc = LORS_OK;
        return 0;
    }
    lors_dir_file_t *pub = lors_dir_get(d, name, rc, err, errlen);
    if (!pub)
        return -1;
    *size = pub->size;
    *mtime = pub->mtime;
    lors_dir_put(d, pub);
    return 0;
}

lors_dir_file_t *lors_dir_get(lors_dir_t *d, const char *name, int *rc, char *err,
                              size_t errlen)
{
    char path[2200];
    struct stat st;
    if (locate(d, name, path, sizeof path, &st, rc, err, errlen) < 0)
        return NULL;
    uint32_t h = hash_of(name);
    dfile_t *old = NULL;
    pthread_mutex_lock(&d->mu);
    dfile_t *f = find_locked(d, name, h);
    if (f && unchanged(f, path, &st)) {
        f->refs++;
        lru_unlink(d, f);
        lru_push(d, f);
        pthread_mutex_unlock(&d->mu);
        *rc = LORS_OK;
        return &f->pub;
    }
    if (f)
        old = drop_locked(d, f); /* changed on disk: open it anew */
    pthread_mutex_unlock(&d->mu);
    if (old)
        file_free(old);

    if (!(f = file_open(d, name, path, rc, err, errlen)))
        return NULL;
    f->hash = h;
    dfile_t *evicted = NULL;
    old = NULL;
    pthread_mutex_lock(&d->mu);
    dfile_t *other = find_locked(d, name, h);
    if (other) /* another caller opened it meanwhile */
        old = drop_locked(d, other);
    evicted = insert_locked(d, f);
    pthread_mutex_unlock(&d->mu);
    if (old)
        file_free(old);
    if (evicted)
        file_free(evicted);
    return &f->pub;
}

size_t lors_dir_kept(lors_dir_t *d)
{
    pthread_mutex_lock(&d->mu);
    size_t n = d->nopen;
    pthread_mutex_unlock(&d->mu);
    return n;
}

void lors_dir_put(lors_dir_t *d, lors_dir_file_t *pub)
{
    if (!pub)
        return;
    dfile_t *f = (dfile_t *)pub;
    pthread_mutex_lock(&d->mu);
    int last = --f->refs == 0;
    pthread_mutex_unlock(&d->mu);
    if (last)
        file_free(f);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* name appended to the growing list; 0 or -1 (out of memory). */
static int add_name(char ***names, size_t *n, size_t *cap, const char *name)
{
    if (lns_grow(names, cap, *n + 1, sizeof **names, 16) < 0)
        return -1;
    if (!((*names)[*n] = strdup(name)))
        return -1;
    (*n)++;
    return 0;
}

char **lors_dir_names(lors_dir_t *d, size_t *n)
{
    char **names = NULL, name[1100];
    size_t nn = 0, cap = 0;
    int bad = 0;
    for (size_t i = 0; i < d->nsrc && !bad; i++) {
        if (!d->src[i].is_dir) {
            lors_dir_name_of(d->src[i].path, name, sizeof name);
            bad = valid_name(name) && add_name(&names, &nn, &cap, name) < 0;
            continue;
        }
        DIR *dir = opendir(d->src[i].path);
        struct dirent *e;
        while (dir && !bad && (e = readdir(dir))) {
            size_t l = strlen(e->d_name);
            if (l <= 4 || strcmp(e->d_name + l - 4, ".xnd") != 0)
                continue;
            lors_dir_name_of(e->d_name, name, sizeof name);
            if (e->d_type == DT_DIR)
                continue;
            if (e->d_type == DT_LNK || e->d_type == DT_UNKNOWN) {
                char p[2200];
                struct stat st;
                int out;
                snprintf(p, sizeof p, "%s/%s", d->src[i].path, e->d_name);
                if (!inside(&d->src[i], p, &st, &out))
                    continue; /* not shown: it could not be served */
            }
            bad = valid_name(name) && add_name(&names, &nn, &cap, name) < 0;
        }
        if (dir)
            closedir(dir);
    }
    if (bad) {
        lors_dir_names_free(names, nn);
        *n = 0;
        errno = ENOMEM;
        return NULL;
    }
    if (nn)
        qsort(names, nn, sizeof *names, cmp_str);
    size_t k = 0;
    for (size_t i = 0; i < nn; i++) {
        if (k > 0 && strcmp(names[i], names[k - 1]) == 0)
            free(names[i]);
        else
            names[k++] = names[i];
    }
    *n = k;
    if (!k) {
        free(names);
        return NULL;
    }
    return names;
}

void lors_dir_names_free(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

void lors_dir_free(lors_dir_t *d)
{
    if (!d)
        return;
    pthread_mutex_lock(&d->mu);
    while (d->oldest) {
        dfile_t *f = drop_locked(d, d->oldest);
        pthread_mutex_unlock(&d->mu);
        if (f)
            file_free(f);
        pthread_mutex_lock(&d->mu);
    }
    pthread_mutex_unlock(&d->mu);
    pthread_mutex_destroy(&d->mu);
    for (size_t i = 0; i < d->nsrc; i++) {
        free(d->src[i].path);
        free(d->src[i].real);
    }
    free(d->src);
    free(d);
}
