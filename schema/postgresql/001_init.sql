-- 001_init.sql (PostgreSQL): the store of a cluster of paragond, version 1. The same tables as
-- schema/001_init.sql, in PostgreSQL's types (BIGINT for INTEGER, DOUBLE PRECISION for REAL),
-- and the SQLite functions the store's statements use (server/db.h), so that one text of each
-- statement serves both engines: strftime for the time now, json_valid, json_type,
-- json_object, json_extract and json_each over the JSON documents kept as text. Each defines only what the
-- store uses and refuses anything else by name.

CREATE FUNCTION strftime(format TEXT, moment TEXT) RETURNS TEXT LANGUAGE plpgsql STABLE AS $$
BEGIN
    IF format <> '%Y-%m-%dT%H:%M:%fZ' OR moment <> 'now' THEN
        RAISE EXCEPTION 'strftime(%, %): only strftime(''%%Y-%%m-%%dT%%H:%%M:%%fZ'', ''now'') is defined here',
            format, moment;
    END IF;
    -- SQLite's 'now' is the statement's time
    RETURN to_char(statement_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
END $$;

CREATE FUNCTION json_valid(doc TEXT) RETURNS BOOLEAN LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    PERFORM doc::jsonb;
    RETURN doc IS NOT NULL;
EXCEPTION WHEN others THEN
    RETURN false;
END $$;

-- 'object', 'array', 'text', 'integer' or 'real', 'true', 'false', 'null' (SQLite's names).
CREATE FUNCTION json_type(doc TEXT) RETURNS TEXT LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE jsonb_typeof(doc::jsonb)
               WHEN 'string' THEN 'text'
               WHEN 'number' THEN CASE WHEN doc::jsonb::text ~ '^-?[0-9]+$' THEN 'integer' ELSE 'real' END
               WHEN 'boolean' THEN doc::jsonb::text
               ELSE jsonb_typeof(doc::jsonb) END
$$;

-- The value at path ('$', then .key, ."key" or [n] steps) as text: a string unquoted, a number
-- as written, an object or array as JSON; NULL where there is none.
CREATE FUNCTION json_extract(doc TEXT, path TEXT) RETURNS TEXT LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    keys TEXT[] := '{}';
    rest TEXT := substr(path, 2);
    m TEXT[];
BEGIN
    IF doc IS NULL OR path IS NULL THEN
        RETURN NULL;
    END IF;
    IF left(path, 1) <> '$' THEN
        RAISE EXCEPTION 'json_extract: path % does not start with $', path;
    END IF;
    WHILE rest <> '' LOOP
        IF left(rest, 2) = '."' THEN
            m := regexp_match(rest, '^\."([^"]*)"(.*)$');
        ELSIF left(rest, 1) = '.' THEN
            m := regexp_match(rest, '^\.([^.\[]+)(.*)$');
        ELSE
            m := regexp_match(rest, '^\[([0-9]+)\](.*)$');
        END IF;
        IF m IS NULL THEN
            RAISE EXCEPTION 'json_extract: cannot read path %', path;
        END IF;
        keys := keys || m[1];
        rest := m[2];
    END LOOP;
    RETURN doc::jsonb #>> keys;
END $$;

-- The elements of a JSON array as rows (key: the index, value: the element as json_extract
-- gives it).
CREATE FUNCTION json_each(doc TEXT) RETURNS TABLE (key TEXT, value TEXT) LANGUAGE sql IMMUTABLE AS $$
    SELECT (e.i - 1)::TEXT, e.v #>> '{}' FROM jsonb_array_elements(doc::jsonb) WITH ORDINALITY AS e(v, i)
$$;

-- An object of three key/value pairs, as JSON text (the store's stored errors).
CREATE FUNCTION json_object(k1 TEXT, v1 TEXT, k2 TEXT, v2 TEXT, k3 TEXT, v3 TEXT) RETURNS TEXT
LANGUAGE sql IMMUTABLE AS $$
    SELECT jsonb_build_object(k1, v1, k2, v2, k3, v3)::TEXT
$$;

CREATE TABLE jobs (
    id               BIGINT  PRIMARY KEY,
    kind             TEXT    NOT NULL,
    name             TEXT    NOT NULL DEFAULT '',
    state            TEXT    NOT NULL DEFAULT 'queued'
                     CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    device_requested TEXT    NOT NULL,
    device           TEXT    NOT NULL,
    spec             TEXT    NOT NULL CHECK (json_valid(spec)),
    result           TEXT    CHECK (result IS NULL OR json_valid(result)),
    error            TEXT    CHECK (error IS NULL OR json_valid(error)),
    progress         DOUBLE PRECISION NOT NULL DEFAULT 0 CHECK (progress >= 0 AND progress <= 1),
    attempts         BIGINT  NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    created_at       TEXT    NOT NULL DEFAULT strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
    started_at       TEXT,
    finished_at      TEXT
);
CREATE INDEX jobs_queue ON jobs (state, device, id);
CREATE INDEX jobs_state ON jobs (state, id);
CREATE INDEX jobs_kind ON jobs (kind, id);

CREATE TABLE metrics (
    job_id     BIGINT  NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    name       TEXT    COLLATE "C" NOT NULL,
    step       BIGINT  NOT NULL,
    value      DOUBLE PRECISION,
    created_at TEXT    NOT NULL DEFAULT strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
    PRIMARY KEY (job_id, name, step)
);
