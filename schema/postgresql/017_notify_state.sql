-- 017_notify_state.sql (PostgreSQL): a change of a job's row is announced as "<id> <state>"
-- (a log line stays "<id>"), so that a node's relay need not read back a job that it queued
-- itself and that is still queued (server/relay.c): about half of the statements of a
-- submission through a cluster node.
CREATE OR REPLACE FUNCTION jobs_notify() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('paragon_jobs', NEW.id::TEXT || ' ' || NEW.state);
    RETURN NULL;
END $$;
