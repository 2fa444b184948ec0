DROP INDEX IF EXISTS host_access_lists_list_idx;
DROP TABLE IF EXISTS host_access_lists;
DROP TABLE IF EXISTS access_lists;
