-- Back to 0045's CHECK. The rows of the four providers added here (and their
-- sealed credentials) cannot be kept under it and are dropped. Hosts that named
-- one keep the name: the earlier release then emits no certificate policy for
-- them (with a warning) and refuses their next save until another provider is chosen.
CREATE TABLE dns_providers_old (
  name TEXT PRIMARY KEY CHECK (name IN ('provider_a', 'provider_b', 'provider_c',
    'hetzner', 'digitalocean', 'gandi', 'porkbun', 'powerdns', 'namecheap', 'azure',
    'googleclouddns', 'linode', 'netcup', 'ionos', 'bunny', 'alidns', 'duckdns', 'godaddy',
    'acmedns')),
  enabled INTEGER NOT NULL DEFAULT 1,
  credentials TEXT,            -- sealed JSON object of field values
  updated_at TEXT NOT NULL
);
INSERT INTO dns_providers_old (name, enabled, credentials, updated_at)
  SELECT name, enabled, credentials, updated_at FROM dns_providers
  WHERE name NOT IN ('cloudns', 'loopia', 'huaweicloud', 'luadns');
DROP TABLE dns_providers;
ALTER TABLE dns_providers_old RENAME TO dns_providers;
