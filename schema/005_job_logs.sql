-- 005_job_logs.sql: each job's log, in order: the engine's lines (pgn_run_hooks.on_log) and the
-- scheduler's own (placed, started, how it ended). server/events.c writes each line here, then
-- publishes it on the job's event stream; GET /api/v1/jobs/{id}/logs reads it as text.
-- seq counts a job's lines from 1 without gaps (lines are only ever appended, and deleted with
-- their job), so ?after=SEQ is "after line SEQ".
CREATE TABLE logs (
    job_id     INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL CHECK (seq > 0),
    level      TEXT    NOT NULL DEFAULT 'info' CHECK (level IN ('info', 'warn', 'error')),
    line       TEXT    NOT NULL,
    created_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (job_id, seq)
) WITHOUT ROWID;
