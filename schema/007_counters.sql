-- 007_counters.sql: the /metrics counters that must only grow (Prometheus counters): work done
-- and jobs finished, by outcome. Before, paragon_flops_total and paragon_inet_interactions_total
-- were sums over the jobs still stored, so deleting a job made them go down.
--
-- A trigger counts each job as it reaches a final state, whoever ends it (a worker, a cancel,
-- start-up recovery), in that same transaction; deleting a job leaves the counters alone.
CREATE TABLE counters (
    name  TEXT PRIMARY KEY,
    value REAL NOT NULL DEFAULT 0
) WITHOUT ROWID;

-- What the jobs stored so far have done (train results written before "flops" existed count
-- their measured rate over the epochs they ran).
INSERT INTO counters (name, value)
SELECT 'inet_interactions', total(json_extract(result, '$.interactions'))
  FROM jobs WHERE state = 'succeeded' AND kind = 'inet';
INSERT INTO counters (name, value)
SELECT 'flops', total(coalesce(json_extract(result, '$.flops'),
         json_extract(result, '$.gflops') * 1e9 * json_extract(result, '$.seconds_per_epoch')
         * (json_extract(result, '$.epochs') - coalesce(json_extract(result, '$.resumed_from_epoch'), 0))))
  FROM jobs WHERE state = 'succeeded' AND kind = 'train';
INSERT INTO counters (name, value)
SELECT 'jobs_' || s.state, (SELECT count(*) FROM jobs WHERE jobs.state = s.state)
  FROM (SELECT 'succeeded' AS state UNION ALL SELECT 'failed' UNION ALL SELECT 'cancelled') AS s;

CREATE TRIGGER jobs_count_finished AFTER UPDATE OF state ON jobs
WHEN NEW.state IN ('succeeded', 'failed', 'cancelled') AND OLD.state IN ('queued', 'running')
BEGIN
    UPDATE counters SET value = value + 1 WHERE name = 'jobs_' || NEW.state;
    UPDATE counters SET value = value + coalesce(json_extract(NEW.result, '$.interactions'), 0)
     WHERE name = 'inet_interactions' AND NEW.state = 'succeeded' AND NEW.kind = 'inet';
    UPDATE counters SET value = value + coalesce(json_extract(NEW.result, '$.flops'), 0)
     WHERE name = 'flops' AND NEW.state = 'succeeded' AND NEW.kind = 'train';
END;
