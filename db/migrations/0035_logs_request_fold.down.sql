DROP INDEX logs_remote_ip_ts_idx;
CREATE INDEX logs_remote_ip_idx ON logs (remote_ip);
DROP INDEX logs_request_log_idx;
ALTER TABLE logs DROP COLUMN request_log_id;
