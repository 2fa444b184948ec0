CREATE TABLE target_groups (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL UNIQUE,
  targets TEXT NOT NULL,                -- JSON [{address, weight}]
  scheme TEXT NOT NULL CHECK (scheme IN ('http', 'https')),
  lb_policy TEXT NOT NULL CHECK (lb_policy IN ('round_robin', 'least_conn', 'random', 'first', 'ip_hash', 'weighted_round_robin')),
  health_check TEXT,                    -- JSON {path, interval_seconds, expect_status} or NULL
  tls_skip_verify INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);

CREATE TABLE hosts (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  domain TEXT NOT NULL UNIQUE,
  aliases TEXT NOT NULL DEFAULT '[]',   -- JSON array of host names
  target_group_id INTEGER NOT NULL REFERENCES target_groups(id) ON DELETE RESTRICT,
  enabled INTEGER NOT NULL DEFAULT 1,
  tls_mode TEXT NOT NULL CHECK (tls_mode IN ('auto', 'manual', 'none')),
  tls_challenge TEXT NOT NULL CHECK (tls_challenge IN ('dns', 'http', 'tls-alpn')),
  tls_email TEXT,
  tls_dns_provider TEXT,
  tls_acme_ca_url TEXT,
  lan_only INTEGER NOT NULL DEFAULT 0,
  true_detect_mode INTEGER NOT NULL DEFAULT 0,
  auth_required INTEGER NOT NULL DEFAULT 0,
  waf_enabled INTEGER NOT NULL DEFAULT 0,
  waf_mode TEXT NOT NULL DEFAULT 'detection' CHECK (waf_mode IN ('detection', 'blocking')),
  rate_limit_enabled INTEGER NOT NULL DEFAULT 0,
  rate_limit_rps INTEGER NOT NULL DEFAULT 50,
  rate_limit_burst INTEGER NOT NULL DEFAULT 100,
  bouncer_enabled INTEGER NOT NULL DEFAULT 1,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX hosts_group_idx ON hosts (target_group_id);

-- Every name a host answers to (domain and aliases), unique across all hosts.
CREATE TABLE host_names (
  name TEXT PRIMARY KEY,
  host_id INTEGER NOT NULL REFERENCES hosts(id) ON DELETE CASCADE
);
CREATE INDEX host_names_host_idx ON host_names (host_id);

CREATE TABLE rules (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  host_id INTEGER NOT NULL REFERENCES hosts(id) ON DELETE CASCADE,
  priority INTEGER NOT NULL DEFAULT 100,
  path TEXT NOT NULL,
  methods TEXT NOT NULL DEFAULT '[]',  -- JSON array of HTTP methods; empty = any
  action TEXT NOT NULL CHECK (action IN ('proxy', 'redirect', 'respond')),
  target_group_id INTEGER REFERENCES target_groups(id) ON DELETE RESTRICT,
  redirect_url TEXT,
  redirect_status INTEGER,
  respond_status INTEGER,
  respond_body TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX rules_host_idx ON rules (host_id);
CREATE INDEX rules_group_idx ON rules (target_group_id);
