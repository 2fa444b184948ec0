-- Back to the four sources: the connection rows of streams go (the old CHECK refuses them).
-- The id sequence continues where it was (the text index, 0029, is keyed by id: no id is reused).
CREATE TEMP TABLE _logs_seq AS SELECT seq FROM sqlite_sequence WHERE name = 'logs';
CREATE TABLE logs_old_0044 (
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
  actor TEXT,
  node_id INTEGER,
  node_name TEXT,
  waf_rules TEXT,
  request_log_id INTEGER,
  request_id TEXT
);
INSERT INTO logs_old_0044 (id, ts_ms, source, host_id, host_domain, rule_id, status, method, path, remote_ip, user_agent, level, message, raw, duration_ms, waf_rule_id, waf_severity, waf_anomaly_score, country, actor, node_id, node_name, waf_rules, request_log_id, request_id) SELECT id, ts_ms, source, host_id, host_domain, rule_id, status, method, path, remote_ip, user_agent, level, message, raw, duration_ms, waf_rule_id, waf_severity, waf_anomaly_score, country, actor, node_id, node_name, waf_rules, request_log_id, request_id FROM logs WHERE source <> 'layer4';
DROP TABLE logs;
ALTER TABLE logs_old_0044 RENAME TO logs;
CREATE INDEX logs_domain_ts_idx ON logs (host_domain, ts_ms);
CREATE INDEX logs_host_status_id_idx ON logs (host_id, status, id);
CREATE INDEX logs_host_ts_idx ON logs (host_id, ts_ms);
CREATE INDEX logs_level_ts_idx ON logs (level, ts_ms);
CREATE INDEX logs_remote_ip_ts_idx ON logs (remote_ip, ts_ms);
CREATE INDEX logs_request_id_idx ON logs (request_id) WHERE request_id IS NOT NULL;
CREATE INDEX logs_request_log_idx ON logs (request_log_id) WHERE request_log_id IS NOT NULL;
CREATE INDEX logs_rule_idx ON logs (rule_id) WHERE rule_id IS NOT NULL;
CREATE INDEX logs_source_ts_idx ON logs (source, ts_ms);
CREATE INDEX logs_status_ts_idx ON logs (status, ts_ms);
CREATE INDEX logs_ts_idx ON logs (ts_ms);
CREATE INDEX logs_waf_rule_idx ON logs (waf_rule_id) WHERE waf_rule_id IS NOT NULL;
UPDATE sqlite_sequence SET seq = MAX(seq, COALESCE((SELECT seq FROM _logs_seq), 0)) WHERE name = 'logs';
DROP TABLE _logs_seq;
