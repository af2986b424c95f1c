-- 008_job_tags_submissions.sql: what POST /api/v1/jobs keeps beside the spec: a job's free-form
-- tags, and the idempotency key (Idempotency-Key, or the body's submission_id) it was submitted
-- with. Neither is part of the spec: the server takes both out of the body before the engine
-- validates it, so `paragon run` of a stored spec runs as before.
--
-- tags: a JSON object of string values ({"team":"vision"}), bounded by the API (server/api.c);
-- GET /api/v1/jobs?tag=key:value filters on it.
ALTER TABLE jobs ADD COLUMN tags TEXT
    CHECK (tags IS NULL OR (json_valid(tags) AND json_type(tags) = 'object'));

-- submissions: one row per idempotency key ever used, never deleted: the key stays taken after
-- its jobs are deleted, so a retry of an old request cannot run the work again unnoticed (it
-- gets a 409 naming the deleted job). body_sha256 fingerprints the request (the body's JSON
-- without submission_id, keys sorted, compact), so the same key with another body is told
-- apart; job_id is the first job the submission made (a bench job for "all" makes one per
-- device, each carrying the key). The primary key is what keeps a key unique when two requests
-- race: the loser's insert finds the winner's row in the same transaction.
CREATE TABLE submissions (
    key         TEXT    PRIMARY KEY,
    body_sha256 TEXT    NOT NULL,
    job_id      INTEGER NOT NULL,
    created_at  TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
) WITHOUT ROWID;

ALTER TABLE jobs ADD COLUMN submission_id TEXT REFERENCES submissions (key);
-- A replay reads the jobs of its key.
CREATE INDEX jobs_submission ON jobs (submission_id) WHERE submission_id IS NOT NULL;
