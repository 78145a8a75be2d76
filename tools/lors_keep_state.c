/* lors_keep_state.c -- lors_keep's state file: a SQLite database of what a restart needs.
 *
 *   pending(exnode, cap, made): every allocation a repair made, recorded (and synced to disk)
 *     before any byte is stored in it, until the exNode that holds it is on disk.  A keeper
 *     killed in between finds it here on its next start: in the exNode (written just before
 *     the kill) it is dropped from the table; not in it, it is freed (DECR).  An allocation
 *     whose depot does not answer stays listed and is tried again on every pass.
 *   files(exnode, last_pass, next_due, status): when each file was last kept and when it is
 *     due again, so a restarted daemon picks up its schedule instead of starting over.
 * WAL, synchronous=FULL: a row is on disk when the call returns.  One connection, used by
 * the worker threads too (on_alloc), under one mutex.
 *
 * The rows are manage capabilities, secrets like an exNode's (0600): the file is created
 * 0600 before SQLite opens it, and SQLite gives its -wal, -shm and -journal the database's
 * mode.  A file or side file open to others (as keepers before this left them) is made
 * owner-only and said, not refused: refusing, as ssh refuses a key, would stop every keeper
 * an upgrade finds with such a file, and would close nothing that tightening leaves open.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lns_err.h"
#include "lors_keep_state.h"

struct keep_state {
    sqlite3 *db;
    pthread_mutex_t mu;
};

static const char *const SCHEMA =
    "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
    "CREATE TABLE IF NOT EXISTS pending(exnode TEXT NOT NULL, cap TEXT NOT NULL,"
    " made INTEGER NOT NULL, PRIMARY KEY(exnode, cap));"
    "CREATE TABLE IF NOT EXISTS files(exnode TEXT PRIMARY KEY, last_pass INTEGER,"
    " next_due INTEGER, status TEXT);";

/* Create path 0600 if it is not there, and take group and other bits off it and off the side
 * files SQLite has left beside it.  0 (nothing to tighten), 1 with a warning in err naming
 * what was open, or -1 with the failure in err. */
static int make_private(const char *path, char *err, size_t errlen)
{
    static const char *const side[] = {"", "-wal", "-shm", "-journal"};
    char opened[160] = "";
    size_t k = 0;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return lns_err_set(err, errlen, "%s: %s", path, strerror(errno));
    close(fd);
    for (size_t i = 0; i < sizeof side / sizeof side[0]; i++) {
        char p[4200];
        struct stat st;
        snprintf(p, sizeof p, "%s%s", path, side[i]);
        if (stat(p, &st) != 0 || !(st.st_mode & 077))
            continue;
        if (chmod(p, st.st_mode & 0700) != 0)
            return lns_err_set(err, errlen, "%s: open to others (mode %04o) and cannot be "
                               "made private: %s", p, (unsigned)(st.st_mode & 07777),
                               strerror(errno));
        int n = snprintf(opened + k, sizeof opened - k, "%s%s %04o", k ? ", " : "",
                         i ? side[i] : "the file", (unsigned)(st.st_mode & 07777));
        if (n > 0 && (size_t)n < sizeof opened - k)
            k += (size_t)n;
    }
    if (!k)
        return 0;
    lns_err_set(err, errlen, "%s: was open to others (%s); made owner-only: it holds manage "
                "capabilities", path, opened);
    return 1;
}

int ks_open(const char *path, keep_state_t **out, char *err, size_t errlen)
{
    keep_state_t *s = calloc(1, sizeof *s);
    char *msg = NULL;
    *out = NULL;
    if (!s)
        return lns_err_set(err, errlen, "out of memory");
    int tightened = make_private(path, err, errlen);
    if (tightened < 0) {
        free(s);
        return -1;
    }
    if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                        SQLITE_OPEN_FULLMUTEX, NULL) != SQLITE_OK ||
        sqlite3_busy_timeout(s->db, 5000) != SQLITE_OK ||
        sqlite3_exec(s->db, SCHEMA, NULL, NULL, &msg) != SQLITE_OK) {
        lns_err_set(err, errlen, "%s: %s", path, msg ? msg : sqlite3_errmsg(s->db));
        sqlite3_free(msg);
        sqlite3_close(s->db);
        free(s);
        return -1;
    }
    pthread_mutex_init(&s->mu, NULL);
    *out = s;
    return tightened;
}

