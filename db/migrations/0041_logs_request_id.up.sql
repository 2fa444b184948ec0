-- The id Caddy gives a request (its access line's `uuid`, written once the panel's
-- refusal pages use {http.request.uuid}): the page shows it, and GET /api/logs?request_id=
-- finds the request's row by it ("why was I blocked?" is one filter away).
ALTER TABLE logs ADD COLUMN request_id TEXT;
CREATE INDEX logs_request_id_idx ON logs (request_id) WHERE request_id IS NOT NULL;
