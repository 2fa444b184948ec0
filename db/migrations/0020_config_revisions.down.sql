DROP TABLE IF EXISTS config_revisions;
