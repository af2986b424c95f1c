-- 011_device_tunings.sql: what a calibration chose for each device (docs/architecture.md, "Device
-- profiles"): one row a device and kernel family, good while the device's driver and this build's
-- kernel sources (their SHA-256) are the ones it was measured with; a device whose driver or
-- kernels changed is tuned again at its next opening. Benchmark rows stay in benchmarks.
CREATE TABLE device_tunings (
    device_id      TEXT NOT NULL,
    family         TEXT NOT NULL,
    driver_version TEXT NOT NULL,
    kernels_hash   TEXT NOT NULL,
    params         TEXT NOT NULL, -- JSON: {"gemm_tile": "6x64"}
    figure         REAL,          -- GFLOP/s of the chosen tile at N=1024 (NULL: not measured)
    too_slow       INTEGER NOT NULL DEFAULT 0, -- 1: too slow to calibrate in the budget: defaults
    measured_at    TEXT NOT NULL,
    PRIMARY KEY (device_id, family)
);
