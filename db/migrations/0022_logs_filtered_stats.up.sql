-- Filtered log stats without scanning the logs table (docs/logs.md, docs/performance.md).
--
-- The duration histogram and the request counts per path, per hour, also by
-- status, method and level: a filter on those answers p95 and top paths from
-- roll-ups like the other figures. NULLs stored as 0 / '' as in 0009.
CREATE TABLE logs_hourly_status_durations (
  hour_ms INTEGER NOT NULL,
  source TEXT NOT NULL,
  host_id INTEGER NOT NULL,
  host_domain TEXT NOT NULL,
  status INTEGER NOT NULL,
  method TEXT NOT NULL,
  level TEXT NOT NULL,
  bucket_us INTEGER NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (hour_ms, source, host_id, host_domain, status, method, level, bucket_us)
) WITHOUT ROWID;
CREATE TABLE logs_hourly_status_paths (
  hour_ms INTEGER NOT NULL,
  source TEXT NOT NULL,
  host_id INTEGER NOT NULL,
  host_domain TEXT NOT NULL,
  status INTEGER NOT NULL,
  method TEXT NOT NULL,
  level TEXT NOT NULL,
  path TEXT NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (hour_ms, source, host_id, host_domain, status, method, level, path)
) WITHOUT ROWID;

-- A trigram index of the path (with its query string), for the path substring
-- filter: the rowid is logs.id. Contentless (the text stays in logs only) and
-- detail=none (no positions): a query ANDs the trigrams of the substring and
-- instr() on the row confirms, so the index only has to return a superset.
-- case_sensitive 1 because instr() is. Filled by the roll-up loop with the
-- roll-ups (rows at or below logs_rollup_state.last_id), emptied by retention.
CREATE VIRTUAL TABLE logs_path_fts USING fts5(path, content='', contentless_delete=1, tokenize='trigram case_sensitive 1', detail=none);

-- The rows already rolled up (at or below the mark) go in now, so that the new
-- tables and the index cover exactly what the other roll-ups cover; the loop
-- adds the rows above the mark as usual. The expressions are rollup.ts's
-- HOUR_SQL, BUCKET_SQL and PATH_KEY_SQL (tests/unit/logs-filtered-stats-migration.test.ts
-- compares the result with the loop's own).
INSERT INTO logs_hourly_status_durations (hour_ms, source, host_id, host_domain, status, method, level, bucket_us, n)
  SELECT (ts_ms / 3600000) * 3600000, source, coalesce(host_id, 0), coalesce(host_domain, ''), coalesce(status, 0), coalesce(method, ''), coalesce(level, ''),
    CASE WHEN CAST(round(duration_ms * 1000) AS INTEGER) < 1000 THEN CAST(round(duration_ms * 1000) AS INTEGER) WHEN CAST(round(duration_ms * 1000) AS INTEGER) < 10000 THEN ((CAST(round(duration_ms * 1000) AS INTEGER) + 9) / 10) * 10 WHEN CAST(round(duration_ms * 1000) AS INTEGER) < 100000 THEN ((CAST(round(duration_ms * 1000) AS INTEGER) + 99) / 100) * 100 WHEN CAST(round(duration_ms * 1000) AS INTEGER) < 1000000 THEN ((CAST(round(duration_ms * 1000) AS INTEGER) + 999) / 1000) * 1000 WHEN CAST(round(duration_ms * 1000) AS INTEGER) < 10000000 THEN ((CAST(round(duration_ms * 1000) AS INTEGER) + 9999) / 10000) * 10000 WHEN CAST(round(duration_ms * 1000) AS INTEGER) < 100000000 THEN ((CAST(round(duration_ms * 1000) AS INTEGER) + 99999) / 100000) * 100000 WHEN CAST(round(duration_ms * 1000) AS INTEGER) < 1000000000 THEN ((CAST(round(duration_ms * 1000) AS INTEGER) + 999999) / 1000000) * 1000000 WHEN CAST(round(duration_ms * 1000) AS INTEGER) < 10000000000 THEN ((CAST(round(duration_ms * 1000) AS INTEGER) + 9999999) / 10000000) * 10000000 WHEN CAST(round(duration_ms * 1000) AS INTEGER) < 100000000000 THEN ((CAST(round(duration_ms * 1000) AS INTEGER) + 99999999) / 100000000) * 100000000 WHEN CAST(round(duration_ms * 1000) AS INTEGER) < 1000000000000 THEN ((CAST(round(duration_ms * 1000) AS INTEGER) + 999999999) / 1000000000) * 1000000000 WHEN CAST(round(duration_ms * 1000) AS INTEGER) < 10000000000000 THEN ((CAST(round(duration_ms * 1000) AS INTEGER) + 9999999999) / 10000000000) * 10000000000 ELSE CAST(round(duration_ms * 1000) AS INTEGER) END,
    count(*)
  FROM logs WHERE id <= (SELECT last_id FROM logs_rollup_state WHERE id = 1) AND duration_ms IS NOT NULL GROUP BY 1, 2, 3, 4, 5, 6, 7, 8;
INSERT INTO logs_hourly_status_paths (hour_ms, source, host_id, host_domain, status, method, level, path, n)
  SELECT (ts_ms / 3600000) * 3600000, source, coalesce(host_id, 0), coalesce(host_domain, ''), coalesce(status, 0), coalesce(method, ''), coalesce(level, ''), CASE WHEN instr(path, '?') > 0 THEN substr(path, 1, instr(path, '?') - 1) ELSE path END, count(*)
  FROM logs WHERE id <= (SELECT last_id FROM logs_rollup_state WHERE id = 1) AND path IS NOT NULL GROUP BY 1, 2, 3, 4, 5, 6, 7, 8;
INSERT INTO logs_path_fts (rowid, path) SELECT id, path FROM logs WHERE id <= (SELECT last_id FROM logs_rollup_state WHERE id = 1) AND path IS NOT NULL;
