-- Failed and successful TOTP codes, throttled like password logins (15-minute
-- window) and dropped by the retention sweep after 24 h.
CREATE TABLE totp_attempts (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  ts_ms INTEGER NOT NULL,
  user_id INTEGER,
  remote_ip TEXT,
  success INTEGER NOT NULL
);
CREATE INDEX totp_attempts_user_idx ON totp_attempts (user_id, ts_ms);
CREATE INDEX totp_attempts_ip_idx ON totp_attempts (remote_ip, ts_ms);

-- Single-use recovery codes for a lost authenticator: only their SHA-256 is kept.
CREATE TABLE totp_recovery_codes (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  code_hash TEXT NOT NULL UNIQUE,
  created_at_ms INTEGER NOT NULL,
  used_at_ms INTEGER
);
CREATE INDEX totp_recovery_codes_user_idx ON totp_recovery_codes (user_id);

-- The last accepted TOTP time step: a code of that step or an older one is a replay.
ALTER TABLE users ADD COLUMN totp_last_step INTEGER NOT NULL DEFAULT 0;

-- OIDC users are found by the identity provider's subject.
CREATE UNIQUE INDEX users_provider_external_id_idx ON users (provider, external_id) WHERE external_id IS NOT NULL;

CREATE INDEX sessions_expires_idx ON sessions (expires_at_ms);