void ks_close(keep_state_t *s)
{
    if (!s)
        return;
    sqlite3_close(s->db);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* Run sql with text parameters a, b and integer c (unused ones ignored). */
static int run(keep_state_t *s, const char *sql, const char *a, const char *b, int64_t c,
               int64_t d)
{
    sqlite3_stmt *st = NULL;
    int rc;
    pthread_mutex_lock(&s->mu);
    rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) {
        int np = sqlite3_bind_parameter_count(st);
        if (np >= 1)
            sqlite3_bind_text(st, 1, a, -1, SQLITE_STATIC);
        if (np >= 2)
            sqlite3_bind_text(st, 2, b, -1, SQLITE_STATIC);
        if (np >= 3)
            sqlite3_bind_int64(st, 3, c);
        if (np >= 4)
            sqlite3_bind_int64(st, 4, d);
        rc = sqlite3_step(st);
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&s->mu);
    return rc == SQLITE_DONE ? 0 : -1;
}

int ks_pending_add(keep_state_t *s, const char *exnode, const char *cap, int64_t now)
{
    return run(s, "INSERT OR REPLACE INTO pending(exnode, cap, made) VALUES(?1, ?2, ?3)",
               exnode, cap, now, 0);
}

int ks_pending_del(keep_state_t *s, const char *exnode, const char *cap)
{
    return run(s, "DELETE FROM pending WHERE exnode = ?1 AND cap = ?2", exnode, cap, 0, 0);
}

int ks_pending_list(keep_state_t *s, const char *exnode, char ***caps, size_t *n)
{
    sqlite3_stmt *st = NULL;
    char **v = NULL;
    size_t cnt = 0;
    int rc, bad = 0;
    *caps = NULL;
    *n = 0;
    pthread_mutex_lock(&s->mu);
    rc = sqlite3_prepare_v2(s->db, "SELECT cap FROM pending WHERE exnode = ?1 ORDER BY made",
                            -1, &st, NULL);
    if (rc == SQLITE_OK)
        sqlite3_bind_text(st, 1, exnode, -1, SQLITE_STATIC);
    while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        char **nv = realloc(v, (cnt + 1) * sizeof *nv);
        char *c = strdup((const char *)sqlite3_column_text(st, 0));
        if (!nv || !c) {
            free(c);
            if (nv)
                v = nv;
            bad = 1;
            break;
        }
        v = nv;
        v[cnt++] = c;
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&s->mu);
    if (bad || (rc != SQLITE_DONE && rc != SQLITE_OK)) {
        ks_strings_free(v, cnt);
        return -1;
    }
    *caps = v;
    *n = cnt;
    return 0;
}

void ks_strings_free(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

int ks_file_put(keep_state_t *s, const char *exnode, const char *status, int64_t last_pass,
                int64_t next_due)
{
    return run(s, "INSERT OR REPLACE INTO files(exnode, status, last_pass, next_due)"
               " VALUES(?1, ?2, ?3, ?4)", exnode, status, last_pass, next_due);
}

int64_t ks_file_due(keep_state_t *s, const char *exnode)
{
    sqlite3_stmt *st = NULL;
    int64_t due = 0;
    pthread_mutex_lock(&s->mu);
    if (sqlite3_prepare_v2(s->db, "SELECT next_due FROM files WHERE exnode = ?1", -1, &st,
                           NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, exnode, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW)
            due = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&s->mu);
    return due;
}
