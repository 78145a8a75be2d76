/* xnd.h -- libexnode: the exNode of a network file, read from and written to the LoCI XML format.
 *
 * An exNode maps ranges of a file onto IBP allocations.  xnd_t holds the file-level metadata
 * and the mappings in document order; each xnd_mapping_t holds the numbers and times LoRS
 * uses as plain fields, its capabilities, an optional end-to-end function tree, and every
 * piece of metadata we do not interpret, kept in order with its type so that an exNode from
 * another tool survives a read-modify-write untouched.  Elements from other namespaces are
 * kept too (opaque to the caller) and written back.
 *
 * Every call that can fail returns XND_OK (0) or a negative xnd_err; xnd_strerror() gives
 * the words.  Calls that parse, validate or write also take err[errlen], which receives one
 * line such as "line 12: mapping 3: logical_length is negative".  Mappings are numbered from
 * 0 in document order, as lors_ls prints them and lors_trim -m takes them.
 *
 * The parser trusts nothing: no network, no DTD, no entity substitution (a DOCTYPE is
 * refused outright), size and depth limits, strict number syntax.  See docs/exnode.md.
 * An xnd_t is not thread-safe; share it read-only or lock around it.
 */
#ifndef LNS_XND_H
#define LNS_XND_H

#include <stddef.h>
#include <stdint.h>

#pragma GCC visibility push(default) /* the library's exports: what this header declares */

