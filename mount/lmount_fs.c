/* lmount_fs.c -- lors_mount's FUSE 3 file system: "/" is a read-only directory of the names a
 * lors_dir shows, each a read-only regular file of its network file's size, read through the
 * random-access reader.
 *
 * An open file holds its lors_dir file (so an exNode rewritten meanwhile does not change what
 * an open file reads) and a stream, whose read-ahead follows a reader going on through the
 * file.  The kernel may send several reads of one open file at once (its own read-ahead):
 * the stream takes one at a time, the others read without read-ahead, which finds the
 * blocks the stream fetches.  A read that fails answers EIO and leaves a line in the log
 * naming the file and the bytes; it fails within the depot timeout, so a depot that stopped
 * answering blocks a reader, and an unmount waiting for it, that long at most.
 *
 * A listing answers READDIRPLUS with each name's attributes from lors_dir_stat (a scan of
 * each exNode's bytes; none is parsed where it says its size plainly), found ahead by a
 * thread of the open directory: ls -l of 100,000 exNodes asks no LOOKUP and parses nothing.
 *
 * With direct_io the kernel keeps no pages of these files and reads none ahead: every read
 * comes here as asked.  The kernel's read-ahead otherwise asks for the 128 KiB after each
 * read, which for a random reader costs the fetch of a block it never reads (on a link,
 * half the bandwidth of the next read); but without the page cache, MAP_SHARED is refused. */
#define FUSE_USE_VERSION 312
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lmount.h"
#include "lns_err.h"
#include "lns_log.h"

static const lmount_cfg_t *M;
static struct timespec mounted_at; /* the directory's times */

typedef struct handle {
    lors_dir_file_t *f;
    lors_stream_t *s;
    pthread_mutex_t mu;  /* held while s reads */
} handle_t;

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    lns_log_line(M->log, fmt, ap);
    va_end(ap);
}

/* The file at path ("/NAME"): a reference, or NULL with *e the errno to answer (a failure
 * other than "no such name" logged). */
static lors_dir_file_t *lookup(const char *path, int *e)
{
    int rc;
    char err[600];
    lors_dir_file_t *f = lors_dir_get(M->dir, path + 1, &rc, err, sizeof err);
    if (!f) {
        if (rc != LORS_E_NOTFOUND)
            logf_("%s: %s", path + 1, err);
        *e = rc == LORS_E_NOTFOUND ? ENOENT : rc == LORS_E_NOMEM ? ENOMEM : EIO;
    }
    return f;
}

static void file_stat(int64_t size, struct timespec mtime, struct stat *st)
{
    st->st_uid = getuid();
    st->st_gid = getgid();
    st->st_mode = S_IFREG | 0444;
    st->st_nlink = 1;
    st->st_size = size;
    st->st_blksize = 1 << 20;
    st->st_blocks = (size + 511) / 512;
    st->st_mtim = mtime;
    st->st_ctim = mtime;
    st->st_atim = mtime;
}

/* The attributes of the file NAME without opening it where its exNode says its size (a
 * listing of 100,000 exNodes parses none of them): 0, or -errno (with log, a failure other
 * than "no such name" logged). */
static int name_stat(const char *name, struct stat *st, int log)
{
    int rc;
    int64_t size;
    struct timespec mtime;
    char err[600];
    if (lors_dir_stat(M->dir, name, &size, &mtime, &rc, err, sizeof err) != 0) {
        if (log && rc != LORS_E_NOTFOUND)
            logf_("%s: %s", name, err);
        return rc == LORS_E_NOTFOUND ? -ENOENT : rc == LORS_E_NOMEM ? -ENOMEM : -EIO;
    }
    file_stat(size, mtime, st);
    return 0;
}

static void *fs_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
    (void)conn;
    cfg->use_ino = 0;
    cfg->nullpath_ok = 1;  /* reads and releases go by handle */
    return NULL;
}

static int fs_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
    memset(st, 0, sizeof *st);
    st->st_uid = getuid();
    st->st_gid = getgid();
    if (fi && fi->fh) {
        const lors_dir_file_t *f = ((handle_t *)(uintptr_t)fi->fh)->f;
        file_stat(f->size, f->mtime, st);
        return 0;
    }
    if (strcmp(path, "/") == 0) {
        st->st_mode = S_IFDIR | 0555;
        st->st_nlink = 2;
        st->st_mtim = st->st_ctim = st->st_atim = mounted_at;
        return 0;
    }
    return name_stat(path + 1, st, 1);
}

/* An open directory: its names as opendir found them, sorted; readdir gives them from an
 * offset (entry i has offset i + 1; "." and ".." are 0 and 1), so the kernel's many reads of a
 * large directory go on where the last stopped, and READDIRPLUS entries are kept by the
 * kernel (libfuse looks up only entries with an offset).  A thread of the directory finds
 * the attributes of its names in order meanwhile, so reading the exNodes here and the
 * kernel's and ls's work on the entries go on at once, on two cores. */
typedef struct dirent_attr {
    int64_t size;
    struct timespec mtime;
    int ok;
} dirent_attr_t;

