-- The id Caddy gives a request (its access line's `uuid`, written once the panel's
-- refusal pages use {http.request.uuid}): the page shows it, and GET /api/logs?request_id=
-- finds the request's row by it ("why was I blocked?" is one filter away).
ALTER TABLE logs ADD COLUMN request_id TEXT;
CREATE INDEX logs_request_id_idx ON logs (request_id) WHERE request_id IS NOT NULL;

-- Pages of our own (docs/hosts.md, "Pages"): a host follows the global setting
-- proxy.error_pages ('inherit') or overrides it ('on', 'off').
ALTER TABLE hosts ADD COLUMN error_pages TEXT NOT NULL DEFAULT 'inherit';
-- The operator's short message on the host's pages (NULL: the global proxy.error_page_message).
ALTER TABLE hosts ADD COLUMN error_page_message TEXT;

-- A new panel answers pages; an upgraded one keeps answering what it answered before
-- (bare refusals, byte for byte) until the operator turns them on. A database that
-- already has a user or a host is an upgrade: it records "off" explicitly.
INSERT INTO settings (key, value, updated_at)
SELECT 'proxy.error_pages', 'false', strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE (EXISTS (SELECT 1 FROM users) OR EXISTS (SELECT 1 FROM hosts))
  AND NOT EXISTS (SELECT 1 FROM settings WHERE key = 'proxy.error_pages');
