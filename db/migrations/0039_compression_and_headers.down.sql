DELETE FROM settings WHERE key IN ('proxy.compression', 'proxy.compression_types', 'proxy.compression_minimum_bytes');
ALTER TABLE hosts DROP COLUMN compression;
