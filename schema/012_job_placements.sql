-- 012_job_placements.sql: a job's placement in typed columns (server/placement.c makes it,
-- server/store_placements.c keeps it): why it went where it did, on the job, and every device the
-- cost model weighed, with the rates and the estimate it used there, one row each. It replaces
-- 003's JSON document, which the server wrote and read back: the documents stored before are
-- moved here, and the column goes.
ALTER TABLE jobs ADD COLUMN placement TEXT CHECK (placement IN ('by_name', 'fastest', 'only'));

CREATE TABLE job_candidates (
    job_id        INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    rank          INTEGER NOT NULL, -- the order the devices were weighed in, from 0
    chosen        INTEGER NOT NULL CHECK (chosen IN (0, 1)), -- 1: where the job went
    device        TEXT    NOT NULL,
    seconds       REAL    NOT NULL, -- the job's estimated time there
    queue_seconds REAL    NOT NULL, -- estimated work queued or running there when it was placed
    work          REAL    NOT NULL,
    unit          TEXT    NOT NULL CHECK (unit IN ('none', 'flop', 'interactions')),
    launches      REAL    NOT NULL,
    gflops        REAL    NOT NULL, -- the device's rates the estimate used
    mips          REAL    NOT NULL,
    launch_us     REAL    NOT NULL,
    measured      INTEGER NOT NULL CHECK (measured IN (0, 1)), -- 0: guessed from its properties
    PRIMARY KEY (job_id, rank)
) WITHOUT ROWID;

UPDATE jobs SET placement = CASE json_extract(estimate, '$.reason')
                                WHEN 'asked for by name' THEN 'by_name'
                                WHEN 'the only device' THEN 'only'
                                ELSE 'fastest' END
 WHERE json_type(estimate, '$.candidates') = 'array';

INSERT INTO job_candidates (job_id, rank, chosen, device, seconds, queue_seconds, work, unit, launches,
                            gflops, mips, launch_us, measured)
SELECT j.id, c.key,
       coalesce(json_extract(c.value, '$.device') = json_extract(j.estimate, '$.device'), 0),
       coalesce(json_extract(c.value, '$.device'), ''),
       coalesce(json_extract(c.value, '$.seconds'), 0),
       coalesce(json_extract(c.value, '$.queue_seconds'), 0),
       coalesce(json_extract(c.value, '$.work'), 0),
       CASE WHEN json_extract(c.value, '$.unit') IN ('flop', 'interactions')
            THEN json_extract(c.value, '$.unit') ELSE 'none' END,
       0, -- launches were not kept
       coalesce(json_extract(c.value, '$.gflops'), 0),
       coalesce(json_extract(c.value, '$.mips'), 0),
       coalesce(json_extract(c.value, '$.launch_us'), 0),
       json_extract(c.value, '$.measured') IS 1
  FROM jobs AS j, json_each(j.estimate, '$.candidates') AS c
 WHERE j.placement IS NOT NULL;

ALTER TABLE jobs DROP COLUMN estimate;
