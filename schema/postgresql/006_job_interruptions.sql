-- 006_job_interruptions.sql (PostgreSQL): schema/006_job_interruptions.sql's column.
ALTER TABLE jobs ADD COLUMN interrupted BIGINT NOT NULL DEFAULT 0 CHECK (interrupted >= 0);
