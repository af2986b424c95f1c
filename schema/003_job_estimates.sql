-- 003_job_estimates.sql: what the scheduler's cost model expected of each job when it placed it
-- ({"seconds", "work", "unit", "device", "queue_seconds", "candidates": [...]}), so the chosen
-- device and the reason are on the job, and queued work can be added up per device.
ALTER TABLE jobs ADD COLUMN estimate TEXT CHECK (estimate IS NULL OR json_valid(estimate));
