DROP INDEX IF EXISTS api_token_attempts_ip_idx;
DROP TABLE IF EXISTS api_token_attempts;
DROP INDEX IF EXISTS api_tokens_user_idx;
DROP TABLE IF EXISTS api_tokens;