typedef struct dirsnap {
    char **names;
    size_t n;
    dirent_attr_t *a;      /* n of them; a[0 .. ready) found */
    size_t ready;          /* mu */
    int stop;              /* mu: releasedir */
    int thread;            /* 1 while th runs or is to be joined */
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct dirsnap *next, *prev; /* among the open ones, snaps_mu */
} dirsnap_t;

/* The open directories: those the kernel never released when the session ends (a lazy
 * unmount under a running ls) have their threads stopped before lors_dir goes. */
static pthread_mutex_t snaps_mu = PTHREAD_MUTEX_INITIALIZER;
static dirsnap_t *snaps;

static void *attr_ahead(void *arg)
{
    dirsnap_t *ds = arg;
    for (size_t i = 0; i < ds->n; i++) {
        pthread_mutex_lock(&ds->mu);
        int stop = ds->stop;
        pthread_mutex_unlock(&ds->mu);
        if (stop)
            break;
        int rc;
        char err[600];
        dirent_attr_t *a = &ds->a[i];
        a->ok = lors_dir_stat(M->dir, ds->names[i], &a->size, &a->mtime, &rc, err,
                              sizeof err) == 0;
        if ((i + 1) % 128 == 0 || i + 1 == ds->n) { /* a wake-up per batch, not per name */
            pthread_mutex_lock(&ds->mu);
            ds->ready = i + 1;
            pthread_cond_broadcast(&ds->cv);
            pthread_mutex_unlock(&ds->mu);
        }
    }
    return NULL;
}

static void dirsnap_free(dirsnap_t *ds)
{
    pthread_mutex_lock(&snaps_mu);
    if (ds->prev)
        ds->prev->next = ds->next;
    else if (snaps == ds)
        snaps = ds->next;
    if (ds->next)
        ds->next->prev = ds->prev;
    pthread_mutex_unlock(&snaps_mu);
    if (ds->thread) {
        pthread_mutex_lock(&ds->mu);
        ds->stop = 1;
        pthread_mutex_unlock(&ds->mu);
        pthread_join(ds->th, NULL);
    }
    pthread_cond_destroy(&ds->cv);
    pthread_mutex_destroy(&ds->mu);
    lors_dir_names_free(ds->names, ds->n);
    free(ds->a);
    free(ds);
}

static int fs_opendir(const char *path, struct fuse_file_info *fi)
{
    if (strcmp(path, "/") != 0)
        return -ENOTDIR;
    dirsnap_t *ds = calloc(1, sizeof *ds);
    if (!ds)
        return -ENOMEM;
    pthread_mutex_init(&ds->mu, NULL);
    pthread_cond_init(&ds->cv, NULL);
    errno = 0;
    ds->names = lors_dir_names(M->dir, &ds->n);
    if ((!ds->names && errno == ENOMEM) || (ds->n && !(ds->a = calloc(ds->n, sizeof *ds->a)))) {
        dirsnap_free(ds);
        return -ENOMEM;
    }
    /* without the thread, readdir finds each name's attributes itself */
    ds->thread = ds->n > 0 && pthread_create(&ds->th, NULL, attr_ahead, ds) == 0;
    pthread_mutex_lock(&snaps_mu);
    ds->next = snaps;
    if (snaps)
        snaps->prev = ds;
    snaps = ds;
    pthread_mutex_unlock(&snaps_mu);
    fi->fh = (uint64_t)(uintptr_t)ds;
    return 0;
}

static int fs_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
                      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
    (void)path; /* "/": the only directory (and NULL: nullpath_ok) */
    dirsnap_t *ds = (dirsnap_t *)(uintptr_t)fi->fh;
    for (size_t i = off > 0 ? (size_t)off : 0; i < ds->n + 2; i++) {
        const char *name = i == 0 ? "." : i == 1 ? ".." : ds->names[i - 2];
        /* READDIRPLUS (the kernel's first read of the directory, and ls -l's): each name with
         * its attributes, so the kernel asks no LOOKUP of it; one whose attributes fail goes
         * without them, and its LOOKUP answers (and logs) the error */
        struct stat st;
        int plus = 0;
        if (i >= 2 && (flags & FUSE_READDIR_PLUS)) {
            size_t k = i - 2;
            if (ds->thread) {
                pthread_mutex_lock(&ds->mu);
                while (ds->ready <= k)
                    pthread_cond_wait(&ds->cv, &ds->mu);
                pthread_mutex_unlock(&ds->mu);
                plus = ds->a[k].ok;
                if (plus) {
                    memset(&st, 0, sizeof st);
                    file_stat(ds->a[k].size, ds->a[k].mtime, &st);
                }
            } else {
                memset(&st, 0, sizeof st);
                plus = name_stat(name, &st, 0) == 0;
            }
        }
        if (fill(buf, name, plus ? &st : NULL, (off_t)i + 1, plus ? FUSE_FILL_DIR_PLUS : 0))
            break;
    }
    return 0;
}

static int fs_releasedir(const char *path, struct fuse_file_info *fi)
{
    (void)path;
    dirsnap_free((dirsnap_t *)(uintptr_t)fi->fh);
    return 0;
}

