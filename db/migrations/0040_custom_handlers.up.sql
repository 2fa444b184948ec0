-- The escape hatch (docs/hosts.md, "Custom handlers (escape hatch)"): raw Caddy HTTP handlers
-- an admin adds to one host, as a JSON array, and the point of the host's chain where they run.
-- Existing hosts get an empty list, which the configuration builder leaves out entirely, so
-- their pushed configuration stays the same byte for byte.
ALTER TABLE hosts ADD COLUMN custom_handlers TEXT NOT NULL DEFAULT '[]';
ALTER TABLE hosts ADD COLUMN custom_handlers_at TEXT NOT NULL DEFAULT 'before_proxy';
