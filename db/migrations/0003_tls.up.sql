-- Stored DNS-provider state; the catalogue itself is code. Adding a provider
-- means a new migration that widens this CHECK.
CREATE TABLE dns_providers (
  name TEXT PRIMARY KEY CHECK (name IN ('provider_a', 'provider_b')),
  enabled INTEGER NOT NULL DEFAULT 1,
  credentials TEXT,            -- sealed JSON object of field values
  updated_at TEXT NOT NULL
);

CREATE TABLE manual_certs (
  host_id INTEGER PRIMARY KEY REFERENCES hosts(id) ON DELETE CASCADE,
  subject TEXT NOT NULL,
  issuer TEXT NOT NULL,
  sans TEXT NOT NULL,           -- JSON array
  not_before TEXT NOT NULL,
  not_after TEXT NOT NULL,
  fingerprint_sha256 TEXT NOT NULL,
  cert_pem TEXT NOT NULL,
  chain_pem TEXT,
  key_sealed TEXT NOT NULL,
  uploaded_at TEXT NOT NULL,
  uploaded_by TEXT NOT NULL
);

-- Hosts of the earlier release that used DNS-01 had no provider column: they used provider_a.
UPDATE hosts SET tls_dns_provider = 'provider_a' WHERE tls_challenge = 'dns' AND tls_dns_provider IS NULL;
