-- 018_job_priority.sql: a job's priority (issue 30). A device takes its queued jobs highest
-- priority first, then oldest first; a queued job of higher priority than the train job running on
-- its device stops that job at its next step, checkpointed, which is queued again and resumes
-- later (docs/architecture.md, "Priorities"). The queue's index follows the claim's order.
ALTER TABLE jobs ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
DROP INDEX jobs_queue;
CREATE INDEX jobs_queue ON jobs (state, device, priority DESC, id);
