-- Settings an operator changes at run time (values are JSON; secrets are sealed).
CREATE TABLE settings (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL,
  updated_at TEXT NOT NULL
);

-- Small records of the panel's own state (last reconcile, task runs), JSON values.
CREATE TABLE runtime_state (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL,
  updated_at TEXT NOT NULL
);

CREATE TABLE users (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  email TEXT NOT NULL COLLATE NOCASE UNIQUE,
  name TEXT NOT NULL DEFAULT '',
  role TEXT NOT NULL CHECK (role IN ('admin', 'viewer')),
  password_hash TEXT,
  provider TEXT NOT NULL DEFAULT 'local',
  external_id TEXT,
  totp_secret TEXT,
  totp_enabled INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);

CREATE TABLE sessions (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  token_hash TEXT NOT NULL UNIQUE,
  user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  created_at_ms INTEGER NOT NULL,
  expires_at_ms INTEGER NOT NULL,
  last_seen_at_ms INTEGER NOT NULL,
  remote_ip TEXT,
  user_agent TEXT
);
CREATE INDEX sessions_user_idx ON sessions (user_id);

CREATE TABLE login_attempts (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  ts_ms INTEGER NOT NULL,
  email TEXT COLLATE NOCASE,
  remote_ip TEXT,
  success INTEGER NOT NULL
);
CREATE INDEX login_attempts_ip_idx ON login_attempts (remote_ip, ts_ms);
CREATE INDEX login_attempts_email_idx ON login_attempts (email, ts_ms);

-- Every ingested row: proxy access/error logs, WAF audit, and the panel's own audit.
CREATE TABLE logs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  ts_ms INTEGER NOT NULL,
  source TEXT NOT NULL CHECK (source IN ('caddy_access', 'caddy_error', 'audit', 'waf_audit')),
  host_id INTEGER,
  host_domain TEXT,
  rule_id INTEGER,
  status INTEGER,
  method TEXT,
  path TEXT,
  remote_ip TEXT,
  user_agent TEXT,
  level TEXT,
  message TEXT,
  raw TEXT,
  duration_ms REAL,
  waf_rule_id INTEGER,
  waf_severity TEXT,
  waf_anomaly_score INTEGER,
  country TEXT,
  actor TEXT
);
CREATE INDEX logs_ts_idx ON logs (ts_ms);
CREATE INDEX logs_source_ts_idx ON logs (source, ts_ms);
CREATE INDEX logs_host_ts_idx ON logs (host_id, ts_ms);
CREATE INDEX logs_domain_ts_idx ON logs (host_domain, ts_ms);
CREATE INDEX logs_rule_idx ON logs (rule_id);
CREATE INDEX logs_status_ts_idx ON logs (status, ts_ms);
CREATE INDEX logs_remote_ip_idx ON logs (remote_ip);
CREATE INDEX logs_waf_rule_idx ON logs (waf_rule_id);
