-- 004_job_cancel_delete.sql (PostgreSQL): schema/004_job_cancel_delete.sql's cancel flag, and
-- the floor under new job ids that keeps a deleted job's id from being handed out again.
ALTER TABLE jobs ADD COLUMN cancel_requested BIGINT NOT NULL DEFAULT 0
    CHECK (cancel_requested IN (0, 1));

CREATE TABLE job_id_floor (id BIGINT NOT NULL);
INSERT INTO job_id_floor (id) VALUES (0);
CREATE FUNCTION jobs_keep_deleted_ids() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
    UPDATE job_id_floor SET id = greatest(id, OLD.id);
    RETURN NULL;
END $$;
CREATE TRIGGER jobs_keep_deleted_ids AFTER DELETE ON jobs
    FOR EACH ROW EXECUTE FUNCTION jobs_keep_deleted_ids();
