CREATE TABLE whitelist_entries (
  value TEXT PRIMARY KEY,           -- an IP or a CIDR
  reason TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL,
  created_by TEXT NOT NULL
);

-- Scenarios the operator disabled, with the hub file their symlink pointed at
-- (to restore it on re-enable).
CREATE TABLE scenario_overrides (
  canonical_name TEXT PRIMARY KEY,
  link_target TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
