/* db_postgresql.c: db.h on PostgreSQL through libpq, the store a cluster of paragond shares.
 * Statements are the store's SQLite-dialect texts with ?N numbered $N; each runs with its
 * parameters typed by how they were bound (int8, float8, text), so no statement depends on
 * PostgreSQL guessing a type. A connection that was lost is re-made on the next statement (a
 * restarted server, or a failover the URL's hosts and target_session_attrs=read-write follow);
 * the statement that found it lost fails as "store_unavailable", to be retried. */
#include "db_backend.h"

#include <libpq-fe.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The OIDs of the types parameters are bound as (pg_type.h, stable across versions). */
#define OID_INT8 20
#define OID_TEXT 25
#define OID_FLOAT8 701

typedef struct {
    pgd_db base;
    PGconn *conn;
    char *url;
    int64_t changes;
    char *held;    /* the name db_hold_name holds: taken again on a new connection */
    char *channel; /* the channel db_listen listens on: again on a new connection */
    bool taken;    /* ... and another connection had it by then */
    char state[6]; /* SQLSTATE of the last failure; "" when the connection was lost */
    char msg[256];
} pg_db;

typedef struct {
    db_stmt base;
    char *sql;      /* with $N */
    int nparams;    /* the highest N */
    bool *bound;    /* which parameters were bound since the last reset */
    Oid *types;
    char **values;  /* malloc'd text of each parameter; NULL binds NULL */
    bool serial;    /* SQLite's BEGIN IMMEDIATE: a write transaction (see translate) */
    PGresult *res;  /* the run's rows, until reset */
    int row;        /* the current row, -1 before the first */
} pg_stmt;

static pg_db *DB(pgd_db *db) { return (pg_db *)db; }
static pg_stmt *ST(db_stmt *st) { return (pg_stmt *)st; }

/* db_hold_name's session lock: the name's hash (PostgreSQL's own, 64 bits) as the key. */
#define HOLD_NAME_SQL "SELECT pg_try_advisory_lock(hashtextextended($1, 0))"

static void quiet(void *arg, const char *message) {
    (void)arg;
    (void)message; /* NOTICEs (such as "relation already exists, skipping") are not errors */
}

/* The last failure of res (or of the connection when res is NULL). */
static void remember(pg_db *d, const PGresult *res) {
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    const char *msg = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    if (PQstatus(d->conn) != CONNECTION_OK) state = NULL; /* lost: the state is the connection's */
    snprintf(d->state, sizeof d->state, "%s", state ? state : "");
    snprintf(d->msg, sizeof d->msg, "%s", msg ? msg : PQerrorMessage(d->conn));
    size_t n = strlen(d->msg);
    while (n && (d->msg[n - 1] == '\n' || d->msg[n - 1] == ' ')) d->msg[--n] = 0;
}

/* A lost connection is made again, but the statement that finds it lost fails all the same
 * ("store_unavailable"): it may belong to a transaction the server forgot with the connection,
 * and must not run alone. The caller retries on the new connection. */
static bool take_name(pg_db *d, const char *name);
static bool listen_on(pg_db *d, const char *channel);

static bool connected(pg_db *d) {
    if (d->taken) { /* another paragond took the store while this one was away: no more writes */
        d->state[0] = 0;
        snprintf(d->msg, sizeof d->msg, "another paragond holds this store now");
        return false;
    }
    if (PQstatus(d->conn) == CONNECTION_OK) return true;
    remember(d, NULL);
    PQreset(d->conn);
    if (PQstatus(d->conn) == CONNECTION_OK) {
        PQsetNoticeProcessor(d->conn, quiet, NULL);
        if (d->held && !take_name(d, d->held)) d->taken = true;
        if (d->channel) listen_on(d, d->channel);
        snprintf(d->msg, sizeof d->msg, "the connection to PostgreSQL was lost (made again: retry)");
    }
    return false;
}

/* Whether this session now holds name's lock. */
static bool take_name(pg_db *d, const char *name) {
    const char *values[1] = {name};
    PGresult *r = PQexecParams(d->conn, HOLD_NAME_SQL, 1, NULL, values, NULL, NULL, 0);
    bool got = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
    if (PQresultStatus(r) != PGRES_TUPLES_OK) remember(d, r);
    PQclear(r);
    return got;
}

static int pg_hold_name(pgd_db *db, const char *name, pgn_error *err) {
    pg_db *d = DB(db);
    if (take_name(d, name)) {
        free(d->held);
        d->held = strdup(name);
        return 0;
    }
    pgn_error_set(err, PGN_E_LOCKED, "", "'%s' is held on the PostgreSQL store '%s' by another connection",
                  name, d->base.name);
    return -1;
}

