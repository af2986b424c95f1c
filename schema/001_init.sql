-- 001_init.sql: the first schema: jobs and their metric series.
-- Applied once by the migration runner in server/store.c, inside one transaction; times are
-- ISO-8601 UTC text with milliseconds ("2024-05-01T12:00:00.123Z"), JSON columns are TEXT.

CREATE TABLE jobs (
    id               INTEGER PRIMARY KEY,
    kind             TEXT    NOT NULL,
    name             TEXT    NOT NULL DEFAULT '',
    state            TEXT    NOT NULL DEFAULT 'queued'
                     CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    device_requested TEXT    NOT NULL,
    device           TEXT    NOT NULL,
    spec             TEXT    NOT NULL CHECK (json_valid(spec)),
    result           TEXT    CHECK (result IS NULL OR json_valid(result)),
    error            TEXT    CHECK (error IS NULL OR json_valid(error)),
    progress         REAL    NOT NULL DEFAULT 0 CHECK (progress >= 0 AND progress <= 1),
    attempts         INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    created_at       TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    started_at       TEXT,
    finished_at      TEXT
);

-- A worker takes the oldest queued job of its device; GET /api/v1/devices counts queued jobs
-- per device. Both read this index in order.
CREATE INDEX jobs_queue ON jobs (state, device, id);
-- GET /api/v1/jobs?state= and ?kind= list newest first (id DESC) without a sort.
CREATE INDEX jobs_state ON jobs (state, id);
CREATE INDEX jobs_kind ON jobs (kind, id);

-- Append-only series (loss, accuracy, ...) per job; the key orders GET .../metrics by name, step.
CREATE TABLE metrics (
    job_id     INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    name       TEXT    NOT NULL,
    step       INTEGER NOT NULL,
    value      REAL,
    created_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (job_id, name, step)
) WITHOUT ROWID;
