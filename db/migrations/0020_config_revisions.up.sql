-- Revisions of the pushed proxy configuration (docs/revisions.md): one row per
-- reconcile that changed what the proxy holds. desired_state is the panel's own
-- objects it was built from (hosts, target groups, rules, proxy settings; never a
-- secret), config the pushed JSON with every known secret masked; both gzipped
-- (a 1,000-host configuration is about 0.8 MB of JSON, and 100 revisions are kept).
CREATE TABLE config_revisions (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  created_at TEXT NOT NULL,
  author TEXT NOT NULL,
  api_token_id INTEGER,
  reason TEXT NOT NULL,
  summary TEXT NOT NULL,
  desired_state BLOB NOT NULL,
  config_hash TEXT NOT NULL,
  config BLOB NOT NULL,
  reverted_to INTEGER
);
