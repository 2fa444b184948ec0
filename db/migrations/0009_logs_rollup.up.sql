-- Hourly roll-ups of the logs table: stats and hourly/daily timeseries read
-- these instead of scanning millions of rows. The roll-up runs in the
-- background over the rows with id > logs_rollup_state.last_id; queries add
-- the raw rows above that mark, so answers are exact at any moment.
-- NULL dimensions are stored as 0 / '' so that they can be part of the key.
CREATE TABLE logs_rollup_state (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  last_id INTEGER NOT NULL
);
INSERT INTO logs_rollup_state (id, last_id) VALUES (1, 0);

-- Counts and duration sums (integer microseconds) per hour and dimension.
CREATE TABLE logs_hourly (
  hour_ms INTEGER NOT NULL,
  source TEXT NOT NULL,
  host_id INTEGER NOT NULL,
  host_domain TEXT NOT NULL,
  status INTEGER NOT NULL,
  method TEXT NOT NULL,
  level TEXT NOT NULL,
  n INTEGER NOT NULL,
  dur_n INTEGER NOT NULL,
  dur_sum_us INTEGER NOT NULL,
  PRIMARY KEY (hour_ms, source, host_id, host_domain, status, method, level)
) WITHOUT ROWID;

-- Duration histogram (bucket = the duration in microseconds rounded up to 3
-- significant digits) for the p95.
CREATE TABLE logs_hourly_durations (
  hour_ms INTEGER NOT NULL,
  source TEXT NOT NULL,
  host_id INTEGER NOT NULL,
  host_domain TEXT NOT NULL,
  bucket_us INTEGER NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (hour_ms, source, host_id, host_domain, bucket_us)
) WITHOUT ROWID;

-- Request counts per path (without its query string), per host and overall.
CREATE TABLE logs_hourly_host_paths (
  hour_ms INTEGER NOT NULL,
  source TEXT NOT NULL,
  host_id INTEGER NOT NULL,
  host_domain TEXT NOT NULL,
  path TEXT NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (hour_ms, source, host_id, host_domain, path)
) WITHOUT ROWID;
CREATE TABLE logs_hourly_paths (
  hour_ms INTEGER NOT NULL,
  source TEXT NOT NULL,
  path TEXT NOT NULL,
  n INTEGER NOT NULL,
  PRIMARY KEY (hour_ms, source, path)
) WITHOUT ROWID;

-- The first bytes of each tailed file: a file replaced or truncated and
-- rewritten past the stored offset is noticed even when its inode is reused.
ALTER TABLE log_offsets ADD COLUMN head TEXT NOT NULL DEFAULT '';

-- rule_id and waf_rule_id are empty on most rows: index only the rows that have one
-- (a filter on them implies IS NOT NULL, so queries still use these indexes).
DROP INDEX logs_rule_idx;
CREATE INDEX logs_rule_idx ON logs (rule_id) WHERE rule_id IS NOT NULL;
DROP INDEX logs_waf_rule_idx;
CREATE INDEX logs_waf_rule_idx ON logs (waf_rule_id) WHERE waf_rule_id IS NOT NULL;
