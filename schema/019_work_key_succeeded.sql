-- 019_work_key_succeeded.sql: the index behind "the interactions the latest succeeded inet job
-- with the same program needed" (store_jobs.c, pgd_store_inet_expected) holds succeeded jobs
-- alone. 010's index held every inet job, so a run whose program was queued many times over (a
-- thousand "@main = 1" in bench-http) walked back through every queued copy to find a succeeded
-- one: a third of paragond's CPU in that benchmark, growing with the queue.
DROP INDEX jobs_work_key;
CREATE INDEX jobs_work_key_succeeded ON jobs (work_key, id) WHERE state = 'succeeded' AND work_key IS NOT NULL;
