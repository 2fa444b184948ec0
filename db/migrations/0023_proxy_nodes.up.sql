-- Proxy nodes (docs/scaling.md): every Caddy the panel pushes its configuration to.
-- Row 1 is the node of PROXY_ADMIN_URL (admin_url NULL: the environment decides), so
-- a panel with no other row works exactly as the single-node panel did. A node is
-- reached over a private network (http admin URL) or through Caddy's remote admin
-- endpoint with TLS client authentication (https admin URL and the tls_* columns).
CREATE TABLE proxy_nodes (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL UNIQUE,
  admin_url TEXT,
  -- JSON array of short words (region=eu, canary...): for the operator and later placement.
  labels TEXT NOT NULL DEFAULT '[]',
  enabled INTEGER NOT NULL DEFAULT 1,
  -- The panel's client certificate (PEM) and the CA that signed the node's identity certificate (PEM): public.
  tls_client_cert TEXT,
  tls_server_ca TEXT,
  -- The client certificate's private key, sealed by the secrets box like DNS credentials.
  tls_client_key TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  CHECK (id <> 1 OR admin_url IS NULL),
  CHECK (id = 1 OR admin_url IS NOT NULL)
);
INSERT INTO proxy_nodes (id, name, admin_url, labels, enabled, created_at, updated_at)
VALUES (1, 'node-1', NULL, '["canary"]', 1, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
