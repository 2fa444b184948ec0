DROP INDEX IF EXISTS forward_auth_credentials_session_idx;
DROP TABLE IF EXISTS forward_auth_credentials;
DROP INDEX IF EXISTS forward_auth_codes_session_idx;
DROP TABLE IF EXISTS forward_auth_codes;
