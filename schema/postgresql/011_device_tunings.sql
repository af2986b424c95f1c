-- 011_device_tunings.sql (PostgreSQL): schema/011_device_tunings.sql's table.
CREATE TABLE device_tunings (
    device_id      TEXT NOT NULL,
    family         TEXT NOT NULL,
    driver_version TEXT NOT NULL,
    kernels_hash   TEXT NOT NULL,
    params         TEXT NOT NULL,
    figure         DOUBLE PRECISION,
    too_slow       BIGINT NOT NULL DEFAULT 0,
    measured_at    TEXT NOT NULL,
    PRIMARY KEY (device_id, family)
);
