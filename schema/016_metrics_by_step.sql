-- 016_metrics_by_step.sql: nothing on SQLite. A PostgreSQL store's nodes relay the metrics
-- other nodes' runs write after the last step they relayed (schema/postgresql/016_...), which
-- one paragond on a SQLite store never asks for: it publishes its own metrics as it writes them.
SELECT 1;
