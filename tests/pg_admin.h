/* pg_admin.h: the PostgreSQL tests' one helper for the server itself (tests/with_postgresql.sh
 * names it through libpq's PG* variables): a statement on its maintenance database, such as a
 * test's CREATE DATABASE. Asserts (Criterion) that it ran. */
#ifndef PGN_TEST_PG_ADMIN_H
#define PGN_TEST_PG_ADMIN_H

#include <criterion/criterion.h>
#include <libpq-fe.h>

static inline void pg_admin(const char *sql) {
    PGconn *c = PQconnectdb("dbname=postgres");
    cr_assert_eq(PQstatus(c), CONNECTION_OK, "PostgreSQL: %s", PQerrorMessage(c));
    PGresult *r = PQexec(c, sql);
    cr_assert_eq(PQresultStatus(r), PGRES_COMMAND_OK, "%s: %s", sql, PQerrorMessage(c));
    PQclear(r);
    PQfinish(c);
}

#endif
