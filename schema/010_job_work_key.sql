-- 010_job_work_key.sql: what an inet job reduces, as a key: the SHA-256 (hex) of its spec's
-- program and files (server/store_jobs.c, work_key_of). A net's interaction count depends on
-- nothing else, so the latest succeeded job with the same key tells a new one how many
-- interactions it will take: its progress while it runs. Other kinds have none (NULL); jobs
-- stored before this migration have none either, and only make no progress known.
ALTER TABLE jobs ADD COLUMN work_key TEXT;
CREATE INDEX jobs_work_key ON jobs (work_key, id) WHERE work_key IS NOT NULL;
