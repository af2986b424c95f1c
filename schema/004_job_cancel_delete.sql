-- 004_job_cancel_delete.sql: what POST /api/v1/jobs/{id}/cancel and DELETE /api/v1/jobs/{id}
-- need of the schema.
--
-- cancel_requested: a cancel asked for while a job runs. A queued job is cancelled at once; a
-- running one gets this flag, and its worker (server/scheduler.c) stops it at the next step
-- boundary and records it cancelled. The flag is in the database, not only in memory, so a
-- crash before the job stops does not bring it back: start-up recovery (and a shutdown's
-- requeue) ends a running job that carries it as cancelled instead of queueing it again.
ALTER TABLE jobs ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0
    CHECK (cancel_requested IN (0, 1));

-- job_id_floor: the highest id a deleted job had. jobs.id is a plain INTEGER PRIMARY KEY, which
-- SQLite hands out as max(id) + 1, so deleting the newest job would give its id to the next
-- one: a client still holding the old id would read another job, and a job dir that could not
-- be removed would be resumed by a stranger. The store inserts jobs above this floor too.
CREATE TABLE job_id_floor (id INTEGER NOT NULL);
INSERT INTO job_id_floor (id) VALUES (0);
CREATE TRIGGER jobs_keep_deleted_ids AFTER DELETE ON jobs
BEGIN
    UPDATE job_id_floor SET id = max(id, OLD.id);
END;
