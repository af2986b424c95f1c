-- 002_benchmarks.sql: benchmark rows, one per (suite, case, device) measurement of a run.
-- A bench job's result rows are stored here when the job succeeds (server/scheduler.c), in the
-- same transaction that marks it succeeded; GET /api/v1/benchmarks exports them and the
-- scheduler's cost model reads the latest run per device and suite.
--
-- job_id is ON DELETE CASCADE: DELETE /api/v1/jobs/{id} removes a job "with its rows", and that
-- is the only way to withdraw a bad run from the export and the cost model; SET NULL would
-- leave orphans no API call can reach. job_id is NULL only for rows recorded without a job.

CREATE TABLE benchmarks (
    id         INTEGER PRIMARY KEY,
    job_id     INTEGER REFERENCES jobs (id) ON DELETE CASCADE,
    suite      TEXT    NOT NULL,
    case_id    TEXT    NOT NULL,
    device     TEXT    NOT NULL,
    adapter    TEXT,
    version    TEXT,
    -- One value for every row of a run (the store sets it once per batch), so a run without a
    -- job is still told apart from the next.
    created_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    -- The whole row as the engine made it: the columns above are copies for filtering.
    data       TEXT    NOT NULL CHECK (json_valid(data) AND json_type(data) = 'object')
);

-- GET /api/v1/benchmarks?suite=[&device=] reads rows of a suite (and device) in id order.
CREATE INDEX benchmarks_export ON benchmarks (suite, device, id);
-- Latest rows per device: ?device= alone, and the cost model's newest run of a suite on a
-- device (the newest id for (device, suite), then that run's rows).
CREATE INDEX benchmarks_latest ON benchmarks (device, suite, id);
-- A run's rows, and the cascade when its job is deleted.
CREATE INDEX benchmarks_job ON benchmarks (job_id);
