-- 020_job_shape_key.sql: what a train job computes per epoch (or per step, a gpt's), as a key:
-- the SHA-256 (hex) of its spec without what does not change a step's time (name, seed, epochs,
-- steps, checkpoint and log periods, the optimizer's numbers) (server/store_jobs.c,
-- pgd_store_shape_key). The latest succeeded run of the same shape on a device, run once through, says
-- how long an epoch takes there: the estimate of the next one (placement.c), which the cost
-- model's figures alone missed by 0.3-10x. Other kinds have none (NULL).
ALTER TABLE jobs ADD COLUMN shape_key TEXT;
CREATE INDEX jobs_shape_succeeded ON jobs (shape_key, device, id) WHERE state = 'succeeded' AND shape_key IS NOT NULL;
