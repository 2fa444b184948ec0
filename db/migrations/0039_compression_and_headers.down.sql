ALTER TABLE hosts DROP COLUMN csp;
ALTER TABLE hosts DROP COLUMN security_headers;
ALTER TABLE hosts DROP COLUMN hsts;
ALTER TABLE hosts DROP COLUMN upstream_host;
ALTER TABLE hosts DROP COLUMN header_rules;
DELETE FROM settings WHERE key IN ('proxy.compression', 'proxy.compression_types', 'proxy.compression_minimum_bytes');
ALTER TABLE hosts DROP COLUMN compression;