static void pg_close(pgd_db *db) {
    PQfinish(DB(db)->conn);
    free(DB(db)->url);
    free(DB(db)->held);
    free(DB(db)->channel);
    free(db);
}

static int pg_exec(pgd_db *db, const char *sql, pgn_error *err, const char *what) {
    pg_db *d = DB(db);
    if (!connected(d)) return err ? db_fail(db, err, what) : -1;
    PGresult *res = PQexec(d->conn, sql);
    ExecStatusType status = PQresultStatus(res);
    int ret = 0;
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
        remember(d, res);
        ret = err ? db_fail(db, err, what) : -1;
    }
    PQclear(res);
    return ret;
}

static bool pg_in_transaction(pgd_db *db) {
    PGTransactionStatusType t = PQtransactionStatus(DB(db)->conn);
    return t == PQTRANS_INTRANS || t == PQTRANS_INERROR;
}

/* SQLite's BEGIN IMMEDIATE takes the database's one write lock before the transaction reads,
 * and the store's write transactions are written for that: one that reads and then writes sees
 * no other writer between. On PostgreSQL it is BEGIN and then this transaction-scoped advisory
 * lock, which every paragond on the database takes the same way. */
#define WRITE_LOCK_SQL "SELECT pg_advisory_xact_lock(8097879367661612644)" /* "paragond" */

/* sql with ?N as $N (outside quotes), and each comment whose text starts "postgresql:" as the
 * rest of its text: what only PostgreSQL reads (FOR UPDATE SKIP LOCKED), a comment to SQLite.
 * *nparams receives the highest N. */
static char *translate(const char *sql, int *nparams) {
    char *out = malloc(strlen(sql) + 1);
    if (!out) return NULL;
    char *o = out, quote = 0;
    *nparams = 0;
    for (const char *p = sql; *p; p++) {
        if (!quote && strncmp(p, "/*postgresql:", 13) == 0) {
            const char *end = strstr(p, "*/");
            if (end) {
                memcpy(o, p + 13, (size_t)(end - p - 13));
                o += end - p - 13;
                p = end + 1;
                continue;
            }
        }
        if (quote) {
            if (*p == quote) quote = 0;
        } else if (*p == '\'' || *p == '"') {
            quote = *p;
        } else if (*p == '?' && p[1] >= '0' && p[1] <= '9') {
            *o++ = '$';
            int n = 0;
            while (p[1] >= '0' && p[1] <= '9') {
                n = n * 10 + (p[1] - '0');
                *o++ = *++p;
            }
            if (n > *nparams) *nparams = n;
            continue;
        }
        *o++ = *p;
    }
    *o = 0;
    return out;
}

static void pg_finalize(db_stmt *st) {
    pg_stmt *s = ST(st);
    PQclear(s->res);
    for (int i = 0; i < s->nparams; i++) free(s->values[i]);
    free(s->values);
    free(s->bound);
    free(s->types);
    free(s->sql);
    free(s);
}

static db_stmt *pg_prepare(pgd_db *db, const char *sql, pgn_error *err) {
    pg_stmt *s = calloc(1, sizeof *s);
    if (s) {
        s->serial = strcmp(sql, "BEGIN IMMEDIATE") == 0;
        s->sql = translate(s->serial ? "BEGIN" : sql, &s->nparams); /* serial: see pg_step */
    }
    if (s && s->sql && s->nparams) {
        s->types = calloc((size_t)s->nparams, sizeof *s->types);
        s->values = calloc((size_t)s->nparams, sizeof *s->values);
        s->bound = calloc((size_t)s->nparams, sizeof *s->bound);
    }
    if (!s || !s->sql || (s->nparams && (!s->types || !s->values || !s->bound))) {
        if (s) pg_finalize(&s->base);
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "store: out of memory");
        return NULL;
    }
    s->base.db = db;
    s->row = -1;
    return &s->base;
}

static void pg_reset(db_stmt *st) {
    pg_stmt *s = ST(st);
    PQclear(s->res);
    s->res = NULL;
    s->row = -1;
    for (int i = 0; i < s->nparams; i++) {
        free(s->values[i]);
        s->values[i] = NULL;
        s->types[i] = 0;
        s->bound[i] = false;
    }
}

static void bind(db_stmt *st, int idx, Oid type, char *text) {
    pg_stmt *s = ST(st);
    if (idx < 1 || idx > s->nparams) { /* a parameter the statement does not use */
        free(text);
        return;
    }
    free(s->values[idx - 1]);
    s->values[idx - 1] = text;
    s->types[idx - 1] = type;
    s->bound[idx - 1] = true;
}

static void pg_bind_int64(db_stmt *st, int idx, int64_t v) {
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)v);
    bind(st, idx, OID_INT8, strdup(buf));
}

