-- 012_job_placements.sql (PostgreSQL): schema/012_job_placements.sql's typed placement
-- columns. A PostgreSQL store has no estimates kept as JSON to convert: the column goes.
ALTER TABLE jobs ADD COLUMN placement TEXT CHECK (placement IN ('by_name', 'fastest', 'only'));
CREATE TABLE job_candidates (
    job_id        BIGINT  NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    rank          BIGINT  NOT NULL,
    chosen        BIGINT  NOT NULL CHECK (chosen IN (0, 1)),
    device        TEXT    NOT NULL,
    seconds       DOUBLE PRECISION NOT NULL,
    queue_seconds DOUBLE PRECISION NOT NULL,
    work          DOUBLE PRECISION NOT NULL,
    unit          TEXT    NOT NULL CHECK (unit IN ('none', 'flop', 'interactions')),
    launches      DOUBLE PRECISION NOT NULL,
    gflops        DOUBLE PRECISION NOT NULL,
    mips          DOUBLE PRECISION NOT NULL,
    launch_us     DOUBLE PRECISION NOT NULL,
    measured      BIGINT  NOT NULL CHECK (measured IN (0, 1)),
    PRIMARY KEY (job_id, rank)
);
ALTER TABLE jobs DROP COLUMN estimate;
