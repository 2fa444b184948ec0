-- Strict session mode (setting auth.strict_sessions, docs/auth.md): ForwardAuth's own credentials.
-- Both tables hang off a panel session: the resolver joins the session on every use, so ending
-- the session (logout, password or role change, user deletion, expiry) ends them at once. The
-- references cascade where the connection enforces them (the libSQL client does); the code also
-- deletes them by hand and the auth sweep removes any left behind.
-- Only SHA-256 hashes are stored, so a database copy cannot be replayed.

-- One-time codes: minted on the panel's name for one protected host, traded once on that host.
CREATE TABLE forward_auth_codes (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  code_hash TEXT NOT NULL UNIQUE,
  session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  host TEXT NOT NULL,
  expires_at_ms INTEGER NOT NULL
);
CREATE INDEX forward_auth_codes_session_idx ON forward_auth_codes (session_id);

-- The credentials the codes were traded for: a host-only cookie, valid for /auth/forward of its host only.
CREATE TABLE forward_auth_credentials (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  token_hash TEXT NOT NULL UNIQUE,
  session_id INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  host TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL
);
CREATE INDEX forward_auth_credentials_session_idx ON forward_auth_credentials (session_id);
