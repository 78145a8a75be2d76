/* lors_share.c -- lors_share: share a network file (or a byte range of it) read-only, and
 * revoke the share later.
 *
 * A front end over lors_share() and lors_share_revoke() (lors.h).  The shared exNode holds
 * only alias READ capabilities: any lors_download reads it as it is, nobody can write, free
 * or extend through it.  What revokes it -- each alias's MANAGE capability beside its
 * allocation's -- goes to a separate file the owner keeps (mode 0600, one alias a line),
 * written before the shared exNode; neither replaces an existing file.  If either cannot be
 * written, or the run is interrupted, the aliases made are revoked again before exit.
 * --revoke FILE revokes every alias of such a file and says, per depot, how many went.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lns_err.h"
#include "lors.h"
#include "tool.h"
#include "tool_opt.h"

static const char *TOOL = "lors_share";
static const char REVOKE_HEADER[] = "# lors_share revoke file: alias MANAGE capability, then "
                                    "its allocation's MANAGE capability\n";

typedef struct settings {
    tool_common_t c;
    const char *output, *revoke_file, *revoke;
    int64_t offset, length, duration;
} settings_t;

#define S(field) TOOL_OFF(settings_t, field)

static const tool_opt_t opts[] = {
    TOOL_OPT_EXNODE,
    {TOOL_OPT_STR, "output", 'o', NULL, S(output), 0, 0, NULL, "FILE",
     "write the shared exNode here (- is stdout; never replaces a file)", NULL},
    {TOOL_OPT_STR, "revoke-file", 0, NULL, S(revoke_file), 0, 0, NULL, "FILE",
     "keep what revokes the share here (default: FILE.revoke of -o;\nmode 0600; never replaces a file)",
     NULL},
    TOOL_OPT_RANGE(S(offset), S(length), "share the bytes from N on (K, M, G, T)",
                   "... and before N + this (default: to the end)"),
    {TOOL_OPT_SECONDS, "duration", 'd', NULL, S(duration), 1, INT64_MAX, NULL, "T",
     "the share ends after T (s, m, h, d; default: when each\nallocation does)", NULL},
    {TOOL_OPT_STR, "revoke", 0, NULL, S(revoke), 0, 0, NULL, "REVOKE_FILE",
     "revoke the share of that file instead (no EXNODE)", NULL},
    TOOL_OPT_TIMEOUT("30s", "longest wait of any one depot call"),
    TOOL_OPT_IBP_WIRE,
    TOOL_OPT_VERBOSE("name each alias made or revoked"),
    TOOL_OPT_QUIET(0),
    TOOL_OPT_SETTINGS,
    TOOL_OPT_TABLE_END,
};

static int check(void *sp, int argc, char **argv, int first)
{
    settings_t *f = sp;
    if (f->revoke) {
        if (first < argc || f->c.file || f->output)
            return tool_usage(TOOL, "--revoke takes no exNode and no -o");
        return TOOL_EXIT_OK;
    }
    if (!f->output)
        return tool_usage(TOOL, "-o FILE: where to write the shared exNode");
    if (strcmp(f->output, "-") == 0 && !f->revoke_file)
        return tool_usage(TOOL, "-o - needs --revoke-file FILE");
    return TOOL_EXIT_OK;
}

static const tool_cmd_t cmd = {
    "lors_share",
    "Usage: lors_share [options] EXNODE -o SHARED\n"
    "       lors_share [options] --revoke REVOKE_FILE\n"
    "Share a network file, or a byte range of it, read-only: SHARED lists alias read\n"
    "capabilities only (IBP alias capabilities; ACCRE 1.4 and lns depots), and the owner\n"
    "revokes them with --revoke, leaving the file as it is.\n\n",
    "\nExit: 0 ok, 2 usage, 3 exNode, 4 local I/O (a file exists or cannot be written: the\n"
    "aliases made are revoked), 6 some bytes could not be shared (the depots that could not\n"
    "make aliases are named), 8 --revoke: some aliases are still there, 9 internal.\n"
    "See lors_share(1).\n",
    opts, sizeof(settings_t), check,
};

/* The revoke file, created (never replaced) with mode 0600. */
static int write_revoke_file(const char *path, const lors_share_key_t *k, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    FILE *f;
    if (fd < 0) {
        tool_error(TOOL, "%s: %s", path,
                   errno == EEXIST ? "exists; lors_share never replaces a revoke file"
                                   : strerror(errno));
        return TOOL_EXIT_IO;
    }
    if (!(f = fdopen(fd, "w"))) {
        close(fd);
        unlink(path);
        return TOOL_EXIT_INTERNAL;
    }
    fputs(REVOKE_HEADER, f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s %s\n", k[i].alias, k[i].master);
    if (fflush(f) != 0 || fsync(fd) != 0 || ferror(f)) {
        tool_error(TOOL, "%s: %s", path, strerror(errno));
        fclose(f);
        unlink(path);
        return TOOL_EXIT_IO;
    }
    fclose(f);
    return TOOL_EXIT_OK;
}

static int read_revoke_file(const char *path, lors_share_key_t **out, size_t *n)
{
    char line[2 * IBP_MAX_CAP + 16];
    FILE *f = fopen(path, "r");
    int lineno = 0;
    *out = NULL;
    *n = 0;
    if (!f) {
        tool_error(TOOL, "%s: %s", path, strerror(errno));
        return TOOL_EXIT_IO;
    }
    while (fgets(line, sizeof line, f)) {
        lors_share_key_t k;
        ibp_cap_t a, m;
        char extra[2];
        lineno++;
        if (line[0] == '#' || line[0] == '\n')
            continue;
        if (sscanf(line, "%639s %639s %1s", k.alias, k.master, extra) != 2 ||
            ibp_cap_parse(k.alias, &a) != IBP_OK || ibp_cap_parse(k.master, &m) != IBP_OK ||
            a.type != IBP_MANAGECAP || m.type != IBP_MANAGECAP) {
            tool_error(TOOL, "%s: line %d: expected two MANAGE capabilities", path, lineno);
            fclose(f);
            free(*out);
            *out = NULL;
            return TOOL_EXIT_USAGE;
        }
        lors_share_key_t *p = realloc(*out, (*n + 1) * sizeof *p);
        if (!p) {
            fclose(f);
            return TOOL_EXIT_INTERNAL;
        }
        *out = p;
        p[(*n)++] = k;
    }
    fclose(f);
    return TOOL_EXIT_OK;
}

/* --revoke: every alias of the file; one line per depot. */
static int revoke_all(const settings_t *f)
{
    lors_share_key_t *k;
    size_t n;
    int code = read_revoke_file(f->revoke, &k, &n), *rc, all;
    if (code)
        return code;
    if (!(rc = calloc(n ? n : 1, sizeof *rc))) {
        free(k);
        return TOOL_EXIT_INTERNAL;
    }
    all = lors_share_revoke(k, n, (int)f->c.timeout, rc);
    for (size_t i = 0; i < n; i++) {
        char dep[IBP_MAX_HOST + 8], dj[IBP_MAX_HOST + 8];
        int done = 0, gone = 0, failed = 0, seen = 0, why = IBP_OK;
        tool_mapping_depot(&(xnd_mapping_t){.cap = {k[i].alias}}, dep, sizeof dep);
        for (size_t j = 0; j < i && !seen; j++) {
            tool_mapping_depot(&(xnd_mapping_t){.cap = {k[j].alias}}, dj, sizeof dj);
            seen = strcmp(dj, dep) == 0;
        }
        if (seen)
            continue;
        for (size_t j = i; j < n; j++) {
            tool_mapping_depot(&(xnd_mapping_t){.cap = {k[j].alias}}, dj, sizeof dj);
            if (strcmp(dj, dep) != 0)
                continue;
            if (rc[j] == IBP_OK)
                done++;
            else if (rc[j] == IBP_E_CAP_NOT_FOUND)
                gone++;
            else {
                failed++;
                why = rc[j];
            }
            if (f->c.verbose)
                fprintf(stderr, "%s: %s: %s\n", TOOL, k[j].alias,
                        rc[j] == IBP_OK ? "revoked" : ibp_strerror(rc[j]));
        }
        if (failed)
            tool_error(TOOL, "%s: %d revoked, %d gone already, %d NOT revoked: %s", dep, done,
                       gone, failed, ibp_strerror(why));
        else if (!f->c.quiet)
            printf("%s: %d revoked, %d gone already\n", dep, done, gone);
    }
    free(rc);
    free(k);
    return all == LORS_OK ? TOOL_EXIT_OK : TOOL_EXIT_PARTIAL;
}

/* Undo a share that cannot be handed out: revoke its aliases, say what is left. */
static void undo(const lors_share_report_t *rep, int timeout)
{
    int *rc = calloc(rep->nkeys ? rep->nkeys : 1, sizeof *rc), left = 0;
    if (rc && lors_share_revoke(rep->keys, rep->nkeys, timeout, rc) != LORS_OK)
        for (size_t i = 0; i < rep->nkeys; i++)
            left += rc[i] != IBP_OK && rc[i] != IBP_E_CAP_NOT_FOUND;
    if (!rc || left)
        tool_error(TOOL, "%d aliases could not be revoked; they end when their allocations do",
                   rc ? left : (int)rep->nkeys);
    free(rc);
}

int main(int argc, char **argv)
{
    settings_t f;
    lors_share_opts_t so;
    lors_share_report_t rep = {0};
    xnd_t *x = NULL, *s = NULL;
    const char *path;
    char rpath[4096];
    int code, first, lrc;

    code = tool_opt_parse(&cmd, argc, argv, &f, &first);
    if (code)
        return code;
    if (f.revoke) {
        code = revoke_all(&f);
        tool_opt_free(&f);
        return code;
    }
    if ((code = tool_open_exnode(TOOL, f.c.file, argc, argv, first, &path, &x)) != TOOL_EXIT_OK) {
        tool_opt_free(&f);
        return code;
    }
    snprintf(rpath, sizeof rpath, "%s%s", f.revoke_file ? f.revoke_file : f.output,
             f.revoke_file ? "" : ".revoke");
    if (access(rpath, F_OK) == 0) { /* checked before any depot call, again at the write */
        tool_error(TOOL, "%s: exists; lors_share never replaces a revoke file", rpath);
        code = TOOL_EXIT_IO;
        goto done;
    }
    if ((code = tool_check_output(TOOL, f.output, NULL, 0, &(int){0})) != TOOL_EXIT_OK)
        goto done;

    lors_share_opts_init(&so);
    so.offset = f.offset >= 0 ? f.offset : 0;
    so.length = f.length >= 0 ? f.length : -1;
    so.duration_s = f.duration > 0 ? f.duration : 0;
    so.timeout_s = (int)f.c.timeout;
    so.stop = tool_stop_install(TOOL, NULL);
    lrc = lors_share(&so, x, &s, &rep);
    for (size_t i = 0; i < rep.nskipped; i++)
        tool_error(TOOL, "mapping %d (%s): not shared: %s%s", rep.skipped[i].mapping,
                   rep.skipped[i].depot, rep.skipped[i].why,
                   lrc == LORS_OK ? " (other mappings hold its bytes)" : "");
    if (lrc != LORS_OK) {
        tool_error(TOOL, "%s: %s%s", path, rep.error,
                   rep.unrevoked ? "; some aliases could not be revoked" : "");
        code = tool_stop_exit_code() ? tool_stop_exit_code()
               : lrc == LORS_E_NO_REPLICA ? TOOL_EXIT_NO_DATA : tool_exit_code(lrc);
        goto done;
    }
    if ((code = write_revoke_file(rpath, rep.keys, rep.nkeys)) != TOOL_EXIT_OK) {
        undo(&rep, (int)so.timeout_s);
        goto done;
    }
    if ((code = tool_save_exnode(TOOL, s, f.output, 0)) != TOOL_EXIT_OK) {
        undo(&rep, (int)so.timeout_s);
        unlink(rpath);
        goto done;
    }
    if (tool_stop_exit_code()) { /* interrupted after the share was made: undo it */
        undo(&rep, (int)so.timeout_s);
        unlink(rpath);
        if (strcmp(f.output, "-") != 0)
            unlink(f.output);
        code = tool_stop_exit_code();
        goto done;
    }
    if (f.c.verbose)
        for (size_t i = 0; i < rep.nkeys; i++)
            fprintf(stderr, "%s: alias %s\n", TOOL, rep.keys[i].alias);
    if (!f.c.quiet && strcmp(f.output, "-") != 0)
        fprintf(stderr, "%s: %s: %zu aliases; revoke with: lors_share --revoke %s\n", TOOL,
                f.output, rep.nkeys, rpath);

done:
    lors_share_report_free(&rep);
    xnd_free(s);
    xnd_free(x);
    tool_opt_free(&f);
    return code;
}
