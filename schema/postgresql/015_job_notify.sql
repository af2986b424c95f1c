-- 015_job_notify.sql (PostgreSQL): every change of a job's row (a new job, its state, progress
-- or cancel request) and every line of its log is announced on channel paragon_jobs with the
-- job's id, when its transaction commits (PostgreSQL folds repeats within one). Each node relays
-- what it hears of jobs it does not run to its own event streams (server/relay.c).
CREATE FUNCTION jobs_notify() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('paragon_jobs', NEW.id::TEXT);
    RETURN NULL;
END $$;
CREATE TRIGGER jobs_notify AFTER INSERT OR UPDATE OF state, progress, cancel_requested ON jobs
    FOR EACH ROW EXECUTE FUNCTION jobs_notify();

CREATE FUNCTION logs_notify() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('paragon_jobs', NEW.job_id::TEXT);
    RETURN NULL;
END $$;
CREATE TRIGGER logs_notify AFTER INSERT ON logs FOR EACH ROW EXECUTE FUNCTION logs_notify();
