/* lmount.h -- the FUSE file system of lors_mount: the network files of a lors_dir (lors.h) as
 * read-only regular files in one directory, read through the random-access reader. */
#ifndef LNS_LMOUNT_H
#define LNS_LMOUNT_H

#include <stdio.h>

#include "lors.h"

typedef struct lmount_cfg {
    lors_dir_t *dir;     /* what is shown */
    FILE *log;           /* a line per read that failed, naming the file and its bytes */
    int direct_io;       /* reads bypass the page cache and its read-ahead (no MAP_SHARED) */
} lmount_cfg_t;

/* Mount at mountpoint with the FUSE options in fuse_argv (fuse_argc strings, the first the
 * program's name: "-o", "allow_other", "-d", ...; read-only whatever they say), detach from
 * the terminal unless foreground, and serve until unmounted (fusermount3 -u, umount) or sent
 * SIGINT, SIGTERM or SIGHUP.  Nothing of cfg->dir may have started a thread yet (detaching
 * forks).  0 once unmounted; else a line in err and 1 (bad options, the mount failed). */
int lmount_run(const lmount_cfg_t *cfg, const char *mountpoint, int fuse_argc, char **fuse_argv,
               int foreground, char *err, size_t errlen);

#endif
