-- Top paths under a status, method or level filter without a host filter
-- (docs/logs.md, docs/performance.md). logs_hourly_status_paths (0022) keys
-- its counts by host as well, so on busy edges it holds about one row per
-- request and summing it for "method GET" was nearly a scan; this table keys
-- them by source, status, method, level and path only.
CREATE TABLE logs_hourly_paths_by_status (
  hour_ms INTEGER NOT NULL,
  source TEXT NOT NULL,
  status INTEGER NOT NULL,
  method TEXT NOT NULL,
  level TEXT NOT NULL,
  path TEXT NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (hour_ms, source, status, method, level, path)
) WITHOUT ROWID;

-- The rows already rolled up: the sum of the per-host table over its hosts is
-- exactly what the roll-up loop would have written.
INSERT INTO logs_hourly_paths_by_status (hour_ms, source, status, method, level, path, n)
  SELECT hour_ms, source, status, method, level, path, sum(n) FROM logs_hourly_status_paths GROUP BY 1, 2, 3, 4, 5, 6;
