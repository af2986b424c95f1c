-- 007_counters.sql (PostgreSQL): schema/007_counters.sql's counters that only grow, counted by
-- a trigger as each job reaches a final state. A PostgreSQL store starts at this schema's
-- paragond, so there are no older finished jobs to count first: every counter starts at 0.
CREATE TABLE counters (
    name  TEXT PRIMARY KEY,
    value DOUBLE PRECISION NOT NULL DEFAULT 0
);
INSERT INTO counters (name, value)
VALUES ('inet_interactions', 0), ('flops', 0), ('jobs_succeeded', 0), ('jobs_failed', 0),
       ('jobs_cancelled', 0);

CREATE FUNCTION jobs_count_finished() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
    UPDATE counters SET value = value + 1 WHERE name = 'jobs_' || NEW.state;
    UPDATE counters SET value = value + coalesce(json_extract(NEW.result, '$.interactions')::DOUBLE PRECISION, 0)
     WHERE name = 'inet_interactions' AND NEW.state = 'succeeded' AND NEW.kind = 'inet';
    UPDATE counters SET value = value + coalesce(json_extract(NEW.result, '$.flops')::DOUBLE PRECISION, 0)
     WHERE name = 'flops' AND NEW.state = 'succeeded' AND NEW.kind = 'train';
    RETURN NULL;
END $$;
CREATE TRIGGER jobs_count_finished AFTER UPDATE OF state ON jobs
    FOR EACH ROW
    WHEN (NEW.state IN ('succeeded', 'failed', 'cancelled') AND OLD.state IN ('queued', 'running'))
    EXECUTE FUNCTION jobs_count_finished();
