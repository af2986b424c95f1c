-- 013_device_rates.sql: what each benchmark run measured of its device's rates, the cost model's
-- figures (pgn_measured_rates: the GEMM rate, the interaction-net reducer's, a launch's cost), in
-- typed columns beside the run's rows: written in the transaction that stores them (a calibration,
-- or the bench job that succeeded), read by the scheduler as the newest figure of each kind for a
-- device. Rows stay rows, for the export; the cost model no longer reads them by their keys.
--
-- job_id is ON DELETE CASCADE, as the rows' is: deleting a bench job withdraws its run from the
-- cost model too. Databases upgraded from before have no figures yet: a device is measured again
-- at the next start that calibrates.
CREATE TABLE device_rates (
    id         INTEGER PRIMARY KEY,
    job_id     INTEGER REFERENCES jobs (id) ON DELETE CASCADE,
    device     TEXT    NOT NULL,
    gflops     REAL    CHECK (gflops > 0),    -- NULL: the run did not measure it
    mips       REAL    CHECK (mips > 0),
    launch_us  REAL    CHECK (launch_us > 0),
    created_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

-- The newest figure of each kind for a device, and the cascade when a job is deleted.
CREATE INDEX device_rates_latest ON device_rates (device, id);
CREATE INDEX device_rates_job ON device_rates (job_id);
