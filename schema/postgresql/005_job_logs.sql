-- 005_job_logs.sql (PostgreSQL): schema/005_job_logs.sql's table.
CREATE TABLE logs (
    job_id     BIGINT  NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    seq        BIGINT  NOT NULL CHECK (seq > 0),
    level      TEXT    NOT NULL DEFAULT 'info' CHECK (level IN ('info', 'warn', 'error')),
    line       TEXT    NOT NULL,
    created_at TEXT    NOT NULL DEFAULT strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
    PRIMARY KEY (job_id, seq)
);
