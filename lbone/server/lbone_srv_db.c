/* lbone_srv_db.c -- the registry's durable copy in SQLite.
 *
 * One connection, used under one mutex, with every statement prepared once and every value
 * bound (no text from a request is ever pasted into SQL).  WAL journal with
 * synchronous=NORMAL: a commit is in the WAL before the reply leaves, so a killed server
 * (SIGKILL) loses nothing; only a power cut may lose the last moments, which the depots'
 * next heartbeats repair.  Each change is its own transaction; heartbeats are one UPDATE.
 */
#include "lbone_srv.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lns_err.h"
#include "lns_log.h"

#define SCHEMA_VERSION 2 /* 2: depots.pin */

struct lbone_db {
    sqlite3 *h;
    pthread_mutex_t mu;
    sqlite3_stmt *put, *beat, *del, *del_meas, *meas_add, *meas_trim, *meas_all, *load;
};

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS depots("
    " id TEXT PRIMARY KEY, host TEXT NOT NULL, port INTEGER NOT NULL, rid TEXT NOT NULL,"
    " hard_total INTEGER NOT NULL, hard_free INTEGER NOT NULL,"
    " soft_total INTEGER NOT NULL, soft_free INTEGER NOT NULL, max_duration INTEGER NOT NULL,"
    " lat REAL, lon REAL, place TEXT NOT NULL, contact TEXT NOT NULL,"
    " connection TEXT, monitoring INTEGER NOT NULL, power TEXT,"
    " open INTEGER NOT NULL, secret_sha256 BLOB NOT NULL,"
    " registered_ms INTEGER NOT NULL, last_heard_ms INTEGER NOT NULL,"
    " pin TEXT NOT NULL DEFAULT '');"
    "CREATE UNIQUE INDEX IF NOT EXISTS depots_key ON depots(host COLLATE NOCASE, port, rid);"
    "CREATE TABLE IF NOT EXISTS measurements("
    " seq INTEGER PRIMARY KEY AUTOINCREMENT, net TEXT NOT NULL, depot_id TEXT NOT NULL,"
    " t_ms INTEGER NOT NULL, mbps REAL NOT NULL);"
    "CREATE INDEX IF NOT EXISTS measurements_pair ON measurements(depot_id, net, seq);";

static int prep(lbone_db_t *db, sqlite3_stmt **st, const char *sql, char *err, size_t errlen)
{
    if (sqlite3_prepare_v3(db->h, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL) != SQLITE_OK) {
        lns_err_set(err, errlen, "db: preparing a statement: %s", sqlite3_errmsg(db->h));
        return -1;
    }
    return 0;
}

static int exec(lbone_db_t *db, const char *sql, char *err, size_t errlen)
{
    char *msg = NULL;
    if (sqlite3_exec(db->h, sql, NULL, NULL, &msg) != SQLITE_OK) {
        lns_err_set(err, errlen, "db: %s", msg ? msg : sqlite3_errmsg(db->h));
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

/* BEGIN, COMMIT, ROLLBACK: failures are logged, the caller only needs to know. */
static int tx(lbone_db_t *db, const char *sql)
{
    if (sqlite3_exec(db->h, sql, NULL, NULL, NULL) != SQLITE_OK) {
        lns_log(LNS_LOG_ERROR, "db: %s: %s", sql, sqlite3_errmsg(db->h));
        return -1;
    }
    return 0;
}

static int check_version(lbone_db_t *db, const char *path, char *err, size_t errlen)
{
    sqlite3_stmt *st;
    int version = 0;
    if (prep(db, &st, "SELECT value FROM meta WHERE key = 'schema'", err, errlen) < 0)
        return -1;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        version = atoi((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    if (version == 0) {
        char sql[128];
        snprintf(sql, sizeof sql, "INSERT INTO meta(key, value) VALUES('schema', '%d')",
                 SCHEMA_VERSION);
        return exec(db, sql, err, errlen);
    }
    if (version == 1) { /* before the depots' pins: add the column, every pin unknown */
        if (exec(db, "ALTER TABLE depots ADD COLUMN pin TEXT NOT NULL DEFAULT '';"
                     "UPDATE meta SET value = '2' WHERE key = 'schema';", err, errlen) < 0)
            return -1;
        version = 2;
    }
    if (version != SCHEMA_VERSION) {
        lns_err_set(err, errlen, "db: %s has schema version %d, this lbone_server knows %d", path,
                    version, SCHEMA_VERSION);
        return -1;
    }
    return 0;
}

lbone_db_t *lbone_db_open(const char *path, char *err, size_t errlen)
{
    lbone_db_t *db = calloc(1, sizeof *db);
    if (!db) {
        lns_err_set(err, errlen, "db: out of memory");
        return NULL;
    }
    pthread_mutex_init(&db->mu, NULL);
    if (sqlite3_open_v2(path, &db->h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                                          SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        lns_err_set(err, errlen, "db: cannot open %s: %s", path,
                    db->h ? sqlite3_errmsg(db->h) : "out of memory");
        lbone_db_close(db);
        return NULL;
    }
    sqlite3_busy_timeout(db->h, 5000);
    if (exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;",
             err, errlen) < 0 ||
        exec(db, schema, err, errlen) < 0 || check_version(db, path, err, errlen) < 0 ||
        prep(db, &db->put,
             "INSERT OR REPLACE INTO depots(id, host, port, rid, hard_total, hard_free,"
             " soft_total, soft_free, max_duration, lat, lon, place, contact, connection,"
             " monitoring, power, open, secret_sha256, registered_ms, last_heard_ms, pin)"
             " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,"
             "?21)",
             err, errlen) < 0 ||
        prep(db, &db->beat,
             "UPDATE depots SET hard_total=?2, hard_free=?3, soft_total=?4, soft_free=?5,"
             " max_duration=?6, last_heard_ms=?7 WHERE id=?1",
             err, errlen) < 0 ||
        prep(db, &db->del, "DELETE FROM depots WHERE id=?1", err, errlen) < 0 ||
        prep(db, &db->del_meas, "DELETE FROM measurements WHERE depot_id=?1", err, errlen) < 0 ||
        prep(db, &db->meas_add,
             "INSERT INTO measurements(net, depot_id, t_ms, mbps) VALUES(?1,?2,?3,?4)", err,
             errlen) < 0 ||
        prep(db, &db->meas_trim,
             "DELETE FROM measurements WHERE depot_id=?2 AND net=?1 AND seq <="
             " (SELECT seq FROM measurements WHERE depot_id=?2 AND net=?1"
             "  ORDER BY seq DESC LIMIT 1 OFFSET ?3)",
             err, errlen) < 0 ||
        prep(db, &db->meas_all, "SELECT net, depot_id, mbps FROM measurements ORDER BY seq", err,
             errlen) < 0 ||
        prep(db, &db->load,
             "SELECT id, host, port, rid, hard_total, hard_free, soft_total, soft_free,"
             " max_duration, lat, lon, place, contact, connection, monitoring, power, open,"
             " secret_sha256, registered_ms, last_heard_ms, pin FROM depots",
             err, errlen) < 0) {
        lbone_db_close(db);
        return NULL;
    }
    return db;
}

void lbone_db_close(lbone_db_t *db)
{
    if (!db)
        return;
    sqlite3_stmt *all[] = {db->put, db->beat, db->del, db->del_meas, db->meas_add,
                           db->meas_trim, db->meas_all, db->load};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        sqlite3_finalize(all[i]);
    if (db->h)
        sqlite3_close(db->h);
    pthread_mutex_destroy(&db->mu);
    free(db);
}

void lbone_db_lock(lbone_db_t *db)
{
    pthread_mutex_lock(&db->mu);
}

void lbone_db_unlock(lbone_db_t *db)
{
    pthread_mutex_unlock(&db->mu);
}

const char *lbone_db_error(lbone_db_t *db)
{
    return sqlite3_errmsg(db->h);
}

static void copy_text(char *dst, size_t size, const unsigned char *src)
{
    snprintf(dst, size, "%s", src ? (const char *)src : "");
}

int lbone_db_load(lbone_db_t *db, lbone_reg_t *r, char *err, size_t errlen)
{
    sqlite3_stmt *st = db->load;
    int rc;
    sqlite3_reset(st);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        lbone_depot_t *d = calloc(1, sizeof *d);
        if (!d) {
            lns_err_set(err, errlen, "db: out of memory loading depots");
            sqlite3_reset(st);
            return -1;
        }
        copy_text(d->id, sizeof d->id, sqlite3_column_text(st, 0));
        copy_text(d->host, sizeof d->host, sqlite3_column_text(st, 1));
        d->port = sqlite3_column_int(st, 2);
        copy_text(d->rid, sizeof d->rid, sqlite3_column_text(st, 3));
        d->hard_total = (uint64_t)sqlite3_column_int64(st, 4);
        d->hard_free = (uint64_t)sqlite3_column_int64(st, 5);
        d->soft_total = (uint64_t)sqlite3_column_int64(st, 6);
        d->soft_free = (uint64_t)sqlite3_column_int64(st, 7);
        d->max_duration = sqlite3_column_int64(st, 8);
        d->has_loc = sqlite3_column_type(st, 9) != SQLITE_NULL;
        d->lat = sqlite3_column_double(st, 9);
        d->lon = sqlite3_column_double(st, 10);
        copy_text(d->place, sizeof d->place, sqlite3_column_text(st, 11));
        copy_text(d->contact, sizeof d->contact, sqlite3_column_text(st, 12));
        /* Attribute names, not ranks, are stored: the rank tables may grow. */
        d->env.connection = sqlite3_column_text(st, 13)
                                ? lbone_env_connection_parse((const char *)sqlite3_column_text(st, 13))
                                : -1;
        d->env.monitoring = sqlite3_column_int(st, 14);
        d->env.power = sqlite3_column_text(st, 15)
                           ? lbone_env_power_parse((const char *)sqlite3_column_text(st, 15))
                           : -1;
        d->env.open = sqlite3_column_int(st, 16);
        if (sqlite3_column_bytes(st, 17) == LBONE_HASH_LEN)
            memcpy(d->secret_hash, sqlite3_column_blob(st, 17), LBONE_HASH_LEN);
        else
            memset(d->secret_hash, 0xff, LBONE_HASH_LEN);
        d->registered_ms = sqlite3_column_int64(st, 18);
        d->last_heard_ms = sqlite3_column_int64(st, 19);
        copy_text(d->pin, sizeof d->pin, sqlite3_column_text(st, 20));
        if (strlen(d->id) != LBONE_ID_LEN || lbone_reg_find_id(r, d->id) ||
            lbone_reg_insert(r, d) < 0) {
            lns_log(LNS_LOG_WARN, "db: skipping a bad depot row (id '%s')", d->id);
            free(d);
        }
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        lns_err_set(err, errlen, "db: loading depots: %s", sqlite3_errmsg(db->h));
        return -1;
    }
    return 0;
}

static int step_done(lbone_db_t *db, sqlite3_stmt *st, const char *what)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_DONE) {
        lns_log(LNS_LOG_ERROR, "db: %s: %s", what, sqlite3_errmsg(db->h));
        return -1;
    }
    return 0;
}

/* The space a depot reports, which a registration and a heartbeat both write, as five
 * columns from index first: hard total, hard free, soft total, soft free, max duration. */
static void bind_space(sqlite3_stmt *st, int first, const lbone_depot_t *d)
{
    sqlite3_bind_int64(st, first, (sqlite3_int64)d->hard_total);
    sqlite3_bind_int64(st, first + 1, (sqlite3_int64)d->hard_free);
    sqlite3_bind_int64(st, first + 2, (sqlite3_int64)d->soft_total);
    sqlite3_bind_int64(st, first + 3, (sqlite3_int64)d->soft_free);
    sqlite3_bind_int64(st, first + 4, d->max_duration);
}

int lbone_db_put(lbone_db_t *db, const lbone_depot_t *d)
{
    sqlite3_stmt *st = db->put;
    sqlite3_bind_text(st, 1, d->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, d->host, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 3, d->port);
    sqlite3_bind_text(st, 4, d->rid, -1, SQLITE_STATIC);
    bind_space(st, 5, d);
    if (d->has_loc) {
        sqlite3_bind_double(st, 10, d->lat);
        sqlite3_bind_double(st, 11, d->lon);
    } else {
        sqlite3_bind_null(st, 10);
        sqlite3_bind_null(st, 11);
    }
    sqlite3_bind_text(st, 12, d->place, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 13, d->contact, -1, SQLITE_STATIC);
    if (d->env.connection >= 0)
        sqlite3_bind_text(st, 14, lbone_env_connection_name(d->env.connection), -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 14);
    sqlite3_bind_int(st, 15, d->env.monitoring);
    if (d->env.power >= 0)
        sqlite3_bind_text(st, 16, lbone_env_power_name(d->env.power), -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 16);
    sqlite3_bind_int(st, 17, d->env.open);
    sqlite3_bind_blob(st, 18, d->secret_hash, LBONE_HASH_LEN, SQLITE_STATIC);
    sqlite3_bind_int64(st, 19, d->registered_ms);
    sqlite3_bind_int64(st, 20, d->last_heard_ms);
    sqlite3_bind_text(st, 21, d->pin, -1, SQLITE_STATIC);
    return step_done(db, st, "writing a depot");
}

int lbone_db_heartbeat(lbone_db_t *db, const lbone_depot_t *d)
{
    sqlite3_stmt *st = db->beat;
    sqlite3_bind_text(st, 1, d->id, -1, SQLITE_STATIC);
    bind_space(st, 2, d);
    sqlite3_bind_int64(st, 7, d->last_heard_ms);
    return step_done(db, st, "recording a heartbeat");
}

int lbone_db_delete(lbone_db_t *db, const char *id)
{
    if (tx(db, "BEGIN") < 0)
        return -1;
    sqlite3_bind_text(db->del, 1, id, -1, SQLITE_STATIC);
    sqlite3_bind_text(db->del_meas, 1, id, -1, SQLITE_STATIC);
    int rc = step_done(db, db->del, "deleting a depot") |
             step_done(db, db->del_meas, "deleting a depot's measurements");
    if (tx(db, rc ? "ROLLBACK" : "COMMIT") < 0)
        return -1;
    return rc ? -1 : 0;
}

int lbone_db_measurement(lbone_db_t *db, const char *net, const char *depot_id, int64_t t_ms,
                         double mbps, int keep)
{
    if (tx(db, "BEGIN") < 0)
        return -1;
    sqlite3_bind_text(db->meas_add, 1, net, -1, SQLITE_STATIC);
    sqlite3_bind_text(db->meas_add, 2, depot_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(db->meas_add, 3, t_ms);
    sqlite3_bind_double(db->meas_add, 4, mbps);
    sqlite3_bind_text(db->meas_trim, 1, net, -1, SQLITE_STATIC);
    sqlite3_bind_text(db->meas_trim, 2, depot_id, -1, SQLITE_STATIC);
    sqlite3_bind_int(db->meas_trim, 3, keep);
    int rc = step_done(db, db->meas_add, "recording a measurement") |
             step_done(db, db->meas_trim, "trimming measurements");
    if (tx(db, rc ? "ROLLBACK" : "COMMIT") < 0)
        return -1;
    return rc ? -1 : 0;
}

int lbone_db_each_measurement(lbone_db_t *db,
                              void (*fn)(void *arg, const char *net, const char *depot_id,
                                         double mbps),
                              void *arg)
{
    sqlite3_stmt *st = db->meas_all;
    int rc;
    sqlite3_reset(st);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        fn(arg, (const char *)sqlite3_column_text(st, 0), (const char *)sqlite3_column_text(st, 1),
           sqlite3_column_double(st, 2));
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : -1;
}
