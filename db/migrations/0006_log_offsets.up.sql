-- Where the ingester is in each proxy log file: a restart resumes there
-- (the offset advances in the same transaction as the rows it covers).
CREATE TABLE log_offsets (
  path TEXT PRIMARY KEY,
  inode INTEGER NOT NULL,
  offset_bytes INTEGER NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX logs_level_ts_idx ON logs (level, ts_ms);
