DROP INDEX IF EXISTS sessions_expires_idx;
DROP INDEX IF EXISTS users_provider_external_id_idx;
ALTER TABLE users DROP COLUMN totp_last_step;
DROP TABLE IF EXISTS totp_recovery_codes;
DROP TABLE IF EXISTS totp_attempts;
