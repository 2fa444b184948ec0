-- One row per request (docs/logs.md "One row per request"). The WAF's audit entry and
-- the error line Caddy writes for a request stay stored, each pointing at the access
-- row of the same request; the default list shows the access row only, carrying the
-- WAF's verdict (waf_rule_id, waf_severity, waf_anomaly_score).
ALTER TABLE logs ADD COLUMN request_log_id INTEGER;
-- The rows folded into an access row, for its detail.
CREATE INDEX logs_request_log_idx ON logs (request_log_id) WHERE request_log_id IS NOT NULL;
-- An access row ingested after its WAF and error rows finds them through logs_source_ts_idx.
-- A WAF or error row looks for its access row by client and time: (remote_ip, ts_ms)
-- replaces (remote_ip), which it serves as well.
DROP INDEX logs_remote_ip_idx;
CREATE INDEX logs_remote_ip_ts_idx ON logs (remote_ip, ts_ms);
