-- 009_datasets.sql: what paragond knows of the files in <data-dir>/datasets/ (server/datasets.c):
-- a file's SHA-256, format and shape, computed when it is uploaded or, for a file copied in by
-- hand, the first time it is listed. A record holds while the file's size and mtime are those it
-- was computed for; the file itself stays the truth (a record whose file is gone is not listed).
CREATE TABLE datasets (
    name       TEXT    PRIMARY KEY,
    bytes      INTEGER NOT NULL,
    mtime_ns   INTEGER NOT NULL,
    sha256     TEXT    NOT NULL,
    format     TEXT    NOT NULL,
    info       TEXT    NOT NULL CHECK (json_valid(info)),
    -- when it was uploaded through the API; NULL for a file copied in by hand
    created_at TEXT
) WITHOUT ROWID;
