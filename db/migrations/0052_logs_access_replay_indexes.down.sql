DROP INDEX IF EXISTS logs_access_client_idx;
