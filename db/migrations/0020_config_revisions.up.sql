-- Revisions of the pushed proxy configuration (docs/revisions.md): one row per
-- reconcile that changed what the proxy holds. desired_state is the panel's own
-- objects it was built from (hosts, target groups, rules, proxy settings; never a
-- secret), config the pushed JSON with every known secret masked.
CREATE TABLE config_revisions (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  created_at TEXT NOT NULL,
  author TEXT NOT NULL,
  api_token_id INTEGER,
  reason TEXT NOT NULL,
  summary TEXT NOT NULL,
  desired_state TEXT NOT NULL,
  config_hash TEXT NOT NULL,
  config TEXT NOT NULL,
  reverted_to INTEGER
);
