DROP INDEX logs_request_id_idx;
ALTER TABLE logs DROP COLUMN request_id;
