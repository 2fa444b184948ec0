-- Stats for a path substring that matches many rows (docs/logs.md, docs/performance.md).
-- Such a filter read every matching row through the path index: a tenth of
-- 10,000,000 rows took seconds. When the substring stands in the path itself
-- (before the query string), every figure is a sum over the roll-ups keyed by
-- path, whose size grows with the paths seen per hour, not with the traffic;
-- these two tables complete them:
-- - the duration histogram and sum per path, for p95 and the average;
-- - the query strings seen per hour, so that a substring that could stand in a
--   query string (and then match rows whose path lacks it) is recognised and
--   read from the rows instead.
CREATE TABLE logs_hourly_path_durations (
  hour_ms INTEGER NOT NULL,
  source TEXT NOT NULL,
  path TEXT NOT NULL,
  bucket_us INTEGER NOT NULL,
  n INTEGER NOT NULL,
  dur_sum_us INTEGER NOT NULL,
  PRIMARY KEY (hour_ms, source, path, bucket_us)
) WITHOUT ROWID;

CREATE TABLE logs_hourly_queries (
  hour_ms INTEGER NOT NULL,
  source TEXT NOT NULL,
  query TEXT NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (hour_ms, source, query)
) WITHOUT ROWID;

-- The rows already rolled up, as the roll-up loop writes them (rollup.ts's SQL expressions spelled out).
INSERT INTO logs_hourly_path_durations (hour_ms, source, path, bucket_us, n, dur_sum_us)
  SELECT (ts_ms / 3600000) * 3600000, source, CASE WHEN instr(path, '?') > 0 THEN substr(path, 1, instr(path, '?') - 1) ELSE path END,
    CASE WHEN CAST(round(duration_ms * 1000) AS INTEGER) < 1000 THEN CAST(round(duration_ms * 1000) AS INTEGER) WHEN CAST(round(duration_ms * 1000) AS INTEGER) < 10000 THEN ((CAST(round(duration_ms * 1000) AS INTEGER) + 9) / 10) * 10 WHEN CAST(round(duration_ms * 1000) AS INTEGER) < 100000 THEN ((CAST(round(duration_ms * 1000) AS INTEGER) + 99) / 100) * 100 WHEN CAST(round(duration_ms * 1000) AS INTEGER) < 1000000 THEN ((CAST(round(duration_ms * 1000) AS INTEGER) + 999) / 1000) * 1000 WHEN CAST(round(duration_ms * 1000) AS INTEGER) < 10000000 THEN ((CAST(round(duration_ms * 1000) AS INTEGER) + 9999) / 10000) * 10000 WHEN CAST(round(duration_ms * 1000) AS INTEGER) < 100000000 THEN ((CAST(round(duration_ms * 1000) AS INTEGER) + 99999) / 100000) * 100000 WHEN CAST(round(duration_ms * 1000) AS INTEGER) < 1000000000 THEN ((CAST(round(duration_ms * 1000) AS INTEGER) + 999999) / 1000000) * 1000000 WHEN CAST(round(duration_ms * 1000) AS INTEGER) < 10000000000 THEN ((CAST(round(duration_ms * 1000) AS INTEGER) + 9999999) / 10000000) * 10000000 WHEN CAST(round(duration_ms * 1000) AS INTEGER) < 100000000000 THEN ((CAST(round(duration_ms * 1000) AS INTEGER) + 99999999) / 100000000) * 100000000 WHEN CAST(round(duration_ms * 1000) AS INTEGER) < 1000000000000 THEN ((CAST(round(duration_ms * 1000) AS INTEGER) + 999999999) / 1000000000) * 1000000000 WHEN CAST(round(duration_ms * 1000) AS INTEGER) < 10000000000000 THEN ((CAST(round(duration_ms * 1000) AS INTEGER) + 9999999999) / 10000000000) * 10000000000 ELSE CAST(round(duration_ms * 1000) AS INTEGER) END,
    count(*), sum(CAST(round(duration_ms * 1000) AS INTEGER))
  FROM logs NOT INDEXED WHERE id <= (SELECT last_id FROM logs_rollup_state WHERE id = 1) AND path IS NOT NULL AND duration_ms IS NOT NULL
  GROUP BY 1, 2, 3, 4;
INSERT INTO logs_hourly_queries (hour_ms, source, query, n)
  SELECT (ts_ms / 3600000) * 3600000, source, substr(path, instr(path, '?') + 1), count(*)
  FROM logs NOT INDEXED WHERE id <= (SELECT last_id FROM logs_rollup_state WHERE id = 1) AND instr(path, '?') > 0
  GROUP BY 1, 2, 3;