static int fs_open(const char *path, struct fuse_file_info *fi)
{
    if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC))
        return -EROFS;
    int e;
    lors_dir_file_t *f = lookup(path, &e);
    if (!f)
        return -e;
    handle_t *h = calloc(1, sizeof *h);
    if (!h || !(h->s = lors_stream_open(f->r))) {
        free(h);
        lors_dir_put(M->dir, f);
        return -ENOMEM;
    }
    h->f = f;
    pthread_mutex_init(&h->mu, NULL);
    fi->fh = (uint64_t)(uintptr_t)h;
    fi->direct_io = (unsigned)(M->direct_io != 0);
    return 0;
}

static int fs_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
    (void)path;
    handle_t *h = (handle_t *)(uintptr_t)fi->fh;
    int rc = LORS_OK;
    char err[600];
    int64_t got;
    if (pthread_mutex_trylock(&h->mu) == 0) {
        got = lors_stream_pread(h->s, buf, size, off, &rc, err, sizeof err);
        pthread_mutex_unlock(&h->mu);
    } else {
        got = lors_reader_pread(h->f->r, buf, size, off, &rc, err, sizeof err);
    }
    if (got < 0 || (rc != LORS_OK && (size_t)got < size)) {
        logf_("%s: read of bytes %lld-%lld failed (EIO): %s", h->f->name, (long long)off,
              (long long)off + (long long)size - 1, err);
        return got > 0 ? (int)got : -EIO;
    }
    return (int)got;
}

static int fs_release(const char *path, struct fuse_file_info *fi)
{
    (void)path;
    handle_t *h = (handle_t *)(uintptr_t)fi->fh;
    lors_stream_close(h->s);
    lors_dir_put(M->dir, h->f);
    pthread_mutex_destroy(&h->mu);
    free(h);
    return 0;
}

static int fs_statfs(const char *path, struct statvfs *st)
{
    (void)path;
    memset(st, 0, sizeof *st);
    st->f_bsize = st->f_frsize = 1 << 20;
    st->f_namemax = 1023;
    /* as inodes: the exNodes kept parsed for the next lookup (df -i), at most LORS_DIR_KEEP */
    st->f_files = LORS_DIR_KEEP;
    st->f_ffree = st->f_favail = LORS_DIR_KEEP - lors_dir_kept(M->dir);
    st->f_flag = ST_RDONLY | ST_NOSUID | ST_NODEV;
    return 0;
}

static const struct fuse_operations ops = {
    .init = fs_init,
    .getattr = fs_getattr,
    .opendir = fs_opendir,
    .readdir = fs_readdir,
    .releasedir = fs_releasedir,
    .open = fs_open,
    .read = fs_read,
    .release = fs_release,
    .statfs = fs_statfs,
};

int lmount_run(const lmount_cfg_t *cfg, const char *mountpoint, int fuse_argc, char **fuse_argv,
               int foreground, char *err, size_t errlen)
{
    struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
    struct fuse *fs = NULL;
    struct fuse_loop_config *lc = NULL;
    int mounted = 0, handlers = 0, code = 1;
    M = cfg;
    clock_gettime(CLOCK_REALTIME, &mounted_at);
    for (int i = 0; i < fuse_argc; i++)
        if (fuse_opt_add_arg(&args, fuse_argv[i]) != 0)
            goto oom;
    /* read-only whatever was asked; named for mount(8) and df(1) */
    if (fuse_opt_add_arg(&args, "-oro,default_permissions,fsname=lors,subtype=lors") != 0)
        goto oom;
    if (!(fs = fuse_new(&args, &ops, sizeof ops, NULL))) {
        lns_err_set(err, errlen, "the FUSE options are not valid (see lors_mount --help)");
        goto out;
    }
    if (fuse_mount(fs, mountpoint) != 0) {
        lns_err_set(err, errlen, "cannot mount on %s (is it an empty directory you may write, and "
                              "is /dev/fuse there?)", mountpoint);
        goto out;
    }
    mounted = 1;
    if (fuse_daemonize(foreground) != 0) {
        lns_err_set(err, errlen, "cannot detach from the terminal");
        goto out;
    }
    if (fuse_set_signal_handlers(fuse_get_session(fs)) != 0) {
        lns_err_set(err, errlen, "cannot set the signal handlers");
        goto out;
    }
    handlers = 1;
    if (!(lc = fuse_loop_cfg_create()))
        goto oom;
    fuse_loop_cfg_set_max_threads(lc, 64);
    fuse_loop_cfg_set_idle_threads(lc, 8);
    code = fuse_loop_mt(fs, lc) < 0;
    while (snaps) /* no request comes any more: the session is over */
        dirsnap_free(snaps);
    if (code)
        lns_err_set(err, errlen, "the FUSE session failed");
    goto out;
oom:
    lns_err_set(err, errlen, "out of memory");
out:
    if (lc)
        fuse_loop_cfg_destroy(lc);
    if (handlers)
        fuse_remove_signal_handlers(fuse_get_session(fs));
    if (mounted)
        fuse_unmount(fs);
    if (fs)
        fuse_destroy(fs);
    fuse_opt_free_args(&args);
    return code;
}
