-- 015_job_notify.sql: nothing on SQLite. A PostgreSQL store's nodes hear each other's job
-- changes through NOTIFY (schema/postgresql/015_job_notify.sql); a SQLite store has one
-- paragond, which publishes its own changes as it makes them.
SELECT 1;
