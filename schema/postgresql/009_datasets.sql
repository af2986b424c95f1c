-- 009_datasets.sql (PostgreSQL): schema/009_datasets.sql's table.
CREATE TABLE datasets (
    name       TEXT    COLLATE "C" PRIMARY KEY,
    bytes      BIGINT  NOT NULL,
    mtime_ns   BIGINT  NOT NULL,
    sha256     TEXT    NOT NULL,
    format     TEXT    NOT NULL,
    info       TEXT    NOT NULL CHECK (json_valid(info)),
    created_at TEXT
);
