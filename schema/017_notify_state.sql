-- 017_notify_state.sql: nothing on SQLite (see 015_job_notify.sql): its one paragond hears
-- nothing.
SELECT 1;