static void pg_bind_double(db_stmt *st, int idx, double v) {
    char buf[40];
    if (isnan(v)) snprintf(buf, sizeof buf, "NaN");
    else if (isinf(v)) snprintf(buf, sizeof buf, "%sInfinity", v < 0 ? "-" : "");
    else snprintf(buf, sizeof buf, "%.17g", v);
    bind(st, idx, OID_FLOAT8, strdup(buf));
}

/* Text that is not UTF-8 (a log line from a program's output) has each bad byte as '?':
 * PostgreSQL refuses such text, and SQLite reads it back so. */
static char *utf8_copy(const char *t) {
    char *out = strdup(t);
    if (!out) return NULL;
    unsigned char *p = (unsigned char *)out;
    while (*p) {
        int n = *p < 0x80 ? 1 : (*p & 0xE0) == 0xC0 ? 2 : (*p & 0xF0) == 0xE0 ? 3 : (*p & 0xF8) == 0xF0 ? 4 : 0;
        bool ok = n > 0 && !(n == 2 && *p < 0xC2);
        for (int i = 1; ok && i < n; i++) ok = (p[i] & 0xC0) == 0x80;
        if (!ok) {
            *p++ = '?';
            continue;
        }
        p += n;
    }
    return out;
}

/* NULL given as text is typed text (the store binds NULL where it would bind a document or a
 * key, and PostgreSQL must know a type for "$5 IS NULL"); db_bind_null leaves the type to the
 * context (a column of any type). */
static void pg_bind_text(db_stmt *st, int idx, const char *t) { bind(st, idx, OID_TEXT, t ? utf8_copy(t) : NULL); }
static void pg_bind_null(db_stmt *st, int idx) { bind(st, idx, 0, NULL); }

static int pg_step(db_stmt *st) {
    pg_stmt *s = ST(st);
    pg_db *d = DB(st->db);
    if (!s->res && s->serial) { /* BEGIN and the write lock in one round trip */
        if (!connected(d)) return DB_FAIL;
        s->res = PQexec(d->conn, "BEGIN; " WRITE_LOCK_SQL);
        if (PQresultStatus(s->res) != PGRES_TUPLES_OK) {
            remember(d, s->res);
            PQclear(s->res);
            s->res = NULL;
            if (pg_in_transaction(st->db)) PQclear(PQexec(d->conn, "ROLLBACK"));
            return DB_FAIL;
        }
        d->changes = 0;
        s->row = PQntuples(s->res); /* the lock's row is not the statement's: BEGIN has none */
        return DB_DONE;
    }
    if (!s->res) {
        if (!connected(d)) return DB_FAIL;
        for (int i = 0; i < s->nparams; i++) /* unbound is NULL, as on SQLite, typed text */
            if (!s->bound[i]) s->types[i] = OID_TEXT;
        s->res = PQexecParams(d->conn, s->sql, s->nparams, s->types, (const char *const *)s->values,
                              NULL, NULL, 0);
        ExecStatusType status = PQresultStatus(s->res);
        if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
            remember(d, s->res);
            PQclear(s->res);
            s->res = NULL;
            return strcmp(d->state, "23503") == 0 ? DB_NO_PARENT : DB_FAIL;
        }
        const char *n = PQcmdTuples(s->res);
        d->changes = *n ? strtoll(n, NULL, 10) : 0;
    }
    if (s->row + 1 < PQntuples(s->res)) {
        s->row++;
        return DB_ROW;
    }
    s->row = PQntuples(s->res);
    return DB_DONE;
}

static const char *cell(db_stmt *st, int col) {
    pg_stmt *s = ST(st);
    if (!s->res || s->row < 0 || s->row >= PQntuples(s->res) || col >= PQnfields(s->res) ||
        PQgetisnull(s->res, s->row, col))
        return NULL;
    return PQgetvalue(s->res, s->row, col);
}

static bool pg_is_null(db_stmt *st, int col) { return cell(st, col) == NULL; }

/* Numbers come as text; a boolean as "t" or "f" (SQLite's comparisons give 1 or 0). */
static double pg_column_double(db_stmt *st, int col) {
    const char *t = cell(st, col);
    if (!t) return 0;
    if (t[0] == 't' && !t[1]) return 1;
    if (t[0] == 'f' && !t[1]) return 0;
    return strtod(t, NULL);
}

static int64_t pg_column_int64(db_stmt *st, int col) {
    const char *t = cell(st, col);
    if (!t) return 0;
    if (strpbrk(t, ".eEtfIN")) return (int64_t)pg_column_double(st, col);
    return strtoll(t, NULL, 10);
}

static const char *pg_column_text(db_stmt *st, int col) { return cell(st, col); }
static int64_t pg_changes(pgd_db *db) { return DB(db)->changes; }

