-- Compression (docs/hosts.md, "Compression"): a host follows the global setting
-- proxy.compression ('inherit') or overrides it ('on', 'off').
ALTER TABLE hosts ADD COLUMN compression TEXT NOT NULL DEFAULT 'inherit';

-- A new panel compresses by default; an upgraded one keeps serving exactly what it
-- served before until the operator turns compression on. A database that already
-- has a user or a host is an upgrade: it records "off" explicitly.
INSERT INTO settings (key, value, updated_at)
SELECT 'proxy.compression', 'false', strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE (EXISTS (SELECT 1 FROM users) OR EXISTS (SELECT 1 FROM hosts))
  AND NOT EXISTS (SELECT 1 FROM settings WHERE key = 'proxy.compression');
