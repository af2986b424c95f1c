-- 010_job_work_key.sql (PostgreSQL): schema/010_job_work_key.sql's column and index.
ALTER TABLE jobs ADD COLUMN work_key TEXT;
CREATE INDEX jobs_work_key ON jobs (work_key, id) WHERE work_key IS NOT NULL;
