-- 016_metrics_by_step.sql (PostgreSQL): a job's metrics by step, for the nodes' relays, which
-- read every few hundred milliseconds the rows a running job wrote after the last step they
-- relayed (server/events.c, pgd_events_relay); the key (job_id, name, step) would read all of the
-- job's rows each time.
CREATE INDEX metrics_job_step ON metrics (job_id, step);
