-- 008_job_tags_submissions.sql (PostgreSQL): schema/008_job_tags_submissions.sql's tags and
-- idempotency keys.
ALTER TABLE jobs ADD COLUMN tags TEXT
    CHECK (tags IS NULL OR (json_valid(tags) AND json_type(tags) = 'object'));

CREATE TABLE submissions (
    key         TEXT    PRIMARY KEY,
    body_sha256 TEXT    NOT NULL,
    job_id      BIGINT  NOT NULL,
    created_at  TEXT    NOT NULL DEFAULT strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
);
ALTER TABLE jobs ADD COLUMN submission_id TEXT REFERENCES submissions (key);
CREATE INDEX jobs_submission ON jobs (submission_id) WHERE submission_id IS NOT NULL;
