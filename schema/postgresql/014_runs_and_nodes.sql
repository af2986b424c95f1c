-- 014_runs_and_nodes.sql (PostgreSQL): schema/014_runs_and_nodes.sql's nodes, leases and runs;
-- julianday('now'), the store's clock as the statements read it (server/store_internal.h); and
-- SQLite's group_concat(text, separator) aggregate.
CREATE FUNCTION julianday(moment TEXT) RETURNS DOUBLE PRECISION LANGUAGE plpgsql STABLE AS $$
BEGIN
    IF moment <> 'now' THEN
        RAISE EXCEPTION 'julianday(%): only julianday(''now'') is defined here', moment;
    END IF;
    RETURN extract(epoch FROM statement_timestamp()) / 86400.0 + 2440587.5;
END $$;

CREATE FUNCTION group_concat_step(joined TEXT, item TEXT, separator TEXT) RETURNS TEXT
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN item IS NULL THEN joined WHEN joined IS NULL THEN item
                ELSE joined || separator || item END
$$;
CREATE AGGREGATE group_concat(TEXT, TEXT) (SFUNC = group_concat_step, STYPE = TEXT);

CREATE TABLE nodes (
    id           TEXT    COLLATE "C" PRIMARY KEY,
    address      TEXT    NOT NULL DEFAULT '',
    version      TEXT    NOT NULL DEFAULT '',
    devices      TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(devices)),
    started_at   TEXT    NOT NULL,
    heartbeat_at TEXT    NOT NULL,
    heartbeat_ms BIGINT  NOT NULL
);

ALTER TABLE jobs ADD COLUMN node TEXT;
ALTER TABLE jobs ADD COLUMN lease_ms BIGINT;
CREATE INDEX jobs_lease ON jobs (lease_ms) WHERE state = 'running';

CREATE TABLE job_runs (
    job_id     BIGINT  NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    attempt    BIGINT  NOT NULL,
    node       TEXT    NOT NULL,
    device     TEXT    NOT NULL,
    started_at TEXT    NOT NULL,
    ended_at   TEXT,
    outcome    TEXT    CHECK (outcome IN ('succeeded', 'failed', 'cancelled', 'queued')),
    PRIMARY KEY (job_id, attempt)
);

CREATE FUNCTION jobs_run_starts() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO job_runs (job_id, attempt, node, device, started_at)
    VALUES (NEW.id, NEW.attempts, coalesce(NEW.node, ''), NEW.device,
            coalesce(NEW.started_at, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))
    ON CONFLICT (job_id, attempt) DO UPDATE
        SET node = excluded.node, device = excluded.device, started_at = excluded.started_at,
            ended_at = NULL, outcome = NULL;
    RETURN NULL;
END $$;
CREATE TRIGGER jobs_run_starts AFTER UPDATE OF state ON jobs
    FOR EACH ROW WHEN (NEW.state = 'running' AND OLD.state <> 'running')
    EXECUTE FUNCTION jobs_run_starts();

CREATE FUNCTION jobs_run_ends() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
    UPDATE job_runs SET ended_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), outcome = NEW.state
     WHERE job_id = NEW.id AND attempt = OLD.attempts;
    RETURN NULL;
END $$;
CREATE TRIGGER jobs_run_ends AFTER UPDATE OF state ON jobs
    FOR EACH ROW WHEN (OLD.state = 'running' AND NEW.state <> 'running')
    EXECUTE FUNCTION jobs_run_ends();
