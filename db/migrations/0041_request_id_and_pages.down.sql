DELETE FROM settings WHERE key = 'proxy.error_pages';
ALTER TABLE hosts DROP COLUMN error_pages;
DROP INDEX logs_request_id_idx;
ALTER TABLE logs DROP COLUMN request_id;
