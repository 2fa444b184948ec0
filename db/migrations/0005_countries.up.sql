CREATE TABLE country_jobs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  country_code TEXT NOT NULL,
  state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'running', 'completed', 'failed')),
  chunks_total INTEGER NOT NULL DEFAULT 0,
  chunks_done INTEGER NOT NULL DEFAULT 0,
  chunks_failed INTEGER NOT NULL DEFAULT 0,
  cidr_committed INTEGER NOT NULL DEFAULT 0,
  requested_count INTEGER NOT NULL DEFAULT 0,
  duration TEXT NOT NULL DEFAULT '',
  reason TEXT NOT NULL DEFAULT '',
  error_message TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL,
  started_at TEXT,
  completed_at TEXT,
  created_by TEXT NOT NULL DEFAULT '',
  instance_id TEXT NOT NULL DEFAULT ''
);
CREATE INDEX country_jobs_country_created_idx ON country_jobs (country_code, created_at DESC);
CREATE INDEX country_jobs_state_idx ON country_jobs (state);

CREATE TABLE country_bans (
  country_code TEXT PRIMARY KEY,
  cidrs TEXT NOT NULL,                 -- JSON array of the CIDRs actually committed
  cidr_count INTEGER NOT NULL,
  mmdb_version TEXT NOT NULL,
  state TEXT NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'drifted')),
  duration TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  checked_at TEXT
);

-- Leases: a lock held by one panel process at a time, with an expiry.
CREATE TABLE leases (
  name TEXT PRIMARY KEY,
  holder TEXT NOT NULL,
  expires_at_ms INTEGER NOT NULL
);
