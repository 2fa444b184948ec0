-- Streams (docs/streams.md): TCP and UDP forwarding through the proxy's layer-4 app,
-- beside the web hosts. A port range is listen_port..listen_port_end (inclusive).
CREATE TABLE streams (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL UNIQUE,
  enabled INTEGER NOT NULL DEFAULT 1,
  protocol TEXT NOT NULL CHECK (protocol IN ('tcp', 'udp')),
  listen_port INTEGER NOT NULL CHECK (listen_port BETWEEN 1 AND 65535),
  listen_port_end INTEGER CHECK (listen_port_end IS NULL OR (listen_port_end > listen_port AND listen_port_end <= 65535)),
  range_mapping TEXT NOT NULL DEFAULT 'one_to_one' CHECK (range_mapping IN ('one_to_one', 'all_to_one')),
  target_group_id INTEGER NOT NULL REFERENCES target_groups(id) ON DELETE RESTRICT,
  tls_sni TEXT NOT NULL DEFAULT '[]',
  proxy_protocol TEXT NOT NULL DEFAULT 'off' CHECK (proxy_protocol IN ('off', 'v1', 'v2')),
  accept_proxy_protocol INTEGER NOT NULL DEFAULT 0,
  lan_only INTEGER NOT NULL DEFAULT 0,
  access_list_id INTEGER REFERENCES access_lists(id) ON DELETE RESTRICT,
  bouncer_enabled INTEGER NOT NULL DEFAULT 1,
  engine_down_refuse INTEGER NOT NULL DEFAULT 0,
  udp_probe_hex TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX streams_target_group ON streams (target_group_id);
