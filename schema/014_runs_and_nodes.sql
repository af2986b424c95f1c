-- 014_runs_and_nodes.sql: the runs of a job and the paragond nodes that run them (issue 29).
--
-- nodes: each paragond on the store, as it registered itself at start (its id, address,
-- version and devices) and the heartbeat it renews while it lives; heartbeat_ms is the store's
-- clock (ms since 1970), so nodes on machines whose clocks differ are judged by one clock.
--
-- jobs.node: the node of the job's latest run. jobs.lease_ms: a running job's lease, on the
-- store's clock; the node renews it while the run lives, and a job whose lease ran out is
-- recovered as a run that died. jobs.attempts (001) is the run's fencing token: a claim adds one,
-- and every write a run makes names its attempt and is refused once it is no longer the job's.
--
-- job_runs: one row per run, written by triggers as the job's state enters and leaves 'running',
-- whoever moved it (a claim, an end, a cancel, a shutdown, a recovery): where each attempt ran
-- and how it ended.
CREATE TABLE nodes (
    id           TEXT    PRIMARY KEY,
    address      TEXT    NOT NULL DEFAULT '',
    version      TEXT    NOT NULL DEFAULT '',
    devices      TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(devices)),
    started_at   TEXT    NOT NULL,
    heartbeat_at TEXT    NOT NULL,
    heartbeat_ms INTEGER NOT NULL
) WITHOUT ROWID;

ALTER TABLE jobs ADD COLUMN node TEXT;
ALTER TABLE jobs ADD COLUMN lease_ms INTEGER;
CREATE INDEX jobs_lease ON jobs (lease_ms) WHERE state = 'running';

CREATE TABLE job_runs (
    job_id     INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    attempt    INTEGER NOT NULL,
    node       TEXT    NOT NULL,
    device     TEXT    NOT NULL,
    started_at TEXT    NOT NULL,
    ended_at   TEXT,
    outcome    TEXT    CHECK (outcome IN ('succeeded', 'failed', 'cancelled', 'queued')),
    PRIMARY KEY (job_id, attempt)
) WITHOUT ROWID;

CREATE TRIGGER jobs_run_starts AFTER UPDATE OF state ON jobs
WHEN NEW.state = 'running' AND OLD.state <> 'running'
BEGIN
    INSERT OR REPLACE INTO job_runs (job_id, attempt, node, device, started_at)
    VALUES (NEW.id, NEW.attempts, coalesce(NEW.node, ''), NEW.device,
            coalesce(NEW.started_at, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')));
END;

CREATE TRIGGER jobs_run_ends AFTER UPDATE OF state ON jobs
WHEN OLD.state = 'running' AND NEW.state <> 'running'
BEGIN
    UPDATE job_runs SET ended_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), outcome = NEW.state
     WHERE job_id = NEW.id AND attempt = OLD.attempts;
END;
