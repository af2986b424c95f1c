-- 006_job_interruptions.sql: the crash-loop cap (paragond --max-attempts).
--
-- interrupted: how many of a job's runs ended because paragond itself ended while the job ran
-- (kill -9, a crash, the machine going down), counted by start-up recovery. A job that takes the
-- server down would otherwise take it down again on every start; once this reaches
-- --max-attempts, recovery ends the job failed with code "crashed" instead of queueing it
-- again. A graceful stop (SIGTERM) checkpoints and re-queues its jobs without counting here:
-- that run was not the job's doing.
ALTER TABLE jobs ADD COLUMN interrupted INTEGER NOT NULL DEFAULT 0 CHECK (interrupted >= 0);
