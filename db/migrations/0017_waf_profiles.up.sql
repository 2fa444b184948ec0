-- WAF profiles and per-host tuning (docs/waf.md). Existing hosts keep the full CRS and
-- today's limits: every tuning column is NULL, meaning "the profile's default".
ALTER TABLE hosts ADD COLUMN waf_profile TEXT NOT NULL DEFAULT 'full' CHECK (waf_profile IN ('fast', 'full'));
-- JSON array of rule family ids the fast profile keeps (server/utils/proxy/build/waf-rules.ts).
ALTER TABLE hosts ADD COLUMN waf_families TEXT NOT NULL DEFAULT '["sqli","xss"]';
ALTER TABLE hosts ADD COLUMN waf_body_limit_kb INTEGER;
ALTER TABLE hosts ADD COLUMN waf_body_max_args INTEGER;
ALTER TABLE hosts ADD COLUMN waf_json_max_depth INTEGER;
ALTER TABLE hosts ADD COLUMN waf_body_limit_action TEXT CHECK (waf_body_limit_action IN ('partial', 'pass', 'refuse'));
-- JSON array of media types; NULL = the CRS default list.
ALTER TABLE hosts ADD COLUMN waf_allowed_content_types TEXT;

-- A WAF rule turned off for one host: everywhere (path and argument NULL), under a path,
-- for one argument, or both. Usually created from a waf_audit log row (source_log_id).
CREATE TABLE waf_exclusions (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  host_id INTEGER NOT NULL REFERENCES hosts(id) ON DELETE CASCADE,
  rule_id INTEGER NOT NULL,
  path TEXT,
  argument TEXT,
  note TEXT,
  source_log_id INTEGER,
  created_at TEXT NOT NULL
);
CREATE INDEX waf_exclusions_host_idx ON waf_exclusions (host_id);
-- One exclusion per rule, host, path and argument (NULL compared as empty).
CREATE UNIQUE INDEX waf_exclusions_unique_idx ON waf_exclusions (host_id, rule_id, coalesce(path, ''), coalesce(argument, ''));
