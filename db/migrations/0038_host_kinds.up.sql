-- Host kinds (docs/hosts.md): besides proxying, a host may redirect, answer a
-- fixed page, or show a maintenance page. Only a proxy host needs a target
-- group, so target_group_id becomes nullable; SQLite cannot drop a NOT NULL in
-- place, so the table is rebuilt and its rows copied. Every existing host is a
-- proxy host and keeps every value it had (the new columns' defaults are never
-- read for a proxy host). The tables that name hosts(id) point at the rebuilt
-- table by name and keep their rows (set aside below).
-- The panel's connection enforces foreign keys, so dropping hosts would empty every
-- table that cascades from it: those rows are set aside and put back afterwards.
CREATE TABLE _0038_host_names AS SELECT * FROM host_names;
CREATE TABLE _0038_rules AS SELECT * FROM rules;
CREATE TABLE _0038_waf_exclusions AS SELECT * FROM waf_exclusions;
CREATE TABLE _0038_host_access_lists AS SELECT * FROM host_access_lists;
CREATE TABLE _0038_manual_certs AS SELECT * FROM manual_certs;
CREATE TABLE _0038_seq AS SELECT seq FROM sqlite_sequence WHERE name = 'hosts';
CREATE TABLE hosts_new (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  domain TEXT NOT NULL UNIQUE,
  aliases TEXT NOT NULL DEFAULT '[]',
  target_group_id INTEGER REFERENCES target_groups(id) ON DELETE RESTRICT,
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
  updated_at TEXT NOT NULL,
  engine_down_refuse INTEGER NOT NULL DEFAULT 0,
  waf_profile TEXT NOT NULL DEFAULT 'full' CHECK (waf_profile IN ('fast', 'full')),
  waf_families TEXT NOT NULL DEFAULT '["sqli","xss"]',
  waf_body_limit_kb INTEGER,
  waf_body_max_args INTEGER,
  waf_json_max_depth INTEGER,
  waf_body_limit_action TEXT CHECK (waf_body_limit_action IN ('partial', 'pass', 'refuse')),
  waf_allowed_content_types TEXT,
  kind TEXT NOT NULL DEFAULT 'proxy' CHECK (kind IN ('proxy', 'redirect', 'static', 'maintenance')),
  redirect_to TEXT,
  redirect_status INTEGER NOT NULL DEFAULT 302 CHECK (redirect_status IN (301, 302, 303, 307, 308)),
  redirect_keep_path INTEGER NOT NULL DEFAULT 1,
  static_status INTEGER NOT NULL DEFAULT 200,
  static_content_type TEXT NOT NULL DEFAULT 'text/plain; charset=utf-8',
  static_body TEXT NOT NULL DEFAULT '',
  maintenance_retry_after INTEGER NOT NULL DEFAULT 300,
  maintenance_content_type TEXT NOT NULL DEFAULT 'text/plain; charset=utf-8',
  maintenance_body TEXT NOT NULL DEFAULT 'This site is down for maintenance. Please try again later.',
  maintenance_bypass TEXT NOT NULL DEFAULT '[]'
);
INSERT INTO hosts_new (id, domain, aliases, target_group_id, enabled, tls_mode, tls_challenge, tls_email, tls_dns_provider,
    tls_acme_ca_url, lan_only, true_detect_mode, auth_required, waf_enabled, waf_mode, rate_limit_enabled, rate_limit_rps,
    rate_limit_burst, bouncer_enabled, created_at, updated_at, engine_down_refuse, waf_profile, waf_families,
    waf_body_limit_kb, waf_body_max_args, waf_json_max_depth, waf_body_limit_action, waf_allowed_content_types)
  SELECT id, domain, aliases, target_group_id, enabled, tls_mode, tls_challenge, tls_email, tls_dns_provider,
    tls_acme_ca_url, lan_only, true_detect_mode, auth_required, waf_enabled, waf_mode, rate_limit_enabled, rate_limit_rps,
    rate_limit_burst, bouncer_enabled, created_at, updated_at, engine_down_refuse, waf_profile, waf_families,
    waf_body_limit_kb, waf_body_max_args, waf_json_max_depth, waf_body_limit_action, waf_allowed_content_types
  FROM hosts;
DROP TABLE hosts;
ALTER TABLE hosts_new RENAME TO hosts;
CREATE INDEX hosts_group_idx ON hosts (target_group_id);
DELETE FROM host_names;
INSERT INTO host_names SELECT * FROM _0038_host_names;
DROP TABLE _0038_host_names;
DELETE FROM rules;
INSERT INTO rules SELECT * FROM _0038_rules;
DROP TABLE _0038_rules;
DELETE FROM waf_exclusions;
INSERT INTO waf_exclusions SELECT * FROM _0038_waf_exclusions;
DROP TABLE _0038_waf_exclusions;
DELETE FROM host_access_lists;
INSERT INTO host_access_lists SELECT * FROM _0038_host_access_lists;
DROP TABLE _0038_host_access_lists;
DELETE FROM manual_certs;
INSERT INTO manual_certs SELECT * FROM _0038_manual_certs;
DROP TABLE _0038_manual_certs;
UPDATE sqlite_sequence SET seq = MAX(seq, COALESCE((SELECT seq FROM _0038_seq), 0)) WHERE name = 'hosts';
DROP TABLE _0038_seq;