/* What passes once the server recovers: a lost connection, and the SQLSTATE classes of a
 * server short of resources (53), shutting down or starting (57P), of a transaction that lost a
 * race (40: serialization, deadlock), of a lock not granted now (55P03), of a server that is a
 * standby after a failover (25006: read-only), and of its system errors (58: I/O). */
static int pg_fail(pgd_db *db, pgn_error *err, const char *what) {
    pg_db *d = DB(db);
    const char *s = d->state;
    bool passing = !s[0] || strncmp(s, "08", 2) == 0 || strncmp(s, "53", 2) == 0 ||
                   strncmp(s, "57P", 3) == 0 || strncmp(s, "40", 2) == 0 ||
                   strcmp(s, "55P03") == 0 || strcmp(s, "25006") == 0 || strncmp(s, "58", 2) == 0;
    pgn_error_set(err, passing ? PGN_E_STORE_UNAVAILABLE : PGN_E_STORE, "", "store: %s: %s", what,
                  d->msg[0] ? d->msg : "unknown error");
    return -1;
}

/* LISTEN "channel" on this session. */
static bool listen_on(pg_db *d, const char *channel) {
    char *quoted = PQescapeIdentifier(d->conn, channel, strlen(channel));
    if (!quoted) return false;
    char sql[160];
    snprintf(sql, sizeof sql, "LISTEN %s", quoted);
    PQfreemem(quoted);
    PGresult *r = PQexec(d->conn, sql);
    bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    if (!ok) remember(d, r);
    PQclear(r);
    return ok;
}

static int pg_listen(pgd_db *db, const char *channel, pgn_error *err) {
    pg_db *d = DB(db);
    if (!listen_on(d, channel)) return db_fail(db, err, "listen");
    free(d->channel);
    d->channel = strdup(channel);
    return 1;
}

static int pg_notifications(pgd_db *db, int timeout_ms, db_note *out, size_t max, size_t *n,
                            pgn_error *err) {
    pg_db *d = DB(db);
    *n = 0;
    if (!connected(d)) return db_fail(db, err, "hear notifications");
    struct pollfd p = {.fd = PQsocket(d->conn), .events = POLLIN};
    if (p.fd < 0 || poll(&p, 1, timeout_ms) < 0) return 0;
    if (!PQconsumeInput(d->conn)) {
        remember(d, NULL);
        return db_fail(db, err, "hear notifications");
    }
    PGnotify *note;
    while ((note = PQnotifies(d->conn)) != NULL) {
        if (*n < max) {
            char *end;
            db_note *o = &out[(*n)++];
            o->number = strtoll(note->extra, &end, 10);
            snprintf(o->word, sizeof o->word, "%s", *end == ' ' ? end + 1 : "");
        }
        PQfreemem(note);
    }
    return 0;
}

static const db_ops pg_ops = {
    pg_close,      pg_exec,       pg_in_transaction, pg_prepare,   pg_finalize,
    pg_reset,      pg_bind_int64, pg_bind_double,    pg_bind_text, pg_bind_null,
    pg_step,       pg_is_null,    pg_column_int64,          pg_column_double,    pg_column_text,
    pg_hold_name,  pg_listen,     pg_notifications, pg_changes, pg_fail,
};

/* url without the password of its user part, for messages. */
static void shown_name(const char *url, char *out, size_t size) {
    const char *scheme = strstr(url, "://"), *at = strchr(url, '@');
    const char *colon = scheme ? strchr(scheme + 3, ':') : NULL;
    if (scheme && at && colon && colon < at)
        snprintf(out, size, "%.*s%s", (int)(colon - url), url, at);
    else
        snprintf(out, size, "%s", url);
}

int db_postgresql_open(const char *url, pgd_db **out, pgn_error *err) {
    pg_db *d = calloc(1, sizeof *d);
    if (!d || !(d->url = strdup(url))) {
        free(d);
        pgn_error_set(err, PGN_E_OUT_OF_MEMORY, "", "store: out of memory");
        return -1;
    }
    d->base.ops = &pg_ops;
    d->base.engine = DB_POSTGRESQL;
    shown_name(url, d->base.name, sizeof d->base.name);
    d->conn = PQconnectdb(url);
    if (PQstatus(d->conn) != CONNECTION_OK) {
        remember(d, NULL);
        pgn_error_set(err, PGN_E_STORE_UNAVAILABLE, "", "store: cannot connect to PostgreSQL at '%s': %s",
                      d->base.name, d->msg);
        pg_close(&d->base);
        return -1;
    }
    PQsetNoticeProcessor(d->conn, quiet, NULL);
    *out = &d->base;
    return 0;
}
