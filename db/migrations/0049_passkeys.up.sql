-- Passkeys (WebAuthn credentials, docs/access-control.md "Passkeys"): a user's keys for a
-- login without a password and for the second step beside TOTP. Only the public key is stored.
CREATE TABLE passkeys (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  -- base64url of the authenticator's credential id, as browsers send it back
  credential_id TEXT NOT NULL UNIQUE,
  -- base64url of the COSE public key
  public_key TEXT NOT NULL,
  counter INTEGER NOT NULL DEFAULT 0,
  -- JSON array of transport hints (internal, usb, nfc, ble, hybrid)
  transports TEXT NOT NULL DEFAULT '[]',
  name TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL,
  last_used_at_ms INTEGER
);
CREATE INDEX passkeys_user ON passkeys(user_id);
