-- API tokens for scripts (docs/api-tokens.md): only the SHA-256 of the secret is
-- kept, so a database copy cannot be replayed. A revoked token keeps its row
-- (revoked_at_ms) so that its use is answered "revoked" and the list shows it.
CREATE TABLE api_tokens (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  scope TEXT NOT NULL CHECK (scope IN ('read', 'admin')),
  token_hash TEXT NOT NULL UNIQUE,
  -- The first characters of the secret, shown in lists so an operator can tell tokens apart.
  prefix TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL,
  expires_at_ms INTEGER,
  last_used_at_ms INTEGER,
  last_used_ip TEXT,
  revoked_at_ms INTEGER,
  revoked_by TEXT
);
CREATE INDEX api_tokens_user_idx ON api_tokens (user_id);

-- Failed bearer tokens, throttled per source like passwords (15-minute window),
-- dropped by the retention sweep after 24 h.
CREATE TABLE api_token_attempts (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  ts_ms INTEGER NOT NULL,
  remote_ip TEXT,
  success INTEGER NOT NULL
);
CREATE INDEX api_token_attempts_ip_idx ON api_token_attempts (remote_ip, ts_ms);
