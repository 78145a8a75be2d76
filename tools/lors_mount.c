/* lors_mount.c -- lors_mount: network files as read-only local files through FUSE 3, for
 * programs that want a file and not a URL (tar, cmp, an editor, any player).  A thin front
 * end over the FUSE layer (mount/lmount.h) and lors_dir (lors.h): options, the log, the
 * detach.  Runs until unmounted (fusermount3 -u MOUNTPOINT) or sent SIGINT, SIGTERM or
 * SIGHUP, which unmount. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lmount.h"
#include "lns_err.h"
#include "lors.h"
#include "tool.h"
#include "tool_opt.h"

static const char *TOOL = "lors_mount";

typedef struct settings {
    tool_common_t c;
    const char *key_file, *log;
    int foreground, debug, direct_io, fetches;
    int64_t cache, readahead;
    const char *fopts[32]; /* the -o options, as given */
    int nfopts;
} settings_t;

#define S(field) TOOL_OFF(settings_t, field)

/* -o OPT[,OPT...]: given to FUSE as they are; repeated ones add up. */
static int add_fuse_opts(void *sp, const tool_opt_t *o, const char *name, const char *val,
                         tool_from from, char *err, size_t errlen)
{
    settings_t *f = sp;
    (void)o;
    (void)from;
    if (!val[0] || f->nfopts == (int)(sizeof f->fopts / sizeof f->fopts[0])) {
        lns_err_set(err, errlen, "%s: %s", name,
                 val[0] ? "too many of them" : "give FUSE options (allow_other, ...)");
        return -1;
    }
    f->fopts[f->nfopts++] = val;
    return 0;
}

static const tool_opt_t opts[] = {
    {TOOL_OPT_FN, "options", 'o', NULL, 0, 0, 0, NULL, "OPT[,OPT]",
     "FUSE mount options: allow_other, allow_root, auto_unmount,\n"
     "max_read=N, ... (see mount.fuse3(8)); always read-only", add_fuse_opts},
    {TOOL_OPT_SWITCH, "foreground", 'f', NULL, S(foreground), 1, 0, NULL, NULL,
     "stay in the foreground (default: detach once mounted)", NULL},
    {TOOL_OPT_SWITCH, "debug", 'd', NULL, S(debug), 1, 0, NULL, NULL,
     "print every FUSE request (implies --foreground)", NULL},
    {TOOL_OPT_SWITCH, "direct-io", 0, NULL, S(direct_io), 1, 0, NULL, NULL,
     "no page cache and no kernel read-ahead: faster random reads,\n"
     "but no shared mmap of the files", NULL},
    TOOL_OPT_READER(settings_t, "readers"),
    {TOOL_OPT_STR, "log", 0, NULL, S(log), 0, 0, NULL, "FILE",
     "a line per failed read, naming the file and its bytes (default:\n"
     "stderr in the foreground, none once detached)", NULL},
    TOOL_OPT_THREADS(0, "0", "streams of each download (0: automatic)"),
    TOOL_OPT_TIMEOUT("30s", "longest wait for any one depot: a read of bytes no depot\n"
                            "answers for fails (EIO) after it"),
    TOOL_OPT_IBP_WIRE,
    TOOL_OPT_QUIET('q'),
    TOOL_OPT_SETTINGS,
    TOOL_OPT_TABLE_END,
};

static int check(void *sp, int argc, char **argv, int first)
{
    (void)sp;
    if (argc - first < 2)
        return tool_usage(TOOL, "give one or more directories of exNodes or exNode files, "
                                "then the mount point");
    struct stat st;
    if (stat(argv[argc - 1], &st) != 0 || !S_ISDIR(st.st_mode))
        return tool_usage(TOOL, "the mount point %s: %s", argv[argc - 1],
                          errno && !S_ISDIR(st.st_mode) ? strerror(errno) : "not a directory");
    return TOOL_EXIT_OK;
}

static const tool_cmd_t cmd = {
    "lors_mount",
    "Usage: lors_mount [options] DIR|EXNODE... MOUNTPOINT\n"
    "Mount network files read-only through FUSE: a directory's NAME.xnd, and each EXNODE\n"
    "given, shows as MOUNTPOINT/NAME, a file of the network file's size whose reads come from\n"
    "the depots.  Unmount with fusermount3 -u MOUNTPOINT.\n\n",
    "\nExit: 0 unmounted, 2 usage, 4 local I/O (the log), 5 cannot mount, 7 key, 9 internal.\n"
    "See lors_mount(1).\n",
    opts, sizeof(settings_t), check,
};

int main(int argc, char **argv)
{
    settings_t f;
    int first, code;
    char err[600], **src = NULL;
    int nsrc = 0;
    tool_files_t tf;
    FILE *log = NULL;

    memset(&tf, 0, sizeof tf);
    code = tool_opt_parse(&cmd, argc, argv, &f, &first);
    if (code)
        return code;
    const char *mountpoint = argv[argc - 1];
    /* absolute: once detached, the working directory is "/" */
    nsrc = argc - first - 1;
    src = calloc((size_t)nsrc, sizeof *src);
    if (!src) {
        tool_error(TOOL, "out of memory");
        code = TOOL_EXIT_INTERNAL;
        goto done;
    }
    for (int i = 0; i < nsrc; i++)
        if (!(src[i] = realpath(argv[first + i], NULL))) {
            code = tool_usage(TOOL, "%s: %s", argv[first + i], strerror(errno));
            goto done;
        }
    if ((code = tool_files_open(TOOL, &tf, src, nsrc, f.c.threads, f.c.timeout, f.readahead,
                                f.cache, f.fetches, f.key_file)))
        goto done;
    if (f.log && !(log = fopen(f.log, "a"))) {
        tool_error(TOOL, "--log %s: %s", f.log, strerror(errno));
        code = TOOL_EXIT_IO;
        goto done;
    }
    char *fargv[2 * 32 + 2] = {argv[0]};
    int fargc = 1;
    for (int i = 0; i < f.nfopts; i++) {
        fargv[fargc++] = "-o";
        fargv[fargc++] = (char *)f.fopts[i];
    }
    if (f.debug)
        fargv[fargc++] = "-d";
    lmount_cfg_t mc = {tf.dir, log ? log : stderr, f.direct_io};
    int fg = f.foreground || f.debug;
    if (!f.c.quiet && fg) {
        size_t nd, nf;
        lors_dir_counts(tf.dir, &nd, &nf);
        fprintf(stderr, "%s: %zu director%s and %zu file%s on %s\n", TOOL, nd,
                nd == 1 ? "y" : "ies", nf, nf == 1 ? "" : "s", mountpoint);
    }
    if (lmount_run(&mc, mountpoint, fargc, fargv, fg, err, sizeof err) != 0) {
        tool_error(TOOL, "%s", err);
        code = TOOL_EXIT_DEPOTS;
        goto done;
    }
    code = TOOL_EXIT_OK;

done:
    tool_files_close(&tf);
    for (int i = 0; src && i < nsrc; i++)
        free(src[i]);
    free(src);
    if (log)
        fclose(log);
    tool_opt_free(&f);
    return code;
}
