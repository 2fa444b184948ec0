DROP INDEX IF EXISTS logs_access_path_idx;
DROP INDEX IF EXISTS logs_access_client_idx;
