DELETE FROM settings WHERE key IN ('proxy.error_pages', 'proxy.error_page_message');
ALTER TABLE hosts DROP COLUMN error_page_message;
ALTER TABLE hosts DROP COLUMN error_pages;
DROP INDEX logs_request_id_idx;
ALTER TABLE logs DROP COLUMN request_id;
