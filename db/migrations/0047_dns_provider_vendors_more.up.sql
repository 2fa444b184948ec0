-- Four more vendor DNS providers (issue 39): ClouDNS, Loopia, Huawei Cloud DNS and
-- LuaDNS (server/utils/hosts/dns-catalogue.ts). SQLite cannot change a CHECK in
-- place: the table is rebuilt with the wider list and its rows copied (no other
-- table references dns_providers), as 0045 did.
CREATE TABLE dns_providers_new (
  name TEXT PRIMARY KEY CHECK (name IN ('provider_a', 'provider_b', 'provider_c',
    'hetzner', 'digitalocean', 'gandi', 'porkbun', 'powerdns', 'namecheap', 'azure',
    'googleclouddns', 'linode', 'netcup', 'ionos', 'bunny', 'alidns', 'duckdns', 'godaddy',
    'acmedns', 'cloudns', 'loopia', 'huaweicloud', 'luadns')),
  enabled INTEGER NOT NULL DEFAULT 1,
  credentials TEXT,            -- sealed JSON object of field values
  updated_at TEXT NOT NULL
);
INSERT INTO dns_providers_new (name, enabled, credentials, updated_at)
  SELECT name, enabled, credentials, updated_at FROM dns_providers;
DROP TABLE dns_providers;
ALTER TABLE dns_providers_new RENAME TO dns_providers;
