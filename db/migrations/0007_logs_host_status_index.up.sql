-- The dashboard's "this host's errors" list (host_id + status class, newest first).
CREATE INDEX logs_host_status_id_idx ON logs (host_id, status, id);