#ifdef __cplusplus
extern "C" {
#endif

#define XND_NAMESPACE "http://loci.cs.utk.edu/exnode"
#define XND_DEFAULT_MAX_SIZE (256u << 20) /* largest exNode document we parse, bytes */
#define XND_DEFAULT_MAX_DEPTH 32          /* deepest element nesting we parse */
#define XND_TIME_UNKNOWN INT64_MIN        /* a start/end that is absent or not understood */

typedef enum xnd_err {
    XND_OK = 0,
    XND_E_NOMEM = -1,     /* out of memory */
    XND_E_INVAL = -2,     /* bad argument to a call */
    XND_E_NOTFOUND = -3,  /* no such metadata or mapping */
    XND_E_TYPE = -4,      /* metadata of another type than asked */
    XND_E_XML = -5,       /* not well-formed XML */
    XND_E_FORBIDDEN = -6, /* DOCTYPE, entity declaration or external reference */
    XND_E_NAMESPACE = -7, /* not an exNode, or our elements in another namespace */
    XND_E_FORMAT = -8,    /* structure: missing or repeated element or attribute */
    XND_E_NUMBER = -9,    /* not a decimal integer within int64, or negative where it must not */
    XND_E_RANGE = -10,    /* a mapping overflows, runs past the file or past its allocation */
    XND_E_CAP = -11,      /* a mapping without capabilities, or a malformed one */
    XND_E_LIMIT = -12,    /* input larger or deeper than the configured limits */
    XND_E_IO = -13,       /* reading or writing a file */
    XND_E_EXISTS = -14,   /* xnd_write_file_excl: the file is there already */
    XND_E_CHANGED = -15,  /* xnd_update_file: the file is no longer the one read */
    XND_E_BUSY = -16      /* xnd_lock_file, xnd_update_file: another process holds the lock */
} xnd_err;

const char *xnd_strerror(int err);

/* ---- typed metadata ------------------------------------------------------------------- */

typedef enum xnd_type {
    XND_STRING = 0,
    XND_INTEGER,
    XND_DOUBLE,
    XND_META,  /* nested list */
    XND_OTHER  /* a type we do not know; kept as written in type_name */
} xnd_type;

typedef struct xnd_meta xnd_meta_t;

/* An ordered list of metadata (names may repeat; lookups take the first). */
typedef struct xnd_meta_list {
    xnd_meta_t *items;
    size_t n, cap;
} xnd_meta_list_t;

struct xnd_meta {
    char *name;
    xnd_type type;
    char *type_name;     /* XND_OTHER only: the type attribute as written */
    char *text;          /* the value as written ("" for XND_META) */
    int64_t i;           /* XND_INTEGER: the value */
    double d;            /* XND_DOUBLE: the value */
    xnd_meta_list_t sub; /* XND_META: the nested list */
    int line;            /* source line, 0 if made by a call */
};

const xnd_meta_t *xnd_meta_find(const xnd_meta_list_t *l, const char *name);
/* Getters: XND_E_NOTFOUND, XND_E_TYPE (get_double also takes an integer). *out stays valid
 * until the list changes. */
int xnd_meta_get_string(const xnd_meta_list_t *l, const char *name, const char **out);
int xnd_meta_get_int(const xnd_meta_list_t *l, const char *name, int64_t *out);
int xnd_meta_get_double(const xnd_meta_list_t *l, const char *name, double *out);
int xnd_meta_get_meta(xnd_meta_list_t *l, const char *name, xnd_meta_list_t **out);
/* Setters replace the first entry of that name in place (whatever its type) or append one. */
int xnd_meta_set_string(xnd_meta_list_t *l, const char *name, const char *value);
int xnd_meta_set_int(xnd_meta_list_t *l, const char *name, int64_t value);
int xnd_meta_set_double(xnd_meta_list_t *l, const char *name, double value);
/* A nested list under name (made empty if name held another type); *out for adding to it. */
int xnd_meta_set_meta(xnd_meta_list_t *l, const char *name, xnd_meta_list_t **out);
int xnd_meta_remove(xnd_meta_list_t *l, const char *name); /* the first one; XND_E_NOTFOUND */
int xnd_meta_list_copy(xnd_meta_list_t *dst, const xnd_meta_list_t *src); /* dst empty */
void xnd_meta_list_clear(xnd_meta_list_t *l);

/* ---- end-to-end functions -------------------------------------------------------------- */

/* <exnode:function name=".."> with typed arguments, metadata and sub-functions.  We name
 * LoRS's checksum, des_encrypt, xor_encrypt, aes_encrypt and zlib_compress but interpret none:
 * every function is kept as written. */
typedef struct xnd_func {
    char *name;
    xnd_meta_list_t args; /* <exnode:argument name type>, typed like metadata */
    xnd_meta_list_t meta;
    struct xnd_func **subs;
    size_t nsubs, capsubs;
    int line;
    struct xnd_raw *extra; /* private: foreign elements inside */
} xnd_func_t;

xnd_func_t *xnd_func_new(const char *name);
void xnd_func_free(xnd_func_t *f);
int xnd_func_add_sub(xnd_func_t *f, xnd_func_t *sub); /* takes sub */

/* ---- mappings -------------------------------------------------------------------------- */

typedef enum xnd_capkind { XND_READ = 0, XND_WRITE = 1, XND_MANAGE = 2 } xnd_capkind;

/* start or end: the epoch (UTC seconds) and the text as written, for the round trip. */
typedef struct xnd_stamp {
    int64_t epoch;  /* XND_TIME_UNKNOWN if absent or not understood */
    char *text;     /* NULL if absent */
    xnd_type type;  /* XND_STRING ("YYYY-MM-DD HH:MM:SS") or XND_INTEGER (epoch) */
} xnd_stamp_t;

/* Source lines of a mapping's parts, for messages; 0 where absent or made by a call. */
enum { XND_L_MAPPING, XND_L_EXNODE_OFFSET, XND_L_LOGICAL_LENGTH, XND_L_ALLOC_OFFSET,
       XND_L_ALLOC_LENGTH, XND_L_E2E_BLOCKSIZE, XND_L_READ, XND_L_WRITE, XND_L_MANAGE,
       XND_L_COUNT };

/* Read the fields freely.  After changing exnode_offset or logical_length of a mapping that
 * is in an xnd_t, call xnd_changed() so the sorted view is rebuilt. */
typedef struct xnd_mapping {
    int64_t exnode_offset;  /* where the data sits in the file */
    int64_t logical_length; /* how many bytes of the file it holds */
    int64_t alloc_offset;   /* where the data starts inside the allocation */
    int64_t alloc_length;   /* size of the allocation */
    int64_t e2e_blocksize;
    int has_e2e_blocksize;  /* written only if set (or read) */
    xnd_stamp_t start, end;
    char *cap[3];           /* indexed by xnd_capkind; NULL if absent */
    xnd_func_t *func;       /* NULL if none */
    xnd_meta_list_t meta;   /* metadata we did not interpret, in order, with types */
    int line[XND_L_COUNT];
    struct xnd_raw *extra;  /* private: foreign elements inside the mapping */
} xnd_mapping_t;

xnd_mapping_t *xnd_mapping_new(void);
void xnd_mapping_free(xnd_mapping_t *m);
xnd_mapping_t *xnd_mapping_copy(const xnd_mapping_t *m); /* deep */
int xnd_mapping_set_cap(xnd_mapping_t *m, xnd_capkind kind, const char *cap); /* NULL removes */
/* Set start (which 0) or end (which 1) from an epoch, written "YYYY-MM-DD HH:MM:SS" UTC. */
int xnd_mapping_set_time(xnd_mapping_t *m, int which, int64_t epoch);
void xnd_mapping_set_func(xnd_mapping_t *m, xnd_func_t *f); /* takes f; frees the old one */

/* Parse "YYYY-MM-DD HH:MM:SS" (UTC) or a decimal epoch; -1 if neither. */
int xnd_time_parse(const char *s, int64_t *epoch);
/* Format as "YYYY-MM-DD HH:MM:SS" UTC into buf[>= 32]. */
void xnd_time_format(int64_t epoch, char *buf, size_t size);

/* ---- the exNode ------------------------------------------------------------------------ */

typedef struct xnd {
    xnd_meta_list_t meta; /* file-level metadata in document order (filename, size, ...) */
    xnd_mapping_t **maps; /* document order; new ones are appended */
    size_t nmaps, capmaps;
    /* private */
    xnd_mapping_t **sorted;
    int sorted_ok;
    int64_t *sorted_maxend;
    struct xnd_raw *root;  /* namespace declarations and attributes of the root element */
    struct xnd_raw *extra; /* foreign elements at the top level */
} xnd_t;

xnd_t *xnd_new(void);
void xnd_free(xnd_t *x);
/* The "size" metadata: the file size, or -1 if absent.  set_size writes it. */
int64_t xnd_size(const xnd_t *x);
/* The file's length: its "size", else (an exNode without one) the end of its last mapping;
 * 0 for none. */
int64_t xnd_extent(const xnd_t *x);
int xnd_set_size(xnd_t *x, int64_t size);

int xnd_append(xnd_t *x, xnd_mapping_t *m); /* takes m (also on failure) */
int xnd_remove(xnd_t *x, size_t index);     /* frees it; later ones move down */
void xnd_changed(xnd_t *x);                 /* a mapping's offset or length was edited */

/* Mappings ordered by (exnode_offset, logical_length, document order).  The array belongs to
 * x and stays valid until x changes.  NULL only when out of memory (with *n = 0). */
xnd_mapping_t *const *xnd_sorted(xnd_t *x, size_t *n);
/* Mappings holding any byte of [offset, offset+length), in sorted order; *out is malloc'd
 * (free it; NULL when *n is 0). */
int xnd_find(xnd_t *x, int64_t offset, int64_t length, xnd_mapping_t ***out, size_t *n);
/* Replicas of a range: the mappings that hold all of [offset, offset+length). */
int xnd_replicas(xnd_t *x, int64_t offset, int64_t length, xnd_mapping_t ***out, size_t *n);

/* A range of the file and how many (counted) mappings cover it; count 0 is a gap. */
typedef struct xnd_range {
    int64_t offset, length;
    size_t count;
} xnd_range_t;

/* The file from 0 to max(size, end of the last mapping) cut into ranges of constant
 * coverage, adjacent ranges with equal counts merged.  count_it (NULL: all) chooses which
 * mappings count, e.g. only live ones for lors_ls -l.  *out is malloc'd; free it. */
int xnd_coverage(const xnd_t *x, int (*count_it)(const xnd_mapping_t *m, void *arg), void *arg,
                 xnd_range_t **out, size_t *n);
/* xnd_coverage counting groups, not mappings: a range's count is the number of distinct
 * group_of(m) (small numbers from 0, e.g. a depot's index) among the counted mappings over
 * it, so two copies on one depot count once. */
int xnd_coverage_by(const xnd_t *x, int (*count_it)(const xnd_mapping_t *m, void *arg),
                    size_t (*group_of)(const xnd_mapping_t *m, void *arg), void *arg,
                    xnd_range_t **out, size_t *n);

/* ---- reading, checking, writing -------------------------------------------------------- */

typedef struct xnd_opts {
    size_t max_size; /* 0: XND_DEFAULT_MAX_SIZE */
    int max_depth;   /* 0: XND_DEFAULT_MAX_DEPTH */
    int lax;         /* 1: skip the strict checks (see xnd_validate) */
} xnd_opts_t;

/* Parse an exNode document; *out is new on XND_OK, NULL otherwise.  opts NULL: defaults. */
int xnd_parse_buf(const char *buf, size_t len, xnd_t **out, char *err, size_t errlen);
int xnd_parse_buf_opts(const char *buf, size_t len, const xnd_opts_t *opts, xnd_t **out,
                       char *err, size_t errlen);
/* Read and parse a file; "-" is stdin. */
int xnd_read_file(const char *path, xnd_t **out, char *err, size_t errlen);
int xnd_read_file_opts(const char *path, const xnd_opts_t *opts, xnd_t **out, char *err,
                       size_t errlen);
/* Read an open descriptor to its end and parse what it held (fd stays open, the caller's).
 * With raw not NULL, on XND_OK *raw holds the very bytes parsed (malloc'd, *rawlen of them):
 * a digest of them describes this exNode even if its file has been replaced since it was
 * opened, where reading the path again might find another one. */
int xnd_read_fd_opts(int fd, const xnd_opts_t *opts, xnd_t **out, char **raw, size_t *rawlen,
                     char *err, size_t errlen);

/* Check the model.  Always: numbers non-negative, offset+length without overflow.  Strict
 * (lax 0) also: each mapping has a capability, every capability is a well-formed IBP
 * capability of its kind, no mapping runs past "size", and without a function the data fits
 * its allocation (alloc_offset + logical_length <= alloc_length).  Gaps are allowed. */
int xnd_validate(const xnd_t *x, int lax, char *err, size_t errlen);

/* The LoCI XML text of x into *out (malloc'd, NUL-terminated; *len without the NUL).
 * Adds lorsversion metadata if x has none. */
int xnd_serialize(const xnd_t *x, char **out, size_t *len, char *err, size_t errlen);
/* Write atomically: a temporary file beside path, fsync, rename, fsync of the directory.
 * "-" is stdout.  A new file gets mode 0600 (capabilities are secrets); a replaced file
 * keeps its mode. */
int xnd_write_file(const xnd_t *x, const char *path, char *err, size_t errlen);
/* The same, but never replaces a file: XND_E_EXISTS if path exists, also when it appears
 * while the exNode is being written (the temporary file is put in place by a rename that
 * refuses to replace, or a hard link).  An exNode is the only handle on its allocations. */
int xnd_write_file_excl(const xnd_t *x, const char *path, char *err, size_t errlen);

/* ---- updating a file that others may update too (xnd_update.c) ---------------------------
 * A program that reads an exNode file, works on it and writes it back must not replace a
 * version someone else wrote meanwhile: each version is the only handle on its allocations.
 * The update is a compare-and-swap of the file's bytes under a POSIX record lock (fcntl,
 * which NFS carries to its lock manager, unlike flock on some systems) on the lock file
 * ".<name>.lock" beside it: read with a digest, update with that digest. */

/* A digest of an exNode file's bytes (SHA-256). */
typedef struct xnd_digest {
    unsigned char sha256[32];
} xnd_digest_t;

/* xnd_read_file_opts that also gives the digest of the bytes it parsed (path "-": stdin). */
int xnd_read_file_digest(const char *path, const xnd_opts_t *opts, xnd_t **out,
                         xnd_digest_t *digest, char *err, size_t errlen);
/* The digest of the file xnd_write_file would write for x (its serialization). */
int xnd_digest(const xnd_t *x, xnd_digest_t *digest, char *err, size_t errlen);

/* Take the update lock of path, waiting at most wait_ms for another process to let it go:
 * XND_OK with *fd holding it, XND_E_BUSY after the wait (err names the holder's pid), or
 * XND_E_IO.  A process that dies lets it go.  xnd_unlock_file(fd) releases it. */
int xnd_lock_file(const char *path, int wait_ms, int *fd, char *err, size_t errlen);
void xnd_unlock_file(int fd);
/* Replace path by x atomically (as xnd_write_file) only if it still holds the bytes that
 * *was is the digest of, checked and replaced under the update lock: lockfd, if the caller holds it
 * (xnd_lock_file), else taken here for the check and the rename (waiting at most
 * XND_LOCK_WAIT_MS).  XND_E_CHANGED, nothing written, when the file differs or is gone;
 * XND_E_BUSY when the lock stays taken.  On XND_OK, *now (if not NULL) is x's digest. */
#define XND_LOCK_WAIT_MS 30000
int xnd_update_file(const xnd_t *x, const char *path, const xnd_digest_t *was, int lockfd,
                    xnd_digest_t *now, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#pragma GCC visibility pop
#endif
