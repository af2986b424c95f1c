-- 003_job_estimates.sql (PostgreSQL): schema/003_job_estimates.sql's column (012 replaces it).
ALTER TABLE jobs ADD COLUMN estimate TEXT CHECK (estimate IS NULL OR json_valid(estimate));
