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

-- Header rules (docs/hosts.md, "Header rules"): all empty for an existing host, which
-- then gets no header handler and keeps its configuration byte for byte.
ALTER TABLE hosts ADD COLUMN header_rules TEXT NOT NULL DEFAULT '[]';
ALTER TABLE hosts ADD COLUMN upstream_host TEXT;
ALTER TABLE hosts ADD COLUMN hsts TEXT;
ALTER TABLE hosts ADD COLUMN security_headers INTEGER NOT NULL DEFAULT 0;
ALTER TABLE hosts ADD COLUMN csp TEXT;
