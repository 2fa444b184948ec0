DROP INDEX IF EXISTS streams_target_group;
DROP TABLE IF EXISTS streams;
